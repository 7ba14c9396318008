//! A plain WebSocket echo server (RFC 6455, no OCPP) on a single-threaded mio event loop.
//!
//! It exists for conformance suites (Autobahn|Testsuite, the interop scripts in `tests/interop/`)
//! and as the smallest complete example of driving `ocpp-frame` from real sockets:
//!
//! - the HTTP upgrade is parsed by [`ServerHandshake`], fed whatever bytes arrive;
//! - frames are decoded by a [`Decoder`] per connection and answered with an [`Encoder`]:
//!   text is echoed as text, binary as binary (whole reassembled messages), a ping gets a pong,
//!   a close gets a close with the same code and reason, and a protocol error gets a close with
//!   [`ProtocolError::close_code`];
//! - after a close (or a refused handshake) the connection flushes what it owes, shuts down its
//!   write side and waits, at most [`CLOSE_TIMEOUT`], for the peer to close too.
//!
//! Memory: one scratch read buffer for the whole loop ([`SCRATCH_SIZE`]); per connection only
//! the socket, the handshake or decoder state and the bytes still to be written.
//!
//! Compression: permessage-deflate (RFC 7692) is accepted whenever a client offers it, with
//! whatever parameters the offer asks for and context takeover allowed both ways (the
//! conformance suites exercise every variant); every data message is compressed, whatever its
//! size. `--no-deflate` answers without the extension.
//!
//! Subprotocols: the server never selects one, even when the client offers some (RFC 6455 §4.2.2
//! lets a server answer without `Sec-WebSocket-Protocol`; it then speaks none). An OCPP server
//! would pick the first offered version it supports instead.
//!
//! Usage: `echo-server [--no-deflate] [ADDR]` (default `127.0.0.1:9001`; port 0 picks a free port, printed in
//! the `listening on` line on stderr).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Registry, Token};
use ocpp_frame::deflate::{Compressor, DeflateConfig};
use ocpp_frame::handshake::{Accept, Progress, ServerHandshake};
use ocpp_frame::{
    CloseCode, Decoder, DecoderConfig, Encoder, Message, Opcode, ProtocolError, Role,
};

/// The address used when none is given.
const DEFAULT_ADDR: &str = "127.0.0.1:9001";
/// The token of the listening socket; connections get 1, 2, 3, ... (never reused).
const LISTENER: Token = Token(0);
/// The one read buffer of the event loop, shared by every connection.
const SCRATCH_SIZE: usize = 64 * 1024;
/// Largest message (all fragments) and largest frame: Autobahn's 9.x cases send 16 MiB.
const MAX_MESSAGE_SIZE: u64 = 17 * 1024 * 1024;
/// Largest frame payload; a whole message may come in one frame.
const MAX_FRAME_SIZE: u64 = MAX_MESSAGE_SIZE;
/// Most frames per message: Autobahn 9.3.1 sends 4 MiB in 64-byte fragments (65,536 frames).
const MAX_FRAGMENTS: u32 = 100_000;
/// How long a new connection may take to complete its HTTP upgrade request.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a closing connection may take to flush its output and see the peer's EOF.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);
/// Back-pressure: a connection is not read while this many bytes wait to be written to it, so
/// a peer that sends without reading cannot make the server buffer without bound.
const OUTPUT_HIGH_WATER: usize = 4 * 1024 * 1024;
/// An empty output buffer keeps its allocation up to this size; a larger one is freed.
const OUTPUT_KEEP_CAPACITY: usize = 64 * 1024;
/// Close reasons are at most 123 bytes (RFC 6455 §5.5: 125-byte control payload minus the code).
const MAX_CLOSE_REASON: usize = 123;

/// The command line.
#[derive(Debug, Parser)]
#[command(
    name = "echo-server",
    about = "A plain WebSocket echo server (RFC 6455, no OCPP) for conformance suites.\n\
             Echoes text and binary messages, answers pings with pongs and closes with closes.",
    after_help = "Prints `echo-server listening on ADDR` to stderr once it accepts connections."
)]
struct Cli {
    /// Address to listen on (port 0 picks a free port).
    #[arg(value_name = "ADDR", default_value = DEFAULT_ADDR)]
    addr: SocketAddr,
    /// Do not accept permessage-deflate (RFC 7692).
    #[arg(long)]
    no_deflate: bool,
}

