//! Presence that knows the live nodes (PROTOCOL.md 2, the node record): every node announces
//! itself with a short lifetime (the node TTL, 5 s by default), so that
//! - a fresh cluster answers NotConnected (404) for an identity nobody claims once its nodes
//!   have announced themselves for one node TTL, not OwnerUnreachable for a whole claim TTL;
//! - a killed node's charge points read `live: false` within the node TTL, not the claim TTL.
//!
//! The default TTLs (claim 90 s, node 5 s), a real redis-server on loopback, each test its own.

mod common;

use std::time::{Duration, Instant};

use common::{wait_until, Node, Probe, RedisServer};
use ocpp_cluster::{CallFailure, Cluster, ClusterConfig};

const CALL: Duration = Duration::from_millis(500);

/// A node with the default TTLs.
async fn default_node(redis: &RedisServer, name: &str) -> Node {
    let probe = Probe::new(name);
    let config = ClusterConfig::new(redis.url(), name);
    let (cluster, events) = Cluster::start(config, probe.clone()).expect("start");
    wait_until(Duration::from_secs(5), || cluster.is_connected()).await;
    Node {
        cluster,
        events,
        probe,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_cluster_answers_not_connected_for_an_unknown_identity_within_the_node_ttl() {
    let redis = RedisServer::start_empty();
    let started = Instant::now();
    let a = default_node(&redis, "a").await;
    let _b = default_node(&redis, "b").await;
    // Well under the claim TTL (90 s): the node TTL (5 s) plus the rounds, generously.
    let limit = Duration::from_secs(20);
    loop {
        match a.cluster.call("NOBODY", "Reset", "{}", CALL).await {
            Err(CallFailure::NotConnected) => break,
            Err(CallFailure::OwnerUnreachable) => {
                assert!(
                    started.elapsed() < limit,
                    "still owner unreachable {:?} after the cluster started",
                    started.elapsed()
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => panic!("NOBODY: {other:?}"),
        }
    }
    eprintln!(
        "an unknown identity is NotConnected {:?} after the nodes started",
        started.elapsed()
    );
    // Nobody claims it: it stays NotConnected.
    assert_eq!(
        a.cluster.call("NOBODY", "Reset", "{}", CALL).await,
        Err(CallFailure::NotConnected)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_nodes_charge_points_are_not_live_within_the_node_ttl() {
    let redis = RedisServer::start();
    let a = default_node(&redis, "a").await;
    let b = default_node(&redis, "b").await;
    b.cluster.claim("CP-B").await;
    let cp = a
        .cluster
        .locate("CP-B")
        .await
        .unwrap()
        .expect("CP-B located");
    assert_eq!(cp.node, "b");
    assert!(cp.live);
    // b dies without releasing anything (its tasks stop, its connections close).
    drop(b);
    let killed = Instant::now();
    let limit = Duration::from_secs(20);
    loop {
        let cp = a
            .cluster
            .locate("CP-B")
            .await
            .unwrap()
            .expect("CP-B lingers");
        if !cp.live {
            break;
        }
        assert!(
            killed.elapsed() < limit,
            "CP-B still live {:?} after its node died",
            killed.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!(
        "a killed node's charge point is not live {:?} after",
        killed.elapsed()
    );
    let listed = a.cluster.list(100).await.unwrap();
    let cp = listed
        .iter()
        .find(|cp| cp.identity == "CP-B")
        .expect("listed");
    assert!(!cp.live, "{cp:?}");
    // Commands are not sent to it: OwnerUnreachable (it may still hold the socket), not 404.
    assert_eq!(
        a.cluster.call("CP-B", "Reset", "{}", CALL).await,
        Err(CallFailure::OwnerUnreachable)
    );
}
