//! One OCPP-J connection, CSMS side or charge-point side, as a Sans-IO state machine.

mod close;
mod exchange;
mod handshake;
mod queue;
mod refusal;
mod rpc;
mod spare;

pub use handshake::{ConnectTarget, WrongState};
pub use refusal::{RefusalReason, Refused};

use exchange::Exchange;

use std::sync::Arc;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use ocpp_frame::deflate::{Accepted, Compressor, DeflateParams};
use ocpp_frame::handshake::{
    BuildError, ClientHandshake, ServerHandshake, UpgradeRequest as RawUpgrade,
};
use ocpp_frame::mask::MaskKeys;
use ocpp_frame::{Decoder, Encoder, Role};
use ocpp_messages::envelope::MessageId;
use ocpp_messages::version::OcppVersion;

use crate::timer::{Timer, TimerTable};
use crate::{ConnectionConfig, Event, Request};

/// Which end of the OCPP-J link this connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The central system: accepts WebSocket connections.
    Csms,
    /// The charge point: opens the WebSocket connection.
    ChargePoint,
}

/// One OCPP-J connection: bytes and the time in; events, bytes to write and the next deadline
/// out. No socket, no clock, no thread.
///
/// Methods come in four families (the shape of quinn-proto's `Connection`):
/// - `handle_*` feed it what happened: [`handle_data`](Self::handle_data) (bytes read),
///   [`handle_eof`](Self::handle_eof) (the peer closed its side),
///   [`handle_timeout`](Self::handle_timeout) (the deadline of
///   [`poll_timeout`](Self::poll_timeout) passed);
/// - mutators: [`accept`](Self::accept), [`reject`](Self::reject), [`decide`](Self::decide),
///   [`call`](Self::call), [`answer`](Self::answer) (the one answer rule), [`send`](Self::send),
///   [`close`](Self::close);
/// - draining: [`poll_event`](Self::poll_event), then the output:
///   [`pending_transmit`](Self::pending_transmit) and
///   [`advance_transmit`](Self::advance_transmit), and the deadline:
///   [`poll_timeout`](Self::poll_timeout);
/// - getters: [`wants_read`](Self::wants_read), [`side`](Self::side),
///   [`version`](Self::version), [`is_open`](Self::is_open), [`is_closed`](Self::is_closed)...
///
/// # The drain contract
///
/// Only `handle_*` and mutators produce events and output. After any of them, in one pass:
///
/// 1. take every event with [`poll_event`](Self::poll_event) until it returns `None`,
///    answering CALLs as they come (an answer may hand on a held CALL: it is an event of the
///    same pass, so keep polling until `None`);
/// 2. write [`pending_transmit`](Self::pending_transmit) to the socket and report what was
///    written with [`advance_transmit`](Self::advance_transmit), until the socket would block;
/// 3. once [`is_closed`](Self::is_closed) and nothing is pending, close the socket;
/// 4. otherwise sleep until the socket is readable (if [`wants_read`](Self::wants_read)),
///    writable (if output is pending), or [`poll_timeout`](Self::poll_timeout) passes; then
///    feed what happened to `handle_*` and start again.
///
/// `advance_transmit`, `poll_*` and the getters never produce events or output, so one pass
/// drains everything: no repeated rounds. Answers ([`answer`](Self::answer)) are never refused
/// for back-pressure; instead
/// [`wants_read`](Self::wants_read) turns false while the output is over half of
/// [`ConnectionConfig::max_outbound_bytes`](crate::ConnectionConfig::max_outbound_bytes) (until
/// it drains below a quarter) or while the peer has pipelined more CALLs than are held.
///
/// A complete charge point and central system, each on its own socket and thread, with one
/// loop that follows the contract (blocking std sockets: the read timeout is the deadline):
///
/// ```
/// use std::io::{self, Read, Write};
/// use std::net::{TcpListener, TcpStream};
/// use std::sync::Arc;
/// use std::time::{Duration, Instant};
/// use ocpp_proto::{
///     v1_6, Answer, ChargePointIdentity, ConnectTarget, Connection, ConnectionConfig, DateTime, Event,
///     OcppVersion,
/// };
///
/// /// Drives `conn` on `stream` until it is closed; `on_event` answers what it must.
/// fn drive(
///     mut stream: TcpStream,
///     mut conn: Connection,
///     mut on_event: impl FnMut(&mut Connection, Event),
/// ) -> io::Result<()> {
///     let mut buf = [0u8; 4096];
///     loop {
///         while let Some(event) = conn.poll_event() {
///             on_event(&mut conn, event);
///         }
///         let n = conn.pending_transmit().len();
///         stream.write_all(conn.pending_transmit())?;
///         conn.advance_transmit(n);
///         if conn.is_closed() {
///             return Ok(());
///         }
///         let now = Instant::now();
///         let wait = conn.poll_timeout().map(|t| t.saturating_duration_since(now));
///         stream.set_read_timeout(wait.map(|w| w.max(Duration::from_millis(1))))?;
///         // (A blocking loop writes everything at once, so `wants_read` stays true here.)
///         match stream.read(&mut buf) {
///             Ok(0) => conn.handle_eof(Instant::now()),
///             Ok(n) => conn.handle_data(Instant::now(), &buf[..n]),
///             Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
///                 conn.handle_timeout(Instant::now())
///             }
///             Err(_) => conn.handle_eof(Instant::now()),
///         }
///     }
/// }
///
/// let listener = TcpListener::bind("127.0.0.1:0")?;
/// let address = listener.local_addr()?;
/// let config = Arc::new(ConnectionConfig::default().versions(vec![OcppVersion::V1_6]));
/// let csms_config = config.clone();
/// let csms = std::thread::spawn(move || -> io::Result<()> {
///     let (stream, _) = listener.accept()?;
///     let conn = Connection::accept_incoming(Instant::now(), csms_config);
///     drive(stream, conn, |conn, event| match event {
///         Event::UpgradeRequested(_) => conn.accept(Instant::now()).unwrap(),
///         Event::Call { id, request } => {
///             assert_eq!(request.action(), "Heartbeat");
///             let answer = Answer::result(v1_6::HeartbeatResponse::new(DateTime::now()));
///             conn.answer(Instant::now(), &id, answer).unwrap();
///         }
///         _ => {}
///     })
/// });
///
/// let identity = ChargePointIdentity::new("CP001".into(), false).unwrap();
/// let target = ConnectTarget::new(&address.to_string(), "/ocpp", identity);
/// let cp = Connection::connect(Instant::now(), config, &target, [7; 16], 42).unwrap();
/// drive(TcpStream::connect(address)?, cp, |conn, event| match event {
///     Event::Connected { .. } => {
///         conn.call(Instant::now(), v1_6::HeartbeatRequest::default().into()).unwrap();
///     }
///     Event::CallCompleted { outcome, .. } => {
///         println!("{outcome:?}");
///         conn.close(Instant::now(), ocpp_proto::CloseCode::NORMAL, "done");
///     }
///     _ => {}
/// })?;
/// csms.join().unwrap()?;
/// # Ok::<(), io::Error>(())
/// ```
///
/// The upgrade on its own, in memory:
///
/// ```
/// use std::sync::Arc;
/// use std::time::Instant;
/// use ocpp_proto::{Connection, ConnectionConfig, Event};
///
/// let now = Instant::now();
/// let mut csms = Connection::accept_incoming(now, Arc::new(ConnectionConfig::default()));
/// let request = b"GET /ocpp/CP001 HTTP/1.1\r\nHost: csms\r\nUpgrade: websocket\r\n\
///     Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
///     Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: ocpp1.6\r\n\r\n";
/// csms.handle_data(now, request);
/// let Some(Event::UpgradeRequested(upgrade)) = csms.poll_event() else { panic!() };
/// assert_eq!(upgrade.identity.as_str(), "CP001");
/// csms.accept(now).unwrap();
/// assert!(matches!(csms.poll_event(), Some(Event::Connected { .. })));
/// assert!(csms.pending_transmit().starts_with(b"HTTP/1.1 101 Switching Protocols\r\n"));
/// ```
///
/// `Debug` shows the state and sizes, never buffered bytes: the output buffer may hold an
/// upgrade request with `Authorization` in it.
pub struct Connection<C = ()> {
    side: Side,
    config: Arc<ConnectionConfig>,
    state: State,
    version: OcppVersion,
    decoder: Decoder,
    encoder: Encoder,
    /// permessage-deflate, once agreed: the parameters and our compressor (boxed: most
    /// connections never use it and pay one null pointer).
    deflate: Option<Box<Deflate>>,
    /// The output, the events, our CALLs in flight and queued, the peer's CALLs awaiting an
    /// answer and held: allocated only while one of them is under way (an idle connection pays
    /// one null pointer where they took 144 bytes).
    exchange: Exchange<C>,
    /// The deadlines, and when the peer last sent anything: the keep-alive and idle timers
    /// count silence from there, so a busy line costs one store per read and no timer work.
    timers: TimerTable,
    next_id: u64,
    mask_keys: MaskKeys,
    /// Reading paused: the output passed half its limit and has not drained below a quarter.
    read_paused: bool,
    ping_counter: u32,
}

