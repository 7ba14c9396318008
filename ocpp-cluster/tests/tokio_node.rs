//! A server of `ocpp-tokio` as a node (feature `tokio`, `tokio_node::ServerBuilderExt`): two
//! servers of this process as two nodes on one `redis-server` of the test's own (a free
//! loopback port, killed by its PID when the test ends); calls through `ChargePoints` reach
//! charge points on the other node, the newest connection wins, Redis down keeps local calls
//! working, shutdown leaves the cluster. Every wait is bounded.
//!
//! Needs `redis-server` on the PATH (`apt-get install -y redis-server`).

#[path = "common/redis_server.rs"]
mod redis_server;
#[path = "common/tokio_server.rs"]
mod tokio_server;

use std::time::{Duration, Instant};

use ocpp_cluster::ClusterConfig;
use ocpp_proto::{CloseCode, CloseReason, ConnectionConfig, DecodeOptions, Response};
use ocpp_test_kit::WireChargePoint;
use ocpp_tokio::registry::Connected;
use ocpp_tokio::{v1_6, CallFailure, ErrorCode, OcppVersion};
use redis_server::RedisServer;
use tokio_server::{eventually, server_config, TestNode, WAIT};

/// The charge points' call timeout: short, so that the timeout case fits in a test.
const CALL_TIMEOUT: Duration = Duration::from_secs(2);

/// Node `name` on `redis`, with short TTLs.
async fn node(redis: &RedisServer, name: &str) -> TestNode {
    node_with(redis, name, server_config()).await
}

/// Node `name` on `redis` whose connections are configured by `config`.
async fn node_with(redis: &RedisServer, name: &str, config: ConnectionConfig) -> TestNode {
    let cluster = ClusterConfig::new(redis.url(), name)
        .with_claim_ttl(Duration::from_secs(2))
        .with_node_ttl(Duration::from_secs(2))
        .with_refresh_interval(Duration::from_millis(500))
        .with_redis_timeout(Duration::from_millis(300));
    let connections = config.call_timeout(CALL_TIMEOUT);
    TestNode::start(cluster, connections, Duration::from_secs(2)).await
}

