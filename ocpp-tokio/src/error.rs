//! Typed errors: what a SEND or the server can fail with. What a CALL can come to is the
//! core's [`CallFailure`](ocpp_proto::CallFailure), the same on every path.

/// Why [`ChargePoint::send`](crate::ChargePoint::send) did not send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// The charge point is not connected.
    #[error("the charge point is not connected")]
    NotConnected,
    /// SEND needs a connection on OCPP 2.1 and a 2.1 payload.
    #[error("SEND needs OCPP 2.1")]
    NeedsV21,
    /// As many commands wait for the connection's task as its mailbox holds.
    #[error("the charge point's command queue is full")]
    QueueFull,
}

/// Why the core refused a SEND, as a handle's error. Back-pressure reads as a full queue, but
/// neither side answers it: both keep such a SEND and write it after the next write, in order.
impl From<ocpp_proto::RefusalReason> for SendError {
    fn from(reason: ocpp_proto::RefusalReason) -> Self {
        match reason {
            ocpp_proto::RefusalReason::NotOpen => SendError::NotConnected,
            ocpp_proto::RefusalReason::Backpressure => SendError::QueueFull,
            _ => SendError::NeedsV21,
        }
    }
}

/// Why the server could not start or serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// Binding or reading the listening socket failed.
    #[error("listening socket: {0}")]
    Io(#[from] std::io::Error),
}
