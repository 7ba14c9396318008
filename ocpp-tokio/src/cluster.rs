//! The cluster behind the registry (feature `redis`): this server as one node of
//! [`ocpp_cluster`], the Redis protocol of `ocpp-cluster/PROTOCOL.md`, implemented there once.
//!
//! - **Presence**: a connection is claimed when it is registered (after the upgrade, once the
//!   identity is known), both under one lock, so the registry and the local claims agree on
//!   which connection holds an identity; it is released when the connection ends, with its
//!   own [`ClaimTicket`] (a no-op once the claim is no longer ours). Not while shutting down.
//! - **Takeover**: [`ClusterEvent::Superseded`] takes the connection of that ticket out of the
//!   registry and closes it with [`CLOSE_SUPERSEDED`] (1008).
//! - **Routing**: [`ChargePoints::call`](crate::ChargePoints::call) for an identity not held
//!   here goes to [`Cluster::call`] (the [`Remote`] seam); a command from another node runs on
//!   the local connection through the [`Executor`] over the registry.
//! - **Drain**: [`Service::shutdown`](crate::server::Service::shutdown) closes with 1012, then releases
//!   every claim and the node record ([`Cluster::drain`]).

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::{Context, Wake, Waker};
use std::time::{Duration, Instant};

use ocpp_cluster::{
    BoxFuture, CallFailure as RoutedFailure, ClaimTicket, Cluster, ClusterConfig, ClusterError,
    ClusterEvent, ClusterEvents, CommandOutcome, Executor, CLOSE_SUPERSEDED,
};
use ocpp_messages::{DecodeOptions, ErrorCode, Request, Response};
use ocpp_server_core::{CallFailure, ChargePointIdentity, CloseCode, ConnectionConfig};
use tokio::sync::Notify;

use crate::registry::WeakChargePoints;
use crate::registry::{Remote, RemoteCall};
use crate::{ChargePoint, ChargePoints};

const _: () = assert!(CLOSE_SUPERSEDED == CloseCode::POLICY_VIOLATION.as_u16());

/// How long a shutdown waits for the releases of connections that ended just before it.
const RELEASES_WAIT: Duration = Duration::from_secs(1);

/// This server's node: the [`Cluster`] handle and what ties it to the registry.
pub(crate) struct Node {
    cluster: Cluster,
    /// The registry and the connections' settings, once the server is built.
    attached: Arc<OnceLock<Attached>>,
    /// Held while a connection is registered and claimed: registry and claims in one order.
    presence: Mutex<()>,
    /// The connection of each local claim, for takeovers.
    held: Mutex<HashMap<ClaimTicket, ChargePoint>>,
    /// Releases started and not finished: a shutdown waits for them (bounded).
    releases: Arc<Releases>,
}

/// What the node learns when the server is built.
struct Attached {
    registry: WeakChargePoints,
    /// How long a routed CALL may take (the connections' call timeout).
    call_timeout: Duration,
    /// How commands and answers decode (the connections' decode options).
    decode_options: DecodeOptions,
}