/// Waits until Redis says `holder` holds `identity` (asked through `server`'s node).
async fn claimed(server: &TestNode, identity: &str, holder: &str) {
    let deadline = Instant::now() + WAIT;
    loop {
        let located = server.cluster.locate(identity).await;
        if matches!(&located, Ok(Some(cp)) if cp.node == holder) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{identity} not claimed by {holder}: {located:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn reset_soft() -> v1_6::ResetRequest {
    v1_6::ResetRequest::new(v1_6::ResetType::Soft)
}

fn reset_accepted() -> Response {
    Response::from(v1_6::Response::from(v1_6::ResetResponse {
        status: v1_6::ResetStatus::Accepted,
    }))
}

/// A typed Reset through `server`'s registry, answered Accepted by `cp` wherever it is.
async fn reset_through(server: &TestNode, cp: &mut WireChargePoint, identity: &str) {
    let charge_points = server.charge_points.clone();
    let identity = identity.to_owned();
    let call = tokio::spawn(async move { charge_points.call(&identity, reset_soft()).await });
    let (id, request) = cp.wait_for_call().await.unwrap();
    assert_eq!(request.action(), "Reset");
    cp.call_result(&id, reset_accepted()).await.unwrap();
    let response = tokio::time::timeout(WAIT, call)
        .await
        .expect("answered in time")
        .unwrap()
        .expect("a CALLRESULT");
    assert_eq!(response.status, v1_6::ResetStatus::Accepted);
}

fn close_code(closed: &ocpp_proto::Closed) -> Option<CloseCode> {
    match &closed.reason {
        CloseReason::PeerClosed { code, .. } => *code,
        other => panic!("closed otherwise: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_on_one_node_reaches_a_charge_point_on_the_other() {
    let redis = RedisServer::start();
    let a = node(&redis, "a").await;
    let b = node(&redis, "b").await;
    let mut cp = WireChargePoint::connect(b.addr, "CP1", OcppVersion::V1_6)
        .await
        .unwrap();
    claimed(&a, "CP1", "b").await;
    assert!(a.charge_points.get("CP1").is_none(), "not connected to a");

    // Typed, through a's registry: the result comes back from b.
    reset_through(&a, &mut cp, "CP1").await;

    // Untyped, answered with a CALLERROR: its code comes back.
    let charge_points = a.charge_points.clone();
    let call = tokio::spawn(async move {
        let request = ocpp_tokio::ocpp::Request::from(v1_6::Request::from(reset_soft()));
        charge_points.call_raw("CP1", request).await
    });
    let (id, _) = cp.wait_for_call().await.unwrap();
    cp.call_error(&id, ErrorCode::NotSupported, "no")
        .await
        .unwrap();
    match call.await.unwrap() {
        Err(CallFailure::ErrorResponse {
            code, description, ..
        }) => {
            assert_eq!(code, ErrorCode::NotSupported);
            assert_eq!(description, "no");
        }
        other => panic!("expected a CALLERROR, got {other:?}"),
    }

    // Not answered: a timeout, within the call timeout and a margin.
    let start = Instant::now();
    let charge_points = a.charge_points.clone();
    let call = tokio::spawn(async move { charge_points.call("CP1", reset_soft()).await });
    let (id, _) = cp.wait_for_call().await.unwrap();
    assert_eq!(call.await.unwrap(), Err(CallFailure::Timeout));
    assert!(start.elapsed() < CALL_TIMEOUT + Duration::from_secs(1));
    // Answered late (the server gave up): the next CALL may come.
    cp.call_error(&id, ErrorCode::GenericError, "late")
        .await
        .unwrap();

    // Connected to no node.
    let nobody = a.charge_points.call("NOBODY", reset_soft()).await;
    assert_eq!(nobody, Err(CallFailure::NotConnected));

    // And from b to itself, as without a cluster.
    reset_through(&b, &mut cp, "CP1").await;
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_newest_connection_wins_and_calls_follow_it() {
    let redis = RedisServer::start();
    let a = node(&redis, "a").await;
    let b = node(&redis, "b").await;
    let mut old = WireChargePoint::connect(a.addr, "CP9", OcppVersion::V1_6)
        .await
        .unwrap();
    claimed(&b, "CP9", "a").await;
    reset_through(&b, &mut old, "CP9").await;

    let mut new = WireChargePoint::connect(b.addr, "CP9", OcppVersion::V1_6)
        .await
        .unwrap();
    let closed = old.wait_for_close().await.unwrap();
    assert_eq!(close_code(&closed), Some(CloseCode::POLICY_VIOLATION));
    claimed(&a, "CP9", "b").await;
    eventually("a forgot CP9", || a.charge_points.get("CP9").is_none()).await;
    for server in [&a, &b] {
        reset_through(server, &mut new, "CP9").await;
    }

    // The old connection's end released nothing: b's claim stands. The new one's end
    // releases it (a tombstone: connected nowhere).
    assert_eq!(redis.query("HGET ocpp:cp:CP9 node").as_deref(), Some("b"));
    new.close(CloseCode::NORMAL, "bye").await.unwrap();
    let _ = new.wait_for_close().await.unwrap();
    let deadline = Instant::now() + WAIT;
    while redis.query("HGET ocpp:cp:CP9 node").as_deref() != Some("") {
        assert!(Instant::now() < deadline, "CP9 not released");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let gone = a.charge_points.call("CP9", reset_soft()).await;
    assert_eq!(gone, Err(CallFailure::NotConnected));
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_redis_down_local_calls_work_and_remote_ones_fail_fast() {
    let mut redis = RedisServer::start();
    let a = node(&redis, "a").await;
    let b = node(&redis, "b").await;
    let mut local = WireChargePoint::connect(a.addr, "CP1", OcppVersion::V1_6)
        .await
        .unwrap();
    let mut remote = WireChargePoint::connect(b.addr, "CP2", OcppVersion::V1_6)
        .await
        .unwrap();
    claimed(&a, "CP1", "a").await;
    claimed(&a, "CP2", "b").await;

    redis.stop();
    reset_through(&a, &mut local, "CP1").await;
    for _ in 0..3 {
        let start = Instant::now();
        let unreachable = a.charge_points.call("CP2", reset_soft()).await;
        assert_eq!(unreachable, Err(CallFailure::OwnerUnreachable));
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "{:?}",
            start.elapsed()
        );
    }
    // A charge point connecting meanwhile is served, and called, locally.
    let mut late = WireChargePoint::connect(a.addr, "CP3", OcppVersion::V1_6)
        .await
        .unwrap();
    eventually("CP3 registered", || a.charge_points.get("CP3").is_some()).await;
    reset_through(&a, &mut late, "CP3").await;
    // Listing the cluster (issue 35): the other nodes' are unknown, not the whole list.
    assert_eq!(
        a.charge_points.list_elsewhere(100).await,
        Err(CallFailure::OwnerUnreachable)
    );
    let listing = a.charge_points.list_cluster(100).await;
    let mut here: Vec<String> = listing
        .here
        .iter()
        .map(|cp| cp.identity().as_str().to_owned())
        .collect();
    here.sort();
    assert_eq!(here, ["CP1", "CP3"]);
    assert_eq!(listing.elsewhere, Err(CallFailure::OwnerUnreachable));

    // Redis back, empty: both nodes claim their charge points again; routing works again.
    redis.restart();
    for (identity, holder) in [("CP1", "a"), ("CP2", "b"), ("CP3", "a")] {
        claimed(&b, identity, holder).await;
    }
    let deadline = Instant::now() + WAIT;
    while !(a.cluster.is_connected() && b.cluster.is_connected()) {
        assert!(Instant::now() < deadline, "inboxes not subscribed again");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    reset_through(&b, &mut late, "CP3").await;
    reset_through(&a, &mut remote, "CP2").await;
    let listing = a.charge_points.list_cluster(100).await;
    assert_eq!(listing.here.len(), 2);
    let elsewhere = listing.elsewhere.expect("known again");
    assert_eq!(elsewhere.len(), 1);
    assert_eq!(
        (elsewhere[0].identity.as_str(), elsewhere[0].node.as_str()),
        ("CP2", "b")
    );
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_closes_with_1012_and_leaves_the_cluster() {
    let redis = RedisServer::start();
    let a = node(&redis, "a").await;
    let b = node(&redis, "b").await;
    let mut cp = WireChargePoint::connect(b.addr, "CP1", OcppVersion::V1_6)
        .await
        .unwrap();
    claimed(&a, "CP1", "b").await;
    assert_eq!(redis.query("EXISTS ocpp:node:b").as_deref(), Some(":1"));

    let took = b.stop().await;
    assert!(took < Duration::from_secs(4), "{took:?}");
    let closed = cp.wait_for_close().await.unwrap();
    assert_eq!(close_code(&closed), Some(CloseCode::SERVICE_RESTART));
    assert_eq!(
        redis.query("HGET ocpp:cp:CP1 node").as_deref(),
        Some(""),
        "released: a tombstone"
    );
    assert_eq!(redis.query("EXISTS ocpp:node:b").as_deref(), Some(":0"));
    let gone = a.charge_points.call("CP1", reset_soft()).await;
    assert_eq!(gone, Err(CallFailure::NotConnected));
    a.stop().await;
}

/// A request of another OCPP version than the charge point's: `WrongVersion` (409, not sent)
/// on every path, typed or not, on the holder and through another node (issue 35: routed, it
/// was `InvalidRequest`, 400). JSON text without a version that does not fit the charge
/// point's version is `InvalidRequest`: the holder cannot decode it, sends nothing, and says
/// so, not a CALLERROR made up in the charge point's name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_of_another_version_is_wrong_version_on_every_path() {
    let redis = RedisServer::start();
    let a = node(&redis, "a").await;
    let b = node(&redis, "b").await;
    let mut cp = WireChargePoint::connect(b.addr, "CP1", OcppVersion::V1_6)
        .await
        .unwrap();
    claimed(&a, "CP1", "b").await;
    let reset201 =
        || ocpp_tokio::v2_0_1::ResetRequest::new(ocpp_tokio::v2_0_1::ResetEnum::Immediate);
    for (path, server) in [("local", &b), ("routed", &a)] {
        let typed = server.charge_points.call("CP1", reset201()).await;
        assert_eq!(typed, Err(CallFailure::WrongVersion), "{path}, typed");
        let request =
            ocpp_tokio::ocpp::Request::from(ocpp_tokio::v2_0_1::Request::from(reset201()));
        let raw = server.charge_points.call_raw("CP1", request).await;
        assert_eq!(raw, Err(CallFailure::WrongVersion), "{path}, untyped");
    }
    assert!(!CallFailure::WrongVersion.may_have_reached_peer());
    match a
        .cluster
        .call("CP1", "Reset", r#"{"type":"Immediate"}"#, CALL_TIMEOUT)
        .await
    {
        Err(failure @ CallFailure::InvalidRequest { .. }) => {
            assert!(!failure.may_have_reached_peer());
        }
        other => panic!("expected InvalidRequest, got {other:?}"),
    }
    // None of them reached the charge point: the first CALL it sees is the next one.
    let charge_points = a.charge_points.clone();
    let call = tokio::spawn(async move { charge_points.call("CP1", reset_soft()).await });
    let (id, request) = cp.wait_for_call().await.unwrap();
    assert_eq!(
        request,
        ocpp_tokio::ocpp::Request::from(v1_6::Request::from(reset_soft()))
    );
    cp.call_result(&id, reset_accepted()).await.unwrap();
    let response = call.await.unwrap().expect("a CALLRESULT");
    assert_eq!(response.status, v1_6::ResetStatus::Accepted);
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_node_can_tell_where_a_charge_point_is_and_its_version() {
    let redis = RedisServer::start();
    let a = node(&redis, "a").await;
    let b = node(&redis, "b").await;
    let _cp = WireChargePoint::connect(b.addr, "CP1", OcppVersion::V2_0_1)
        .await
        .unwrap();
    claimed(&a, "CP1", "b").await;
    // On the node holding it: its handle. On the other: where, and its version, so that the
    // application can pick RequestStartTransaction rather than RemoteStartTransaction.
    match b.charge_points.locate("CP1").await {
        Ok(Some(Connected::Here(cp))) => assert_eq!(cp.version(), OcppVersion::V2_0_1),
        other => panic!("expected CP1 here, got {other:?}"),
    }
    match a.charge_points.locate("CP1").await {
        Ok(Some(Connected::Elsewhere(cp))) => {
            assert_eq!(cp.node, "b");
            assert_eq!(cp.version, Some(OcppVersion::V2_0_1));
            assert!(cp.live);
        }
        other => panic!("expected CP1 on b, got {other:?}"),
    }
    assert!(matches!(a.charge_points.locate("NOBODY").await, Ok(None)));
    let elsewhere = a.charge_points.list_elsewhere(100).await.unwrap();
    assert_eq!(elsewhere.len(), 1);
    assert_eq!(elsewhere[0].identity, "CP1");
    assert!(b
        .charge_points
        .list_elsewhere(100)
        .await
        .unwrap()
        .is_empty());
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_command_reaches_the_charge_point_wherever_it_is() {
    let redis = RedisServer::start();
    let a = node(&redis, "a").await;
    let b = node(&redis, "b").await;
    let mut cp = WireChargePoint::connect(b.addr, "CP1", OcppVersion::V1_6)
        .await
        .unwrap();
    claimed(&a, "CP1", "b").await;
    // Routed (a) and local (b), without a version: decoded for the connection's.
    for (path, server) in [("routed", &a), ("local", &b)] {
        let charge_points = server.charge_points.clone();
        let call = tokio::spawn(async move {
            charge_points
                .call_json("CP1", None, "Reset", r#"{"type":"Soft"}"#, CALL_TIMEOUT)
                .await
        });
        let (id, request) = cp.wait_for_call().await.unwrap();
        assert_eq!(request.action(), "Reset", "{path}");
        cp.call_result(&id, reset_accepted()).await.unwrap();
        let payload = call.await.unwrap().expect("a CALLRESULT");
        let payload: serde_json::Value = serde_json::from_str(&payload).unwrap();
        assert_eq!(payload["status"], "Accepted", "{path}");
        // Of another version, or not fitting the connection's: not sent.
        let other = server.charge_points.call_json(
            "CP1",
            Some(OcppVersion::V2_0_1),
            "Reset",
            r#"{"type":"Immediate"}"#,
            CALL_TIMEOUT,
        );
        assert_eq!(other.await, Err(CallFailure::WrongVersion), "{path}");
        let unfit = server
            .charge_points
            .call_json("CP1", None, "Reset", r#"{"type":"Now"}"#, CALL_TIMEOUT)
            .await;
        assert!(
            matches!(unfit, Err(CallFailure::InvalidRequest { .. })),
            "{path}: {unfit:?}"
        );
    }
    // Nobody holds it: NotConnected, once Redis answered within the nodes' Redis timeout
    // (300 ms here; on a machine loaded enough to miss it, OwnerUnreachable is the right
    // answer, and a retry the right response to it: at most 5).
    let mut nobody = Err(CallFailure::OwnerUnreachable);
    for _ in 0..5 {
        nobody = a
            .charge_points
            .call_json("NOBODY", None, "Reset", r#"{"type":"Soft"}"#, CALL_TIMEOUT)
            .await;
        if nobody != Err(CallFailure::OwnerUnreachable) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(nobody, Err(CallFailure::NotConnected));
    assert!(a.charge_points.remote().is_some());
    assert_eq!(a.cluster.node_id(), "a");
    a.stop().await;
    b.stop().await;
}

/// An operator's command is decoded strictly on every path, whatever the connections' decode
/// options (which say how far a charge point's own messages may drift): before, the node
/// holding the charge point refused a Reset of a type the schema does not list while the
/// same command routed from another node was decoded leniently and sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_that_does_not_fit_the_schema_is_refused_on_every_path_even_with_lenient_connections(
) {
    let redis = RedisServer::start();
    let lenient = || server_config().decode_options(DecodeOptions::lenient());
    let a = node_with(&redis, "a", lenient()).await;
    let b = node_with(&redis, "b", lenient()).await;
    let mut cp = WireChargePoint::connect(b.addr, "CP1", OcppVersion::V1_6)
        .await
        .unwrap();
    claimed(&a, "CP1", "b").await;
    for (path, server) in [("local", &b), ("routed", &a)] {
        let unfit = server
            .charge_points
            .call_json("CP1", None, "Reset", r#"{"type":"Later"}"#, CALL_TIMEOUT)
            .await;
        match unfit {
            Err(failure @ CallFailure::InvalidRequest { .. }) => {
                assert!(!failure.may_have_reached_peer(), "{path}");
            }
            other => panic!("{path}: expected InvalidRequest, got {other:?}"),
        }
    }
    // Neither reached the charge point: the first CALL it sees is the next one.
    reset_through(&a, &mut cp, "CP1").await;
    a.stop().await;
    b.stop().await;
}
