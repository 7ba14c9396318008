//! A charge point's socket: the record that holds its Sans-IO connection, and how the loop
//! reads it, feeds the connection, hands its events to the CSMS, writes its output and moves
//! it through flushing and draining to its close.

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::sync::Arc;
use std::time::Instant;

use mio::net::TcpStream;
use mio::Interest;
use ocpp_cluster::{command_outcome, ClaimTicket};
use ocpp_messages::version::OcppVersion;
use ocpp_proto::{Answer, CallOutcome, ChargePointIdentity, Closed, Connection, Event, MessageId};

use super::capture::Tap;
use super::cluster::JobAnswer;
use super::event_loop::{Entry, EventLoop};
use super::slab::Key;
use super::timers::{Moment, TimerHeap};
use super::{Handle, LoopCommand, DRAIN_TIMEOUT};
use crate::tls::{self, Received, TlsSession};
use ocpp_reference_csms::admin::{self, HttpResponse};
use ocpp_reference_csms::{Answering, Csms, SessionId, SplitCall};

/// At most this many read calls per readiness event, so one busy peer cannot starve the
/// others (the rest is read on the next turn of the loop).
pub(super) const READS_PER_EVENT: usize = 16;

/// Where a charge point's socket is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SocketStage {
    /// The connection runs.
    Live,
    /// Clustered: the connection runs, but its output (the 101 first) waits until the charge
    /// point's claim is registered in Redis, so that once it has its handshake every node
    /// finds it; at the deadline (Redis down or slow) it goes out with the claim pending.
    Claiming { deadline: Moment },
    /// The connection ended; write out what it still has, until the deadline.
    Flushing { deadline: Moment },
    /// Our write side is shut; read until the peer's end of stream, until the deadline.
    Draining { deadline: Moment },
}

impl SocketStage {
    /// Whether the connection runs (commands may be queued on it): `Live` or `Claiming`.
    pub(super) fn is_open(self) -> bool {
        matches!(self, SocketStage::Live | SocketStage::Claiming { .. })
    }
}

/// Who waits for the answer to one of our CALLs. mio-server holds the core's
/// `Connection<Option<Box<Waiter>>>`: each CALL of ours carries who waits for its outcome
/// (`None` for the central system's own CALLs), handed back by the core with that outcome, so
/// no socket keeps a table of waiters. Boxed: the core's events carry it, and a pointer keeps
/// them as small as they were for the messages that have none (every request).
#[derive(Debug)]
pub(super) enum Waiter {
    /// The admin socket to answer (loop 0).
    Admin(Key),
    /// The admin socket to answer (loop 0) once every chunk of a split command is answered
    /// (or one failed); the next chunk goes when this one is answered.
    AdminSplit {
        reply_to: Key,
        split: Box<SplitCall>,
        /// The whole command's deadline: no chunk is written after it.
        deadline: Instant,
    },
    /// A command forwarded by another node of the cluster.
    Job(JobAnswer),
}

/// A charge point's socket and its Sans-IO connection.
#[derive(Debug)]
pub(super) struct OcppSocket {
    pub(super) socket: TcpStream,
    /// The TLS session with `wss://`; `None` (a null pointer) with plain `ws://`.
    pub(super) tls: Option<Box<TlsSession>>,
    pub(super) connection: Connection<Option<Box<Waiter>>>,
    pub(super) stage: SocketStage,
    /// The interest registered with the poller.
    pub(super) interest: Interest,
    /// Reading stopped because the connection did not want input (`wants_read`): our output
    /// to this peer is backed up. Edge-triggered readiness will not report the data waiting,
    /// so the loop reads again when it resumes.
    pub(super) read_paused: bool,
    /// `uring-server`: a multishot receive is armed on the socket (until its last
    /// completion, the one without `IORING_CQE_F_MORE`).
    pub(super) recv_armed: bool,
    /// The earliest deadline of ours in the timer heap.
    pub(super) scheduled: Option<Moment>,
    pub(super) identity: Option<ChargePointIdentity>,
    pub(super) version: Option<OcppVersion>,
    pub(super) session: Option<SessionId>,
    /// When the socket was accepted (rounded down to the millisecond).
    pub(super) opened: Moment,
    /// Sequence number of the last push DataTransfer.
    pub(super) push_seq: u64,
    /// The cluster claim of this connection's identity (clustered, once connected); `None`
    /// again once released or superseded.
    pub(super) claim: Option<ClaimTicket>,
}

