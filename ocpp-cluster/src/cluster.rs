//! One node of the cluster: its claims, its inbox, its calls (the async face).

use std::collections::HashMap;
use std::future::Future;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::{FutureExt, StreamExt};
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::task::JoinHandle;

use crate::claims::{Begin, ClaimTable, RefreshReply, Refreshed, Registered, Work};
use crate::link::RedisLink;
use crate::scripts::Scripts;
use crate::{wire, CallFailure, ClusterConfig, ClusterError, CommandOutcome, Executor};
use ocpp_server_core::OcppVersion;

/// The WebSocket close code (RFC 6455 §7.4.1, policy violation) a server closes a socket with
/// when its claim was superseded by a newer connection on another node.
pub const CLOSE_SUPERSEDED: u16 = 1008;

/// The close reason sent with [`CLOSE_SUPERSEDED`] (the same from every server).
pub const CLOSE_SUPERSEDED_REASON: &str = "connected to another node";

/// How long a command id is remembered past its deadline, to drop a duplicate delivery.
const SEEN_GRACE_MS: u64 = 60_000;
/// How many claims one refresh round sends to Redis at once.
const REFRESH_CONCURRENCY: usize = 64;
/// How many claim.lua / release.lua calls of one node may wait on Redis at once. A storm of
/// connects or disconnects queues for these instead of piling every script onto the one
/// connection, where each waits behind all the others and times out: measured with 100,000
/// charge points leaving six nodes at once (Redis on the nodes' core), 138,089 releases timed
/// out at 500 ms without the bound (`bench/cluster.sh`).
const HOUSEKEEPING_CONCURRENCY: usize = 256;
/// How long a claim or release waits for one of those permits before it gives up as a
/// timeout (a claim is then registered by the next refresh round, a release left to the TTL).
const HOUSEKEEPING_QUEUE_WAIT: Duration = Duration::from_secs(10);
/// How long a drain waits for the releases in flight (those of connections that closed just
/// before the shutdown).
const RELEASES_WAIT: Duration = Duration::from_secs(1);
/// The first wait before the inbox subscribes again after a failed attempt or a lost
/// connection; it doubles up to [`INBOX_BACKOFF_MAX`], and a move of the Redis master cuts it
/// short.
const INBOX_BACKOFF_MIN: Duration = Duration::from_millis(50);
/// The longest wait between two inbox subscription attempts.
const INBOX_BACKOFF_MAX: Duration = Duration::from_secs(1);
/// How often the inbox connection is pinged (a dead Redis that keeps the socket open is
/// noticed within this plus the Redis timeout).
const INBOX_PING: Duration = Duration::from_secs(1);

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
pub struct Superseded {
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
    Superseded(Superseded),
}

/// The events of one node, in the order they happened (unbounded: read them).
pub type ClusterEvents = mpsc::UnboundedReceiver<ClusterEvent>;

/// One node of the cluster: a cheap handle to clone. Dropping the last handle stops the node's
/// background tasks without releasing anything (as a crash would: the claims expire); call
/// [`Cluster::drain`] first to leave cleanly.
///
/// ```no_run
/// use std::time::Duration;
/// use ocpp_cluster::{BoxFuture, Cluster, ClusterConfig, ClusterEvent, CommandOutcome};
///
/// # async fn run() -> Result<(), ocpp_cluster::ClusterError> {
/// // How this node runs a command for a charge point it holds (here: answers at once).
/// let executor = |_id: &str, _action: &str, _payload: &str, _timeout: Duration|
///     -> BoxFuture<CommandOutcome> { Box::pin(async { Ok("{}".to_owned()) }) };
/// let config = ClusterConfig::new("redis://127.0.0.1:6379/", "csms-a");
/// let (cluster, mut events) = Cluster::start(config, executor)?;
///
/// // A charge point connected here.
/// let claim = cluster.claim("CP-1").await;
/// // A command for a charge point on any node.
/// match cluster.call("CP-2", "Reset", r#"{"type":"Soft"}"#, Duration::from_secs(30)).await {
///     Ok(payload) => println!("CALLRESULT {payload}"),
///     Err(failure) => println!("{failure} (HTTP {})", failure.http_status()),
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
    shared: Arc<Shared>,
    _tasks: Arc<Tasks>,
}

