//! The admin HTTP sockets (loop 0 only): read a request, route it, answer at once or send a
//! CALL to the loop that holds the charge point and answer when it completes.

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::Interest;
use ocpp_messages::version::OcppVersion;
use ocpp_proto::{ChargePointIdentity, Refused};

use super::event_loop::{Entry, EventLoop};
use super::ocpp_socket::{send_chunk, OcppSocket, Waiter};
use super::slab::Key;
use super::timers::Moment;
use super::{Handle, LoopCommand};
use ocpp_reference_csms::admin::{self, AdminRequest, HttpResponse, Route};
use ocpp_reference_csms::admin_auth::FetchHeaders;
use ocpp_reference_csms::SplitCall;

/// How long we may take to write an answer (the client's request has its own limits:
/// [`AdminLimits`](crate::server_config::AdminLimits)).
pub(super) const ADMIN_IO_TIMEOUT: Duration = Duration::from_secs(10);

/// How long an admin command may wait beyond the connection's call timeout before 504.
pub(super) const ADMIN_CALL_GRACE: Duration = Duration::from_secs(5);

/// Where an admin HTTP socket is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AdminStage {
    Reading,
    /// A CALL was sent to a charge point; the answer comes as [`LoopCommand::AdminReply`].
    Waiting,
    Writing,
}

/// An admin HTTP socket (loop 0 only).
#[derive(Debug)]
pub(super) struct AdminSocket {
    pub(super) socket: TcpStream,
    pub(super) stage: AdminStage,
    pub(super) input: Vec<u8>,
    pub(super) output: Vec<u8>,
    pub(super) written: usize,
    pub(super) deadline: Instant,
    pub(super) scheduled: Option<Moment>,
    pub(super) interest: Interest,
    /// The request head was read and let through [`AdminGuard`](ocpp_reference_csms::admin_auth::AdminGuard):
    /// the deadline is the body's now.
    pub(super) head_read: bool,
}

/// The answer to an admin command whose charge point has gone.
fn no_longer_connected() -> HttpResponse {
    HttpResponse::error(404, "the charge point is no longer connected")
}

impl EventLoop {
    /// The OCPP socket `target`, if its charge point is still connected (an admin command's
    /// CALL can be sent to it).
    fn open_ocpp(&mut self, target: Key) -> Option<&mut OcppSocket> {
        match self.sockets.get_mut(target) {
            Some(Entry::Ocpp(s)) if s.stage.is_open() && s.connection.is_open() => Some(s),
            _ => None,
        }
    }

    /// A one-CALL admin command on connection `target`: sent with the admin caller's
    /// deadline, so that a CALL still queued behind another when the caller gets its answer
    /// is never written (the core's rule).
    pub(super) fn admin_call(
        &mut self,
        target: Key,
        request: ocpp_proto::Request,
        reply_to: Key,
        deadline: Instant,
        now: Instant,
    ) {
        let shared = Arc::clone(&self.shared);
        let Some(s) = self.open_ocpp(target) else {
            shared.admin_reply(reply_to, no_longer_connected());
            return;
        };
        let action = request.action();
        let waiter = Some(Box::new(Waiter::Admin(reply_to)));
        match s.connection.call_for(now, request, waiter, Some(deadline)) {
            Ok(id) => {
                if let Some(identity) = &s.identity {
                    shared.csms.on_call_sent(identity, action);
                    tracing::info!(%identity, action, %id, "admin CALL sent");
                }
                self.service(target, now);
            }
            Err(Refused { reason, .. }) => {
                if let Some(identity) = &s.identity {
                    shared
                        .csms
                        .on_call_not_sent(identity, action, &reason.into());
                }
                let version = s.connection.version().unwrap_or(OcppVersion::V1_6);
                shared.admin_reply(reply_to, admin::refused(version, action, reason));
            }
        }
    }

    /// A split command ([`Route::Calls`]): its first chunk; the others follow as each is
    /// answered ([`send_chunk`]).
    pub(super) fn admin_calls(
        &mut self,
        target: Key,
        split: Box<SplitCall>,
        reply_to: Key,
        deadline: Instant,
        now: Instant,
    ) {
        let shared = Arc::clone(&self.shared);
        let Some(s) = self.open_ocpp(target) else {
            shared.admin_reply(reply_to, admin::split_failed(&split, no_longer_connected()));
            return;
        };
        match send_chunk(&shared.csms, s, split, reply_to, deadline, now) {
            Ok(()) => self.service(target, now),
            Err(response) => shared.admin_reply(reply_to, response),
        }
    }

