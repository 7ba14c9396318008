//! What the end-to-end tests of `mio-server` and `tokio-server` share: the server process on
//! free loopback ports, a charge point built on `ocpp-proto`'s charge-point side over
//! blocking std sockets (optionally through rustls: `wss://`), certificates made with rcgen
//! ([`Pki`]), and the admin API over plain HTTP. Every wait is bounded; the server is stopped
//! by PID when dropped.
#![allow(dead_code, unreachable_pub)]

pub use std::io::{BufRead, BufReader, Read, Write};
pub use std::net::{SocketAddr, TcpStream};
pub use std::path::{Path, PathBuf};
pub use std::process::{Child, Command, Stdio};
pub use std::sync::atomic::{AtomicU64, Ordering};
pub use std::sync::{mpsc, Arc};
pub use std::time::{Duration, Instant};

pub use ocpp_messages::version::OcppVersion;
use ocpp_proto::Answer;
pub use ocpp_proto::{
    ChargePointIdentity, CloseReason, ConnectTarget, Connection, ConnectionConfig, ErrorCode,
    Event, Request, Response,
};
pub use ocpp_reference_csms::admin::decode_command;
pub use serde_json::Value;

/// A redis-server of the test's own (the cluster tests), the guard `ocpp-cluster`'s and
/// `ocpp-tokio`'s tests use too.
#[path = "../../../ocpp-cluster/tests/common/redis_server.rs"]
pub mod redis_server;

/// A PostgreSQL server of the test's own, stopped by PID when dropped (`postgres_harness.rs`).
pub mod postgres_server;

/// The cluster tests' helpers (`cluster_mio.rs`, `cluster_tokio.rs`).
pub mod cluster;

/// A contract PKI and `openssl ocsp` (the Plug & Charge cases).
pub mod ocsp_responder;

/// A contract-certificate service (Get15118EVCertificate cases).
pub mod contract_service;

/// The longest any single wait in these tests may take.
pub const WAIT: Duration = Duration::from_secs(10);

/// A fresh, empty directory for a test's SQLite database, on `/dev/shm` where there is one.
///
/// A server answers a CALL that must be kept within its database wait (3 s) or refuses it, as
/// it must; these tests check what is kept, not how fast a disk syncs. In CI, PostgreSQL's
/// `create database` (in the same test binary, at the same moment) once kept the shared disk
/// busy past that wait for a SQLite commit.
pub fn sqlite_dir(name: &str) -> PathBuf {
    let shm = Path::new("/dev/shm");
    let base = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let dir = base.join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|e| panic!("create the directory {}: {e}", dir.display()));
    dir
}

/// The server process, killed (by its PID) when dropped.
pub struct ServerProcess {
    pub child: Child,
    pub ocpp: SocketAddr,
    pub admin: SocketAddr,
}

impl ServerProcess {
    /// Starts the server binary at `binary` (`mio-server` or `tokio-server`, which share their
    /// command line and first output line).
    pub fn start(binary: &str, extra: &[&str]) -> ServerProcess {
        Self::start_with_env(binary, extra, &[])
    }

    /// [`ServerProcess::start`] with these environment variables set for the server.
    pub fn start_with_env(binary: &str, extra: &[&str], env: &[(&str, &str)]) -> ServerProcess {
        let name = std::path::Path::new(binary)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or(binary)
            .to_owned();
        let mut child = Command::new(binary)
            .args(["--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0"])
            .args(extra)
            // `TEST_SERVER_LOG=info cargo test ...` to see what the servers log.
            .env(
                "RUST_LOG",
                std::env::var("TEST_SERVER_LOG").unwrap_or_else(|_| "warn".into()),
            )
            // Nothing kept across tests: a test that wants a database passes --database.
            .env("OCPP_DATABASE_URL", "memory")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("start {name}: {e}"));
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = match rx.recv_timeout(WAIT) {
            Ok(line) => line,
            Err(_) => {
                let _ = child.kill();
                panic!("{name} did not start");
            }
        };
        // `NAME listening on ADDR (admin on ADDR)`
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(&words[..3], [name.as_str(), "listening", "on"], "{line}");
        let ocpp = words[3].parse().expect("ocpp address");
        let admin = words[6]
            .trim_end_matches(')')
            .parse()
            .expect("admin address");
        ServerProcess { child, ocpp, admin }
    }

    /// Sends SIGTERM (graceful shutdown).
    pub fn sigterm(&self) {
        let pid = rustix::process::Pid::from_child(&self.child);
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
    }

    /// Waits (bounded) for the exit status.
    pub fn wait_exit(&mut self) -> std::process::ExitStatus {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(Instant::now() < deadline, "the server did not stop");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The charge point's socket: plain TCP, or TLS through rustls (or OpenSSL: `tls_openssl.rs`).
pub enum Stream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
    #[cfg(feature = "openssl")]
    OpenSsl(Box<openssl::ssl::SslStream<TcpStream>>),
}

