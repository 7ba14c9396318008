//! Claims and releases in batches: a node's `claim.lua` and `release.lua` calls, each one
//! carrying every claim (or release) that waited while the call before it ran (PROTOCOL.md
//! 6.1, 6.2, 6.6).
//!
//! A connection's claim or release goes into its queue and waits for its answer there; one
//! task per queue takes what is queued (at most [`ClusterConfig::refresh_batch`]), sends it
//! as one script call on one Redis (or the master behind Sentinel), hands each waiter its own
//! answer, and takes the next batch. A quiet node sends a call per claim as before, with no
//! added wait; a storm of connects or disconnects (a node's 16,000 charge points leaving at
//! its shutdown, a restart's boot) makes a few large calls instead of thousands of small ones,
//! each of which waited behind all the others on the one connection and timed out (issue 38,
//! a million charge points on 63 nodes: claims timed out during the boot 216,511 times with a
//! call each, 377 times in batches; releases at the teardown 644,843 and 237,362 times).
//!
//! On Redis Cluster a script's keys share a slot and the claims spread over every slot: a
//! batch goes as a call per claim, [`HOUSEKEEPING_CONCURRENCY`] at once.
//!
//! [`ClusterConfig::refresh_batch`]: crate::ClusterConfig::refresh_batch

use std::sync::atomic::Ordering;
use std::sync::Arc;

use futures_util::StreamExt;
use ocpp_proto::OcppVersion;
use tokio::sync::{mpsc, oneshot};

use super::{answers_of, lock, millis, ClusterShared};
use crate::claims::Settle;
use crate::ClusterError;

/// How many calls of one batch run at once on Redis Cluster (a call per claim there).
const HOUSEKEEPING_CONCURRENCY: usize = 64;

/// One claim or release waiting in its queue, and where its answer goes.
pub(super) struct Waiting<T, A> {
    job: T,
    answer: AnswerSender<A>,
}

/// A claim to register: `claim.lua`'s arguments of one claim.
pub(super) struct ToClaim {
    identity: String,
    version: Option<OcppVersion>,
}

/// `claim.lua`'s answer for one claim: the new epoch, the previous node (`""` if none or
/// released) and its epoch (`"0"` if none), as Redis wrote them.
pub(super) type ClaimAnswer = Vec<String>;

/// A release: the claim key's identity and the epoch this node holds it under.
pub(super) struct ToRelease {
    identity: String,
    epoch: u64,
}

/// The two queues' sending halves, kept in [`ClusterShared`].
pub(super) struct Queues {
    claims: mpsc::UnboundedSender<Waiting<ToClaim, ClaimAnswer>>,
    releases: mpsc::UnboundedSender<Waiting<ToRelease, bool>>,
}

/// The receiving halves, handed to the two tasks ([`ClusterShared::claim_loop`],
/// [`ClusterShared::release_loop`]).
pub(super) struct Receivers {
    claims: mpsc::UnboundedReceiver<Waiting<ToClaim, ClaimAnswer>>,
    releases: mpsc::UnboundedReceiver<Waiting<ToRelease, bool>>,
}

/// The queues of a node that starts.
pub(super) fn queues() -> (Queues, Receivers) {
    let (claims, claims_rx) = mpsc::unbounded_channel();
    let (releases, releases_rx) = mpsc::unbounded_channel();
    (
        Queues { claims, releases },
        Receivers {
            claims: claims_rx,
            releases: releases_rx,
        },
    )
}

impl Receivers {
    /// Starts the two tasks on `runtime`.
    pub(super) fn spawn(
        self,
        shared: &Arc<ClusterShared>,
        runtime: &tokio::runtime::Handle,
    ) -> [tokio::task::JoinHandle<()>; 2] {
        [
            runtime.spawn(Arc::clone(shared).claim_loop(self.claims)),
            runtime.spawn(Arc::clone(shared).release_loop(self.releases)),
        ]
    }
}

/// Waits for the next job of `queue`, and takes what else is queued with it, `max` jobs in
/// all; `None` once the queue is closed (the node is gone). Jobs queued from another thread
/// while it looks may come in the next batch.
async fn next_batch<T>(queue: &mut mpsc::UnboundedReceiver<T>, max: usize) -> Option<Vec<T>> {
    let mut batch = Vec::new();
    match queue.recv_many(&mut batch, max).await {
        0 => None,
        _ => Some(batch),
    }
}