    pub(super) fn admin_ready(&mut self, key: Key, readable: bool, now: Instant) {
        let Some(Entry::Admin(a)) = self.sockets.get_mut(key) else {
            return;
        };
        if a.stage == AdminStage::Writing {
            self.admin_write(key, now);
            return;
        }
        if !readable || a.stage != AdminStage::Reading {
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
        if !a.head_read {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut head = httparse::Request::new(&mut headers);
            if let Ok(httparse::Status::Complete(_)) = head.parse(&a.input) {
                // The browser checks, on the head alone: a refused request's body is never
                // waited for.
                let fetch = FetchHeaders::from_httparse(head.headers);
                let metrics = self.shared.csms.metrics();
                if let Err(response) = self.shared.admin_guard.admit(&fetch, metrics) {
                    self.admin_respond(key, response, now);
                    return;
                }
                a.head_read = true;
                a.deadline = now + self.shared.admin_limits.body_timeout;
                self.timers
                    .schedule(key, Some(a.deadline), &mut a.scheduled);
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
        let metrics = self.shared.csms.metrics();
        if let Err(response) = self.shared.admin_auth.admit(&request, metrics) {
            self.admin_respond(key, response, now);
            return;
        }
        // A request let in keeps its connection's slot until answered.
        self.admin_slots.serving(key);
        if self.admin_cluster_read(key, &request, now) {
            return;
        }
        if let Some((identity, action)) = self.remote_command(&request.method, &request.path) {
            let timeout = request.call_timeout(self.shared.connection_config.get_call_timeout());
            self.admin_remote_call(key, identity, action, &request.body, timeout, now);
            return;
        }
        let csms = Arc::clone(&self.shared.csms);
        // A command's deadline: the server's, or the caller's when it comes first.
        let request_deadline = |now: Instant, server: Instant| request.deadline(now, server);
        match admin::route(&csms, &request) {
            Route::Respond(response) => self.admin_respond(key, response, now),
            Route::Call { identity, request } => {
                let Some(handle) = self.admin_wait(key, &identity, 1, now) else {
                    return;
                };
                // The CALL's outcome comes by then, within the admin socket's own deadline
                // (the caller's, when it comes first).
                let deadline =
                    request_deadline(now, now + self.shared.connection_config.get_call_timeout());
                self.shared.send(
                    handle.loop_index,
                    LoopCommand::AdminCall {
                        target: handle.key,
                        request,
                        reply_to: key,
                        deadline,
                    },
                );
            }
            Route::Calls { identity, split } => {
                let chunks = split.chunks();
                let Some(handle) = self.admin_wait(key, &identity, chunks, now) else {
                    return;
                };
                // Every chunk's outcome comes by then (a call timeout each), within the admin
                // socket's own deadline; none is written later.
                let call_timeout = self.shared.connection_config.get_call_timeout();
                let deadline = request_deadline(now, split.deadline(now, call_timeout));
                self.shared.send(
                    handle.loop_index,
                    LoopCommand::AdminCalls {
                        target: handle.key,
                        split,
                        reply_to: key,
                        deadline,
                    },
                );
            }
        }
    }

    /// The admin socket `key` waits for `calls` CALLs to `identity`, one after another (its
    /// deadline: that many call timeouts and a grace); `None` when it is not connected
    /// (answered 404).
    fn admin_wait(
        &mut self,
        key: Key,
        identity: &ChargePointIdentity,
        calls: usize,
        now: Instant,
    ) -> Option<Handle> {
        let handle = self.shared.identities().get(identity).copied();
        let Some(handle) = handle else {
            self.admin_respond(key, HttpResponse::not_connected(identity), now);
            return None;
        };
        let Some(Entry::Admin(a)) = self.sockets.get_mut(key) else {
            return None;
        };
        a.stage = AdminStage::Waiting;
        let calls = u32::try_from(calls).unwrap_or(u32::MAX);
        let call_timeout = self.shared.connection_config.get_call_timeout();
        a.deadline = now + call_timeout.saturating_mul(calls) + ADMIN_CALL_GRACE;
        self.timers
            .schedule(key, Some(a.deadline), &mut a.scheduled);
        Some(handle)
    }

    pub(super) fn admin_respond(&mut self, key: Key, response: HttpResponse, now: Instant) {
        let Some(Entry::Admin(a)) = self.sockets.get_mut(key) else {
            return;
        };
        a.output = response.to_bytes();
        a.written = 0;
        a.stage = AdminStage::Writing;
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
}
