//! The admin API takes the caller's deadline (issue 35): `X-Deadline-Ms: <ms>`, the time the
//! caller still waits, bounded by the server's own call timeout. A command whose caller's
//! deadline passed is not sent: answered 503 `deadline_passed` (not sent) when it could not
//! be written in time, and never written afterwards; routed through another node, the
//! holder gets the caller's deadline with the command. Both servers, every wait bounded.
//!
//! Needs `redis-server` on the PATH (`apt-get install -y redis-server`).

mod common;

use common::cluster::*;
use common::redis_server::RedisServer;
use common::*;

const TOKIO: &str = env!("CARGO_BIN_EXE_tokio-server");
const MIO: &str = env!("CARGO_BIN_EXE_mio-server");

/// The servers' own call timeout: long beside the callers' deadlines.
const SERVER_TIMEOUT_S: &str = "6";

/// `http` with an `X-Deadline-Ms` header: the status, the body and how long it took.
fn http_deadline(
    addr: SocketAddr,
    path: &str,
    body: &str,
    deadline_ms: &str,
) -> (u16, Value, Duration) {
    let start = Instant::now();
    let header = format!("X-Deadline-Ms: {deadline_ms}\r\n");
    let (status, body) = http_with(addr, "POST", path, &header, body);
    (status, json(&body), start.elapsed())
}

/// A Reset through `admin` that the charge point leaves unanswered: it holds the line.
fn occupy(
    admin: SocketAddr,
    cp: &mut ChargePoint,
    identity: &str,
) -> std::thread::JoinHandle<(u16, String)> {
    let path = format!("/chargepoints/{identity}/call/Reset");
    let first = std::thread::spawn(move || http(admin, "POST", &path, r#"{"type":"Soft"}"#));
    let (_, request) = cp.expect_call();
    assert_eq!(request.action(), "Reset");
    first
}

/// The caller's deadline passes while its command waits behind another on the line: 503 not
/// sent, at the caller's deadline (not the server's timeout), and never written later.
fn queued_past_the_callers_deadline(holder_binary: &str, caller_binary: &str, routed: bool) {
    let redis = RedisServer::start();
    let holder = node(
        holder_binary,
        &redis,
        "h",
        &["--call-timeout-s", SERVER_TIMEOUT_S],
    );
    let caller = node(
        caller_binary,
        &redis,
        "c",
        &["--call-timeout-s", SERVER_TIMEOUT_S],
    );
    let mut cp = connect(&holder, "CPX");
    redis.wait_claimed("CPX", "h");
    let first = occupy(holder.admin, &mut cp, "CPX");
    let through = if routed { caller.admin } else { holder.admin };
    let (status, body, took) = http_deadline(
        through,
        "/chargepoints/CPX/call/DataTransfer",
        r#"{"vendorId":"late"}"#,
        "700",
    );
    assert!(
        took < Duration::from_secs(4),
        "answered after {took:?}, not at the caller's deadline: {body}"
    );
    eprintln!("answered {status} after {took:?} (caller's deadline 700 ms, the server's 6 s)");
    if routed {
        // The caller's own wait ends first: it may not know whether the holder sent it.
        assert!(matches!(status, 503 | 504), "{status} {body}");
    } else {
        assert_eq!(status, 503, "{body}");
        assert_eq!(body["delivery"], "not_sent", "{body}");
        assert_eq!(body["outcome"], "deadline_passed", "{body}");
    }
    // The Reset times out on the server (6 s) and the line frees: the DataTransfer, past its
    // caller's deadline, must not follow.
    let (status, _) = first.join().unwrap();
    assert_eq!(status, 504);
    assert!(
        cp.call_within(Duration::from_secs(2)).is_none(),
        "a CALL was written after its caller's deadline"
    );
}

#[test]
fn a_mio_server_does_not_send_a_command_past_its_callers_deadline() {
    queued_past_the_callers_deadline(MIO, TOKIO, false);
}

#[test]
fn a_tokio_server_does_not_send_a_command_past_its_callers_deadline() {
    queued_past_the_callers_deadline(TOKIO, MIO, false);
}

#[test]
fn a_command_routed_from_a_tokio_node_carries_its_callers_deadline() {
    queued_past_the_callers_deadline(MIO, TOKIO, true);
}

#[test]
fn a_command_routed_from_a_mio_node_carries_its_callers_deadline() {
    queued_past_the_callers_deadline(TOKIO, MIO, true);
}

/// A deadline already passed (0 ms): not sent at all, answered at once.
fn already_passed(binary: &str) {
    let redis = RedisServer::start();
    let holder = node(binary, &redis, "h", &["--call-timeout-s", SERVER_TIMEOUT_S]);
    let mut cp = connect(&holder, "CPZ");
    redis.wait_claimed("CPZ", "h");
    let (status, body, took) = http_deadline(
        holder.admin,
        "/chargepoints/CPZ/call/Reset",
        r#"{"type":"Soft"}"#,
        "0",
    );
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["delivery"], "not_sent", "{body}");
    assert!(took < Duration::from_secs(2), "{took:?}");
    assert!(
        cp.call_within(Duration::from_secs(1)).is_none(),
        "sent anyway"
    );
    // A deadline that is not a number: refused.
    let (status, body, _) = http_deadline(
        holder.admin,
        "/chargepoints/CPZ/call/Reset",
        r#"{"type":"Soft"}"#,
        "soon",
    );
    assert_eq!(status, 400, "{body}");
}

#[test]
fn a_mio_server_does_not_send_a_command_whose_callers_deadline_has_passed() {
    already_passed(MIO);
}

#[test]
fn a_tokio_server_does_not_send_a_command_whose_callers_deadline_has_passed() {
    already_passed(TOKIO);
}
