//! The admin API of a cluster node shows every charge point of the cluster with its node
//! (issue "The cluster as one system", a cluster-wide view): `GET /chargepoints` lists this
//! node's and every other node's, `GET /chargepoints/ID` answers for one connected elsewhere
//! with its node and OCPP version. Both servers, on a real `redis-server`.

mod common;

use common::cluster::*;
use common::redis_server::RedisServer;
use common::*;

const TOKIO: &str = env!("CARGO_BIN_EXE_tokio-server");
const MIO: &str = env!("CARGO_BIN_EXE_mio-server");

fn get(admin: SocketAddr, path: &str) -> (u16, Value) {
    let (status, body) = http(admin, "GET", path, "");
    (status, json(&body))
}

fn view(binary: &str, other: &str) {
    let redis = RedisServer::start();
    let a = node(binary, &redis, "a", &[]);
    let b = node(other, &redis, "b", &[]);
    let _here = connect(&a, "CP-HERE");
    let _there = connect(&b, "CP-THERE");
    redis.wait_claimed("CP-HERE", "a");
    redis.wait_claimed("CP-THERE", "b");

    let (status, list) = get(a.admin, "/chargepoints");
    assert_eq!(status, 200, "{list}");
    let list = list.as_array().expect("a list");
    let entry = |identity: &str| {
        list.iter()
            .find(|cp| cp["identity"] == identity)
            .unwrap_or_else(|| panic!("{identity} missing from {list:?}"))
            .clone()
    };
    let here = entry("CP-HERE");
    assert_eq!(here["node"], "a");
    assert_eq!(here["connected"], true);
    let there = entry("CP-THERE");
    assert_eq!(there["node"], "b");
    assert_eq!(there["version"], "1.6");
    assert_eq!(there["live"], true);
    assert_eq!(list.len(), 2, "{list:?}");

    // The node's own share, never read from the presence records.
    for (admin, identity) in [(a.admin, "CP-HERE"), (b.admin, "CP-THERE")] {
        let (status, own) = get(admin, "/node/chargepoints");
        assert_eq!(status, 200, "{own}");
        let own = own.as_array().expect("a list");
        assert_eq!(own.len(), 1, "{own:?}");
        assert_eq!(own[0]["identity"], identity, "{own:?}");
        assert_eq!(own[0]["connected"], true, "{own:?}");
    }

    let (status, one) = get(a.admin, "/chargepoints/CP-THERE");
    assert_eq!(status, 200, "{one}");
    assert_eq!(one["node"], "b", "{one}");
    assert_eq!(one["version"], "1.6", "{one}");
    let (status, _) = get(a.admin, "/chargepoints/NOBODY");
    assert_eq!(status, 404);
}

#[test]
fn a_mio_node_shows_every_charge_point_of_the_cluster() {
    view(MIO, TOKIO);
}

#[test]
fn a_tokio_node_shows_every_charge_point_of_the_cluster() {
    view(TOKIO, MIO);
}

/// Redis down: `GET /chargepoints` still lists this node's own charge points (200), and says
/// in the body that the other nodes' are unknown and why, instead of 503 as a whole.
fn view_without_redis(binary: &str, other: &str) {
    let mut redis = RedisServer::start();
    let a = node(binary, &redis, "a", &[]);
    let b = node(other, &redis, "b", &[]);
    let _here = connect(&a, "CP-HERE");
    let _there = connect(&b, "CP-THERE");
    redis.wait_claimed("CP-HERE", "a");
    redis.wait_claimed("CP-THERE", "b");
    redis.stop();

    let (status, body) = get(a.admin, "/chargepoints");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["complete"], false, "{body}");
    let list = body["chargepoints"].as_array().expect("a list");
    assert_eq!(list.len(), 1, "{body}");
    assert_eq!(list[0]["identity"], "CP-HERE", "{body}");
    assert_eq!(list[0]["node"], "a", "{body}");
    assert_eq!(body["unknown"]["nodes"], "other", "{body}");
    assert!(
        body["unknown"]["reason"]
            .as_str()
            .is_some_and(|r| !r.is_empty()),
        "{body}"
    );
}

#[test]
fn a_mio_node_without_redis_lists_its_own_and_says_the_rest_is_unknown() {
    view_without_redis(MIO, TOKIO);
}

#[test]
fn a_tokio_node_without_redis_lists_its_own_and_says_the_rest_is_unknown() {
    view_without_redis(TOKIO, MIO);
}