impl fmt::Debug for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Node")
            .field("node_id", &self.cluster.node_id())
            .field("connected", &self.cluster.is_connected())
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Single inserts and removes: a poisoned lock holds consistent data.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Node {
    /// Starts node `config.node_id` on the current tokio runtime, and the task that acts on
    /// its takeovers.
    pub(crate) fn start(config: ClusterConfig) -> Result<Arc<Node>, ClusterError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| ClusterError::NoRuntime)?;
        let attached = Arc::new(OnceLock::new());
        let executor = RegistryExecutor {
            attached: Arc::clone(&attached),
        };
        let (cluster, events) = Cluster::start(config, executor)?;
        let node = Arc::new(Node {
            cluster,
            attached,
            presence: Mutex::new(()),
            held: Mutex::new(HashMap::new()),
            releases: Arc::default(),
        });
        runtime.spawn(takeovers(Arc::downgrade(&node), events));
        Ok(node)
    }

    /// The server is built: the registry and the connections' settings are known.
    pub(crate) fn attach(&self, registry: &ChargePoints, config: &ConnectionConfig) {
        let _ = self.attached.set(Attached {
            registry: registry.downgrade(),
            call_timeout: config.get_call_timeout(),
            decode_options: config.get_decode_options(),
        });
    }

    pub(crate) fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    /// A connection of `identity` is open: registers it (returning the connection it
    /// replaces) and claims the identity for it; `None` as the ticket when `claim` is false
    /// (the server is shutting down).
    pub(crate) fn connect(
        &self,
        registry: &ChargePoints,
        identity: ChargePointIdentity,
        cp: &ChargePoint,
        claim: bool,
    ) -> (Option<ChargePoint>, Option<ClaimTicket>) {
        let _presence = lock(&self.presence);
        let name = identity.as_str().to_owned();
        let replaced = registry.register(identity, cp.clone());
        if !claim {
            return (replaced, None);
        }
        // `claim` holds the identity locally on its first poll (before any Redis call), so
        // that poll happens here, under the lock; the registration in Redis goes on in a
        // task of its own.
        let cluster = self.cluster.clone();
        let claimed = name.clone();
        let mut work: BoxFuture<()> = Box::pin(async move {
            let claim = cluster.claim(&claimed).await;
            tracing::debug!(identity = claimed, epoch = ?claim.epoch, "claimed");
        });
        let waker = Waker::from(Arc::new(NoWake));
        if work
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending()
        {
            tokio::spawn(work);
        }
        let ticket = self.cluster.holds(&name).map(|claim| claim.ticket);
        let mut held = lock(&self.held);
        match ticket {
            // A ticket another connection holds would mean the claim was not taken on that
            // first poll: keep nothing rather than close or release that connection's claim.
            Some(ticket) if held.contains_key(&ticket) => {
                tracing::warn!(identity = name, "the claim was not taken at once");
                (replaced, None)
            }
            Some(ticket) => {
                held.insert(ticket, cp.clone());
                (replaced, Some(ticket))
            }
            None => (replaced, None),
        }
    }

    /// The connection of `ticket` ended: its claim goes (locally at once, in Redis in a task;
    /// nothing if the claim is no longer ours).
    pub(crate) fn disconnect(&self, identity: &str, ticket: ClaimTicket) {
        lock(&self.held).remove(&ticket);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return; // no runtime any more: the claim expires with its TTL
        };
        let cluster = self.cluster.clone();
        let identity = identity.to_owned();
        let in_flight = Releases::start(&self.releases);
        runtime.spawn(async move {
            match cluster.release(&identity, ticket).await {
                Ok(released) => tracing::debug!(identity, released, "claim released"),
                Err(e) => tracing::warn!(identity, "release: {e} (the claim expires with its TTL)"),
            }
            drop(in_flight);
        });
    }

    /// Another node took a charge point over: the connection of that claim leaves the
    /// registry at once (commands now route to the new holder) and is closed with 1008.
    fn superseded(&self, identity: &str, ticket: ClaimTicket, by_node: &str) {
        let Some(cp) = lock(&self.held).remove(&ticket) else {
            return;
        };
        tracing::info!(
            identity,
            by_node,
            "connected to another node: closing with 1008"
        );
        if let Some(registry) = self.registry() {
            registry.remove(cp.identity(), &cp);
        }
        cp.close(CloseCode::POLICY_VIOLATION, "connected to another node");
    }

    fn registry(&self) -> Option<ChargePoints> {
        self.attached.get().and_then(|a| a.registry.upgrade())
    }

    /// Shutdown, after every connection closed: waits (bounded) for the releases in flight,
    /// then leaves the cluster.
    pub(crate) async fn leave(&self) {
        let deadline = tokio::time::Instant::now() + RELEASES_WAIT;
        loop {
            let notified = self.releases.done.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.releases.count.load(Ordering::Acquire) == 0 {
                break;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                tracing::warn!("claims still being released at shutdown");
                break;
            }
        }
        match self.cluster.drain().await {
            Ok(released) => tracing::info!(released, "left the cluster"),
            Err(e) => tracing::warn!("leaving the cluster: {e} (the claims expire with their TTL)"),
        }
    }

    /// A routed CALL's timeout, and how its answer decodes.
    fn call_settings(&self) -> (Duration, DecodeOptions) {
        match self.attached.get() {
            Some(a) => (a.call_timeout, a.decode_options.clone()),
            None => {
                let defaults = ConnectionConfig::default();
                (defaults.get_call_timeout(), defaults.get_decode_options())
            }
        }
    }
}

