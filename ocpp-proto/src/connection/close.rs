//! Ending a connection: the close handshake both ways, aborts, and the final event.

use std::time::Instant;

use ocpp_frame::{truncate_close_reason, CloseCode, CloseFrame};

use super::{Connection, State};
use crate::timer::Timer;
use crate::{CloseReason, Closed, Event, UnansweredCall};

impl<C> Connection<C> {
    /// Starts the closing handshake with `code` and `reason` (at most 123 bytes; longer is cut
    /// at a character boundary). Before the WebSocket is open, just ends the connection.
    ///
    /// The connection ends ([`Event::Closed`]) when the peer answers, its stream ends, or the
    /// close timeout passes.
    pub fn close(&mut self, now: Instant, code: CloseCode, reason: &str) {
        match self.state {
            State::Open => self.start_close(now, code, reason, CloseReason::LocalClose { code }),
            State::Closing(_) | State::Closed => {}
            _ => {
                self.clear_output();
                self.finish(CloseReason::LocalClose { code });
            }
        }
    }

    /// Sends a close frame and waits for the peer's answer, bounded by the close timeout.
    pub(super) fn start_close(
        &mut self,
        now: Instant,
        code: CloseCode,
        text: &str,
        reason: CloseReason,
    ) {
        if matches!(self.state, State::Closing(_) | State::Closed) {
            return;
        }
        self.write_close(code, text);
        self.timers.stop_all();
        self.timers
            .set(Timer::Close, now + self.config.close_timeout);
        self.state = State::Closing(Box::new(reason));
    }

    /// Sends a close frame (it may never arrive) and ends the connection at once: the peer is
    /// considered gone.
    pub(super) fn abort_with_close(&mut self, reason: CloseReason) {
        if matches!(self.state, State::Closed) {
            return;
        }
        if matches!(self.state, State::Open) {
            self.write_close(CloseCode::GOING_AWAY, "");
        }
        self.finish(reason);
    }

    /// RFC 6455 §7.1.7: the peer broke the protocol; send our close frame and end at once.
    pub(super) fn fail_connection(&mut self, error: ocpp_frame::ProtocolError) {
        if matches!(self.state, State::Open) {
            self.write_close(error.close_code(), "");
        }
        self.finish(CloseReason::ProtocolError(error));
    }

    pub(super) fn on_close_frame(&mut self, frame: Option<CloseFrame>) {
        match &self.state {
            State::Closing(reason) => {
                // The peer answered our close.
                let reason = (**reason).clone();
                self.finish(reason);
            }
            _ => {
                // Echo the code (RFC 6455 §5.5.1), then end.
                let key = self.mask_key();
                let close = frame.as_ref().map(|frame| (frame.code, ""));
                // A code the peer could send is one we may echo; otherwise send 1000.
                if self
                    .encoder
                    .encode_close(close, key, self.exchange.out())
                    .is_err()
                {
                    self.write_close(CloseCode::NORMAL, "");
                }
                let (code, reason) = match frame {
                    Some(frame) => (Some(frame.code), frame.reason.as_str().to_owned()),
                    None => (None, String::new()),
                };
                self.finish(CloseReason::PeerClosed { code, reason });
            }
        }
    }

    /// Writes a close frame with `code` (1000 instead of a code that may not be sent) and
    /// `text` cut to fit (RFC 6455 §5.5.1).
    fn write_close(&mut self, code: CloseCode, text: &str) {
        let code = if code.is_valid_on_wire() {
            code
        } else {
            CloseCode::NORMAL
        };
        let key = self.mask_key();
        let close = Some((code, truncate_close_reason(text)));
        // Cannot fail: the code may be sent, the reason fits and the key matches the role.
        let _ = self.encoder.encode_close(close, key, self.exchange.out());
    }

    /// Ends the connection: stops every timer and queues the final event with what was left
    /// unanswered.
    pub(super) fn finish(&mut self, reason: CloseReason) {
        if matches!(self.state, State::Closed) {
            return;
        }
        self.state = State::Closed;
        self.timers.stop_all();
        let mut unanswered_incoming = Vec::new();
        unanswered_incoming.extend(self.exchange.take_incoming());
        let (queued, held) = self.exchange.take_waiting();
        for held in held {
            unanswered_incoming.extend(held.id().cloned());
        }
        let mut unanswered_outgoing = Vec::new();
        if let Some(call) = self.exchange.take_outgoing() {
            unanswered_outgoing.push(UnansweredCall {
                id: call.id,
                request: call.request,
                sent: true,
                caller: call.caller,
            });
        }
        for call in queued {
            unanswered_outgoing.push(UnansweredCall {
                id: call.id,
                request: call.request,
                sent: false,
                caller: call.caller,
            });
        }
        self.push_event(Event::Closed(Box::new(Closed {
            reason,
            unanswered_incoming,
            unanswered_outgoing,
        })));
    }
}
