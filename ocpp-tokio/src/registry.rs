//! The charge points: which are connected ([`ChargePoints`]), a handle to each
//! ([`ChargePoint`]) with its run-time [`ConnectionSettings`], and the seam a cluster plugs into
//! ([`Remote`]).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use ocpp_messages::{Request, Response};
use ocpp_proto::{command_request, ChargePointIdentity, IdentityTable, OcppVersion};

use ocpp_proto::CallFailure;

use crate::charge_point::LinkKey;
use crate::presence::Presence;

pub use crate::charge_point::{ChargePoint, ConnectionSettings};
pub use crate::error::SendError;
pub use crate::typed::{ResponseOf, TypedCall};

/// The future a [`Remote`] returns.
pub type RemoteCall<'a> = Pin<Box<dyn Future<Output = Result<Response, CallFailure>> + Send + 'a>>;

/// The future of [`Remote::call_json`]: the CALLRESULT's payload as JSON text.
pub type RemoteCallJson<'a> =
    Pin<Box<dyn Future<Output = Result<String, CallFailure>> + Send + 'a>>;

/// The future of [`Remote::locate`].
pub type RemoteLocate<'a> =
    Pin<Box<dyn Future<Output = Result<Option<RemoteChargePoint>, CallFailure>> + Send + 'a>>;

/// The future of [`Remote::list`].
pub type RemoteList<'a> =
    Pin<Box<dyn Future<Output = Result<Vec<RemoteChargePoint>, CallFailure>> + Send + 'a>>;

/// A charge point connected to another node, as the cluster knows it: enough to pick the
/// action its OCPP version has and to send it ([`ChargePoints::call`]); its application state
/// is the other node's.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RemoteChargePoint {
    /// Its identity.
    pub identity: String,
    /// The node holding it.
    pub node: String,
    /// The OCPP version of its connection (`None` if that node does not record it).
    pub version: Option<OcppVersion>,
    /// `false` when its node has not announced itself for a node TTL (5 s by default: killed,
    /// stopped, or cut off from Redis) or stopped refreshing its claim: it may or may not
    /// still hold the connection.
    pub live: bool,
}

impl RemoteChargePoint {
    /// A remote charge point (for a [`Remote`] of your own).
    pub fn new(identity: String, node: String, version: Option<OcppVersion>, live: bool) -> Self {
        RemoteChargePoint {
            identity,
            node,
            version,
            live,
        }
    }
}

/// The charge points of the whole cluster as one server can list them now
/// ([`ChargePoints::list_cluster`]): its own are always known; the other nodes' may not be.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClusterListing {
    /// This server's own (a snapshot, as [`ChargePoints::iter`]).
    pub here: Vec<ChargePoint>,
    /// The other nodes' ([`ChargePoints::list_elsewhere`]); `Err`
    /// ([`CallFailure::OwnerUnreachable`]) when they cannot be known now (Redis down): unknown,
    /// not none.
    pub elsewhere: Result<Vec<RemoteChargePoint>, CallFailure>,
}

/// Where a charge point is connected ([`ChargePoints::locate`]).
#[derive(Debug, Clone)]
pub enum Connected {
    /// To this server: its handle.
    Here(ChargePoint),
    /// To another node of the cluster.
    Elsewhere(RemoteChargePoint),
}

impl Connected {
    /// The OCPP version of its connection, wherever it is (`None` if the other node does not
    /// record it).
    pub fn version(&self) -> Option<OcppVersion> {
        match self {
            Connected::Here(cp) => Some(cp.version()),
            Connected::Elsewhere(remote) => remote.version,
        }
    }
}

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

    /// Sends CALL `action` with `payload_json` (JSON text, as an admin API has it) to the
    /// charge point `identity` held elsewhere and waits, at most `timeout`, for the
    /// CALLRESULT's payload (JSON text). `version`: the OCPP version the payload was written
    /// for ([`CallFailure::WrongVersion`] when the charge point speaks another); `None`: the
    /// holder decodes it for whatever version its connection speaks
    /// ([`CallFailure::InvalidRequest`], not sent, when it does not fit).
    ///
    /// By default: with a `version`, the payload decoded for it (strict) and sent with
    /// [`Remote::call`], the answer encoded again; without, [`CallFailure::InvalidRequest`]
    /// (a remote that only takes typed requests cannot pick the version). `ocpp-cluster`'s
    /// sends the text as it is.
    fn call_json<'a>(
        &'a self,
        identity: &'a str,
        version: Option<OcppVersion>,
        action: &'a str,
        payload_json: &'a str,
        timeout: Duration,
    ) -> RemoteCallJson<'a> {
        Box::pin(async move {
            let Some(version) = version else {
                return Err(CallFailure::InvalidRequest {
                    description: format!("{action}: the OCPP version of the payload is needed"),
                });
            };
            let request = command_request(version, action, payload_json)?;
            let response = tokio::time::timeout(timeout, self.call(identity, request))
                .await
                .unwrap_or(Err(CallFailure::Timeout))?;
            encode_response(&response)
        })
    }

    /// Where `identity` is connected elsewhere (`None`: nowhere else);
    /// [`CallFailure::OwnerUnreachable`] when that cannot be known now. By default: nowhere.
    fn locate<'a>(&'a self, identity: &'a str) -> RemoteLocate<'a> {
        let _ = identity;
        Box::pin(async { Ok(None) })
    }

    /// Every charge point connected elsewhere (at most `limit`). By default: none.
    fn list(&self, limit: usize) -> RemoteList<'_> {
        let _ = limit;
        Box::pin(async { Ok(Vec::new()) })
    }
}