impl Stream {
    /// The TCP socket under it.
    pub fn socket(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => s.get_ref(),
            #[cfg(feature = "openssl")]
            Stream::OpenSsl(s) => s.get_ref(),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
            #[cfg(feature = "openssl")]
            Stream::OpenSsl(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
            #[cfg(feature = "openssl")]
            Stream::OpenSsl(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
            #[cfg(feature = "openssl")]
            Stream::OpenSsl(s) => s.flush(),
        }
    }
}

/// `wss://`: the client's TLS configuration and the name the server's certificate must carry.
#[derive(Clone)]
pub struct TlsClient {
    pub config: Arc<rustls::ClientConfig>,
    pub server_name: rustls::pki_types::ServerName<'static>,
}

impl TlsClient {
    /// Trusts the CAs of `ca` (PEM); presents `identity` (certificate and key files) if given;
    /// expects the server to be `127.0.0.1`.
    pub fn new(ca: &Path, identity: Option<(&Path, &Path)>) -> TlsClient {
        TlsClient {
            config: ocpp_examples::tls::client_config(ca, identity).expect("client config"),
            server_name: rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap(),
        }
    }
}

/// Why a connection attempt did not open.
#[derive(Debug)]
pub enum ConnectRefusal {
    /// The server answered the upgrade with an error status (or it failed otherwise).
    Upgrade(CloseReason),
    /// The TLS handshake or a later record failed: our own verification, or the server's
    /// alert (`rustls::Error::AlertReceived`).
    Tls(rustls::Error),
}

impl ConnectRefusal {
    /// The HTTP status of a refused upgrade.
    pub fn status(&self) -> Option<u16> {
        match self {
            ConnectRefusal::Upgrade(CloseReason::UpgradeRefused { status, .. }) => *status,
            _ => None,
        }
    }
}

/// The `rustls::Error` inside an I/O error from rustls's stream, if it is one.
pub fn tls_error(error: &std::io::Error) -> Option<rustls::Error> {
    error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        .cloned()
}

/// A charge point: a blocking socket with a read timeout driving a Sans-IO connection.
pub struct ChargePoint {
    pub stream: Stream,
    pub connection: Connection,
    pub version: OcppVersion,
    /// The TLS error that ended the stream, if one did.
    pub tls_error: Option<rustls::Error>,
}

static KEYS: AtomicU64 = AtomicU64::new(1);

impl ChargePoint {
    /// Connects and waits for the upgrade's outcome: the version, or why it failed.
    pub fn connect(
        addr: SocketAddr,
        identity: &str,
        versions: &[OcppVersion],
        password: Option<&[u8]>,
    ) -> Result<ChargePoint, CloseReason> {
        match Self::connect_with(addr, identity, versions, password, None) {
            Ok(cp) => Ok(cp),
            Err(ConnectRefusal::Upgrade(reason)) => Err(reason),
            Err(other) => panic!("{other:?}"),
        }
    }

    /// [`ChargePoint::connect`], over TLS with `tls`: the handshake runs first (bounded), then
    /// the upgrade.
    pub fn connect_with(
        addr: SocketAddr,
        identity: &str,
        versions: &[OcppVersion],
        password: Option<&[u8]>,
        tls: Option<&TlsClient>,
    ) -> Result<ChargePoint, ConnectRefusal> {
        let mut socket = TcpStream::connect_timeout(&addr, WAIT).expect("connect");
        socket.set_nodelay(true).unwrap();
        socket.set_read_timeout(Some(WAIT)).unwrap();
        socket.set_write_timeout(Some(WAIT)).unwrap();
        let stream = match tls {
            None => Stream::Plain(socket),
            Some(tls) => {
                let mut session =
                    rustls::ClientConnection::new(Arc::clone(&tls.config), tls.server_name.clone())
                        .expect("client session");
                while session.is_handshaking() {
                    if let Err(e) = session.complete_io(&mut socket) {
                        let error = tls_error(&e).unwrap_or_else(|| panic!("handshake: {e}"));
                        return Err(ConnectRefusal::Tls(error));
                    }
                }
                Stream::Tls(Box::new(rustls::StreamOwned::new(session, socket)))
            }
        };
        Self::connect_over(stream, addr, identity, versions, password)
    }

