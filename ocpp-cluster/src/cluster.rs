//! One node of the cluster: its claims, its inbox, its calls (the async face).

use std::collections::HashMap;
use std::future::Future;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::{FutureExt, StreamExt};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::task::JoinHandle;

use crate::scripts::Scripts;
use crate::{wire, CallFailure, ClusterConfig, ClusterError, CommandOutcome, Executor};

/// The WebSocket close code (RFC 6455 §7.4.1, policy violation) a server closes a socket with
/// when its claim was superseded by a newer connection on another node.
pub const CLOSE_SUPERSEDED: u16 = 1008;

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
/// How often the inbox connection is pinged (a dead Redis that keeps the socket open is
/// noticed within this plus the Redis timeout).
const INBOX_PING: Duration = Duration::from_secs(1);

/// Names one local claim: a server holds it with the connection that made it, and releases with
/// it, so that a stale connection's release never drops a newer connection's claim.
/// Non-zero, so that an `Option<ClaimTicket>` in every socket record is 8 bytes, not 16.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClaimTicket(NonZeroU64);

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
    /// The epoch that was superseded (0 if it had never been registered).
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClaimState {
    /// Not registered in Redis (Redis down); the next refresh round claims it.
    Pending,
    /// `claim.lua` in flight.
    Registering,
    /// Registered under this epoch.
    Held(u64),
}

#[derive(Debug)]
struct LocalClaim {
    ticket: ClaimTicket,
    state: ClaimState,
    /// A `superseded` message that arrived while `claim.lua` was in flight: (epoch, by_node,
    /// by_epoch). Applied when the registration returns that epoch.
    early: Option<(u64, String, u64)>,
}

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
///     -> BoxFuture<CommandOutcome> { Box::pin(async { CommandOutcome::Result("{}".into()) }) };
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

