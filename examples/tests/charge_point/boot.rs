//! Booting: status and heartbeats in 1.6, the versions offered in order and a 2.1 boot.

use super::*;

#[test]
fn boots_reports_status_and_heartbeats_v16() {
    let csms = Csms::start(default_policy());
    let _cp = ChargePoint::spawn(&["--url", &csms.url("CP001"), "--version", "1.6"]);
    let boot = csms.wait_call("BootNotification", 1);
    assert_eq!(boot["chargePointVendor"], "OcppWs");
    csms.wait_call("Heartbeat", 1);
    let seen = csms.wait_for("two StatusNotifications", |s| {
        calls(s, "StatusNotification").len() >= 2
    });
    let Seen::Upgrade {
        identity,
        subprotocols,
        credentials,
        ..
    } = &seen[0]
    else {
        panic!("{seen:?}")
    };
    assert_eq!(identity, "CP001");
    assert_eq!(subprotocols, &vec!["ocpp1.6".to_string()]);
    assert!(credentials.is_none());
    let statuses = calls(&seen, "StatusNotification");
    let connectors: Vec<i64> = statuses
        .iter()
        .map(|s| s["connectorId"].as_i64().unwrap())
        .collect();
    assert_eq!(connectors, vec![0, 1]);
    assert!(statuses.iter().all(|s| s["status"] == "Available"));
    // Boot, then status, then heartbeat at the interval the CSMS gave.
    assert!(position(&seen, "BootNotification") < position(&seen, "StatusNotification"));
    assert!(position(&seen, "StatusNotification") < position(&seen, "Heartbeat"));
}

#[test]
fn offers_versions_in_order_and_boots_v21() {
    let csms = Csms::start(default_policy());
    let _cp = ChargePoint::spawn(&[
        "--url",
        &csms.url("CP-21"),
        "--version",
        "2.1",
        "--version",
        "1.6",
    ]);
    let boot = csms.wait_call("BootNotification", 1);
    assert_eq!(boot["reason"], "PowerUp");
    assert_eq!(boot["chargingStation"]["vendorName"], "OcppWs");
    let status = csms.wait_call("StatusNotification", 1);
    assert_eq!(status["connectorStatus"], "Available");
    csms.wait_call("Heartbeat", 1);
    let seen = csms.seen();
    let Seen::Upgrade { subprotocols, .. } = &seen[0] else {
        panic!("{seen:?}")
    };
    assert_eq!(
        subprotocols,
        &vec!["ocpp2.1".to_string(), "ocpp1.6".to_string()]
    );
    assert!(matches!(
        seen[1],
        Seen::Connected {
            version: OcppVersion::V2_1
        }
    ));
}