impl<C> std::fmt::Debug for Connection<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match &self.state {
            State::ServerHandshake(_) => "ServerHandshake",
            State::AwaitingDecision(_) => "AwaitingDecision",
            State::ClientHandshake(_) => "ClientHandshake",
            State::Open => "Open",
            State::Closing(_) => "Closing",
            State::Closed => "Closed",
        };
        f.debug_struct("Connection")
            .field("side", &self.side)
            .field("state", &state)
            .field("version", &self.version)
            .field("pending_transmit", &self.pending_transmit_len())
            .field("events", &self.exchange.event_count())
            .field("call_in_flight", &self.exchange.outgoing().map(|c| &c.id))
            .field("queued_calls", &self.exchange.queued_len())
            .field("incoming_call", &self.exchange.incoming())
            .field("held_calls", &self.exchange.held_len())
            .finish()
    }
}

enum State {
    /// CSMS: reading the upgrade request.
    ServerHandshake(Box<ServerHandshake>),
    /// CSMS: the application decides; bytes that followed the request wait here.
    AwaitingDecision(Box<PendingUpgrade>),
    /// Charge point: our request is written; reading the response.
    ClientHandshake(Box<ClientHandshake>),
    /// Messages flow.
    Open,
    /// We sent a close frame; waiting for the peer's, or its end of stream, or the timeout.
    Closing(Box<crate::CloseReason>),
    /// Over; the `Closed` event was queued.
    Closed,
}