/// Queues `job` (at once: it runs whether its answer is waited for or not); where its answer
/// comes.
fn submit<T, A>(
    queue: &mpsc::UnboundedSender<Waiting<T, A>>,
    job: T,
) -> Result<AnswerReceiver<A>, ClusterError> {
    let (answer, answered) = oneshot::channel();
    queue
        .send(Waiting { job, answer })
        .map_err(|_| ClusterError::Stopped)?;
    Ok(answered)
}

/// The answer of a job queued by [`submit`].
async fn answer<A>(answered: AnswerReceiver<A>) -> Result<A, ClusterError> {
    answered.await.map_err(|_| ClusterError::Stopped)?
}

/// Hands each waiter its answer, in order.
fn answer_each<A>(waiters: Vec<AnswerSender<A>>, answers: Vec<Result<A, ClusterError>>) {
    for (waiter, answer) in waiters.into_iter().zip(answers) {
        let _ = waiter.send(answer);
    }
}

/// Where the answer of one claim or release goes.
type AnswerSender<A> = oneshot::Sender<Result<A, ClusterError>>;

/// Where the answer of one claim or release comes.
type AnswerReceiver<A> = oneshot::Receiver<Result<A, ClusterError>>;

/// The jobs of `batch`, and their waiters in the same order.
fn split<T, A>(batch: Vec<Waiting<T, A>>) -> (Vec<T>, Vec<AnswerSender<A>>) {
    batch
        .into_iter()
        .map(|waiting| (waiting.job, waiting.answer))
        .unzip()
}

impl ClusterShared {
    /// Runs `claim.lua` for this node's claim on `identity` (recorded with `version`), in the
    /// next batch; its answer.
    pub(super) async fn claim_script(
        &self,
        identity: &str,
        version: Option<OcppVersion>,
    ) -> Result<ClaimAnswer, ClusterError> {
        let job = ToClaim {
            identity: identity.to_owned(),
            version,
        };
        answer(submit(&self.queues.claims, job)?).await
    }

    /// Runs `release.lua` for this node's claim on `identity` under `epoch`, in the next batch:
    /// `Ok(true)` released, `Ok(false)` not this node's claim (any more). A release in flight
    /// from the moment it is queued until `release.lua` answers (the release queue's task counts
    /// it down), whether its caller still waits or not: a caller that stops waiting (its
    /// future dropped) leaves the release queued, and a drain waits for it all the same.
    pub(super) async fn release_epoch(
        &self,
        identity: &str,
        epoch: u64,
    ) -> Result<bool, ClusterError> {
        let job = ToRelease {
            identity: identity.to_owned(),
            epoch,
        };
        self.releases.fetch_add(1, Ordering::AcqRel);
        let queued = submit(&self.queues.releases, job);
        if queued.is_err() {
            self.releases_ended(1);
        }
        answer(queued?).await
    }

    /// `release.lua` for each of `held` (identity, epoch; a drain's), in calls of
    /// [`ClusterConfig::refresh_batch`](crate::ClusterConfig::refresh_batch) one after the
    /// other: their answers, in order.
    pub(super) async fn release_all(
        &self,
        held: Vec<(String, u64)>,
    ) -> Vec<Result<bool, ClusterError>> {
        let mut answers = Vec::with_capacity(held.len());
        let mut held = held.into_iter().peekable();
        while held.peek().is_some() {
            let batch = held
                .by_ref()
                .take(self.config.refresh_batch.max(1))
                .map(|(identity, epoch)| ToRelease { identity, epoch })
                .collect();
            answers.extend(self.release_batch(batch).await);
        }
        answers
    }

    async fn claim_loop(
        self: Arc<Self>,
        mut queue: mpsc::UnboundedReceiver<Waiting<ToClaim, ClaimAnswer>>,
    ) {
        while let Some(batch) = next_batch(&mut queue, self.config.refresh_batch.max(1)).await {
            let (jobs, waiters) = split(batch);
            let identities: Vec<String> = jobs.iter().map(|job| job.identity.clone()).collect();
            let answers = self.claim_batch(jobs).await;
            for ((waiter, answer), identity) in waiters.into_iter().zip(answers).zip(identities) {
                if let Err(Ok(answer)) = waiter.send(answer) {
                    self.claimed_unawaited(identity, answer);
                }
            }
        }
    }

