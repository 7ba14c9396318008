//! One charge point's task: its socket, its Sans-IO connection, its mailbox.

use std::cell::RefCell;
use std::io;
use std::net::{Shutdown, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ocpp_frame::CloseCode;
use ocpp_messages::version::OcppVersion;
use ocpp_server_core::{ChargePointIdentity, Closed, Connection, Event, MessageId, Refused};
use socket2::SockRef;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, watch};

use super::{Command, Handle, Shared, DRAIN_TIMEOUT, FLUSH_TIMEOUT, MAILBOX, SHUTDOWN_TIMEOUT};
use crate::csms::admin::{self, HttpResponse};
use crate::csms::{push, Decision, SessionId};
use crate::tls::{self, Received, TlsSession, TryIo};

/// The read buffer of each worker thread, shared by every connection that thread polls.
const SCRATCH_SIZE: usize = 64 * 1024;
/// At most this many reads per wake-up, so one busy peer cannot hold a worker (the rest is read
/// on the next turn: tokio keeps the readiness until a read would block).
const READS_PER_WAKE: usize = 16;

thread_local! {
    static SCRATCH: RefCell<Box<[u8]>> = RefCell::new(vec![0; SCRATCH_SIZE].into_boxed_slice());
}

/// Where a charge point's socket is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SocketStage {
    /// The connection runs.
    Live,
    /// The connection ended; write out what it still has, until the deadline.
    Flushing { deadline: Instant },
    /// Our write side is shut; read until the peer's end of stream, until the deadline.
    Draining { deadline: Instant },
}

/// What woke the task.
#[derive(Debug)]
enum Wake {
    Readable(io::Result<()>),
    Writable(io::Result<()>),
    Deadline,
    Command(Option<Command>),
    Shutdown,
}

/// A charge point's socket and connection, and what the application knows of it.
#[derive(Debug)]
struct Task {
    id: u64,
    socket: TcpStream,
    peer: SocketAddr,
    /// The TLS session with `wss://`; `None` (a null pointer) with plain `ws://`.
    tls: Option<Box<TlsSession>>,
    connection: Connection,
    shared: Arc<Shared>,
    /// A sender to our own mailbox, cloned into the identity table.
    mailbox: mpsc::Sender<Command>,
    stage: SocketStage,
    /// The task is over: drop the socket.
    done: bool,
    /// Set when the server shuts down: the task ends by then whatever happens.
    shutdown_deadline: Option<Instant>,
    identity: Option<ChargePointIdentity>,
    version: Option<OcppVersion>,
    session: Option<SessionId>,
    opened: Instant,
    /// Sequence number of the last push DataTransfer.
    push_seq: u64,
    /// Our CALLs sent for the admin interface: call id and where to send the HTTP answer.
    admin_waiters: Vec<(MessageId<'static>, oneshot::Sender<HttpResponse>)>,
}

/// Serves one accepted socket until its connection is over.
pub(super) async fn run(
    id: u64,
    socket: TcpStream,
    peer: SocketAddr,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
) {
    let tls = match &shared.tls {
        None => None,
        Some(config) => match TlsSession::server(Arc::clone(config)) {
            Ok(session) => Some(Box::new(session)),
            Err(e) => {
                tracing::warn!(%peer, "TLS session: {e}");
                return;
            }
        },
    };
    let (mailbox, mut commands) = mpsc::channel(MAILBOX);
    let now = Instant::now();
    let connection = Connection::accept_incoming(now, Arc::clone(&shared.connection_config));
    let metrics = shared.csms.metrics();
    metrics.sockets_accepted.inc();
    metrics.sockets_open.inc();
    let mut task = Task {
        id,
        socket,
        peer,
        tls,
        connection,
        shared: Arc::clone(&shared),
        mailbox,
        stage: SocketStage::Live,
        done: false,
        shutdown_deadline: None,
        identity: None,
        version: None,
        session: None,
        opened: now,
        push_seq: 0,
        admin_waiters: Vec::new(),
    };
    if *stop.borrow_and_update() {
        task.begin_shutdown(now);
    }
    let sleep = tokio::time::sleep_until(now.into());
    tokio::pin!(sleep);
    loop {
        task.service(Instant::now());
        if task.done {
            break;
        }
        let want_read = match task.stage {
            SocketStage::Live => task.connection.wants_read(),
            SocketStage::Flushing { .. } => false,
            SocketStage::Draining { .. } => true,
        };
        let want_write = task.connection.pending_transmit_len() > 0
            || task.tls.as_ref().is_some_and(|t| t.wants_write());
        let deadline = task.deadline();
        if let Some(deadline) = deadline {
            if sleep.deadline() != deadline.into() {
                sleep.as_mut().reset(deadline.into());
            }
        }
        let live = task.stage == SocketStage::Live;
        let watching = task.shutdown_deadline.is_none();
        let wake = tokio::select! {
            ready = task.socket.readable(), if want_read => Wake::Readable(ready),
            ready = task.socket.writable(), if want_write => Wake::Writable(ready),
            () = &mut sleep, if deadline.is_some() => Wake::Deadline,
            command = commands.recv(), if live => Wake::Command(command),
            _ = stop.changed(), if watching => Wake::Shutdown,
        };
        let now = Instant::now();
        match wake {
            Wake::Readable(Ok(())) => task.read(now),
            Wake::Writable(Ok(())) => {} // `service` writes
            Wake::Readable(Err(e)) | Wake::Writable(Err(e)) => {
                tracing::debug!(peer = %task.peer, "socket: {e}");
                // The socket is dead: let the application hear of the end, then stop.
                task.connection.handle_eof(now);
                task.handle_events(now);
                break;
            }
            Wake::Deadline => task.on_deadline(now),
            Wake::Command(Some(command)) => task.on_command(command, now),
            Wake::Command(None) => {} // we hold a sender: never
            Wake::Shutdown => task.begin_shutdown(now),
        }
    }
    shared.csms.metrics().sockets_open.dec();
}

impl Task {
    /// The next time the task must wake up without I/O.
    fn deadline(&self) -> Option<Instant> {
        let own = match self.stage {
            SocketStage::Live => self.connection.poll_timeout(),
            SocketStage::Flushing { deadline } | SocketStage::Draining { deadline } => {
                Some(deadline)
            }
        };
        [own, self.shutdown_deadline].into_iter().flatten().min()
    }

