//! The node's liveness record: `announce.lua` every announcement interval (PROTOCOL.md 4.6),
//! and on Redis Cluster the look at the masters that precedes it.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{lock, millis, ClusterShared};
use crate::ClusterError;

impl ClusterShared {
    /// Every announcement interval: rewrites the node record (`announce.lua`, PROTOCOL.md
    /// 4.6), and runs a refresh round at once when Redis's `since` is not the one this node
    /// registered its claims under (Redis lost its data, or a failover).
    pub(super) async fn announce_loop(self: Arc<Self>) {
        let interval = self.config.announce_interval();
        loop {
            if !self.draining.load(Ordering::Acquire) {
                self.watch_masters().await;
                match self.announce().await {
                    Ok(since) => {
                        if lock(&self.synced).as_deref() != Some(since.as_str()) {
                            self.refresh_now.notify_one();
                        }
                    }
                    Err(e) => {
                        tracing::debug!(node = %self.config.node_id, error = %e, "announcement failed")
                    }
                }
            }
            tokio::time::sleep(interval).await;
        }
    }

    /// On Redis Cluster, before each announcement: when a master with other data serves
    /// ([`RedisLink::new_master`](crate::link::RedisLink::new_master): a failover, a restart
    /// without data), runs `failover.lua` on the node-level slot, as a node that follows a
    /// Sentinel failover does: a missing claim reads as unknown, not as connected nowhere,
    /// until every node has registered its claims again, which the announcement that follows
    /// starts (PROTOCOL.md 1.2).
    async fn watch_masters(&self) {
        match self.bounded(self.redis.new_master()).await {
            Ok(false) => {}
            Ok(true) => {
                tracing::warn!(
                    node = %self.config.node_id,
                    "a Redis Cluster master with other data serves: registering every claim again"
                );
                let mut redis = self.redis.clone();
                let marked = self
                    .bounded(
                        self.scripts
                            .failover
                            .key(self.config.since_key())
                            .invoke_async::<i64>(&mut redis),
                    )
                    .await;
                if let Err(e) = marked {
                    tracing::warn!(node = %self.config.node_id, error = %e, "failover.lua failed");
                }
            }
            Err(e) => {
                tracing::debug!(node = %self.config.node_id, error = %e, "no look at the masters")
            }
        }
    }

    /// Runs `announce.lua`: this node's record lives another node TTL, with the `since` its
    /// claims are all registered under. Returns Redis's `since`.
    pub(super) async fn announce(&self) -> Result<String, ClusterError> {
        let config = &self.config;
        let synced = lock(&self.synced).clone().unwrap_or_default();
        let mut redis = self.redis.clone();
        self.bounded(
            self.scripts
                .announce
                .key(format!("{}{}", config.node_prefix(), config.node_id))
                .key(config.since_key())
                .key(config.nodes_key())
                .arg(&config.node_id)
                .arg(millis(config.node_ttl))
                .arg(&config.address)
                .arg(self.started_ms)
                .arg(&self.instance)
                .arg(synced)
                .invoke_async(&mut redis),
        )
        .await
    }
}
