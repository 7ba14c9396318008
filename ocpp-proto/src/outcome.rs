//! What a CALL of ours came to, and whether it may have reached the peer: one vocabulary for
//! every driver (mio, tokio, the charge-point side) and every path (local, routed).

use ocpp_messages::error_code::ErrorCode;

use crate::{RefusalReason, Response};

/// How one of our CALLs ended: the peer's CALLRESULT, decoded with the CALL's action, or why
/// there is none.
pub type CallOutcome = Result<Response, CallFailure>;

/// Why a CALL of ours got no result: exactly one of these happened. Each says whether the CALL
/// may have reached the peer ([`CallFailure::delivery`]), so that a caller knows when sending
/// it again is safe.
///
/// ```
/// use ocpp_proto::{CallFailure, Delivery};
/// assert_eq!(CallFailure::NotConnected.delivery(), Delivery::NotSent);
/// assert_eq!(CallFailure::Timeout.delivery(), Delivery::Unknown);
/// assert!(CallFailure::Timeout.may_have_reached_peer());
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CallFailure {
    /// The peer is not connected (never was, closed, or replaced by a newer connection): the
    /// CALL was not sent.
    #[error("the charge point is not connected")]
    NotConnected,
    /// As many CALLs wait for this connection as its limits allow
    /// ([`ConnectionConfig::max_queued_calls`](crate::ConnectionConfig::max_queued_calls)): the
    /// CALL was not sent; retry later.
    #[error("the call queue is full")]
    QueueFull,
    /// The request is of another OCPP version than the connection's: the CALL was not sent.
    #[error("the request is of another OCPP version than the connection's")]
    WrongVersion,
    /// The request could not be sent as it is (it does not serialise as a JSON object): the
    /// CALL was not sent.
    #[error("the request cannot be sent: {description}")]
    InvalidRequest {
        /// What was wrong.
        description: String,
    },
    /// The connection ended while the CALL waited behind another one: it was never written.
    #[error("the connection ended before the CALL was sent")]
    ClosedBeforeSent,
    /// The CALL's deadline ([`Connection::call_with_deadline`](crate::Connection::call_with_deadline))
    /// passed while it waited behind another one: it was never written, and never will be.
    #[error("the deadline passed before the CALL could be sent")]
    DeadlinePassed,
    /// A cluster's node holding the charge point could not be reached (or Redis is down): the
    /// CALL was not delivered.
    #[error("the node holding the charge point cannot be reached")]
    OwnerUnreachable,
    /// No answer within the call timeout: the CALL was sent and may have run.
    #[error("no answer within the call timeout")]
    Timeout,
    /// The connection ended after the CALL was sent, before its answer: it may have run.
    #[error("the connection ended before the answer")]
    Disconnected,
    /// The peer answered with a CALLERROR.
    #[error("CALLERROR {code:?}: {description}")]
    ErrorResponse {
        /// The error code (any version's spelling, read by meaning).
        code: ErrorCode,
        /// The description.
        description: String,
        /// The details object, as JSON text (`{}` when there are none).
        details: String,
    },
    /// The peer's CALLRESULT did not decode as the action's response (on OCPP 2.1 it was sent
    /// a CALLRESULTERROR).
    #[error("the answer does not decode: {description}")]
    InvalidResponse {
        /// What was wrong.
        description: String,
    },
}

/// Whether a CALL that got no result may have reached the peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Delivery {
    /// The CALL never left: sending it again cannot make the peer act twice.
    NotSent,
    /// The CALL was written and no answer came: it may have reached the peer and run. Sending
    /// it again is safe only for an action that is safe to repeat.
    Unknown,
    /// The peer answered (a CALLERROR, or a CALLRESULT that does not decode).
    Answered,
}

impl CallFailure {
    /// Whether the CALL may have reached the peer.
    pub fn delivery(&self) -> Delivery {
        match self {
            CallFailure::NotConnected
            | CallFailure::QueueFull
            | CallFailure::WrongVersion
            | CallFailure::InvalidRequest { .. }
            | CallFailure::ClosedBeforeSent
            | CallFailure::DeadlinePassed
            | CallFailure::OwnerUnreachable => Delivery::NotSent,
            CallFailure::Timeout | CallFailure::Disconnected => Delivery::Unknown,
            CallFailure::ErrorResponse { .. } | CallFailure::InvalidResponse { .. } => {
                Delivery::Answered
            }
        }
    }

