//! One node of the cluster: its claims, its inbox, its calls (the async face).

use std::collections::HashMap;
use std::future::Future;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::{mpsc, Notify};
use tokio::task::JoinHandle;

use crate::bound::Bound;
use crate::claims::ClaimTable;
use crate::link::RedisLink;
use crate::scripts::Scripts;
use crate::{CallFailure, ClusterConfig, ClusterError, Executor};
use ocpp_proto::OcppVersion;

mod announce;
mod drain;
mod housekeeping;
mod inbox;
mod refresh;
mod registration;
mod routing;
#[cfg(test)]
mod tests;

use routing::PendingReply;

/// The WebSocket close code (RFC 6455 §7.4.1, policy violation) a server closes a socket with
/// when its claim was superseded by a newer connection on another node.
pub const CLOSE_SUPERSEDED: u16 = ocpp_proto::Superseded::CLOSE_CODE.as_u16();

/// The close reason sent with [`CLOSE_SUPERSEDED`] (the same from every server).
pub const CLOSE_SUPERSEDED_REASON: &str = ocpp_proto::Superseded::OtherNode.reason();

/// Names one local claim: a server holds it with the connection that made it, and releases with
/// it, so that a stale connection's release never drops a newer connection's claim.
/// Non-zero, so that an `Option<ClaimTicket>` in every socket record is 8 bytes, not 16.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClaimTicket(pub(crate) NonZeroU64);

impl ClaimTicket {
    /// The ticket's number (unique per node process, from 1).
    pub fn get(self) -> u64 {
        self.0.get()
    }
}

/// A charge point this node holds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Claim {
    /// The charge point's identity.
    pub identity: String,
    /// The local ticket ([`Cluster::release`] takes it).
    pub ticket: ClaimTicket,
    /// The epoch Redis gave the claim; `None` while it is not registered yet (Redis down): the
    /// claim is held locally and registered as soon as Redis answers.
    pub epoch: Option<u64>,
}

/// A claim this node lost to a newer one: the server closes that socket with
/// [`CLOSE_SUPERSEDED`] and sends it nothing more.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LostClaim {
    /// The identity.
    pub identity: String,
    /// The ticket of the local claim that is gone.
    pub ticket: ClaimTicket,
    /// The epoch of this node's claim that was superseded, as the message or refresh named it:
    /// it can be newer than [`Claim::epoch`] (Redis restored the claim meanwhile); 0 if it had
    /// never been registered.
    pub epoch: u64,
    /// The node that holds it now; empty if the newer claim was already released.
    pub by_node: String,
    /// The newer claim's epoch.
    pub by_epoch: u64,
}

/// What the cluster tells the server on its own initiative.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClusterEvent {
    /// Close identity X with 1008: epoch E was superseded. The claim is already gone locally.
    Superseded(LostClaim),
}

/// The events of one node, in the order they happened (unbounded: read them).
pub type ClusterEvents = mpsc::UnboundedReceiver<ClusterEvent>;

/// One node of the cluster: a cheap handle to clone. Dropping the last handle stops the node's
/// background tasks without releasing anything (as a crash would: the claims expire); call
/// [`Cluster::drain`] first to leave cleanly.
///
/// ```no_run
/// use std::time::Duration;
/// use ocpp_cluster::{BoxFuture, Cluster, ClusterConfig, ClusterEvent, JsonCallOutcome};
///
/// # async fn run() -> Result<(), ocpp_cluster::ClusterError> {
/// // How this node runs a command for a charge point it holds (here: answers at once).
/// let executor = |_id: &str, _action: &str, _payload: &str, _timeout: Duration|
///     -> BoxFuture<JsonCallOutcome> { Box::pin(async { Ok("{}".to_owned()) }) };
/// let config = ClusterConfig::new("redis://127.0.0.1:6379/", "csms-a");
/// let (cluster, mut events) = Cluster::start(config, executor)?;
///
/// // A charge point connected here.
/// let claim = cluster.claim("CP-1").await;
/// // A command for a charge point on any node.
/// match cluster.call("CP-2", "Reset", r#"{"type":"Soft"}"#, Duration::from_secs(30)).await {
///     Ok(payload) => println!("CALLRESULT {payload}"),
///     Err(failure) => println!("{failure} (may have run: {})", failure.may_have_reached_peer()),
/// }
/// // Another node took CP-1 over: close the stale socket with 1008.
/// if let Some(ClusterEvent::Superseded(lost)) = events.recv().await {
///     println!("close {} with 1008, epoch {} superseded", lost.identity, lost.epoch);
/// }
/// // The charge point left.
/// cluster.release("CP-1", claim.ticket).await?;
/// // SIGTERM: after closing every socket with 1012.
/// cluster.drain().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Cluster {
    shared: Arc<ClusterShared>,
    _tasks: Arc<Tasks>,
}

