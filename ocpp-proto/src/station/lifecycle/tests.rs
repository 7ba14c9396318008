//! The lifecycle's decisions, one scenario each: what goes out and in which order, what a
//! boot's answer and a connection's end mean, the status after each step.

use std::time::{Duration, Instant};

use ocpp_messages::{v1_6, DateTime, OcppVersion, Request, Response};

use super::*;
use crate::station::{NetworkProfiles, RegistrationStatus};
use crate::{CallFailure, CloseCode};

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn station() -> Lifecycle<u32> {
    let info = StationInfo::new("ACME", "Wallbox One");
    let profiles = NetworkProfiles::from_urls(["ws://a.example/ocpp/CP1"]);
    Lifecycle::new(info, RetryBackOff::default(), profiles)
}

fn boot_answer(status: v1_6::RegistrationStatus, interval: i32) -> CallOutcome {
    let time = DateTime::from_unix_timestamp(1_780_000_000).unwrap();
    Ok(Response::from(v1_6::BootNotificationResponse::new(
        status, time, interval,
    )))
}

fn status_notification() -> Request {
    v1_6::StatusNotificationRequest::new(
        1,
        v1_6::ChargePointErrorCode::NoError,
        v1_6::ChargePointStatus::Available,
    )
    .into()
}

/// Connected on 1.6 at `t0`; the boot handed out and taken; its reason.
fn connect_and_boot(station: &mut Lifecycle<u32>, t0: Instant) -> String {
    station.begin_attempt();
    station.on_connected(t0, OcppVersion::V1_6);
    let Some(Transmit::Own(boot)) = station.poll_transmit(t0) else {
        panic!("a boot is due at once");
    };
    assert_eq!(boot.action(), "BootNotification");
    station.on_call_sent(t0, boot.action());
    let payload = serde_json::to_value(&boot).unwrap();
    payload["reason"]
        .as_str()
        .unwrap_or("none (1.6)")
        .to_owned()
}

fn accept(station: &mut Lifecycle<u32>, now: Instant) {
    let accepted = boot_answer(v1_6::RegistrationStatus::Accepted, 300);
    assert!(station.on_call_completed(now, "BootNotification", &accepted));
}

#[test]
fn held_calls_wait_for_acceptance_and_go_after_the_boot_in_order() {
    let t0 = Instant::now();
    let mut station = station();
    station.hold(status_notification(), 1, t0 + secs(60));
    station.hold(v1_6::HeartbeatRequest {}.into(), 2, t0 + secs(60));
    station.hold(status_notification(), 3, t0 + secs(5));
    connect_and_boot(&mut station, t0);
    assert!(
        station.poll_transmit(t0).is_none(),
        "nothing before acceptance"
    );
    assert!(!station.may_send_queued());
    assert_eq!(station.poll_timeout(), Some(t0 + secs(5)));
    // The third one's deadline passes while Pending: never sent.
    let pending = boot_answer(v1_6::RegistrationStatus::Pending, 30);
    assert!(!station.on_call_completed(t0, "BootNotification", &pending));
    let at = t0 + secs(5);
    assert!(matches!(station.poll_transmit(at), Some(Transmit::Expired(c)) if c.caller == 3));
    assert!(station.poll_transmit(at).is_none());
    // Accepted: the others go, in the order they were made.
    accept(&mut station, at);
    let mut sent = Vec::new();
    while let Some(transmit) = station.poll_transmit(at) {
        let Transmit::Held(call) = transmit else {
            panic!("only held CALLs are due");
        };
        station.on_call_sent(at, call.request.action());
        sent.push(call.caller);
    }
    assert_eq!(sent, [1, 2]);
    assert!(station.may_send_queued());
}