#[derive(Debug)]
struct PendingUpgrade {
    request: RawUpgrade,
    version: Option<OcppVersion>,
    trailing: Bytes,
    /// The permessage-deflate offer we will accept, if any.
    deflate: Option<Accepted>,
}

/// permessage-deflate as agreed in the handshake, and our side's compressor.
#[derive(Debug)]
struct Deflate {
    params: DeflateParams,
    compressor: Compressor,
}

/// Our CALL, in flight or queued behind the one in flight.
#[derive(Debug)]
struct OutgoingCall<C> {
    id: MessageId<'static>,
    request: Request,
    /// Who waits for its outcome (handed back with it).
    caller: C,
    /// [`Connection::call_with_deadline`]: not written after this; answered by then.
    deadline: Option<Instant>,
}

impl Connection {
    /// A CSMS-side connection for a socket just accepted; the upgrade request is expected.
    /// Its CALLs carry no caller ([`Connection::accept_incoming_with_callers`] for one whose
    /// CALLs each carry who waits for them).
    pub fn accept_incoming(now: Instant, config: Arc<ConnectionConfig>) -> Self {
        Self::accept_incoming_with_callers(now, config)
    }

    /// A charge-point-side connection ([`Connection::connect_with_callers`]), whose CALLs
    /// carry no caller.
    ///
    /// # Errors
    /// As [`Connection::connect_with_callers`].
    pub fn connect(
        now: Instant,
        config: Arc<ConnectionConfig>,
        target: &ConnectTarget,
        key: [u8; 16],
        seed: u64,
    ) -> Result<Self, BuildError> {
        Self::connect_with_callers(now, config, target, key, seed)
    }
}