/// The releases in flight.
#[derive(Debug, Default)]
struct Releases {
    count: AtomicUsize,
    done: Notify,
}

/// One release in flight; counted down when dropped (also if its task is cancelled).
struct InFlight(Arc<Releases>);

impl Releases {
    fn start(releases: &Arc<Releases>) -> InFlight {
        releases.count.fetch_add(1, Ordering::AcqRel);
        InFlight(Arc::clone(releases))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.done.notify_waiters();
        }
    }
}

/// A waker for the one poll made under the presence lock: the spawned task polls again.
struct NoWake;

impl Wake for NoWake {
    fn wake(self: Arc<Self>) {}
}

/// Acts on the node's takeovers until the node is gone.
async fn takeovers(node: std::sync::Weak<Node>, mut events: ClusterEvents) {
    while let Some(event) = events.recv().await {
        let Some(node) = node.upgrade() else {
            return;
        };
        match event {
            ClusterEvent::Superseded(lost) => {
                node.superseded(&lost.identity, lost.ticket, &lost.by_node)
            }
            other => tracing::debug!(?other, "cluster event"),
        }
    }
}

/// Runs the commands of other nodes on this server's connections.
struct RegistryExecutor {
    attached: Arc<OnceLock<Attached>>,
}

impl Executor for RegistryExecutor {
    fn execute(
        &self,
        identity: &str,
        action: &str,
        payload_json: &str,
        timeout: Duration,
    ) -> BoxFuture<CommandOutcome> {
        let Some(attached) = self.attached.get() else {
            return Box::pin(async { CommandOutcome::NotConnected });
        };
        let Some(cp) = attached.registry.upgrade().and_then(|r| r.get(identity)) else {
            return Box::pin(async { CommandOutcome::NotConnected });
        };
        let version = cp.version();
        let options = &attached.decode_options;
        let request = match Request::decode(version, action, payload_json, options) {
            Ok(request) => request,
            Err(e) => {
                let outcome = CommandOutcome::CallError {
                    code: e.error_code().as_str(version).to_owned(),
                    description: format!("{action}: {e}"),
                    details: "{}".to_owned(),
                };
                return Box::pin(async move { outcome });
            }
        };
        Box::pin(async move {
            // The command's deadline goes with the CALL: still queued behind another then, it
            // is never written (the core's rule); written, its answer is due by then.
            let deadline = Instant::now() + timeout;
            let call = cp.call_raw_with_deadline(request, deadline);
            let outcome = tokio::time::timeout(timeout, call)
                .await
                .unwrap_or(Err(CallFailure::Timeout));
            CommandOutcome::from_call(version, &outcome)
        })
    }
}

/// [`ChargePoints::call`] for identities not connected here: through the cluster.
pub(crate) struct ClusterRemote(pub(crate) Arc<Node>);

impl Remote for ClusterRemote {
    fn call<'a>(&'a self, identity: &'a str, request: Request) -> RemoteCall<'a> {
        Box::pin(async move {
            let version = request.version();
            let action = request.action();
            let payload =
                serde_json::to_string(&request).map_err(|e| CallFailure::InvalidRequest {
                    description: format!("the request does not serialise: {e}"),
                })?;
            let (timeout, options) = self.0.call_settings();
            match self
                .0
                .cluster
                .call(identity, action, &payload, timeout)
                .await
            {
                Ok(result) => Response::decode(version, action, &result, &options).map_err(|e| {
                    CallFailure::InvalidResponse {
                        description: format!("{action}: {e}"),
                    }
                }),
                Err(failure) => Err(call_error(failure)),
            }
        })
    }
}

/// The cluster's answer as a call's failure.
fn call_error(failure: RoutedFailure) -> CallFailure {
    match failure {
        RoutedFailure::CallError {
            code,
            description,
            details,
        } => CallFailure::ErrorResponse {
            code: ErrorCode::parse(&code),
            description,
            details,
        },
        RoutedFailure::NotConnected => CallFailure::NotConnected,
        RoutedFailure::Timeout => CallFailure::Timeout,
        _ => CallFailure::OwnerUnreachable,
    }
}
