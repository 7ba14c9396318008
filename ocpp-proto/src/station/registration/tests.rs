//! The registration's tests: pending then accepted, the heartbeat per version, the fallback
//! intervals.

use super::*;
use ocpp_messages::DateTime;

const V16: OcppVersion = OcppVersion::V1_6;
const V201: OcppVersion = OcppVersion::V2_0_1;
const V21: OcppVersion = OcppVersion::V2_1;

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn answer(status: RegistrationStatus, interval_s: u32) -> BootAnswer {
    BootAnswer {
        status,
        interval_s,
        current_time: DateTime::from_unix_timestamp(1_780_000_000).unwrap(),
    }
}

/// A registration that sent its first BootNotification at `t0` and got `status`.
fn answered(t0: Instant, version: OcppVersion, status: RegistrationStatus) -> Registration {
    booted(t0, version, status, 10)
}

/// A registration that sent its first BootNotification at `t0` and got `status` with a
/// heartbeat interval of `interval` seconds.
fn booted(
    t0: Instant,
    version: OcppVersion,
    status: RegistrationStatus,
    interval: u32,
) -> Registration {
    let mut registration = Registration::new(t0, version);
    assert_eq!(registration.handle_timeout(t0), Some(Due::Boot));
    registration.on_boot_answer(t0, &answer(status, interval));
    registration
}

#[test]
fn pending_then_accepted_then_heartbeat() {
    let t0 = Instant::now();
    let mut registration = Registration::new(t0, V201);
    assert_eq!(registration.version(), V201);
    assert_eq!(registration.status(), None);
    assert_eq!(registration.poll_timeout(), Some(t0));
    assert_eq!(registration.handle_timeout(t0), Some(Due::Boot));
    // In flight: no deadline, nothing due.
    assert_eq!(registration.poll_timeout(), None);
    assert_eq!(registration.handle_timeout(t0 + secs(100)), None);

    let t1 = t0 + secs(1);
    registration.on_boot_answer(t1, &answer(RegistrationStatus::Pending, 5));
    assert_eq!(registration.status(), Some(RegistrationStatus::Pending));
    assert!(!registration.is_accepted());
    assert_eq!(registration.poll_timeout(), Some(t1 + secs(5)));
    assert_eq!(registration.handle_timeout(t1 + secs(4)), None);
    assert_eq!(registration.handle_timeout(t1 + secs(5)), Some(Due::Boot));
    assert_eq!(registration.poll_timeout(), None);

    let t2 = t1 + secs(6);
    registration.on_boot_answer(t2, &answer(RegistrationStatus::Accepted, 30));
    assert!(registration.is_accepted());
    assert_eq!(registration.heartbeat_interval(), secs(30));
    assert_eq!(registration.poll_timeout(), Some(t2 + secs(30)));
    assert_eq!(registration.handle_timeout(t2 + secs(29)), None);
    assert_eq!(
        registration.handle_timeout(t2 + secs(30)),
        Some(Due::Heartbeat)
    );
    // Not due again until an interval later.
    assert_eq!(registration.poll_timeout(), Some(t2 + secs(60)));
    assert_eq!(registration.handle_timeout(t2 + secs(31)), None);
    // Sent a little later: the next is an interval from then.
    registration.on_call_sent(t2 + secs(32), "Heartbeat");
    assert_eq!(registration.poll_timeout(), Some(t2 + secs(62)));
}

#[test]
fn v2_skips_heartbeat_on_other_traffic() {
    for version in [V201, V21] {
        let t0 = Instant::now();
        let mut registration = booted(t0, version, RegistrationStatus::Accepted, 30);
        registration.on_call_sent(t0 + secs(20), "StatusNotification");
        assert_eq!(registration.poll_timeout(), Some(t0 + secs(50)));
        assert_eq!(registration.handle_timeout(t0 + secs(30)), None);
    }
}

#[test]
fn v16_heartbeat_ignores_other_traffic() {
    let t0 = Instant::now();
    let mut registration = booted(t0, V16, RegistrationStatus::Accepted, 30);
    registration.on_call_sent(t0 + secs(20), "StatusNotification");
    assert_eq!(registration.poll_timeout(), Some(t0 + secs(30)));
    assert_eq!(
        registration.handle_timeout(t0 + secs(30)),
        Some(Due::Heartbeat)
    );
    registration.on_call_sent(t0 + secs(30), "Heartbeat");
    assert_eq!(registration.poll_timeout(), Some(t0 + secs(60)));
}

