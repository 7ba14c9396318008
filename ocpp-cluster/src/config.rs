//! The configuration of one node.

use std::time::Duration;

use crate::ClusterError;

/// How one node joins the cluster. Every node of a cluster uses the same `key_prefix` and the
/// same Redis; node ids are unique.
///
/// ```
/// use std::time::Duration;
/// use ocpp_cluster::ClusterConfig;
///
/// let config = ClusterConfig::new("redis://127.0.0.1:6379/", "csms-a")
///     .with_address("http://10.0.0.5:8080")
///     .with_claim_ttl(Duration::from_secs(90));
/// assert_eq!(config.refresh_interval(), Duration::from_secs(30));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClusterConfig {
    /// The Redis URL (`redis://host:port/db`).
    pub redis_url: String,
    /// This node's id, unique in the cluster (e.g. the host name).
    pub node_id: String,
    /// An address other nodes or operators can reach this node at (informative: stored in the
    /// node record, not used for commands, which travel through Redis).
    pub address: String,
    /// The prefix of every key and channel (`ocpp` by default).
    pub key_prefix: String,
    /// How long a claim lives without a refresh (90 s by default).
    pub claim_ttl: Duration,
    /// How long the node record lives without a refresh (90 s by default).
    pub node_ttl: Duration,
    /// How often claims and the node record are refreshed; `None`: a third of the shorter TTL.
    pub refresh: Option<Duration>,
    /// The bound on every single Redis call (500 ms by default); a call that takes longer
    /// counts as Redis being down.
    pub redis_timeout: Duration,
}

impl ClusterConfig {
    /// A node `node_id` on the Redis at `redis_url`, with the default TTLs.
    pub fn new(redis_url: impl Into<String>, node_id: impl Into<String>) -> Self {
        Self {
            redis_url: redis_url.into(),
            node_id: node_id.into(),
            address: String::new(),
            key_prefix: "ocpp".to_owned(),
            claim_ttl: Duration::from_secs(90),
            node_ttl: Duration::from_secs(90),
            refresh: None,
            redis_timeout: Duration::from_millis(500),
        }
    }

    /// Sets the informative address stored in the node record.
    pub fn with_address(mut self, address: impl Into<String>) -> Self {
        self.address = address.into();
        self
    }

    /// Sets the key and channel prefix.
    pub fn with_key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.key_prefix = prefix.into();
        self
    }

    /// Sets the claim TTL.
    pub fn with_claim_ttl(mut self, ttl: Duration) -> Self {
        self.claim_ttl = ttl;
        self
    }

    /// Sets the node record TTL.
    pub fn with_node_ttl(mut self, ttl: Duration) -> Self {
        self.node_ttl = ttl;
        self
    }

    /// Sets the refresh interval (must be shorter than both TTLs).
    pub fn with_refresh_interval(mut self, interval: Duration) -> Self {
        self.refresh = Some(interval);
        self
    }

    /// Sets the bound on every Redis call.
    pub fn with_redis_timeout(mut self, timeout: Duration) -> Self {
        self.redis_timeout = timeout;
        self
    }

    /// The refresh interval in force.
    pub fn refresh_interval(&self) -> Duration {
        self.refresh
            .unwrap_or_else(|| self.claim_ttl.min(self.node_ttl) / 3)
    }

    pub(crate) fn validate(&self) -> Result<(), ClusterError> {
        let bad = |why: &str| Err(ClusterError::Config(why.to_owned()));
        if self.node_id.is_empty() {
            return bad("the node id is empty");
        }
        if self.key_prefix.is_empty() {
            return bad("the key prefix is empty");
        }
        if self.claim_ttl < Duration::from_millis(10) || self.node_ttl < Duration::from_millis(10) {
            return bad("a TTL is under 10 ms");
        }
        let refresh = self.refresh_interval();
        if refresh.is_zero() || refresh >= self.claim_ttl.min(self.node_ttl) {
            return bad("the refresh interval must be above zero and below both TTLs");
        }
        if self.redis_timeout.is_zero() {
            return bad("the Redis timeout is zero");
        }
        Ok(())
    }

    pub(crate) fn claim_key(&self, identity: &str) -> String {
        format!("{}:cp:{identity}", self.key_prefix)
    }
    pub(crate) fn epoch_key(&self) -> String {
        format!("{}:epoch", self.key_prefix)
    }
    pub(crate) fn node_prefix(&self) -> String {
        format!("{}:node:", self.key_prefix)
    }
    pub(crate) fn inbox_prefix(&self) -> String {
        format!("{}:inbox:", self.key_prefix)
    }
}