    /// [`ChargePoint::connect`] over a stream the caller opened (and secured) itself.
    pub fn connect_over(
        stream: Stream,
        addr: SocketAddr,
        identity: &str,
        versions: &[OcppVersion],
        password: Option<&[u8]>,
    ) -> Result<ChargePoint, ConnectRefusal> {
        stream
            .socket()
            .set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let identity = ChargePointIdentity::new(identity.into(), false).unwrap();
        let mut target = ConnectTarget::new(&addr.to_string(), "/ocpp", identity);
        if let Some(password) = password {
            target = target.with_password(password);
        }
        let n = KEYS.fetch_add(1, Ordering::Relaxed);
        let config = ConnectionConfig::default().versions(versions.to_vec());
        let connection = Connection::connect(
            Instant::now(),
            Arc::new(config),
            &target,
            (u128::from(n) * 0x9E37_79B9_7F4A_7C15).to_le_bytes(),
            n,
        )
        .unwrap();
        let mut cp = ChargePoint {
            stream,
            connection,
            version: OcppVersion::V1_6,
            tls_error: None,
        };
        match cp.next_event() {
            Event::Connected { version } => {
                cp.version = version;
                Ok(cp)
            }
            Event::Closed(closed) => match cp.tls_error.take() {
                Some(error) => Err(ConnectRefusal::Tls(error)),
                None => Err(ConnectRefusal::Upgrade(closed.reason)),
            },
            other => panic!("unexpected {other:?}"),
        }
    }

    pub fn flush(&mut self) {
        while !self.connection.pending_transmit().is_empty() {
            let n = self
                .stream
                .write(self.connection.pending_transmit())
                .expect("write");
            self.connection.advance_transmit(n);
        }
    }

    /// The next event, reading as needed (at most [`WAIT`]).
    pub fn next_event(&mut self) -> Event {
        self.next_event_within(WAIT).expect("no event in time")
    }