#[test]
fn an_accepted_trigger_lets_its_message_out_once_while_pending() {
    let t0 = Instant::now();
    let mut station = station();
    station.hold(status_notification(), 1, t0 + secs(60));
    station.hold(status_notification(), 2, t0 + secs(60));
    connect_and_boot(&mut station, t0);
    let pending = boot_answer(v1_6::RegistrationStatus::Pending, 30);
    station.on_call_completed(t0, "BootNotification", &pending);
    assert!(station.poll_transmit(t0).is_none(), "nothing while Pending");
    let trigger: Request =
        v1_6::TriggerMessageRequest::new(v1_6::MessageTrigger::StatusNotification).into();
    let answer = |status| Answer::result(v1_6::TriggerMessageResponse::new(status));
    // Rejected by the application: nothing more may go.
    assert!(
        station.on_incoming(&trigger, |_| Ok(())).is_none(),
        "the application answers"
    );
    station.on_answered(t0, &answer(v1_6::TriggerMessageStatus::Rejected));
    assert!(station.poll_transmit(t0).is_none());
    // Accepted: one StatusNotification goes, the other waits.
    assert!(station.on_incoming(&trigger, |_| Ok(())).is_none());
    station.on_answered(t0, &answer(v1_6::TriggerMessageStatus::Accepted));
    let Some(Transmit::Held(call)) = station.poll_transmit(t0) else {
        panic!("the triggered message goes");
    };
    assert_eq!(call.caller, 1);
    station.on_call_sent(t0, call.request.action());
    assert!(station.poll_transmit(t0).is_none(), "one per trigger");
    // A CALL the registration refuses itself is not the application's to answer.
    let start = v1_6::RemoteStartTransactionRequest::new("TAG");
    assert!(station.on_incoming(&start.into(), |_| Ok(())).is_some());
}

#[test]
fn the_status_follows_each_step() {
    let t0 = Instant::now();
    let mut station = station();
    station.begin_attempt();
    assert_eq!(station.status(), Status::Connecting { attempt: 1 });
    let Next::Reconnect(wait) = station.on_connect_failed(t0, Cause::Tls, 0) else {
        panic!("a failed attempt is retried");
    };
    assert_eq!(
        station.status(),
        Status::Waiting {
            wait,
            cause: Cause::Tls
        }
    );
    connect_and_boot(&mut station, t0);
    assert_eq!(
        station.status(),
        Status::Registering {
            version: OcppVersion::V1_6,
            registration: None,
            boot_failures: 0
        }
    );
    let pending = boot_answer(v1_6::RegistrationStatus::Pending, 30);
    station.on_call_completed(t0, "BootNotification", &pending);
    assert_eq!(
        station.status(),
        Status::Registering {
            version: OcppVersion::V1_6,
            registration: Some(RegistrationStatus::Pending),
            boot_failures: 0
        }
    );
    accept(&mut station, t0 + secs(30));
    let version = OcppVersion::V1_6;
    assert_eq!(station.status(), Status::Accepted { version });
}

#[test]
fn an_unanswered_boot_gives_the_connection_up_and_waits() {
    let t0 = Instant::now();
    let mut station = station();
    station.set_boot_retries(2, secs(5));
    connect_and_boot(&mut station, t0);
    let timeout = Err(CallFailure::Timeout);
    station.on_call_completed(t0 + secs(30), "BootNotification", &timeout);
    let Status::Registering { boot_failures, .. } = station.status() else {
        panic!("still registering");
    };
    assert_eq!(boot_failures, 1);
    // Refused by the connection: a failure too.
    let at = t0 + secs(35);
    assert!(matches!(station.poll_transmit(at), Some(Transmit::Own(_))));
    station.on_own_call_refused(at, "BootNotification");
    let reason = "BootNotification unanswered";
    assert!(matches!(station.poll_transmit(at), Some(Transmit::Close(r)) if r == reason));
    assert!(station.poll_transmit(at).is_none(), "one close");
    let closed = CloseReason::LocalClose {
        code: CloseCode::NORMAL,
    };
    let next = station.on_closed(at, &closed, 0);
    assert!(matches!(next, Next::Reconnect(_)));
    let attempts = 2;
    assert!(matches!(
        station.status(),
        Status::Waiting { cause: Cause::BootUnanswered { attempts: a }, .. } if a == attempts
    ));
}