/// A charge point as the registry holds it: its link alone (one pointer; the identity is the
/// table's key and the version is in the link).
impl LinkKey {
    fn charge_point(&self, identity: &ChargePointIdentity) -> ChargePoint {
        ChargePoint::of_link(self.0.clone(), identity.clone())
    }
}

struct Inner {
    table: RwLock<IdentityTable<LinkKey>>,
    remote: Option<Arc<dyn Remote>>,
    /// This server's presence in a cluster, if it is a node of one.
    presence: Option<Arc<dyn Presence>>,
}

/// A CALLRESULT's payload as JSON text.
fn encode_response(response: &Response) -> Result<String, CallFailure> {
    serde_json::to_string(response).map_err(|e| CallFailure::InvalidResponse {
        description: format!("the response does not serialise: {e}"),
    })
}

/// A handle on the registry that does not keep the server alive ([`ChargePoints::downgrade`]):
/// what a [`Presence`] keeps, since the registry holds the presence.
#[derive(Clone)]
pub struct WeakChargePoints(std::sync::Weak<Inner>);

impl fmt::Debug for WeakChargePoints {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WeakChargePoints")
            .field("alive", &(self.0.strong_count() > 0))
            .finish()
    }
}

impl WeakChargePoints {
    /// The registry, while its server lives.
    pub fn upgrade(&self) -> Option<ChargePoints> {
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
    pub(crate) fn new(
        remote: Option<Arc<dyn Remote>>,
        presence: Option<Arc<dyn Presence>>,
    ) -> Self {
        ChargePoints {
            inner: Arc::new(Inner {
                table: RwLock::new(IdentityTable::new()),
                remote,
                presence,
            }),
        }
    }

    /// Where CALLs for identities not connected here go ([`ServerBuilder::remote`]); `None`:
    /// a server alone.
    ///
    /// [`ServerBuilder::remote`]: crate::ServerBuilder::remote
    pub fn remote(&self) -> Option<&Arc<dyn Remote>> {
        self.inner.remote.as_ref()
    }

    /// This server's presence in a cluster ([`ServerBuilder::presence`]).
    ///
    /// [`ServerBuilder::presence`]: crate::ServerBuilder::presence
    pub fn presence(&self) -> Option<&Arc<dyn Presence>> {
        self.inner.presence.as_ref()
    }

    /// A handle that does not keep the server alive.
    pub fn downgrade(&self) -> WeakChargePoints {
        WeakChargePoints(Arc::downgrade(&self.inner))
    }

    fn read(&self) -> RwLockReadGuard<'_, IdentityTable<LinkKey>> {
        self.inner.table.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, IdentityTable<LinkKey>> {
        self.inner.table.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The connected charge point with this identity (on this server).
    pub fn get(&self, identity: &str) -> Option<ChargePoint> {
        let table = self.read();
        let (identity, held) = table.get_key_value(identity)?;
        Some(held.charge_point(identity))
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
        let all: Vec<ChargePoint> = self
            .read()
            .iter()
            .map(|(identity, held)| held.charge_point(identity))
            .collect();
        all.into_iter()
    }

    /// Sends a typed CALL to `identity` wherever it is connected, and waits for the action's
    /// typed response, as [`ChargePoint::call`] does: here, or through the [`Remote`] given to
    /// [`ServerBuilder::remote`](crate::ServerBuilder::remote) (e.g. `ocpp-cluster`'s: the CALL
    /// goes to the node that holds the charge point).
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

    /// [`ChargePoints::call`] with what an admin API has: CALL `action` with `payload_json`
    /// (JSON text) to `identity` wherever it is connected, answered with the CALLRESULT's
    /// payload (JSON text) within `timeout` (a CALL still queued then is never written).
    /// `version`: the OCPP version the payload was written for ([`CallFailure::WrongVersion`],
    /// not sent, when the charge point speaks another); `None`: decoded for the version of the
    /// charge point's connection, here or on the node that holds it ([`Remote::call_json`]).
    ///
    /// # Errors
    /// [`CallFailure::InvalidRequest`] (not sent) when the payload does not fit the action in
    /// that version; otherwise as [`ChargePoints::call`].
    ///
    /// ```no_run
    /// # async fn example(charge_points: ocpp_tokio::ChargePoints) {
    /// use std::time::Duration;
    /// let reset = charge_points
    ///     .call_json("CP-7", None, "Reset", r#"{"type":"Soft"}"#, Duration::from_secs(30))
    ///     .await;
    /// match reset {
    ///     Ok(payload) => println!("CP-7 answered {payload}"),
    ///     Err(failure) => println!("{failure}"),
    /// }
    /// # }
    /// ```
    pub async fn call_json(
        &self,
        identity: &str,
        version: Option<OcppVersion>,
        action: &str,
        payload_json: &str,
        timeout: Duration,
    ) -> Result<String, CallFailure> {
        if let Some(cp) = self.get(identity) {
            let version = match version {
                Some(version) if version != cp.version() => return Err(CallFailure::WrongVersion),
                _ => cp.version(),
            };
            let request = command_request(version, action, payload_json)?;
            let call = cp.call_raw_with_deadline(request, Instant::now() + timeout);
            let response = tokio::time::timeout(timeout, call)
                .await
                .unwrap_or(Err(CallFailure::Timeout))?;
            return encode_response(&response);
        }
        match &self.inner.remote {
            Some(remote) => {
                remote
                    .call_json(identity, version, action, payload_json, timeout)
                    .await
            }
            None => Err(CallFailure::NotConnected),
        }
    }

    /// Where `identity` is connected: to this server (its handle), or to another node (through
    /// the [`Remote`], e.g. the cluster's presence records, with its OCPP version, so that the
    /// application can pick the action that version has); `None` when connected nowhere.
    ///
    /// # Errors
    /// [`CallFailure::OwnerUnreachable`] when the cluster cannot tell now (Redis down).
    ///
    /// ```no_run
    /// # async fn example(charge_points: ocpp_tokio::ChargePoints) {
    /// use ocpp_tokio::OcppVersion;
    /// match charge_points.locate("CP001").await {
    ///     Ok(Some(cp)) if cp.version() == Some(OcppVersion::V1_6) => { /* RemoteStartTransaction */ }
    ///     Ok(Some(_)) => { /* RequestStartTransaction */ }
    ///     Ok(None) => println!("not connected"),
    ///     Err(failure) => println!("cannot tell now: {failure}"),
    /// }
    /// # }
    /// ```
    pub async fn locate(&self, identity: &str) -> Result<Option<Connected>, CallFailure> {
        if let Some(cp) = self.get(identity) {
            return Ok(Some(Connected::Here(cp)));
        }
        match &self.inner.remote {
            Some(remote) => Ok(remote.locate(identity).await?.map(Connected::Elsewhere)),
            None => Ok(None),
        }
    }

    /// The charge points connected to other nodes (at most `limit`), through the [`Remote`];
    /// this server's own are [`ChargePoints::iter`], and [`ChargePoints::list_cluster`] lists
    /// both without failing as a whole.
    ///
    /// # Errors
    /// [`CallFailure::OwnerUnreachable`] when the cluster cannot tell now (Redis down).
    pub async fn list_elsewhere(
        &self,
        limit: usize,
    ) -> Result<Vec<RemoteChargePoint>, CallFailure> {
        match &self.inner.remote {
            Some(remote) => {
                let mut all = remote.list(limit).await?;
                all.retain(|cp| self.get(&cp.identity).is_none());
                Ok(all)
            }
            None => Ok(Vec::new()),
        }
    }

    /// Every charge point of the cluster as this server can list them now: its own always
    /// (they are known here whatever Redis does), and the other nodes' (at most `limit`,
    /// [`ChargePoints::list_elsewhere`]), or why those are unknown now.
    ///
    /// ```no_run
    /// # async fn example(charge_points: ocpp_tokio::ChargePoints) {
    /// let listing = charge_points.list_cluster(10_000).await;
    /// for cp in &listing.here {
    ///     println!("{} here", cp.identity());
    /// }
    /// match &listing.elsewhere {
    ///     Ok(others) => println!("{} on other nodes", others.len()),
    ///     Err(failure) => println!("the other nodes' are unknown now: {failure}"),
    /// }
    /// # }
    /// ```
    pub async fn list_cluster(&self, limit: usize) -> ClusterListing {
        ClusterListing {
            here: self.iter().collect(),
            elsewhere: self.list_elsewhere(limit).await,
        }
    }

    /// Records `cp`; returns the connection it replaces (to close with 1008).
    pub(crate) fn register(
        &self,
        identity: ChargePointIdentity,
        cp: ChargePoint,
    ) -> Option<ChargePoint> {
        let replaced = self
            .write()
            .register(identity.clone(), LinkKey(cp.link().clone()))?;
        Some(replaced.charge_point(&identity))
    }

    /// Takes `cp` out of the registry if it still holds `identity` (whether it did), without
    /// closing it: what a [`Presence`] does when another node took the charge point over, so
    /// that calls for it go through the [`Remote`] at once. The server does it itself when a
    /// connection ends.
    pub fn remove(&self, identity: &ChargePointIdentity, cp: &ChargePoint) -> bool {
        self.write().remove(identity, &LinkKey(cp.link().clone()))
    }
}
