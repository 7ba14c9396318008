//! `mio-server` as a cluster node: a `redis-server` of the test's own on a free loopback port
//! (`common::redis_server`: killed by its PID when the test ends, also on panic), two or three
//! `mio-server` processes with `--redis redis://127.0.0.1:PORT/ --node-id a|b|c`, charge
//! points built on `ocpp-proto`'s charge-point side (`common`). Every wait is bounded.
//!
//! Needs `redis-server` on the PATH (`apt-get install -y redis-server`).

mod common;

use common::cluster::*;
use common::redis_server::RedisServer;
use common::*;

const MIO: &str = env!("CARGO_BIN_EXE_mio-server");

#[test]
fn commands_reach_charge_points_on_other_nodes_and_the_newest_connection_wins() {
    let redis = RedisServer::start();
    let a = node(MIO, &redis, "a", &["--threads", "2"]);
    let b = node(MIO, &redis, "b", &["--threads", "2"]);

    // Several charge points on b (spread over its two loops): each reached through a.
    let mut cps: Vec<(String, ChargePoint)> = (1..=4)
        .map(|n| {
            let identity = format!("CP{n}");
            let cp = connect(&b, &identity);
            (identity, cp)
        })
        .collect();
    for (identity, _) in &cps {
        redis.wait_claimed(identity, "b");
    }
    for (identity, cp) in &mut cps {
        let (status, body) = reset_through(a.admin, cp, identity);
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["result"]["status"], "Accepted", "{body}");
        assert_eq!(body["action"], "Reset");
    }

    // A CALLERROR comes back as 502 with its code.
    let (_, cp1) = &mut cps[0];
    let admin = a.admin;
    let command = std::thread::spawn(move || {
        http(
            admin,
            "POST",
            "/chargepoints/CP1/call/DataTransfer",
            r#"{"vendorId":"x"}"#,
        )
    });
    let (id, _) = cp1.expect_call();
    cp1.respond_error(&id, ocpp_messages::error_code::ErrorCode::NotSupported);
    let (status, body) = command.join().unwrap();
    assert_eq!(status, 502, "{body}");
    assert_eq!(json(&body)["error"]["code"], "NotSupported", "{body}");

    // A payload that does not decode on the holder: nothing sent, and said so (400
    // `invalid_request`), not a CALLERROR made up in the charge point's name.
    let (status, body) = http(
        a.admin,
        "POST",
        "/chargepoints/CP1/call/Reset",
        r#"{"type":"Sometimes"}"#,
    );
    assert_eq!(status, 400, "{body}");
    assert_eq!(json(&body)["outcome"], "invalid_request", "{body}");
    assert_eq!(json(&body)["delivery"], "not_sent", "{body}");
    // Not JSON at all: refused on the caller.
    let (status, _) = http(a.admin, "POST", "/chargepoints/CP1/call/Reset", "{");
    assert_eq!(status, 400);
    // Connected nowhere: 404.
    let (status, body) = http(a.admin, "POST", "/chargepoints/NOBODY/call/Reset", "{}");
    assert_eq!(status, 404, "{body}");

    // Takeover: CP9 on a, then on b: a closes its socket with 1008.
    let old = connect(&a, "CP9");
    redis.wait_claimed("CP9", "a");
    let mut new = connect(&b, "CP9");
    assert_eq!(close_code(old), Some(1008));
    redis.wait_claimed("CP9", "b");
    for admin in [a.admin, b.admin] {
        let (status, body) = reset_through(admin, &mut new, "CP9");
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["result"]["status"], "Accepted");
    }
}

#[test]
fn a_killed_node_is_unreachable_at_once_and_routing_follows_the_reconnect() {
    let redis = RedisServer::start();
    let a = node(MIO, &redis, "a", &["--cluster-ttl-s", "3"]);
    let mut b = node(MIO, &redis, "b", &["--cluster-ttl-s", "3"]);
    let c = node(MIO, &redis, "c", &["--cluster-ttl-s", "3"]);
    let cp = connect(&b, "CP1");
    redis.wait_claimed("CP1", "b");

    b.child.kill().expect("SIGKILL b");
    let _ = b.child.wait();
    for admin in [a.admin, c.admin] {
        let (status, elapsed) = reset_unanswered(admin, "CP1");
        assert_eq!(status, 503, "owner unreachable");
        assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
    }
    drop(cp);

    // b's claim goes stale after its TTL (3 s here) and its key one TTL later: then connected
    // nowhere.
    let deadline = Instant::now() + WAIT;
    loop {
        let (status, _) = reset_unanswered(a.admin, "CP1");
        if status == 404 {
            break;
        }
        assert_eq!(status, 503);
        assert!(Instant::now() < deadline, "b's claim did not expire");
        std::thread::sleep(Duration::from_millis(200));
    }

    // The charge point reconnects to a: routing follows, from c and on a itself.
    let mut cp = connect(&a, "CP1");
    redis.wait_claimed("CP1", "a");
    for admin in [c.admin, a.admin] {
        let (status, body) = reset_through(admin, &mut cp, "CP1");
        assert_eq!(status, 200, "{body}");
    }
}

#[test]
fn with_redis_down_local_commands_work_and_remote_ones_fail_fast_then_it_comes_back() {
    let mut redis = RedisServer::start();
    let a = node(MIO, &redis, "a", &[]);
    let b = node(MIO, &redis, "b", &[]);
    let mut local = connect(&a, "CP1");
    let mut remote = connect(&b, "CP2");
    redis.wait_claimed("CP1", "a");
    redis.wait_claimed("CP2", "b");

    redis.stop();
    let (status, body) = reset_through(a.admin, &mut local, "CP1");
    assert_eq!(status, 200, "{body}");
    let (status, elapsed) = reset_unanswered(a.admin, "CP2");
    assert_eq!(status, 503);
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");

    // A charge point connecting meanwhile is served locally.
    let mut late = connect(&a, "CP3");
    let (status, body) = reset_through(a.admin, &mut late, "CP3");
    assert_eq!(status, 200, "{body}");
    let (status, elapsed) = reset_unanswered(a.admin, "CP2");
    assert_eq!(status, 503);
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");

    // Redis back, empty: the nodes claim their charge points again (the one that connected
    // meanwhile too) and commands route again.
    redis.restart();
    for (identity, holder) in [("CP1", "a"), ("CP2", "b"), ("CP3", "a")] {
        redis.wait_claimed(identity, holder);
    }
    let (status, body) = reset_through(b.admin, &mut late, "CP3");
    assert_eq!(status, 200, "{body}");
    let (status, body) = reset_through(b.admin, &mut local, "CP1");
    assert_eq!(status, 200, "{body}");
    let (status, body) = reset_through(a.admin, &mut remote, "CP2");
    assert_eq!(status, 200, "{body}");
}

#[test]
fn sigterm_closes_with_1012_and_leaves_the_cluster() {
    let redis = RedisServer::start();
    let a = node(MIO, &redis, "a", &[]);
    let mut b = node(MIO, &redis, "b", &[]);
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
    // Released in Redis: not connected anywhere.
    assert_eq!(
        redis.query("HGET ocpp:cp:CP1 node").as_deref(),
        Some(""),
        "a tombstone"
    );
    let (status, _) = reset_unanswered(a.admin, "CP1");
    assert_eq!(status, 404);
}
