//! A command's answer is the same from every path, and a status a client would retry (503) is
//! never given when the CALL may have reached the charge point (issue "The cluster as one
//! system", findings 3 and 4). Each answer names the outcome and whether the CALL may have
//! reached the charge point: `{"outcome", "delivery", "error"}`.
//! - A charge point that drops before answering: 504 `disconnected` through its own node and
//!   through another node, on a mio and on a tokio holder. Before, its own node answered 502
//!   (which the README gave for a CALLERROR) and another node 504.
//! - A node told to stop (SIGTERM) while a command it sent waits for its answer: 504, the CALL
//!   may have run, for a command to a local charge point and for one routed to another node.
//!   Before, both servers answered 503 "the server is shutting down", which a client retries.
//!
//! - Every other outcome (result, CALLERROR, timeout, a request that does not fit the charge
//!   point's version, a charge point connected nowhere): the same status and outcome through
//!   the charge point's node and through another, on a mio and on a tokio holder.
//!
//! Real server processes on a real `redis-server`; every wait bounded.

mod common;

use std::net::SocketAddr;
use std::thread::JoinHandle;

use common::cluster::*;
use common::redis_server::RedisServer;
use common::*;

const TOKIO: &str = env!("CARGO_BIN_EXE_tokio-server");
const MIO: &str = env!("CARGO_BIN_EXE_mio-server");

