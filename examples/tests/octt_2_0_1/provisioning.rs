//! Block B, provisioning: cold boot (accepted, pending), SecurityError while pending or rejected, a
//! pending station triggered to boot, Get/SetVariables, GetBaseReport, Reset, no common
//! subprotocol.

use super::*;

/// TC_B_01_CSMS, Cold Boot Charging Station - Accepted: BootNotification (reason PowerUp)
/// Accepted with the clock and the heartbeat interval; the connectors' state (StatusNotification
/// and NotifyEvent) acknowledged and recorded; Heartbeat.
pub(crate) fn tc_b_01_cold_boot_accepted(binary: &str) {
    let server = ServerProcess::start(binary, &[]);
    let mut ws = connect(&server, "CS-B01", V201);
    let boot = ws.result("BootNotification", boot_payload("PowerUp"));
    assert_eq!(boot["status"], "Accepted");
    assert_eq!(boot["interval"], 300);
    assert_date_time(&boot["currentTime"]);
    assert_eq!(boot.as_object().unwrap().len(), 3, "{boot}");
    status(&mut ws, 1, 1, "Available");
    let event = ws.result("NotifyEvent", notify_event_payload("Available"));
    assert_eq!(event, json!({}));
    assert_date_time(&ws.result("Heartbeat", json!({}))["currentTime"]);
    let state = charge_point_state(&server, "CS-B01");
    assert_eq!(state["status"], "Accepted");
    assert_eq!(state["boot"]["reason"], "PowerUp");
    assert_eq!(state["boot"]["serial_number"], "SN-201");
    assert_eq!(state["connectors"]["1/1"]["status"], "Available");
    assert_eq!(state["notifications"]["NotifyEvent"]["count"], 1);
    ws.close();
}

/// TC_B_02_CSMS, Cold Boot Charging Station - Pending: Pending with the retry interval; while
/// Pending the CSMS provisions the station (GetBaseReport, answered with NotifyReport, which is
/// allowed); once the operator accepts it, its next boot is Accepted.
pub(crate) fn tc_b_02_cold_boot_pending(binary: &str) {
    let server = ServerProcess::start(binary, &["--boot-policy", "pending"]);
    let mut ws = connect(&server, "CS-B02", V201);
    let boot = ws.result("BootNotification", boot_payload("PowerUp"));
    assert_eq!(boot["status"], "Pending");
    assert_eq!(boot["interval"], 60);
    let body = json!({"requestId": 2, "reportBase": "ConfigurationInventory"});
    let accepted = json!({"status": "Accepted"});
    command(
        &server,
        &mut ws,
        "CS-B02",
        "GetBaseReport",
        body.clone(),
        Answer::Result(accepted.clone()),
    )
    .assert_result(&body, &accepted);
    let report = json!({"requestId": 2, "generatedAt": T0, "seqNo": 0, "tbc": false});
    assert_eq!(ws.result("NotifyReport", report), json!({}));
    assert_eq!(charge_point_state(&server, "CS-B02")["status"], "Pending");
    let (code, _) = admin(
        &server,
        "PUT",
        "/chargepoints/CS-B02/boot",
        r#"{"status":"Accepted"}"#,
    );
    assert_eq!(code, 200);
    let boot = ws.result("BootNotification", boot_payload("PowerUp"));
    assert_eq!(boot["status"], "Accepted");
    assert_eq!(boot["interval"], 300);
    status(&mut ws, 1, 1, "Available");
    ws.close();
}

/// TC_B_30_CSMS, Cold Boot Charging Station - Pending/Rejected - SecurityError, the Pending
/// half: every CALL other than BootNotification gets CALLERROR SecurityError (B02.FR.09),
/// except what answers the CSMS's own requests (NotifyReport) and, once the CSMS sent a
/// TriggerMessage, what it triggered (here Heartbeat).
pub(crate) fn tc_b_30_security_error_while_pending(binary: &str) {
    let server = ServerProcess::start(binary, &["--boot-policy", "pending"]);
    let mut ws = connect(&server, "CS-B30", V201);
    assert_eq!(
        ws.result("BootNotification", boot_payload("PowerUp"))["status"],
        "Pending"
    );
    let refused = [
        ("StatusNotification", status_payload(1, 1, "Available")),
        ("NotifyEvent", notify_event_payload("Available")),
        ("Heartbeat", json!({})),
        ("Authorize", json!({"idToken": id_token("TAG-OK")})),
        (
            "TransactionEvent",
            event("Started", "Authorized", 0, "TX-B30", json!({}), json!({})),
        ),
    ];
    for (action, payload) in refused {
        assert_eq!(ws.error(action, payload), "SecurityError", "{action}");
    }
    let report = json!({"requestId": 1, "generatedAt": T0, "seqNo": 0});
    assert_eq!(ws.result("NotifyReport", report), json!({}));
    let body = json!({"requestedMessage": "Heartbeat"});
    let accepted = json!({"status": "Accepted"});
    command(
        &server,
        &mut ws,
        "CS-B30",
        "TriggerMessage",
        body.clone(),
        Answer::Result(accepted.clone()),
    )
    .assert_result(&body, &accepted);
    assert_date_time(&ws.result("Heartbeat", json!({}))["currentTime"]);
    // A trigger does not open everything.
    let transaction = event("Started", "Authorized", 0, "TX-B30", json!({}), json!({}));
    assert_eq!(ws.error("TransactionEvent", transaction), "SecurityError");
    assert_eq!(
        charge_point_state(&server, "CS-B30")["transactions"],
        json!([])
    );
    ws.close();
}