/// One release in flight ([`Cluster::release_started`]); counted down when dropped (also when
/// its task is cancelled).
pub(crate) struct ReleaseInFlight(Arc<ClusterShared>);

impl Drop for ReleaseInFlight {
    fn drop(&mut self) {
        self.0.releases_ended(1);
    }
}

impl std::fmt::Debug for ReleaseInFlight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReleaseInFlight")
    }
}

/// Aborts the node's background tasks when the last handle goes.
#[derive(Debug)]
struct Tasks(Vec<JoinHandle<()>>);

impl Drop for Tasks {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

pub(crate) struct ClusterShared {
    pub(crate) config: ClusterConfig,
    /// Every command goes through it: one Redis, or the master Sentinel names (`link.rs`).
    pub(crate) redis: RedisLink,
    scripts: Scripts,
    executor: Arc<dyn Executor>,
    events: mpsc::UnboundedSender<ClusterEvent>,
    /// The local claims (`claims.rs` decides; this node runs the scripts and acts).
    claims: Mutex<ClaimTable>,
    /// The remote calls waiting for their reply, by command id.
    pending: Mutex<HashMap<String, PendingReply>>,
    /// Command ids executed or dropped here, with the time (Unix ms) they may be forgotten.
    seen: Mutex<HashMap<String, u64>>,
    next_ticket: AtomicU64,
    next_request: AtomicU64,
    /// A random tag making command ids unique across restarts of a node.
    instance: String,
    started_ms: u64,
    inbox_up: AtomicBool,
    draining: AtomicBool,
    /// Releases in flight: a caller's, from before it forgets the claim
    /// ([`Cluster::release_started`]), and each release queued, until `release.lua` answers
    /// (`housekeeping.rs`).
    releases: AtomicUsize,
    /// Registrations in flight: from the `claim.lua` they begin until they end, a release of
    /// what they registered included ([`InFlight`](registration::InFlight)).
    registrations: AtomicUsize,
    /// The runtime the node started on (tasks of [`Cluster::release_later`]).
    runtime: tokio::runtime::Handle,
    refresh_now: Notify,
    /// The `<p>:since` under which this node last registered every claim it held (a refresh
    /// round without an error), announced in its node record (`announce.lua`): `None` before
    /// its first such round.
    synced: Mutex<Option<String>>,
    /// Woken after each claim.lua (or one abandoned), and when the last release in flight
    /// ends: for a registration that waits on another, and a drain that waits for both. A
    /// waiter looks again at what it waits for each time.
    settled: Notify,
    round: tokio::sync::Mutex<()>,
    /// The claims and releases waiting for their `claim.lua` or `release.lua` call
    /// (`housekeeping.rs`).
    queues: housekeeping::Queues,
    /// Round trips of refresh rounds: on one Redis a `refresh.lua` call per batch, on Redis
    /// Cluster a pipeline of a call per claim per master (PROTOCOL.md 6.3).
    refresh_round_trips: AtomicU64,
}

impl std::fmt::Debug for ClusterShared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterShared")
            .field("node_id", &self.config.node_id)
            .field("instance", &self.instance)
            .finish_non_exhaustive()
    }
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these locks leaves consistent data (single inserts and
    // removes), so a poisoned lock is used as it is.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(crate) fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn millis(d: Duration) -> u64 {
    (d.as_millis() as u64).max(1)
}

/// `answers` of a `script` call given `claims` claims: one per claim, or a
/// [`ClusterError::Protocol`] naming how many came.
fn answers_of<A>(answers: Vec<A>, claims: usize, script: &str) -> Result<Vec<A>, ClusterError> {
    if answers.len() != claims {
        return Err(ClusterError::Protocol(format!(
            "{script} answered {} claims of {claims}",
            answers.len()
        )));
    }
    Ok(answers)
}

pub(crate) fn parse_epoch(text: &str) -> Result<u64, ClusterError> {
    text.parse()
        .map_err(|_| ClusterError::Protocol(format!("epoch {text:?} is not a number")))
}

impl Cluster {
    /// Starts node `config.node_id` on the current tokio runtime: its inbox subscription, the
    /// refresh of its claims and node record. Returns at once (Redis is reached in the
    /// background; the node works locally while Redis is down).
    pub fn start(
        config: ClusterConfig,
        executor: impl Executor,
    ) -> Result<(Cluster, ClusterEvents), ClusterError> {
        Self::start_with(config, Arc::new(executor))
    }

