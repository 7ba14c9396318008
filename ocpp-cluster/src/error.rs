//! Errors of the cluster API.

use std::time::Duration;

/// What went wrong talking to Redis or setting the cluster up.
#[derive(Debug, Clone, thiserror::Error)]
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
    /// A Redis call did not answer within its bound: the Redis timeout, plus the time the
    /// node itself was stalled meanwhile (its timers ran late), at most
    /// [`ClusterConfig::redis_timeout_most`](crate::ClusterConfig::redis_timeout_most).
    #[error(
        "redis did not answer within {waited:?} (the node itself stalled for {stalled:?} of it)"
    )]
    RedisTimeout {
        /// How long the call waited.
        waited: Duration,
        /// How much of that wait the node's runtime ran late (given back to the call).
        stalled: Duration,
    },
    /// Redis answered something this protocol does not produce.
    #[error("unexpected answer from redis: {0}")]
    Protocol(String),
    /// The node stopped (its [`Cluster`](crate::Cluster) was dropped) before a claim or
    /// release queued for Redis was sent.
    #[error("the cluster node stopped")]
    Stopped,
    /// The cluster's background thread (the non-async bridge) could not be started.
    #[error("could not start the cluster thread: {0}")]
    Thread(String),
}

impl ClusterError {
    /// Whether Redis did not answer in time: the bound of this crate
    /// ([`ClusterError::RedisTimeout`]) or the `redis` crate's own response timeout. The call
    /// may still run in Redis.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ocpp_cluster::ClusterError;
    /// let waited = Duration::from_millis(500);
    /// let stalled = Duration::ZERO;
    /// assert!(ClusterError::RedisTimeout { waited, stalled }.is_timeout());
    /// assert!(!ClusterError::Config("empty node id".into()).is_timeout());
    /// ```
    pub fn is_timeout(&self) -> bool {
        match self {
            ClusterError::RedisTimeout { .. } => true,
            ClusterError::Redis(e) => e.is_timeout(),
            _ => false,
        }
    }
}
