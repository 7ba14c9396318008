//! Keeping presence true: the refresh rounds of this node's claims, in batches of
//! `refresh.lua` (PROTOCOL.md 6.3). The liveness record is in `announce.rs`, the drain in
//! `drain.rs`.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use ocpp_proto::OcppVersion;

use super::{
    answers_of, lock, millis, parse_epoch, unix_ms, ClaimTicket, ClusterShared, LostClaim,
};
use crate::claims::{RefreshReply, Refreshed, Work};
use crate::link::Master;
use crate::ClusterError;

/// How many answers of one refresh batch that need a call of their own (or claims refreshed
/// by a call of their own) run at once.
const REFRESH_CONCURRENCY: usize = 64;

/// A claim a refresh round sends `refresh.lua` for.
struct ToRefresh {
    identity: String,
    ticket: ClaimTicket,
    epoch: u64,
}

/// What one pass of a Redis Cluster refresh did ([`ClusterShared::refresh_per_master`]).
#[derive(Default)]
struct Pass {
    /// Each claim's outcome (or one error for a batch that timed out).
    results: Vec<Result<Option<LostClaim>, ClusterError>>,
    /// The claims of batches that failed on a redirection, for the next pass.
    redirected: Vec<ToRefresh>,
    /// Whether the slot map proved stale (or a master stalled): the next round looks again.
    stale: bool,
}

impl Pass {
    /// A pass that refreshed every claim by a call of its own (no slot map).
    fn alone(results: Vec<Result<Option<LostClaim>, ClusterError>>) -> Pass {
        Pass {
            results,
            ..Pass::default()
        }
    }

    /// Adds what `other` did to this pass.
    fn absorb(&mut self, other: Pass) {
        self.results.extend(other.results);
        self.redirected.extend(other.redirected);
        self.stale |= other.stale;
    }
}

/// Whether Redis did not know the script (`NOSCRIPT`: its script cache is empty).
fn is_noscript(e: &redis::RedisError) -> bool {
    e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript)
}

/// The wait before the next refresh round: `interval`, 10 % either way at random. Nodes
/// started together (a deployment, a benchmark) would otherwise send their rounds together,
/// every third of the claim TTL; at a million claims on 63 nodes that is 63 pipelines of 1,000
/// scripts in one Redis at the same instant.
fn jittered(interval: Duration) -> Duration {
    interval.mul_f64(0.9 + 0.2 * fastrand::f64())
}

impl ClusterShared {
    pub(super) async fn refresh_loop(self: Arc<Self>) {
        let interval = self.config.refresh_interval();
        loop {
            if let Err(e) = self.round().await {
                tracing::debug!(node = %self.config.node_id, error = %e, "refresh round incomplete");
            }
            tokio::select! {
                _ = tokio::time::sleep(jittered(interval)) => {}
                _ = self.refresh_now.notified() => {}
            }
        }
    }