impl OcppSocket {
    /// The connection's next deadline: its own, or its stage's.
    pub(super) fn deadline(&self, timers: &TimerHeap) -> Option<Instant> {
        match self.stage {
            SocketStage::Live => self.connection.poll_timeout(),
            SocketStage::Claiming { deadline } => {
                let claim = timers.instant(deadline);
                Some(
                    self.connection
                        .poll_timeout()
                        .map_or(claim, |t| t.min(claim)),
                )
            }
            SocketStage::Flushing { deadline } | SocketStage::Draining { deadline } => {
                Some(timers.instant(deadline))
            }
        }
    }
}

/// The peer's address, for logs (asked of the socket, not kept per connection).
pub(super) fn peer(socket: &TcpStream) -> String {
    socket
        .peer_addr()
        .map_or_else(|_| "unknown".to_string(), |a| a.to_string())
}

impl EventLoop {
    /// Reads into the loop's buffer and feeds the connection while it
    /// [wants input](Connection::wants_read); the caller then services it once (events,
    /// output), as the drain contract asks.
    ///
    /// A read that returns less than the buffer has emptied the socket's receive queue, so
    /// unless `exhaust` (the peer's FIN or an error was reported, or this is a `read_again`)
    /// the loop stops there instead of paying a second `recvfrom` for its `EAGAIN`: any byte
    /// that arrives later raises a new edge. That is one system call in three per message.
    pub(super) fn read(&mut self, key: Key, exhaust: bool, now: Instant) {
        for _ in 0..READS_PER_EVENT {
            let Some(Entry::Ocpp(s)) = self.sockets.get_mut(key) else {
                return;
            };
            match s.stage {
                SocketStage::Live | SocketStage::Claiming { .. } => {}
                // A closed connection ignores input; we read it only when draining.
                SocketStage::Flushing { .. } => return,
                SocketStage::Draining { .. } => {
                    self.drain(key);
                    return;
                }
            }
            if !s.connection.wants_read() {
                // Back-pressure: the peer does not read what we send; stop reading it.
                s.read_paused = true;
                return;
            }
            if let Some(session) = &mut s.tls {
                let connection = &mut s.connection;
                let mut tap = self.taps.as_mut().and_then(|taps| taps.get_mut(&key));
                let received = session.receive(&mut s.socket, &mut self.scratch, |plaintext| {
                    if let Some(tap) = tap.as_mut() {
                        tap.received(plaintext);
                    }
                    connection.handle_data(now, plaintext)
                });
                match received {
                    Received::Progress => continue,
                    Received::WouldBlock => return,
                    Received::Closed => {}
                    Received::Failed(e) => {
                        // Send the alert the TLS library chose; `service` then shuts our side and
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
                return;
            }
            match s.socket.read(&mut self.scratch) {
                Ok(0) => {
                    s.connection.handle_eof(now);
                    return;
                }
                Ok(n) => {
                    if let Some(tap) = self.taps.as_mut().and_then(|taps| taps.get_mut(&key)) {
                        tap.received(&self.scratch[..n]);
                    }
                    s.connection.handle_data(now, &self.scratch[..n]);
                    if n < self.scratch.len() && !exhaust {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    tracing::debug!(peer = %peer(&s.socket), "read: {e}");
                    s.connection.handle_eof(now);
                    return;
                }
            }
        }
        // Data may be left: edge-triggered readiness will not say so again.
        self.read_again.push(key);
    }

    /// Draining: discards input until the peer's end of stream, then closes the socket.
    pub(super) fn drain(&mut self, key: Key) {
        #[cfg(target_os = "linux")]
        if self.uring.is_some() {
            // The ring's receive discards the input and sees the end of stream.
            self.uring_drain(key);
            return;
        }
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

    /// After anything happened to a connection: one pass of the drain contract (handle its
    /// events, write its output), then move it along its stages and re-register its interest
    /// and deadline.
    pub(super) fn service(&mut self, key: Key, now: Instant) {
        self.handle_events(key, now);
        let Some(Entry::Ocpp(s)) = self.sockets.get_mut(key) else {
            return;
        };
        // While claiming, the output waits (the charge point has not seen its 101 yet).
        let holding = matches!(s.stage, SocketStage::Claiming { .. });
        let tap = self.taps.as_mut().and_then(|taps| taps.get_mut(&key));
        // On the ring, the output is copied into a send of its own and goes out with the
        // turn's submit; `sending` until it completes.
        #[cfg(target_os = "linux")]
        let (written, sending) = match &mut self.uring {
            Some(uring) if !holding => (Ok(()), uring.send(key, s, tap)),
            Some(uring) => (Ok(()), uring.sending(key)),
            None if holding => (Ok(()), false),
            None => (write_out(s, tap), false),
        };
        #[cfg(not(target_os = "linux"))]
        let (written, sending) = (if holding { Ok(()) } else { write_out(s, tap) }, false);
        if let Err(e) = written {
            tracing::debug!(peer = %peer(&s.socket), "write: {e}");
            self.socket_failed(key, now);
            return;
        }
        let pending = s.connection.pending_transmit_len();
        if let SocketStage::Flushing { .. } = s.stage {
            if pending == 0 && !sending {
                if let Some(session) = &mut s.tls {
                    // TLS ends with close_notify (RFC 8446 §6.1) before the TCP half-close.
                    session.close();
                    if session.write_to(&mut s.socket).is_err() {
                        self.remove(key);
                        return;
                    }
                }
            }
            if pending == 0 && !sending && !s.tls.as_ref().is_some_and(|t| t.wants_write()) {
                // Everything is out: half-close and wait for the peer's end of stream.
                let _ = s.socket.shutdown(Shutdown::Write);
                s.stage = SocketStage::Draining {
                    deadline: self.timers.deadline(now + DRAIN_TIMEOUT),
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
        let resume = s.read_paused && s.connection.wants_read();
        if resume {
            s.read_paused = false;
            self.read_again.push(key);
        }
        #[cfg(target_os = "linux")]
        if self.uring.is_some() {
            // No readiness interest on the ring: only the deadline.
            self.schedule(key);
            return;
        }
        let interest =
            if (pending > 0 && !holding) || s.tls.as_ref().is_some_and(|t| t.wants_write()) {
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
        self.schedule(key);
    }

    /// Schedules the connection's next deadline ([`OcppSocket::deadline`]).
    fn schedule(&mut self, key: Key) {
        let Some(Entry::Ocpp(s)) = self.sockets.get_mut(key) else {
            return;
        };
        let deadline = s.deadline(&self.timers);
        self.timers.schedule(key, deadline, &mut s.scheduled);
    }

    /// The socket is dead (a write or a receive failed): end the connection, tell the
    /// application, drop the socket.
    pub(super) fn socket_failed(&mut self, key: Key, now: Instant) {
        if let Some(Entry::Ocpp(s)) = self.sockets.get_mut(key) {
            s.connection.handle_eof(now);
        }
        self.handle_events(key, now);
        self.remove(key);
    }

    /// The answer a worker made for the CALL `id` of connection `target` (see
    /// [`Answering::Later`]): sent, unless the connection is gone (then the CALL was reported
    /// unanswered when it closed).
    pub(super) fn answer_later(
        &mut self,
        target: Key,
        id: &MessageId<'static>,
        answer: Answer,
        now: Instant,
    ) {
        let shared = Arc::clone(&self.shared);
        let Some(Entry::Ocpp(s)) = self.sockets.get_mut(target) else {
            tracing::debug!(%id, "answer made after its connection closed");
            return;
        };
        let Some(identity) = s.identity.clone() else {
            return;
        };
        send_answer(&shared.csms, &mut s.connection, &identity, id, answer, now);
        self.service(target, now);
    }

    /// Drains the connection's events into the application, until there are none.
    pub(super) fn handle_events(&mut self, key: Key, now: Instant) {
        let shared = Arc::clone(&self.shared);
        let csms = &shared.csms;
        loop {
            let Some(Entry::Ocpp(s)) = self.sockets.get_mut(key) else {
                return;
            };
            let Some(event) = s.connection.poll_event() else {
                return;
            };
            match event {
                Event::UpgradeRequested(upgrade) => {
                    s.identity = Some(upgrade.identity.clone());
                    let transport = tls::transport(s.tls.as_deref());
                    let peer = s.socket.peer_addr().ok().map(|addr| addr.ip());
                    let decision = shared
                        .upgrades
                        .decide(csms, &upgrade, &transport, peer, now);
                    if s.connection.decide(now, decision).is_err() {
                        tracing::warn!("accept/reject in the wrong state");
                    }
                }
                Event::Connected { version } => {
                    let Some(identity) = s.identity.clone() else {
                        continue;
                    };
                    s.version = Some(version);
                    if let Some(tap) = self.taps.as_mut().and_then(|taps| taps.get_mut(&key)) {
                        tap.connected(identity.as_str(), version, s.connection.deflate());
                    }
                    s.session = Some(csms.on_connected(&identity, version));
                    tracing::info!(
                        %identity, version = version.as_str(), peer = %peer(&s.socket),
                        loop_index = self.index, "connected"
                    );
                    let handle = Handle {
                        loop_index: self.index,
                        key,
                    };
                    let replaced = shared.identities().register(identity.clone(), handle);
                    if let Some(old) = replaced {
                        shared.send(old.loop_index, LoopCommand::Replace { target: old.key });
                    }
                    if let Some(node) = &shared.cluster {
                        // Held locally at once; registered in Redis by the cluster thread. The
                        // 101 waits in the output until then (`claimed`), at most `claim_wait`.
                        let bridge = node.bridge();
                        s.claim = Some(bridge.claim_as(identity.as_str(), Some(version)));
                        let wait = bridge.config().claim_wait();
                        drop(bridge);
                        if s.stage == SocketStage::Live {
                            s.stage = SocketStage::Claiming {
                                deadline: self.timers.deadline(now + wait),
                            };
                        }
                    }
                }
                Event::Call { id, request } => {
                    let (Some(identity), Some(session)) = (&s.identity, s.session) else {
                        continue;
                    };
                    match csms.on_call(session, identity, &request) {
                        Answering::Now(answer) => {
                            send_answer(csms, &mut s.connection, identity, &id, answer, now);
                        }
                        Answering::Later(later) => {
                            // Made on a worker; comes back as `LoopCommand::Answer`.
                            let (to, index) = (Arc::clone(&shared), self.index);
                            shared.workers.run(later, move |answer| {
                                to.send(
                                    index,
                                    LoopCommand::Answer {
                                        target: key,
                                        id,
                                        answer,
                                    },
                                );
                            });
                        }
                    }
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
                    caller,
                } => {
                    let Some(identity) = &s.identity else {
                        continue;
                    };
                    csms.on_call_completed(identity, action, &outcome);
                    self.call_ended(key, &id, action, outcome, caller, now);
                }
                Event::UnmatchedResponse { id } => {
                    tracing::debug!(identity = ?s.identity, %id, "answer to no CALL of ours");
                }
                Event::CallResultError {
                    id,
                    code,
                    description,
                } => {
                    tracing::warn!(identity = ?s.identity, %id, ?code, description, "CALLRESULTERROR");
                }
                Event::Closed(closed) => self.on_closed(key, *closed, now),
                _ => {}
            }
        }
    }

    /// The connection ended: tell the application, free the identity, fail the admin
    /// commands waiting on it, and start flushing.
    fn on_closed(&mut self, key: Key, closed: Closed<Option<Box<Waiter>>>, now: Instant) {
        let Some(Entry::Ocpp(s)) = self.sockets.get_mut(key) else {
            return;
        };
        // Each CALL left over ends as the core says (sent and may have run, or never sent),
        // for whoever waits on it, the same way as an answered one, once the application has
        // seen the close.
        let mut unanswered = Vec::new();
        let closed = closed.settle_callers(|call, caller| {
            unanswered.push((
                call.id.clone(),
                call.request.action(),
                call.failure(),
                caller,
            ));
        });
        let closed = &closed;
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
            if let (Some(ticket), Some(node)) = (s.claim.take(), &shared.cluster) {
                node.release(identity.as_str(), ticket);
            }
            tracing::info!(
                %identity, reason = ?closed.reason, seconds = now.duration_since(self.timers.instant(s.opened)).as_secs(),
                "disconnected"
            );
        } else {
            tracing::debug!(peer = %peer(&s.socket), reason = ?closed.reason, "handshake ended");
        }
        for (id, action, failure, caller) in unanswered {
            self.call_ended(key, &id, action, Err(failure), caller, now);
        }
        let Some(Entry::Ocpp(s)) = self.sockets.get_mut(key) else {
            return;
        };
        s.stage = SocketStage::Flushing {
            deadline: self
                .timers
                .deadline(now + s.connection.config().get_linger()),
        };
    }

    /// One of our CALLs on `key` ended: hands the outcome to whoever waits for it (an admin
    /// client, a split command's next chunk, another node of the cluster).
    fn call_ended(
        &mut self,
        key: Key,
        id: &MessageId<'static>,
        action: &'static str,
        outcome: CallOutcome,
        waiter: Option<Box<Waiter>>,
        now: Instant,
    ) {
        let shared = Arc::clone(&self.shared);
        let Some(Entry::Ocpp(s)) = self.sockets.get_mut(key) else {
            return;
        };
        let version = s.version.unwrap_or(OcppVersion::V1_6);
        let (reply_to, response) = match waiter.map(|waiter| *waiter) {
            None => return,
            Some(Waiter::Job(answer)) => {
                let answered = answer.complete(command_outcome(&outcome));
                tracing::info!(identity = ?s.identity, action, %id, answered, "cluster CALL completed");
                return;
            }
            Some(Waiter::AdminSplit {
                reply_to,
                mut split,
                deadline,
            }) => {
                let done = match split.complete(&outcome) {
                    Some(end) => Some(admin::split_response(&split, &end)),
                    None if s.connection.is_open() => {
                        send_chunk(&shared.csms, s, split, reply_to, deadline, now).err()
                    }
                    None => Some(admin::split_failed(
                        &split,
                        admin::call_response(version, id, action, &outcome),
                    )),
                };
                match done {
                    Some(response) => (reply_to, response),
                    None => return,
                }
            }
            Some(Waiter::Admin(reply_to)) => (
                reply_to,
                admin::call_response(version, id, action, &outcome),
            ),
        };
        tracing::info!(identity = ?s.identity, action, %id, status = response.status, "admin CALL completed");
        shared.admin_reply(reply_to, response);
    }
}

/// Sends the next chunk of a split admin command on `s` and waits for its answer; `Err` is
/// the admin caller's answer when it cannot be sent. The chunk carries the whole command's
/// `deadline`: still queued behind another CALL then, it is never written.
pub(super) fn send_chunk(
    csms: &Csms,
    s: &mut OcppSocket,
    mut split: Box<SplitCall>,
    reply_to: Key,
    deadline: Instant,
    now: Instant,
) -> Result<(), HttpResponse> {
    let Some(request) = split.next_request() else {
        return Err(HttpResponse::error(500, "no chunk left to send"));
    };
    let action = request.action();
    let chunks = split.chunks();
    let waiter = Waiter::AdminSplit {
        reply_to,
        split,
        deadline,
    };
    match s
        .connection
        .call_for(now, request, Some(Box::new(waiter)), Some(deadline))
    {
        Ok(id) => {
            if let Some(identity) = &s.identity {
                csms.on_call_sent(identity, action);
                tracing::info!(%identity, action, %id, chunks, "admin CALL (chunk) sent");
            }
            Ok(())
        }
        Err(ocpp_proto::Refused { reason, message }) => {
            if let Some(identity) = &s.identity {
                csms.on_call_not_sent(identity, action, &reason.into());
            }
            let version = s.version.unwrap_or(OcppVersion::V1_6);
            let refused = admin::refused(version, action, reason);
            Err(match message.1.map(|waiter| *waiter) {
                Some(Waiter::AdminSplit { split, .. }) => admin::split_failed(&split, refused),
                _ => refused,
            })
        }
    }
}

/// Writes the connection's output (through TLS, if on) until done or the socket would block.
/// With `--capture`, `tap` sees every byte written.
fn write_out(s: &mut OcppSocket, mut tap: Option<&mut Tap>) -> io::Result<()> {
    if let Some(session) = &mut s.tls {
        loop {
            let pending = s.connection.pending_transmit();
            let taken = session.send(&mut s.socket, pending)?;
            if let Some(tap) = tap.as_deref_mut() {
                tap.sent(pending.get(..taken).unwrap_or_default());
            }
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
            Ok(n) => {
                if let Some(tap) = tap.as_deref_mut() {
                    tap.sent(pending.get(..n).unwrap_or_default());
                }
                s.connection.advance_transmit(n);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Sends the CSMS's answer to the CALL `id`, then the follow-up CALLs it queued
/// (CertificateSigned after an accepted SignCertificate...), behind the answer.
fn send_answer(
    csms: &Csms,
    connection: &mut Connection<Option<Box<Waiter>>>,
    identity: &ChargePointIdentity,
    id: &MessageId<'static>,
    answer: Answer,
    now: Instant,
) {
    match connection.answer(now, id, answer) {
        Ok(()) => csms.metrics().calls_answered.inc(),
        Err(error) => tracing::warn!(%identity, %id, "answer: {error}"),
    }
    // Nobody waits for them (no caller, no deadline): their outcomes come to
    // `Csms::on_call_completed`, or `on_call_not_sent` when the connection refuses one.
    while let Some(request) = csms.take_follow_up(identity) {
        let action = request.action();
        match connection.call_for(now, request, None, None) {
            Ok(_) => csms.on_call_sent(identity, action),
            Err(refused) => csms.on_call_not_sent(identity, action, &refused.reason.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The socket record is most of what an idle charge point costs the loop (see
    /// BENCHMARKS.md, "Memory per idle charge point"); it was 712 bytes, then 560, 424, 400,
    /// now 264 with the 168-byte `Connection` (release; a debug build's is 16 bytes more, hence
    /// the bound), and it lives in the slab's slot, which adds only the slot's generation.
    #[test]
    fn socket_record_size() {
        use std::mem::size_of;
        let size = size_of::<OcppSocket>();
        let slot = super::super::slab::slot_size::<Entry>();
        println!(
            "OcppSocket {size} B (slab slot {slot}): Connection {}, stage {}, scheduled {}, \
             identity {}, session {}, opened {}, claim {}",
            size_of::<Connection<Option<Box<Waiter>>>>(),
            size_of::<SocketStage>(),
            size_of::<Option<Moment>>(),
            size_of::<Option<ChargePointIdentity>>(),
            size_of::<Option<SessionId>>(),
            size_of::<Moment>(),
            size_of::<Option<ClaimTicket>>(),
        );
        assert!(size <= 280, "OcppSocket grew to {size} bytes");
        assert!(
            slot <= size + 8,
            "a slab slot is {slot} bytes for a {size}-byte record"
        );
    }
}
