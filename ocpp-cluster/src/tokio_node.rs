//! A server of `ocpp-tokio` as one node of the cluster (feature `tokio`): the node plugged into
//! the server's two seams, [`Presence`] (which connections this node holds) and
//! [`Remote`](ocpp_tokio::registry::Remote) (calls for charge points held elsewhere), by
//! [`ServerBuilderExt::cluster`]. `ocpp-tokio` knows only the seams, and no Redis.
//!
//! - **Presence**: a connection is claimed when it is registered (after the upgrade, once the
//!   identity is known), both under one lock, so that the registry and the local claims agree
//!   on which connection holds an identity; its 101 waits until the claim is registered in
//!   Redis (at most [`ClusterConfig::claim_wait`], with Redis down), so that a charge point
//!   that has its handshake is found from every node (PROTOCOL.md 6.1). The claim is released
//!   when the connection ends, with its own [`ClaimTicket`] (a no-op once it is no longer
//!   ours). Not while the server shuts down.
//! - **Takeover**: [`ClusterEvent::Superseded`] takes the connection of that ticket out of the
//!   registry at once (calls now go to the new holder) and closes it with
//!   [`CLOSE_SUPERSEDED`](crate::CLOSE_SUPERSEDED) (1008).
//! - **Routing** (`routing.rs`): `ChargePoints::call` for an identity not held here goes to
//!   [`Cluster::call_as`]; a command from another node runs on the local connection, through
//!   the registry.
//! - **Drain**: the server's graceful shutdown closes with 1012, then [`Cluster::drain`]
//!   releases every claim and the node record.
//!
//! # The node's handle
//! [`ServerBuilderExt::cluster_node`] returns the node's [`Cluster`] handle beside the
//! builder, for what the server's registry does not offer (the presence records:
//! [`Cluster::list`], [`Cluster::locate`]; [`Cluster::is_connected`]). It is not kept on the
//! registry for the application to fetch back: the registry would need a slot of a Redis type
//! (`ocpp-tokio` would know this crate again) or a value it can only hand back through a
//! downcast (`Any`); given where the node starts, the handle is typed and needs neither.

mod routing;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use ocpp_proto::{ChargePointIdentity, ConnectionConfig, DecodeOptions};
use ocpp_tokio::presence::{Joined, Leaving, Presence, PresenceTicket};
use ocpp_tokio::registry::WeakChargePoints;
use ocpp_tokio::{ChargePoint, ChargePoints, ServerBuilder};
use tokio::runtime::Handle;
use tokio::sync::oneshot;

use crate::cluster::lock;
use crate::{
    ClaimTicket, Cluster, ClusterConfig, ClusterError, ClusterEvent, ClusterEvents,
    CLOSE_SUPERSEDED_REASON,
};

/// Makes a [`ServerBuilder`] of `ocpp-tokio` a node of the cluster.
///
/// ```no_run
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// use ocpp_cluster::tokio_node::ServerBuilderExt;
/// use ocpp_cluster::ClusterConfig;
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
pub trait ServerBuilderExt: Sized {
    /// Makes this server node `config.node_id` of the cluster: every charge point that
    /// connects is claimed in Redis and released when it leaves; a newer connection of the same
    /// identity on another node closes this one with 1008; `ChargePoints::call`, `call_raw`
    /// and `call_json` reach a charge point on any node (an unreachable node is
    /// `CallFailure::OwnerUnreachable`); commands from other nodes run on this server's
    /// connections; graceful shutdown closes with 1012 and then leaves the cluster
    /// ([`Cluster::drain`]). With Redis down, local charge points are served and calls to them
    /// work; calls for the others fail at once.
    ///
    /// The node starts at once, in the current tokio runtime (Redis is reached in the
    /// background).
    ///
    /// # Errors
    /// The configuration cannot work ([`ClusterError::Config`]), or no tokio runtime runs
    /// ([`ClusterError::NoRuntime`]).
    fn cluster(self, config: ClusterConfig) -> Result<Self, ClusterError> {
        self.cluster_node(config).map(|(builder, _)| builder)
    }

    /// [`ServerBuilderExt::cluster`], and the node's handle: its id, its presence records
    /// ([`Cluster::list`], [`Cluster::locate`]), its connection to Redis.
    ///
    /// ```no_run
    /// # fn example() -> Result<(), ocpp_cluster::ClusterError> {
    /// use ocpp_cluster::tokio_node::ServerBuilderExt;
    /// use ocpp_cluster::ClusterConfig;
    ///
    /// let config = ClusterConfig::new("redis://127.0.0.1:6379/", "csms-a");
    /// let (builder, cluster) = ocpp_tokio::Server::builder().cluster_node(config)?;
    /// println!("node {}, Redis up: {}", cluster.node_id(), cluster.is_connected());
    /// # let _ = builder;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`ServerBuilderExt::cluster`].
    fn cluster_node(self, config: ClusterConfig) -> Result<(Self, Cluster), ClusterError>;
}