    pub(crate) fn start_with(
        config: ClusterConfig,
        executor: Arc<dyn Executor>,
    ) -> Result<(Cluster, ClusterEvents), ClusterError> {
        config.validate()?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| ClusterError::NoRuntime)?;
        let redis = RedisLink::open(&config, &runtime)?;
        let (events, events_rx) = mpsc::unbounded_channel();
        let (queues, queued) = housekeeping::queues();
        let shared = Arc::new(ClusterShared {
            config,
            redis,
            scripts: Scripts::new(),
            executor,
            events,
            claims: Mutex::new(ClaimTable::default()),
            pending: Mutex::new(HashMap::new()),
            seen: Mutex::new(HashMap::new()),
            next_ticket: AtomicU64::new(1),
            next_request: AtomicU64::new(1),
            instance: format!("{:016x}", fastrand::u64(..)),
            started_ms: unix_ms(),
            inbox_up: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            releases: AtomicUsize::new(0),
            registrations: AtomicUsize::new(0),
            runtime: runtime.clone(),
            refresh_now: Notify::new(),
            synced: Mutex::new(None),
            settled: Notify::new(),
            round: tokio::sync::Mutex::new(()),
            queues,
            refresh_round_trips: AtomicU64::new(0),
        });
        let inbox = runtime.spawn(Arc::clone(&shared).inbox_loop());
        let refresh = runtime.spawn(Arc::clone(&shared).refresh_loop());
        let moves = runtime.spawn(Arc::clone(&shared).moves_loop());
        let announce = runtime.spawn(Arc::clone(&shared).announce_loop());
        let [claims, releases] = queued.spawn(&shared, &runtime);
        Ok((
            Cluster {
                shared,
                _tasks: Arc::new(Tasks(vec![
                    inbox, refresh, moves, announce, claims, releases,
                ])),
            },
            events_rx,
        ))
    }

    /// This node's id.
    pub fn node_id(&self) -> &str {
        &self.shared.config.node_id
    }

    /// The configuration in force.
    pub fn config(&self) -> &ClusterConfig {
        &self.shared.config
    }

    /// Whether this node's inbox subscription is up (remote calls need it for the answer).
    pub fn is_connected(&self) -> bool {
        self.shared.inbox_up.load(Ordering::Acquire)
    }

    /// Takes `identity` for this node: held locally at once, then registered in Redis under a
    /// new epoch (`claim.lua`); a previous holder on another node is told at once. Never fails:
    /// with Redis down the claim has no epoch yet and is registered when Redis returns. Waits
    /// a few Redis timeouts at most: its `claim.lua` may wait for the batch of claims in
    /// flight before it runs in the next one, and a registration of the same claim already in
    /// flight (a refresh round's) is waited for first, each bounded by the Redis timeout.
    pub async fn claim(&self, identity: &str) -> Claim {
        self.claim_as(identity, None).await
    }

    /// [`Cluster::claim`], recording the OCPP version of the charge point's connection with
    /// the claim, for the other nodes ([`Cluster::locate`], [`Cluster::list`]): an application
    /// on any node can then pick the action that version has.
    ///
    /// ```no_run
    /// # async fn run(cluster: ocpp_cluster::Cluster) {
    /// use ocpp_proto::OcppVersion;
    /// let claim = cluster.claim_as("CP-1", Some(OcppVersion::V2_0_1)).await;
    /// # }
    /// ```
    pub async fn claim_as(&self, identity: &str, version: Option<OcppVersion>) -> Claim {
        let ticket = self.shared.hold(identity, version);
        let epoch = self
            .shared
            .register(identity, ticket, None)
            .await
            .ok()
            .flatten();
        Claim {
            identity: identity.to_owned(),
            ticket,
            epoch,
        }
    }

    /// Holds `identity` locally at once and returns its ticket; registration runs in the
    /// background (what a non-async caller needs).
    pub(crate) fn hold(&self, identity: &str, version: Option<OcppVersion>) -> ClaimTicket {
        self.shared.hold(identity, version)
    }

    pub(crate) async fn register(&self, identity: &str, ticket: ClaimTicket) -> Option<u64> {
        self.shared
            .register(identity, ticket, None)
            .await
            .ok()
            .flatten()
    }

    /// The charge point left: drops the local claim made with `ticket` (if it is still the
    /// current one) and its Redis claim if it is still this node's epoch (`release.lua`).
    /// `Ok(true)`: released in Redis; `Ok(false)`: nothing of ours to release. On an error the
    /// local claim is gone all the same and the Redis claim expires with its TTL.
    pub async fn release(&self, identity: &str, ticket: ClaimTicket) -> Result<bool, ClusterError> {
        let in_flight = self.release_started();
        let epoch = self.forget(identity, ticket);
        let released = self.release_registered(identity, epoch).await;
        drop(in_flight);
        released
    }

    /// [`Cluster::release`] for a caller that does not wait: the local claim goes at once, the
    /// Redis release runs in a task of the node's runtime (an error is logged: the claim then
    /// expires with its TTL). A [`Cluster::drain`] that follows waits for it (bounded).
    ///
    /// ```no_run
    /// # fn run(cluster: ocpp_cluster::Cluster, claim: ocpp_cluster::Claim) {
    /// cluster.release_later(&claim.identity, claim.ticket);
    /// # }
    /// ```
    pub fn release_later(&self, identity: &str, ticket: ClaimTicket) {
        let in_flight = self.release_started();
        let epoch = self.forget(identity, ticket);
        let cluster = self.clone();
        let identity = identity.to_owned();
        self.shared.runtime.spawn(async move {
            match cluster.release_registered(&identity, epoch).await {
                Ok(released) => tracing::debug!(identity, released, "claim released"),
                Err(e) => tracing::warn!(identity, "release: {e} (the claim expires with its TTL)"),
            }
            drop(in_flight);
        });
    }

    /// Counts a release in flight until the guard drops: [`Cluster::drain`] waits for those
    /// (bounded) before it leaves, so that a shutdown does not end before the releases of the
    /// connections that closed just before it reached Redis.
    pub(crate) fn release_started(&self) -> ReleaseInFlight {
        self.shared.release_started()
    }

    /// Drops the local claim made with `ticket` if it is still the current one; its epoch if it
    /// was registered.
    pub(crate) fn forget(&self, identity: &str, ticket: ClaimTicket) -> Option<u64> {
        lock(&self.shared.claims).forget(identity, ticket)
    }

    /// The Redis half of a release (a registration in flight releases its own result when it
    /// finds the local claim gone).
    pub(crate) async fn release_registered(
        &self,
        identity: &str,
        epoch: Option<u64>,
    ) -> Result<bool, ClusterError> {
        match epoch {
            Some(epoch) => self.shared.release_epoch(identity, epoch).await,
            None => Ok(false),
        }
    }

    /// The local claim on `identity`, if this node holds it (no Redis call).
    pub fn holds(&self, identity: &str) -> Option<Claim> {
        lock(&self.shared.claims).claim(identity)
    }

    /// Every claim this node holds.
    pub fn claims(&self) -> Vec<Claim> {
        lock(&self.shared.claims).all()
    }

    pub(crate) fn shared(&self) -> &ClusterShared {
        &self.shared
    }

    /// Sends CALL `action` with `payload_json` to charge point `identity` wherever it is
    /// connected and returns the CALLRESULT payload (JSON text). Exactly one answer within
    /// `timeout`; the command runs at most once, and not at all past its deadline. A charge
    /// point held here runs through the local executor without Redis.
    ///
    /// The payload is decoded for the OCPP version of the charge point's connection
    /// ([`CallFailure::InvalidRequest`] if it does not fit); [`Cluster::call_as`] names the
    /// version it was written for.
    pub async fn call(
        &self,
        identity: &str,
        action: &str,
        payload_json: &str,
        timeout: Duration,
    ) -> Result<String, CallFailure> {
        self.call_as(identity, None, action, payload_json, timeout)
            .await
    }

    /// [`Cluster::call`] for a request of OCPP version `version` (a typed request knows it):
    /// [`CallFailure::WrongVersion`] (not sent) when the charge point's connection speaks
    /// another version, whichever node holds it, as a local connection refuses it. `None`, or
    /// a holder that does not record its connections' versions: as [`Cluster::call`].
    ///
    /// ```no_run
    /// # async fn run(cluster: ocpp_cluster::Cluster) {
    /// use std::time::Duration;
    /// use ocpp_cluster::CallFailure;
    /// use ocpp_proto::OcppVersion;
    /// let reset = cluster
    ///     .call_as("CP-1", Some(OcppVersion::V2_0_1), "Reset", r#"{"type":"Immediate"}"#,
    ///              Duration::from_secs(30))
    ///     .await;
    /// if reset == Err(CallFailure::WrongVersion) {
    ///     println!("CP-1 does not speak OCPP 2.0.1");
    /// }
    /// # }
    /// ```
    pub async fn call_as(
        &self,
        identity: &str,
        version: Option<OcppVersion>,
        action: &str,
        payload_json: &str,
        timeout: Duration,
    ) -> Result<String, CallFailure> {
        let deadline = Instant::now() + timeout;
        let deadline_ms = unix_ms() + millis(timeout);
        let work = self.shared.call(
            identity,
            version.map(OcppVersion::subprotocol),
            action,
            payload_json,
            deadline,
            deadline_ms,
        );
        tokio::time::timeout(timeout, work)
            .await
            .unwrap_or(Err(CallFailure::Timeout))
    }

    /// Runs one refresh round now (the node record and every claim, as the background task does
    /// every refresh interval) and returns the claims found lost, which also went out as
    /// [`ClusterEvent::Superseded`].
    pub async fn refresh(&self) -> Result<Vec<LostClaim>, ClusterError> {
        self.shared.round().await
    }

    /// Leaves the cluster (SIGTERM, after the server closed its sockets with 1012): registers
    /// nothing more from now on, waits (at most a second) for the releases and registrations
    /// in flight, releases every claim still this node's and deletes the node record. Returns
    /// how many claims were released in Redis by the drain itself.
    pub async fn drain(&self) -> Result<usize, ClusterError> {
        self.shared.drain().await
    }
}

