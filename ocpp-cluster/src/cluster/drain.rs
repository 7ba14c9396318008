//! Leaving the cluster: the wait for releases still in flight, and the drain that releases
//! every claim of this node and removes its record.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{lock, ClusterShared};
use crate::ClusterError;

/// How long a drain waits for the releases in flight (those of connections that closed just
/// before the shutdown).
const RELEASES_WAIT: Duration = Duration::from_secs(1);

impl ClusterShared {
    /// Waits until no release is in flight, at most [`RELEASES_WAIT`].
    pub(super) async fn releases_done(&self) {
        let deadline = tokio::time::Instant::now() + RELEASES_WAIT;
        loop {
            let done = self.releases_done.notified();
            tokio::pin!(done);
            done.as_mut().enable();
            if self.releases.load(Ordering::Acquire) == 0 {
                return;
            }
            if tokio::time::timeout_at(deadline, done).await.is_err() {
                tracing::warn!("claims still being released when leaving the cluster");
                return;
            }
        }
    }

    pub(super) async fn drain(&self) -> Result<usize, ClusterError> {
        let _round = self.round.lock().await;
        self.draining.store(true, Ordering::Release);
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