/// TC_B_30_CSMS, the Rejected half (B03.FR.07): only BootNotification is served, even the
/// reports a Pending station may send get SecurityError.
pub(crate) fn tc_b_30_security_error_while_rejected(binary: &str) {
    let server = ServerProcess::start(binary, &[]);
    let (code, _) = admin(
        &server,
        "PUT",
        "/chargepoints/CS-B30R/boot",
        r#"{"status":"Rejected"}"#,
    );
    assert_eq!(code, 200);
    let mut ws = connect(&server, "CS-B30R", V201);
    let boot = ws.result("BootNotification", boot_payload("PowerUp"));
    assert_eq!(boot["status"], "Rejected");
    assert_eq!(boot["interval"], 60);
    let report = json!({"requestId": 1, "generatedAt": T0, "seqNo": 0});
    for (action, payload) in [
        ("StatusNotification", status_payload(1, 1, "Available")),
        ("NotifyReport", report),
        ("Heartbeat", json!({})),
    ] {
        assert_eq!(ws.error(action, payload), "SecurityError", "{action}");
    }
    let boot = ws.result("BootNotification", boot_payload("PowerUp"));
    assert_eq!(boot["status"], "Rejected");
    assert_eq!(charge_point_state(&server, "CS-B30R")["status"], "Rejected");
    ws.close();
}

/// TC_B_31_CSMS, Cold Boot Charging Station - Pending/Rejected - TriggerMessage: the CSMS
/// triggers a BootNotification before the interval expired; the triggered boot is Accepted.
pub(crate) fn tc_b_31_pending_trigger_message_boot_notification(binary: &str) {
    let server = ServerProcess::start(binary, &["--boot-policy", "pending"]);
    let mut ws = connect(&server, "CS-B31", V201);
    assert_eq!(
        ws.result("BootNotification", boot_payload("PowerUp"))["status"],
        "Pending"
    );
    let (code, _) = admin(
        &server,
        "PUT",
        "/chargepoints/CS-B31/boot",
        r#"{"status":"Accepted"}"#,
    );
    assert_eq!(code, 200);
    let body = json!({"requestedMessage": "BootNotification"});
    let accepted = json!({"status": "Accepted"});
    command(
        &server,
        &mut ws,
        "CS-B31",
        "TriggerMessage",
        body.clone(),
        Answer::Result(accepted.clone()),
    )
    .assert_result(&body, &accepted);
    let boot = ws.result("BootNotification", boot_payload("Triggered"));
    assert_eq!(boot["status"], "Accepted");
    status(&mut ws, 1, 1, "Available");
    assert_eq!(
        ws.result("NotifyEvent", notify_event_payload("Available")),
        json!({})
    );
    let state = charge_point_state(&server, "CS-B31");
    assert_eq!(state["status"], "Accepted");
    assert_eq!(state["boot"]["reason"], "Triggered");
    ws.close();
}

/// TC_B_06_CSMS, Get Variables - single value.
pub(crate) fn tc_b_06_get_variables_single_value(binary: &str) {
    let body = json!({"getVariableData": [variable("OCPPCommCtrlr", "HeartbeatInterval")]});
    let answer = json!({"getVariableResult": [with(
        variable("OCPPCommCtrlr", "HeartbeatInterval"),
        json!({"attributeStatus": "Accepted", "attributeValue": "300"}))]});
    simple_command(binary, "GetVariables", body, answer);
}