impl ClusterShared {
    /// `count` releases in flight ended: wakes the waiters once none is left.
    pub(crate) fn releases_ended(&self, count: usize) {
        if self.releases.fetch_sub(count, Ordering::AcqRel) == count {
            self.settled.notify_waiters();
        }
    }

    /// Counts a release in flight until the guard drops ([`Cluster::release_started`]).
    pub(crate) fn release_started(self: &Arc<Self>) -> ReleaseInFlight {
        self.releases.fetch_add(1, Ordering::AcqRel);
        ReleaseInFlight(Arc::clone(self))
    }

    /// Runs one Redis call within its [`Bound`].
    pub(crate) async fn bounded<T>(
        &self,
        work: impl Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, ClusterError> {
        Bound::of(&self.config).run(work).await
    }

    fn emit(&self, lost: LostClaim) {
        tracing::info!(
            identity = %lost.identity, epoch = lost.epoch, by_node = %lost.by_node,
            by_epoch = lost.by_epoch, "claim superseded"
        );
        let _ = self.events.send(ClusterEvent::Superseded(lost));
    }

    fn hold(&self, identity: &str, version: Option<OcppVersion>) -> ClaimTicket {
        // The counter starts at 1; it would reach 0 again only after 2^64 claims.
        let number = self.next_ticket.fetch_add(1, Ordering::Relaxed);
        let ticket = ClaimTicket(NonZeroU64::new(number).unwrap_or(NonZeroU64::MIN));
        lock(&self.claims).hold(identity, ticket, version);
        ticket
    }

    /// The keys `claim.lua` takes after the claim key: the epoch counter and `since` on one
    /// Redis (`refresh.lua` takes `since` alone, after its claim keys); none on Redis Cluster, where a script's keys share one slot
    /// (PROTOCOL.md 1.2).
    fn shared_keys(&self) -> Vec<String> {
        if self.redis.is_cluster() {
            Vec::new()
        } else {
            vec![self.config.epoch_key(), self.config.since_key()]
        }
    }

    /// The inbox prefix `claim.lua` and `refresh.lua` publish a `superseded` message under;
    /// `""` on Redis Cluster, where the inbox is in another slot: the node publishes it itself
    /// ([`ClusterShared::notify_superseded`]).
    fn script_inbox_prefix(&self) -> String {
        if self.redis.is_cluster() {
            String::new()
        } else {
            self.config.inbox_prefix()
        }
    }

    /// Waits until `done` holds, looking again each time [`ClusterShared::settled`] wakes (a
    /// registration that settles or is abandoned, the last release in flight that ends), and
    /// at most until `deadline` if there is one: whether it holds.
    async fn settled_until(
        &self,
        deadline: Option<tokio::time::Instant>,
        mut done: impl FnMut() -> bool,
    ) -> bool {
        loop {
            // Enabled before the look, so that a wake in between is not missed.
            let woken = self.settled.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if done() {
                return true;
            }
            match deadline {
                Some(deadline) => {
                    if tokio::time::timeout_at(deadline, woken).await.is_err() {
                        return done();
                    }
                }
                None => woken.await,
            }
        }
    }

    fn holds(&self, identity: &str) -> bool {
        lock(&self.claims).contains(identity)
    }

    /// The OCPP version recorded with this node's claim on `identity`.
    pub(crate) fn version_of(&self, identity: &str) -> Option<OcppVersion> {
        lock(&self.claims).version_of(identity)
    }
}