    /// The next event within `within`, reading as needed; `None` if none came.
    pub fn next_event_within(&mut self, within: Duration) -> Option<Event> {
        let deadline = Instant::now() + within;
        let mut buf = [0u8; 16 * 1024];
        loop {
            self.flush();
            if let Some(event) = self.connection.poll_event() {
                return Some(event);
            }
            if Instant::now() >= deadline {
                return None;
            }
            match self.stream.read(&mut buf) {
                Ok(0) => self.connection.handle_eof(Instant::now()),
                Ok(n) => self.connection.handle_data(Instant::now(), &buf[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => {
                    self.tls_error = self.tls_error.take().or_else(|| tls_error(&e));
                    self.connection.handle_eof(Instant::now());
                }
            }
            self.connection.handle_timeout(Instant::now());
        }
    }

    /// Sends a CALL (payload as JSON) and returns the CALLRESULT payload as JSON.
    pub fn call(&mut self, action: &str, payload: &str) -> Value {
        let request = decode_command(self.version, action, payload).expect("valid request");
        let id = self.connection.call(Instant::now(), request).expect("call");
        loop {
            match self.next_event() {
                Event::CallCompleted {
                    id: done, outcome, ..
                } if done == id => match outcome {
                    Ok(response) => return serde_json::to_value(&response).unwrap(),
                    other => panic!("{action}: {other:?}"),
                },
                Event::Call { .. } => panic!("unexpected CALL from the server"),
                _ => {}
            }
        }
    }

    /// Waits for a CALL from the server.
    pub fn expect_call(&mut self) -> (ocpp_proto::MessageId<'static>, Request) {
        self.call_within(WAIT).expect("no event in time")
    }

    /// The next CALL from the server (other events skipped); `None` when no event came
    /// within `within`. Panics if the connection closes.
    pub fn call_within(
        &mut self,
        within: Duration,
    ) -> Option<(ocpp_proto::MessageId<'static>, Request)> {
        loop {
            match self.next_event_within(within)? {
                Event::Call { id, request } => return Some((id, request)),
                Event::Closed(closed) => panic!("closed: {closed:?}"),
                _ => {}
            }
        }
    }

    pub fn respond(&mut self, id: &ocpp_proto::MessageId<'_>, response: Response) {
        self.answer(id, Answer::Result(response));
    }

    /// Answers the CALL `id` with a CALLERROR.
    pub fn respond_error(&mut self, id: &ocpp_proto::MessageId<'_>, code: ErrorCode) {
        self.answer(id, Answer::error(code, "no"));
    }

    fn answer(&mut self, id: &ocpp_proto::MessageId<'_>, answer: Answer) {
        self.connection
            .answer(Instant::now(), id, answer)
            .expect("answer");
        self.flush();
    }

    /// Closes with 1000 and waits for the end.
    pub fn close(mut self) {
        self.connection
            .close(Instant::now(), ocpp_frame::CloseCode::NORMAL, "bye");
        loop {
            if let Event::Closed(_) = self.next_event() {
                return;
            }
        }
    }
}

/// One HTTP request to the admin interface; returns the status and the body.
pub fn http(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, String) {
    http_with(addr, method, path, "", body)
}

/// [`http`] with more header lines (`extra`, each ending in `\r\n`).
pub fn http_with(
    addr: SocketAddr,
    method: &str,
    path: &str,
    extra: &str,
    body: &str,
) -> (u16, String) {
    let mut stream = TcpStream::connect_timeout(&addr, WAIT).expect("admin connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(45)))
        .unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         {extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .expect("admin response");
    let status = response[9..12].parse().expect("status");
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

pub fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

pub fn charge_point_state(server: &ServerProcess, identity: &str) -> Value {
    let (status, body) = http(
        server.admin,
        "GET",
        &format!("/chargepoints/{identity}"),
        "",
    );
    assert_eq!(status, 200, "{body}");
    json(&body)
}

/// Test certificates made with rcgen in a fresh directory (removed when dropped):
/// - `ca.pem` / `ca.key`: the CA the server and the charge points trust (and its key, for a
///   CSMS that signs CSRs with it: `--ca-cert`, `--ca-key`);
/// - `server.pem` / `server.key`: the CSMS, for `127.0.0.1` and `localhost`;
/// - `CP001.pem` / `CP001.key`, `CP002.pem` / `CP002.key`: charge points (subject CN = identity);
/// - `rogue-ca.pem`, `rogue-CP001.pem` / `rogue-CP001.key`: another CA and a CP001
///   certificate it issued, which the server does not trust.
pub struct Pki {
    pub dir: PathBuf,
}

impl Pki {
    pub fn new(name: &str) -> Pki {
        use rcgen::{
            BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
            KeyPair, KeyUsagePurpose,
        };
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "ocpp-pki-{name}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |file: &str, text: &str| std::fs::write(dir.join(file), text).unwrap();
        let ca = |cn: &str, file: &str| {
            let key = KeyPair::generate().unwrap();
            let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            params.distinguished_name.push(DnType::CommonName, cn);
            params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
            write(file, &params.self_signed(&key).unwrap().pem());
            write(&file.replace(".pem", ".key"), &key.serialize_pem());
            Issuer::new(params, key)
        };
        let leaf = |issuer: &Issuer<'_, KeyPair>,
                    cn: &str,
                    names: &[&str],
                    usage: ExtendedKeyUsagePurpose,
                    file: &str| {
            let key = KeyPair::generate().unwrap();
            let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
            let mut params = CertificateParams::new(names).unwrap();
            params.distinguished_name.push(DnType::CommonName, cn);
            params.extended_key_usages = vec![usage];
            let cert = params.signed_by(&key, issuer).unwrap();
            write(&format!("{file}.pem"), &cert.pem());
            write(&format!("{file}.key"), &key.serialize_pem());
        };
        let ours = ca("OCPP test CA", "ca.pem");
        leaf(
            &ours,
            "csms.test",
            &["127.0.0.1", "localhost"],
            ExtendedKeyUsagePurpose::ServerAuth,
            "server",
        );
        for cp in ["CP001", "CP002"] {
            leaf(&ours, cp, &[], ExtendedKeyUsagePurpose::ClientAuth, cp);
        }
        let rogue = ca("Rogue CA", "rogue-ca.pem");
        leaf(
            &rogue,
            "CP001",
            &[],
            ExtendedKeyUsagePurpose::ClientAuth,
            "rogue-CP001",
        );
        Pki { dir }
    }

    /// The path of one of the files, as a string for a command line.
    pub fn path(&self, file: &str) -> String {
        self.dir.join(file).to_str().unwrap().to_owned()
    }

    /// A client trusting our CA, presenting the certificate `name` (e.g. `CP001`) if given.
    pub fn client(&self, name: Option<&str>) -> TlsClient {
        let (cert, key) = name.map_or((String::new(), String::new()), |n| {
            (
                self.path(&format!("{n}.pem")),
                self.path(&format!("{n}.key")),
            )
        });
        let identity = name.map(|_| (Path::new(&cert), Path::new(&key)));
        TlsClient::new(&self.dir.join("ca.pem"), identity)
    }

    /// The server's TLS flags: `--tls-cert`, `--tls-key`.
    pub fn server_args(&self) -> Vec<String> {
        vec![
            "--tls-cert".into(),
            self.path("server.pem"),
            "--tls-key".into(),
            self.path("server.key"),
        ]
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
