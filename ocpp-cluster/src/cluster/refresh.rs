//! Keeping presence true: the refresh rounds of this node's claims, its liveness record, the
//! releases still in flight, and the drain when the node leaves.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use ocpp_proto::OcppVersion;

use super::{lock, millis, parse_epoch, unix_ms, ClaimTicket, Shared, Superseded};
use crate::claims::{RefreshReply, Refreshed, Work};
use crate::ClusterError;

/// How many claims one refresh round sends to Redis at once.
const REFRESH_CONCURRENCY: usize = 64;
/// How long a drain waits for the releases in flight (those of connections that closed just
/// before the shutdown).
const RELEASES_WAIT: Duration = Duration::from_secs(1);

impl Shared {
    pub(super) async fn refresh_loop(self: Arc<Self>) {
        let interval = self.config.refresh_interval();
        loop {
            if let Err(e) = self.round().await {
                tracing::debug!(node = %self.config.node_id, error = %e, "refresh round incomplete");
            }
            tokio::select! {
                _ = tokio::time::sleep(interval) => {}
                _ = self.refresh_now.notified() => {}
            }
        }
    }

    pub(super) async fn round(&self) -> Result<Vec<Superseded>, ClusterError> {
        let _round = self.round.lock().await;
        if self.draining.load(Ordering::Acquire) {
            return Ok(Vec::new());
        }
        let now = unix_ms();
        lock(&self.seen).retain(|_, forget_at| *forget_at > now);
        // The `since` this round registers the claims under (PROTOCOL.md 6.3).
        let since = self.announce().await;
        // A claim whose claim.lua is in flight is refreshed once registered (`recheck`).
        let work = lock(&self.claims).round();
        let results: Vec<Result<Option<Superseded>, ClusterError>> =
            futures_util::stream::iter(work)
                .map(|(identity, ticket, work)| async move {
                    match work {
                        Work::Register => self.register(&identity, ticket).await.map(|_| None),
                        Work::Refresh(epoch) => self.refresh_claim(&identity, ticket, epoch).await,
                    }
                })
                .buffer_unordered(REFRESH_CONCURRENCY)
                .collect()
                .await;
        // The first call after Redis came back can fail on the old connection (which makes the
        // manager reconnect): claims registered but no node record would read as a dead node
        // until the next announcement. Announce again; `synced` waits for a round whose first
        // announcement succeeded (the announcements that follow run one at once).
        if since.is_err() {
            if let Err(e) = self.announce().await {
                tracing::debug!(node = %self.config.node_id, error = %e, "announcement failed");
            }
        }
        let mut lost = Vec::new();
        let mut first_error = None;
        for result in results {
            match result {
                Ok(Some(superseded)) => lost.push(superseded),
                Ok(None) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        match (since, first_error) {
            (Ok(since), None) => {
                // Every claim is in Redis under `since`: say so in the node record (if this
                // announcement fails, the next one says it).
                *lock(&self.synced) = Some(since.clone());
                if let Ok(now) = self.announce().await {
                    if now != since {
                        // Redis lost its data during the round: register everything again.
                        self.refresh_now.notify_one();
                    }
                }
                Ok(lost)
            }
            (Err(e), None) | (_, Some(e)) => Err(e),
        }
    }

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
    async fn announce(&self) -> Result<String, ClusterError> {
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

    pub(super) async fn refresh_claim(
        &self,
        identity: &str,
        ticket: ClaimTicket,
        epoch: u64,
    ) -> Result<Option<Superseded>, ClusterError> {
        let config = &self.config;
        let version = lock(&self.claims).version_of(identity);
        let mut redis = self.redis.clone();
        let mut refresh = self.scripts.refresh.key(config.claim_key(identity));
        refresh
            .key(self.shared_keys())
            .arg(&config.node_id)
            .arg(millis(config.claim_ttl))
            .arg(version.map(OcppVersion::subprotocol).unwrap_or(""))
            .arg(epoch)
            .arg(self.script_inbox_prefix())
            .arg(identity);
        let answer: Vec<String> = self.bounded(refresh.invoke_async(&mut redis)).await?;
        let field = |i: usize| answer.get(i).map(String::as_str).unwrap_or("");
        let reply = match field(0) {
            "held" => RefreshReply::Held(parse_epoch(field(1))?),
            "restored" => {
                let epoch = parse_epoch(field(1))?;
                tracing::info!(identity, epoch, "claim restored");
                self.notify_superseded(identity, field(2), field(3), epoch)
                    .await;
                RefreshReply::Restored(epoch)
            }
            "lost" => RefreshReply::Lost {
                node: field(1).to_owned(),
                epoch: parse_epoch(field(2)).unwrap_or(0),
            },
            other => {
                return Err(ClusterError::Protocol(format!(
                    "refresh.lua answered {other:?}"
                )))
            }
        };
        let refreshed = lock(&self.claims).refresh_done(identity, ticket, epoch, reply);
        match refreshed {
            Refreshed::Done => Ok(None),
            Refreshed::Lost(lost) => {
                self.emit(lost.clone());
                Ok(Some(lost))
            }
            Refreshed::GiveBack(epoch) => {
                // Released while refresh.lua ran, which restored it: give it back.
                let _ = self.release_epoch(identity, epoch).await;
                Ok(None)
            }
            Refreshed::Again { epoch, .. } => {
                // Redis lost the write of the claim held (a failover): a round makes it again.
                tracing::info!(identity, epoch, "claim lost by Redis: refreshing it again");
                self.refresh_now.notify_one();
                Ok(None)
            }
        }
    }

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
        let results: Vec<Result<bool, ClusterError>> = futures_util::stream::iter(held)
            .map(|(identity, epoch)| async move {
                match epoch {
                    Some(epoch) => self.release_epoch(&identity, epoch).await,
                    None => Ok(false),
                }
            })
            .buffer_unordered(REFRESH_CONCURRENCY)
            .collect()
            .await;
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
