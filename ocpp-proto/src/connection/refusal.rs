//! What `call` and `send` hand back when they refuse, and why.

/// Why [`Connection::call`](super::Connection::call) or [`Connection::send`](super::Connection::send) refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RefusalReason {
    /// The connection is not open (still in the handshake, closing or closed).
    #[error("the connection is not open")]
    NotOpen,
    /// The payload belongs to another OCPP version than the one negotiated.
    #[error("the payload is of another OCPP version than the connection's")]
    WrongVersion,
    /// `send` only: the unsent output is over
    /// [`ConnectionConfig::max_outbound_bytes`](crate::ConnectionConfig::max_outbound_bytes);
    /// write the output out and try again.
    #[error("the outbound buffer is full")]
    Backpressure,
    /// `call` only: as many CALLs are queued as the configuration allows; wait for a
    /// `CallCompleted`.
    #[error("the call queue is full")]
    QueueFull,
    /// The payload did not serialize as a JSON object.
    #[error("the payload does not serialize to a JSON object")]
    Serialize,
    /// SEND exists only in OCPP 2.1.
    #[error("SEND needs OCPP 2.1")]
    SendNeedsV21,
    /// `call_with_deadline` only: the deadline is not after `now`.
    #[error("the deadline has passed")]
    DeadlinePassed,
}

/// A message handed back, with the reason.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{reason}")]
pub struct Refused<T> {
    /// Why.
    pub reason: RefusalReason,
    /// The message, to retry or to fail.
    pub message: T,
}

pub(super) fn refuse<T>(reason: RefusalReason, message: T) -> Refused<T> {
    Refused { reason, message }
}