fn main() -> ExitCode {
    // Errors and --help exit here (2 and 0).
    let cli = Cli::parse();
    let deflate = (!cli.no_deflate).then(deflate_config);
    match run(cli.addr, deflate) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("echo-server: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Binds `addr` and runs the event loop until a fatal error (it never returns `Ok` on its own).
fn run(addr: SocketAddr, deflate: Option<DeflateConfig>) -> io::Result<()> {
    let mut poll = Poll::new()?;
    let mut listener = TcpListener::bind(addr)?;
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)?;
    eprintln!("echo-server listening on {}", listener.local_addr()?);

    let mut server = EchoServer::new(deflate);
    let mut events = Events::with_capacity(1024);
    loop {
        // Sleep until a socket is ready or the earliest deadline passes.
        let timeout = server.next_timeout(Instant::now());
        if let Err(e) = poll.poll(&mut events, timeout) {
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        let now = Instant::now();
        for event in events.iter() {
            match event.token() {
                LISTENER => server.accept(&listener, poll.registry(), now),
                token => server.ready(token, poll.registry(), now),
            }
        }
        server.expire_deadlines(poll.registry(), Instant::now());
    }
}

/// Everything the event loop owns besides the poller and the listener.
struct EchoServer {
    connections: HashMap<Token, EchoConnection>,
    /// The next connection token; tokens are never reused, so a stale event or timer entry can
    /// never reach a newer connection.
    next_token: usize,
    /// Deadlines, earliest first. An entry is stale when its connection is gone or its deadline
    /// changed; stale entries are skipped when they come up.
    timers: BinaryHeap<Reverse<(Instant, Token)>>,
    /// The one read buffer of the loop: bytes go from here straight into the handshake parser
    /// or the decoder, which keep only what belongs to an unfinished head or frame.
    scratch: Box<[u8]>,
    /// What to accept of permessage-deflate; `None` with `--no-deflate`.
    deflate: Option<DeflateConfig>,
}

impl EchoServer {
    fn new(deflate: Option<DeflateConfig>) -> Self {
        EchoServer {
            deflate,
            connections: HashMap::new(),
            next_token: LISTENER.0 + 1,
            timers: BinaryHeap::new(),
            scratch: vec![0; SCRATCH_SIZE].into_boxed_slice(),
        }
    }

    /// Accepts every pending connection (mio's readiness is edge-triggered: drain until
    /// `WouldBlock`).
    fn accept(&mut self, listener: &TcpListener, registry: &Registry, now: Instant) {
        loop {
            let (mut stream, _peer) = match listener.accept() {
                Ok(accepted) => accepted,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                // The client gave up before we accepted: only that connection is lost.
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted
                            | io::ErrorKind::ConnectionAborted
                            | io::ErrorKind::ConnectionReset
                    ) =>
                {
                    continue
                }
                Err(e) => {
                    // E.g. out of file descriptors. The connection stays in the backlog and is
                    // retried when the next one arrives; the loop itself carries on.
                    eprintln!("echo-server: accept: {e}");
                    return;
                }
            };
            // Echoes are small and latency-bound: send them without Nagle's delay.
            let _ = stream.set_nodelay(true);
            let token = Token(self.next_token);
            self.next_token += 1;
            if let Err(e) = registry.register(&mut stream, token, Interest::READABLE) {
                eprintln!("echo-server: register: {e}");
                continue;
            }
            let deadline = now + HANDSHAKE_TIMEOUT;
            self.timers.push(Reverse((deadline, token)));
            self.connections
                .insert(token, EchoConnection::new(stream, deadline, self.deflate));
        }
    }

    /// Handles readiness of one connection; removes it when it is finished or failed. Nothing
    /// that happens here touches any other connection.
    fn ready(&mut self, token: Token, registry: &Registry, now: Instant) {
        let Some(connection) = self.connections.get_mut(&token) else {
            return; // An event for a connection removed earlier in this batch.
        };
        let deadline_before = connection.deadline;
        let keep = match connection.drive(&mut self.scratch, now) {
            Ok(Next::Keep) => connection.update_interest(registry, token).is_ok(),
            Ok(Next::Remove) | Err(_) => false,
        };
        if !keep {
            self.remove(token, registry);
            return;
        }
        if connection.deadline != deadline_before {
            if let Some(deadline) = connection.deadline {
                self.timers.push(Reverse((deadline, token)));
            }
        }
    }

    /// Drops every connection whose deadline has passed (a handshake that never completed, a
    /// close that never finished).
    fn expire_deadlines(&mut self, registry: &Registry, now: Instant) {
        while let Some(&Reverse((at, token))) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            let expired = self
                .connections
                .get(&token)
                .and_then(|c| c.deadline)
                .is_some_and(|deadline| deadline <= now);
            if expired {
                self.remove(token, registry);
            }
        }
    }

    /// How long the poller may sleep: until the earliest deadline, or forever without one.
    fn next_timeout(&self, now: Instant) -> Option<Duration> {
        self.timers
            .peek()
            .map(|Reverse((at, _))| at.saturating_duration_since(now))
    }

    fn remove(&mut self, token: Token, registry: &Registry) {
        if let Some(mut connection) = self.connections.remove(&token) {
            let _ = registry.deregister(&mut connection.stream);
            // Dropping the stream closes the socket.
        }
    }
}