#[test]
fn a_reboot_closes_and_reconnects_at_once_with_its_reason_until_accepted() {
    let t0 = Instant::now();
    let mut station = station();
    station.on_connected(t0, OcppVersion::V2_0_1);
    let _ = station.poll_transmit(t0);
    station.reboot(BootReason::RemoteReset);
    assert!(matches!(
        station.poll_transmit(t0),
        Some(Transmit::Close("reboot"))
    ));
    let closed = CloseReason::LocalClose {
        code: CloseCode::NORMAL,
    };
    assert_eq!(station.on_closed(t0, &closed, 0), Next::ReconnectNow);
    // 2.0.1 says why it boots: the reboot's reason, until a boot is accepted.
    let reason_of_next_boot = |station: &mut Lifecycle<u32>, now| {
        station.begin_attempt();
        station.on_connected(now, OcppVersion::V2_0_1);
        let Some(Transmit::Own(boot)) = station.poll_transmit(now) else {
            panic!("a boot is due");
        };
        station.on_call_sent(now, boot.action());
        serde_json::to_value(&boot).unwrap()["reason"].clone()
    };
    assert_eq!(reason_of_next_boot(&mut station, t0), "RemoteReset");
    let lost = CloseReason::Eof;
    station.on_closed(t0, &lost, 0);
    assert_eq!(reason_of_next_boot(&mut station, t0), "RemoteReset");
    let time = DateTime::from_unix_timestamp(1_780_000_000).unwrap();
    let accepted = crate::v2_0_1::BootNotificationResponse::new(
        time,
        300,
        crate::v2_0_1::RegistrationStatusEnum::Accepted,
    );
    assert!(station.on_call_completed(t0, "BootNotification", &Ok(accepted.into())));
    station.on_closed(t0, &lost, 0);
    // Booted before, the link came back: no restart to claim.
    assert_eq!(reason_of_next_boot(&mut station, t0), "Unknown");
}

#[test]
fn a_stop_during_the_handshake_closes_and_stops() {
    let t0 = Instant::now();
    let mut station = station();
    station.begin_attempt();
    station.stop();
    assert!(station.is_stopping());
    let close = station.poll_transmit(t0);
    assert!(matches!(close, Some(Transmit::Close("station stopping"))));
    assert!(station.poll_transmit(t0).is_none());
    let closed = CloseReason::LocalClose {
        code: CloseCode::NORMAL,
    };
    assert_eq!(station.on_closed(t0, &closed, 0), Next::Stop(Ok(())));
    assert_eq!(station.status(), Status::Stopped);
}

#[test]
fn a_refusal_retrying_cannot_cure_stops_unless_told_to_retry() {
    let t0 = Instant::now();
    let refused = CloseReason::UpgradeRefused {
        status: Some(401),
        description: String::new(),
    };
    let mut station = station();
    station.begin_attempt();
    let next = station.on_closed(t0, &refused, 0);
    assert_eq!(next, Next::Stop(Err(PermanentFailure::Unauthorized)));
    assert_eq!(station.status(), Status::Stopped);

    let mut retrying = self::station();
    retrying.set_retry_refusals(true);
    retrying.begin_attempt();
    assert!(matches!(
        retrying.on_closed(t0, &refused, 0),
        Next::Reconnect(_)
    ));
}

#[test]
fn the_station_returns_to_its_first_central_system_when_told_to() {
    let t0 = Instant::now();
    let info = StationInfo::new("ACME", "Wallbox One");
    let urls = ["ws://a.example/ocpp/CP1", "ws://b.example/ocpp/CP1"];
    let profiles = NetworkProfiles::from_urls(urls)
        .with_attempts(1)
        .with_return_after(secs(600));
    let mut station = Lifecycle::<u32>::new(info, RetryBackOff::default(), profiles);
    let first = station.begin_attempt().unwrap();
    assert_eq!(first.profile.csms_url, urls[0]);
    station.on_connect_failed(t0, Cause::Other, 0);
    let second = station.begin_attempt().unwrap();
    assert_eq!(second.profile.csms_url, urls[1]);
    station.on_connected(t0, OcppVersion::V1_6);
    let Some(Transmit::Own(boot)) = station.poll_transmit(t0) else {
        panic!("a boot is due");
    };
    station.on_call_sent(t0, boot.action());
    accept(&mut station, t0);
    assert_eq!(
        station.poll_timeout(),
        Some(t0 + secs(300)),
        "the heartbeat first"
    );
    station.on_call_sent(t0 + secs(300), "Heartbeat");
    let back = t0 + secs(600);
    assert!(station.poll_timeout().is_some_and(|at| at <= back));
    station.handle_timeout(back);
    let reason = "returning to the first central system";
    assert!(matches!(station.poll_transmit(back), Some(Transmit::Close(r)) if r == reason));
    let closed = CloseReason::LocalClose {
        code: CloseCode::NORMAL,
    };
    assert_eq!(station.on_closed(back, &closed, 0), Next::ReconnectNow);
    let again = station.begin_attempt().unwrap();
    assert_eq!(again.profile.csms_url, urls[0]);
}