    fn handle(&self) -> Handle {
        Handle {
            id: self.id,
            commands: self.mailbox.clone(),
        }
    }

    /// Reads into the worker's buffer and feeds the connection while it
    /// [wants input](Connection::wants_read); `service` then drains it once.
    fn read(&mut self, now: Instant) {
        for _ in 0..READS_PER_WAKE {
            match self.stage {
                SocketStage::Live => {}
                // A closed connection ignores input; we read it only when draining.
                SocketStage::Flushing { .. } => return,
                SocketStage::Draining { .. } => {
                    self.drain();
                    return;
                }
            }
            if !self.connection.wants_read() {
                // Back-pressure: the peer does not read what we send; stop reading it.
                return;
            }
            if let Some(session) = &mut self.tls {
                let (socket, connection) = (&self.socket, &mut self.connection);
                let received = SCRATCH.with(|scratch| {
                    session.receive(&mut TryIo(socket), &mut scratch.borrow_mut(), |plaintext| {
                        connection.handle_data(now, plaintext)
                    })
                });
                match received {
                    Received::Progress => continue,
                    Received::WouldBlock => return,
                    Received::Closed => {}
                    Received::Failed(e) => {
                        // Send the alert rustls chose; `service` then shuts our side and
                        // drains the socket, so the peer reads the alert rather than a reset.
                        tracing::info!(peer = %self.peer, "TLS failed: {e}");
                        self.shared.csms.metrics().tls_failures.inc();
                        session.abandon();
                        if let Err(e) = session.write_to(&mut TryIo(socket)) {
                            tracing::debug!(peer = %self.peer, "TLS alert not sent: {e}");
                        }
                    }
                    Received::Io(e) => tracing::debug!(peer = %self.peer, "read: {e}"),
                }
                self.connection.handle_eof(now);
                return;
            }
            let (socket, connection) = (&self.socket, &mut self.connection);
            let result = SCRATCH.with(|scratch| {
                let mut scratch = scratch.borrow_mut();
                let n = socket.try_read(&mut scratch)?;
                if n > 0 {
                    connection.handle_data(now, &scratch[..n]);
                }
                Ok::<usize, io::Error>(n)
            });
            match result {
                Ok(0) => {
                    self.connection.handle_eof(now);
                    return;
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    tracing::debug!(peer = %self.peer, "read: {e}");
                    self.connection.handle_eof(now);
                    return;
                }
            }
        }
    }

