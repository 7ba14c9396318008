//! What a connection tells the application.

use ocpp_frame::handshake::BasicCredentials;
use ocpp_frame::{CloseCode, ProtocolError};
use ocpp_messages::envelope::MessageId;
use ocpp_messages::error_code::ErrorCode;
use ocpp_messages::version::OcppVersion;

use crate::{CallFailure, CallOutcome, ChargePointIdentity, Request};

/// Something the application must know or act on; drain them with
/// [`Connection::poll_event`](crate::Connection::poll_event).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event<C = ()> {
    /// CSMS side: a charge point asks to connect. Decide with
    /// [`Connection::accept`](crate::Connection::accept) or
    /// [`Connection::reject`](crate::Connection::reject) (401 for bad credentials, 404 for an
    /// unknown identity) before the handshake deadline.
    UpgradeRequested(Box<IncomingUpgrade>),
    /// The WebSocket is open and the OCPP version negotiated.
    Connected {
        /// The version both ends speak.
        version: OcppVersion,
    },
    /// A CALL from the peer. Answer it exactly once with
    /// [`Connection::answer`](crate::Connection::answer) (never refused for back-pressure); the next CALL of the peer is held back until then, so answers leave in
    /// the order the CALLs came. (A peer that pipelines more CALLs than
    /// [`ConnectionConfig::max_held_calls`](crate::ConnectionConfig::max_held_calls) gets a
    /// CALLERROR for each one past the limit at once.)
    Call {
        /// The CALL's id, to answer it.
        id: MessageId<'static>,
        /// The decoded, schema-checked payload.
        request: Request,
    },
    /// A SEND from the peer (OCPP 2.1): never answered.
    Send {
        /// The SEND's id.
        id: MessageId<'static>,
        /// The decoded payload.
        request: Request,
    },
    /// Our CALL ended: answered (`Ok`), or a CALLERROR, a timeout, an answer that does not
    /// decode, a request that does not serialise (`Err`).
    CallCompleted {
        /// The id [`Connection::call`](crate::Connection::call) returned.
        id: MessageId<'static>,
        /// The CALL's action.
        action: &'static str,
        /// How it ended.
        outcome: CallOutcome,
        /// Who waits for it: what was given to
        /// [`Connection::call_for`](crate::Connection::call_for) (`()` for
        /// [`Connection::call`](crate::Connection::call)).
        caller: C,
    },
    /// A CALLRESULT or CALLERROR whose id matches no CALL of ours (OCPP-J: not answered; the
    /// connection goes on).
    UnmatchedResponse {
        /// The id it carried.
        id: MessageId<'static>,
    },
    /// OCPP 2.1: the peer could not process our CALLRESULT with this id.
    CallResultError {
        /// The id of our CALLRESULT.
        id: MessageId<'static>,
        /// The error code.
        code: ErrorCode,
        /// The description.
        description: String,
    },
    /// Relay mode ([`ConnectionConfig::relay_text`](crate::ConnectionConfig::relay_text)): a
    /// text message of the peer, exactly as it arrived (not parsed, not answered).
    Text(String),
    /// The connection is over: the last event. Write out what
    /// [`Connection::pending_transmit`](crate::Connection::pending_transmit) still has, then close
    /// the socket.
    Closed(Box<Closed<C>>),
}

/// A charge point's incoming upgrade request, as the CSMS sees it before deciding to accept or
/// reject it (the HTTP request itself is [`ocpp_frame::handshake::UpgradeRequest`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct IncomingUpgrade {
    /// The identity from the last path segment, percent-decoded.
    pub identity: ChargePointIdentity,
    /// The version the server will speak if it accepts; `None` if no offered subprotocol is
    /// supported (accepting then completes the handshake and closes, as OCPP-J asks).
    pub version: Option<OcppVersion>,
    /// The subprotocols offered, in the client's order.
    pub offered_subprotocols: Vec<String>,
    /// `Authorization: Basic` credentials (security profiles 1 and 2), if sent.
    pub credentials: Option<BasicCredentials>,
    /// The raw request path (not percent-decoded).
    pub path: String,
    /// The raw query, without `?`.
    pub query: Option<String>,
}

/// Why and how a connection ended, and what it leaves undone.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Closed<C = ()> {
    /// Why it ended.
    pub reason: CloseReason,
    /// Peer CALLs that were never answered (ids, in arrival order): delivered to the
    /// application, or held behind one that was.
    pub unanswered_incoming: Vec<MessageId<'static>>,
    /// Our CALLs that never got an outcome (in flight, then queued), to retry or fail.
    pub unanswered_outgoing: Vec<UnansweredCall<C>>,
}