/// One release in flight ([`Cluster::release_started`]); counted down when dropped (also when
/// its task is cancelled).
pub(crate) struct ReleaseInFlight(Arc<Shared>);

impl Drop for ReleaseInFlight {
    fn drop(&mut self) {
        if self.0.releases.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.releases_done.notify_waiters();
        }
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

pub(crate) struct Shared {
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
    /// Releases in flight ([`Cluster::release_started`]), and their end.
    releases: AtomicUsize,
    releases_done: Notify,
    /// The runtime the node started on (tasks of [`Cluster::release_later`]).
    runtime: tokio::runtime::Handle,
    refresh_now: Notify,
    /// The `<p>:since` under which this node last registered every claim it held (a refresh
    /// round without an error), announced in its node record (`announce.lua`): `None` before
    /// its first such round.
    synced: Mutex<Option<String>>,
    /// Woken after each claim.lua, for a registration that waits on another.
    registered: Notify,
    round: tokio::sync::Mutex<()>,
    /// Permits for claim.lua and release.lua ([`HOUSEKEEPING_CONCURRENCY`]); the Redis
    /// timeout counts from the permit, so it measures Redis, not this queue.
    housekeeping: tokio::sync::Semaphore,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("node_id", &self.config.node_id)
            .field("instance", &self.instance)
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
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
        let shared = Arc::new(Shared {
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
            releases_done: Notify::new(),
            runtime: runtime.clone(),
            refresh_now: Notify::new(),
            synced: Mutex::new(None),
            registered: Notify::new(),
            round: tokio::sync::Mutex::new(()),
            housekeeping: tokio::sync::Semaphore::new(HOUSEKEEPING_CONCURRENCY),
        });
        let inbox = runtime.spawn(Arc::clone(&shared).inbox_loop());
        let refresh = runtime.spawn(Arc::clone(&shared).refresh_loop());
        let moves = runtime.spawn(Arc::clone(&shared).moves_loop());
        let announce = runtime.spawn(Arc::clone(&shared).announce_loop());
        Ok((
            Cluster {
                shared,
                _tasks: Arc::new(Tasks(vec![inbox, refresh, moves, announce])),
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
    /// at most the Redis timeout.
    pub async fn claim(&self, identity: &str) -> Claim {
        self.claim_as(identity, None).await
    }

    /// [`Cluster::claim`], recording the OCPP version of the charge point's connection with
    /// the claim, for the other nodes ([`Cluster::locate`], [`Cluster::list`]): an application
    /// on any node can then pick the action that version has.
    ///
    /// ```no_run
    /// # async fn run(cluster: ocpp_cluster::Cluster) {
    /// use ocpp_server_core::OcppVersion;
    /// let claim = cluster.claim_as("CP-1", Some(OcppVersion::V2_0_1)).await;
    /// # }
    /// ```
    pub async fn claim_as(&self, identity: &str, version: Option<OcppVersion>) -> Claim {
        let ticket = self.shared.hold(identity, version);
        let epoch = self.shared.register(identity, ticket).await.ok().flatten();
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
        self.shared.register(identity, ticket).await.ok().flatten()
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
        self.shared.releases.fetch_add(1, Ordering::AcqRel);
        ReleaseInFlight(Arc::clone(&self.shared))
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

    pub(crate) fn shared(&self) -> &Shared {
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
    /// use ocpp_server_core::OcppVersion;
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
    pub async fn refresh(&self) -> Result<Vec<Superseded>, ClusterError> {
        self.shared.round().await
    }

    /// Leaves the cluster (SIGTERM, after the server closed its sockets with 1012): waits
    /// (at most a second) for the releases in flight, releases every claim still this node's
    /// and deletes the node record; the node registers nothing more afterwards. Returns how
    /// many claims were released in Redis by the drain itself.
    pub async fn drain(&self) -> Result<usize, ClusterError> {
        self.shared.releases_done().await;
        self.shared.drain().await
    }
}

/// Puts a claim whose `claim.lua` did not complete (the future was dropped) back to
/// `Pending`, so that the next refresh round registers it (or drops it, if a `superseded`
/// message kept meanwhile says so: [`ClaimTable::register_done`]).
struct InFlight<'a> {
    shared: &'a Shared,
    identity: &'a str,
    ticket: ClaimTicket,
    armed: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.armed {
            let lost = lock(&self.shared.claims).register_abandoned(self.identity, self.ticket);
            if let Some(lost) = lost {
                self.shared.emit(lost);
            }
        }
    }
}

/// A remote call waiting for its reply.
struct PendingReply {
    /// The master the link used when the command was routed ([`RedisLink::generation`]): once
    /// the link moves from it, the reply may be lost in the switch.
    generation: Option<u64>,
    reply: oneshot::Sender<CommandOutcome>,
}

/// Removes a pending call's reply slot however the call ends (answer, timeout, cancel).
struct PendingSlot<'a> {
    shared: &'a Shared,
    id: String,
}

impl Drop for PendingSlot<'_> {
    fn drop(&mut self) {
        lock(&self.shared.pending).remove(&self.id);
    }
}

impl Shared {
    /// Waits (bounded) for a permit to run claim.lua or release.lua. The semaphore is never
    /// closed, so the only failure is the wait running out.
    async fn housekeeping_permit(&self) -> Result<tokio::sync::SemaphorePermit<'_>, ClusterError> {
        match tokio::time::timeout(HOUSEKEEPING_QUEUE_WAIT, self.housekeeping.acquire()).await {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_)) | Err(_) => Err(ClusterError::RedisTimeout(HOUSEKEEPING_QUEUE_WAIT)),
        }
    }

    pub(crate) async fn bounded<T>(
        &self,
        work: impl Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, ClusterError> {
        match tokio::time::timeout(self.config.redis_timeout, work).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(ClusterError::Redis(e)),
            Err(_) => Err(ClusterError::RedisTimeout(self.config.redis_timeout)),
        }
    }

    fn emit(&self, lost: Superseded) {
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

    /// Runs `claim.lua` for a local claim in state `Pending` (moved to `Registering` for the
    /// time it runs; back to `Pending` if this future is dropped or Redis fails). `Ok(None)`:
    /// nothing to do (released, or another registration of it is in flight). What the answer
    /// means is [`ClaimTable::register_done`]'s.
    async fn register(
        &self,
        identity: &str,
        ticket: ClaimTicket,
    ) -> Result<Option<u64>, ClusterError> {
        // Another registration of this claim (a refresh round) may be in flight: wait for it
        // (bounded) rather than run claim.lua twice.
        let done = self.registered.notified();
        tokio::pin!(done);
        done.as_mut().enable();
        let begin = lock(&self.claims).begin_register(identity, ticket);
        match begin {
            Begin::Run => {}
            Begin::InFlight => {
                let wait = self.config.redis_timeout + Duration::from_millis(100);
                let _ = tokio::time::timeout(wait, done).await;
                return Ok(self.epoch_of(identity, ticket));
            }
            Begin::Held(epoch) => return Ok(Some(epoch)),
            Begin::Gone => return Ok(None),
        }
        let mut in_flight = InFlight {
            shared: self,
            identity,
            ticket,
            armed: true,
        };
        let config = &self.config;
        let version = lock(&self.claims).version_of(identity);
        let mut redis = self.redis.clone();
        let answer: Result<Vec<String>, ClusterError> = match self.housekeeping_permit().await {
            Ok(_permit) => {
                self.bounded(
                    self.scripts
                        .claim
                        .key(config.claim_key(identity))
                        .key(config.epoch_key())
                        .key(config.since_key())
                        .arg(&config.node_id)
                        .arg(millis(config.claim_ttl))
                        .arg(config.inbox_prefix())
                        .arg(identity)
                        .arg(version.map(OcppVersion::subprotocol).unwrap_or(""))
                        .invoke_async(&mut redis),
                )
                .await
            }
            Err(e) => Err(e),
        };
        let epoch = answer.and_then(|v| parse_epoch(v.first().map(String::as_str).unwrap_or("")));
        in_flight.armed = false;
        let then = lock(&self.claims).register_done(identity, ticket, epoch.as_ref().ok().copied());
        // Wake a registration waiting on this one, now that the state is settled.
        self.registered.notify_waiters();
        match then {
            Registered::Held { epoch, recheck } => {
                if recheck {
                    // A refresh round passed over this claim while claim.lua ran: refresh it
                    // now, for a takeover whose message the inbox may have dropped.
                    if let Err(e) = self.refresh_claim(identity, ticket, epoch).await {
                        tracing::debug!(identity, error = %e, "refresh after registration failed");
                    }
                }
            }
            Registered::Lost(lost) => self.emit(lost),
            Registered::Pending => {
                if let Err(e) = &epoch {
                    tracing::warn!(identity, error = %e, "claim not registered; retried when Redis answers");
                }
            }
            Registered::GiveBack(epoch) => {
                let _ = self.release_epoch(identity, epoch).await;
            }
            Registered::Nothing => {}
        }
        epoch.map(Some)
    }

    async fn release_epoch(&self, identity: &str, epoch: u64) -> Result<bool, ClusterError> {
        let config = &self.config;
        let mut redis = self.redis.clone();
        let _permit = self.housekeeping_permit().await?;
        let released: i64 = self
            .bounded(
                self.scripts
                    .release
                    .key(config.claim_key(identity))
                    .arg(&config.node_id)
                    .arg(epoch.to_string())
                    .arg(millis(config.claim_ttl))
                    .invoke_async(&mut redis),
            )
            .await?;
        Ok(released == 1)
    }

    fn epoch_of(&self, identity: &str, ticket: ClaimTicket) -> Option<u64> {
        lock(&self.claims).epoch_of(identity, ticket)
    }

    fn holds(&self, identity: &str) -> bool {
        lock(&self.claims).contains(identity)
    }

    /// The OCPP version recorded with this node's claim on `identity`.
    pub(crate) fn version_of(&self, identity: &str) -> Option<OcppVersion> {
        lock(&self.claims).version_of(identity)
    }

    async fn execute_local(
        &self,
        identity: &str,
        action: &str,
        payload_json: &str,
        deadline_ms: u64,
    ) -> CommandOutcome {
        let now = unix_ms();
        if now >= deadline_ms {
            return Err(CallFailure::DeadlinePassed);
        }
        let left = Duration::from_millis(deadline_ms - now);
        // A panicking executor is the server's bug; the caller still gets one answer.
        let work = std::panic::AssertUnwindSafe(async {
            self.executor
                .execute(identity, action, payload_json, left)
                .await
        })
        .catch_unwind();
        match tokio::time::timeout(left, work).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => {
                // Nothing says whether it wrote the CALL: an answer that may have run.
                tracing::error!(identity, action, "the executor panicked");
                Err(CallFailure::Timeout)
            }
            Err(_) => Err(CallFailure::Timeout),
        }
    }

    /// Whether this node holds `identity` on a connection of another OCPP version than
    /// `version` (a subprotocol name); `false` when either is not known.
    fn wrong_version(&self, identity: &str, version: Option<&str>) -> bool {
        let held = lock(&self.claims).version_of(identity);
        matches!((held, version), (Some(held), Some(asked)) if held.subprotocol() != asked)
    }

    async fn call(
        &self,
        identity: &str,
        version: Option<&str>,
        action: &str,
        payload_json: &str,
        deadline: Instant,
        deadline_ms: u64,
    ) -> Result<String, CallFailure> {
        for attempt in 0..2 {
            if self.holds(identity) {
                if self.wrong_version(identity, version) {
                    return Err(CallFailure::WrongVersion);
                }
                return self
                    .execute_local(identity, action, payload_json, deadline_ms)
                    .await;
            }
            let Ok(payload) = serde_json::from_str::<&RawValue>(payload_json) else {
                return Err(CallFailure::InvalidRequest {
                    description: "the command's payload is not valid JSON".to_owned(),
                });
            };
            if !self.inbox_up.load(Ordering::Acquire) {
                // Redis is down, or our inbox is: no answer could come back.
                return Err(CallFailure::OwnerUnreachable);
            }
            let id = format!(
                "{}-{}-{}",
                self.config.node_id,
                self.instance,
                self.next_request.fetch_add(1, Ordering::Relaxed)
            );
            let message = serde_json::to_string(&wire::Command {
                kind: "command".into(),
                id: id.as_str().into(),
                reply_to: self.config.node_id.as_str().into(),
                identity: identity.into(),
                action: action.into(),
                payload,
                deadline_ms,
                version: version.map(Into::into),
            })
            .map_err(|_| CallFailure::OwnerUnreachable)?;
            let (tx, rx) = oneshot::channel();
            let generation = self.redis.generation();
            lock(&self.pending).insert(
                id.clone(),
                PendingReply {
                    generation,
                    reply: tx,
                },
            );
            let _slot = PendingSlot {
                shared: self,
                id: id.clone(),
            };
            let config = &self.config;
            let mut redis = self.redis.clone();
            let routed: Result<Vec<String>, ClusterError> = self
                .bounded(
                    self.scripts
                        .route
                        .key(config.claim_key(identity))
                        .key(config.since_key())
                        .key(config.nodes_key())
                        .arg(config.node_prefix())
                        .arg(config.inbox_prefix())
                        .arg(&config.node_id)
                        .arg(&message)
                        .arg(millis(config.node_ttl))
                        .invoke_async(&mut redis),
                )
                .await;
            let routed = match routed {
                Ok(routed) => routed,
                Err(e) => {
                    tracing::warn!(identity, error = %e, "routing failed");
                    return Err(CallFailure::OwnerUnreachable);
                }
            };
            match routed.first().map(String::as_str) {
                Some("none") => return Err(CallFailure::NotConnected),
                // Redis names us but we hold nothing: a stale claim of ours (its release failed).
                Some("self") => return Err(CallFailure::NotConnected),
                // Presence cannot know (Redis lost its data moments ago, or the holder stopped
                // refreshing): the charge point may be connected; the CALL was not sent.
                Some("unknown") => return Err(CallFailure::OwnerUnreachable),
                Some("dead") | Some("unreachable") => return Err(CallFailure::OwnerUnreachable),
                Some("sent") => {}
                _ => return Err(CallFailure::OwnerUnreachable),
            }
            let outcome = match tokio::time::timeout_at(deadline.into(), rx).await {
                Ok(Ok(outcome)) => outcome,
                // The slot was dropped (cannot happen while we hold it) or the deadline passed.
                _ => return Err(CallFailure::Timeout),
            };
            // Not sent because the holder no longer held it (it left or moved between our
            // lookup and its delivery): look again once.
            let moved = matches!(
                outcome,
                Err(CallFailure::NotConnected | CallFailure::ClosedBeforeSent)
            );
            if moved && attempt == 0 {
                continue;
            }
            return outcome;
        }
        Err(CallFailure::NotConnected)
    }

    /// On every move of the Redis master (Sentinel; never on a plain URL), answers the remote
    /// calls routed on an earlier master ([`Shared::replies_lost_in_move`]).
    async fn moves_loop(self: Arc<Self>) {
        loop {
            self.redis.moves().wait().await;
            self.replies_lost_in_move();
        }
    }

    /// The link moved to another master: a remote call routed on an earlier one may have lost
    /// its reply in the switch (a reply is a pub/sub message of the master it was published on,
    /// and both nodes leave it), so it is answered now with `timeout` (may have run), not at
    /// its deadline. A reply that still comes is dropped (PROTOCOL.md 1.1).
    fn replies_lost_in_move(&self) {
        let Some(current) = self.redis.generation() else {
            return;
        };
        let lost: Vec<PendingReply> = {
            let mut pending = lock(&self.pending);
            let ids: Vec<String> = pending
                .iter()
                .filter(|(_, p)| p.generation.is_some_and(|g| g != current))
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| pending.remove(id)).collect()
        };
        if !lost.is_empty() {
            tracing::warn!(
                calls = lost.len(),
                "the Redis master moved: remote calls routed before may have lost their reply"
            );
        }
        for pending in lost {
            let _ = pending.reply.send(Err(CallFailure::Timeout));
        }
    }

    async fn inbox_loop(self: Arc<Self>) {
        let channel = format!("{}{}", self.config.inbox_prefix(), self.config.node_id);
        let mut backoff = INBOX_BACKOFF_MIN;
        loop {
            // Fires when the link leaves the master this attempt uses (a failover): the next
            // attempt goes to the new master at once, whatever is left of the backoff
            // (PROTOCOL.md 1.1).
            let moves = self.redis.moves();
            match self.subscribe(&channel).await {
                Ok((mut sink, mut stream, moved)) => {
                    // The link followed a failover: subscribe on the new master.
                    let moved = moved.wait();
                    tokio::pin!(moved);
                    backoff = INBOX_BACKOFF_MIN;
                    self.inbox_up.store(true, Ordering::Release);
                    self.refresh_now.notify_one();
                    tracing::info!(node = %self.config.node_id, "inbox subscribed");
                    let mut ping = tokio::time::interval(INBOX_PING);
                    ping.tick().await;
                    loop {
                        tokio::select! {
                            message = stream.next() => match message {
                                Some(message) => self.dispatch(message.get_payload_bytes()),
                                None => break,
                            },
                            _ = &mut moved => break,
                            _ = ping.tick() => {
                                let pong = tokio::time::timeout(
                                    self.config.redis_timeout,
                                    sink.ping::<redis::Value>(),
                                ).await;
                                if !matches!(pong, Ok(Ok(_))) {
                                    break;
                                }
                            }
                        }
                    }
                    self.inbox_up.store(false, Ordering::Release);
                    self.redis.suspect();
                    tracing::warn!(node = %self.config.node_id, "inbox connection lost");
                }
                Err(e) => {
                    tracing::debug!(node = %self.config.node_id, error = %e, "inbox subscribe failed");
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {
                    backoff = (backoff * 2).min(INBOX_BACKOFF_MAX);
                }
                _ = moves.wait() => {
                    tracing::debug!(node = %self.config.node_id, "the Redis master moved: subscribing there");
                    backoff = INBOX_BACKOFF_MIN;
                }
            }
        }
    }

    async fn subscribe(
        &self,
        channel: &str,
    ) -> Result<
        (
            redis::aio::PubSubSink,
            redis::aio::PubSubStream,
            crate::link::MasterMoved,
        ),
        ClusterError,
    > {
        let (pubsub, moved) = self.bounded(self.redis.pubsub()).await?;
        let (mut sink, stream) = pubsub.split();
        self.bounded(sink.subscribe(channel)).await?;
        Ok((sink, stream, moved))
    }

    fn dispatch(self: &Arc<Self>, bytes: &[u8]) {
        let Ok(text) = std::str::from_utf8(bytes) else {
            tracing::warn!("inbox message is not UTF-8");
            return;
        };
        let Ok(head) = serde_json::from_str::<wire::Head<'_>>(text) else {
            tracing::warn!(message = text, "inbox message without a type");
            return;
        };
        match &*head.kind {
            "reply" => match serde_json::from_str::<wire::Reply<'_>>(text) {
                Ok(reply) => {
                    if let Some(pending) = lock(&self.pending).remove(&*reply.id) {
                        let _ = pending.reply.send(reply.outcome());
                    }
                }
                Err(e) => tracing::warn!(error = %e, "bad reply"),
            },
            "command" => {
                let shared = Arc::clone(self);
                let text = text.to_owned();
                tokio::spawn(async move { shared.run_command(&text).await });
            }
            "superseded" => match serde_json::from_str::<wire::Superseded<'_>>(text) {
                Ok(msg) => self.superseded(msg),
                Err(e) => tracing::warn!(error = %e, "bad superseded message"),
            },
            other => tracing::warn!(kind = other, "unknown inbox message"),
        }
    }

    /// A `superseded` message (PROTOCOL.md 5.3); [`ClaimTable::superseded`] decides.
    fn superseded(&self, msg: wire::Superseded<'_>) {
        let lost =
            lock(&self.claims).superseded(&msg.identity, msg.epoch, &msg.by_node, msg.by_epoch);
        if let Some(lost) = lost {
            self.emit(lost);
        }
    }

    async fn run_command(&self, text: &str) {
        let command = match serde_json::from_str::<wire::Command<'_>>(text) {
            Ok(command) => command,
            Err(e) => {
                tracing::warn!(error = %e, "bad command message");
                return;
            }
        };
        {
            let mut seen = lock(&self.seen);
            if seen.contains_key(&*command.id) {
                tracing::warn!(id = %command.id, "duplicate command dropped");
                return;
            }
            seen.insert(
                command.id.to_string(),
                command.deadline_ms.saturating_add(SEEN_GRACE_MS),
            );
        }
        let outcome = if unix_ms() >= command.deadline_ms {
            tracing::info!(id = %command.id, "command past its deadline: not executed");
            Err(CallFailure::DeadlinePassed)
        } else if !self.holds(&command.identity) {
            Err(CallFailure::NotConnected)
        } else if self.wrong_version(&command.identity, command.version.as_deref()) {
            // As a local connection refuses a request of another version: not sent.
            Err(CallFailure::WrongVersion)
        } else {
            self.execute_local(
                &command.identity,
                &command.action,
                command.payload.get(),
                command.deadline_ms,
            )
            .await
        };
        let reply = wire::encode_reply(&command.id, &outcome);
        let channel = format!("{}{}", self.config.inbox_prefix(), command.reply_to);
        let mut redis = self.redis.clone();
        let sent = self
            .bounded(
                redis::cmd("PUBLISH")
                    .arg(channel)
                    .arg(reply)
                    .query_async::<i64>(&mut redis),
            )
            .await;
        if let Err(e) = sent {
            tracing::warn!(id = %command.id, error = %e, "reply not sent");
        }
    }

    async fn refresh_loop(self: Arc<Self>) {
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

    async fn round(&self) -> Result<Vec<Superseded>, ClusterError> {
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
    async fn announce_loop(self: Arc<Self>) {
        let interval = self.config.announce_interval();
        loop {
            if !self.draining.load(Ordering::Acquire) {
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

    async fn refresh_claim(
        &self,
        identity: &str,
        ticket: ClaimTicket,
        epoch: u64,
    ) -> Result<Option<Superseded>, ClusterError> {
        let config = &self.config;
        let version = lock(&self.claims).version_of(identity);
        let mut redis = self.redis.clone();
        let answer: Vec<String> = self
            .bounded(
                self.scripts
                    .refresh
                    .key(config.claim_key(identity))
                    .key(config.epoch_key())
                    .key(config.since_key())
                    .arg(&config.node_id)
                    .arg(millis(config.claim_ttl))
                    .arg(version.map(OcppVersion::subprotocol).unwrap_or(""))
                    .arg(epoch)
                    .arg(config.inbox_prefix())
                    .arg(identity)
                    .invoke_async(&mut redis),
            )
            .await?;
        let field = |i: usize| answer.get(i).map(String::as_str).unwrap_or("");
        let reply = match field(0) {
            "held" => RefreshReply::Held(parse_epoch(field(1))?),
            "restored" => {
                let epoch = parse_epoch(field(1))?;
                tracing::info!(identity, epoch, "claim restored");
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
    async fn releases_done(&self) {
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

    async fn drain(&self) -> Result<usize, ClusterError> {
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