/// TC_B_07_CSMS, Get Variables - multiple values (one of them unknown to the station).
pub(crate) fn tc_b_07_get_variables_multiple_values(binary: &str) {
    let body = json!({"getVariableData": [
        variable("OCPPCommCtrlr", "HeartbeatInterval"),
        with(variable("AuthCtrlr", "AuthorizeRemoteStart"), json!({"attributeType": "Actual"})),
        variable("NoSuchCtrlr", "Nothing")]});
    let answer = json!({"getVariableResult": [
        with(variable("OCPPCommCtrlr", "HeartbeatInterval"),
             json!({"attributeStatus": "Accepted", "attributeValue": "300"})),
        with(variable("AuthCtrlr", "AuthorizeRemoteStart"),
             json!({"attributeStatus": "Accepted", "attributeValue": "true"})),
        with(variable("NoSuchCtrlr", "Nothing"), json!({"attributeStatus": "UnknownComponent"}))]});
    simple_command(binary, "GetVariables", body, answer);
}

/// TC_B_09_CSMS, Set Variables - single value.
pub(crate) fn tc_b_09_set_variables_single_value(binary: &str) {
    let body = json!({"setVariableData": [with(
        variable("OCPPCommCtrlr", "HeartbeatInterval"), json!({"attributeValue": "120"}))]});
    let answer = json!({"setVariableResult": [with(
        variable("OCPPCommCtrlr", "HeartbeatInterval"), json!({"attributeStatus": "Accepted"}))]});
    simple_command(binary, "SetVariables", body, answer);
}

/// TC_B_10_CSMS, Set Variables - multiple values.
pub(crate) fn tc_b_10_set_variables_multiple_values(binary: &str) {
    let body = json!({"setVariableData": [
        with(variable("OCPPCommCtrlr", "HeartbeatInterval"), json!({"attributeValue": "120"})),
        with(variable("SampledDataCtrlr", "TxUpdatedInterval"), json!({"attributeValue": "30"}))]});
    let answer = json!({"setVariableResult": [
        with(variable("OCPPCommCtrlr", "HeartbeatInterval"),
             json!({"attributeStatus": "Accepted"})),
        with(variable("SampledDataCtrlr", "TxUpdatedInterval"),
             json!({"attributeStatus": "RebootRequired"}))]});
    simple_command(binary, "SetVariables", body, answer);
}

/// GetBaseReport `base`, Accepted; the station then sends the report in two NotifyReport
/// parts, both acknowledged and kept on the admin API.
fn base_report(binary: &str, base: &str) {
    let server = ServerProcess::start(binary, &[]);
    let mut ws = booted(&server, "CS-B12");
    let body = json!({"requestId": 12, "reportBase": base});
    let accepted = json!({"status": "Accepted"});
    command(
        &server,
        &mut ws,
        "CS-B12",
        "GetBaseReport",
        body.clone(),
        Answer::Result(accepted.clone()),
    )
    .assert_result(&body, &accepted);
    for (seq_no, tbc) in [(0, true), (1, false)] {
        let report = json!({"requestId": 12, "generatedAt": T0, "seqNo": seq_no, "tbc": tbc,
            "reportData": [with(variable("OCPPCommCtrlr", "HeartbeatInterval"),
                json!({"variableAttribute": [{"type": "Actual", "value": "300"}]}))]});
        assert_eq!(ws.result("NotifyReport", report), json!({}));
    }
    let (code, kept) = admin(
        &server,
        "GET",
        "/chargepoints/CS-B12/notifications/NotifyReport",
        "",
    );
    assert_eq!(code, 200);
    assert_eq!(kept.as_array().map(Vec::len), Some(2), "{kept}");
    assert_eq!(kept[1]["payload"]["requestId"], 12);
    assert_eq!(kept[1]["payload"]["tbc"], false);
    ws.close();
}

/// TC_B_12_CSMS, Get Base Report - ConfigurationInventory.
pub(crate) fn tc_b_12_get_base_report_configuration_inventory(binary: &str) {
    base_report(binary, "ConfigurationInventory");
}

/// TC_B_13_CSMS, Get Base Report - FullInventory.
pub(crate) fn tc_b_13_get_base_report_full_inventory(binary: &str) {
    base_report(binary, "FullInventory");
}

/// TC_B_14_CSMS, Get Base Report - SummaryInventory.
pub(crate) fn tc_b_14_get_base_report_summary_inventory(binary: &str) {
    base_report(binary, "SummaryInventory");
}

