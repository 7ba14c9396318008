//! A charging session in 1.6, 2.0.1 and 2.1.

use super::*;

#[test]
fn plays_a_session_v16() {
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
        "1.5",
        "--meter-interval-s",
        "0.4",
        "--id-tag",
        "TAG-16",
    ]);
    let stop = csms.wait_call("StopTransaction", 1);
    let connector_1 = |s: &[Seen]| -> Vec<String> {
        calls(s, "StatusNotification")
            .iter()
            .filter(|s| s["connectorId"] == 1)
            .map(|s| s["status"].as_str().unwrap().to_owned())
            .collect()
    };
    let seen = csms.wait_for("the statuses after the stop", |s| connector_1(s).len() >= 5);
    assert_eq!(
        connector_1(&seen),
        vec![
            "Available",
            "Preparing",
            "Charging",
            "Finishing",
            "Available"
        ]
    );
    let authorize = &calls(&seen, "Authorize")[0];
    assert_eq!(authorize["idTag"], "TAG-16");
    let start = &calls(&seen, "StartTransaction")[0];
    assert_eq!(start["idTag"], "TAG-16");
    assert_eq!(start["connectorId"], 1);
    let meters = calls(&seen, "MeterValues");
    assert!(!meters.is_empty(), "{seen:#?}");
    assert!(meters.iter().all(|m| m["transactionId"] == 42));
    assert_eq!(stop["transactionId"], 42);
    assert_eq!(stop["reason"], "Local");
    assert!(stop["meterStop"].as_i64().unwrap() > start["meterStart"].as_i64().unwrap());
    assert!(position(&seen, "Authorize") < position(&seen, "StartTransaction"));
    assert!(position(&seen, "StartTransaction") < position(&seen, "MeterValues"));
    assert!(position(&seen, "MeterValues") < position(&seen, "StopTransaction"));
}

#[test]
fn plays_a_session_v201_and_v21() {
    for version in ["2.0.1", "2.1"] {
        let csms = Csms::start(Policy {
            heartbeat_s: 60,
            ..default_policy()
        });
        let _cp = ChargePoint::spawn(&[
            "--url",
            &csms.url("CP002"),
            "--version",
            version,
            "--session",
            "--session-s",
            "1.5",
            "--meter-interval-s",
            "0.4",
        ]);
        let seen = csms.wait_for("TransactionEvent(Ended)", |s| {
            calls(s, "TransactionEvent")
                .iter()
                .any(|e| e["eventType"] == "Ended")
        });
        let authorize = &calls(&seen, "Authorize")[0];
        assert_eq!(authorize["idToken"]["idToken"], "SIMTAG0001");
        let events = calls(&seen, "TransactionEvent");
        let types: Vec<&str> = events
            .iter()
            .map(|e| e["eventType"].as_str().unwrap())
            .collect();
        assert_eq!(types.first(), Some(&"Started"), "{version}: {types:?}");
        assert_eq!(types.last(), Some(&"Ended"));
        assert!(types.contains(&"Updated"), "{types:?}");
        let id = &events[0]["transactionInfo"]["transactionId"];
        assert!(events
            .iter()
            .all(|e| &e["transactionInfo"]["transactionId"] == id));
        let seq: Vec<i64> = events
            .iter()
            .map(|e| e["seqNo"].as_i64().unwrap())
            .collect();
        assert_eq!(seq, (0..events.len() as i64).collect::<Vec<_>>());
        assert_eq!(events[0]["idToken"]["idToken"], "SIMTAG0001");
        assert_eq!(
            events.last().unwrap()["transactionInfo"]["stoppedReason"],
            "Local"
        );
        assert!(position(&seen, "Authorize") < position(&seen, "TransactionEvent"));
    }
}
