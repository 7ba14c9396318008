//! Graceful shutdown: close every connection with 1001 (1012, "service restart", in a
//! cluster, which loop 0 then leaves: `cluster`), then end what is left at the deadline. An
//! admin command waiting for its CALL gets the CALL's own outcome, or at the deadline 504 (it
//! may have run), never 503.

use std::time::Instant;

use ocpp_frame::CloseCode;

use super::admin_socket::AdminStage;
use super::cluster::DrainState;
use super::event_loop::{Entry, EventLoop};
use super::SHUTDOWN_TIMEOUT;
use ocpp_reference_csms::admin::HttpResponse;

impl EventLoop {
    pub(super) fn begin_shutdown(&mut self, now: Instant) {
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
        let (code, reason) = if self.shared.cluster.is_some() {
            (CloseCode::SERVICE_RESTART, "service restart")
        } else {
            (CloseCode::GOING_AWAY, "server shutting down")
        };
        for key in self.sockets.keys() {
            match self.sockets.get_mut(key) {
                Some(Entry::Ocpp(s)) => {
                    if s.stage.is_open() {
                        s.connection.close(now, code, reason);
                    }
                    self.service(key, now);
                }
                // A command waiting for its CALL's outcome keeps waiting: closing the
                // connections above ends its CALL (not sent, or sent and unanswered), and a
                // routed one gets its reply or its timeout. Answering "shutting down" here
                // would tell a client that may retry about a CALL that may have run.
                Some(Entry::Admin(a))
                    if a.stage != AdminStage::Writing && a.stage != AdminStage::Waiting =>
                {
                    self.remove(key);
                }
                Some(Entry::Admin(_)) => {}
                None => {}
            }
        }
    }

    /// The shutdown deadline passed: end what is left (their pending CALLs are logged).
    pub(super) fn force_close_all(&mut self, now: Instant) {
        if !self.cluster_done() {
            tracing::warn!("leaving the cluster did not finish before the deadline");
            self.drain_state = DrainState::GaveUp;
        }
        for key in self.sockets.keys() {
            if let Some(Entry::Ocpp(s)) = self.sockets.get_mut(key) {
                if s.stage.is_open() {
                    s.connection.handle_eof(now);
                    self.handle_events(key, now);
                }
            }
        }
        // Commands still waiting (a routed one's reply did not come in time): their CALL may
        // have run, so the answer says so (504), never the retryable 503.
        for key in self.sockets.keys() {
            if let Some(Entry::Admin(a)) = self.sockets.get_mut(key) {
                if a.stage == AdminStage::Waiting {
                    self.admin_respond(key, HttpResponse::shut_down_before_answer(), now);
                }
            }
            self.remove(key);
        }
    }
}