#[test]
fn the_heartbeat_interval_in_force_outlives_a_connection() {
    let t0 = Instant::now();
    let mut station = station();
    station.set_heartbeat_interval(t0, secs(60));
    connect_and_boot(&mut station, t0);
    // Accepted with an interval of 0: the station keeps its own.
    let accepted = boot_answer(v1_6::RegistrationStatus::Accepted, 0);
    assert!(station.on_call_completed(t0, "BootNotification", &accepted));
    assert_eq!(station.heartbeat_interval(), secs(60));
    assert_eq!(station.poll_timeout(), Some(t0 + secs(60)));
    // A CSMS's interval replaces it, and stays for the next connection.
    station.set_heartbeat_interval(t0, secs(90));
    station.on_closed(t0, &CloseReason::Eof, 0);
    assert_eq!(station.heartbeat_interval(), secs(90));
    assert!(station.poll_transmit(t0).is_none(), "nothing offline");
}

/// One step of a driver that follows the lifecycle's protocol, as the property test makes
/// them: what the network, the central system, the clock and the application do.
#[derive(Debug, Clone)]
enum Op {
    BeginAttempt,
    ConnectFailed,
    Connected(bool),
    /// Everything due, each taken by the connection or refused.
    Transmit(bool),
    /// A BootNotification's outcome: an answer (status by index, interval in seconds) or a
    /// failure.
    Boot(Option<(u8, u32)>),
    Advance(u32),
    /// A held CALL: a Heartbeat (or a StatusNotification), due within the seconds given.
    Hold(bool, u16),
    Trigger(bool),
    Heartbeat(u16),
    Reboot,
    Stop,
    Closed(u8),
}

fn op() -> impl proptest::strategy::Strategy<Value = Op> {
    use proptest::prelude::*;
    // Short steps of time against deadlines of up to ten minutes, so that held CALLs expire
    // out of order; the clock sometimes jumps far.
    prop_oneof![
        3 => Just(Op::BeginAttempt),
        1 => Just(Op::ConnectFailed),
        3 => any::<bool>().prop_map(Op::Connected),
        8 => any::<bool>().prop_map(Op::Transmit),
        4 => proptest::option::of((0u8..3, prop_oneof![0u32..700, any::<u32>()])).prop_map(Op::Boot),
        6 => prop_oneof![0u32..120, 0u32..100_000].prop_map(Op::Advance),
        6 => (any::<bool>(), 0u16..600).prop_map(|(h, d)| Op::Hold(h, d)),
        2 => any::<bool>().prop_map(Op::Trigger),
        1 => any::<u16>().prop_map(Op::Heartbeat),
        1 => Just(Op::Reboot),
        1 => Just(Op::Stop),
        2 => (0u8..4).prop_map(Op::Closed),
    ]
}

