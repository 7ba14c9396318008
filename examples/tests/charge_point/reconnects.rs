//! Losing the CSMS: reconnecting within the back-off, a transaction kept across a lost
//! connection and across a restart with a state directory, backing off after 401.

use super::*;

#[test]
fn reconnects_within_the_back_off_after_the_csms_drops_the_link() {
    let csms = Csms::start(Policy {
        heartbeat_s: 60,
        ..default_policy()
    });
    let _cp = ChargePoint::spawn(&[
        "--url",
        &csms.url("CP001"),
        "--version",
        "1.6",
        "--retry-wait-min-s",
        "0.5",
        "--retry-random-range-s",
        "0.3",
    ]);
    csms.wait_call("StatusNotification", 2);
    let dropped_at = Instant::now();
    csms.drop_connections();
    csms.wait_call("BootNotification", 2);
    let seen = csms.seen();
    let ups = upgrades(&seen);
    assert_eq!(ups.len(), 2, "{seen:#?}");
    let waited = ups[1].0 - dropped_at;
    // RetryBackOffWaitMinimum plus at most RetryBackOffRandomRange (and some scheduling).
    assert!(waited >= Duration::from_millis(450), "{waited:?}");
    assert!(waited <= Duration::from_millis(800 + 1500), "{waited:?}");

    // A second loss of an open connection starts the schedule again (not doubled).
    let dropped_at = Instant::now();
    csms.drop_connections();
    csms.wait_call("BootNotification", 3);
    let ups = upgrades(&csms.seen());
    let waited = ups[2].0 - dropped_at;
    assert!(waited >= Duration::from_millis(450), "{waited:?}");
    assert!(waited <= Duration::from_millis(800 + 1500), "{waited:?}");
}

#[test]
fn keeps_the_transaction_across_a_lost_connection_v16() {
    let csms = Csms::start(Policy {
        heartbeat_s: 60,
        ..default_policy()
    });
    let _cp = ChargePoint::spawn(&[
        "--url",
        &csms.url("CP001"),
        "--version",
        "1.6",
        "--session",
        "--session-s",
        "1.2",
        "--meter-interval-s",
        "0.3",
        "--retry-wait-min-s",
        "2",
        "--retry-random-range-s",
        "0",
    ]);
    csms.wait_call("StartTransaction", 1);
    // The link goes down during the session; the session ends while offline.
    csms.drop_connections();
    let stop = csms.wait_call("StopTransaction", 1);
    assert_eq!(stop["transactionId"], 42);
    let seen = csms.seen();
    let second_boot = seen
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s, Seen::Call { action, .. } if action == "BootNotification"))
        .nth(1)
        .map(|(i, _)| i)
        .expect("a second boot");
    // The queued messages went out after the second boot, in order, with the CSMS's id.
    assert!(position(&seen, "StopTransaction") > second_boot);
    let late_meters: Vec<&Value> = seen[second_boot..]
        .iter()
        .filter_map(|s| match s {
            Seen::Call { action, payload } if action == "MeterValues" => Some(payload),
            _ => None,
        })
        .collect();
    assert!(!late_meters.is_empty(), "{seen:#?}");
    assert!(late_meters.iter().all(|m| m["transactionId"] == 42));
    assert_eq!(calls(&seen, "StartTransaction").len(), 1);
}

#[test]
fn a_transaction_survives_a_restart_with_a_state_dir_v201() {
    let csms = Csms::start(Policy {
        heartbeat_s: 60,
        ..default_policy()
    });
    let dir = std::env::temp_dir().join(format!("charge-point-state-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let args = [
        "--url",
        &csms.url("CP-RESTART"),
        "--version",
        "2.0.1",
        "--session",
        "--session-s",
        "600",
        "--meter-interval-s",
        "0.2",
        "--state-dir",
        dir.to_str().unwrap(),
    ];
    let events_of = |seen: &[Seen]| calls(seen, "TransactionEvent");
    let cp = ChargePoint::spawn(&args);
    let seen = csms.wait_for("a Started and two Updated events", |s| {
        events_of(s)
            .iter()
            .filter(|e| e["eventType"] == "Updated")
            .count()
            >= 2
    });
    let id = events_of(&seen)[0]["transactionInfo"]["transactionId"].clone();
    // Killed (SIGKILL) during the transaction, then started again on the same state.
    drop(cp);
    let _cp = ChargePoint::spawn(&args);
    let seen = csms.wait_for("the Ended event", |s| {
        events_of(s).iter().any(|e| e["eventType"] == "Ended")
    });
    let events: Vec<Value> = events_of(&seen)
        .into_iter()
        .filter(|e| e["transactionInfo"]["transactionId"] == id)
        .collect();
    let ended = events.last().unwrap();
    assert_eq!(ended["eventType"], "Ended");
    assert_eq!(ended["transactionInfo"]["stoppedReason"], "PowerLoss");
    // seqNo goes on across the restart (a resend of the same message may repeat one).
    let mut seq: Vec<i64> = events
        .iter()
        .map(|e| e["seqNo"].as_i64().unwrap())
        .collect();
    seq.dedup();
    assert_eq!(
        seq,
        (0..seq.len() as i64).collect::<Vec<_>>(),
        "{events:#?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn backs_off_and_retries_after_401() {
    let password = "0123456789abcdef";
    let csms = Csms::start(Policy {
        reject_401: 2,
        password: Some(password.as_bytes().to_vec()),
        heartbeat_s: 60,
    });
    let _cp = ChargePoint::spawn(&[
        "--url",
        &csms.url("CP401"),
        "--version",
        "1.6",
        "--password",
        password,
        "--retry-wait-min-s",
        "0.3",
        "--retry-random-range-s",
        "0",
        "--retry-repeat-times",
        "3",
    ]);
    csms.wait_call("BootNotification", 1);
    let seen = csms.seen();
    let ups = upgrades(&seen);
    assert_eq!(
        ups.iter().map(|u| u.1).collect::<Vec<_>>(),
        vec![false, false, true]
    );
    // 0.3 s, then doubled: 0.6 s.
    let first = ups[1].0 - ups[0].0;
    let second = ups[2].0 - ups[1].0;
    assert!(
        first >= Duration::from_millis(280) && first < Duration::from_millis(1800),
        "{first:?}"
    );
    assert!(
        second >= Duration::from_millis(580) && second < Duration::from_millis(2100),
        "{second:?}"
    );
    for s in &seen {
        if let Seen::Upgrade { credentials, .. } = s {
            let (user, pass) = credentials
                .as_ref()
                .expect("Basic credentials sent up front");
            assert_eq!(user, "CP401");
            assert_eq!(pass, password.as_bytes());
        }
    }
}
