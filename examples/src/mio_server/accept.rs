//! Accepting: new OCPP sockets (with their TLS session, if any) and admin sockets, at the
//! accept rate (`--accept-rate`, [`ocpp_proto::accept::AcceptPacer`]), and the retry after
//! running out of file descriptors.

use std::io::{self, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use mio::net::{TcpListener, TcpStream};
use mio::Interest;
use ocpp_proto::accept::{after_accept_error, AcceptRetry};
use ocpp_proto::Connection;

use super::admin_socket::{AdminSocket, AdminStage};
use super::capture::Tap;
use super::event_loop::{Entry, EventLoop};
use super::ocpp_socket::{OcppSocket, SocketStage};
use crate::tls::TlsSession;
use ocpp_reference_csms::admin::HttpResponse;
use ocpp_reference_csms::admin_auth::AdminRefused;

/// What one `accept` on a listener gave.
enum Accepted {
    /// A connection, from this peer.
    Socket(TcpStream, SocketAddr),
    /// An error worth trying again at once (the peer gave up, say).
    Again,
    /// Nothing waiting, or (out of descriptors) nothing to accept before the retry is due.
    Stop,
}

/// One `accept` on `listener` (`what` in the logs, of loop `loop_index`). Out of
/// descriptors, the connection stays in the backlog and readiness will not come again for
/// it: `retry` is set to when the retry timer takes it.
fn accept_one(
    listener: &TcpListener,
    what: &str,
    loop_index: usize,
    now: Instant,
    retry: &mut Option<Instant>,
) -> Accepted {
    match listener.accept() {
        Ok((socket, peer)) => Accepted::Socket(socket, peer),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Accepted::Stop,
        Err(e) => match after_accept_error(&e) {
            AcceptRetry::Now => {
                tracing::debug!("{what}: {e}");
                Accepted::Again
            }
            AcceptRetry::After(wait) => {
                tracing::warn!(loop_index, "{what}: {e}; retrying shortly");
                *retry = Some(now + wait);
                Accepted::Stop
            }
        },
    }
}

impl EventLoop {
    /// The listener is ready (or a retry is due): accept until it would block, or until the
    /// accept rate's next slot.
    pub(super) fn accept(&mut self, now: Instant) {
        self.accept_paced(now, false);
    }

    /// The accept rate's next slot came: accept again (a connection found waiting then was
    /// kept in the backlog by the rate, and is counted).
    pub(super) fn accept_resumed(&mut self, now: Instant) {
        self.accept_paced(now, true);
    }

    fn accept_paced(&mut self, now: Instant, mut resumed: bool) {
        #[cfg(target_os = "linux")]
        if self.uring.is_some() && self.accept_pacer.is_none() {
            // The ring accepts (multishot), armed again at the next turn after a retry wait.
            // With an accept rate the listener stays on epoll and is accepted from here.
            return;
        }
        loop {
            let Some(listener) = &self.listener else {
                return;
            };
            if let Some(at) = self.accept_pacer.as_ref().and_then(|p| p.next_accept(now)) {
                // Past the rate: the connections wait in the backlog until the next slot.
                self.accept_paused = Some(at);
                return;
            }
            let retry = &mut self.accept_retry;
            let (socket, peer) = match accept_one(listener, "accept", self.index, now, retry) {
                Accepted::Socket(socket, peer) => (socket, peer),
                Accepted::Again => continue,
                Accepted::Stop => return,
            };
            if let Some(pacer) = &mut self.accept_pacer {
                pacer.accepted(now);
            }
            if std::mem::take(&mut resumed) {
                self.shared.csms.metrics().accepts_deferred.inc();
            }
            self.add_ocpp(socket, Some(peer), now);
        }
    }

    /// A charge point's socket just accepted: its record, its connection, its reads.
    pub(super) fn add_ocpp(
        &mut self,
        socket: mio::net::TcpStream,
        peer: Option<SocketAddr>,
        now: Instant,
    ) {
        let _ = socket.set_nodelay(true);
        let tls = match &self.shared.tls {
            None => None,
            Some(config) => match TlsSession::accept(config) {
                Ok(session) => Some(Box::new(session)),
                Err(e) => {
                    tracing::warn!(?peer, "TLS session: {e}");
                    return;
                }
            },
        };
        let connection = Connection::accept_incoming_with_callers(
            now,
            Arc::clone(&self.shared.connection_config),
        );
        let key = self.sockets.insert(Entry::Ocpp(OcppSocket {
            socket,
            tls,
            connection,
            stage: SocketStage::Live,
            interest: Interest::READABLE,
            read_paused: false,
            recv_armed: false,
            scheduled: None,
            identity: None,
            version: None,
            session: None,
            opened: self.timers.moment(now),
            push_seq: 0,
            claim: None,
        }));
        if let (Some(taps), Some(capture)) = (&mut self.taps, &self.shared.capture) {
            taps.insert(key, Tap::new(capture));
        }
        let metrics = self.shared.csms.metrics();
        metrics.sockets_accepted.inc();
        metrics.sockets_open.inc();
        let Some(Entry::Ocpp(s)) = self.sockets.get_mut(key) else {
            return;
        };
        #[cfg(target_os = "linux")]
        if let Some(uring) = &mut self.uring {
            uring.arm_recv(key, s);
            self.timers
                .schedule(key, s.connection.poll_timeout(), &mut s.scheduled);
            return;
        }
        let registered =
            self.poll
                .registry()
                .register(&mut s.socket, key.token(), Interest::READABLE);
        if let Err(e) = registered {
            tracing::warn!("register: {e}");
            self.remove(key);
            return;
        }
        self.timers
            .schedule(key, s.connection.poll_timeout(), &mut s.scheduled);
    }

    pub(super) fn accept_admin(&mut self, now: Instant) {
        loop {
            let Some(listener) = &self.admin_listener else {
                return;
            };
            let retry = &mut self.accept_retry;
            let socket = match accept_one(listener, "admin accept", self.index, now, retry) {
                Accepted::Socket(socket, _) => socket,
                Accepted::Again => continue,
                Accepted::Stop => return,
            };
            let key = self.sockets.insert(Entry::Admin(Box::new(AdminSocket {
                socket,
                stage: AdminStage::Reading,
                input: Vec::new(),
                output: Vec::new(),
                written: 0,
                deadline: now + self.shared.admin_limits.header_timeout,
                scheduled: None,
                interest: Interest::READABLE,
                head_read: false,
            })));
            // The limit on admin connections: an idle one makes room, or this one is refused.
            let metrics = self.shared.csms.metrics();
            match self.admin_slots.open(key) {
                Ok(None) => {}
                Ok(Some(idle)) => {
                    metrics.admin_refused(AdminRefused::Limit).inc();
                    tracing::debug!("admin connection limit: the oldest idle one closed");
                    self.remove(idle);
                }
                Err(full) => {
                    metrics.admin_refused(AdminRefused::Limit).inc();
                    if let Some(Entry::Admin(a)) = self.sockets.get_mut(key) {
                        // One try, on a fresh socket whose buffer is empty: 503, then close.
                        let busy = HttpResponse::error(503, &full.to_string()).to_bytes();
                        let _ = a.socket.write(&busy);
                    }
                    self.remove(key);
                    continue;
                }
            }
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
}
