//! Typed errors: what a call, a SEND or the server can fail with.

use ocpp_server_core::ErrorCode;

/// Why [`ChargePoint::call`](crate::ChargePoint::call) (or `call_raw`,
/// [`ChargePoints::call`](crate::ChargePoints::call)) did not return a result: exactly one of
/// these happened.
///
/// ```no_run
/// # async fn example(cp: ocpp_tokio::ChargePoint) {
/// use ocpp_tokio::{v1_6, CallError};
/// match cp.call(v1_6::ResetRequest::new(v1_6::ResetType::Soft)).await {
///     Ok(response) => println!("reset: {:?}", response.status),
///     Err(CallError::CallError { code, description, .. }) => println!("{code:?}: {description}"),
///     Err(CallError::Timeout | CallError::Disconnected) => println!("no answer; retry later"),
///     Err(other) => println!("not sent: {other}"),
/// }
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The charge point is not connected (never was, closed, or replaced by a newer
    /// connection): the CALL was not sent.
    #[error("the charge point is not connected")]
    NotConnected,
    /// The connection's queue of CALLs is full
    /// ([`ConnectionConfig::max_queued_calls`](ocpp_server_core::ConnectionConfig::max_queued_calls)):
    /// the CALL was not sent; retry later.
    #[error("the charge point's call queue is full")]
    Refused,
    /// The charge point answered with a CALLERROR.
    #[error("CALLERROR {code:?}: {description}")]
    CallError {
        /// The error code (any version's spelling, read by meaning).
        code: ErrorCode,
        /// The description.
        description: String,
        /// The details object, as JSON text (`{}` when there are none).
        details: String,
    },
    /// No answer within the call timeout.
    #[error("no answer within the call timeout")]
    Timeout,
    /// The connection ended after the CALL was queued or sent, before its answer.
    #[error("the connection ended before the answer")]
    Disconnected,
    /// The CALLRESULT did not decode as the action's response (on OCPP 2.1 the charge point
    /// was sent a CALLRESULTERROR).
    #[error("the answer does not decode: {description}")]
    InvalidResponse {
        /// What was wrong.
        description: String,
    },
    /// The request is of another OCPP version than the one the connection negotiated.
    #[error("the request is of another OCPP version than the connection's")]
    WrongVersion,
    /// Through a cluster (feature `redis`): the charge point is held by another node that
    /// cannot be reached (its node record expired, nobody reads its inbox), or Redis is down;
    /// the CALL was not delivered.
    #[error("the node holding the charge point cannot be reached")]
    OwnerUnreachable,
}

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
    /// Too many commands wait for the connection's task.
    #[error("the charge point's command queue is full")]
    Refused,
}

/// Why the server could not start or serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// Binding or reading the listening socket failed.
    #[error("listening socket: {0}")]
    Io(#[from] std::io::Error),
}
