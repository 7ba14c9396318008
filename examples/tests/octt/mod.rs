//! What the OCTT-case tests (`octt_1_6.rs`, `octt_2_0_1.rs`) share: a deliberately small
//! WebSocket client of their own, written against RFC 6455 and not on `ocpp-proto`, so
//! that the assertions are about the bytes the servers put on the wire (the JSON arrays of
//! OCPP-J, the upgrade response's status line and headers, the close code) and not about what
//! our own decoder makes of them; the admin API driven from a second thread; and a macro that
//! runs every case against both servers.
//!
//! Every read has a deadline ([`WAIT`]); sockets are loopback only; the servers are the
//! [`ServerProcess`]s of `common`, stopped by their PID when dropped.
#![allow(dead_code, unreachable_pub)]

use crate::common::*;
use serde_json::json;

/// The two example servers, as the tests start them.
pub const MIO: &str = env!("CARGO_BIN_EXE_mio-server");
pub const TOKIO: &str = env!("CARGO_BIN_EXE_tokio-server");

/// Runs each named case (a `fn case(binary: &str)`) as two tests, `mio_server::case` and
/// `tokio_server::case`.
macro_rules! on_both_servers {
    ($($case:ident),* $(,)?) => {
        mod mio_server {
            $(#[test] fn $case() { super::$case(crate::octt::MIO) })*
        }
        mod tokio_server {
            $(#[test] fn $case() { super::$case(crate::octt::TOKIO) })*
        }
    };
}

/// RFC 6455 §1.3's sample key, and the accept value the server must answer it with.
const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";
const ACCEPT: &str = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

/// A fixed timestamp for payloads that need one.
pub const T0: &str = "2026-12-01T12:00:00Z";

/// The server's answer to an upgrade request.
pub struct Upgrade {
    /// The HTTP status (101 when the WebSocket opened).
    pub status: u16,
    /// The response headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The WebSocket, when the status is 101.
    pub ws: Option<Ws>,
}

impl Upgrade {
    /// A response header's value (the first one of that name).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The WebSocket, after checking the upgrade succeeded with `Sec-WebSocket-Protocol:
    /// protocol`.
    pub fn opened(self, protocol: &str) -> Ws {
        assert_eq!(self.status, 101, "upgrade refused: {:?}", self.headers);
        assert_eq!(self.header("sec-websocket-protocol"), Some(protocol));
        self.ws.expect("a 101 has a socket")
    }
}

/// What a frame from the server was.
#[derive(Debug, PartialEq)]
pub enum Frame {
    /// A text message (reassembled from fragments).
    Text(String),
    /// A close frame, with its status code if it had one.
    Close(Option<u16>),
    /// The TCP stream ended without a close frame.
    Eof,
}

/// A WebSocket client connection (text messages, no extensions).
pub struct Ws {
    stream: TcpStream,
    /// Bytes read but not yet parsed.
    buf: Vec<u8>,
    next_id: u64,
    mask: u32,
}

/// Sends an upgrade request for `identity` offering `protocols` (the header's value, e.g.
/// `ocpp0.1, ocpp1.6`; `None` for no header) with Basic credentials `user:password` if given,
/// and reads the response head.
pub fn upgrade(
    addr: SocketAddr,
    identity: &str,
    protocols: Option<&str>,
    basic: Option<(&str, &[u8])>,
) -> Upgrade {
    let mut stream = TcpStream::connect_timeout(&addr, WAIT).expect("connect");
    stream.set_nodelay(true).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    stream.set_write_timeout(Some(WAIT)).unwrap();
    let mut head = format!(
        "GET /ocpp/{identity} HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\n\
         Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: {KEY}\r\n"
    );
    if let Some(protocols) = protocols {
        head.push_str(&format!("Sec-WebSocket-Protocol: {protocols}\r\n"));
    }
    if let Some((user, password)) = basic {
        let mut credentials = format!("{user}:").into_bytes();
        credentials.extend_from_slice(password);
        head.push_str(&format!(
            "Authorization: Basic {}\r\n",
            base64(&credentials)
        ));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).expect("send the upgrade");
    let mut ws = Ws {
        stream,
        buf: Vec::new(),
        next_id: 1,
        mask: 0x1234_5678,
    };
    let deadline = Instant::now() + WAIT;
    let end = loop {
        if let Some(at) = ws.buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        assert!(ws.read_more(deadline), "the server closed before answering");
    };
    let text = String::from_utf8(ws.buf[..end].to_vec()).expect("an ASCII response head");
    ws.buf.drain(..end + 4);
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("status line {status_line:?}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut answer = Upgrade {
        status,
        headers,
        ws: None,
    };
    if status == 101 {
        assert_eq!(answer.header("sec-websocket-accept"), Some(ACCEPT));
        assert!(answer.header("sec-websocket-extensions").is_none());
        answer.ws = Some(ws);
    }
    answer
}

/// Connects `identity` offering exactly `protocol` (e.g. `ocpp1.6`) and checks that it opened.
pub fn connect(server: &ServerProcess, identity: &str, protocol: &str) -> Ws {
    upgrade(server.ocpp, identity, Some(protocol), None).opened(protocol)
}

impl Ws {
    /// Reads what the socket has (bounded by `deadline`); false at the end of the stream.
    fn read_more(&mut self, deadline: Instant) -> bool {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            assert!(Instant::now() < deadline, "nothing from the server in time");
            match self.stream.read(&mut chunk) {
                Ok(0) => return false,
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return true;
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return false,
                Err(e) => panic!("read: {e}"),
            }
        }
    }

    /// One frame from the buffer: (fin, opcode, payload).
    fn parse_frame(&mut self) -> Option<(bool, u8, Vec<u8>)> {
        let b = &self.buf;
        if b.len() < 2 {
            return None;
        }
        let (fin, opcode, masked) = (b[0] & 0x80 != 0, b[0] & 0x0F, b[1] & 0x80 != 0);
        assert_eq!(
            b[0] & 0x70,
            0,
            "no extension was negotiated: RSV bits must be 0"
        );
        assert!(
            !masked,
            "frames from the server must not be masked (RFC 6455 §5.1)"
        );
        let (len, at) = match b[1] & 0x7F {
            126 if b.len() >= 4 => (usize::from(u16::from_be_bytes([b[2], b[3]])), 4),
            127 if b.len() >= 10 => {
                let len = u64::from_be_bytes(b[2..10].try_into().unwrap());
                (usize::try_from(len).unwrap(), 10)
            }
            126 | 127 => return None,
            n => (usize::from(n), 2),
        };
        if b.len() < at + len {
            return None;
        }
        let payload = b[at..at + len].to_vec();
        self.buf.drain(..at + len);
        Some((fin, opcode, payload))
    }

    fn write_frame(&mut self, opcode: u8, payload: &[u8]) {
        let mut frame = vec![0x80 | opcode];
        match payload.len() {
            n if n < 126 => frame.push(0x80 | n as u8),
            n if n <= 0xFFFF => {
                frame.push(0x80 | 126);
                frame.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                frame.push(0x80 | 127);
                frame.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        self.mask = self
            .mask
            .wrapping_mul(0x9E37_79B9)
            .wrapping_add(0x7F4A_7C15);
        let key = self.mask.to_be_bytes();
        frame.extend_from_slice(&key);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
        // The peer may already have closed (after a close frame, say): not our test's business.
        let _ = self.stream.write_all(&frame);
    }

    /// Sends a text message.
    pub fn send_text(&mut self, text: &str) {
        self.write_frame(0x1, text.as_bytes());
    }

    /// The next message or close from the server (answers pings; at most [`WAIT`]).
    pub fn recv(&mut self) -> Frame {
        let deadline = Instant::now() + WAIT;
        let mut message: Vec<u8> = Vec::new();
        loop {
            while let Some((fin, opcode, payload)) = self.parse_frame() {
                match opcode {
                    0x0 | 0x1 => {
                        message.extend_from_slice(&payload);
                        if fin {
                            return Frame::Text(String::from_utf8(message).expect("UTF-8 text"));
                        }
                    }
                    0x8 => {
                        let code = (payload.len() >= 2)
                            .then(|| u16::from_be_bytes([payload[0], payload[1]]));
                        return Frame::Close(code);
                    }
                    0x9 => self.write_frame(0xA, &payload),
                    0xA => {}
                    other => panic!("unexpected opcode {other:#x}"),
                }
            }
            if !self.read_more(deadline) {
                return Frame::Eof;
            }
        }
    }

    /// Whether anything from the server waits to be read, right now (without waiting).
    pub fn has_pending_input(&mut self) -> bool {
        if !self.buf.is_empty() {
            return true;
        }
        self.stream.set_nonblocking(true).expect("non-blocking");
        let mut byte = [0u8; 1];
        let pending = matches!(self.stream.peek(&mut byte), Ok(n) if n > 0);
        self.stream.set_nonblocking(false).expect("blocking");
        pending
    }

    /// The next message, as JSON (panics on a close).
    pub fn recv_json(&mut self) -> Value {
        match self.recv() {
            Frame::Text(text) => json(&text),
            other => panic!("expected a message, got {other:?}"),
        }
    }

    /// Sends `[2,"<id>","<action>",payload]` and returns the server's answer to it (the whole
    /// array: `[3,id,{..}]` or `[4,id,code,description,details]`).
    pub fn call_raw(&mut self, action: &str, payload: Value) -> Value {
        let id = format!("cp-{}", self.next_id);
        self.next_id += 1;
        self.send_text(&json!([2, id, action, payload]).to_string());
        let answer = self.recv_json();
        assert!(
            matches!(answer[0].as_u64(), Some(3 | 4)),
            "{action}: expected its answer, got {answer}"
        );
        assert_eq!(
            answer[1],
            id.as_str(),
            "{action}: the answer's id: {answer}"
        );
        answer
    }

    /// A CALL that must get a CALLRESULT: returns its payload.
    pub fn result(&mut self, action: &str, payload: Value) -> Value {
        let answer = self.call_raw(action, payload);
        assert_eq!(
            answer[0], 3,
            "{action}: expected a CALLRESULT, got {answer}"
        );
        assert_eq!(answer.as_array().unwrap().len(), 3, "{answer}");
        answer[2].clone()
    }

    /// A CALL that must get a CALLERROR: returns its error code, after checking the frame's
    /// shape (`[4,id,code,description,details]`, details an object).
    pub fn error(&mut self, action: &str, payload: Value) -> String {
        let answer = self.call_raw(action, payload);
        assert_eq!(answer[0], 4, "{action}: expected a CALLERROR, got {answer}");
        assert_eq!(answer.as_array().unwrap().len(), 5, "{answer}");
        assert!(answer[3].is_string() && answer[4].is_object(), "{answer}");
        answer[2].as_str().unwrap().to_owned()
    }

    /// Waits for a CALL from the server: (id, action, payload).
    pub fn expect_call(&mut self) -> (String, String, Value) {
        let call = self.recv_json();
        assert_eq!(call[0], 2, "expected a CALL, got {call}");
        assert_eq!(call.as_array().unwrap().len(), 4, "{call}");
        let id = call[1].as_str().expect("a string id").to_owned();
        assert!(!id.is_empty() && id.len() <= 36, "message id {id:?}");
        (id, call[2].as_str().unwrap().to_owned(), call[3].clone())
    }

    /// Answers a CALL of the server with a CALLRESULT.
    pub fn reply(&mut self, id: &str, payload: Value) {
        self.send_text(&json!([3, id, payload]).to_string());
    }

    /// Answers a CALL of the server with a CALLERROR.
    pub fn reply_error(&mut self, id: &str, code: &str) {
        self.send_text(&json!([4, id, code, "", {}]).to_string());
    }

    /// Closes with 1000 and waits (bounded) for the server's close or the end of the stream.
    pub fn close(mut self) {
        self.write_frame(0x8, &1000u16.to_be_bytes());
        loop {
            match self.recv() {
                Frame::Close(_) | Frame::Eof => return,
                Frame::Text(_) => {}
            }
        }
    }
}

/// How the charge point answers a command.
pub enum Answer {
    /// A CALLRESULT with this payload.
    Result(Value),
    /// A CALLERROR with this code.
    Error(&'static str),
}

/// What came of an admin command.
pub struct Command {
    /// The CALL's payload as the charge point received it.
    pub sent: Value,
    /// The admin API's status.
    pub status: u16,
    /// The admin API's JSON body.
    pub body: Value,
}

/// `POST /chargepoints/{identity}/call/{action}` with `body`; the charge point on `ws` receives
/// the CALL (checked to be `action`) and answers it with `answer`.
pub fn command(
    server: &ServerProcess,
    ws: &mut Ws,
    identity: &str,
    action: &str,
    body: Value,
    answer: Answer,
) -> Command {
    let admin = server.admin;
    let path = format!("/chargepoints/{identity}/call/{action}");
    let text = body.to_string();
    let request = std::thread::spawn(move || http(admin, "POST", &path, &text));
    let (id, got, sent) = ws.expect_call();
    assert_eq!(got, action);
    match answer {
        Answer::Result(payload) => ws.reply(&id, payload),
        Answer::Error(code) => ws.reply_error(&id, code),
    }
    let (status, text) = request.join().expect("the admin request");
    Command {
        sent,
        status,
        body: serde_json::from_str(&text).unwrap_or(Value::Null),
    }
}

impl Command {
    /// Checks that the CALL carried `body` and the admin API answered 200 with `result`.
    pub fn assert_result(&self, body: &Value, result: &Value) {
        assert_eq!(&self.sent, body, "the CALL's payload");
        assert_eq!(self.status, 200, "{}", self.body);
        assert_eq!(&self.body["result"], result, "{}", self.body);
    }
}

/// An admin request that is answered at once (no CALL): status and JSON body.
pub fn admin(server: &ServerProcess, method: &str, path: &str, body: &str) -> (u16, Value) {
    let (status, text) = http(server.admin, method, path, body);
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Checks an OCPP date-time as the servers write it: RFC 3339, UTC.
pub fn assert_date_time(value: &Value) {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("{value} is not a string"));
    assert!(
        ocpp_messages::DateTime::parse(text).is_ok() && text.ends_with('Z'),
        "{text} is not an RFC 3339 UTC date-time"
    );
}

/// A file (`--basic-auth`'s `identity:password` lines, `--tokens`'s lines) in a fresh
/// directory, removed when dropped.
pub struct TempFile {
    dir: PathBuf,
}

impl TempFile {
    pub fn new(name: &str, lines: &str) -> TempFile {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "octt-{name}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("file"), lines).unwrap();
        TempFile { dir }
    }

    /// The file's path, for a command line.
    pub fn path(&self) -> String {
        self.dir.join("file").to_str().unwrap().to_owned()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Standard base64 with padding (RFC 4648 §4), for the Basic credentials.
pub fn base64(bytes: &[u8]) -> String {
    use ::base64::Engine as _;
    ::base64::engine::general_purpose::STANDARD.encode(bytes)
}