impl<C> Connection<C> {
    /// [`Connection::accept_incoming`] for a connection whose CALLs each carry their caller
    /// (`C`, handed back with the CALL's end: [`Connection::call_for`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Instant;
    /// use ocpp_proto::{Connection, ConnectionConfig};
    ///
    /// // A driver whose callers wait on a channel keeps the sender with each CALL.
    /// type Reply = std::sync::mpsc::Sender<ocpp_proto::CallOutcome>;
    /// let config = Arc::new(ConnectionConfig::default());
    /// let csms = Connection::<Reply>::accept_incoming_with_callers(Instant::now(), config);
    /// assert!(!csms.is_open());
    /// ```
    pub fn accept_incoming_with_callers(now: Instant, config: Arc<ConnectionConfig>) -> Self {
        let handshake = ServerHandshake::with_config(config.handshake);
        let mut connection = Self::new(
            now,
            Side::Csms,
            config,
            State::ServerHandshake(Box::new(handshake)),
            0,
        );
        let deadline = now + connection.config.handshake_timeout;
        connection.timers.set(Timer::Handshake, deadline);
        connection
    }

    fn new(
        now: Instant,
        side: Side,
        config: Arc<ConnectionConfig>,
        state: State,
        seed: u64,
    ) -> Self {
        let role = match side {
            Side::Csms => Role::Server,
            Side::ChargePoint => Role::Client,
        };
        Connection {
            side,
            decoder: Decoder::new(role, config.decoder.clone()),
            encoder: Encoder::new(role),
            deflate: None,
            config,
            state,
            version: OcppVersion::V1_6,
            exchange: Exchange::default(),
            timers: TimerTable::new(now),
            next_id: 1,
            mask_keys: MaskKeys::new(seed),
            read_paused: false,
            ping_counter: 0,
        }
    }

    // ---- getters ----

    /// Which end this is.
    pub fn side(&self) -> Side {
        self.side
    }

    /// The negotiated OCPP version, once connected.
    pub fn version(&self) -> Option<OcppVersion> {
        match self.state {
            State::Open | State::Closing(_) => Some(self.version),
            _ => None,
        }
    }

    /// Whether messages can be exchanged.
    pub fn is_open(&self) -> bool {
        matches!(self.state, State::Open)
    }

    /// Whether the connection is over (the `Closed` event was queued). Write out what
    /// [`Self::pending_transmit`] still has, then close the socket.
    pub fn is_closed(&self) -> bool {
        matches!(self.state, State::Closed)
    }

    /// The permessage-deflate parameters agreed in the handshake, if it was negotiated.
    pub fn deflate(&self) -> Option<&DeflateParams> {
        self.deflate.as_ref().map(|d| &d.params)
    }

    /// Whether one of our CALLs awaits its answer.
    pub fn has_call_in_flight(&self) -> bool {
        self.exchange.outgoing().is_some()
    }

    /// How many of our CALLs wait behind the one in flight.
    pub fn queued_calls(&self) -> usize {
        self.exchange.queued_len()
    }

    /// Unsent output bytes.
    pub fn pending_transmit_len(&self) -> usize {
        self.exchange.pending().len()
    }

    /// Whether the loop should read from the socket now. False once closed, while the unsent
    /// output is over half of `max_outbound_bytes` (until it drains below a quarter: a peer
    /// that does not read its answers is not given more work), and while the peer has more
    /// CALLs pipelined than are held. Never false for long on a connection that is
    /// written out: answers do not wait for input.
    pub fn wants_read(&self) -> bool {
        let pipelined =
            self.exchange.awaits_answer() && self.exchange.held_len() >= self.config.max_held_calls;
        !(self.is_closed() || self.read_paused || pipelined)
    }