struct Shared {
    config: ClusterConfig,
    client: redis::Client,
    redis: ConnectionManager,
    scripts: Scripts,
    executor: Arc<dyn Executor>,
    events: mpsc::UnboundedSender<ClusterEvent>,
    claims: Mutex<HashMap<String, LocalClaim>>,
    pending: Mutex<HashMap<String, oneshot::Sender<CommandOutcome>>>,
    /// Command ids executed or dropped here, with the time (Unix ms) they may be forgotten.
    seen: Mutex<HashMap<String, u64>>,
    next_ticket: AtomicU64,
    next_request: AtomicU64,
    /// A random tag making command ids unique across restarts of a node.
    instance: String,
    started_ms: u64,
    inbox_up: AtomicBool,
    draining: AtomicBool,
    refresh_now: Notify,
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

fn parse_epoch(text: &str) -> Result<u64, ClusterError> {
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
        let client = redis::Client::open(config.redis_url.as_str())
            .map_err(|e| ClusterError::Config(format!("redis url: {e}")))?;
        let manager_config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(config.redis_timeout))
            .set_response_timeout(Some(config.redis_timeout))
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(20))
            .set_max_delay(config.redis_timeout);
        let redis = ConnectionManager::new_lazy_with_config(client.clone(), manager_config)?;
        let (events, events_rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            config,
            client,
            redis,
            scripts: Scripts::new(),
            executor,
            events,
            claims: Mutex::new(HashMap::new()),
            pending: Mutex::new(HashMap::new()),
            seen: Mutex::new(HashMap::new()),
            next_ticket: AtomicU64::new(1),
            next_request: AtomicU64::new(1),
            instance: format!("{:016x}", fastrand::u64(..)),
            started_ms: unix_ms(),
            inbox_up: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            refresh_now: Notify::new(),
            registered: Notify::new(),
            round: tokio::sync::Mutex::new(()),
            housekeeping: tokio::sync::Semaphore::new(HOUSEKEEPING_CONCURRENCY),
        });
        let inbox = runtime.spawn(Arc::clone(&shared).inbox_loop());
        let refresh = runtime.spawn(Arc::clone(&shared).refresh_loop());
        Ok((
            Cluster {
                shared,
                _tasks: Arc::new(Tasks(vec![inbox, refresh])),
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
        let ticket = self.shared.hold(identity);
        let epoch = self.shared.register(identity, ticket).await.ok().flatten();
        Claim {
            identity: identity.to_owned(),
            ticket,
            epoch,
        }
    }

    /// Holds `identity` locally at once and returns its ticket; registration runs in the
    /// background (what a non-async caller needs).
    pub(crate) fn hold(&self, identity: &str) -> ClaimTicket {
        self.shared.hold(identity)
    }

    pub(crate) async fn register(&self, identity: &str, ticket: ClaimTicket) -> Option<u64> {
        self.shared.register(identity, ticket).await.ok().flatten()
    }

    /// The charge point left: drops the local claim made with `ticket` (if it is still the
    /// current one) and its Redis claim if it is still this node's epoch (`release.lua`).
    /// `Ok(true)`: released in Redis; `Ok(false)`: nothing of ours to release. On an error the
    /// local claim is gone all the same and the Redis claim expires with its TTL.
    pub async fn release(&self, identity: &str, ticket: ClaimTicket) -> Result<bool, ClusterError> {
        let epoch = self.forget(identity, ticket);
        self.release_registered(identity, epoch).await
    }

    /// Drops the local claim made with `ticket` if it is still the current one; its epoch if it
    /// was registered.
    pub(crate) fn forget(&self, identity: &str, ticket: ClaimTicket) -> Option<u64> {
        let mut claims = lock(&self.shared.claims);
        match claims.get(identity) {
            Some(c) if c.ticket == ticket => match claims.remove(identity).map(|c| c.state) {
                Some(ClaimState::Held(epoch)) => Some(epoch),
                _ => None,
            },
            _ => None,
        }
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
        lock(&self.shared.claims).get(identity).map(|c| Claim {
            identity: identity.to_owned(),
            ticket: c.ticket,
            epoch: match c.state {
                ClaimState::Held(e) => Some(e),
                _ => None,
            },
        })
    }

    /// Every claim this node holds.
    pub fn claims(&self) -> Vec<Claim> {
        lock(&self.shared.claims)
            .iter()
            .map(|(identity, c)| Claim {
                identity: identity.clone(),
                ticket: c.ticket,
                epoch: match c.state {
                    ClaimState::Held(e) => Some(e),
                    _ => None,
                },
            })
            .collect()
    }

    /// Where `identity` is connected according to Redis: the holder's node id and the claim's
    /// epoch, or `None` without a live claim (one Redis call, bounded).
    pub async fn locate(&self, identity: &str) -> Result<Option<(String, u64)>, ClusterError> {
        let mut redis = self.shared.redis.clone();
        let (node, epoch): (Option<String>, Option<String>) = self
            .shared
            .bounded(
                redis::cmd("HMGET")
                    .arg(self.shared.config.claim_key(identity))
                    .arg("node")
                    .arg("epoch")
                    .query_async(&mut redis),
            )
            .await?;
        match (node, epoch) {
            (Some(node), Some(epoch)) if !node.is_empty() => Ok(Some((node, parse_epoch(&epoch)?))),
            _ => Ok(None),
        }
    }

    /// Sends CALL `action` with `payload_json` to charge point `identity` wherever it is
    /// connected and returns the CALLRESULT payload (JSON text). Exactly one answer within
    /// `timeout`; the command runs at most once, and not at all past its deadline. A charge
    /// point held here runs through the local executor without Redis.
    pub async fn call(
        &self,
        identity: &str,
        action: &str,
        payload_json: &str,
        timeout: Duration,
    ) -> Result<String, CallFailure> {
        let deadline = Instant::now() + timeout;
        let deadline_ms = unix_ms() + millis(timeout);
        let work = self
            .shared
            .call(identity, action, payload_json, deadline, deadline_ms);
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

    /// Leaves the cluster (SIGTERM, after the server closed its sockets with 1012): releases
    /// every claim still this node's and deletes the node record; the node registers nothing
    /// more afterwards. Returns how many claims were released in Redis.
    pub async fn drain(&self) -> Result<usize, ClusterError> {
        self.shared.drain().await
    }
}

/// Puts a claim whose `claim.lua` did not complete (the future was dropped) back to
/// `Pending`, so that the next refresh round registers it.
struct InFlight<'a> {
    shared: &'a Shared,
    identity: &'a str,
    ticket: ClaimTicket,
    armed: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.armed {
            if let Some(c) = lock(&self.shared.claims).get_mut(self.identity) {
                if c.ticket == self.ticket && c.state == ClaimState::Registering {
                    c.state = ClaimState::Pending;
                    c.early = None;
                }
            }
        }
    }
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

    async fn bounded<T>(
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

    fn hold(&self, identity: &str) -> ClaimTicket {
        // The counter starts at 1; it would reach 0 again only after 2^64 claims.
        let number = self.next_ticket.fetch_add(1, Ordering::Relaxed);
        let ticket = ClaimTicket(NonZeroU64::new(number).unwrap_or(NonZeroU64::MIN));
        lock(&self.claims).insert(
            identity.to_owned(),
            LocalClaim {
                ticket,
                state: ClaimState::Pending,
                early: None,
            },
        );
        ticket
    }

    /// Runs `claim.lua` for a local claim in state `Pending` (moved to `Registering` for the
    /// time it runs; back to `Pending` if this future is dropped or Redis fails). `Ok(None)`:
    /// nothing to do (released, or another registration of it is in flight).
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
        let in_flight = {
            let mut claims = lock(&self.claims);
            match claims.get_mut(identity) {
                Some(c) if c.ticket == ticket && c.state == ClaimState::Pending => {
                    c.state = ClaimState::Registering;
                    false
                }
                Some(c) if c.ticket == ticket => match c.state {
                    ClaimState::Held(epoch) => return Ok(Some(epoch)),
                    _ => true,
                },
                _ => return Ok(None),
            }
        };
        if in_flight {
            let wait = self.config.redis_timeout + Duration::from_millis(100);
            let _ = tokio::time::timeout(wait, done).await;
            return Ok(self.epoch_of(identity, ticket));
        }
        let mut in_flight = InFlight {
            shared: self,
            identity,
            ticket,
            armed: true,
        };
        let config = &self.config;
        let mut redis = self.redis.clone();
        let answer: Result<Vec<String>, ClusterError> = match self.housekeeping_permit().await {
            Ok(_permit) => {
                self.bounded(
                    self.scripts
                        .claim
                        .key(config.claim_key(identity))
                        .key(config.epoch_key())
                        .arg(&config.node_id)
                        .arg(millis(config.claim_ttl))
                        .arg(config.inbox_prefix())
                        .arg(identity)
                        .invoke_async(&mut redis),
                )
                .await
            }
            Err(e) => Err(e),
        };
        let epoch = answer.and_then(|v| parse_epoch(v.first().map(String::as_str).unwrap_or("")));
        // Decided under the lock, acted on after it.
        enum Then {
            Done,
            Lost(Superseded),
            GiveBack(u64),
        }
        in_flight.armed = false;
        let then = {
            let mut claims = lock(&self.claims);
            let newer = claims.get(identity).is_some_and(|c| c.ticket != ticket);
            match (
                &epoch,
                claims.get_mut(identity).filter(|c| c.ticket == ticket),
            ) {
                (Ok(epoch), Some(claim)) => match claim.early.take() {
                    Some((early, by_node, by_epoch)) if early == *epoch => {
                        claims.remove(identity);
                        Then::Lost(Superseded {
                            identity: identity.to_owned(),
                            ticket,
                            epoch: *epoch,
                            by_node,
                            by_epoch,
                        })
                    }
                    _ => {
                        claim.state = ClaimState::Held(*epoch);
                        Then::Done
                    }
                },
                // Released (or replaced by a newer local claim) while claim.lua ran. A newer
                // local claim owns the key now (refresh adopts it); otherwise give it back.
                (Ok(epoch), None) if !newer => Then::GiveBack(*epoch),
                (Ok(_), None) => Then::Done,
                (Err(e), Some(claim)) => {
                    claim.state = ClaimState::Pending;
                    claim.early = None;
                    tracing::warn!(identity, error = %e, "claim not registered; retried when Redis answers");
                    Then::Done
                }
                (Err(_), None) => Then::Done,
            }
        };
        // Wake a registration waiting on this one, now that the state is settled.
        self.registered.notify_waiters();
        match then {
            Then::Done => {}
            Then::Lost(lost) => self.emit(lost),
            Then::GiveBack(epoch) => {
                let _ = self.release_epoch(identity, epoch).await;
            }
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
        match lock(&self.claims).get(identity) {
            Some(c) if c.ticket == ticket => match c.state {
                ClaimState::Held(epoch) => Some(epoch),
                _ => None,
            },
            _ => None,
        }
    }

    fn holds(&self, identity: &str) -> bool {
        lock(&self.claims).contains_key(identity)
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
            return CommandOutcome::Timeout;
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
                tracing::error!(identity, action, "the executor panicked");
                CommandOutcome::CallError {
                    code: "InternalError".to_owned(),
                    description: "the command's executor failed".to_owned(),
                    details: "{}".to_owned(),
                }
            }
            Err(_) => CommandOutcome::Timeout,
        }
    }

    async fn call(
        &self,
        identity: &str,
        action: &str,
        payload_json: &str,
        deadline: Instant,
        deadline_ms: u64,
    ) -> Result<String, CallFailure> {
        for attempt in 0..2 {
            if self.holds(identity) {
                return self
                    .execute_local(identity, action, payload_json, deadline_ms)
                    .await
                    .into_result();
            }
            let Ok(payload) = serde_json::from_str::<&RawValue>(payload_json) else {
                return Err(CallFailure::CallError {
                    code: "InternalError".to_owned(),
                    description: "the command's payload is not valid JSON".to_owned(),
                    details: "{}".to_owned(),
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
            })
            .map_err(|_| CallFailure::OwnerUnreachable)?;
            let (tx, rx) = oneshot::channel();
            lock(&self.pending).insert(id.clone(), tx);
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
                        .arg(config.node_prefix())
                        .arg(config.inbox_prefix())
                        .arg(&config.node_id)
                        .arg(&message)
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
                Some("dead") | Some("unreachable") => return Err(CallFailure::OwnerUnreachable),
                Some("sent") => {}
                _ => return Err(CallFailure::OwnerUnreachable),
            }
            let outcome = match tokio::time::timeout_at(deadline.into(), rx).await {
                Ok(Ok(outcome)) => outcome,
                // The slot was dropped (cannot happen while we hold it) or the deadline passed.
                _ => return Err(CallFailure::Timeout),
            };
            if outcome == CommandOutcome::NotConnected && attempt == 0 {
                // The holder lost it between our lookup and its delivery: look again once.
                continue;
            }
            return outcome.into_result();
        }
        Err(CallFailure::NotConnected)
    }

    async fn inbox_loop(self: Arc<Self>) {
        let channel = format!("{}{}", self.config.inbox_prefix(), self.config.node_id);
        let mut backoff = Duration::from_millis(50);
        loop {
            match self.subscribe(&channel).await {
                Ok((mut sink, mut stream)) => {
                    backoff = Duration::from_millis(50);
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
                    tracing::warn!(node = %self.config.node_id, "inbox connection lost");
                }
                Err(e) => {
                    tracing::debug!(node = %self.config.node_id, error = %e, "inbox subscribe failed");
                }
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(1));
        }
    }

    async fn subscribe(
        &self,
        channel: &str,
    ) -> Result<(redis::aio::PubSubSink, redis::aio::PubSubStream), ClusterError> {
        let pubsub = self.bounded(self.client.get_async_pubsub()).await?;
        let (mut sink, stream) = pubsub.split();
        self.bounded(sink.subscribe(channel)).await?;
        Ok((sink, stream))
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
                    if let Some(tx) = lock(&self.pending).remove(&*reply.id) {
                        let _ = tx.send(reply.outcome());
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

    fn superseded(&self, msg: wire::Superseded<'_>) {
        let mut claims = lock(&self.claims);
        let Some(claim) = claims.get_mut(&*msg.identity) else {
            return;
        };
        match claim.state {
            ClaimState::Held(epoch) if epoch == msg.epoch => {
                let ticket = claim.ticket;
                claims.remove(&*msg.identity);
                drop(claims);
                self.emit(Superseded {
                    identity: msg.identity.into_owned(),
                    ticket,
                    epoch: msg.epoch,
                    by_node: msg.by_node.into_owned(),
                    by_epoch: msg.by_epoch,
                });
            }
            ClaimState::Registering => {
                claim.early = Some((msg.epoch, msg.by_node.into_owned(), msg.by_epoch));
            }
            _ => {}
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
            CommandOutcome::Timeout
        } else if !self.holds(&command.identity) {
            CommandOutcome::NotConnected
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
        let node_result = self.write_node_record().await;
        let work: Vec<(String, ClaimTicket, ClaimState)> = {
            lock(&self.claims)
                .iter()
                .map(|(identity, c)| (identity.clone(), c.ticket, c.state))
                .collect()
        };
        let results: Vec<Result<Option<Superseded>, ClusterError>> =
            futures_util::stream::iter(work)
                .map(|(identity, ticket, state)| async move {
                    match state {
                        ClaimState::Pending => self.register(&identity, ticket).await.map(|_| None),
                        ClaimState::Registering => Ok(None),
                        ClaimState::Held(epoch) => {
                            self.refresh_claim(&identity, ticket, epoch).await
                        }
                    }
                })
                .buffer_unordered(REFRESH_CONCURRENCY)
                .collect()
                .await;
        // The first call after Redis came back can fail on the old connection (which makes the
        // manager reconnect): claims registered but no node record would read as a dead node.
        let node_result = match node_result {
            Ok(()) => Ok(()),
            Err(_) => self.write_node_record().await,
        };
        let mut lost = Vec::new();
        let mut first_error = node_result.err();
        for result in results {
            match result {
                Ok(Some(superseded)) => lost.push(superseded),
                Ok(None) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(lost),
        }
    }

    async fn write_node_record(&self) -> Result<(), ClusterError> {
        let config = &self.config;
        let key = format!("{}{}", config.node_prefix(), config.node_id);
        let mut pipe = redis::pipe();
        pipe.atomic()
            .hset_multiple(
                &key,
                &[
                    ("node", config.node_id.clone()),
                    ("address", config.address.clone()),
                    ("started_ms", self.started_ms.to_string()),
                    ("instance", self.instance.clone()),
                ],
            )
            .ignore()
            .pexpire(&key, millis(config.node_ttl) as i64)
            .ignore();
        let mut redis = self.redis.clone();
        self.bounded(pipe.query_async::<()>(&mut redis)).await
    }

    async fn refresh_claim(
        &self,
        identity: &str,
        ticket: ClaimTicket,
        epoch: u64,
    ) -> Result<Option<Superseded>, ClusterError> {
        let config = &self.config;
        let mut redis = self.redis.clone();
        let answer: Vec<String> = self
            .bounded(
                self.scripts
                    .refresh
                    .key(config.claim_key(identity))
                    .key(config.epoch_key())
                    .arg(&config.node_id)
                    .arg(millis(config.claim_ttl))
                    .invoke_async(&mut redis),
            )
            .await?;
        let field = |i: usize| answer.get(i).map(String::as_str).unwrap_or("");
        let mut claims = lock(&self.claims);
        let Some(claim) = claims
            .get_mut(identity)
            .filter(|c| c.ticket == ticket && c.state == ClaimState::Held(epoch))
        else {
            return Ok(None);
        };
        match field(0) {
            "held" | "restored" => {
                let now_epoch = parse_epoch(field(1))?;
                if field(0) == "restored" {
                    tracing::info!(identity, epoch = now_epoch, "claim restored");
                }
                claim.state = ClaimState::Held(now_epoch);
                Ok(None)
            }
            "lost" => {
                claims.remove(identity);
                drop(claims);
                let lost = Superseded {
                    identity: identity.to_owned(),
                    ticket,
                    epoch,
                    by_node: field(1).to_owned(),
                    by_epoch: parse_epoch(field(2)).unwrap_or(0),
                };
                self.emit(lost.clone());
                Ok(Some(lost))
            }
            other => Err(ClusterError::Protocol(format!(
                "refresh.lua answered {other:?}"
            ))),
        }
    }

    async fn drain(&self) -> Result<usize, ClusterError> {
        let _round = self.round.lock().await;
        self.draining.store(true, Ordering::Release);
        let held: Vec<(String, ClaimState)> = lock(&self.claims)
            .drain()
            .map(|(identity, c)| (identity, c.state))
            .collect();
        let results: Vec<Result<bool, ClusterError>> = futures_util::stream::iter(held)
            .map(|(identity, state)| async move {
                match state {
                    ClaimState::Held(epoch) => self.release_epoch(&identity, epoch).await,
                    _ => Ok(false),
                }
            })
            .buffer_unordered(REFRESH_CONCURRENCY)
            .collect()
            .await;
        let key = format!("{}{}", self.config.node_prefix(), self.config.node_id);
        let mut redis = self.redis.clone();
        let deleted = self
            .bounded(redis::cmd("DEL").arg(key).query_async::<i64>(&mut redis))
            .await;
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
