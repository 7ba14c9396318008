//! Errors of the cluster API.

use std::time::Duration;

/// What went wrong talking to Redis or setting the cluster up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// The configuration cannot work (empty node id, a TTL of zero, a bad Redis URL).
    #[error("invalid cluster configuration: {0}")]
    Config(String),
    /// [`Cluster::start`](crate::Cluster::start) was called outside a tokio runtime.
    #[error("the cluster must be started inside a tokio runtime")]
    NoRuntime,
    /// A Redis call failed (connection refused, reset, a script error).
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// A Redis call did not answer within the configured bound.
    #[error("redis did not answer within {0:?}")]
    RedisTimeout(Duration),
    /// Redis answered something this protocol does not produce.
    #[error("unexpected answer from redis: {0}")]
    Protocol(String),
    /// The cluster's background thread (the non-async bridge) could not be started.
    #[error("could not start the cluster thread: {0}")]
    Thread(String),
}

/// Why a command did not produce a CALLRESULT. Each case maps to one HTTP status for an
/// admin API ([`CallFailure::http_status`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallFailure {
    /// The charge point answered with a CALLERROR.
    #[error("CALLERROR {code}: {description}")]
    CallError {
        /// The OCPP error code (`NotImplemented`, `InternalError`, ...).
        code: String,
        /// The error description.
        description: String,
        /// The error details, JSON text (`{}` when there were none).
        details: String,
    },
    /// No live claim anywhere: the charge point is connected to no node.
    #[error("the charge point is not connected")]
    NotConnected,
    /// A claim exists but its node cannot be reached: its node record expired, nobody reads its
    /// inbox, or Redis is down.
    #[error("the node holding the charge point cannot be reached")]
    OwnerUnreachable,
    /// No answer within the call timeout (the charge point, or the way back, was too slow), or
    /// the command reached its node past its deadline and was dropped unexecuted.
    #[error("no answer within the call timeout")]
    Timeout,
}

impl CallFailure {
    /// The HTTP status an admin API answers with: 502 for a CALLERROR (the charge point
    /// refused), 404, 503, 504.
    pub fn http_status(&self) -> u16 {
        match self {
            CallFailure::CallError { .. } => 502,
            CallFailure::NotConnected => 404,
            CallFailure::OwnerUnreachable => 503,
            CallFailure::Timeout => 504,
        }
    }
}