#[test]
fn rejected_with_zero_interval_uses_the_fallback() {
    let t0 = Instant::now();
    let mut registration = booted(t0, V16, RegistrationStatus::Rejected, 0);
    assert_eq!(registration.status(), Some(RegistrationStatus::Rejected));
    assert_eq!(registration.poll_timeout(), Some(t0 + BOOT_RETRY_FALLBACK));
    assert_eq!(
        registration.handle_timeout(t0 + BOOT_RETRY_FALLBACK),
        Some(Due::Boot)
    );
}

#[test]
fn pending_with_zero_interval_uses_the_fallback() {
    let t0 = Instant::now();
    let registration = booted(t0, V201, RegistrationStatus::Pending, 0);
    assert_eq!(registration.poll_timeout(), Some(t0 + BOOT_RETRY_FALLBACK));
}

#[test]
fn failed_boot_is_retried_after_the_fallback() {
    let t0 = Instant::now();
    let mut registration = Registration::new(t0, V201);
    assert_eq!(registration.handle_timeout(t0), Some(Due::Boot));
    registration.on_boot_failed(t0 + secs(30));
    assert_eq!(registration.status(), None);
    assert_eq!(
        registration.poll_timeout(),
        Some(t0 + secs(30) + BOOT_RETRY_FALLBACK)
    );
    assert_eq!(
        registration.handle_timeout(t0 + secs(30) + BOOT_RETRY_FALLBACK),
        Some(Due::Boot)
    );
}

/// Issue 34: a central system that never answers BootNotification. The boot goes again
/// after the retry interval, a bounded number of times, then the registration gives up.
#[test]
fn unanswered_boots_are_bounded() {
    let t0 = Instant::now();
    let mut registration = Registration::new(t0, V16);
    let mut now = t0;
    let mut boots = 0;
    for _ in 0..10 {
        if registration.handle_timeout(now) == Some(Due::Boot) {
            boots += 1;
            now += secs(30); // the call timeout
            registration.on_boot_failed(now);
        }
        match registration.poll_timeout() {
            Some(at) => now = at,
            None => break,
        }
    }
    assert_eq!(boots, DEFAULT_BOOT_ATTEMPTS);
    assert_eq!(registration.boot_failures(), DEFAULT_BOOT_ATTEMPTS);
    assert!(registration.boot_given_up());
    assert_eq!(registration.handle_timeout(now + secs(1000)), None);
    // An answer after a failure starts the count again.
    let mut answered = Registration::new(t0, V16);
    answered.handle_timeout(t0);
    answered.on_boot_failed(t0);
    assert_eq!(answered.boot_failures(), 1);
    answered.handle_timeout(t0 + BOOT_RETRY_FALLBACK);
    answered.on_boot_answer(t0, &answer(RegistrationStatus::Pending, 10));
    assert_eq!(answered.boot_failures(), 0);
    assert!(!answered.boot_given_up());
}

#[test]
fn failed_triggered_boot_after_acceptance_keeps_the_heartbeat() {
    let t0 = Instant::now();
    let mut registration = answered(t0, V201, RegistrationStatus::Accepted);
    registration.on_call_sent(t0 + secs(1), "BootNotification");
    assert_eq!(registration.poll_timeout(), Some(t0 + secs(11)));
    registration.on_boot_failed(t0 + secs(2));
    assert!(registration.is_accepted());
    assert_eq!(registration.poll_timeout(), Some(t0 + secs(11)));
    assert_eq!(
        registration.handle_timeout(t0 + secs(11)),
        Some(Due::Heartbeat)
    );
}

#[test]
fn boot_sent_outside_handle_timeout_is_in_flight() {
    let t0 = Instant::now();
    let mut registration = answered(t0, V16, RegistrationStatus::Pending);
    registration.on_trigger_accepted(t0, "BootNotification");
    registration.on_call_sent(t0 + secs(1), "BootNotification");
    assert_eq!(registration.poll_timeout(), None);
    assert_eq!(registration.handle_timeout(t0 + secs(20)), None);
}

#[test]
fn accepted_with_zero_interval_keeps_the_current_interval() {
    let t0 = Instant::now();
    let registration = booted(t0, V16, RegistrationStatus::Accepted, 0);
    assert_eq!(
        registration.heartbeat_interval(),
        DEFAULT_HEARTBEAT_INTERVAL
    );
    assert_eq!(
        registration.poll_timeout(),
        Some(t0 + DEFAULT_HEARTBEAT_INTERVAL)
    );

    let mut configured = Registration::new(t0, V201);
    configured.set_heartbeat_interval(t0, secs(15));
    assert_eq!(configured.poll_timeout(), Some(t0)); // still booting
    configured.handle_timeout(t0);
    configured.on_boot_answer(t0, &answer(RegistrationStatus::Accepted, 0));
    assert_eq!(configured.poll_timeout(), Some(t0 + secs(15)));
}

