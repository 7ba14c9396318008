//! Leaving the cluster: the wait for releases still in flight, and the drain that releases
//! every claim of this node and removes its record.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{lock, ClusterShared};
use crate::ClusterError;

/// How long a drain waits for the releases and registrations in flight (those of connections
/// that closed, or came, just before the shutdown).
const IN_FLIGHT_WAIT: Duration = Duration::from_secs(1);

impl ClusterShared {
    /// Waits until no release and no registration is in flight, at most [`IN_FLIGHT_WAIT`].
    async fn in_flight_done(&self) {
        let deadline = tokio::time::Instant::now() + IN_FLIGHT_WAIT;
        let done = self
            .settled_until(Some(deadline), || {
                self.releases.load(Ordering::Acquire) == 0
                    && self.registrations.load(Ordering::Acquire) == 0
            })
            .await;
        if !done {
            tracing::warn!("claims still being released or registered when leaving the cluster");
        }
    }

    /// Leaves the cluster (PROTOCOL.md 6.6). No registration begins from the start of the
    /// drain ([`ClaimTable::leave`](crate::claims::ClaimTable::leave)); those in flight are
    /// waited for, bounded, as the releases are, so that the claims they register are
    /// released with the others: a claim dropped while its `claim.lua` ran came into Redis
    /// after the drain, given back (if ever: a node that exits after its drain does not) by a
    /// release the drain did not wait for.
    pub(super) async fn drain(&self) -> Result<usize, ClusterError> {
        lock(&self.claims).leave();
        self.draining.store(true, Ordering::Release);
        self.in_flight_done().await;
        // After a round in progress.
        let _round = self.round.lock().await;
        let held = lock(&self.claims).drain();
        // In batches of the batch size (`housekeeping.rs`).
        let registered = held
            .into_iter()
            .filter_map(|(identity, epoch)| Some((identity, epoch?)))
            .collect();
        let results = self.release_all(registered).await;
        let key = format!("{}{}", self.config.node_prefix(), self.config.node_id);
        let mut pipe = redis::pipe();
        pipe.atomic()
            .del(key)
            .ignore()
            .zrem(self.config.nodes_key(), &self.config.node_id)
            .ignore();
        let mut redis = self.redis.clone();
        let deleted = self.bounded(pipe.query_async::<()>(&mut redis)).await;
        let mut released = 0;
        let mut first_error = deleted.err();
        for result in results {
            match result {
                Ok(true) => released += 1,
                Ok(false) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(released),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use futures_util::FutureExt;

    use crate::cluster::tests::{started, until};
    use crate::test_redis::RedisServer;
    use crate::ClusterConfig;

    /// A drain that meets a registration in flight waits for it (bounded, as for the releases
    /// in flight), then releases the claim it registered. Before, the drain dropped the claim
    /// while its `claim.lua` ran and returned; the claim came into Redis after, given back by
    /// a release the node, already gone, might never send: this node's claim in Redis for its
    /// TTL, a charge point found on a node that had left (`owner_unreachable`).
    #[tokio::test]
    async fn a_drain_waits_for_a_registration_in_flight_and_releases_its_claim() {
        let server = RedisServer::start();
        let (cluster, _events) = started(ClusterConfig::new(server.url(), "a")).await;
        let shared = cluster.shared();
        let a = cluster.hold("A", None);
        let mut registering = Box::pin(cluster.register("A", a));
        assert!(
            registering.as_mut().now_or_never().is_none(),
            "claim.lua queued"
        );
        let drain = tokio::spawn({
            let cluster = cluster.clone();
            async move { cluster.drain().await }
        });
        // The drain began (it drops the claims and releases them in one go once it has the
        // round lock); only then does the registration read its answer.
        until(|| shared.draining.load(Ordering::Acquire)).await;
        registering.await;
        let released = drain.await.expect("the drain").expect("drained");
        assert_eq!(
            released, 1,
            "the drain released the claim registered meanwhile"
        );
        assert_eq!(server.query("HGET ocpp:cp:A node").as_deref(), Some(""));
    }

    /// A drained node registers nothing more (PROTOCOL.md 6.6): a claim made after the drain
    /// is held locally only. Before, `claim.lua` ran for it: a claim in Redis of a node whose
    /// record is gone.
    #[tokio::test]
    async fn a_drained_node_registers_nothing_more() {
        let server = RedisServer::start();
        let (cluster, _events) = started(ClusterConfig::new(server.url(), "a")).await;
        cluster.drain().await.expect("drained");
        let claim = cluster.claim("A").await;
        assert_eq!(claim.epoch, None, "registered after the drain");
        assert_ne!(server.query("HGET ocpp:cp:A node").as_deref(), Some("a"));
    }
}
