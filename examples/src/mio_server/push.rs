//! The push tick (`--push-interval-ms`): a DataTransfer to every open charge point.

use std::sync::Arc;
use std::time::Instant;

use super::event_loop::{Entry, EventLoop};
use super::ocpp_socket::SocketStage;
use ocpp_reference_csms::push;

impl EventLoop {
    /// `--push-interval-ms`: a DataTransfer to every open connection whose previous CALL was
    /// answered; built right before `call`, so it is serialised (and stamped) at once.
    pub(super) fn push_tick(&mut self, now: Instant) {
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
            if s.stage != SocketStage::Live || !s.connection.is_open() {
                continue;
            }
            let busy = s.connection.has_call_in_flight() || s.connection.queued_calls() > 0;
            let Some(request) = push::tick(&shared.csms, version, &mut s.push_seq, busy) else {
                continue;
            };
            match s.connection.call_for(now, request, None, None) {
                Ok(_) => {
                    push::sent(&shared.csms, identity);
                    self.service(key, now);
                }
                Err(_) => push::refused(&shared.csms),
            }
        }
    }
}