/// Reset `body` answered `answer`; then, if `reboots`, the station ends its transaction
/// (`ended_reason`) if it had one, reconnects and boots (reason RemoteReset), Accepted.
fn reset(binary: &str, body: Value, answer: &str, transaction: Option<&str>) {
    let server = ServerProcess::start(binary, &[]);
    let mut ws = booted(&server, "CS-RESET");
    if transaction.is_some() {
        let started = event(
            "Started",
            "Authorized",
            0,
            "TX-R",
            json!({}),
            json!({"idToken": id_token("TAG-OK")}),
        );
        ws.result("TransactionEvent", started);
    }
    let result = json!({"status": answer});
    command(
        &server,
        &mut ws,
        "CS-RESET",
        "Reset",
        body.clone(),
        Answer::Result(result.clone()),
    )
    .assert_result(&body, &result);
    if answer == "Scheduled" {
        // OnIdle with a transaction: the station resets once it ends.
        let ended = event(
            "Ended",
            "StopAuthorized",
            1,
            "TX-R",
            json!({"stoppedReason": "Local"}),
            json!({}),
        );
        assert_eq!(ws.result("TransactionEvent", ended), json!({}));
    } else if let Some(reason) = transaction {
        let ended = event(
            "Ended",
            "ResetCommand",
            1,
            "TX-R",
            json!({"stoppedReason": reason}),
            json!({}),
        );
        assert_eq!(ws.result("TransactionEvent", ended), json!({}));
    }
    ws.close();
    let mut ws = connect(&server, "CS-RESET", V201);
    let boot = ws.result("BootNotification", boot_payload("RemoteReset"));
    assert_eq!(boot["status"], "Accepted");
    status(&mut ws, 1, 1, "Available");
    let state = charge_point_state(&server, "CS-RESET");
    assert_eq!(state["boot"]["reason"], "RemoteReset");
    if transaction.is_some() {
        assert!(state["transactions"][0]["ended"].is_string(), "{state}");
    }
    ws.close();
}

/// TC_B_20_CSMS, Reset Charging Station - Without ongoing transaction - OnIdle.
pub(crate) fn tc_b_20_reset_without_transaction_on_idle(binary: &str) {
    reset(binary, json!({"type": "OnIdle"}), "Accepted", None);
}

/// TC_B_21_CSMS, Reset Charging Station - With Ongoing Transaction - OnIdle (Scheduled).
pub(crate) fn tc_b_21_reset_with_transaction_on_idle(binary: &str) {
    reset(
        binary,
        json!({"type": "OnIdle"}),
        "Scheduled",
        Some("Local"),
    );
}

/// TC_B_22_CSMS, Reset Charging Station - With Ongoing Transaction - Immediate.
pub(crate) fn tc_b_22_reset_with_transaction_immediate(binary: &str) {
    reset(
        binary,
        json!({"type": "Immediate"}),
        "Accepted",
        Some("ImmediateReset"),
    );
}

/// TC_B_25_CSMS, Reset EVSE - Without ongoing transaction.
pub(crate) fn tc_b_25_reset_evse_without_transaction(binary: &str) {
    let body = json!({"type": "OnIdle", "evseId": 1});
    simple_command(binary, "Reset", body, json!({"status": "Accepted"}));
}

/// TC_B_58_CSMS, WebSocket Subprotocol validation, as the test case expects it (with
/// `--no-common-version reject-400`): `ocpp0.1` alone is refused with 400; `ocpp0.1,
/// ocpp2.0.1` is upgraded with `ocpp2.0.1`.
pub(crate) fn tc_b_58_no_common_subprotocol_rejected_400(binary: &str) {
    let server = ServerProcess::start(binary, &["--no-common-version", "reject-400"]);
    let refused = upgrade(server.ocpp, "CS-B58", Some("ocpp0.1"), None);
    assert_eq!(refused.status, 400);
    assert!(refused.ws.is_none());
    let ws = upgrade(server.ocpp, "CS-B58", Some("ocpp0.1, ocpp2.0.1"), None).opened(V201);
    ws.close();
}

/// TC_B_58_CSMS with the servers' default (`accept-then-close`, OCPP 2.0.1 Part 4 §3.1.2):
/// upgraded without `Sec-WebSocket-Protocol`, then closed with 1002. Step 2 of the test case
/// fails in this mode: a documented deviation (see the README).
pub(crate) fn tc_b_58_no_common_subprotocol_accept_then_close(binary: &str) {
    let server = ServerProcess::start(binary, &[]);
    let answer = upgrade(server.ocpp, "CS-B58", Some("ocpp0.1"), None);
    assert_eq!(answer.status, 101);
    assert_eq!(answer.header("sec-websocket-protocol"), None);
    assert_eq!(answer.ws.unwrap().recv(), Frame::Close(Some(1002)));
    // The station's order of preference decides between versions both sides speak.
    let ws = upgrade(
        server.ocpp,
        "CS-B58",
        Some("ocpp0.1, ocpp2.0.1, ocpp1.6"),
        None,
    );
    ws.opened(V201).close();
}