    /// Whether the CALL may have reached the peer (anything but [`Delivery::NotSent`]).
    pub fn may_have_reached_peer(&self) -> bool {
        self.delivery() != Delivery::NotSent
    }

    /// The failure's name, in `snake_case`: how it is spelled on the cluster's wire
    /// (`ocpp-cluster`'s PROTOCOL.md) and in an admin API's answers.
    ///
    /// ```
    /// use ocpp_proto::CallFailure;
    /// assert_eq!(CallFailure::DeadlinePassed.name(), "deadline_passed");
    /// assert_eq!(CallFailure::from_name("deadline_passed"), Some(CallFailure::DeadlinePassed));
    /// ```
    pub fn name(&self) -> &'static str {
        match self {
            CallFailure::NotConnected => "not_connected",
            CallFailure::QueueFull => "queue_full",
            CallFailure::WrongVersion => "wrong_version",
            CallFailure::InvalidRequest { .. } => "invalid_request",
            CallFailure::ClosedBeforeSent => "closed_before_sent",
            CallFailure::DeadlinePassed => "deadline_passed",
            CallFailure::OwnerUnreachable => "owner_unreachable",
            CallFailure::Timeout => "timeout",
            CallFailure::Disconnected => "disconnected",
            CallFailure::ErrorResponse { .. } => "call_error",
            CallFailure::InvalidResponse { .. } => "invalid_response",
        }
    }

    /// The failure of that [`name`](CallFailure::name), for those without fields (the ones with
    /// a description or an error code are built by whoever has them); `None` otherwise.
    pub fn from_name(name: &str) -> Option<CallFailure> {
        Some(match name {
            "not_connected" => CallFailure::NotConnected,
            "queue_full" => CallFailure::QueueFull,
            "wrong_version" => CallFailure::WrongVersion,
            "closed_before_sent" => CallFailure::ClosedBeforeSent,
            "deadline_passed" => CallFailure::DeadlinePassed,
            "owner_unreachable" => CallFailure::OwnerUnreachable,
            "timeout" => CallFailure::Timeout,
            "disconnected" => CallFailure::Disconnected,
            _ => return None,
        })
    }
}

impl Delivery {
    /// `not_sent`, `unknown` or `answered`: how an admin API spells it.
    pub fn name(self) -> &'static str {
        match self {
            Delivery::NotSent => "not_sent",
            Delivery::Unknown => "unknown",
            Delivery::Answered => "answered",
        }
    }
}

/// Why [`Connection::call`](crate::Connection::call) refused a CALL, as its outcome (never
/// sent).
impl From<RefusalReason> for CallFailure {
    fn from(reason: RefusalReason) -> Self {
        match reason {
            RefusalReason::WrongVersion => CallFailure::WrongVersion,
            RefusalReason::QueueFull | RefusalReason::Backpressure => CallFailure::QueueFull,
            RefusalReason::NotOpen => CallFailure::NotConnected,
            RefusalReason::DeadlinePassed => CallFailure::DeadlinePassed,
            other => CallFailure::InvalidRequest {
                description: other.to_string(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_failure() -> Vec<CallFailure> {
        vec![
            CallFailure::NotConnected,
            CallFailure::QueueFull,
            CallFailure::WrongVersion,
            CallFailure::InvalidRequest {
                description: "x".into(),
            },
            CallFailure::ClosedBeforeSent,
            CallFailure::DeadlinePassed,
            CallFailure::OwnerUnreachable,
            CallFailure::Timeout,
            CallFailure::Disconnected,
            CallFailure::ErrorResponse {
                code: ErrorCode::NotSupported,
                description: "x".into(),
                details: "{}".into(),
            },
            CallFailure::InvalidResponse {
                description: "x".into(),
            },
        ]
    }

    #[test]
    fn every_name_is_distinct_and_reads_back() {
        let failures = every_failure();
        let names: std::collections::HashSet<&str> = failures.iter().map(|f| f.name()).collect();
        assert_eq!(names.len(), failures.len());
        for failure in failures {
            if let Some(back) = CallFailure::from_name(failure.name()) {
                assert_eq!(back, failure);
            }
        }
    }
}
