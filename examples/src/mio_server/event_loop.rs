//! One single-threaded event loop: sockets, connections, timers, commands.

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll};
use ocpp_frame::CloseCode;
use ocpp_messages::version::OcppVersion;
use ocpp_server_core::{ChargePointIdentity, Closed, Connection, Event, RefusalReason, Refused};

use super::slab::{Key, Slab};
use super::timers::TimerHeap;
use super::{
    Command, Handle, Shared, ADMIN_LISTENER, DRAIN_TIMEOUT, FLUSH_TIMEOUT, LISTENER,
    SHUTDOWN_TIMEOUT, WAKER,
};
use crate::csms::admin::{self, AdminRequest, HttpResponse, Route};
use crate::csms::{push, Decision, Reply, SessionId};
use crate::tls::{self, Received, TlsSession};

/// The one read buffer of the loop, shared by every connection.
const SCRATCH_SIZE: usize = 64 * 1024;
/// How long an admin client may take to send its request, and we to write the answer.
const ADMIN_IO_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an admin command may wait beyond the connection's call timeout before 504.
const ADMIN_CALL_GRACE: Duration = Duration::from_secs(5);
/// How long to wait before accepting again after running out of file descriptors.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);
/// At most this many read calls per readiness event, so one busy peer cannot starve the
/// others (the rest is read on the next turn of the loop).
const READS_PER_EVENT: usize = 16;

/// What a slab slot holds.
#[derive(Debug)]
enum Entry {
    Ocpp(Box<OcppSocket>),
    Admin(Box<AdminSocket>),
}

/// Where a charge point's socket is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The connection runs.
    Live,
    /// The connection ended; write out what it still has, until the deadline.
    Flushing { deadline: Instant },
    /// Our write side is shut; read until the peer's end of stream, until the deadline.
    Draining { deadline: Instant },
}

/// A charge point's socket and its Sans-IO connection.
#[derive(Debug)]
struct OcppSocket {
    socket: TcpStream,
    /// The TLS session with `wss://`; `None` (a null pointer) with plain `ws://`.
    tls: Option<Box<TlsSession>>,
    connection: Connection,
    phase: Phase,
    /// The interest registered with the poller.
    interest: Interest,
    /// Reading stopped because our output to this peer is backed up.
    read_paused: bool,
    /// A write failed: the socket is dead, drop what is left.
    broken: bool,
    /// The earliest deadline of ours in the timer heap.
    scheduled: Option<Instant>,
    identity: Option<ChargePointIdentity>,
    version: Option<OcppVersion>,
    session: Option<SessionId>,
    opened: Instant,
    /// Sequence number of the last push DataTransfer.
    push_seq: u64,
    /// What only some connections need, boxed so the others pay one null pointer.
    rare: Option<Box<Rare>>,
}

/// The rarely used part of an [`OcppSocket`].
#[derive(Debug, Default)]
struct Rare {
    /// Our CALLs sent for the admin interface: call id and the admin socket to answer.
    admin_waiters: Vec<(String, Key)>,
    /// An answer refused for back-pressure, sent again on `Event::Writable`.
    deferred_reply: Option<(String, Reply)>,
}

impl OcppSocket {
    fn rare(&mut self) -> &mut Rare {
        self.rare.get_or_insert_with(Box::default)
    }
}

/// Drops the rare part of a socket once it holds nothing.
fn tidy(rare: &mut Option<Box<Rare>>) {
    if rare
        .as_ref()
        .is_some_and(|r| r.admin_waiters.is_empty() && r.deferred_reply.is_none())
    {
        *rare = None;
    }
}

/// The peer's address, for logs (asked of the socket, not kept per connection).
fn peer(socket: &TcpStream) -> String {
    socket
        .peer_addr()
        .map_or_else(|_| "unknown".to_string(), |a| a.to_string())
}

/// Where an admin HTTP socket is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AdminPhase {
    Reading,
    /// A CALL was sent to a charge point; the answer comes as [`Command::AdminReply`].
    Waiting,
    Writing,
}

/// An admin HTTP socket (loop 0 only).
#[derive(Debug)]
struct AdminSocket {
    socket: TcpStream,
    phase: AdminPhase,
    input: Vec<u8>,
    output: Vec<u8>,
    written: usize,
    deadline: Instant,
    scheduled: Option<Instant>,
    interest: Interest,
}

