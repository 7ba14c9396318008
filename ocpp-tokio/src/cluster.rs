//! The cluster behind the registry (feature `redis`): this server as one node of
//! [`ocpp_cluster`], the Redis protocol of `ocpp-cluster/PROTOCOL.md`, implemented there once.
//! The one module that names the feature: the server knows the cluster only through the
//! [`Presence`] and [`Remote`] traits (`presence.rs`, `registry.rs`), which this module
//! implements, and [`ServerBuilder::cluster`] plugs both in.
//!
//! - **Presence**: a connection is claimed when it is registered (after the upgrade, once the
//!   identity is known), both under one lock, so the registry and the local claims agree on
//!   which connection holds an identity; its 101 waits in the output until the claim is
//!   registered in Redis (at most [`ClusterConfig::claim_wait`], with Redis down), so that a
//!   charge point that has its handshake is found from every node (PROTOCOL.md 6.1). It is
//!   released when the connection ends, with its own [`ClaimTicket`] (a no-op once the claim
//!   is no longer ours). Not while shutting down.
//! - **Takeover**: [`ClusterEvent::Superseded`] takes the connection of that ticket out of the
//!   registry and closes it with [`CLOSE_SUPERSEDED`](ocpp_cluster::CLOSE_SUPERSEDED) (1008).
//! - **Routing**: [`ChargePoints::call`](crate::ChargePoints::call) for an identity not held
//!   here goes to [`Cluster::call`] (the [`Remote`] seam); a command from another node runs on
//!   the local connection through the [`Executor`] over the registry.
//! - **Drain**: [`Service::shutdown`](crate::server::Service::shutdown) closes with 1012, then releases
//!   every claim and the node record ([`Cluster::drain`]).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::{Context, Wake, Waker};
use std::time::{Duration, Instant};

use ocpp_cluster::{
    command_outcome, command_request, BoxFuture, ClaimTicket, Cluster, ClusterConfig, ClusterError,
    ClusterEvent, ClusterEvents, CommandOutcome, Executor,
};
use ocpp_messages::{DecodeOptions, Request, Response};
use ocpp_proto::{CallFailure, ChargePointIdentity, ConnectionConfig, OcppVersion, Superseded};
use tokio::sync::oneshot;

use crate::presence::{Joined, Leaving, Presence, PresenceTicket};
use crate::registry::WeakChargePoints;
use crate::registry::{
    Remote, RemoteCall, RemoteCallJson, RemoteChargePoint, RemoteList, RemoteLocate,
};
use crate::server::{Server, ServerBuilder, Service};
use crate::{ChargePoint, ChargePoints, Handler};

/// This server's node: the [`Cluster`] handle and what ties it to the registry.
pub(crate) struct Node {
    cluster: Cluster,
    /// The registry and the connections' settings, once the server is built.
    attached: Arc<OnceLock<Attached>>,
    /// Held while a connection is registered and claimed: registry and claims in one order.
    presence: Mutex<()>,
    /// The connection of each local claim (by its ticket's number), for takeovers.
    held: Mutex<HashMap<u64, (ClaimTicket, ChargePoint)>>,
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