    /// Heap bytes held by this connection's own buffers and queues (not counting the shared
    /// configuration); zero for an idle open connection, unless permessage-deflate with context
    /// takeover keeps compression state (counted from the measured figures of
    /// [`ocpp_frame::deflate`]).
    pub fn heap_bytes(&self) -> usize {
        let compressor = self
            .deflate
            .as_ref()
            .map_or(0, |d| d.compressor.heap_bytes());
        compressor + self.decoder.heap_bytes() + self.exchange.heap_bytes()
    }

    // ---- handle_* ----

    /// Bytes read from the socket.
    pub fn handle_data(&mut self, now: Instant, data: &[u8]) {
        match &mut self.state {
            State::ServerHandshake(_) => self.handle_upgrade_request(now, data),
            State::ClientHandshake(_) => self.handle_upgrade_response(now, data),
            State::AwaitingDecision(pending) => {
                // A client should wait for the 101; keep what it pipelined, bounded.
                let limit = self.config.decoder.get_max_frame_size() as usize
                    + ocpp_frame::frame::MAX_HEADER_LEN;
                if pending.trailing.len() + data.len() > limit {
                    self.fail_handshake(400, "data before the upgrade completed");
                } else {
                    let mut joined = BytesMut::from(&pending.trailing[..]);
                    joined.extend_from_slice(data);
                    pending.trailing = joined.freeze();
                }
            }
            State::Open | State::Closing(_) => self.handle_frames(now, data),
            State::Closed => {}
        }
    }

    /// The peer closed its side of the stream (a read returned 0) or the socket failed.
    pub fn handle_eof(&mut self, _now: Instant) {
        match &self.state {
            State::Closed => {}
            State::Closing(reason) => {
                let reason = (**reason).clone();
                self.finish(reason);
            }
            _ => self.finish(crate::CloseReason::Eof),
        }
    }

    /// The deadline [`Self::poll_timeout`] returned has passed (calling it early is harmless).
    pub fn handle_timeout(&mut self, now: Instant) {
        for timer in Timer::ALL {
            if self.timers.is_expired(timer, now) {
                self.timers.stop(timer);
                self.on_timer(now, timer);
            }
        }
    }

    /// Queues an event. The first of a pass goes into the exchange state itself (most passes
    /// have exactly one), so it costs no allocation beyond that state's.
    fn push_event(&mut self, event: Event<C>) {
        self.exchange.push_event(event);
    }

    // ---- poll_* ----

