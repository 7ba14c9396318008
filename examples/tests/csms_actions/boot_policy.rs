//! The boot policy and the sequence: 2.0.1 seqNo gaps noticed, a pending station's
//! SecurityError, a rejected 1.6 charge point that may only boot.

use super::*;

#[test]
fn v2_0_1_seq_no_gaps_are_noticed() {
    let csms = Csms::new(CsmsConfig::default());
    let cp = identity("CS-SEQ");
    csms.on_connected(&cp, OcppVersion::V2_0_1);
    let event = |kind: &str, seq: i32| {
        let payload = format!(
            r#"{{"eventType":"{kind}","timestamp":"2026-01-01T00:00:00Z","triggerReason":"MeterValuePeriodic","seqNo":{seq},"transactionInfo":{{"transactionId":"TX1"}}}}"#
        );
        call(&csms, &cp, "TransactionEvent", &payload);
    };
    event("Started", 0);
    event("Updated", 1);
    // Sent again (its answer lost): the same event, not a gap.
    event("Updated", 1);
    event("Updated", 4);
    event("Ended", 5);
    let state = csms.charge_point(&cp).unwrap();
    assert_eq!(state.extras.seq_no_gap_count, 1);
    assert_eq!(state.extras.seq_no_gaps[0].expected, 2);
    assert_eq!(state.extras.seq_no_gaps[0].received, 4);
    let (_, body) = admin_get(&csms, "GET", "/chargepoints/CS-SEQ", "");
    assert_eq!(body["seq_no_gaps"]["count"], 1);
    assert_eq!(body["seq_no_gaps"]["recent"][0]["transaction"], "TX1");
    assert_eq!(body["transactions"][0]["last_seq_no"], 5);
    assert_eq!(csms.metrics().seq_no_gaps.get(), 1);
    assert!(csms
        .metrics()
        .render()
        .contains("ocpp_transaction_seq_no_gaps_total 1\n"));
}

#[test]
fn v2_0_1_pending_station_gets_security_error_until_accepted() {
    let csms = Csms::new(CsmsConfig::default().boot_policy(BootPolicy::Pending));
    let cp = identity("CS-NEW");
    csms.on_connected(&cp, OcppVersion::V2_0_1);
    let boot = r#"{"chargingStation":{"vendorName":"ACME","model":"AC-22"},"reason":"PowerUp"}"#;
    let answer = call(&csms, &cp, "BootNotification", boot);
    assert_eq!(answer["status"], "Pending");
    assert_eq!(answer["interval"], 60);
    let heartbeat = call_reply(&csms, &cp, "Heartbeat", "{}");
    assert_eq!(error_code(heartbeat), ErrorCode::SecurityError);
    // Provisioning: the station answers our GetBaseReport with NotifyReport.
    call(
        &csms,
        &cp,
        "NotifyReport",
        r#"{"requestId":1,"generatedAt":"2026-01-01T00:00:00Z","seqNo":0}"#,
    );
    // Triggered messages are allowed once we sent a TriggerMessage.
    csms.on_call_sent(&cp, "TriggerMessage");
    call(&csms, &cp, "Heartbeat", "{}");
    let event = r#"{"eventType":"Started","timestamp":"2026-01-01T00:00:00Z","triggerReason":"Authorized","seqNo":0,"transactionInfo":{"transactionId":"T"}}"#;
    assert_eq!(
        error_code(call_reply(&csms, &cp, "TransactionEvent", event)),
        ErrorCode::SecurityError
    );

    let (status, _) = admin_get(
        &csms,
        "PUT",
        "/chargepoints/CS-NEW/boot",
        r#"{"status":"Accepted"}"#,
    );
    assert_eq!(status, 200);
    let (_, body) = admin_get(&csms, "GET", "/chargepoints/CS-NEW/boot", "");
    assert_eq!(
        body,
        json!({"policy":"Accepted","default":"Pending","answered":"Pending"})
    );
    assert_eq!(
        call(&csms, &cp, "BootNotification", boot)["status"],
        "Accepted"
    );
    assert_eq!(call(&csms, &cp, "BootNotification", boot)["interval"], 300);
    call(&csms, &cp, "TransactionEvent", event);
    assert_eq!(
        admin_get(
            &csms,
            "PUT",
            "/chargepoints/CS-NEW/boot",
            r#"{"status":"Maybe"}"#
        )
        .0,
        400
    );
    assert_eq!(
        admin_get(&csms, "DELETE", "/chargepoints/CS-NEW/boot", "").0,
        200
    );
    assert_eq!(
        call(&csms, &cp, "BootNotification", boot)["status"],
        "Pending"
    );
}

#[test]
fn v1_6_rejected_charge_point_may_only_boot() {
    let csms = Csms::new(CsmsConfig::default());
    let cp = identity("CP-BAD");
    csms.set_boot_policy(&cp, Some(BootPolicy::Rejected))
        .unwrap();
    csms.on_connected(&cp, OcppVersion::V1_6);
    // Never booted (a 1.6 charge point reconnecting to a restarted CSMS): served.
    call(&csms, &cp, "Heartbeat", "{}");
    let boot = r#"{"chargePointVendor":"ACME","chargePointModel":"X"}"#;
    assert_eq!(
        call(&csms, &cp, "BootNotification", boot)["status"],
        "Rejected"
    );
    for (action, payload) in [
        ("Heartbeat", "{}"),
        ("FirmwareStatusNotification", r#"{"status":"Installed"}"#),
        ("Authorize", r#"{"idTag":"T"}"#),
    ] {
        assert_eq!(
            error_code(call_reply(&csms, &cp, action, payload)),
            ErrorCode::SecurityError,
            "{action}"
        );
    }
    assert_eq!(csms.charge_point(&cp).unwrap().status(), "Rejected");
    assert_eq!(
        call(&csms, &cp, "BootNotification", boot)["status"],
        "Rejected"
    );
}