    /// Draining: discards input until the peer's end of stream, then ends the task.
    fn drain(&mut self) {
        let socket = &self.socket;
        for _ in 0..READS_PER_WAKE {
            let result = SCRATCH.with(|scratch| socket.try_read(&mut scratch.borrow_mut()));
            match result {
                Ok(0) => break,
                Ok(_) => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        self.done = true;
    }

    /// After anything happened: one pass of the drain contract (the connection's events, then
    /// its output), then move it along its stages.
    fn service(&mut self, now: Instant) {
        self.handle_events(now);
        if let Err(e) = self.write_out() {
            tracing::debug!(peer = %self.peer, "write: {e}");
            // The socket is dead: let the application hear of the end before it goes.
            self.connection.handle_eof(now);
            self.handle_events(now);
            self.done = true;
            return;
        }
        let pending = self.connection.pending_transmit_len();
        if let (SocketStage::Flushing { .. }, 0, Some(session)) =
            (self.stage, pending, &mut self.tls)
        {
            // TLS ends with close_notify (RFC 8446 §6.1) before the TCP half-close.
            session.close();
            if session.write_to(&mut TryIo(&self.socket)).is_err() {
                self.done = true;
                return;
            }
        }
        if let SocketStage::Flushing { .. } = self.stage {
            if pending == 0 && !self.tls.as_ref().is_some_and(|t| t.wants_write()) {
                // Everything is out: half-close and wait for the peer's end of stream.
                let _ = SockRef::from(&self.socket).shutdown(Shutdown::Write);
                self.stage = SocketStage::Draining {
                    deadline: now + DRAIN_TIMEOUT,
                };
                self.drain();
            }
        }
    }

    /// Writes the connection's output (through TLS, if on) until done or the socket would
    /// block.
    fn write_out(&mut self) -> io::Result<()> {
        if let Some(session) = &mut self.tls {
            loop {
                let taken =
                    session.send(&mut TryIo(&self.socket), self.connection.pending_transmit())?;
                self.connection.advance_transmit(taken);
                if taken == 0 || self.connection.pending_transmit().is_empty() {
                    return Ok(());
                }
            }
        }
        loop {
            let pending = self.connection.pending_transmit();
            if pending.is_empty() {
                return Ok(());
            }
            match self.socket.try_write(pending) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.connection.advance_transmit(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// A deadline passed: the connection's timers, the flush or drain limit, or shutdown's.
    fn on_deadline(&mut self, now: Instant) {
        if self.shutdown_deadline.is_some_and(|at| at <= now) {
            if self.stage == SocketStage::Live {
                // Its CALLs left unanswered are logged by `on_closed`.
                self.connection.handle_eof(now);
                self.handle_events(now);
            }
            self.done = true;
            return;
        }
        match self.stage {
            SocketStage::Live => self.connection.handle_timeout(now),
            SocketStage::Flushing { deadline } | SocketStage::Draining { deadline }
                if deadline <= now =>
            {
                self.done = true;
            }
            _ => {}
        }
    }

    fn begin_shutdown(&mut self, now: Instant) {
        if self.shutdown_deadline.is_some() {
            return;
        }
        self.shutdown_deadline = Some(now + SHUTDOWN_TIMEOUT);
        if self.stage == SocketStage::Live {
            self.connection
                .close(now, CloseCode::GOING_AWAY, "server shutting down");
        }
    }

    fn on_command(&mut self, command: Command, now: Instant) {
        match command {
            Command::AdminCall { request, reply } => self.admin_call(request, reply, now),
            Command::Push => self.push(now),
            Command::Replace => {
                tracing::info!(identity = ?self.identity, "replaced by a newer connection");
                self.connection.close(
                    now,
                    CloseCode::POLICY_VIOLATION,
                    "replaced by a newer connection",
                );
            }
        }
    }

    fn admin_call(
        &mut self,
        request: ocpp_server_core::Request,
        reply: oneshot::Sender<HttpResponse>,
        now: Instant,
    ) {
        if self.stage != SocketStage::Live || !self.connection.is_open() {
            let _ = reply.send(HttpResponse::error(
                404,
                "the charge point is no longer connected",
            ));
            return;
        }
        let action = request.action();
        match self.connection.call(now, request) {
            Ok(id) => {
                if let Some(identity) = &self.identity {
                    self.shared.csms.on_call_sent(identity, action);
                    tracing::info!(%identity, action, %id, "admin CALL sent");
                }
                self.admin_waiters.push((id, reply));
            }
            Err(Refused { reason, .. }) => {
                let _ = reply.send(HttpResponse::refused(reason));
            }
        }
    }

    /// `--push-interval-ms`: a DataTransfer if the previous CALL was answered; built right
    /// before `call`, so it is serialised (and stamped) at once.
    fn push(&mut self, now: Instant) {
        let (Some(version), Some(identity)) = (self.version, &self.identity) else {
            return;
        };
        if self.stage != SocketStage::Live || !self.connection.is_open() {
            return;
        }
        push::send_next(
            &self.shared.csms,
            &mut self.connection,
            now,
            version,
            identity,
            &mut self.push_seq,
        );
    }

    /// Drains the connection's events into the application, until there are none.
    fn handle_events(&mut self, now: Instant) {
        let shared = Arc::clone(&self.shared);
        let csms = &shared.csms;
        while let Some(event) = self.connection.poll_event() {
            match event {
                Event::UpgradeRequested(upgrade) => {
                    self.identity = Some(upgrade.identity.clone());
                    let transport = tls::transport(self.tls.as_deref());
                    let result = match csms.on_upgrade(&upgrade, &transport) {
                        Decision::Accept => self.connection.accept(now),
                        Decision::Reject { status, reason } => {
                            tracing::info!(
                                identity = %upgrade.identity, peer = %self.peer, status, reason,
                                "upgrade rejected"
                            );
                            self.connection.reject(now, status)
                        }
                    };
                    if result.is_err() {
                        tracing::warn!("accept/reject in the wrong state");
                    }
                }
                Event::Connected { version } => {
                    let Some(identity) = self.identity.clone() else {
                        continue;
                    };
                    self.version = Some(version);
                    self.session = Some(csms.on_connected(&identity, version));
                    tracing::info!(
                        %identity, version = version.as_str(), peer = %self.peer, "connected"
                    );
                    let replaced = shared.identities().register(identity, self.handle());
                    if let Some(old) = replaced {
                        replace(old);
                    }
                }
                Event::Call { id, request } => {
                    let (Some(identity), Some(session)) = (&self.identity, self.session) else {
                        continue;
                    };
                    let reply = csms.on_call(session, identity, &request);
                    reply.send(&mut self.connection, &id, Some(identity), now);
                }
                Event::Send { request, .. } => {
                    if let Some(identity) = &self.identity {
                        csms.on_send(identity, &request);
                    }
                }
                Event::CallCompleted {
                    id,
                    action,
                    outcome,
                } => {
                    let Some(identity) = &self.identity else {
                        continue;
                    };
                    csms.on_call_completed(identity, action, &outcome);
                    if let Some(at) = self.admin_waiters.iter().position(|(i, _)| *i == id) {
                        let (_, reply) = self.admin_waiters.swap_remove(at);
                        let version = self.version.unwrap_or(OcppVersion::V1_6);
                        let response = admin::call_response(version, &id, action, &outcome);
                        tracing::info!(
                            %identity, action, %id, status = response.status,
                            "admin CALL completed"
                        );
                        let _ = reply.send(response);
                    }
                }
                Event::UnmatchedResponse { id } => {
                    tracing::debug!(identity = ?self.identity, %id, "answer to no CALL of ours");
                }
                Event::CallResultError {
                    id,
                    code,
                    description,
                } => {
                    tracing::warn!(
                        identity = ?self.identity, %id, ?code, description, "CALLRESULTERROR"
                    );
                }
                Event::Closed(closed) => self.on_closed(&closed, now),
                _ => {}
            }
        }
    }

    /// The connection ended: tell the application, free the identity, fail the admin commands
    /// waiting on it, and start flushing.
    fn on_closed(&mut self, closed: &Closed, now: Instant) {
        let shared = Arc::clone(&self.shared);
        shared
            .csms
            .on_closed(self.session, self.identity.as_ref(), closed);
        if let (Some(identity), Some(_)) = (&self.identity, self.session) {
            shared.identities().remove(identity, &self.handle());
            tracing::info!(
                %identity, reason = ?closed.reason,
                seconds = now.duration_since(self.opened).as_secs(), "disconnected"
            );
        } else {
            tracing::debug!(peer = %self.peer, reason = ?closed.reason, "handshake ended");
        }
        for (_, reply) in self.admin_waiters.drain(..) {
            let _ = reply.send(HttpResponse::disconnected());
        }
        self.stage = SocketStage::Flushing {
            deadline: now + FLUSH_TIMEOUT,
        };
    }
}

/// Asks the task of a replaced connection to close; waits for room in its mailbox off this
/// task if it is full.
fn replace(old: Handle) {
    match old.commands.try_send(Command::Replace) {
        Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => {}
        Err(mpsc::error::TrySendError::Full(command)) => {
            tokio::spawn(async move {
                let _ =
                    tokio::time::timeout(Duration::from_secs(5), old.commands.send(command)).await;
            });
        }
    }
}