    pub(super) async fn round(&self) -> Result<Vec<LostClaim>, ClusterError> {
        let _round = self.round.lock().await;
        if self.draining.load(Ordering::Acquire) {
            return Ok(Vec::new());
        }
        let now = unix_ms();
        lock(&self.seen).retain(|_, forget_at| *forget_at > now);
        // The `since` this round registers the claims under (PROTOCOL.md 6.3).
        let since = self.announce().await;
        // A claim whose claim.lua is in flight is waited for (and refreshed once registered,
        // `recheck`).
        let mut registrations = Vec::new();
        let mut refreshes = Vec::new();
        for (identity, ticket, work) in lock(&self.claims).round() {
            match work {
                Work::Register => registrations.push((identity, ticket)),
                Work::Refresh(epoch) => refreshes.push(ToRefresh {
                    identity,
                    ticket,
                    epoch,
                }),
            }
        }
        // Claims without an epoch run claim.lua in the node's batches of claims (a batch's
        // worth at once, PROTOCOL.md 6.2.1); the others go in batches of refresh.lua, one
        // round trip each (PROTOCOL.md 6.3).
        // A registration of another's in flight is waited for at most a refresh interval: the
        // round then fails, and the next one looks again.
        let patience = Some(self.config.refresh_interval());
        let registered = futures_util::stream::iter(registrations)
            .map(|(identity, ticket)| async move {
                self.register(&identity, ticket, patience)
                    .await
                    .map(|_| None)
            })
            .buffer_unordered(self.config.refresh_batch.max(1))
            .collect::<Vec<_>>();
        let (registered, refreshed) = tokio::join!(registered, self.refresh_batches(refreshes));
        let results = registered.into_iter().chain(refreshed);
        // The first call after Redis came back can fail on the old connection (which makes the
        // manager reconnect): claims registered but no node record would read as a dead node
        // until the next announcement. Announce again; `synced` waits for a round whose first
        // announcement succeeded (the announcements that follow run one at once).
        if since.is_err()
            && let Err(e) = self.announce().await
        {
            tracing::debug!(node = %self.config.node_id, error = %e, "announcement failed");
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
                if let Ok(now) = self.announce().await
                    && now != since
                {
                    // Redis lost its data during the round: register everything again.
                    self.refresh_now.notify_one();
                }
                Ok(lost)
            }
            (Err(e), None) | (_, Some(e)) => Err(e),
        }
    }

    /// `refresh.lua` for one claim, as its own call (a claim registered while a round passed
    /// over it, or one whose epoch changed); a round sends them in batches
    /// ([`ClusterShared::refresh_batches`]).
    pub(super) async fn refresh_claim(
        &self,
        identity: &str,
        ticket: ClaimTicket,
        epoch: u64,
    ) -> Result<Option<LostClaim>, ClusterError> {
        let mut redis = self.redis.clone();
        let answers: Vec<Vec<String>> = self
            .bounded(
                self.refresh_call([(identity, epoch)])
                    .invoke_async(&mut redis),
            )
            .await?;
        let answer = answers_of(answers, 1, "refresh.lua")?
            .pop()
            .unwrap_or_default();
        self.refreshed(identity, ticket, epoch, answer).await
    }

    /// The `refresh.lua` call for this node's `claims` (identity, the epoch held), in one call
    /// (PROTOCOL.md 4.2): a batch on one Redis, one claim on Redis Cluster.
    fn refresh_call<'c>(
        &self,
        claims: impl IntoIterator<Item = (&'c str, u64)>,
    ) -> redis::ScriptInvocation<'_> {
        let config = &self.config;
        let mut refresh = self.scripts.refresh.prepare_invoke();
        refresh
            .arg(&config.node_id)
            .arg(millis(config.claim_ttl))
            .arg(self.script_inbox_prefix());
        {
            let table = lock(&self.claims);
            for (identity, epoch) in claims {
                let version = table.version_of(identity);
                refresh
                    .key(config.claim_key(identity))
                    .arg(epoch)
                    .arg(version.map(OcppVersion::subprotocol).unwrap_or(""))
                    .arg(identity);
            }
        }
        // `since` after the claim keys, on one Redis only: on Redis Cluster it is in another
        // slot (PROTOCOL.md 1.2).
        if !self.redis.is_cluster() {
            refresh.key(config.since_key());
        }
        refresh
    }

    /// Refreshes `claims` in batches of [`ClusterConfig::refresh_batch`](crate::ClusterConfig)
    /// (`refresh_batch`), one after the other, each one `refresh.lua` call for the whole batch
    /// (issue 38: Redis's cost of a script call is paid once per batch, not per claim): one
    /// round trip per batch. Every answer is read as [`ClusterShared::refresh_claim`] reads its
    /// own. A batch that fails as a whole (an error, or no answer within the Redis timeout) gives
    /// one error for all its claims, which stay as they are until the next round.
    ///
    /// On Redis Cluster the batches go per master, a call per claim
    /// ([`ClusterShared::refresh_per_master`]).
    async fn refresh_batches(
        &self,
        claims: Vec<ToRefresh>,
    ) -> Vec<Result<Option<LostClaim>, ClusterError>> {
        if self.redis.is_cluster() {
            return self.refresh_per_master(claims).await;
        }
        let mut results = Vec::with_capacity(claims.len());
        let mut claims = claims.into_iter();
        while let Some(batch) = self.next_batch(&mut claims) {
            match self.refresh_together(&batch).await {
                Ok(answers) => {
                    let done: Vec<_> = futures_util::stream::iter(batch.into_iter().zip(answers))
                        .map(|(claim, answer)| self.refresh_answered(claim, answer))
                        .buffer_unordered(REFRESH_CONCURRENCY)
                        .collect()
                        .await;
                    results.extend(done);
                }
                Err(e) => {
                    tracing::debug!(
                        node = %self.config.node_id, claims = batch.len(), error = %e,
                        "a batch of refreshes failed"
                    );
                    results.push(Err(e));
                }
            }
        }
        results
    }

    /// The next batch of at most [`ClusterConfig::refresh_batch`](crate::ClusterConfig) of
    /// `claims` (at least one a batch); `None` when none is left.
    fn next_batch(&self, claims: &mut std::vec::IntoIter<ToRefresh>) -> Option<Vec<ToRefresh>> {
        let batch: Vec<ToRefresh> = claims.take(self.config.refresh_batch.max(1)).collect();
        (!batch.is_empty()).then_some(batch)
    }

    /// On one Redis: the claims of `batch` in one `refresh.lua` call (sent as a pipeline of
    /// one, [`ClusterShared::refresh_pipeline`], for its `NOSCRIPT` handling); its answers, one per
    /// claim in the order of `batch`.
    async fn refresh_together(
        &self,
        batch: &[ToRefresh],
    ) -> Result<Vec<Vec<String>>, ClusterError> {
        let call = self.refresh_call(
            batch
                .iter()
                .map(|claim| (claim.identity.as_str(), claim.epoch)),
        );
        let answer = self
            .refresh_pipeline(std::slice::from_ref(&call), None)
            .await?
            .pop()
            .unwrap_or_else(|| Ok(Vec::new()))
            .map_err(ClusterError::Redis)?;
        answers_of(answer, batch.len(), "refresh.lua")
    }

    /// On Redis Cluster (issue 38): groups `claims` by the master that serves their key's slot
    /// (the link's slot map, [`RedisLink::slot_map`](crate::link::RedisLink::slot_map)), and
    /// sends each master its batches as [`ClusterShared::refresh_batches`] does on one Redis, one
    /// after the other, the masters at once: one round trip per master per batch, each
    /// pipeline sent to its master by address.
    ///
    /// The slot map may be stale (a resharding, a failover since the last look). A batch that
    /// fails as a whole on a redirection (`MOVED`, `ASK`, `TRYAGAIN`, `CLUSTERDOWN` inside it:
    /// the `redis` crate sends the pipeline again where the answer says, then fails it) hands
    /// its claims and the rest of its master's to a second pass, grouped again by a new look
    /// at the slots; what fails there too, and the claims of a slot without a master, go by a
    /// call of their own. A call per claim is the last resort: a thousand calls that each meet
    /// `MOVED` make the crate rebuild its slot map under them, and on a loaded machine its
    /// connection then stalled for as long as a minute (CI, 2026-12-05). A batch that times out
    /// ends its master's part of the round (the round fails; the next one sends them again).
    /// After any of these the map is forgotten, and the next round looks again.
    async fn refresh_per_master(
        &self,
        claims: Vec<ToRefresh>,
    ) -> Vec<Result<Option<LostClaim>, ClusterError>> {
        let mut done = Pass {
            redirected: claims,
            ..Pass::default()
        };
        for pass in 0..2 {
            if done.redirected.is_empty() {
                break;
            }
            if pass > 0 {
                // The second pass, over a new look at the slots.
                self.redis.forget_slot_map();
            }
            let left = std::mem::take(&mut done.redirected);
            done.absorb(self.refresh_by_slot_map(left).await);
        }
        if !done.redirected.is_empty() {
            done.stale = true;
            let left = std::mem::take(&mut done.redirected);
            done.results.extend(self.refresh_one_by_one(left).await);
        }
        if done.stale {
            self.redis.forget_slot_map();
        }
        done.results
    }

    /// One pass of [`ClusterShared::refresh_per_master`]: the claims grouped by the slot map, each
    /// master's batches sent to it.
    async fn refresh_by_slot_map(&self, claims: Vec<ToRefresh>) -> Pass {
        let map = match self.bounded(self.redis.slot_map()).await {
            Ok(Some(map)) => map,
            Ok(None) => return Pass::alone(self.refresh_one_by_one(claims).await),
            Err(e) => {
                tracing::debug!(node = %self.config.node_id, error = %e, "no slot map");
                return Pass::alone(self.refresh_one_by_one(claims).await);
            }
        };
        let mut per_master: Vec<Vec<ToRefresh>> =
            map.masters().iter().map(|_| Vec::new()).collect();
        let mut pass = Pass::default();
        for claim in claims {
            let key = self.config.claim_key(&claim.identity);
            match map
                .master_of_key(key.as_bytes())
                .and_then(|master| per_master.get_mut(master))
            {
                Some(claims) => claims.push(claim),
                // A slot the map names no master for: the next pass, or a call of its own.
                None => pass.redirected.push(claim),
            }
        }
        let masters = futures_util::future::join_all(
            map.masters()
                .iter()
                .zip(per_master)
                .filter(|(_, claims)| !claims.is_empty())
                .map(|(master, claims)| self.refresh_on_master(master, claims)),
        )
        .await;
        for done in masters {
            pass.absorb(done);
        }
        pass
    }

    /// The batches of one master's claims ([`ClusterShared::refresh_per_master`]), one after the
    /// other, each a pipeline sent to `master`.
    async fn refresh_on_master(&self, master: &Master, claims: Vec<ToRefresh>) -> Pass {
        let mut pass = Pass::default();
        let mut claims = claims.into_iter();
        while let Some(batch) = self.next_batch(&mut claims) {
            match self.refresh_each(&batch, master).await {
                Ok(answers) => {
                    let done: Vec<_> = futures_util::stream::iter(batch.into_iter().zip(answers))
                        .map(|(claim, answer)| async move {
                            match answer {
                                Ok(answer) => (self.refresh_answered(claim, answer).await, false),
                                Err(e) => {
                                    tracing::debug!(
                                        identity = %claim.identity, error = %e,
                                        "a refresh of a batch failed: once more on its own"
                                    );
                                    (
                                        self.refresh_claim(
                                            &claim.identity,
                                            claim.ticket,
                                            claim.epoch,
                                        )
                                        .await,
                                        true,
                                    )
                                }
                            }
                        })
                        .buffer_unordered(REFRESH_CONCURRENCY)
                        .collect()
                        .await;
                    for (result, alone) in done {
                        pass.results.push(result);
                        pass.stale |= alone;
                    }
                }
                // No answer within the Redis timeout: the master, or the `redis` crate's
                // connection to it, is stalled, and more calls would only queue behind it.
                // The round fails; the next one sends this master's claims again.
                Err(e) if e.is_timeout() => {
                    tracing::debug!(
                        node = %self.config.node_id, claims = batch.len() + claims.len(),
                        error = %e, "a batch of refreshes timed out: left to the next round"
                    );
                    pass.results.push(Err(e));
                    pass.stale = true;
                    break;
                }
                Err(e) => {
                    tracing::debug!(
                        node = %self.config.node_id, claims = batch.len() + claims.len(),
                        error = %e, "a batch of refreshes failed: grouped again by a new look at the slots"
                    );
                    pass.stale = true;
                    pass.redirected.extend(batch);
                    pass.redirected.extend(claims);
                    break;
                }
            }
        }
        pass
    }

    /// Each claim by a call of its own ([`ClusterShared::refresh_claim`]),
    /// [`REFRESH_CONCURRENCY`] at once.
    async fn refresh_one_by_one(
        &self,
        claims: Vec<ToRefresh>,
    ) -> Vec<Result<Option<LostClaim>, ClusterError>> {
        futures_util::stream::iter(claims)
            .map(|claim| async move {
                self.refresh_claim(&claim.identity, claim.ticket, claim.epoch)
                    .await
            })
            .buffer_unordered(REFRESH_CONCURRENCY)
            .collect()
            .await
    }

    /// One answer of a batch, read as that of a call of its own ([`ClusterShared::refreshed`]).
    async fn refresh_answered(
        &self,
        claim: ToRefresh,
        answer: Vec<String>,
    ) -> Result<Option<LostClaim>, ClusterError> {
        self.refreshed(&claim.identity, claim.ticket, claim.epoch, answer)
            .await
    }

    /// On Redis Cluster: a `refresh.lua` call per claim of `batch` (each touches its one key:
    /// the claims of a master spread over its slots), in one pipeline to `master`
    /// ([`ClusterShared::refresh_pipeline`]); each claim's answer or error, in the order of
    /// `batch`.
    async fn refresh_each(
        &self,
        batch: &[ToRefresh],
        master: &Master,
    ) -> Result<Vec<Result<Vec<String>, ClusterError>>, ClusterError> {
        let calls: Vec<_> = batch
            .iter()
            .map(|claim| self.refresh_call([(claim.identity.as_str(), claim.epoch)]))
            .collect();
        let answers = self.refresh_pipeline(&calls, Some(master)).await?;
        Ok(answers
            .into_iter()
            .map(|answer| {
                let answer = answers_of(answer.map_err(ClusterError::Redis)?, 1, "refresh.lua")?;
                Ok(answer.into_iter().next().unwrap_or_default())
            })
            .collect())
    }

    /// Sends the `refresh.lua` `calls` in one pipeline (`EVALSHA` each), bounded by the Redis
    /// timeout as a whole; each call's answers (or its error) in the order of `calls`. On
    /// Redis Cluster the pipeline goes to the master `to` (by address); with `None`, through
    /// the link as any command. The calls Redis answers `NOSCRIPT` (its script cache is empty:
    /// a restart, a failover, a new master on Redis Cluster) are sent again once, in one
    /// pipeline, after `SCRIPT LOAD` (on every master, on Redis Cluster).
    async fn refresh_pipeline(
        &self,
        calls: &[redis::ScriptInvocation<'_>],
        to: Option<&Master>,
    ) -> Result<Vec<redis::RedisResult<Vec<Vec<String>>>>, ClusterError> {
        let mut pipe = redis::pipe();
        for call in calls {
            pipe.invoke_script(call);
        }
        let mut answers = self.send_refreshes(pipe, to).await?;
        let unknown: Vec<usize> = answers
            .iter()
            .enumerate()
            .filter(|(_, answer)| matches!(answer, Err(e) if is_noscript(e)))
            .map(|(i, _)| i)
            .collect();
        if !unknown.is_empty() {
            let mut redis = self.redis.clone();
            self.bounded(self.scripts.refresh.load_async(&mut redis))
                .await?;
            let mut pipe = redis::pipe();
            for &i in &unknown {
                pipe.invoke_script(&calls[i]);
            }
            let again = self.send_refreshes(pipe, to).await?;
            for (i, answer) in unknown.into_iter().zip(again) {
                answers[i] = answer;
            }
        }
        Ok(answers)
    }

    /// Sends one pipeline of `refresh.lua` calls (each answer or error of its own): one round
    /// trip, bounded by the Redis timeout; to the master `to` if given
    /// ([`ClusterShared::refresh_pipeline`]).
    async fn send_refreshes(
        &self,
        mut pipe: redis::Pipeline,
        to: Option<&Master>,
    ) -> Result<Vec<redis::RedisResult<Vec<Vec<String>>>>, ClusterError> {
        pipe.ignore_errors();
        let calls = pipe.len();
        self.refresh_round_trips.fetch_add(1, Ordering::Relaxed);
        let answers: Vec<redis::RedisResult<Vec<Vec<String>>>> = match to {
            None => {
                let mut redis = self.redis.clone();
                self.bounded(pipe.query_async(&mut redis)).await?
            }
            Some(master) => {
                let values = self.bounded(self.redis.pipeline_to(master, pipe)).await?;
                redis::from_redis_value(redis::Value::Array(values))
                    .map_err(|e| ClusterError::Redis(e.into()))?
            }
        };
        if answers.len() != calls {
            return Err(ClusterError::Protocol(format!(
                "{} answers to {calls} refresh.lua calls",
                answers.len(),
            )));
        }
        Ok(answers)
    }

    /// What a `refresh.lua` answer means for the claim (`ClaimTable::refresh_done`), and what
    /// this node does about it.
    async fn refreshed(
        &self,
        identity: &str,
        ticket: ClaimTicket,
        epoch: u64,
        answer: Vec<String>,
    ) -> Result<Option<LostClaim>, ClusterError> {
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
            // The claim key is not a claim: this claim fails, as its call alone would have,
            // and stays as it is; the others of its batch were refreshed.
            "error" => {
                return Err(ClusterError::Protocol(format!(
                    "refresh.lua could not read the claim of {identity}: {}",
                    field(1)
                )))
            }
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
}

#[cfg(test)]
mod tests;