    /// A claim `claim.lua` made for a registration that no longer waits (its future was
    /// dropped once the claim was queued: a caller that gave up): the call ran all the same,
    /// and what it made is settled here as the registration would have settled it
    /// ([`ClaimTable::claimed_unawaited`](crate::claims::ClaimTable::claimed_unawaited)). A
    /// connection that left meanwhile had nothing registered to release; its claim is given
    /// back now (a release in flight, which a drain waits for), or it would stay this node's
    /// in Redis for its TTL.
    fn claimed_unawaited(self: &Arc<Self>, identity: String, answer: ClaimAnswer) {
        let field = |i: usize| answer.get(i).cloned().unwrap_or_default();
        let Ok(epoch) = super::parse_epoch(&field(0)) else {
            return;
        };
        let settle = lock(&self.claims).claimed_unawaited(&identity, epoch);
        let in_flight = matches!(settle, Settle::GiveBack(_)).then(|| self.release_started());
        let shared = Arc::clone(self);
        let (node, node_epoch) = (field(1), field(2));
        self.runtime.spawn(async move {
            shared
                .notify_superseded(&identity, &node, &node_epoch, epoch)
                .await;
            match settle {
                Settle::GiveBack(epoch) => {
                    let _ = shared.release_epoch(&identity, epoch).await;
                }
                Settle::Again { ticket, epoch } => {
                    let _ = shared.refresh_claim(&identity, ticket, epoch).await;
                }
                Settle::Nothing => {}
            }
            drop(in_flight);
        });
    }

    async fn release_loop(
        self: Arc<Self>,
        mut queue: mpsc::UnboundedReceiver<Waiting<ToRelease, bool>>,
    ) {
        while let Some(batch) = next_batch(&mut queue, self.config.refresh_batch.max(1)).await {
            let (jobs, waiters) = split(batch);
            let count = jobs.len();
            let answers = self.release_batch(jobs).await;
            answer_each(waiters, answers);
            self.releases_ended(count);
        }
    }

    /// `claim.lua` for `claims` ([`ClusterShared::in_calls`]).
    async fn claim_batch(&self, claims: Vec<ToClaim>) -> Vec<Result<ClaimAnswer, ClusterError>> {
        self.in_calls(claims, |claims| self.claim_call(claims))
            .await
    }

    /// `release.lua` for `releases` ([`ClusterShared::in_calls`]).
    async fn release_batch(&self, releases: Vec<ToRelease>) -> Vec<Result<bool, ClusterError>> {
        self.in_calls(releases, |releases| self.release_call(releases))
            .await
    }

    /// `jobs` sent by `call`: in one call on one Redis, a call per job on Redis Cluster
    /// ([`HOUSEKEEPING_CONCURRENCY`] at once; a script's keys share a slot there). One
    /// answer per job, in order; a call that fails fails every job it carried.
    async fn in_calls<T, A, F>(
        &self,
        jobs: Vec<T>,
        call: impl Fn(Vec<T>) -> F,
    ) -> Vec<Result<A, ClusterError>>
    where
        F: std::future::Future<Output = Result<Vec<A>, ClusterError>>,
    {
        if self.redis.is_cluster() {
            return futures_util::stream::iter(jobs)
                .map(|job| {
                    let answered = call(vec![job]);
                    async move {
                        answered.await?.pop().ok_or_else(|| {
                            ClusterError::Protocol("a script answered no claim".into())
                        })
                    }
                })
                .buffered(HOUSEKEEPING_CONCURRENCY)
                .collect()
                .await;
        }
        let count = jobs.len();
        match call(jobs).await {
            Ok(answers) => answers.into_iter().map(Ok).collect(),
            Err(e) => (0..count).map(|_| Err(e.clone())).collect(),
        }
    }