/// `POST /chargepoints/ID/call/Reset` on `admin`, in a thread: its status and body as JSON.
fn reset(admin: SocketAddr, identity: &str) -> JoinHandle<(u16, Value)> {
    let path = format!("/chargepoints/{identity}/call/Reset");
    std::thread::spawn(move || {
        let (status, body) = http(admin, "POST", &path, r#"{"type":"Soft"}"#);
        (status, json(&body))
    })
}

/// The CALL `command` sent to `cp`; if none comes in time, the panic says what the command
/// was answered (a command answered without a CALL, 404 say, is the usual cause).
fn call_of(
    cp: &mut ChargePoint,
    command: &mut Option<JoinHandle<(u16, Value)>>,
) -> (ocpp_proto::MessageId<'static>, ocpp_proto::Request) {
    cp.call_within(WAIT).unwrap_or_else(|| {
        let answered = command
            .take()
            .filter(|c| c.is_finished())
            .map(|c| c.join().unwrap());
        panic!("no CALL in time; the command's answer: {answered:?}")
    })
}

fn assert_may_have_run(what: &str, (status, body): (u16, Value), outcome: &str) {
    assert_eq!(status, 504, "{what}: {body}");
    assert_eq!(body["outcome"], outcome, "{what}: {body}");
    assert_eq!(body["delivery"], "unknown", "{what}: {body}");
}

fn drops_before_answering(holder: &str, other: &str) {
    let redis = RedisServer::start();
    let h = node(holder, &redis, "h", &[]);
    let c = node(other, &redis, "c", &[]);
    for (path, admin) in [
        ("through its node", h.admin),
        ("through another node", c.admin),
    ] {
        let mut cp = connect(&h, "CPX");
        redis.wait_claimed("CPX", "h");
        let mut command = Some(reset(admin, "CPX"));
        let (_, request) = call_of(&mut cp, &mut command);
        assert_eq!(request.action(), "Reset");
        drop(cp); // the TCP connection ends, no close frame, no answer
        let answer = command.map(|c| c.join().unwrap());
        assert_may_have_run(path, answer.expect("a command"), "disconnected");
    }
}

#[test]
fn a_charge_point_that_drops_before_answering_gets_504_on_every_path_of_a_mio_holder() {
    drops_before_answering(MIO, TOKIO);
}

#[test]
fn a_charge_point_that_drops_before_answering_gets_504_on_every_path_of_a_tokio_holder() {
    drops_before_answering(TOKIO, MIO);
}

/// What the charge point does with the CALL it gets.
#[derive(Debug, Clone, Copy)]
enum Reaction {
    Accept,
    Refuse,
    Ignore,
    Drop,
}

/// One command on `admin` for `identity`, and what the charge point does with it (`None`:
/// the CALL must not reach it): the status and the body's outcome.
fn outcome_of(
    admin: SocketAddr,
    cp: &mut Option<ChargePoint>,
    identity: &str,
    body: &'static str,
    reaction: Option<Reaction>,
) -> (u16, String) {
    let path = format!("/chargepoints/{identity}/call/Reset");
    let command = std::thread::spawn(move || http(admin, "POST", &path, body));
    if let Some(reaction) = reaction {
        let connection = cp.as_mut().expect("a charge point");
        let (id, request) = connection.expect_call();
        assert_eq!(request.action(), "Reset");
        match reaction {
            Reaction::Accept => connection.respond(&id, reset_accepted()),
            Reaction::Refuse => connection.respond_error(&id, ErrorCode::NotSupported),
            Reaction::Ignore => {}
            Reaction::Drop => *cp = None,
        }
    }
    let (status, text) = command.join().unwrap();
    let body = json(&text);
    let outcome = match status {
        200 => "result".to_owned(),
        _ => body["outcome"].as_str().unwrap_or("(none)").to_owned(),
    };
    (status, outcome)
}

/// Every outcome a command can have, through the charge point's own node and through another
/// node: the same status and outcome on both paths.
fn every_outcome_on_both_paths(holder: &str, other: &str) {
    let redis = RedisServer::start();
    let timeout = ["--call-timeout-s", "1"];
    let h = node(holder, &redis, "h", &timeout);
    let c = node(other, &redis, "c", &timeout);
    let soft = r#"{"type":"Soft"}"#;
    let cases: [(&str, &'static str, Option<Reaction>, u16, &str); 6] = [
        ("CPO", soft, Some(Reaction::Accept), 200, "result"),
        ("CPO", soft, Some(Reaction::Refuse), 502, "call_error"),
        ("CPO", soft, Some(Reaction::Ignore), 504, "timeout"),
        ("CPO", soft, Some(Reaction::Drop), 504, "disconnected"),
        (
            "CPO",
            r#"{"type":"Sometimes"}"#,
            None,
            400,
            "invalid_request",
        ),
        ("NOBODY", soft, None, 404, "not_connected"),
    ];
    for (identity, body, reaction, status, outcome) in cases {
        for (path, admin) in [("own node", h.admin), ("other node", c.admin)] {
            let mut cp = Some(connect(&h, "CPO"));
            redis.wait_claimed("CPO", "h");
            let got = outcome_of(admin, &mut cp, identity, body, reaction);
            assert_eq!(
                got,
                (status, outcome.to_owned()),
                "{reaction:?} through the {path}"
            );
            if let Some(cp) = cp {
                cp.close();
            }
        }
    }
}

#[test]
fn every_outcome_is_the_same_through_a_mio_holder_and_another_node() {
    every_outcome_on_both_paths(MIO, TOKIO);
}

#[test]
fn every_outcome_is_the_same_through_a_tokio_holder_and_another_node() {
    every_outcome_on_both_paths(TOKIO, MIO);
}

/// SIGTERM to the node a command was posted to, once its CALL reached the charge point
/// (which never answers): directly, and routed to the charge point's node.
fn stops_while_a_command_waits(binary: &str, other: &str) {
    let redis = RedisServer::start();
    // Direct: the charge point is on the node that stops.
    let mut alone = node(binary, &redis, "s", &[]);
    let mut cp = connect(&alone, "CPS");
    let mut command = Some(reset(alone.admin, "CPS"));
    let _ = call_of(&mut cp, &mut command);
    alone.sigterm();
    let (status, body) = command.expect("a command").join().unwrap();
    assert_eq!(status, 504, "direct: {body}");
    assert_eq!(body["delivery"], "unknown", "direct: {body}");
    drop(cp);
    alone.wait_exit();

    // Routed: the charge point is on another node; the caller stops.
    let h = node(other, &redis, "h", &[]);
    let mut caller = node(binary, &redis, "c", &[]);
    let mut cp = connect(&h, "CPR");
    redis.wait_claimed("CPR", "h");
    let mut command = Some(reset(caller.admin, "CPR"));
    let _ = call_of(&mut cp, &mut command);
    caller.sigterm();
    let (status, body) = command.expect("a command").join().unwrap();
    assert_eq!(status, 504, "routed: {body}");
    assert_eq!(body["delivery"], "unknown", "routed: {body}");
    caller.wait_exit();
}

#[test]
fn mio_server_stopping_answers_504_for_a_command_that_may_have_run() {
    stops_while_a_command_waits(MIO, TOKIO);
}

#[test]
fn tokio_server_stopping_answers_504_for_a_command_that_may_have_run() {
    stops_while_a_command_waits(TOKIO, MIO);
}
