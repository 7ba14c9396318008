//! Routing between the server's registry and the cluster: the server's [`Remote`] (a CALL
//! for a charge point held elsewhere goes through [`Cluster::call_as`]) and the node's
//! [`Executor`] (a command from another node runs on the connection held here).

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use ocpp_proto::{CallFailure, OcppVersion, Request, Response};
use ocpp_tokio::registry::{
    Remote, RemoteCall, RemoteCallJson, RemoteChargePoint, RemoteList, RemoteLocate,
};

use super::{Attached, NodeSeam};
use crate::{command_outcome, command_request, BoxFuture, Executor, JsonCallOutcome, Located};

/// The node's [`Executor`]: a command from another node, sent on the connection held here
/// with the command's deadline (still queued then, it is never written: the core's rule).
pub(super) fn executor(attached: &Arc<OnceLock<Attached>>) -> impl Executor + use<> {
    let attached = Arc::clone(attached);
    move |identity: &str,
          action: &str,
          payload_json: &str,
          timeout: Duration|
          -> BoxFuture<JsonCallOutcome> {
        let cp = attached
            .get()
            .and_then(|a| a.registry.upgrade())
            .and_then(|registry| registry.get(identity));
        let request = match cp {
            Some(cp) => command_request(cp.version(), action, payload_json).map(|r| (cp, r)),
            None => Err(CallFailure::NotConnected),
        };
        Box::pin(async move {
            let (cp, request) = request?;
            let call = cp.call_raw_with_deadline(request, Instant::now() + timeout);
            let outcome = tokio::time::timeout(timeout, call)
                .await
                .unwrap_or(Err(CallFailure::Timeout));
            command_outcome(&outcome)
        })
    }
}

/// What the presence records say, as a charge point held elsewhere; this node's own claims are
/// not remote.
fn elsewhere(node: &str, located: Located) -> Option<RemoteChargePoint> {
    (located.node != node).then(|| {
        RemoteChargePoint::new(
            located.identity,
            located.node,
            located.version,
            located.live,
        )
    })
}

impl Remote for NodeSeam {
    fn locate<'a>(&'a self, identity: &'a str) -> RemoteLocate<'a> {
        Box::pin(async move {
            let cluster = &self.0.cluster;
            match cluster.locate(identity).await {
                Ok(located) => Ok(located.and_then(|l| elsewhere(cluster.node_id(), l))),
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
                    .filter_map(|l| elsewhere(cluster.node_id(), l))
                    .collect()),
                Err(_) => Err(CallFailure::OwnerUnreachable),
            }
        })
    }

    /// The text as it came: the holder decodes it for its connection's version.
    fn call_json<'a>(
        &'a self,
        identity: &'a str,
        version: Option<OcppVersion>,
        action: &'a str,
        payload_json: &'a str,
        timeout: Duration,
    ) -> RemoteCallJson<'a> {
        let cluster = &self.0.cluster;
        Box::pin(cluster.call_as(identity, version, action, payload_json, timeout))
    }

    /// With its version: a holder whose connection speaks another refuses it as
    /// `WrongVersion`, as a local connection does; the answer decodes as the server's
    /// connections decode theirs.
    fn call<'a>(&'a self, identity: &'a str, request: Request) -> RemoteCall<'a> {
        Box::pin(async move {
            let Some(attached) = self.0.attached.get() else {
                return Err(CallFailure::NotConnected);
            };
            let (version, action) = (request.version(), request.action());
            let payload =
                serde_json::to_string(&request).map_err(|e| CallFailure::InvalidRequest {
                    description: format!("the request does not serialise: {e}"),
                })?;
            let timeout = attached.call_timeout;
            let result = self
                .0
                .cluster
                .call_as(identity, Some(version), action, &payload, timeout)
                .await?;
            Response::decode(version, action, &result, &attached.decode_options).map_err(|e| {
                CallFailure::InvalidResponse {
                    description: format!("{action}: {e}"),
                }
            })
        })
    }
}
