//! The seam between a server and a cluster of servers, in two traits: [`Presence`] (which
//! connections this node holds, told to the other nodes: claims, takeovers, leaving) and
//! [`Remote`](crate::registry::Remote) (calls and look-ups for charge points held elsewhere).
//! The server and its connections know only these. `ocpp-cluster` (its feature `tokio`)
//! implements both for its cluster on Redis; any backend can, and plugs in with
//! [`ServerBuilder::presence`](crate::ServerBuilder::presence) and
//! [`ServerBuilder::remote`](crate::ServerBuilder::remote).

use std::future::Future;
use std::num::NonZeroU64;
use std::pin::Pin;

use ocpp_proto::{ChargePointIdentity, ConnectionConfig};
use tokio::sync::oneshot;

use crate::{ChargePoint, ChargePoints};

/// Names the claim one connection made; the server hands it back when the connection ends.
pub type PresenceTicket = NonZeroU64;

/// A claim [`Presence::connect`] took for a new connection.
#[derive(Debug)]
#[non_exhaustive]
pub struct Joined {
    /// Handed back to [`Presence::disconnect`] when the connection ends.
    pub ticket: PresenceTicket,
    /// Resolves (a value or a drop) once the other nodes can find the charge point, or the
    /// wait for that is over: the connection answers its handshake then (`None`: at once).
    pub registered: Option<oneshot::Receiver<()>>,
}

impl Joined {
    /// A claim, answered at once or after `registered`.
    pub fn new(ticket: PresenceTicket, registered: Option<oneshot::Receiver<()>>) -> Self {
        Joined { ticket, registered }
    }
}

/// The future of [`Presence::leave`].
pub type Leaving<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// Which connections this node holds, for the other nodes of a cluster.
///
/// ```
/// use ocpp_tokio::ocpp::{ChargePointIdentity, ConnectionConfig};
/// use ocpp_tokio::presence::{Joined, Leaving, Presence, PresenceTicket};
/// use ocpp_tokio::{ChargePoint, ChargePoints};
///
/// /// A node that only logs: nobody else needs to find its charge points.
/// struct Log;
///
/// impl Presence for Log {
///     fn attach(&self, _registry: &ChargePoints, _config: &ConnectionConfig) {}
///     fn connect(&self, identity: &ChargePointIdentity, _cp: &ChargePoint,
///                register: &mut dyn FnMut()) -> Option<Joined> {
///         register();
///         println!("{identity} is here");
///         Some(Joined::new(PresenceTicket::MIN, None))
///     }
///     fn disconnect(&self, identity: &str, _ticket: PresenceTicket) {
///         println!("{identity} left");
///     }
///     fn leave(&self) -> Leaving<'_> { Box::pin(async {}) }
/// }
/// ```
pub trait Presence: Send + Sync + 'static {
    /// The server is built: its registry (keep a [`ChargePoints::downgrade`] of it, not the
    /// registry itself, which holds this presence) and the connections' settings.
    fn attach(&self, registry: &ChargePoints, config: &ConnectionConfig);

    /// A connection of `identity` is open: call `register` once (it records the connection
    /// in the server's registry, replacing an older one of the same identity) and claim the
    /// identity for it, in one order for every connection (e.g. both under one lock), so that
    /// the registry and the claims agree on which connection holds an identity. `None`: no
    /// claim was taken (the connection is served all the same). Not called while the server
    /// shuts down.
    fn connect(
        &self,
        identity: &ChargePointIdentity,
        cp: &ChargePoint,
        register: &mut dyn FnMut(),
    ) -> Option<Joined>;

    /// The connection of `ticket` ended: its claim goes (a no-op once it is no longer this
    /// node's).
    fn disconnect(&self, identity: &str, ticket: PresenceTicket);

    /// Shutdown, after every connection closed: leave the cluster (bounded).
    fn leave(&self) -> Leaving<'_>;
}
