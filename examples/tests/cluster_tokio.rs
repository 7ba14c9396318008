//! `tokio-server` as a cluster node, alone and beside `mio-server` nodes: a `redis-server` of
//! the test's own on a free loopback port (`common::redis_server`: killed by its PID when the
//! test ends, also on panic), server processes with `--redis redis://127.0.0.1:PORT/
//! --node-id NAME`, charge points built on `ocpp-proto`'s charge-point side (`common`).
//! A command through the admin API of either kind of node reaches a charge point on the other
//! kind: both speak `ocpp-cluster`'s one protocol. Every wait is bounded.
//!
//! Needs `redis-server` on the PATH (`apt-get install -y redis-server`).

mod common;

use common::cluster::*;
use common::redis_server::RedisServer;
use common::*;

const TOKIO: &str = env!("CARGO_BIN_EXE_tokio-server");
const MIO: &str = env!("CARGO_BIN_EXE_mio-server");

/// A charge point on `holder` reached through `caller`'s admin API: a result (200), a
/// CALLERROR (502), a payload the holder cannot decode (400, not sent), not JSON (400).
fn commands_reach(
    redis: &RedisServer,
    caller: &ServerProcess,
    holder: &ServerProcess,
    holder_id: &str,
    identity: &str,
) {
    let mut cp = connect(holder, identity);
    redis.wait_claimed(identity, holder_id);
    let (status, body) = reset_through(caller.admin, &mut cp, identity);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["status"], "Accepted", "{body}");
    assert_eq!(body["action"], "Reset");

    let admin = caller.admin;
    let path = format!("/chargepoints/{identity}/call/DataTransfer");
    let command = std::thread::spawn(move || http(admin, "POST", &path, r#"{"vendorId":"x"}"#));
    let (id, _) = cp.expect_call();
    cp.respond_error(&id, ocpp_messages::error_code::ErrorCode::NotSupported);
    let (status, body) = command.join().unwrap();
    assert_eq!(status, 502, "{body}");
    assert_eq!(json(&body)["error"]["code"], "NotSupported", "{body}");

    let path = format!("/chargepoints/{identity}/call/Reset");
    let (status, body) = http(caller.admin, "POST", &path, r#"{"type":"Sometimes"}"#);
    assert_eq!(status, 400, "{body}");
    assert_eq!(json(&body)["outcome"], "invalid_request", "{body}");
    let (status, _) = http(caller.admin, "POST", &path, "{");
    assert_eq!(status, 400);
}

/// `identity` on `first`, then on `second`: `first` closes its socket with 1008, and commands
/// through either reach the new connection.
fn takeover(
    redis: &RedisServer,
    (first, first_id): (&ServerProcess, &str),
    (second, second_id): (&ServerProcess, &str),
    identity: &str,
) {
    let old = connect(first, identity);
    redis.wait_claimed(identity, first_id);
    let mut new = connect(second, identity);
    assert_eq!(close_code(old), Some(1008));
    redis.wait_claimed(identity, second_id);
    for admin in [first.admin, second.admin] {
        let (status, body) = reset_through(admin, &mut new, identity);
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["result"]["status"], "Accepted");
    }
}

#[test]
fn two_tokio_server_nodes_route_commands_and_the_newest_connection_wins() {
    let redis = RedisServer::start();
    let a = node(TOKIO, &redis, "a", &["--threads", "2"]);
    let b = node(TOKIO, &redis, "b", &["--threads", "2"]);

    commands_reach(&redis, &a, &b, "b", "CP1");
    let (status, body) = http(a.admin, "POST", "/chargepoints/NOBODY/call/Reset", "{}");
    assert_eq!(status, 404, "{body}");

    takeover(&redis, (&a, "a"), (&b, "b"), "CP9");
}

#[test]
fn a_mio_node_and_a_tokio_node_speak_one_protocol() {
    let redis = RedisServer::start();
    let m = node(MIO, &redis, "m", &["--cluster-ttl-s", "3"]);
    let mut t = node(TOKIO, &redis, "t", &["--cluster-ttl-s", "3"]);

    // Commands both ways.
    commands_reach(&redis, &t, &m, "m", "CP1");
    commands_reach(&redis, &m, &t, "t", "CP2");
    for admin in [m.admin, t.admin] {
        let (status, _) = http(admin, "POST", "/chargepoints/NOBODY/call/Reset", "{}");
        assert_eq!(status, 404);
    }
    // Takeovers both ways.
    takeover(&redis, (&m, "m"), (&t, "t"), "CP8");
    takeover(&redis, (&t, "t"), (&m, "m"), "CP9");

    // The tokio node killed: its charge points are unreachable at once from the mio node,
    // until its claims' keys go (twice the TTL of 3 s), then connected nowhere.
    let cp = connect(&t, "CP3");
    redis.wait_claimed("CP3", "t");
    t.child.kill().expect("SIGKILL t");
    let _ = t.child.wait();
    let (status, elapsed) = reset_unanswered(m.admin, "CP3");
    assert_eq!(status, 503, "owner unreachable");
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
    drop(cp);
    let deadline = Instant::now() + WAIT;
    loop {
        let (status, _) = reset_unanswered(m.admin, "CP3");
        if status == 404 {
            break;
        }
        assert_eq!(status, 503);
        assert!(Instant::now() < deadline, "t's claim did not expire");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn with_redis_down_local_commands_work_and_remote_ones_fail_fast_then_it_comes_back() {
    let mut redis = RedisServer::start();
    let a = node(TOKIO, &redis, "a", &[]);
    let b = node(TOKIO, &redis, "b", &[]);
    let mut local = connect(&a, "CP1");
    let mut remote = connect(&b, "CP2");
    redis.wait_claimed("CP1", "a");
    redis.wait_claimed("CP2", "b");

    redis.stop();
    let (status, body) = reset_through(a.admin, &mut local, "CP1");
    assert_eq!(status, 200, "{body}");
    for _ in 0..2 {
        let (status, elapsed) = reset_unanswered(a.admin, "CP2");
        assert_eq!(status, 503);
        assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
    }

    // Redis back, empty: the nodes claim their charge points again and commands route again.
    redis.restart();
    redis.wait_claimed("CP1", "a");
    redis.wait_claimed("CP2", "b");
    // (A claim comes back in the refresh round that follows the inbox's resubscription.)
    let (status, body) = reset_through(a.admin, &mut remote, "CP2");
    assert_eq!(status, 200, "{body}");
    let (status, body) = reset_through(b.admin, &mut local, "CP1");
    assert_eq!(status, 200, "{body}");
}

#[test]
fn sigterm_closes_with_1012_and_leaves_the_cluster() {
    let redis = RedisServer::start();
    let a = node(MIO, &redis, "a", &[]);
    let mut b = node(TOKIO, &redis, "b", &[]);
    let cp = connect(&b, "CP1");
    redis.wait_claimed("CP1", "b");

    let start = Instant::now();
    b.sigterm();
    assert_eq!(close_code(cp), Some(1012));
    assert!(b.wait_exit().success());
    assert!(
        start.elapsed() < Duration::from_secs(6),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(
        redis.query("HGET ocpp:cp:CP1 node").as_deref(),
        Some(""),
        "released: a tombstone"
    );
    assert_eq!(redis.query("EXISTS ocpp:node:b").as_deref(), Some(":0"));
    let (status, _) = reset_unanswered(a.admin, "CP1");
    assert_eq!(status, 404);
}