#[test]
fn heartbeat_interval_change_and_disable() {
    let t0 = Instant::now();
    let mut registration = answered(t0, V201, RegistrationStatus::Accepted);
    assert_eq!(registration.poll_timeout(), Some(t0 + secs(10)));
    registration.set_heartbeat_interval(t0 + secs(3), secs(100));
    assert_eq!(registration.poll_timeout(), Some(t0 + secs(103)));
    registration.set_heartbeat_interval(t0 + secs(4), Duration::ZERO);
    assert_eq!(registration.poll_timeout(), None);
    assert_eq!(registration.handle_timeout(t0 + secs(1000)), None);
    registration.on_call_sent(t0 + secs(5), "StatusNotification");
    assert_eq!(registration.poll_timeout(), None);
}

#[test]
fn pending_or_rejected_after_accepted_stops_heartbeats() {
    let t0 = Instant::now();
    let mut registration = answered(t0, V201, RegistrationStatus::Accepted);
    registration.on_call_sent(t0 + secs(1), "BootNotification");
    registration.on_boot_answer(t0 + secs(2), &answer(RegistrationStatus::Rejected, 7));
    assert_eq!(registration.poll_timeout(), Some(t0 + secs(9)));
    assert_eq!(registration.handle_timeout(t0 + secs(9)), Some(Due::Boot));
}

const ACTIONS: [&str; 4] = [
    "BootNotification",
    "Heartbeat",
    "StatusNotification",
    "NotifyReport",
];

fn may_send_row(registration: &Registration) -> Vec<bool> {
    ACTIONS.iter().map(|a| registration.may_send(a)).collect()
}

#[test]
fn may_send_table() {
    let t0 = Instant::now();
    for version in OcppVersion::ALL {
        let fresh = Registration::new(t0, version);
        assert_eq!(may_send_row(&fresh), [true, false, false, false]);
        let rejected = answered(t0, version, RegistrationStatus::Rejected);
        assert_eq!(may_send_row(&rejected), [true, false, false, false]);
        let pending = answered(t0, version, RegistrationStatus::Pending);
        let report = version.is_2x();
        assert_eq!(may_send_row(&pending), [true, false, false, report]);
        let accepted = answered(t0, version, RegistrationStatus::Accepted);
        assert_eq!(may_send_row(&accepted), [true, true, true, true]);
    }
}

#[test]
fn trigger_credits_are_consumed() {
    let t0 = Instant::now();
    let mut registration = answered(t0, V201, RegistrationStatus::Pending);
    registration.on_trigger_accepted(t0, "StatusNotification");
    registration.on_trigger_accepted(t0, "StatusNotification");
    registration.on_trigger_accepted(t0, "SignChargingStationCertificate");
    registration.on_trigger_accepted(t0, "NoSuchMessage");
    assert!(registration.may_send("StatusNotification"));
    assert!(registration.may_send("SignCertificate"));
    assert!(!registration.may_send("Heartbeat"));
    registration.on_call_sent(t0 + secs(1), "StatusNotification");
    assert!(registration.may_send("StatusNotification"));
    registration.on_call_sent(t0 + secs(1), "StatusNotification");
    assert!(!registration.may_send("StatusNotification"));
    registration.on_call_sent(t0 + secs(1), "SignCertificate");
    assert!(!registration.may_send("SignCertificate"));
    // Sending does not push the boot retry while Pending.
    assert_eq!(registration.poll_timeout(), Some(t0 + secs(10)));
}

#[test]
fn trigger_credits_accept_action_names_are_bounded_and_cleared() {
    let t0 = Instant::now();
    let mut registration = answered(t0, V16, RegistrationStatus::Pending);
    registration.on_trigger_accepted(t0, "SignedFirmwareStatusNotification");
    assert!(registration.may_send("SignedFirmwareStatusNotification"));
    for _ in 0..1000 {
        registration.on_trigger_accepted(t0, "MeterValues");
    }
    assert_eq!(registration.credits.len(), MAX_TRIGGER_CREDITS);
    registration.on_call_sent(t0, "BootNotification");
    registration.on_boot_answer(t0, &answer(RegistrationStatus::Accepted, 10));
    assert!(registration.credits.is_empty());
    registration.on_call_sent(t0, "BootNotification");
    registration.on_boot_answer(t0, &answer(RegistrationStatus::Pending, 10));
    assert!(!registration.may_send("MeterValues"));
}

