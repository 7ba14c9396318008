//! Presence that cannot know (PROTOCOL.md, 4.4 and 8): a command for a charge point that may
//! well be connected is answered OwnerUnreachable (503, retry), never NotConnected (404),
//! - right after Redis lost its data, until the holders had the time to register again;
//! - while the claim of a node that stopped refreshing (SIGSTOP past the claim TTL) lingers.
//!
//! A released claim is NotConnected at once. Real redis-server on loopback, each test its own.

mod common;

use std::time::{Duration, Instant};

use common::{node, wait_until, Node, Probe, RedisServer};
use ocpp_cluster::{CallFailure, Cluster, ClusterEvent};

const CALL: Duration = Duration::from_millis(500);

/// A node with a claim TTL of 1 s (refreshed every 250 ms), so that a stopped node's claim
/// outlives its liveness within a test.
async fn short_node(redis: &RedisServer, name: &str) -> Node {
    let config = common::config(redis, name)
        .with_claim_ttl(Duration::from_secs(1))
        .with_node_ttl(Duration::from_secs(1))
        .with_refresh_interval(Duration::from_millis(250));
    started(config, name).await
}

/// A node that refreshes once a minute (after its first rounds), so that a test can age one of
/// its claims by hand without the node extending it meanwhile.
async fn slow_node(redis: &RedisServer, name: &str) -> Node {
    let config = common::config(redis, name)
        .with_claim_ttl(Duration::from_secs(180))
        .with_node_ttl(Duration::from_secs(180))
        .with_refresh_interval(Duration::from_secs(60));
    started(config, name).await
}