/// What the event loop does with a connection after driving it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    Keep,
    Remove,
}

/// Where a connection stands.
enum WebSocketStage {
    /// Reading the HTTP upgrade request (RFC 6455 §4.2.1).
    Handshake(ServerHandshake),
    /// Exchanging frames; the compressor when permessage-deflate was agreed.
    Open(Decoder, Option<Box<Compressor>>),
    /// A close frame or an HTTP error response is queued: flush it, shut down the write side,
    /// then read and discard until the peer's EOF (or the deadline).
    Closing,
}

/// One client connection: the socket, its protocol state and the bytes it still has to write.
struct EchoConnection {
    stream: TcpStream,
    stage: WebSocketStage,
    output: Outbox,
    /// Whether WRITABLE interest is registered (only while output is pending).
    writable_registered: bool,
    /// The peer shut down its write side (a read returned 0).
    peer_eof: bool,
    /// Our write side is shut down (FIN sent after the last queued byte).
    write_shut: bool,
    /// When the connection is dropped if it is still here; `None` while it is open.
    deadline: Option<Instant>,
    /// What to accept of permessage-deflate.
    deflate: Option<DeflateConfig>,
}

impl EchoConnection {
    fn new(stream: TcpStream, handshake_deadline: Instant, deflate: Option<DeflateConfig>) -> Self {
        EchoConnection {
            deflate,
            stream,
            stage: WebSocketStage::Handshake(ServerHandshake::new()),
            output: Outbox::default(),
            writable_registered: false,
            peer_eof: false,
            write_shut: false,
            deadline: Some(handshake_deadline),
        }
    }