/// One event loop. See the [module documentation](super).
#[derive(Debug)]
pub(super) struct EventLoop {
    index: usize,
    poll: Poll,
    listener: Option<TcpListener>,
    admin_listener: Option<TcpListener>,
    commands: Receiver<Command>,
    shared: Arc<Shared>,
    sockets: Slab<Entry>,
    timers: TimerHeap,
    scratch: Box<[u8]>,
    next_push: Option<Instant>,
    accept_retry: Option<Instant>,
    shutdown_deadline: Option<Instant>,
    /// Sockets to read again on the next turn without waiting for readiness: they stopped
    /// after [`READS_PER_EVENT`] with data possibly left, or their reading resumed after
    /// back-pressure (edge-triggered readiness will not report either again).
    read_again: Vec<Key>,
}

impl EventLoop {
    pub(super) fn new(
        index: usize,
        poll: Poll,
        mut listener: TcpListener,
        mut admin_listener: Option<TcpListener>,
        commands: Receiver<Command>,
        shared: Arc<Shared>,
    ) -> io::Result<Self> {
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)?;
        if let Some(admin) = &mut admin_listener {
            poll.registry()
                .register(admin, ADMIN_LISTENER, Interest::READABLE)?;
        }
        let next_push = shared
            .push_interval
            .map(|interval| Instant::now() + interval);
        Ok(EventLoop {
            index,
            poll,
            listener: Some(listener),
            admin_listener,
            commands,
            shared,
            sockets: Slab::default(),
            timers: TimerHeap::default(),
            scratch: vec![0; SCRATCH_SIZE].into_boxed_slice(),
            next_push,
            accept_retry: None,
            shutdown_deadline: None,
            read_again: Vec::new(),
        })
    }

    pub(super) fn index(&self) -> usize {
        self.index
    }

    /// Runs until shutdown: sleep in `poll` until a socket is ready, a command arrives or the
    /// earliest deadline passes; handle what happened; repeat.
    pub(super) fn run(mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(1024);
        loop {
            if self.shutdown_deadline.is_some() && self.sockets.is_empty() {
                tracing::debug!(loop_index = self.index, "event loop done");
                return Ok(());
            }
            // Sockets with unread data left from the last turn: do not sleep.
            let timeout = if self.read_again.is_empty() {
                self.next_wakeup()
                    .map(|at| at.saturating_duration_since(Instant::now()))
            } else {
                Some(Duration::ZERO)
            };
            match self.poll.poll(&mut events, timeout) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            let now = Instant::now();
            for key in std::mem::take(&mut self.read_again) {
                self.socket_ready(key, true, false, true, now);
            }
            for event in events.iter() {
                match event.token() {
                    LISTENER => self.accept(now),
                    ADMIN_LISTENER => self.accept_admin(now),
                    WAKER => self.run_commands(now),
                    token => {
                        let readable = event.is_readable() || event.is_read_closed();
                        let writable = event.is_writable() || event.is_write_closed();
                        // After the peer's FIN or an error, read on to the end of stream.
                        let exhaust = event.is_read_closed() || event.is_error();
                        self.socket_ready(Key::from_token(token), readable, writable, exhaust, now);
                    }
                }
            }
            let now = Instant::now();
            self.expire_timers(now);
            self.push_tick(now);
            if self.accept_retry.is_some_and(|at| at <= now) {
                self.accept_retry = None;
                self.accept(now);
            }
            if self.shutdown_deadline.is_some_and(|at| at <= now) {
                self.force_close_all(now);
            }
        }
    }

    /// The earliest of: a connection deadline, the push timer, an accept retry, the shutdown
    /// deadline.
    fn next_wakeup(&self) -> Option<Instant> {
        [
            self.timers.next_deadline(),
            self.next_push,
            self.accept_retry,
            self.shutdown_deadline,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    // ---- accepting ----

    fn accept(&mut self, now: Instant) {
        loop {
            let Some(listener) = &self.listener else {
                return;
            };
            let (socket, peer) = match listener.accept() {
                Ok(accepted) => accepted,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if is_resource_exhaustion(&e) => {
                    // Out of file descriptors: the backlog keeps the connection; try later.
                    tracing::warn!(loop_index = self.index, "accept: {e}; retrying shortly");
                    self.accept_retry = Some(now + ACCEPT_RETRY);
                    return;
                }
                Err(e) => {
                    tracing::debug!("accept: {e}");
                    continue;
                }
            };
            let _ = socket.set_nodelay(true);
            let tls = match &self.shared.tls {
                None => None,
                Some(config) => match TlsSession::server(Arc::clone(config)) {
                    Ok(session) => Some(Box::new(session)),
                    Err(e) => {
                        tracing::warn!(%peer, "TLS session: {e}");
                        continue;
                    }
                },
            };
            let connection =
                Connection::accept_incoming(now, Arc::clone(&self.shared.connection_config));
            let key = self.sockets.insert(Entry::Ocpp(Box::new(OcppSocket {
                socket,
                tls,
                connection,
                phase: Phase::Live,
                interest: Interest::READABLE,
                read_paused: false,
                broken: false,
                scheduled: None,
                identity: None,
                version: None,
                session: None,
                opened: now,
                push_seq: 0,
                rare: None,
            })));
            let metrics = self.shared.csms.metrics();
            metrics.sockets_accepted.inc();
            metrics.sockets_open.inc();
            let Some(Entry::Ocpp(s)) = self.sockets.get_mut(key) else {
                continue;
            };
            if let Err(e) =
                self.poll
                    .registry()
                    .register(&mut s.socket, key.token(), Interest::READABLE)
            {
                tracing::warn!("register: {e}");
                self.remove(key);
                continue;
            }
            self.timers
                .schedule(key, s.connection.poll_timeout(), &mut s.scheduled);
        }
    }

    fn accept_admin(&mut self, now: Instant) {
        loop {
            let Some(listener) = &self.admin_listener else {
                return;
            };
            let socket = match listener.accept() {
                Ok((socket, _)) => socket,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) => {
                    tracing::debug!("admin accept: {e}");
                    if is_resource_exhaustion(&e) {
                        return;
                    }
                    continue;
                }
            };
            let key = self.sockets.insert(Entry::Admin(Box::new(AdminSocket {
                socket,
                phase: AdminPhase::Reading,
                input: Vec::new(),
                output: Vec::new(),
                written: 0,
                deadline: now + ADMIN_IO_TIMEOUT,
                scheduled: None,
                interest: Interest::READABLE,
            })));
            let Some(Entry::Admin(a)) = self.sockets.get_mut(key) else {
                continue;
            };
            if self
                .poll
                .registry()
                .register(&mut a.socket, key.token(), Interest::READABLE)
                .is_err()
            {
                self.remove(key);
                continue;
            }
            self.timers
                .schedule(key, Some(a.deadline), &mut a.scheduled);
        }
    }

    // ---- readiness ----

    fn socket_ready(
        &mut self,
        key: Key,
        readable: bool,
        writable: bool,
        exhaust: bool,
        now: Instant,
    ) {
        match self.sockets.get_mut(key) {
            Some(Entry::Ocpp(_)) => {
                if readable {
                    self.read(key, exhaust, now);
                }
                // Writing happens in `service` whether or not this event said writable.
                let _ = writable;
                self.service(key, now);
            }
            Some(Entry::Admin(_)) => self.admin_ready(key, readable, now),
            None => {} // a stale event for a socket already closed
        }
    }

    /// Reads into the loop's buffer and feeds the connection, handling its events after each
    /// read so that answers are produced (and back-pressure noticed) as data comes in.
    ///
    /// A read that returns less than the buffer has emptied the socket's receive queue, so
    /// unless `exhaust` (the peer's FIN or an error was reported, or this is a `read_again`)
    /// the loop stops there instead of paying a second `recvfrom` for its `EAGAIN`: any byte
    /// that arrives later raises a new edge. That is one system call in three per message.
    fn read(&mut self, key: Key, exhaust: bool, now: Instant) {
        let max_outbound = self.shared.connection_config.get_max_outbound_bytes();
        for _ in 0..READS_PER_EVENT {
            let Some(Entry::Ocpp(s)) = self.sockets.get_mut(key) else {
                return;
            };
            match s.phase {
                Phase::Live => {}
                // A closed connection ignores input; we read it only when draining.
                Phase::Flushing { .. } => return,
                Phase::Draining { .. } => {
                    self.drain(key);
                    return;
                }
            }
            if s.connection.pending_transmit_len() > max_outbound / 2 {
                // Back-pressure: the peer does not read what we send; stop reading it.
                s.read_paused = true;
                return;
            }
            let s = &mut **s;
            if let Some(session) = &mut s.tls {
                let connection = &mut s.connection;
                let received = session.receive(&mut s.socket, &mut self.scratch, |plaintext| {
                    connection.handle_data(now, plaintext)
                });
                match received {
                    Received::Progress => {
                        self.handle_events(key, now);
                        continue;
                    }
                    Received::WouldBlock => {
                        self.handle_events(key, now);
                        return;
                    }
                    Received::Closed => {}
                    Received::Failed(e) => {
                        // Send the alert rustls chose; `service` then shuts our side and
                        // drains the socket, so the peer reads the alert rather than a reset.
                        tracing::info!(peer = %peer(&s.socket), "TLS failed: {e}");
                        self.shared.csms.metrics().tls_failures.inc();
                        session.abandon();
                        if let Err(e) = session.write_to(&mut s.socket) {
                            tracing::debug!(peer = %peer(&s.socket), "TLS alert not sent: {e}");
                        }
                    }
                    Received::Io(e) => tracing::debug!(peer = %peer(&s.socket), "read: {e}"),
                }
                s.connection.handle_eof(now);
                self.handle_events(key, now);
                return;
            }
            match s.socket.read(&mut self.scratch) {
                Ok(0) => {
                    s.connection.handle_eof(now);
                    self.handle_events(key, now);
                    return;
                }
                Ok(n) => {
                    s.connection.handle_data(now, &self.scratch[..n]);
                    self.handle_events(key, now);
                    if n < self.scratch.len() && !exhaust {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    tracing::debug!(peer = %peer(&s.socket), "read: {e}");
                    s.connection.handle_eof(now);
                    self.handle_events(key, now);
                    return;
                }
            }
        }
        // Data may be left: edge-triggered readiness will not say so again.
        self.read_again.push(key);
    }

    /// Draining: discards input until the peer's end of stream, then closes the socket.
    fn drain(&mut self, key: Key) {
        let Some(Entry::Ocpp(s)) = self.sockets.get_mut(key) else {
            return;
        };
        for _ in 0..READS_PER_EVENT {
            match s.socket.read(&mut self.scratch) {
                Ok(0) => break,
                Ok(_) => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        self.remove(key);
    }

    /// After anything happened to a connection: handle its events, write its output, move it
    /// along its phases, and re-register its interest and deadline.
    fn service(&mut self, key: Key, now: Instant) {
        let max_outbound = self.shared.connection_config.get_max_outbound_bytes();
        // Writing may produce events (Writable, a queued CALL sent); a few rounds settle it.
        for _ in 0..8 {
            let handled = self.handle_events(key, now);
            let Some(Entry::Ocpp(s)) = self.sockets.get_mut(key) else {
                return;
            };
            if s.broken {
                break;
            }
            let before = s.connection.pending_transmit_len();
            if let Err(e) = write_out(s) {
                tracing::debug!(peer = %peer(&s.socket), "write: {e}");
                s.broken = true;
                s.connection.handle_eof(now);
                continue;
            }
            if handled == 0 && s.connection.pending_transmit_len() == before {
                break;
            }
        }
        let Some(Entry::Ocpp(s)) = self.sockets.get_mut(key) else {
            return;
        };
        if s.broken {
            self.remove(key);
            return;
        }
        let pending = s.connection.pending_transmit_len();
        if let Phase::Flushing { .. } = s.phase {
            if pending == 0 {
                if let Some(session) = &mut s.tls {
                    // TLS ends with close_notify (RFC 8446 §6.1) before the TCP half-close.
                    session.close();
                    if session.write_to(&mut s.socket).is_err() {
                        self.remove(key);
                        return;
                    }
                }
            }
            if pending == 0 && !s.tls.as_ref().is_some_and(|t| t.wants_write()) {
                // Everything is out: half-close and wait for the peer's end of stream.
                let _ = s.socket.shutdown(Shutdown::Write);
                s.phase = Phase::Draining {
                    deadline: now + DRAIN_TIMEOUT,
                };
                self.drain(key);
                let Some(Entry::Ocpp(_)) = self.sockets.get_mut(key) else {
                    return;
                };
            }
        }
        let Some(Entry::Ocpp(s)) = self.sockets.get_mut(key) else {
            return;
        };
        let resume = s.read_paused && pending <= max_outbound / 4;
        if resume {
            s.read_paused = false;
            self.read_again.push(key);
        }
        let interest = if pending > 0 || s.tls.as_ref().is_some_and(|t| t.wants_write()) {
            Interest::READABLE | Interest::WRITABLE
        } else {
            Interest::READABLE
        };
        if interest != s.interest {
            if let Err(e) = self
                .poll
                .registry()
                .reregister(&mut s.socket, key.token(), interest)
            {
                tracing::debug!("reregister: {e}");
            }
            s.interest = interest;
        }
        let deadline = match s.phase {
            Phase::Live => s.connection.poll_timeout(),
            Phase::Flushing { deadline } | Phase::Draining { deadline } => Some(deadline),
        };
        self.timers.schedule(key, deadline, &mut s.scheduled);
    }

    /// Drains the connection's events into the application. Returns how many it handled.
    fn handle_events(&mut self, key: Key, now: Instant) -> usize {
        let shared = Arc::clone(&self.shared);
        let csms = &shared.csms;
        let mut handled = 0;
        loop {
            let Some(Entry::Ocpp(s)) = self.sockets.get_mut(key) else {
                return handled;
            };
            let Some(event) = s.connection.poll_event() else {
                return handled;
            };
            handled += 1;
            match event {
                Event::UpgradeRequested(upgrade) => {
                    s.identity = Some(upgrade.identity.clone());
                    let transport = tls::transport(s.tls.as_deref());
                    let result = match csms.on_upgrade(&upgrade, &transport) {
                        Decision::Accept => s.connection.accept(now),
                        Decision::Reject { status, reason } => {
                            tracing::info!(
                                identity = %upgrade.identity, peer = %peer(&s.socket), status, reason,
                                "upgrade rejected"
                            );
                            s.connection.reject(now, status)
                        }
                    };
                    if result.is_err() {
                        tracing::warn!("accept/reject in the wrong state");
                    }
                }
                Event::Connected { version } => {
                    let Some(identity) = s.identity.clone() else {
                        continue;
                    };
                    s.version = Some(version);
                    s.session = Some(csms.on_connected(&identity, version));
                    tracing::info!(
                        %identity, version = version.as_str(), peer = %peer(&s.socket),
                        loop_index = self.index, "connected"
                    );
                    let handle = Handle {
                        loop_index: self.index,
                        key,
                    };
                    let replaced = shared.identities().register(identity, handle);
                    if let Some(old) = replaced {
                        shared.send(old.loop_index, Command::Replace { target: old.key });
                    }
                }
                Event::Call { id, request } => {
                    let (Some(identity), Some(session)) = (&s.identity, s.session) else {
                        continue;
                    };
                    let reply = csms.on_call(session, identity, &request);
                    send_reply(s, id, reply, now);
                }
                Event::Send { request, .. } => {
                    if let Some(identity) = &s.identity {
                        csms.on_send(identity, &request);
                    }
                }
                Event::CallCompleted {
                    id,
                    action,
                    outcome,
                } => {
                    let Some(identity) = &s.identity else {
                        continue;
                    };
                    csms.on_call_completed(identity, action, &outcome);
                    let waiter = s.rare.as_mut().and_then(|rare| {
                        let at = rare.admin_waiters.iter().position(|(i, _)| *i == id)?;
                        Some(rare.admin_waiters.swap_remove(at).1)
                    });
                    tidy(&mut s.rare);
                    if let Some(admin) = waiter {
                        let version = s.version.unwrap_or(OcppVersion::V1_6);
                        let response = admin::call_response(version, &id, action, &outcome);
                        tracing::info!(%identity, action, id, status = response.status, "admin CALL completed");
                        shared.send(
                            0,
                            Command::AdminReply {
                                to: admin,
                                response,
                            },
                        );
                    }
                }
                Event::UnmatchedResponse { id } => {
                    tracing::debug!(identity = ?s.identity, id, "answer to no CALL of ours");
                }
                Event::CallResultError {
                    id,
                    code,
                    description,
                } => {
                    tracing::warn!(identity = ?s.identity, id, ?code, description, "CALLRESULTERROR");
                }
                Event::Writable => {
                    let deferred = s.rare.as_mut().and_then(|r| r.deferred_reply.take());
                    tidy(&mut s.rare);
                    if let Some((id, reply)) = deferred {
                        send_reply(s, id, reply, now);
                    }
                }
                Event::Closed(closed) => self.on_closed(key, &closed, now),
                _ => {}
            }
        }
    }

    /// The connection ended: tell the application, free the identity, fail the admin
    /// commands waiting on it, and start flushing.
    fn on_closed(&mut self, key: Key, closed: &Closed, now: Instant) {
        let Some(Entry::Ocpp(s)) = self.sockets.get_mut(key) else {
            return;
        };
        let shared = &self.shared;
        shared
            .csms
            .on_closed(s.session, s.identity.as_ref(), closed);
        if let (Some(identity), Some(_)) = (&s.identity, s.session) {
            let handle = Handle {
                loop_index: self.index,
                key,
            };
            shared.identities().remove(identity, &handle);
            tracing::info!(
                %identity, reason = ?closed.reason, seconds = now.duration_since(s.opened).as_secs(),
                "disconnected"
            );
        } else {
            tracing::debug!(peer = %peer(&s.socket), reason = ?closed.reason, "handshake ended");
        }
        let waiters = s.rare.take().map(|r| r.admin_waiters).unwrap_or_default();
        for (_, admin) in waiters {
            shared.send(
                0,
                Command::AdminReply {
                    to: admin,
                    response: HttpResponse::disconnected(),
                },
            );
        }
        s.phase = Phase::Flushing {
            deadline: now + FLUSH_TIMEOUT,
        };
    }

    // ---- timers ----

    fn expire_timers(&mut self, now: Instant) {
        while let Some((deadline, key)) = self.timers.pop_expired(now) {
            match self.sockets.get_mut(key) {
                Some(Entry::Ocpp(s)) => {
                    if s.scheduled != Some(deadline) {
                        continue; // stale: a newer, earlier entry superseded it
                    }
                    s.scheduled = None;
                    match s.phase {
                        Phase::Live => {
                            s.connection.handle_timeout(now);
                            self.service(key, now);
                        }
                        Phase::Flushing { deadline } | Phase::Draining { deadline }
                            if deadline <= now =>
                        {
                            self.remove(key)
                        }
                        _ => self.service(key, now),
                    }
                }
                Some(Entry::Admin(a)) => {
                    if a.scheduled != Some(deadline) {
                        continue;
                    }
                    a.scheduled = None;
                    if a.deadline > now {
                        self.timers
                            .schedule(key, Some(a.deadline), &mut a.scheduled);
                    } else if a.phase == AdminPhase::Waiting {
                        self.admin_respond(key, HttpResponse::timeout(), now);
                    } else {
                        self.remove(key);
                    }
                }
                None => {}
            }
        }
    }

    /// `--push-interval-ms`: a DataTransfer to every open connection whose previous CALL was
    /// answered; built right before `call`, so it is serialised (and stamped) at once.
    fn push_tick(&mut self, now: Instant) {
        let (Some(at), Some(interval)) = (self.next_push, self.shared.push_interval) else {
            return;
        };
        if at > now {
            return;
        }
        let next = at + interval;
        self.next_push = Some(if next <= now { now + interval } else { next });
        let shared = Arc::clone(&self.shared);
        for key in self.sockets.keys() {
            let Some(Entry::Ocpp(s)) = self.sockets.get_mut(key) else {
                continue;
            };
            let (Some(version), Some(identity)) = (s.version, &s.identity) else {
                continue;
            };
            if s.phase != Phase::Live || !s.connection.is_open() {
                continue;
            }
            let sent = push::send_next(
                &shared.csms,
                &mut s.connection,
                now,
                version,
                identity,
                &mut s.push_seq,
            );
            if sent {
                self.service(key, now);
            }
        }
    }

    // ---- commands ----

    fn run_commands(&mut self, now: Instant) {
        while let Ok(command) = self.commands.try_recv() {
            match command {
                Command::Shutdown => self.begin_shutdown(now),
                Command::AdminCall {
                    target,
                    request,
                    reply_to,
                } => self.admin_call(target, request, reply_to, now),
                Command::AdminReply { to, response } => {
                    if let Some(Entry::Admin(a)) = self.sockets.get_mut(to) {
                        if a.phase == AdminPhase::Waiting {
                            self.admin_respond(to, response, now);
                        }
                    }
                }
                Command::Replace { target } => {
                    if let Some(Entry::Ocpp(s)) = self.sockets.get_mut(target) {
                        tracing::info!(identity = ?s.identity, "replaced by a newer connection");
                        s.connection.close(
                            now,
                            CloseCode::POLICY_VIOLATION,
                            "replaced by a newer connection",
                        );
                        self.service(target, now);
                    }
                }
            }
        }
    }

    fn admin_call(
        &mut self,
        target: Key,
        request: ocpp_server_core::Request,
        reply_to: Key,
        now: Instant,
    ) {
        let shared = Arc::clone(&self.shared);
        let response = match self.sockets.get_mut(target) {
            Some(Entry::Ocpp(s)) if s.phase == Phase::Live && s.connection.is_open() => {
                let action = request.action();
                match s.connection.call(now, request) {
                    Ok(id) => {
                        if let Some(identity) = &s.identity {
                            shared.csms.on_call_sent(identity, action);
                            tracing::info!(%identity, action, id, "admin CALL sent");
                        }
                        s.rare().admin_waiters.push((id, reply_to));
                        self.service(target, now);
                        return;
                    }
                    Err(Refused { reason, .. }) => HttpResponse::refused(reason),
                }
            }
            _ => HttpResponse::error(404, "the charge point is no longer connected"),
        };
        shared.send(
            0,
            Command::AdminReply {
                to: reply_to,
                response,
            },
        );
    }

    // ---- admin HTTP ----

    fn admin_ready(&mut self, key: Key, readable: bool, now: Instant) {
        let Some(Entry::Admin(a)) = self.sockets.get_mut(key) else {
            return;
        };
        if a.phase == AdminPhase::Writing {
            self.admin_write(key, now);
            return;
        }
        if !readable || a.phase != AdminPhase::Reading {
            return;
        }
        loop {
            match a.socket.read(&mut self.scratch) {
                Ok(0) => {
                    self.remove(key);
                    return;
                }
                Ok(n) => {
                    a.input.extend_from_slice(&self.scratch[..n]);
                    if a.input.len() > admin::MAX_HEAD + admin::MAX_BODY {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.remove(key);
                    return;
                }
            }
        }
        let parsed = AdminRequest::parse(&a.input);
        let request = match parsed {
            Ok(None) => return,
            Ok(Some((request, _))) => request,
            Err(response) => {
                self.admin_respond(key, response, now);
                return;
            }
        };
        let csms = Arc::clone(&self.shared.csms);
        match admin::route(&csms, &request) {
            Route::Respond(response) => self.admin_respond(key, response, now),
            Route::Call { identity, request } => {
                let handle = self.shared.identities().get(&identity).copied();
                let Some(handle) = handle else {
                    self.admin_respond(key, HttpResponse::not_connected(&identity), now);
                    return;
                };
                a.phase = AdminPhase::Waiting;
                a.deadline =
                    now + self.shared.connection_config.get_call_timeout() + ADMIN_CALL_GRACE;
                self.timers
                    .schedule(key, Some(a.deadline), &mut a.scheduled);
                self.shared.send(
                    handle.loop_index,
                    Command::AdminCall {
                        target: handle.key,
                        request,
                        reply_to: key,
                    },
                );
            }
        }
    }

    fn admin_respond(&mut self, key: Key, response: HttpResponse, now: Instant) {
        let Some(Entry::Admin(a)) = self.sockets.get_mut(key) else {
            return;
        };
        a.output = response.to_bytes();
        a.written = 0;
        a.phase = AdminPhase::Writing;
        a.deadline = now + ADMIN_IO_TIMEOUT;
        self.timers
            .schedule(key, Some(a.deadline), &mut a.scheduled);
        self.admin_write(key, now);
    }

    fn admin_write(&mut self, key: Key, _now: Instant) {
        let Some(Entry::Admin(a)) = self.sockets.get_mut(key) else {
            return;
        };
        while a.written < a.output.len() {
            match a.socket.write(&a.output[a.written..]) {
                Ok(0) => break,
                Ok(n) => a.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if a.interest != Interest::WRITABLE {
                        a.interest = Interest::WRITABLE;
                        let _ = self.poll.registry().reregister(
                            &mut a.socket,
                            key.token(),
                            Interest::WRITABLE,
                        );
                    }
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        // The whole request was read, so closing sends no reset.
        let _ = a.socket.shutdown(Shutdown::Write);
        self.remove(key);
    }

    // ---- shutdown ----

    fn begin_shutdown(&mut self, now: Instant) {
        if self.shutdown_deadline.is_some() {
            return;
        }
        tracing::info!(
            loop_index = self.index,
            connections = self.sockets.len(),
            "shutting down"
        );
        self.shutdown_deadline = Some(now + SHUTDOWN_TIMEOUT);
        self.next_push = None;
        for listener in [self.listener.take(), self.admin_listener.take()]
            .into_iter()
            .flatten()
        {
            let mut listener = listener;
            let _ = self.poll.registry().deregister(&mut listener);
        }
        for key in self.sockets.keys() {
            match self.sockets.get_mut(key) {
                Some(Entry::Ocpp(s)) => {
                    if s.phase == Phase::Live {
                        s.connection
                            .close(now, CloseCode::GOING_AWAY, "server shutting down");
                    }
                    self.service(key, now);
                }
                Some(Entry::Admin(a)) => {
                    if a.phase == AdminPhase::Writing {
                        continue;
                    }
                    if a.phase == AdminPhase::Waiting {
                        self.admin_respond(key, HttpResponse::shutting_down(), now);
                    } else {
                        self.remove(key);
                    }
                }
                None => {}
            }
        }
    }

    /// The shutdown deadline passed: end what is left (their pending CALLs are logged).
    fn force_close_all(&mut self, now: Instant) {
        for key in self.sockets.keys() {
            if let Some(Entry::Ocpp(s)) = self.sockets.get_mut(key) {
                if s.phase == Phase::Live {
                    s.connection.handle_eof(now);
                    self.handle_events(key, now);
                }
            }
            self.remove(key);
        }
    }

    fn remove(&mut self, key: Key) {
        let Some(entry) = self.sockets.remove(key) else {
            return;
        };
        match entry {
            Entry::Ocpp(mut s) => {
                let _ = self.poll.registry().deregister(&mut s.socket);
                self.shared.csms.metrics().sockets_open.dec();
            }
            Entry::Admin(mut a) => {
                let _ = self.poll.registry().deregister(&mut a.socket);
            }
        }
    }
}

/// Writes the connection's output (through TLS, if on) until done or the socket would block.
fn write_out(s: &mut OcppSocket) -> io::Result<()> {
    if let Some(session) = &mut s.tls {
        loop {
            let taken = session.send(&mut s.socket, s.connection.pending_transmit())?;
            s.connection.advance_transmit(taken);
            if taken == 0 || s.connection.pending_transmit().is_empty() {
                return Ok(());
            }
        }
    }
    loop {
        let pending = s.connection.pending_transmit();
        if pending.is_empty() {
            return Ok(());
        }
        match s.socket.write(pending) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => s.connection.advance_transmit(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Answers a CALL; an answer refused for back-pressure waits for `Event::Writable`.
fn send_reply(s: &mut OcppSocket, id: String, reply: Reply, now: Instant) {
    let refused = match reply {
        Reply::Result(response) => match s.connection.respond(now, &id, response) {
            Ok(()) => return,
            Err(Refused { reason, message }) => (reason, Reply::Result(message)),
        },
        Reply::Error { code, description } => {
            match s.connection.respond_error(now, &id, code, &description) {
                Ok(()) => return,
                Err(Refused { reason, message }) => (
                    reason,
                    Reply::Error {
                        code: message,
                        description,
                    },
                ),
            }
        }
    };
    match refused {
        (RefusalReason::Backpressure, reply) => s.rare().deferred_reply = Some((id, reply)),
        (reason, _) => tracing::debug!(identity = ?s.identity, id, %reason, "answer not sent"),
    }
}

/// Errors after which accepting again at once would spin: out of descriptors or memory.
fn is_resource_exhaustion(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(23 /* ENFILE */ | 24 /* EMFILE */ | 12 /* ENOMEM */ | 105 /* ENOBUFS */)
    )
}
