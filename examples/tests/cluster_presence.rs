//! Presence that knows the live nodes (issue 35; `ocpp-cluster` PROTOCOL.md 2, the node
//! record): both servers with the default lifetimes (claim 90 s, node record 5 s), on a real
//! `redis-server` of the test's own.
//! - Two fresh nodes on a new, empty Redis answer 404 for an identity nobody ever claimed
//!   within seconds of starting, not 503 "owner unreachable" for a whole claim TTL.
//! - A killed node's charge points show `live: false` within the node lifetime, not the claim
//!   TTL.

mod common;

use common::cluster::*;
use common::redis_server::RedisServer;
use common::*;

const TOKIO: &str = env!("CARGO_BIN_EXE_tokio-server");
const MIO: &str = env!("CARGO_BIN_EXE_mio-server");

/// Far under the claim TTL (90 s): the node lifetime (5 s) with room for a loaded machine.
const LIMIT: Duration = Duration::from_secs(30);

fn unknown_identity_is_404_soon(binary: &str, other: &str) {
    let redis = RedisServer::start_empty();
    let started = Instant::now();
    let a = node(binary, &redis, "a", &[]);
    let _b = node(other, &redis, "b", &[]);
    loop {
        let (status, _) = reset_unanswered(a.admin, "NOBODY");
        if status == 404 {
            break;
        }
        assert_eq!(
            status, 503,
            "owner unreachable until the nodes announced themselves"
        );
        assert!(
            started.elapsed() < LIMIT,
            "still 503 {:?} after the nodes started",
            started.elapsed()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!(
        "NOBODY is 404 {:?} after the nodes started",
        started.elapsed()
    );
    let (status, _) = reset_unanswered(a.admin, "NOBODY");
    assert_eq!(status, 404);
}

#[test]
fn two_fresh_mio_and_tokio_nodes_answer_404_for_an_unknown_identity_within_seconds() {
    unknown_identity_is_404_soon(MIO, TOKIO);
}

#[test]
fn two_fresh_tokio_and_mio_nodes_answer_404_for_an_unknown_identity_within_seconds() {
    unknown_identity_is_404_soon(TOKIO, MIO);
}

fn killed_node_is_not_live_soon(binary: &str, other: &str) {
    let redis = RedisServer::start();
    let a = node(binary, &redis, "a", &[]);
    let mut b = node(other, &redis, "b", &[]);
    let _cp = connect(&b, "CP-B");
    redis.wait_claimed("CP-B", "b");
    let (status, one) = http(a.admin, "GET", "/chargepoints/CP-B", "");
    let one = json(&one);
    assert_eq!(status, 200, "{one}");
    assert_eq!(one["node"], "b", "{one}");
    assert_eq!(one["live"], true, "{one}");

    b.child.kill().expect("SIGKILL b");
    let _ = b.child.wait();
    let killed = Instant::now();
    loop {
        let (status, one) = http(a.admin, "GET", "/chargepoints/CP-B", "");
        let one = json(&one);
        assert_eq!(status, 200, "{one}");
        if one["live"] == false {
            break;
        }
        assert!(
            killed.elapsed() < LIMIT,
            "CP-B still live {:?} after its node was killed",
            killed.elapsed()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!(
        "CP-B is not live {:?} after its node was killed",
        killed.elapsed()
    );
    let (status, list) = http(a.admin, "GET", "/chargepoints", "");
    let list = json(&list);
    assert_eq!(status, 200, "{list}");
    let entry = list
        .as_array()
        .and_then(|list| list.iter().find(|cp| cp["identity"] == "CP-B"))
        .unwrap_or_else(|| panic!("CP-B missing from {list}"));
    assert_eq!(entry["live"], false, "{entry}");
}

#[test]
fn a_killed_tokio_nodes_charge_points_are_not_live_within_the_node_lifetime() {
    killed_node_is_not_live_soon(MIO, TOKIO);
}

#[test]
fn a_killed_mio_nodes_charge_points_are_not_live_within_the_node_lifetime() {
    killed_node_is_not_live_soon(TOKIO, MIO);
}