    /// A connection of `identity` is open: registers it (returning the connection it
    /// replaces) and claims the identity for it; `None` as the ticket when `claim` is false
    /// (the server is shutting down). The receiver resolves (a value or a drop) when the
    /// claim's registration in Redis is over or [`ClusterConfig::claim_wait`] passed: the
    /// connection holds its handshake answer until then.
    pub(crate) fn connect(
        &self,
        identity: &ChargePointIdentity,
        cp: &ChargePoint,
        register: &mut dyn FnMut(),
    ) -> Option<Joined> {
        let _presence = lock(&self.presence);
        let name = identity.as_str().to_owned();
        register();
        // `claim` holds the identity locally on its first poll (before any Redis call), so
        // that poll happens here, under the lock; the registration in Redis goes on in a
        // task of its own, which tells the connection when to answer its handshake.
        let cluster = self.cluster.clone();
        let claimed = name.clone();
        let version = cp.version();
        let wait = self.cluster.config().claim_wait();
        let (registered, answer_handshake) = oneshot::channel();
        let mut work: BoxFuture<()> = Box::pin(async move {
            let mut registered = Some(registered);
            let registering = cluster.claim_as(&claimed, Some(version));
            tokio::pin!(registering);
            let claim = match tokio::time::timeout(wait, &mut registering).await {
                Ok(claim) => claim,
                Err(_) => {
                    // Redis is down or slow: the handshake is answered with the claim pending.
                    registered = None;
                    registering.await
                }
            };
            if let Some(registered) = registered {
                let _ = registered.send(());
            }
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
        let ticket = self.cluster.holds(&name).map(|claim| claim.ticket)?;
        let number = PresenceTicket::new(ticket.get())?;
        let mut held = lock(&self.held);
        // A ticket another connection holds would mean the claim was not taken on that first
        // poll: keep nothing rather than close or release that connection's claim.
        if held.contains_key(&number.get()) {
            tracing::warn!(identity = name, "the claim was not taken at once");
            return None;
        }
        held.insert(number.get(), (ticket, cp.clone()));
        Some(Joined::new(number, Some(answer_handshake)))
    }

    /// The connection of `ticket` ended: its claim goes (locally at once, in Redis in a task;
    /// nothing if the claim is no longer ours).
    pub(crate) fn disconnect(&self, identity: &str, ticket: PresenceTicket) {
        let Some((ticket, _)) = lock(&self.held).remove(&ticket.get()) else {
            return; // taken over: the claim is no longer ours
        };
        self.cluster.release_later(identity, ticket);
    }

    /// Another node took a charge point over: the connection of that claim leaves the
    /// registry at once (commands now route to the new holder) and is closed with 1008.
    fn superseded(&self, identity: &str, ticket: ClaimTicket, by_node: &str) {
        let Some((_, cp)) = lock(&self.held).remove(&ticket.get()) else {
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
        let why = Superseded::OtherNode;
        cp.close(Superseded::CLOSE_CODE, why.reason());
    }

    fn registry(&self) -> Option<ChargePoints> {
        self.attached.get().and_then(|a| a.registry.upgrade())
    }

    /// Shutdown, after every connection closed: leaves the cluster (the drain waits, bounded,
    /// for the releases in flight).
    pub(crate) async fn leave(&self) {
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

impl<H> ServerBuilder<H> {
    /// Makes this server node `config.node_id` of a cluster on Redis (feature `redis`; the
    /// protocol is `ocpp-cluster`'s, the same as `mio-server`'s): every charge point that
    /// connects is claimed in Redis and released when it leaves; a newer connection of the
    /// same identity on another node closes this one with 1008
    /// ([`ocpp_cluster::CLOSE_SUPERSEDED`]); [`ChargePoints::call`] and
    /// [`ChargePoints::call_raw`] reach a charge point on any node (an unreachable node is
    /// [`CallFailure::OwnerUnreachable`]); commands from
    /// other nodes run on this server's connections; graceful shutdown closes with 1012
    /// (service restart) and then leaves the cluster ([`ocpp_cluster::Cluster::drain`]).
    /// With Redis down, local charge points are served and calls to them work; calls for the
    /// others fail at once.
    ///
    /// The node starts at once, in the current tokio runtime (Redis is reached in the
    /// background).
    ///
    /// ```no_run
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// use ocpp_tokio::ocpp_cluster::ClusterConfig;
    /// use ocpp_tokio::{v1_6, CallFailure, Server};
    ///
    /// let config = ClusterConfig::new("redis://127.0.0.1:6379/", "csms-a");
    /// let server = Server::builder().cluster(config)?.bind("0.0.0.0:9000").await?;
    /// let charge_points = server.charge_points();
    /// tokio::spawn(server.run());
    /// // CP-7 may be connected to any node of the cluster.
    /// let reset = v1_6::ResetRequest::new(v1_6::ResetType::Soft);
    /// match charge_points.call("CP-7", reset).await {
    ///     Ok(response) => println!("reset: {:?}", response.status),
    ///     Err(CallFailure::NotConnected) => println!("connected to no node"),
    ///     Err(CallFailure::OwnerUnreachable) => println!("its node (or Redis) is down"),
    ///     Err(other) => println!("{other}"),
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// The configuration cannot work ([`ClusterError::Config`](ocpp_cluster::ClusterError)),
    /// or no tokio runtime runs ([`ClusterError::NoRuntime`](ocpp_cluster::ClusterError)).
    pub fn cluster(self, config: ClusterConfig) -> Result<Self, ClusterError> {
        let node = Node::start(config)?;
        Ok(self
            .remote(ClusterRemote(Arc::clone(&node)))
            .presence(NodePresence(node)))
    }
}

impl ChargePoints {
    /// This server's node in the cluster (see [`ServerBuilder::cluster`]), if it is one: its
    /// id, its presence records ([`Cluster::list`], [`Cluster::locate`]), its connection to
    /// Redis. A command whose payload is JSON text goes through
    /// [`ChargePoints::call_json`].
    ///
    /// ```no_run
    /// # async fn example(charge_points: ocpp_tokio::ChargePoints) {
    /// if let Some(cluster) = charge_points.cluster() {
    ///     println!("node {}, Redis up: {}", cluster.node_id(), cluster.is_connected());
    /// }
    /// # }
    /// ```
    pub fn cluster(&self) -> Option<&Cluster> {
        self.inner_cluster().get()
    }
}

impl<H: Handler> Service<H> {
    /// This server's node in the cluster, if it is one (see [`ServerBuilder::cluster`]).
    pub fn cluster(&self) -> Option<Cluster> {
        self.charge_points().cluster().cloned()
    }
}

impl<H: Handler> Server<H> {
    /// This server's node in the cluster, if it is one (see [`ServerBuilder::cluster`]).
    pub fn cluster(&self) -> Option<Cluster> {
        self.service().cluster()
    }
}

/// The node as the server's [`Presence`].
struct NodePresence(Arc<Node>);

impl Presence for NodePresence {
    fn attach(&self, registry: &ChargePoints, config: &ConnectionConfig) {
        // The registry keeps the node's handle for `ChargePoints::cluster`.
        let _ = registry.inner_cluster().set(self.0.cluster.clone());
        self.0.attach(registry, config);
    }

    fn connect(
        &self,
        identity: &ChargePointIdentity,
        cp: &ChargePoint,
        register: &mut dyn FnMut(),
    ) -> Option<Joined> {
        self.0.connect(identity, cp, register)
    }

    fn disconnect(&self, identity: &str, ticket: PresenceTicket) {
        self.0.disconnect(identity, ticket);
    }

    fn leave(&self) -> Leaving<'_> {
        Box::pin(self.0.leave())
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
            return Box::pin(async { Err(CallFailure::NotConnected) });
        };
        let Some(cp) = attached.registry.upgrade().and_then(|r| r.get(identity)) else {
            return Box::pin(async { Err(CallFailure::NotConnected) });
        };
        let version = cp.version();
        let request = match command_request(version, action, payload_json) {
            Ok(request) => request,
            Err(failure) => return Box::pin(async move { Err(failure) }),
        };
        Box::pin(async move {
            // The command's deadline goes with the CALL: still queued behind another then, it
            // is never written (the core's rule); written, its answer is due by then.
            let deadline = Instant::now() + timeout;
            let call = cp.call_raw_with_deadline(request, deadline);
            let outcome = tokio::time::timeout(timeout, call)
                .await
                .unwrap_or(Err(CallFailure::Timeout));
            command_outcome(&outcome)
        })
    }
}

/// [`ChargePoints::call`] for identities not connected here: through the cluster.
pub(crate) struct ClusterRemote(pub(crate) Arc<Node>);

/// What the presence records say, as a remote charge point; this node's own claims are not
/// remote.
fn remote(node: &str, located: ocpp_cluster::Located) -> Option<RemoteChargePoint> {
    (located.node != node).then(|| {
        RemoteChargePoint::new(
            located.identity,
            located.node,
            located.version,
            located.live,
        )
    })
}

impl Remote for ClusterRemote {
    fn locate<'a>(&'a self, identity: &'a str) -> RemoteLocate<'a> {
        Box::pin(async move {
            let cluster = &self.0.cluster;
            match cluster.locate(identity).await {
                Ok(located) => Ok(located.and_then(|l| remote(cluster.node_id(), l))),
                Err(_) => Err(CallFailure::OwnerUnreachable),
            }
        })
    }

    fn list(&self, limit: usize) -> RemoteList<'_> {
        Box::pin(async move {
            let cluster = &self.0.cluster;
            match cluster.list(limit).await {
                Ok(all) => Ok(all
                    .into_iter()
                    .filter_map(|l| remote(cluster.node_id(), l))
                    .collect()),
                Err(_) => Err(CallFailure::OwnerUnreachable),
            }
        })
    }

    fn call_json<'a>(
        &'a self,
        identity: &'a str,
        version: Option<OcppVersion>,
        action: &'a str,
        payload_json: &'a str,
        timeout: Duration,
    ) -> RemoteCallJson<'a> {
        // The text as it came: the holder decodes it for its connection's version.
        Box::pin(
            self.0
                .cluster
                .call_as(identity, version, action, payload_json, timeout),
        )
    }

    fn call<'a>(&'a self, identity: &'a str, request: Request) -> RemoteCall<'a> {
        Box::pin(async move {
            let version = request.version();
            let action = request.action();
            let payload =
                serde_json::to_string(&request).map_err(|e| CallFailure::InvalidRequest {
                    description: format!("the request does not serialise: {e}"),
                })?;
            let (timeout, options) = self.0.call_settings();
            // With its version: a holder whose connection speaks another refuses it as
            // `WrongVersion`, as a local connection does.
            match self
                .0
                .cluster
                .call_as(identity, Some(version), action, &payload, timeout)
                .await
            {
                Ok(result) => Response::decode(version, action, &result, &options).map_err(|e| {
                    CallFailure::InvalidResponse {
                        description: format!("{action}: {e}"),
                    }
                }),
                Err(failure) => Err(failure),
            }
        })
    }
}
