//! An admin command is never late (issue "The cluster as one system", finding 2): its deadline
//! goes with the CALL into the charge point's connection, which checks it right before the
//! CALL is written.
//! - Routed through another node, on a real `redis-server`: on the holding node it waits
//!   behind another command for the same charge point, the caller's deadline passes (504, or
//!   503 "not sent" when the holder says so first), and the CALL never reaches the charge
//!   point later. Before the rule it went out as soon as the line freed, seconds after the
//!   caller had its answer.
//! - Direct, on one server: commands queued behind an unanswered one each get their answer
//!   within the call timeout of being asked. Before the rule a queued command's time started
//!   only once it was written, and its caller waited for the ones before it too.
//!
//! Both servers; every wait bounded.
//!
//! Needs `redis-server` on the PATH (`apt-get install -y redis-server`).

mod common;

use std::time::{Duration, Instant};

use common::cluster::*;
use common::redis_server::RedisServer;
use common::*;
use ocpp_proto::{v1_6, Event};
use serde_json::json;

const TOKIO: &str = env!("CARGO_BIN_EXE_tokio-server");
const MIO: &str = env!("CARGO_BIN_EXE_mio-server");

/// The holder's call timeout: the first command stays in flight this long.
const HOLDER_TIMEOUT_S: &str = "4";
/// The caller's: its routed command's deadline.
const CALLER_TIMEOUT_S: &str = "2";

fn routed(holder_binary: &str, caller_binary: &str) {
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
    // The caller's own deadline (504: it cannot know whether the holder wrote it) or the
    // holder's report that the deadline passed while the command was still queued (503, not
    // sent), whichever comes first: both are true, and neither may be followed by the CALL.
    assert!(
        status == 504 || (status == 503 && body.contains(r#""delivery":"not_sent""#)),
        "{status} {body}"
    );
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
fn a_routed_command_is_never_sent_after_its_deadline_on_a_mio_holder() {
    routed(MIO, TOKIO);
}

#[test]
fn a_routed_command_is_never_sent_after_its_deadline_on_a_tokio_holder() {
    routed(TOKIO, MIO);
}

/// On one server with a 2 s call timeout: a Reset the charge point leaves unanswered, then
/// two DataTransfers 300 ms apart behind it. Each admin answer comes within the call timeout
/// (and a little) of its request: 504 for all three (each was written and not answered by
/// its deadline).
fn direct(binary: &str) {
    let server = ServerProcess::start(binary, &["--call-timeout-s", CALLER_TIMEOUT_S]);
    let mut cp = connect(&server, "CPQ");
    let command = |action: &'static str, body: &'static str| {
        let admin = server.admin;
        std::thread::spawn(move || {
            let asked = Instant::now();
            let path = format!("/chargepoints/CPQ/call/{action}");
            let (status, body) = http(admin, "POST", &path, body);
            (status, body, asked.elapsed())
        })
    };
    let first = command("Reset", r#"{"type":"Soft"}"#);
    let (_, request) = cp.expect_call();
    assert_eq!(request.action(), "Reset");
    let mut queued = Vec::new();
    for _ in 0..2 {
        std::thread::sleep(Duration::from_millis(300));
        queued.push(command("DataTransfer", r#"{"vendorId":"queued"}"#));
    }
    let limit = Duration::from_millis(2_700);
    for (n, command) in std::iter::once(first).chain(queued).enumerate() {
        let (status, body, took) = command.join().unwrap();
        assert_eq!(status, 504, "command {n}: {body}");
        assert!(took <= limit, "command {n} answered after {took:?}: {body}");
    }
}

#[test]
fn direct_commands_are_answered_within_their_deadline_on_mio_server() {
    direct(MIO);
}

#[test]
fn direct_commands_are_answered_within_their_deadline_on_tokio_server() {
    direct(TOKIO);
}

/// A 1.6 SetChargingProfile of the operator's (the CSMS keeps a record of it).
const PROFILE: &str = r#"{"connectorId":1,"csChargingProfiles":{"chargingProfileId":7,"stackLevel":0,"chargingProfilePurpose":"TxDefaultProfile","chargingProfileKind":"Absolute","chargingSchedule":{"chargingRateUnit":"A","chargingSchedulePeriod":[{"startPeriod":0,"limit":16}]}}}"#;

/// A command that never went out (its caller's deadline passed while it waited behind
/// another) settles the record the CSMS made for it, on both servers: the SetChargingProfile
/// after it gets its own answer. Before, tokio-server left the first record open and wrote
/// the second one's Accepted on it.
fn a_command_not_sent_settles_its_record(binary: &str) {
    let server = ServerProcess::start(binary, &["--call-timeout-s", HOLDER_TIMEOUT_S]);
    let mut cp = connect(&server, "CPR");
    let admin = server.admin;
    let first = std::thread::spawn(move || {
        http(
            admin,
            "POST",
            "/chargepoints/CPR/call/Reset",
            r#"{"type":"Soft"}"#,
        )
    });
    let (reset, request) = cp.expect_call();
    assert_eq!(request.action(), "Reset");
    // Queued behind the unanswered Reset; its caller gives up after 300 ms.
    let (status, body) = http_with(
        admin,
        "POST",
        "/chargepoints/CPR/call/SetChargingProfile",
        "X-Deadline-Ms: 300\r\n",
        PROFILE,
    );
    assert_eq!(status, 503, "{body}");
    assert_eq!(json(&body)["outcome"], "deadline_passed", "{body}");
    cp.respond(&reset, reset_accepted());
    assert_eq!(first.join().unwrap().0, 200);
    // The next one is answered Accepted.
    let second = std::thread::spawn(move || {
        http(
            admin,
            "POST",
            "/chargepoints/CPR/call/SetChargingProfile",
            PROFILE,
        )
    });
    let (id, request) = cp.expect_call();
    assert_eq!(request.action(), "SetChargingProfile");
    let accepted = v1_6::SetChargingProfileResponse {
        status: v1_6::ChargingProfileStatus::Accepted,
    };
    cp.respond(&id, Response::from(v1_6::Response::from(accepted)));
    let (status, body) = second.join().unwrap();
    assert_eq!(status, 200, "{body}");
    let (status, body) = http(admin, "GET", "/chargepoints/CPR/charging-profiles", "");
    assert_eq!(status, 200, "{body}");
    let profiles = json(&body)["charging_profiles"].clone();
    let answers: Vec<_> = profiles
        .as_array()
        .expect("charging_profiles")
        .iter()
        .map(|p| (p["answer"].clone(), p["id"].clone()))
        .collect();
    assert_eq!(
        answers,
        [
            (json!("deadline_passed"), json!(7)),
            (json!("Accepted"), json!(7))
        ],
        "{profiles}"
    );
}

#[test]
fn a_command_not_sent_settles_its_record_on_mio_server() {
    a_command_not_sent_settles_its_record(MIO);
}

#[test]
fn a_command_not_sent_settles_its_record_on_tokio_server() {
    a_command_not_sent_settles_its_record(TOKIO);
}