impl<C> Closed<C> {
    /// Hands each CALL left unanswered to `settle` (the call, whose
    /// [`failure`](UnansweredCall::failure) is its outcome, and its caller) and keeps what
    /// `settle` returns in the caller's place: a driver ends each waiting caller here and
    /// passes the rest on (`Closed<()>`, what an application's close handler sees).
    ///
    /// ```
    /// use ocpp_proto::{CallFailure, Closed, Event};
    ///
    /// fn on_closed(closed: Box<Closed<std::sync::mpsc::Sender<CallFailure>>>) -> Closed {
    ///     closed.settle_callers(|call, reply| {
    ///         let _ = reply.send(call.failure());
    ///     })
    /// }
    /// ```
    pub fn settle_callers<D>(self, mut settle: impl FnMut(&UnansweredCall, C) -> D) -> Closed<D> {
        Closed {
            reason: self.reason,
            unanswered_incoming: self.unanswered_incoming,
            unanswered_outgoing: self
                .unanswered_outgoing
                .into_iter()
                .map(|call| {
                    let (plain, caller) = call.take_caller();
                    let caller = settle(&plain, caller);
                    UnansweredCall {
                        id: plain.id,
                        request: plain.request,
                        sent: plain.sent,
                        caller,
                    }
                })
                .collect(),
        }
    }
}

/// A CALL of ours left without an outcome when the connection ended.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct UnansweredCall<C = ()> {
    /// Its id.
    pub id: MessageId<'static>,
    /// Its request, to send again on the next connection.
    pub request: Request,
    /// Whether it was written (it was in flight) or still queued behind another one.
    pub sent: bool,
    /// Who waits for it (as in [`Event::CallCompleted`]).
    pub caller: C,
}

impl<C> UnansweredCall<C> {
    /// The call without its caller, and the caller.
    fn take_caller(self) -> (UnansweredCall, C) {
        let plain = UnansweredCall {
            id: self.id,
            request: self.request,
            sent: self.sent,
            caller: (),
        };
        (plain, self.caller)
    }

    /// Its outcome: [`CallFailure::Disconnected`] when it was sent (it may have run),
    /// [`CallFailure::ClosedBeforeSent`] when it was still queued.
    pub fn failure(&self) -> CallFailure {
        if self.sent {
            CallFailure::Disconnected
        } else {
            CallFailure::ClosedBeforeSent
        }
    }
}

/// Why a connection ended.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum CloseReason {
    /// The upgrade request was malformed and answered with this HTTP status.
    HandshakeFailed {
        /// The status sent.
        status: u16,
        /// What was wrong.
        description: String,
    },
    /// The application rejected the upgrade with this status.
    Rejected {
        /// The status sent.
        status: u16,
    },
    /// Charge-point side: the server refused the upgrade (e.g. 401, 404) or answered it wrongly.
    UpgradeRefused {
        /// The HTTP status, when there was one other than 101.
        status: Option<u16>,
        /// What was wrong.
        description: String,
    },
    /// The handshake did not finish in time.
    HandshakeTimeout,
    /// No OCPP version in common.
    NoCommonVersion,
    /// The peer closed with this code and reason (`None`: a close frame without a code).
    PeerClosed {
        /// The code, if any.
        code: Option<CloseCode>,
        /// The reason.
        reason: String,
    },
    /// We closed (through [`Connection::close`](crate::Connection::close)) and the peer
    /// answered or the close timeout passed.
    LocalClose {
        /// The code we sent.
        code: CloseCode,
    },
    /// The peer broke RFC 6455; we sent a close frame with `error.close_code()`.
    ProtocolError(ProtocolError),
    /// The peer broke OCPP-J in a way that ends the connection (binary frames, too many CALLs
    /// at once); we sent a close frame with this code.
    OcppViolation {
        /// The code sent.
        code: CloseCode,
        /// What was wrong.
        description: String,
    },
    /// No pong arrived in time.
    PongTimeout,
    /// Nothing arrived for the idle timeout.
    IdleTimeout,
    /// The stream ended without a close handshake (close code 1006).
    Eof,
    /// The peer stopped reading and our output passed twice the outbound limit.
    SlowPeer,
}