    /// The next event, if any.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<Event<C>> {
        // The last event taken frees the exchange state if nothing else is under way.
        self.exchange.pop_event()
    }

    /// The output not written yet: write it to the socket (from the start, as much as it
    /// takes), then say how much with [`Self::advance_transmit`]. Bytes stay here until then,
    /// so a partial write loses nothing and copies nothing.
    pub fn pending_transmit(&self) -> &[u8] {
        self.exchange.pending()
    }

    /// Marks `n` bytes of [`Self::pending_transmit`] as written. Produces no event and no
    /// output (the drain contract); it may let [`Self::wants_read`] turn true again.
    pub fn advance_transmit(&mut self, n: usize) {
        // All of it written: the buffer is freed, and the exchange state with it if nothing
        // else is under way.
        self.exchange.advance(n);
        if self.read_paused && self.pending_transmit_len() <= self.config.max_outbound_bytes / 4 {
            self.read_paused = false;
        }
    }

    /// The next deadline: call [`Self::handle_timeout`] when it passes. `None`: no timer runs.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next()
    }

    // ---- internals shared by the submodules ----

    fn on_timer(&mut self, now: Instant, timer: Timer) {
        match timer {
            Timer::Handshake => {
                if !matches!(self.state, State::Open | State::Closing(_) | State::Closed) {
                    self.clear_output();
                    self.finish(crate::CloseReason::HandshakeTimeout);
                }
            }
            Timer::Ping => match self.config.ping_interval {
                // A ping only after the interval passed in silence: a busy line never pings.
                Some(interval) if now < self.timers.last_input() + interval => {
                    self.timers
                        .set(Timer::Ping, self.timers.last_input() + interval);
                }
                Some(_) => self.send_ping(now),
                None => {}
            },
            Timer::Pong => self.abort_with_close(crate::CloseReason::PongTimeout),
            Timer::Idle => match self.config.idle_timeout {
                Some(idle) if now < self.timers.last_input() + idle => {
                    self.timers
                        .set(Timer::Idle, self.timers.last_input() + idle);
                }
                Some(_) => self.abort_with_close(crate::CloseReason::IdleTimeout),
                None => {}
            },
            Timer::Call => self.call_timed_out(now),
            Timer::Queued => self.expire_queued(now),
            Timer::Close => {
                if let State::Closing(reason) = &self.state {
                    let reason = (**reason).clone();
                    self.finish(reason);
                }
            }
        }
    }

    /// Starts the timers of an open connection.
    fn start_open_timers(&mut self, now: Instant) {
        self.timers.stop(Timer::Handshake);
        self.timers.note_input(now);
        self.start_silence_timers();
    }

    /// (Re)arms the keep-alive and idle timers from the last input, as the configuration says.
    fn start_silence_timers(&mut self) {
        match self.config.ping_interval {
            Some(interval) => self
                .timers
                .set(Timer::Ping, self.timers.last_input() + interval),
            None => self.timers.stop(Timer::Ping),
        }
        match self.config.idle_timeout {
            Some(idle) => self
                .timers
                .set(Timer::Idle, self.timers.last_input() + idle),
            None => self.timers.stop(Timer::Idle),
        }
    }

    /// Replaces this connection's settings, e.g. to change one charge point's keep-alive or
    /// timeouts while it is connected (ocpp-rpc #80, ocpp-go #44). The keep-alive, pong, idle
    /// and call timeouts, the outbound and queue limits and the decode options apply from now
    /// on (a running ping or idle deadline is recomputed from the last input; a CALL in flight
    /// keeps its deadline); what was negotiated at the upgrade (versions, frame limits,
    /// permessage-deflate) stays as it was.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::{Duration, Instant};
    /// use ocpp_proto::{Connection, ConnectionConfig};
    /// let shared = Arc::new(ConnectionConfig::default());
    /// let mut conn = Connection::accept_incoming(Instant::now(), shared.clone());
    /// // This charge point misbehaves with server pings: turn them off for it alone.
    /// let quiet = (*shared).clone().ping_interval(None);
    /// conn.set_config(Instant::now(), Arc::new(quiet));
    /// ```
    pub fn set_config(&mut self, _now: Instant, config: Arc<ConnectionConfig>) {
        self.config = config;
        if matches!(self.state, State::Open) {
            self.start_silence_timers();
        }
    }

    /// This connection's settings.
    pub fn config(&self) -> &Arc<ConnectionConfig> {
        &self.config
    }

    /// The next masking key: the charge-point side masks every frame (RFC 6455 §5.3) with keys
    /// from `ocpp_frame`'s generator, seeded by the application's RNG.
    fn mask_key(&mut self) -> Option<[u8; 4]> {
        match self.side {
            Side::Csms => None,
            Side::ChargePoint => Some(self.mask_keys.next_key()),
        }
    }

    fn next_message_id(&mut self) -> MessageId<'static> {
        let id = self.next_id;
        self.next_id += 1;
        MessageId::from_counter(id)
    }

    /// After a data frame was written: pauses reading past half the outbound limit.
    fn note_output(&mut self) {
        if self.pending_transmit_len() > self.config.max_outbound_bytes / 2 {
            self.read_paused = true;
        }
    }

    /// Turns permessage-deflate on with the agreed parameters.
    fn start_deflate(&mut self, params: DeflateParams) {
        let role = match self.side {
            Side::Csms => Role::Server,
            Side::ChargePoint => Role::Client,
        };
        if let Some(config) = self.config.deflate.config() {
            self.decoder.set_deflate(&params);
            let compressor = Compressor::new(role, &params, config);
            self.deflate = Some(Box::new(Deflate { params, compressor }));
        }
    }

    /// Drops unsent output (the peer is gone or will not read it).
    fn clear_output(&mut self) {
        self.exchange.clear_output();
    }
}