/// Where the driver stands (which calls the protocol allows).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Between,
    Attempting,
    Open,
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// Any sequence a driver may make: no panic; every held CALL ends exactly once (sent,
    /// expired, refused or drained at the close); one close per attempt, and nothing after
    /// it; the registration's own CALLs only on an open connection, schema-valid; a stop
    /// ends the station.
    #[test]
    fn every_held_call_ends_once_and_a_close_is_the_last_transmit(
        ops in proptest::collection::vec(op(), 0..120),
    ) {
        let t0 = Instant::now();
        let mut now = t0;
        let mut station = station();
        let mut phase = Phase::Between;
        let mut next_caller = 0u32;
        let mut ended: Vec<u32> = Vec::new();
        let mut closes_this_attempt = 0;
        let mut stopped = false;
        let versions = [OcppVersion::V1_6, OcppVersion::V2_0_1];
        let mut version = versions[0];
        let close = |phase: &mut Phase, station: &mut Lifecycle<u32>, ended: &mut Vec<u32>,
                     reason: &CloseReason, now| {
            let next = station.on_closed(now, reason, 7);
            ended.extend(station.drain_held().map(|call| call.caller));
            *phase = Phase::Between;
            match next {
                Next::Stop(_) => assert_eq!(station.status(), Status::Stopped),
                Next::Reconnect(_) => {
                    assert!(matches!(station.status(), Status::Waiting { .. }))
                }
                Next::ReconnectNow => {}
            }
            matches!(next, Next::Stop(_))
        };
        for op in ops {
            if stopped {
                break;
            }
            match (op, phase) {
                (Op::BeginAttempt, Phase::Between) => {
                    station.begin_attempt();
                    closes_this_attempt = 0;
                    phase = Phase::Attempting;
                }
                (Op::ConnectFailed, Phase::Attempting) => {
                    let next = station.on_connect_failed(now, Cause::Other, 3);
                    proptest::prop_assert!(matches!(next, Next::Reconnect(_)));
                    phase = Phase::Between;
                }
                (Op::Connected(v2), Phase::Attempting) => {
                    version = versions[usize::from(v2)];
                    station.on_connected(now, version);
                    phase = Phase::Open;
                }
                (Op::Transmit(taken), Phase::Attempting | Phase::Open) => {
                    let mut steps = 0;
                    while let Some(transmit) = station.poll_transmit(now) {
                        steps += 1;
                        proptest::prop_assert!(steps <= next_caller as usize + 3, "endless");
                        proptest::prop_assert_eq!(closes_this_attempt, 0, "after the close");
                        match transmit {
                            Transmit::Own(request) => {
                                proptest::prop_assert_eq!(phase, Phase::Open);
                                proptest::prop_assert_eq!(request.version(), version);
                                proptest::prop_assert!(request.validate().is_ok());
                                if taken {
                                    station.on_call_sent(now, request.action());
                                } else {
                                    station.on_own_call_refused(now, request.action());
                                }
                            }
                            Transmit::Held(call) => {
                                proptest::prop_assert!(call.deadline > now);
                                if taken {
                                    station.on_call_sent(now, call.request.action());
                                }
                                ended.push(call.caller);
                            }
                            Transmit::Expired(call) => {
                                proptest::prop_assert!(call.deadline <= now);
                                ended.push(call.caller);
                            }
                            Transmit::Close(_) => closes_this_attempt += 1,
                        }
                    }
                }
                (Op::Boot(outcome), Phase::Open) => {
                    let outcome = match outcome {
                        Some((status, interval)) => {
                            let status = match status {
                                0 => v1_6::RegistrationStatus::Accepted,
                                1 => v1_6::RegistrationStatus::Pending,
                                _ => v1_6::RegistrationStatus::Rejected,
                            };
                            boot_answer(status, i32::try_from(interval).unwrap_or(i32::MAX))
                        }
                        None => Err(CallFailure::Timeout),
                    };
                    let accepted = station.on_call_completed(now, "BootNotification", &outcome);
                    if accepted {
                        proptest::prop_assert_eq!(station.status(), Status::Accepted { version });
                    }
                }
                (Op::Advance(secs), Phase::Attempting | Phase::Open) => {
                    now += secs_f(secs);
                    station.handle_timeout(now);
                }
                (Op::Advance(secs), Phase::Between) => now += secs_f(secs),
                (Op::Hold(heartbeat, deadline), _) => {
                    next_caller += 1;
                    let request = if heartbeat {
                        v1_6::HeartbeatRequest {}.into()
                    } else {
                        status_notification()
                    };
                    let deadline = now + secs_f(u32::from(deadline));
                    station.hold(request, next_caller, deadline);
                }
                (Op::Trigger(boot), Phase::Open) => {
                    let requested = if boot {
                        v1_6::MessageTrigger::BootNotification
                    } else {
                        v1_6::MessageTrigger::StatusNotification
                    };
                    let trigger = v1_6::TriggerMessageRequest::new(requested);
                    if station.on_incoming(&trigger.into(), |_| Ok(())).is_none() {
                        let accepted = v1_6::TriggerMessageStatus::Accepted;
                        let answer = Answer::result(v1_6::TriggerMessageResponse::new(accepted));
                        station.on_answered(now, &answer);
                    }
                }
                (Op::Heartbeat(secs), _) => {
                    station.set_heartbeat_interval(now, secs_f(u32::from(secs)));
                }
                (Op::Reboot, _) => station.reboot(BootReason::RemoteReset),
                (Op::Stop, Phase::Between) => {
                    station.on_stopped();
                    stopped = true;
                }
                (Op::Stop, _) => station.stop(),
                (Op::Closed(reason), Phase::Attempting | Phase::Open) => {
                    let reason = match reason {
                        0 => CloseReason::Eof,
                        1 => CloseReason::LocalClose { code: CloseCode::NORMAL },
                        2 => CloseReason::UpgradeRefused { status: Some(401), description: String::new() },
                        _ => CloseReason::NoCommonVersion,
                    };
                    stopped = close(&mut phase, &mut station, &mut ended, &reason, now);
                }
                _ => {}
            }
            if let Some(at) = station.poll_timeout() {
                proptest::prop_assert!(phase != Phase::Between, "no deadline between attempts: {at:?}");
            }
        }
        if phase != Phase::Between {
            close(&mut phase, &mut station, &mut ended, &CloseReason::Eof, now);
        }
        ended.extend(station.drain_held().map(|call| call.caller));
        ended.sort_unstable();
        let expected: Vec<u32> = (1..=next_caller).collect();
        proptest::prop_assert_eq!(ended, expected, "each held CALL ends once");
    }
}