    /// One `claim.lua` call for `claims` (one claim on Redis Cluster, whose keys must share
    /// a slot), bounded by the Redis timeout.
    async fn claim_call(&self, claims: Vec<ToClaim>) -> Result<Vec<ClaimAnswer>, ClusterError> {
        let config = &self.config;
        let mut call = self.scripts.claim.prepare_invoke();
        for claim in &claims {
            call.key(config.claim_key(&claim.identity));
        }
        call.key(self.shared_keys())
            .arg(&config.node_id)
            .arg(millis(config.claim_ttl))
            .arg(self.script_inbox_prefix());
        for claim in &claims {
            call.arg(&claim.identity)
                .arg(claim.version.map(OcppVersion::subprotocol).unwrap_or(""));
        }
        let mut redis = self.redis.clone();
        let answers: Vec<ClaimAnswer> = self.bounded(call.invoke_async(&mut redis)).await?;
        answers_of(answers, claims.len(), "claim.lua")
    }

    /// One `release.lua` call for `releases` (one claim on Redis Cluster), bounded by the
    /// Redis timeout.
    async fn release_call(&self, releases: Vec<ToRelease>) -> Result<Vec<bool>, ClusterError> {
        let config = &self.config;
        let mut call = self.scripts.release.prepare_invoke();
        for release in &releases {
            call.key(config.claim_key(&release.identity));
        }
        call.arg(&config.node_id).arg(millis(config.claim_ttl));
        for release in &releases {
            call.arg(release.epoch.to_string());
        }
        let mut redis = self.redis.clone();
        let answers: Vec<i64> = self.bounded(call.invoke_async(&mut redis)).await?;
        let answers = answers_of(answers, releases.len(), "release.lua")?;
        Ok(answers.into_iter().map(|released| released == 1).collect())
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use futures_util::FutureExt;

    use std::sync::atomic::Ordering;

    use crate::cluster::tests::{started, until};
    use crate::test_redis::RedisServer;
    use crate::ClusterConfig;

    /// A registration dropped once its `claim.lua` is queued (a caller that gave up on
    /// [`Cluster::claim`](crate::Cluster::claim)) leaves the claim pending, but the call still
    /// runs in Redis. If the connection has left by the time it answers, the claim it made is
    /// given back, as a registration that finds its claim released does. Before, the answer
    /// went to no one: the claim stayed this node's in Redis for its whole TTL, a charge point
    /// connected nowhere found on this node.
    #[tokio::test]
    async fn a_claim_answered_after_its_registration_was_dropped_is_given_back() {
        let server = RedisServer::start();
        let (cluster, _events) = started(ClusterConfig::new(server.url(), "a")).await;
        let a = cluster.hold("A", None);
        let mut registering = Box::pin(cluster.register("A", a));
        assert!(
            registering.as_mut().now_or_never().is_none(),
            "claim.lua queued"
        );
        drop(registering);
        // The connection leaves: nothing registered to release.
        assert!(!cluster.release("A", a).await.expect("release"));
        // claim.lua ran all the same; its claim goes (a tombstone: node "").
        let start = Instant::now();
        loop {
            let node = server.query("HGET ocpp:cp:A node");
            if node.as_deref() == Some("") {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "the claim of a connection gone is still this node's: node {node:?}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// A release whose caller stops waiting once it is queued (its future dropped: a task
    /// cancelled) still runs, and counts as in flight until `release.lua` answers, so that a
    /// drain waits for it. Before, it counted only while its caller waited: a drain that
    /// followed did not wait for it, and a node that left at once left the claim in Redis.
    #[tokio::test]
    async fn a_release_queued_counts_in_flight_until_it_is_answered() {
        let server = RedisServer::start();
        let (cluster, _events) = started(ClusterConfig::new(server.url(), "a")).await;
        let claim = cluster.claim("A").await;
        assert!(claim.epoch.is_some(), "registered");
        let shared = cluster.shared();
        let mut release = Box::pin(cluster.release("A", claim.ticket));
        assert!(
            release.as_mut().now_or_never().is_none(),
            "release.lua queued"
        );
        drop(release);
        assert_eq!(
            shared.releases.load(Ordering::Acquire),
            1,
            "the release queued counts in flight"
        );
        until(|| shared.releases.load(Ordering::Acquire) == 0).await;
        assert_eq!(server.query("HGET ocpp:cp:A node").as_deref(), Some(""));
    }
}
