//! The charge points: which are connected ([`ChargePoints`]), a handle to each
//! ([`ChargePoint`]) with its run-time [`Settings`], and the seam a cluster plugs into
//! ([`Remote`]).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use ocpp_messages::{Request, Response};
use ocpp_server_core::{ChargePointIdentity, IdentityTable};

use ocpp_server_core::CallFailure;

pub use crate::charge_point::{ChargePoint, Settings};
pub use crate::error::SendError;
pub use crate::typed::{ResponseOf, TypedCall};

/// The future a [`Remote`] returns.
pub type RemoteCall<'a> = Pin<Box<dyn Future<Output = Result<Response, CallFailure>> + Send + 'a>>;

/// Serves [`ChargePoints::call`] and [`ChargePoints::call_raw`] for identities not connected
/// to this server: e.g. a cluster that routes the CALL to the node holding the charge point.
///
/// ```
/// use ocpp_tokio::registry::{Remote, RemoteCall};
/// use ocpp_tokio::ocpp::Request;
/// use ocpp_tokio::CallFailure;
///
/// /// A node alone: nobody else holds charge points.
/// struct Alone;
///
/// impl Remote for Alone {
///     fn call<'a>(&'a self, _identity: &'a str, _request: Request) -> RemoteCall<'a> {
///         Box::pin(async { Err(CallFailure::NotConnected) })
///     }
/// }
/// ```
pub trait Remote: Send + Sync + 'static {
    /// Sends `request` to the charge point `identity` held elsewhere and waits for its answer;
    /// [`CallFailure::NotConnected`] when nobody holds it.
    fn call<'a>(&'a self, identity: &'a str, request: Request) -> RemoteCall<'a>;
}

struct Inner {
    table: RwLock<IdentityTable<ChargePoint>>,
    remote: Option<Arc<dyn Remote>>,
    /// This server's cluster node (feature `redis`).
    #[cfg(feature = "redis")]
    cluster: Option<ocpp_cluster::Cluster>,
}

/// A registry that does not keep the server alive (the cluster's executor holds one).
#[cfg(feature = "redis")]
#[derive(Clone)]
pub(crate) struct WeakChargePoints(std::sync::Weak<Inner>);

#[cfg(feature = "redis")]
impl WeakChargePoints {
    pub(crate) fn upgrade(&self) -> Option<ChargePoints> {
        self.0.upgrade().map(|inner| ChargePoints { inner })
    }
}

/// The connected charge points of a server: cheap to clone, shared with every connection's
/// task. Duplicates follow the core's [`IdentityTable`] rule: the newer connection wins.
///
/// ```no_run
/// # async fn example(charge_points: ocpp_tokio::ChargePoints) {
/// use ocpp_tokio::v1_6;
/// if let Some(cp) = charge_points.get("CP001") {
///     let _ = cp.call(v1_6::ClearCacheRequest {}).await;
/// }
/// println!("{} connected: {:?}", charge_points.len(), charge_points.identities());
/// # }
/// ```
#[derive(Clone)]
pub struct ChargePoints {
    inner: Arc<Inner>,
}

impl fmt::Debug for ChargePoints {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChargePoints")
            .field("len", &self.len())
            .field("remote", &self.inner.remote.is_some())
            .finish()
    }
}

impl ChargePoints {
    pub(crate) fn new(remote: Option<Arc<dyn Remote>>) -> Self {
        ChargePoints {
            inner: Arc::new(Inner {
                table: RwLock::new(IdentityTable::new()),
                remote,
                #[cfg(feature = "redis")]
                cluster: None,
            }),
        }
    }

    /// The registry of a cluster node: identities not held here are called through it.
    #[cfg(feature = "redis")]
    pub(crate) fn clustered(node: &Arc<crate::cluster::Node>) -> Self {
        ChargePoints {
            inner: Arc::new(Inner {
                table: RwLock::new(IdentityTable::new()),
                remote: Some(Arc::new(crate::cluster::ClusterRemote(Arc::clone(node)))),
                cluster: Some(node.cluster().clone()),
            }),
        }
    }