#[test]
fn triggered_action_per_version() {
    let cases: [(OcppVersion, &str, Option<&str>); 16] = [
        (V16, "BootNotification", Some("BootNotification")),
        (
            V16,
            "DiagnosticsStatusNotification",
            Some("DiagnosticsStatusNotification"),
        ),
        (
            V16,
            "FirmwareStatusNotification",
            Some("FirmwareStatusNotification"),
        ),
        (V16, "Heartbeat", Some("Heartbeat")),
        (V16, "MeterValues", Some("MeterValues")),
        (V16, "StatusNotification", Some("StatusNotification")),
        (V16, "LogStatusNotification", Some("LogStatusNotification")),
        (V16, "SignChargePointCertificate", Some("SignCertificate")),
        (V16, "TransactionEvent", None),
        (V201, "DiagnosticsStatusNotification", None),
        (V201, "TransactionEvent", Some("TransactionEvent")),
        (V201, "SignCombinedCertificate", Some("SignCertificate")),
        (V201, "SignV2G20Certificate", None),
        (V21, "SignV2G20Certificate", Some("SignCertificate")),
        (
            V21,
            "PublishFirmwareStatusNotification",
            Some("PublishFirmwareStatusNotification"),
        ),
        (V21, "CustomTrigger", None),
    ];
    for (version, requested, action) in cases {
        assert_eq!(
            triggered_action(version, requested),
            action,
            "{version} {requested}"
        );
    }
}

#[test]
fn check_incoming_table() {
    let t0 = Instant::now();
    let remote = |version: OcppVersion| {
        if version.is_2x() {
            ["RequestStartTransaction", "RequestStopTransaction"]
        } else {
            ["RemoteStartTransaction", "RemoteStopTransaction"]
        }
    };
    for version in OcppVersion::ALL {
        let fresh = Registration::new(t0, version);
        let pending = answered(t0, version, RegistrationStatus::Pending);
        let rejected = answered(t0, version, RegistrationStatus::Rejected);
        let accepted = answered(t0, version, RegistrationStatus::Accepted);
        for registration in [&fresh, &pending] {
            assert_eq!(registration.check_incoming("GetConfiguration"), Ok(()));
            assert_eq!(registration.check_incoming("TriggerMessage"), Ok(()));
            for action in remote(version) {
                let error = registration.check_incoming(action).unwrap_err();
                assert_eq!(error.code, ErrorCode::SecurityError);
            }
        }
        for action in ["TriggerMessage", "Reset", remote(version)[0]] {
            let error = rejected.check_incoming(action).unwrap_err();
            assert_eq!(error.code, ErrorCode::SecurityError);
            assert_eq!(accepted.check_incoming(action), Ok(()));
        }
        // The other version's names are not refused by mistake.
        let other = if version.is_2x() {
            "RemoteStartTransaction"
        } else {
            "RequestStartTransaction"
        };
        assert_eq!(pending.check_incoming(other), Ok(()));
    }
}

fn decode_call(version: OcppVersion, action: &str, payload: &str) -> Request {
    let options = ocpp_messages::DecodeOptions::strict();
    Request::decode(version, action, payload, &options).unwrap()
}

fn result(version: OcppVersion, action: &str, payload: &str) -> Answer {
    let options = ocpp_messages::DecodeOptions::strict();
    Answer::Result(Response::decode(version, action, payload, &options).unwrap())
}