    /// Writes what is pending and reads what arrived, until the socket would block; then decides
    /// whether the connection is finished. Any `Err` is fatal for this connection only.
    fn drive(&mut self, scratch: &mut [u8], now: Instant) -> io::Result<Next> {
        loop {
            self.output.flush_to(&mut self.stream)?;
            // Stop reading while the peer is not taking our echoes fast enough; a WRITABLE
            // event brings us back here once it has, and reading resumes.
            if self.peer_eof || self.output.pending() >= OUTPUT_HIGH_WATER {
                break;
            }
            match self.stream.read(scratch) {
                Ok(0) => {
                    self.peer_eof = true;
                    if self.output.pending() > 0 && self.deadline.is_none() {
                        // Flush what we owe, but not forever.
                        self.deadline = Some(now + CLOSE_TIMEOUT);
                    }
                }
                Ok(n) => self.handle_input(&scratch[..n], now),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        let flushed = self.output.pending() == 0;
        if matches!(self.stage, WebSocketStage::Closing) && flushed && !self.write_shut {
            // Everything we owe is written: send FIN, then wait for the peer's (RFC 6455 §7.1.1:
            // the server should close the TCP connection first).
            self.write_shut = true;
            if self.stream.shutdown(Shutdown::Write).is_err() {
                return Ok(Next::Remove);
            }
        }
        if self.peer_eof && flushed {
            return Ok(Next::Remove);
        }
        Ok(Next::Keep)
    }

    /// Feeds bytes read from the socket to the handshake or the decoder; whatever they answer
    /// is queued in the output.
    fn handle_input(&mut self, mut input: &[u8], now: Instant) {
        if let WebSocketStage::Handshake(handshake) = &mut self.stage {
            match handshake.handle_data(input) {
                Ok(Progress::NeedMore) => return,
                Ok(Progress::Complete {
                    value: request,
                    consumed,
                }) => {
                    // Any path is accepted, and no subprotocol is selected (see the module docs).
                    let accepted = self
                        .deflate
                        .and_then(|config| config.accept_offer(request.extensions()));
                    let header;
                    let headers: &[(&str, &[u8])] = match &accepted {
                        Some(accepted) => {
                            header = [("Sec-WebSocket-Extensions", accepted.response.as_bytes())];
                            &header
                        }
                        None => &[],
                    };
                    let accept = Accept::new().with_headers(headers);
                    if request.accept(&accept, self.output.buf()).is_err() {
                        self.start_closing(now);
                        return;
                    }
                    let mut decoder = Decoder::new(Role::Server, decoder_config());
                    let compressor = match (&accepted, &self.deflate) {
                        (Some(accepted), Some(config)) => {
                            decoder.set_deflate(&accepted.params);
                            Some(Box::new(Compressor::new(
                                Role::Server,
                                &accepted.params,
                                config,
                            )))
                        }
                        _ => None,
                    };
                    self.stage = WebSocketStage::Open(decoder, compressor);
                    self.deadline = None;
                    // Frames the client sent right behind its request (h11's "trailing data").
                    input = &input[consumed..];
                }
                Err(refusal) => {
                    // A malformed or non-WebSocket request: answer with its HTTP error, close.
                    refusal.write_response(self.output.buf());
                    self.start_closing(now);
                    return;
                }
            }
        }
        let WebSocketStage::Open(decoder, compressor) = &mut self.stage else {
            return; // Closing: what the peer sends now is read and discarded.
        };
        // One call to `decode` yields at most one message: call again with the rest.
        while !input.is_empty() {
            match decoder.decode(input) {
                Ok(decoded) => {
                    input = &input[decoded.consumed..];
                    let Some(message) = decoded.message else {
                        break; // All consumed; a partial frame is kept by the decoder.
                    };
                    if echo(message, compressor.as_deref_mut(), self.output.buf()) == Flow::Close {
                        self.start_closing(now);
                        return;
                    }
                }
                Err(error) => {
                    close_for_error(&error, self.output.buf());
                    self.start_closing(now);
                    return;
                }
            }
        }
    }

    /// Enters the closing stage: no more frames are decoded and the connection is dropped by
    /// `CLOSE_TIMEOUT` at the latest.
    fn start_closing(&mut self, now: Instant) {
        self.stage = WebSocketStage::Closing;
        self.deadline = Some(now + CLOSE_TIMEOUT);
    }

    /// Registers WRITABLE interest only while output is pending (otherwise every write-ready
    /// edge would wake the loop for nothing).
    fn update_interest(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        let want_writable = self.output.pending() > 0;
        if want_writable != self.writable_registered {
            let interest = if want_writable {
                Interest::READABLE | Interest::WRITABLE
            } else {
                Interest::READABLE
            };
            registry.reregister(&mut self.stream, token, interest)?;
            self.writable_registered = want_writable;
        }
        Ok(())
    }
}

/// Whether a connection goes on after a message was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Continue,
    Close,
}

/// Queues the answer to one message: the echo (compressed when permessage-deflate is on), a
/// pong, or the closing handshake's reply.
fn echo(message: Message, compressor: Option<&mut Compressor>, out: &mut Vec<u8>) -> Flow {
    let encoder = Encoder::new(Role::Server);
    // The server role never masks, so `None` is the masking key throughout.
    let result = match (message, compressor) {
        (Message::Text(text), Some(compressor)) => {
            encoder.encode_compressed(compressor, Opcode::Text, text.as_bytes(), None, out)
        }
        (Message::Binary(data), Some(compressor)) => {
            encoder.encode_compressed(compressor, Opcode::Binary, &data, None, out)
        }
        (message, _) => return echo_plain(message, &encoder, out),
    };
    match result {
        Ok(()) => Flow::Continue,
        Err(_) => {
            // Cannot happen for a server encoder with checked payloads; close rather than guess.
            let _ = encoder.encode_close(Some((CloseCode::INTERNAL_ERROR, "")), None, out);
            Flow::Close
        }
    }
}

/// [`echo`] without compression.
fn echo_plain(message: Message, encoder: &Encoder, out: &mut Vec<u8>) -> Flow {
    let result = match message {
        Message::Text(text) => encoder.encode_text(&text, None, out),
        Message::Binary(data) => encoder.encode_binary(&data, None, out),
        // RFC 6455 §5.5.2: a pong carries the ping's payload (the decoder ensures <= 125 bytes).
        Message::Ping(payload) => encoder.encode_pong(&payload, None, out),
        // An unsolicited pong needs no answer (RFC 6455 §5.5.3).
        Message::Pong(_) => Ok(()),
        // RFC 6455 §5.5.1: answer a close with a close, echoing the code (and reason); a close
        // without a code is answered with an empty one. The decoder has checked the code.
        Message::Close(close) => {
            let reply = close.as_ref().map(|c| (c.code, c.reason.as_str()));
            if encoder.encode_close(reply, None, out).is_err() {
                let _ = encoder.encode_close(None, None, out);
            }
            return Flow::Close;
        }
    };
    match result {
        Ok(()) => Flow::Continue,
        Err(_) => {
            // Cannot happen for a server encoder with checked payloads; close rather than guess.
            let _ = encoder.encode_close(Some((CloseCode::INTERNAL_ERROR, "")), None, out);
            Flow::Close
        }
    }
}

/// Queues the close frame for a protocol error: its close code and a short reason.
fn close_for_error(error: &ProtocolError, out: &mut Vec<u8>) {
    let reason = error.to_string();
    let reason = truncate_utf8(&reason, MAX_CLOSE_REASON);
    let encoder = Encoder::new(Role::Server);
    if encoder
        .encode_close(Some((error.close_code(), reason)), None, out)
        .is_err()
    {
        let _ = encoder.encode_close(None, None, out);
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
fn truncate_utf8(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// What the server accepts of permessage-deflate: any offer, with context takeover allowed
/// both ways (only what the client asks for is turned off), every data message compressed.
fn deflate_config() -> DeflateConfig {
    DeflateConfig::default()
        .server_no_context_takeover(false)
        .client_no_context_takeover(false)
        .min_compress_size(0)
}

/// The decoder limits of this server: large enough for Autobahn's 9.x performance cases.
fn decoder_config() -> DecoderConfig {
    DecoderConfig::default()
        .max_frame_size(MAX_FRAME_SIZE)
        .max_message_size(MAX_MESSAGE_SIZE)
        .max_fragments(MAX_FRAGMENTS)
}

/// The bytes a connection still has to write: `buf[written..]`.
#[derive(Default)]
struct Outbox {
    buf: Vec<u8>,
    written: usize,
}

impl Outbox {
    /// Bytes not yet written.
    fn pending(&self) -> usize {
        self.buf.len() - self.written
    }

    /// The buffer to append frames to. Drops the written prefix first once it is at least half
    /// of the buffer, so a peer that reads slowly costs one move per halving, not one per frame.
    fn buf(&mut self) -> &mut Vec<u8> {
        if self.written > 0 && self.written >= self.buf.len() / 2 {
            self.buf.drain(..self.written);
            self.written = 0;
        }
        &mut self.buf
    }

    /// Writes as much as the socket takes. `Ok` also when it would block (the rest stays queued).
    fn flush_to(&mut self, stream: &mut TcpStream) -> io::Result<()> {
        while self.written < self.buf.len() {
            match stream.write(&self.buf[self.written..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        if self.written == self.buf.len() {
            self.written = 0;
            if self.buf.capacity() > OUTPUT_KEEP_CAPACITY {
                // After a large message, give the memory back instead of keeping it per peer.
                self.buf = Vec::new();
            } else {
                self.buf.clear();
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncates_on_char_boundaries() {
        assert_eq!(truncate_utf8("abc", 2), "ab");
        assert_eq!(truncate_utf8("aé", 2), "a");
        assert_eq!(truncate_utf8("short", 123), "short");
    }

    #[test]
    fn echoes_and_closes() {
        let mut out = Vec::new();
        assert_eq!(
            echo(Message::Text("hi".into()), None, &mut out),
            Flow::Continue
        );
        assert_eq!(out, [0x81, 0x02, b'h', b'i']);
        out.clear();
        let ping = Message::Ping(b"p".to_vec().into());
        assert_eq!(echo(ping, None, &mut out), Flow::Continue);
        assert_eq!(out, [0x8a, 0x01, b'p']);
        out.clear();
        assert_eq!(echo(Message::Close(None), None, &mut out), Flow::Close);
        assert_eq!(out, [0x88, 0x00]);
        out.clear();
        close_for_error(&ProtocolError::InvalidUtf8, &mut out);
        assert_eq!(&out[..4], [0x88, out[1], 0x03, 0xef]); // 1007
    }

    #[test]
    fn echoes_compressed_with_deflate() {
        let params = ocpp_frame::deflate::DeflateParams::default();
        let mut compressor = Compressor::new(Role::Server, &params, &deflate_config());
        let mut out = Vec::new();
        let hello = Message::Text("Hello".into());
        assert_eq!(echo(hello, Some(&mut compressor), &mut out), Flow::Continue);
        // RFC 7692 §7.2.3.1; even 5 bytes are compressed (threshold 0).
        assert_eq!(out, [0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00]);
        out.clear();
        let ping = Message::Ping(b"p".to_vec().into());
        assert_eq!(echo(ping, Some(&mut compressor), &mut out), Flow::Continue);
        assert_eq!(out, [0x8a, 0x01, b'p']);
    }
}