impl<H> ServerBuilderExt for ServerBuilder<H> {
    fn cluster_node(self, config: ClusterConfig) -> Result<(Self, Cluster), ClusterError> {
        let node = NodeSeam::start(config)?;
        let cluster = node.0.cluster.clone();
        Ok((self.remote(node.clone()).presence(node), cluster))
    }
}

/// This server's node: the [`Cluster`] handle and what ties it to the server's registry.
struct Node {
    cluster: Cluster,
    /// Where the registrations of claims run.
    runtime: Handle,
    /// The registry and the connections' settings, once the server is built.
    attached: Arc<OnceLock<Attached>>,
    /// The connection of each claim held here. Held while a connection is registered and
    /// claimed: the registry and the claims change in one order.
    held: Mutex<HashMap<ClaimTicket, ChargePoint>>,
}

/// What the node learns when the server is built.
struct Attached {
    registry: WeakChargePoints,
    /// How long a routed CALL may take (the connections' call timeout).
    call_timeout: Duration,
    /// How answers decode (the connections' decode options).
    decode_options: DecodeOptions,
}

/// The node behind both of the server's seams ([`Presence`] here, `Remote` in `routing.rs`).
#[derive(Clone)]
struct NodeSeam(Arc<Node>);

impl NodeSeam {
    /// Starts node `config.node_id` on the current tokio runtime, and the task that acts on
    /// its takeovers.
    fn start(config: ClusterConfig) -> Result<NodeSeam, ClusterError> {
        let runtime = Handle::try_current().map_err(|_| ClusterError::NoRuntime)?;
        let attached = Arc::new(OnceLock::new());
        let (cluster, events) = Cluster::start(config, routing::executor(&attached))?;
        let node = Arc::new(Node {
            cluster,
            runtime: runtime.clone(),
            attached,
            held: Mutex::new(HashMap::new()),
        });
        runtime.spawn(takeovers(Arc::downgrade(&node), events));
        Ok(NodeSeam(node))
    }
}

impl Presence for NodeSeam {
    fn attach(&self, registry: &ChargePoints, config: &ConnectionConfig) {
        let _ = self.0.attached.set(Attached {
            registry: registry.downgrade(),
            call_timeout: config.get_call_timeout(),
            decode_options: config.get_decode_options(),
        });
    }

    /// Registers the connection and holds its identity here at once, under one lock; the
    /// registration in Redis runs in a task, which tells the connection when to answer its
    /// handshake.
    fn connect(
        &self,
        identity: &ChargePointIdentity,
        cp: &ChargePoint,
        register: &mut dyn FnMut(),
    ) -> Option<Joined> {
        let node = &self.0;
        let mut held = lock(&node.held);
        register();
        let ticket = node.cluster.hold(identity.as_str(), Some(cp.version()));
        held.insert(ticket, cp.clone());
        drop(held);
        let (registered, answer_handshake) = oneshot::channel();
        let (cluster, identity) = (node.cluster.clone(), identity.as_str().to_owned());
        node.runtime.spawn(async move {
            let wait = cluster.config().claim_wait();
            let registering = cluster.register(&identity, ticket);
            tokio::pin!(registering);
            let epoch = match tokio::time::timeout(wait, &mut registering).await {
                Ok(epoch) => {
                    let _ = registered.send(());
                    epoch
                }
                // Redis is down or slow: the handshake is answered with the claim pending.
                Err(_) => {
                    drop(registered);
                    registering.await
                }
            };
            tracing::debug!(identity, ?epoch, "claimed");
        });
        Some(Joined::new(ticket.0, Some(answer_handshake)))
    }

    fn disconnect(&self, identity: &str, ticket: PresenceTicket) {
        let ticket = ClaimTicket(ticket);
        if lock(&self.0.held).remove(&ticket).is_some() {
            self.0.cluster.release_later(identity, ticket);
        } // else taken over: the claim is no longer ours
    }

    fn leave(&self) -> Leaving<'_> {
        Box::pin(async move {
            match self.0.cluster.drain().await {
                Ok(released) => tracing::info!(released, "left the cluster"),
                Err(e) => {
                    tracing::warn!("leaving the cluster: {e} (the claims expire with their TTL)")
                }
            }
        })
    }
}

impl Node {
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
        if let Some(registry) = self.attached.get().and_then(|a| a.registry.upgrade()) {
            registry.remove(cp.identity(), &cp);
        }
        cp.close(ocpp_proto::Superseded::CLOSE_CODE, CLOSE_SUPERSEDED_REASON);
    }
}

/// Acts on the node's takeovers until the node is gone.
async fn takeovers(node: Weak<Node>, mut events: ClusterEvents) {
    while let Some(event) = events.recv().await {
        let Some(node) = node.upgrade() else {
            return;
        };
        match event {
            ClusterEvent::Superseded(lost) => {
                node.superseded(&lost.identity, lost.ticket, &lost.by_node)
            }
        }
    }
}