/// A TriggerMessage names the action it makes the station send, per version; any other CALL
/// names none.
#[test]
fn requested_by_trigger_per_version() {
    let boot = r#"{"requestedMessage":"BootNotification"}"#;
    for version in [V16, V201, V21] {
        let trigger = decode_call(version, "TriggerMessage", boot);
        assert_eq!(requested_by_trigger(&trigger), Some("BootNotification"));
    }
    let certificate = r#"{"requestedMessage":"SignV2GCertificate"}"#;
    let trigger = decode_call(V201, "TriggerMessage", certificate);
    assert_eq!(requested_by_trigger(&trigger), Some("SignCertificate"));
    let diagnostics = r#"{"requestedMessage":"DiagnosticsStatusNotification"}"#;
    let trigger = decode_call(V16, "TriggerMessage", diagnostics);
    assert_eq!(
        requested_by_trigger(&trigger),
        Some("DiagnosticsStatusNotification")
    );
    let reset = decode_call(V16, "Reset", r#"{"type":"Soft"}"#);
    assert_eq!(requested_by_trigger(&reset), None);
}

/// Only a CALLRESULT with `"status": "Accepted"` accepts a trigger (and gives a credit).
#[test]
fn trigger_accepted_only_by_an_accepted_result() {
    for version in [V16, V201] {
        let accepted = result(version, "TriggerMessage", r#"{"status":"Accepted"}"#);
        assert!(trigger_accepted(&accepted));
        let rejected = result(version, "TriggerMessage", r#"{"status":"Rejected"}"#);
        assert!(!trigger_accepted(&rejected));
    }
    let not_implemented = result(V16, "TriggerMessage", r#"{"status":"NotImplemented"}"#);
    assert!(!trigger_accepted(&not_implemented));
    assert!(!trigger_accepted(&Answer::not_supported("TriggerMessage")));
}

#[test]
fn a_triggered_boot_is_due_at_once_when_accepted_and_answered_like_any_boot() {
    let t0 = Instant::now();
    let mut registration = booted(t0, V201, RegistrationStatus::Accepted, 300);
    registration.on_trigger_accepted(t0 + secs(5), "BootNotification");
    assert_eq!(registration.poll_timeout(), Some(t0 + secs(5)));
    assert_eq!(
        registration.handle_timeout(t0 + secs(5)),
        Some(Due::TriggeredBoot)
    );
    // In flight: not due again, and the heartbeat goes on meanwhile.
    assert_eq!(registration.poll_timeout(), Some(t0 + secs(300)));
    assert_eq!(registration.handle_timeout(t0 + secs(6)), None);
    // Its answer is the registration's: Pending now.
    registration.on_boot_answer(t0 + secs(7), &answer(RegistrationStatus::Pending, 20));
    assert_eq!(registration.status(), Some(RegistrationStatus::Pending));
    assert_eq!(registration.poll_timeout(), Some(t0 + secs(27)));
}

#[test]
fn a_triggered_boot_waits_for_the_one_in_flight_and_goes_once() {
    let t0 = Instant::now();
    let mut registration = Registration::new(t0, V16);
    assert_eq!(registration.handle_timeout(t0), Some(Due::Boot));
    registration.on_trigger_accepted(t0 + secs(1), "BootNotification");
    registration.on_trigger_accepted(t0 + secs(2), "BootNotification");
    assert_eq!(registration.poll_timeout(), None);
    assert_eq!(registration.handle_timeout(t0 + secs(2)), None);
    registration.on_boot_answer(t0 + secs(3), &answer(RegistrationStatus::Pending, 60));
    // Due since the first trigger, before the Pending retry.
    assert_eq!(registration.poll_timeout(), Some(t0 + secs(1)));
    assert_eq!(
        registration.handle_timeout(t0 + secs(3)),
        Some(Due::TriggeredBoot)
    );
    registration.on_boot_answer(t0 + secs(4), &answer(RegistrationStatus::Accepted, 60));
    assert_eq!(registration.handle_timeout(t0 + secs(5)), None);
    assert_eq!(registration.poll_timeout(), Some(t0 + secs(64)));
    // A trigger gives no credit: a Pending station may boot anyway.
    assert!(registration.credits.is_empty());
}

#[test]
fn a_boot_sent_by_the_application_answers_the_trigger() {
    let t0 = Instant::now();
    let mut registration = booted(t0, V201, RegistrationStatus::Accepted, 300);
    registration.on_trigger_accepted(t0, "BootNotification");
    registration.on_call_sent(t0, "BootNotification");
    registration.on_boot_answer(t0 + secs(1), &answer(RegistrationStatus::Accepted, 300));
    assert_eq!(registration.handle_timeout(t0 + secs(1)), None);
}

#[test]
fn own_answer_gives_the_refusal_of_check_incoming() {
    let t0 = Instant::now();
    let pending = answered(t0, V16, RegistrationStatus::Pending);
    let payload = r#"{"idTag":"TAG"}"#;
    let options = ocpp_messages::DecodeOptions::strict();
    let start = Request::decode(V16, "RemoteStartTransaction", payload, &options).unwrap();
    let Some(Answer::Error(refusal)) = pending.own_answer(&start) else {
        panic!("not refused");
    };
    assert_eq!(refusal.code, ErrorCode::SecurityError);
}
