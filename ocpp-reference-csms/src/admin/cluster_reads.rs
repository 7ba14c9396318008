//! The reads a cluster node answers from Redis: `GET /chargepoints` and
//! `GET /chargepoints/{identity}` across every node.

use ocpp_cluster::{ClusterError, Located};
use ocpp_messages::version::OcppVersion;
use ocpp_proto::ChargePointIdentity;
use serde_json::{json, Value};

use super::{charge_point_json, parse_identity, HttpResponse};
use crate::Csms;

/// How many charge points `GET /chargepoints` lists from a cluster's presence records at most.
pub const CLUSTER_LIST_LIMIT: usize = 100_000;

/// A read of the admin API that a cluster node answers from the cluster's presence records
/// too ([`cluster_read`]): where charge points connected to other nodes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterRead {
    /// `GET /chargepoints`: this node's, then every other node's.
    List,
    /// `GET /chargepoints/{identity}` for a charge point not connected here.
    One(ChargePointIdentity),
}

/// Whether `method` and `path` are a read a cluster node answers cluster-wide.
pub fn cluster_read(csms: &Csms, method: &str, path: &str) -> Option<ClusterRead> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    match (method, segments.as_slice()) {
        ("GET", ["chargepoints"]) => Some(ClusterRead::List),
        ("GET", ["chargepoints", identity]) => {
            let identity = parse_identity(identity).ok()?;
            // Connected here: this node's own record, as without a cluster.
            match csms.version_of(&identity) {
                Some(_) => None,
                None => Some(ClusterRead::One(identity)),
            }
        }
        _ => None,
    }
}

/// A charge point connected to another node, as the presence records say: `{"identity",
/// "node","connected","version","claimed_ms","live"}`. Its application state (status,
/// transactions) is the holding node's: ask that node.
pub fn located_json(cp: &Located) -> Value {
    json!({
        "identity": cp.identity,
        "node": cp.node,
        "connected": true,
        "version": cp.version.map(OcppVersion::as_str),
        "claimed_ms": cp.claimed_ms,
        "live": cp.live,
    })
}

/// `GET /chargepoints` on the cluster node `node`: this node's connected charge points (each
/// with `"node"`), then those of every other node ([`located_json`]), as a JSON array.
///
/// When the presence records cannot be read (Redis down or too slow) the node still answers 200
/// with what it knows, its own charge points, and says that the rest is unknown, in an object
/// rather than the array (a client that reads the array cannot take a partial list for the
/// whole cluster): `{"complete": false, "chargepoints": [this node's], "unknown": {"nodes":
/// "other", "reason": "..."}}`.
pub fn cluster_list_response(
    csms: &Csms,
    node: &str,
    located: &Result<Vec<Located>, ClusterError>,
) -> HttpResponse {
    let mut list: Vec<Value> = csms.with_connected(|local| {
        local
            .iter()
            .map(|cp| {
                let mut value = charge_point_json(cp, csms.config().get_tariff());
                value["node"] = Value::String(node.to_owned());
                value
            })
            .collect()
    });
    let located = match located {
        Ok(located) => located,
        Err(e) => {
            return HttpResponse::json(
                200,
                &json!({
                    "complete": false,
                    "chargepoints": list,
                    "unknown": {
                        "nodes": "other",
                        "reason": format!("the cluster's presence is unreadable: {e}"),
                    },
                }),
            )
        }
    };
    let here: std::collections::HashSet<String> = list
        .iter()
        .filter_map(|cp| cp["identity"].as_str().map(str::to_owned))
        .collect();
    let mut remote: Vec<&Located> = located
        .iter()
        .filter(|cp| cp.node != node && !here.contains(&cp.identity))
        .collect();
    remote.sort_by(|a, b| a.identity.cmp(&b.identity));
    list.extend(remote.into_iter().map(located_json));
    HttpResponse::json(200, &Value::Array(list))
}

/// `GET /chargepoints/{identity}` on a cluster node for a charge point not connected here:
/// where it is connected ([`located_json`]), or this node's record of it (`local`, from
/// [`route`](super::route): a charge point seen here before, or 404); 503 when the presence records cannot be
/// read.
pub fn cluster_one_response(
    local: HttpResponse,
    located: &Result<Option<Located>, ClusterError>,
) -> HttpResponse {
    match located {
        Ok(Some(cp)) => HttpResponse::json(200, &located_json(cp)),
        Ok(None) => local,
        Err(e) => HttpResponse::error(503, &format!("the cluster's presence is unreadable: {e}")),
    }
}