fn secs_f(secs: u32) -> Duration {
    Duration::from_secs(u64::from(secs))
}

#[test]
fn set_network_profile_is_answered_by_the_station_once_asked_and_kept_first() {
    use crate::DecodeOptions;
    let t0 = Instant::now();
    let mut station = station();
    station.begin_attempt();
    station.on_connected(t0, OcppVersion::V2_0_1);
    let Some(Transmit::Own(boot)) = station.poll_transmit(t0) else {
        panic!("a boot is due at once");
    };
    station.on_call_sent(t0, boot.action());
    let accepted = r#"{"currentTime":"2026-12-07T00:00:00Z","interval":300,"status":"Accepted"}"#;
    let accepted = Response::decode(
        OcppVersion::V2_0_1,
        "BootNotification",
        accepted,
        &DecodeOptions::strict(),
    );
    assert!(station.on_call_completed(t0, "BootNotification", &Ok(accepted.unwrap())));
    let set = |url: &str| {
        let payload = format!(
            r#"{{"configurationSlot":1,"connectionData":{{"ocppVersion":"OCPP20",
            "ocppTransport":"JSON","ocppCsmsUrl":"{url}","messageTimeout":30,
            "securityProfile":0,"ocppInterface":"Wired0"}}}}"#
        );
        let options = DecodeOptions::strict();
        Request::decode(OcppVersion::V2_0_1, "SetNetworkProfile", &payload, &options).unwrap()
    };
    let status = |answer: Option<Answer>| match answer {
        Some(Answer::Result(response)) => serde_json::to_value(&response).unwrap()["status"]
            .as_str()
            .unwrap()
            .to_owned(),
        other => panic!("the station answers: {other:?}"),
    };
    let backup = set("ws://b.example/ocpp");
    // Not asked for: the application's to answer, and nothing is kept.
    let untouched = |_: &NetworkProfiles| -> Result<(), String> { panic!("not kept") };
    assert!(station.on_incoming(&backup, untouched).is_none());
    station.answer_set_network_profile(false);
    // The application could not keep them: Failed, and nothing changed (B09.FR.03).
    let failed = station.on_incoming(&backup, |_| Err("disk full".into()));
    assert_eq!(status(failed), "Failed");
    assert!(station.profiles().profile(1).is_none());
    // Kept: Accepted, the profiles the hook saw are the station's.
    let mut kept = None;
    let answer = station.on_incoming(&backup, |profiles| {
        kept = Some(profiles.clone());
        Ok(())
    });
    assert_eq!(status(answer), "Accepted");
    assert_eq!(kept.as_ref(), Some(station.profiles()));
    assert!(station.profiles().profile(1).is_some());
    // A wss:// central system without TLS: Rejected, never kept.
    let secure = set("wss://c.example/ocpp");
    assert_eq!(status(station.on_incoming(&secure, untouched)), "Rejected");
}
