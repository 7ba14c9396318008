//! What the cluster tests of both servers share: a node process on a test Redis, a charge
//! point on a node, a Reset sent through a node's admin API, the close code a node sent.

use super::redis_server::RedisServer;
use super::*;
use ocpp_messages::v1_6;

/// A server process (`binary`: mio-server or tokio-server) as node `id` on `redis`, once it
/// reads its inbox (commands routed to it before then are refused as not sent).
pub fn node(binary: &str, redis: &RedisServer, id: &str, extra: &[&str]) -> ServerProcess {
    let url = redis.url();
    let mut args = vec!["--redis", url.as_str(), "--node-id", id];
    args.extend_from_slice(extra);
    let server = ServerProcess::start(binary, &args);
    redis.wait_inbox(id);
    server
}

pub fn connect(server: &ServerProcess, identity: &str) -> ChargePoint {
    ChargePoint::connect(server.ocpp, identity, &[OcppVersion::V1_6], None).expect("connected")
}

pub fn reset_accepted() -> Response {
    Response::from(v1_6::Response::from(v1_6::ResetResponse {
        status: v1_6::ResetStatus::Accepted,
    }))
}

/// `POST /chargepoints/ID/call/Reset` on `admin`, answered by `cp`: the status and body.
pub fn reset_through(admin: SocketAddr, cp: &mut ChargePoint, identity: &str) -> (u16, Value) {
    let path = format!("/chargepoints/{identity}/call/Reset");
    let command = std::thread::spawn(move || http(admin, "POST", &path, r#"{"type":"Soft"}"#));
    let (id, request) = cp.expect_call();
    assert_eq!(request.action(), "Reset");
    cp.respond(&id, reset_accepted());
    let (status, body) = command.join().unwrap();
    (status, json(&body))
}

/// A command nobody answers: the status and how long it took.
pub fn reset_unanswered(admin: SocketAddr, identity: &str) -> (u16, Duration) {
    let start = Instant::now();
    let (status, _) = http(
        admin,
        "POST",
        &format!("/chargepoints/{identity}/call/Reset"),
        r#"{"type":"Soft"}"#,
    );
    (status, start.elapsed())
}

/// Reads until the connection ends; the close code the server sent.
pub fn close_code(mut cp: ChargePoint) -> Option<u16> {
    loop {
        if let Event::Closed(closed) = cp.next_event() {
            return match closed.reason {
                CloseReason::PeerClosed { code, .. } => code.map(|c| c.as_u16()),
                other => panic!("closed otherwise: {other:?}"),
            };
        }
    }
}