    #[cfg(feature = "redis")]
    pub(crate) fn downgrade(&self) -> WeakChargePoints {
        WeakChargePoints(Arc::downgrade(&self.inner))
    }

    /// This server's node in the cluster (see
    /// [`ServerBuilder::cluster`](crate::ServerBuilder::cluster)), if it is one: e.g. to send a
    /// command whose payload is JSON text ([`Cluster::call`](ocpp_cluster::Cluster::call)), as
    /// an admin API that does not know the charge point's OCPP version does.
    #[cfg(feature = "redis")]
    pub fn cluster(&self) -> Option<&ocpp_cluster::Cluster> {
        self.inner.cluster.as_ref()
    }

    fn read(&self) -> RwLockReadGuard<'_, IdentityTable<ChargePoint>> {
        self.inner.table.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, IdentityTable<ChargePoint>> {
        self.inner.table.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The connected charge point with this identity (on this server).
    pub fn get(&self, identity: &str) -> Option<ChargePoint> {
        self.read().get(identity).cloned()
    }

    /// How many charge points are connected to this server.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// The identities connected now (a snapshot).
    pub fn identities(&self) -> Vec<ChargePointIdentity> {
        self.read()
            .iter()
            .map(|(identity, _)| identity.clone())
            .collect()
    }

    /// The charge points connected now (a snapshot).
    pub fn iter(&self) -> std::vec::IntoIter<ChargePoint> {
        let all: Vec<ChargePoint> = self.read().iter().map(|(_, cp)| cp.clone()).collect();
        all.into_iter()
    }

    /// Sends a typed CALL to `identity` wherever it is connected, and waits for the action's
    /// typed response, as [`ChargePoint::call`] does: here, or through the [`Remote`] given to
    /// [`ServerBuilder::remote`](crate::ServerBuilder::remote) (or the cluster of
    /// `ServerBuilder::cluster`, feature `redis`: the CALL goes to the node that holds the
    /// charge point).
    ///
    /// # Errors
    /// [`CallFailure::NotConnected`] when nobody holds it; otherwise what the call met (through
    /// a cluster also [`CallFailure::OwnerUnreachable`]); [`CallFailure::WrongVersion`] when
    /// the charge point speaks another version than the request's.
    pub async fn call<R: TypedCall>(
        &self,
        identity: &str,
        request: R,
    ) -> Result<ResponseOf<R>, CallFailure> {
        if let Some(cp) = self.get(identity) {
            return cp.call(request).await;
        }
        match &self.inner.remote {
            Some(remote) => {
                let response = remote.call(identity, request.into_any_request()).await?;
                R::from_response(response)
            }
            None => Err(CallFailure::NotConnected),
        }
    }

    /// [`ChargePoints::call`] untyped, like [`ChargePoint::call_raw`]: a request of any
    /// action and version (through a cluster, the holding node decodes it for its
    /// connection's version; the answer is decoded as `request`'s version).
    ///
    /// # Errors
    /// As [`ChargePoints::call`].
    pub async fn call_raw(
        &self,
        identity: &str,
        request: Request,
    ) -> Result<Response, CallFailure> {
        if let Some(cp) = self.get(identity) {
            return cp.call_raw(request).await;
        }
        match &self.inner.remote {
            Some(remote) => remote.call(identity, request).await,
            None => Err(CallFailure::NotConnected),
        }
    }

    /// Records `cp`; returns the connection it replaces (to close with 1008).
    pub(crate) fn register(
        &self,
        identity: ChargePointIdentity,
        cp: ChargePoint,
    ) -> Option<ChargePoint> {
        self.write().register(identity, cp)
    }

    /// Removes `cp` if it still holds its identity.
    pub(crate) fn remove(&self, identity: &ChargePointIdentity, cp: &ChargePoint) -> bool {
        self.write().remove(identity, cp)
    }
}
