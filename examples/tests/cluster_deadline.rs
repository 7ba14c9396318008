//! A routed command is never sent after its deadline (issue "The cluster as one system",
//! finding 2): on the holding node it waits behind another command for the same charge point,
//! the caller's deadline passes (504), and the CALL must never reach the charge point later.
//! Before the core's deadline rule it went out as soon as the line freed, seconds after the
//! caller had its answer. Both kinds of holder, on a real `redis-server`; every wait bounded.
//!
//! Needs `redis-server` on the PATH (`apt-get install -y redis-server`).

mod common;

use std::time::{Duration, Instant};

use common::cluster::*;
use common::redis_server::RedisServer;
use common::*;
use ocpp_server_core::Event;

const TOKIO: &str = env!("CARGO_BIN_EXE_tokio-server");
const MIO: &str = env!("CARGO_BIN_EXE_mio-server");

/// The holder's call timeout: the first command stays in flight this long.
const HOLDER_TIMEOUT_S: &str = "4";
/// The caller's: its routed command's deadline.
const CALLER_TIMEOUT_S: &str = "2";

fn a_routed_command_is_never_sent_after_its_deadline(holder_binary: &str, caller_binary: &str) {
    let redis = RedisServer::start();
    let holder = node(
        holder_binary,
        &redis,
        "h",
        &["--call-timeout-s", HOLDER_TIMEOUT_S],
    );
    let caller = node(
        caller_binary,
        &redis,
        "c",
        &["--call-timeout-s", CALLER_TIMEOUT_S],
    );
    let mut cp = connect(&holder, "CPD");
    redis.wait_claimed("CPD", "h");
    // First: a Reset through the holder itself, which the charge point leaves unanswered.
    let admin = holder.admin;
    let first = std::thread::spawn(move || {
        http(
            admin,
            "POST",
            "/chargepoints/CPD/call/Reset",
            r#"{"type":"Soft"}"#,
        )
    });
    let (reset, request) = cp.expect_call();
    assert_eq!(request.action(), "Reset");
    // Then: a DataTransfer through the other node; it waits behind the Reset on the holder.
    let asked = Instant::now();
    let (status, body) = http(
        caller.admin,
        "POST",
        "/chargepoints/CPD/call/DataTransfer",
        r#"{"vendorId":"late"}"#,
    );
    let answered = asked.elapsed();
    assert_eq!(status, 504, "{body}");
    assert!(
        answered < Duration::from_secs(4),
        "answered after {answered:?}"
    );
    // The Reset times out on the holder at 4 s (its admin answers 504) and the line frees:
    // the DataTransfer, past its deadline, must not follow.
    let (status, _) = first.join().unwrap();
    assert_eq!(status, 504);
    // The charge point answers the Reset late: a charge point holds the CSMS's next CALL
    // until it has answered the one before (OCPP-J), so only now would it see a CALL the
    // holder wrote. Watch for one for a while.
    cp.respond(&reset, reset_accepted());
    let until = Instant::now() + Duration::from_secs(3);
    while let Some(left) = until.checked_duration_since(Instant::now()) {
        match cp.next_event_within(left) {
            Some(Event::Call { request, .. }) => panic!(
                "{} reached the charge point {:?} after its caller had 504",
                request.action(),
                asked.elapsed()
            ),
            Some(Event::Closed(closed)) => panic!("closed: {closed:?}"),
            Some(_) => {}
            None => break,
        }
    }
}

#[test]
fn on_a_mio_holder() {
    a_routed_command_is_never_sent_after_its_deadline(MIO, TOKIO);
}

#[test]
fn on_a_tokio_holder() {
    a_routed_command_is_never_sent_after_its_deadline(TOKIO, MIO);
}
