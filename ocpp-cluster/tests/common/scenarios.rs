//! The scenarios that run on every kind of Redis: one redis-server (`tests/cluster.rs`) and a
//! Redis Cluster (`tests/redis_cluster.rs`), each given its [`Backend`].
#![allow(dead_code, unreachable_pub)]

use std::time::{Duration, Instant};

use ocpp_cluster::{CallFailure, ClusterEvent, Superseded};

use super::{node, Backend};

/// A command's timeout where the test is not about timeouts: generous, since an answer that
/// comes returns at once whatever the limit (a loaded CI machine must not turn it into Timeout).
const CALL: Duration = Duration::from_secs(10);

async fn next_event(events: &mut ocpp_cluster::ClusterEvents, within: Duration) -> Superseded {
    match tokio::time::timeout(within, events.recv()).await {
        Ok(Some(ClusterEvent::Superseded(s))) => s,
        other => panic!("no takeover event within {within:?}: {other:?}"),
    }
}

pub async fn command_reaches_the_holder_and_its_answer_comes_back(redis: &impl Backend) {
    let a = node(redis, "a").await;
    let b = node(redis, "b").await;
    let claim = b.cluster.claim("CP-1").await;
    assert!(claim.epoch.is_some(), "registered");

    // Result, through Redis to b's executor and back.
    let answer = a
        .cluster
        .call("CP-1", "Reset", r#"{"type":"Soft"}"#, CALL)
        .await;
    assert_eq!(
        answer,
        Ok(r#"{"node":"b","identity":"CP-1"}"#.to_owned()),
        "a result routed from a to b"
    );
    assert_eq!(b.probe.runs_of(r#"{"type":"Soft"}"#), 1);
    assert_eq!(a.probe.total(), 0);

    // A CALLERROR comes back as such, details verbatim.
    let answer = a.cluster.call("CP-1", "Fail", "{}", CALL).await;
    assert_eq!(
        answer,
        Err(CallFailure::ErrorResponse {
            code: ocpp_server_core::ErrorCode::NotSupported,
            description: "not here".to_owned(),
            details: r#"{"why":"test"}"#.to_owned(),
        }),
        "a CALLERROR routed from a to b"
    );

    // A panicking executor: still one answer, remote and local, one that may have run.
    for from in [&a, &b] {
        let answer = from.cluster.call("CP-1", "Panic", "{}", CALL).await;
        assert_eq!(
            answer,
            Err(CallFailure::Timeout),
            "a panic on b, called from {}",
            from.probe.node
        );
    }

    // On the holder itself: the local executor, no Redis needed.
    let answer = b.cluster.call("CP-1", "Reset", r#"{"n":1}"#, CALL).await;
    assert_eq!(
        answer,
        Ok(r#"{"node":"b","identity":"CP-1"}"#.to_owned()),
        "on the holder"
    );

    // Nobody holds it: NotConnected (404).
    let answer = a.cluster.call("CP-404", "Reset", "{}", CALL).await;
    assert_eq!(answer, Err(CallFailure::NotConnected), "held by nobody");
    assert_eq!(CallFailure::NotConnected.http_status(), 404);

    // Released: NotConnected too, and only the holder's own epoch can release.
    assert!(
        !a.cluster.release("CP-1", claim.ticket).await.unwrap(),
        "a holds nothing"
    );
    assert!(b.cluster.release("CP-1", claim.ticket).await.unwrap());
    let answer = a.cluster.call("CP-1", "Reset", "{}", CALL).await;
    assert_eq!(answer, Err(CallFailure::NotConnected), "released");
}

pub async fn newest_claim_wins_and_the_old_node_hears_it_at_once(redis: &impl Backend) {
    let mut a = node(redis, "a").await;
    let b = node(redis, "b").await;
    let c = node(redis, "c").await;

    let old = a.cluster.claim("CP-7").await;
    let new = b.cluster.claim("CP-7").await;
    assert!(new.epoch > old.epoch, "epochs grow: {old:?} then {new:?}");

    let started = Instant::now();
    let lost = next_event(&mut a.events, Duration::from_secs(2)).await;
    assert_eq!(lost.identity, "CP-7");
    assert_eq!(lost.ticket, old.ticket);
    assert_eq!(Some(lost.epoch), old.epoch);
    assert_eq!(lost.by_node, "b");
    assert_eq!(Some(lost.by_epoch), new.epoch);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "at once, not at the next refresh"
    );
    assert!(a.cluster.holds("CP-7").is_none());

    // Commands follow the new owner, from the old node and from a third one.
    for from in [&a, &c] {
        let answer = from.cluster.call("CP-7", "Reset", "{}", CALL).await;
        assert_eq!(answer, Ok(r#"{"node":"b","identity":"CP-7"}"#.to_owned()));
    }
    assert_eq!(a.probe.total(), 0, "no command went to the stale socket");

    // The old node's late release cannot touch the new claim.
    assert!(!a.cluster.release("CP-7", old.ticket).await.unwrap());
    let answer = c.cluster.call("CP-7", "Reset", "{}", CALL).await;
    assert!(answer.is_ok());
}

pub async fn killed_node_s_claims_expire_and_routing_follows_the_reconnection(
    redis: &impl Backend,
) {
    let a = node(redis, "a").await;
    let b = node(redis, "b").await;
    let c = node(redis, "c").await;
    b.cluster.claim("CP-K").await;
    assert!(c.cluster.call("CP-K", "Reset", "{}", CALL).await.is_ok());

    // "SIGKILL": b's tasks and connections stop, nothing is released. (The kernel closes a
    // killed process's sockets at once; an aborted task drops its connection a moment later.)
    drop(b);
    let killed = Instant::now();
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Until the claim's key is gone: OwnerUnreachable (nobody reads b's inbox, or its record
    // is gone, or the claim is past its liveness: b may only be stopped).
    let answer = c.cluster.call("CP-K", "Reset", "{}", CALL).await;
    assert_eq!(answer, Err(CallFailure::OwnerUnreachable));
    // Within twice the TTL (2 s) plus slack: NotConnected.
    loop {
        let answer = c.cluster.call("CP-K", "Reset", "{}", CALL).await;
        if answer == Err(CallFailure::NotConnected) {
            break;
        }
        assert_eq!(answer, Err(CallFailure::OwnerUnreachable));
        assert!(
            killed.elapsed() < Duration::from_secs(6),
            "claim outlived twice its TTL"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The charge point reconnects to a: routing follows.
    a.cluster.claim("CP-K").await;
    let answer = c.cluster.call("CP-K", "Reset", "{}", CALL).await;
    assert_eq!(answer, Ok(r#"{"node":"a","identity":"CP-K"}"#.to_owned()));
}

pub async fn drain_releases_every_claim_and_the_node_record(redis: &impl Backend) {
    let a = node(redis, "a").await;
    let b = node(redis, "b").await;
    a.cluster.claim("CP-1").await;
    a.cluster.claim("CP-2").await;
    let record = redis.node_key("a");
    assert!(redis.exists(&record), "{record}");

    assert_eq!(a.cluster.drain().await.unwrap(), 2);
    assert!(a.cluster.claims().is_empty());
    assert!(!redis.exists(&record), "{record}");
    for id in ["CP-1", "CP-2"] {
        assert_eq!(
            b.cluster.call(id, "Reset", "{}", CALL).await,
            Err(CallFailure::NotConnected)
        );
    }
    // Nothing comes back after a refresh round.
    a.cluster.refresh().await.unwrap();
    assert!(!redis.exists(&record), "{record}");
}