async fn started(config: ocpp_cluster::ClusterConfig, name: &str) -> Node {
    let probe = Probe::new(name);
    let (cluster, events) = Cluster::start(config, probe.clone()).expect("start");
    wait_until(Duration::from_secs(5), || cluster.is_connected()).await;
    Node {
        cluster,
        events,
        probe,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_redis_lost_its_data_a_missing_claim_is_owner_unreachable_not_404() {
    let mut redis = RedisServer::start();
    let a = node(&redis, "a").await;
    let b = node(&redis, "b").await;
    let k = node(&redis, "k").await;
    b.cluster.claim("CP-B").await;
    k.cluster.claim("CP-K").await;
    assert!(a.cluster.call("CP-B", "Reset", "{}", CALL).await.is_ok());
    // k stops for good (killed while Redis was away): its claim never comes back, and a
    // missing claim looks the same as one whose holder has not registered again yet.
    drop(k);

    redis.restart(); // same port, no data
    let restarted = Instant::now();
    // Once a reads its inbox again, every answer comes from route.lua.
    tokio::task::block_in_place(|| redis.wait_inbox("a"));

    // A release is known at once, even now: NotConnected.
    let released = b.cluster.claim("CP-REL").await;
    b.cluster.release("CP-REL", released.ticket).await.unwrap();
    assert_eq!(
        a.cluster.call("CP-REL", "Reset", "{}", CALL).await,
        Err(CallFailure::NotConnected)
    );

    // Within the claim TTL (2 s here) of Redis coming back, a missing claim may be one whose
    // holder has not registered again: OwnerUnreachable. CP-B is answered by b once b
    // registered it again, and is never NotConnected.
    let window = Duration::from_millis(1_800);
    let mut asked = 0;
    let mut reached_b = false;
    while restarted.elapsed() < window {
        let answer = a.cluster.call("CP-K", "Reset", "{}", CALL).await;
        if restarted.elapsed() < window {
            assert_eq!(
                answer,
                Err(CallFailure::OwnerUnreachable),
                "{:?} after the restart",
                restarted.elapsed()
            );
            asked += 1;
        }
        match a.cluster.call("CP-B", "Reset", "{}", CALL).await {
            Ok(payload) => {
                assert_eq!(payload, r#"{"node":"b","identity":"CP-B"}"#);
                reached_b = true;
            }
            Err(CallFailure::OwnerUnreachable) | Err(CallFailure::Timeout) => {}
            Err(other) => panic!("CP-B, connected to b: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(asked > 0, "a did not read its inbox within {window:?}");
    assert!(reached_b, "CP-B not reached after b registered it again");

    // Past the window, nobody claimed CP-K again: it is connected nowhere.
    loop {
        match a.cluster.call("CP-K", "Reset", "{}", CALL).await {
            Err(CallFailure::NotConnected) => break,
            Err(CallFailure::OwnerUnreachable) => {
                assert!(
                    restarted.elapsed() < Duration::from_secs(6),
                    "still unknown long after the restart"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => panic!("CP-K: {other:?}"),
        }
    }
    assert_eq!(
        a.cluster.call("CP-B", "Reset", "{}", CALL).await,
        Ok(r#"{"node":"b","identity":"CP-B"}"#.to_owned())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_whose_node_stopped_refreshing_is_owner_unreachable_until_it_lingers_out() {
    let redis = RedisServer::start();
    let a = short_node(&redis, "a").await;
    let s = short_node(&redis, "s").await;
    s.cluster.claim("CP-S").await;
    let released = s.cluster.claim("CP-R").await;
    s.cluster.release("CP-R", released.ticket).await.unwrap();

    // A clean release: NotConnected at once.
    assert_eq!(
        a.cluster.call("CP-R", "Reset", "{}", CALL).await,
        Err(CallFailure::NotConnected)
    );

    // s stops refreshing (a SIGSTOP longer than the claim TTL looks the same from outside;
    // here its tasks end without releasing anything).
    drop(s);
    let stopped = Instant::now();
    // Its tasks, and with them its inbox's subscription, end asynchronously: for a moment a
    // CALL may still be published to it, and then times out (it may have been received).
    loop {
        match a.cluster.call("CP-S", "Reset", "{}", CALL).await {
            Err(CallFailure::OwnerUnreachable) => break,
            Err(CallFailure::Timeout) if stopped.elapsed() < Duration::from_secs(1) => {}
            other => panic!("CP-S, {:?} after s stopped: {other:?}", stopped.elapsed()),
        }
    }
    // Its claim outlives its 1 s of liveness: the charge point may still be connected to s
    // (which may wake up and refresh it), so OwnerUnreachable, also past the TTL.
    while stopped.elapsed() < Duration::from_millis(1_600) {
        let answer = a.cluster.call("CP-S", "Reset", "{}", CALL).await;
        if stopped.elapsed() < Duration::from_millis(1_600) {
            assert_eq!(
                answer,
                Err(CallFailure::OwnerUnreachable),
                "{:?} after s stopped",
                stopped.elapsed()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Once the key is gone (twice the TTL after the last refresh): connected nowhere.
    loop {
        match a.cluster.call("CP-S", "Reset", "{}", CALL).await {
            Err(CallFailure::NotConnected) => break,
            Err(CallFailure::OwnerUnreachable) => {
                assert!(
                    stopped.elapsed() < Duration::from_secs(4),
                    "the stopped node's claim did not go"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => panic!("CP-S: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_past_its_liveness_is_extended_by_its_node_and_taken_over_by_another() {
    let redis = RedisServer::start();
    let a = node(&redis, "a").await;
    let mut b = slow_node(&redis, "b").await;
    let c = node(&redis, "c").await;
    let claim = b.cluster.claim("CP-X").await;
    // Let b's rounds after its subscription pass: the next one is a minute away.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(a.cluster.call("CP-X", "Reset", "{}", CALL).await.is_ok());

    // The claim's liveness ends (as if b had not refreshed it for a claim TTL).
    let mut raw = redis.connection().await;
    let _: () = redis::cmd("HSET")
        .arg("ocpp:cp:CP-X")
        .arg(&["expires_ms", "1"])
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(
        a.cluster.call("CP-X", "Reset", "{}", CALL).await,
        Err(CallFailure::OwnerUnreachable)
    );
    // b wakes up and refreshes: its own claim is live again, same epoch.
    assert!(b.cluster.refresh().await.unwrap().is_empty(), "still b's");
    assert_eq!(b.cluster.holds("CP-X").unwrap().epoch, claim.epoch);
    assert_eq!(
        a.cluster.call("CP-X", "Reset", "{}", CALL).await,
        Ok(r#"{"node":"b","identity":"CP-X"}"#.to_owned())
    );

    // Past its liveness again, and the charge point reconnects to c: c takes it over and b
    // is told (it may be alive and still hold the socket).
    let _: () = redis::cmd("HSET")
        .arg("ocpp:cp:CP-X")
        .arg(&["expires_ms", "1"])
        .query_async(&mut raw)
        .await
        .unwrap();
    c.cluster.claim("CP-X").await;
    match tokio::time::timeout(Duration::from_secs(2), b.events.recv()).await {
        Ok(Some(ClusterEvent::Superseded(lost))) => {
            assert_eq!(lost.identity, "CP-X");
            assert_eq!(lost.by_node, "c");
        }
        other => panic!("b was not told: {other:?}"),
    }
    assert_eq!(
        a.cluster.call("CP-X", "Reset", "{}", CALL).await,
        Ok(r#"{"node":"c","identity":"CP-X"}"#.to_owned())
    );
}
