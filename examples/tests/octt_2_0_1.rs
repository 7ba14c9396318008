//! OCTT CSMS test cases of OCPP 2.0.1 (`TC_<block>_<nn>_CSMS`) that the example CSMS
//! implements, end to end against both servers: each case is a `fn tc_<id>_<what>(binary)`,
//! run as `mio_server::tc_...` and `tokio_server::tc_...`. The test runs the charging
//! station's side of the case's scenario on a real loopback socket, with the operator's manual
//! actions done through the admin API, and checks what the CSMS puts on the wire. The case ids
//! and their meaning, the sources and what is not covered are in `examples/README.md`.

mod common;
#[macro_use]
mod octt;

use common::*;
use octt::*;
use serde_json::json;

const V201: &str = "ocpp2.0.1";

fn boot_payload(reason: &str) -> Value {
    let station = json!({"vendorName": "ACME", "model": "AC-22", "serialNumber": "SN-201",
                         "firmwareVersion": "2.0.1"});
    json!({"reason": reason, "chargingStation": station})
}

/// Connects `identity` and boots it (Accepted).
fn booted(server: &Server, identity: &str) -> Ws {
    let mut ws = connect(server, identity, V201);
    let boot = ws.result("BootNotification", boot_payload("PowerUp"));
    assert_eq!(boot["status"], "Accepted");
    ws
}

fn status_payload(evse: u32, connector: u32, status: &str) -> Value {
    json!({"timestamp": T0, "connectorStatus": status, "evseId": evse, "connectorId": connector})
}

fn status(ws: &mut Ws, evse: u32, connector: u32, status: &str) {
    let payload = status_payload(evse, connector, status);
    assert_eq!(ws.result("StatusNotification", payload), json!({}));
}

fn notify_event_payload(actual: &str) -> Value {
    json!({"generatedAt": T0, "seqNo": 0, "eventData": [{
        "eventId": 1, "timestamp": T0, "trigger": "Delta", "actualValue": actual,
        "eventNotificationType": "HardWiredNotification",
        "component": {"name": "Connector", "evse": {"id": 1, "connectorId": 1}},
        "variable": {"name": "AvailabilityState"}}]})
}

fn id_token(token: &str) -> Value {
    json!({"idToken": token, "type": "ISO14443"})
}

/// A TransactionEvent; `extra` is merged into the payload (idToken, meterValue...).
fn event(kind: &str, trigger: &str, seq_no: u32, tx: &str, info: Value, extra: Value) -> Value {
    let mut transaction_info = json!({"transactionId": tx});
    for (k, v) in info.as_object().unwrap() {
        transaction_info[k] = v.clone();
    }
    let mut payload = json!({"eventType": kind, "timestamp": T0, "triggerReason": trigger,
                             "seqNo": seq_no, "transactionInfo": transaction_info,
                             "evse": {"id": 1, "connectorId": 1}});
    for (k, v) in extra.as_object().unwrap() {
        payload[k] = v.clone();
    }
    payload
}

fn energy(wh: u32) -> Value {
    let sample = json!({"value": wh, "measurand": "Energy.Active.Import.Register",
                        "context": "Sample.Periodic"});
    json!({"meterValue": [{"timestamp": T0, "sampledValue": [sample]}]})
}

fn tokens(name: &str) -> TempFile {
    TempFile::new(
        name,
        "TAG-OK Accepted GROUP1\nTAG-OK2 Accepted GROUP1\nTAG-INVALID Invalid\n\
         TAG-OLD Accepted - 2020-01-01T00:00:00Z\nTAG-BLOCKED Blocked\nTAG-BOSS Accepted MASTER\n",
    )
}

fn server_with_tokens(binary: &str, file: &TempFile) -> Server {
    Server::start(
        binary,
        &["--tokens", &file.path(), "--master-pass", "MASTER"],
    )
}

/// TC_B_01_CSMS, Cold Boot Charging Station - Accepted: BootNotification (reason PowerUp)
/// Accepted with the clock and the heartbeat interval; the connectors' state (StatusNotification
/// and NotifyEvent) acknowledged and recorded; Heartbeat.
fn tc_b_01_cold_boot_accepted(binary: &str) {
    let server = Server::start(binary, &[]);
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
fn tc_b_02_cold_boot_pending(binary: &str) {
    let server = Server::start(binary, &["--boot-policy", "pending"]);
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
fn tc_b_30_security_error_while_pending(binary: &str) {
    let server = Server::start(binary, &["--boot-policy", "pending"]);
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
fn tc_b_30_security_error_while_rejected(binary: &str) {
    let server = Server::start(binary, &[]);
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
fn tc_b_31_pending_trigger_message_boot_notification(binary: &str) {
    let server = Server::start(binary, &["--boot-policy", "pending"]);
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

/// A command `action` with `body` answered `answer` by a booted station: checks the CALL's
/// payload and the CALLRESULT the admin API reports; the connection carries on.
fn simple_command(binary: &str, action: &str, body: Value, answer: Value) {
    let server = Server::start(binary, &[]);
    let mut ws = booted(&server, "CS-CMD");
    command(
        &server,
        &mut ws,
        "CS-CMD",
        action,
        body.clone(),
        Answer::Result(answer.clone()),
    )
    .assert_result(&body, &answer);
    assert_date_time(&ws.result("Heartbeat", json!({}))["currentTime"]);
    ws.close();
}

fn variable(component: &str, name: &str) -> Value {
    json!({"component": {"name": component}, "variable": {"name": name}})
}

fn with(mut value: Value, extra: Value) -> Value {
    for (k, v) in extra.as_object().unwrap() {
        value[k] = v.clone();
    }
    value
}

/// TC_B_06_CSMS, Get Variables - single value.
fn tc_b_06_get_variables_single_value(binary: &str) {
    let body = json!({"getVariableData": [variable("OCPPCommCtrlr", "HeartbeatInterval")]});
    let answer = json!({"getVariableResult": [with(
        variable("OCPPCommCtrlr", "HeartbeatInterval"),
        json!({"attributeStatus": "Accepted", "attributeValue": "300"}))]});
    simple_command(binary, "GetVariables", body, answer);
}

/// TC_B_07_CSMS, Get Variables - multiple values (one of them unknown to the station).
fn tc_b_07_get_variables_multiple_values(binary: &str) {
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
fn tc_b_09_set_variables_single_value(binary: &str) {
    let body = json!({"setVariableData": [with(
        variable("OCPPCommCtrlr", "HeartbeatInterval"), json!({"attributeValue": "120"}))]});
    let answer = json!({"setVariableResult": [with(
        variable("OCPPCommCtrlr", "HeartbeatInterval"), json!({"attributeStatus": "Accepted"}))]});
    simple_command(binary, "SetVariables", body, answer);
}

/// TC_B_10_CSMS, Set Variables - multiple values.
fn tc_b_10_set_variables_multiple_values(binary: &str) {
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
    let server = Server::start(binary, &[]);
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
fn tc_b_12_get_base_report_configuration_inventory(binary: &str) {
    base_report(binary, "ConfigurationInventory");
}

/// TC_B_13_CSMS, Get Base Report - FullInventory.
fn tc_b_13_get_base_report_full_inventory(binary: &str) {
    base_report(binary, "FullInventory");
}

/// TC_B_14_CSMS, Get Base Report - SummaryInventory.
fn tc_b_14_get_base_report_summary_inventory(binary: &str) {
    base_report(binary, "SummaryInventory");
}

/// Reset `body` answered `answer`; then, if `reboots`, the station ends its transaction
/// (`ended_reason`) if it had one, reconnects and boots (reason RemoteReset), Accepted.
fn reset(binary: &str, body: Value, answer: &str, transaction: Option<&str>) {
    let server = Server::start(binary, &[]);
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
fn tc_b_20_reset_without_transaction_on_idle(binary: &str) {
    reset(binary, json!({"type": "OnIdle"}), "Accepted", None);
}

/// TC_B_21_CSMS, Reset Charging Station - With Ongoing Transaction - OnIdle (Scheduled).
fn tc_b_21_reset_with_transaction_on_idle(binary: &str) {
    reset(
        binary,
        json!({"type": "OnIdle"}),
        "Scheduled",
        Some("Local"),
    );
}

/// TC_B_22_CSMS, Reset Charging Station - With Ongoing Transaction - Immediate.
fn tc_b_22_reset_with_transaction_immediate(binary: &str) {
    reset(
        binary,
        json!({"type": "Immediate"}),
        "Accepted",
        Some("ImmediateReset"),
    );
}

/// TC_B_25_CSMS, Reset EVSE - Without ongoing transaction.
fn tc_b_25_reset_evse_without_transaction(binary: &str) {
    let body = json!({"type": "OnIdle", "evseId": 1});
    simple_command(binary, "Reset", body, json!({"status": "Accepted"}));
}

/// TC_B_58_CSMS, WebSocket Subprotocol validation, as the test case expects it (with
/// `--no-common-version reject-400`): `ocpp0.1` alone is refused with 400; `ocpp0.1,
/// ocpp2.0.1` is upgraded with `ocpp2.0.1`.
fn tc_b_58_no_common_subprotocol_rejected_400(binary: &str) {
    let server = Server::start(binary, &["--no-common-version", "reject-400"]);
    let refused = upgrade(server.ocpp, "CS-B58", Some("ocpp0.1"), None);
    assert_eq!(refused.status, 400);
    assert!(refused.ws.is_none());
    let ws = upgrade(server.ocpp, "CS-B58", Some("ocpp0.1, ocpp2.0.1"), None).opened(V201);
    ws.close();
}

/// TC_B_58_CSMS with the servers' default (`accept-then-close`, OCPP 2.0.1 Part 4 §3.1.2):
/// upgraded without `Sec-WebSocket-Protocol`, then closed with 1002. Step 2 of the test case
/// fails in this mode: a documented deviation (see the README).
fn tc_b_58_no_common_subprotocol_accept_then_close(binary: &str) {
    let server = Server::start(binary, &[]);
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

/// Authorize `token` against the token store: the `idTokenInfo` answered.
fn authorize_from_store(binary: &str, token: &str) -> Value {
    let file = tokens("tokens201");
    let server = server_with_tokens(binary, &file);
    let mut ws = booted(&server, "CS-C");
    let answer = ws.result("Authorize", json!({"idToken": id_token(token)}));
    ws.close();
    answer["idTokenInfo"].clone()
}

/// TC_C_02_CSMS, Local start transaction - Authorization Invalid/Unknown.
fn tc_c_02_authorization_invalid_unknown(binary: &str) {
    assert_eq!(
        authorize_from_store(binary, "TAG-INVALID"),
        json!({"status": "Invalid"})
    );
    assert_eq!(
        authorize_from_store(binary, "NOBODY"),
        json!({"status": "Unknown"})
    );
}

/// TC_C_06_CSMS, Local start transaction - Authorization Blocked.
fn tc_c_06_authorization_blocked(binary: &str) {
    assert_eq!(
        authorize_from_store(binary, "TAG-BLOCKED"),
        json!({"status": "Blocked"})
    );
}

/// TC_C_07_CSMS, Local start transaction - Authorization Expired.
fn tc_c_07_authorization_expired(binary: &str) {
    assert_eq!(
        authorize_from_store(binary, "TAG-OLD"),
        json!({"status": "Expired", "cacheExpiryDateTime": "2020-01-01T00:00:00Z"})
    );
}

/// TC_C_39_CSMS, Authorization by GroupId - Success: two tokens of one group; each answer
/// (Authorize and TransactionEvent) carries the group, so the second may stop the first's
/// transaction.
fn tc_c_39_authorization_by_group_id(binary: &str) {
    let file = tokens("tokens201");
    let server = server_with_tokens(binary, &file);
    let mut ws = booted(&server, "CS-C39");
    let group = json!({"status": "Accepted",
                       "groupIdToken": {"idToken": "GROUP1", "type": "Central"}});
    let authorize = |ws: &mut Ws, token: &str| {
        ws.result("Authorize", json!({"idToken": id_token(token)}))["idTokenInfo"].clone()
    };
    assert_eq!(authorize(&mut ws, "TAG-OK2"), group);
    let started = event(
        "Started",
        "Authorized",
        0,
        "TX-C39",
        json!({"chargingState": "EVConnected"}),
        json!({"idToken": id_token("TAG-OK")}),
    );
    assert_eq!(ws.result("TransactionEvent", started)["idTokenInfo"], group);
    let charging = event(
        "Updated",
        "ChargingStateChanged",
        1,
        "TX-C39",
        json!({"chargingState": "Charging"}),
        json!({}),
    );
    assert_eq!(ws.result("TransactionEvent", charging), json!({}));
    assert_eq!(authorize(&mut ws, "TAG-OK2"), group);
    let stop = event(
        "Updated",
        "StopAuthorized",
        2,
        "TX-C39",
        json!({"chargingState": "EVConnected"}),
        json!({"idToken": id_token("TAG-OK2")}),
    );
    assert_eq!(ws.result("TransactionEvent", stop)["idTokenInfo"], group);
    let ended = event(
        "Ended",
        "EVCommunicationLost",
        3,
        "TX-C39",
        json!({"stoppedReason": "Local"}),
        json!({}),
    );
    assert_eq!(ws.result("TransactionEvent", ended), json!({}));
    ws.close();
}

/// TC_C_49_CSMS, Stop Transaction with a Master Pass - Without UI, partly: the master pass
/// token (whose group is the MasterPassGroupId) is Accepted with that group, and the Ended
/// events with stoppedReason MasterPass are acknowledged. See the README for the step this
/// does not check.
fn tc_c_49_master_pass_without_ui(binary: &str) {
    let file = tokens("tokens201");
    let server = server_with_tokens(binary, &file);
    let mut ws = booted(&server, "CS-C49");
    for (tx, token) in [("TX-1", "TAG-OK"), ("TX-2", "TAG-OK2")] {
        let started = event(
            "Started",
            "Authorized",
            0,
            tx,
            json!({}),
            json!({"idToken": id_token(token)}),
        );
        assert_eq!(
            ws.result("TransactionEvent", started)["idTokenInfo"]["status"],
            "Accepted"
        );
    }
    let master = ws.result("Authorize", json!({"idToken": id_token("TAG-BOSS")}));
    assert_eq!(
        master["idTokenInfo"],
        json!({"status": "Accepted", "groupIdToken": {"idToken": "MASTER", "type": "Central"}})
    );
    for (tx, token) in [("TX-1", "TAG-OK"), ("TX-2", "TAG-OK2")] {
        let ended = event(
            "Ended",
            "StopAuthorized",
            1,
            tx,
            json!({"stoppedReason": "MasterPass"}),
            json!({"idToken": id_token(token)}),
        );
        assert_eq!(
            ws.result("TransactionEvent", ended)["idTokenInfo"]["status"],
            "Accepted"
        );
    }
    let state = charge_point_state(&server, "CS-C49");
    for transaction in state["transactions"].as_array().unwrap() {
        assert_eq!(transaction["stop_reason"], "MasterPass");
    }
    ws.close();
}

/// TC_C_37_CSMS, Clear Authorization Data in Authorization Cache - Accepted.
fn tc_c_37_clear_cache_accepted(binary: &str) {
    simple_command(
        binary,
        "ClearCache",
        json!({}),
        json!({"status": "Accepted"}),
    );
}

/// TC_C_38_CSMS, Clear Authorization Data in Authorization Cache - Rejected.
fn tc_c_38_clear_cache_rejected(binary: &str) {
    simple_command(
        binary,
        "ClearCache",
        json!({}),
        json!({"status": "Rejected"}),
    );
}

/// A local transaction: Started, Updated with meter values, Ended; `cable_first`: TC_E_03
/// (plug in, then authorize), else TC_E_04 (authorize first). Every event is answered, the one
/// with an idToken with its idTokenInfo, and the transaction is recorded with its energy.
fn local_transaction(binary: &str, cable_first: bool) {
    let server = Server::start(binary, &[]);
    let mut ws = booted(&server, "CS-E");
    let token = json!({"idToken": id_token("TAG-OK")});
    let accepted = json!({"idTokenInfo": {"status": "Accepted"}});
    let mut seq_no = 0;
    let mut next = || {
        seq_no += 1;
        seq_no - 1
    };
    if cable_first {
        status(&mut ws, 1, 1, "Occupied");
        let started = event(
            "Started",
            "CablePluggedIn",
            next(),
            "TX-E",
            json!({"chargingState": "EVConnected"}),
            json!({}),
        );
        assert_eq!(ws.result("TransactionEvent", started), json!({}));
        assert_eq!(ws.result("Authorize", token.clone()), accepted);
        let authorized = event("Updated", "Authorized", next(), "TX-E", json!({}), token);
        assert_eq!(ws.result("TransactionEvent", authorized), accepted);
    } else {
        assert_eq!(ws.result("Authorize", token.clone()), accepted);
        let started = event("Started", "Authorized", next(), "TX-E", json!({}), token);
        assert_eq!(ws.result("TransactionEvent", started), accepted);
        status(&mut ws, 1, 1, "Occupied");
    }
    let charging = event(
        "Updated",
        "ChargingStateChanged",
        next(),
        "TX-E",
        json!({"chargingState": "Charging"}),
        energy(1000),
    );
    assert_eq!(ws.result("TransactionEvent", charging), json!({}));
    let periodic = event(
        "Updated",
        "MeterValuePeriodic",
        next(),
        "TX-E",
        json!({}),
        energy(2500),
    );
    assert_eq!(ws.result("TransactionEvent", periodic), json!({}));
    let last_seq_no = next();
    let ended = event(
        "Ended",
        "EVCommunicationLost",
        last_seq_no,
        "TX-E",
        json!({"stoppedReason": "EVDisconnected", "chargingState": "Idle"}),
        energy(4000),
    );
    assert_eq!(ws.result("TransactionEvent", ended), json!({}));
    status(&mut ws, 1, 1, "Available");
    let state = charge_point_state(&server, "CS-E");
    let transaction = &state["transactions"][0];
    assert_eq!(transaction["id"], "TX-E");
    assert_eq!(transaction["id_tag"], "TAG-OK");
    assert_eq!(transaction["connector"], "1/1");
    assert_eq!(transaction["stop_reason"], "EVDisconnected");
    assert_eq!(transaction["last_seq_no"], last_seq_no);
    assert_eq!(transaction["meter_last_wh"], 4000.0);
    assert!(transaction["ended"].is_string());
    assert_eq!(state["seq_no_gaps"]["count"], 0);
    ws.close();
}

/// TC_E_03_CSMS, Local start transaction - Cable plugin first - Success.
fn tc_e_03_local_start_cable_plugin_first(binary: &str) {
    local_transaction(binary, true);
}

/// TC_E_04_CSMS, Local start transaction - Authorization first - Success.
fn tc_e_04_local_start_authorization_first(binary: &str) {
    local_transaction(binary, false);
}

/// TC_E_53_CSMS, Reset Sequence Number - CSMS accepting seqNo = 0 at start of transaction:
/// two transactions one after the other, each numbered from 0, both answered, no gap counted.
fn tc_e_53_seq_no_restarts_at_0_for_a_new_transaction(binary: &str) {
    let server = Server::start(binary, &[]);
    let mut ws = booted(&server, "CS-E53");
    for tx in ["TX-A", "TX-B"] {
        let started = event(
            "Started",
            "Authorized",
            0,
            tx,
            json!({}),
            json!({"idToken": id_token("TAG-OK")}),
        );
        assert_eq!(
            ws.result("TransactionEvent", started)["idTokenInfo"]["status"],
            "Accepted"
        );
        let updated = event(
            "Updated",
            "ChargingStateChanged",
            1,
            tx,
            json!({"chargingState": "Charging"}),
            json!({}),
        );
        assert_eq!(ws.result("TransactionEvent", updated), json!({}));
        let ended = event(
            "Ended",
            "EVCommunicationLost",
            2,
            tx,
            json!({"stoppedReason": "EVDisconnected"}),
            json!({}),
        );
        assert_eq!(ws.result("TransactionEvent", ended), json!({}));
    }
    let state = charge_point_state(&server, "CS-E53");
    assert_eq!(state["seq_no_gaps"]["count"], 0, "{state}");
    assert_eq!(state["transactions"].as_array().map(Vec::len), Some(2));
    ws.close();
}

/// TC_E_31_CSMS (transaction recovery) and the seqNo rule: a jump in a transaction's seqNo
/// (lost messages) is answered, noticed (counted, shown on the admin API, a metric), and the
/// CSMS asks the station right after its answer with GetTransactionStatus for that
/// transaction (E14) whether messages are still queued; the answer is kept with the gap.
fn tc_e_31_seq_no_gap_asks_get_transaction_status(binary: &str) {
    let server = Server::start(binary, &[]);
    let mut ws = booted(&server, "CS-GAP");
    for (kind, seq_no) in [("Started", 0), ("Updated", 1), ("Updated", 4), ("Ended", 5)] {
        let payload = event(
            kind,
            "MeterValuePeriodic",
            seq_no,
            "TX-GAP",
            json!({}),
            json!({}),
        );
        assert_eq!(ws.result("TransactionEvent", payload), json!({}));
        if seq_no == 4 {
            let (id, action, payload) = ws.expect_call();
            assert_eq!(action, "GetTransactionStatus");
            assert_eq!(payload, json!({"transactionId": "TX-GAP"}));
            let state = charge_point_state(&server, "CS-GAP");
            let asked = &state["seq_no_gaps"]["recent"][0]["transaction_status"];
            assert_eq!(asked, &json!({"asked": true}), "{state}");
            ws.reply(
                &id,
                json!({"ongoingIndicator": true, "messagesInQueue": true}),
            );
        }
    }
    let gaps = &charge_point_state(&server, "CS-GAP")["seq_no_gaps"];
    assert_eq!(gaps["count"], 1, "{gaps}");
    let gap = &gaps["recent"][0];
    assert_eq!(gap["transaction"], "TX-GAP");
    assert_eq!(gap["expected"], 2);
    assert_eq!(gap["received"], 4);
    assert_eq!(
        gap["transaction_status"]["ongoing_indicator"], true,
        "{gap}"
    );
    assert_eq!(
        gap["transaction_status"]["messages_in_queue"], true,
        "{gap}"
    );
    let (_, metrics) = http(server.admin, "GET", "/metrics", "");
    assert!(
        metrics.contains("ocpp_transaction_seq_no_gaps_total 1\n"),
        "{metrics}"
    );
    ws.close();
}

/// The energy register alone, with no measurand (the default, Energy.Active.Import.Register)
/// and a context, as the TC_I cases send it.
fn register(wh: u32, context: &str) -> Value {
    json!({"meterValue": [{"timestamp": T0, "sampledValue": [{"value": wh, "context": context}]}]})
}

/// The tariff of the TC_I tests: 0.30 per kWh, and 0.01 per hour so that the time is priced
/// too but, for a test shorter than 30 minutes, adds less than half a cent: the costs are
/// exact multiples of the energy price (rounded once to the cent, see `ocpp_reference_csms::tariff`).
const TARIFF: &[&str] = &["--price-per-kwh", "0.30", "--price-per-hour", "0.01"];

/// Expects the CostUpdated the CSMS sends right after a TransactionEvent answer, checks it,
/// answers it (an empty CostUpdatedResponse) and returns its totalCost.
fn cost_updated(ws: &mut Ws, tx: &str) -> Value {
    let (id, action, payload) = ws.expect_call();
    assert_eq!(action, "CostUpdated", "{payload}");
    assert_eq!(payload["transactionId"], tx, "{payload}");
    assert_eq!(payload.as_object().unwrap().len(), 2, "{payload}");
    ws.reply(&id, json!({}));
    payload["totalCost"].clone()
}

/// TC_I_01_CSMS, Show EV Driver running total cost during charging - costUpdatedRequest
/// (I02.FR.01): Authorize, Updated (Authorized), EVConnectedPreSession, EnergyTransferStarted,
/// then periodic meter values; after each Updated that brings them (its answer without
/// totalCost: 2.0.1 allows it only when charging ended) the CSMS sends CostUpdated with the
/// running cost and the transactionId. With `--cost-updated-interval 0` every such Updated
/// gets one; the answers are kept, the cost is on the admin API.
fn tc_i_01_running_cost_cost_updated(binary: &str) {
    let mut args = TARIFF.to_vec();
    args.extend(["--cost-updated-interval", "0"]);
    let server = Server::start(binary, &args);
    let mut ws = booted(&server, "CS-I01");
    status(&mut ws, 1, 1, "Available");
    let authorize = ws.result("Authorize", json!({"idToken": id_token("TAG-OK")}));
    assert_eq!(authorize["idTokenInfo"]["status"], "Accepted");
    let tx = "TX-I01";
    let authorized = event(
        "Updated",
        "Authorized",
        0,
        tx,
        json!({}),
        json!({"idToken": id_token("TAG-OK")}),
    );
    let answer = ws.result("TransactionEvent", authorized);
    assert_eq!(answer, json!({"idTokenInfo": {"status": "Accepted"}}));
    status(&mut ws, 1, 1, "Occupied");
    for (seq_no, trigger, state) in [
        (1, "CablePluggedIn", "EVConnected"),
        (2, "ChargingStateChanged", "Charging"),
    ] {
        let updated = event(
            "Updated",
            trigger,
            seq_no,
            tx,
            json!({"chargingState": state}),
            json!({}),
        );
        // No meter values: no cost yet.
        assert_eq!(ws.result("TransactionEvent", updated), json!({}));
    }
    // 10.000 kWh, then 12.500 kWh, then 13.010 kWh: 0, 2.5 and 3.01 kWh at 0.30.
    for (seq_no, wh, expected) in [(3, 10_000, 0.0), (4, 12_500, 0.75), (5, 13_010, 0.9)] {
        let periodic = event(
            "Updated",
            "MeterValuePeriodic",
            seq_no,
            tx,
            json!({"chargingState": "Charging"}),
            register(wh, "Sample.Periodic"),
        );
        assert_eq!(ws.result("TransactionEvent", periodic), json!({}));
        assert_eq!(cost_updated(&mut ws, tx), json!(expected), "at {wh} Wh");
    }
    // The answer of the last one is in before the admin API is asked.
    assert_date_time(&ws.result("Heartbeat", json!({}))["currentTime"]);
    let state = charge_point_state(&server, "CS-I01");
    let updates = state["cost_updates"].as_array().unwrap();
    assert_eq!(updates.len(), 3, "{state}");
    assert_eq!(updates[2]["total_cost"], 0.9, "{state}");
    assert!(updates.iter().all(|u| u["answer"] == "Accepted"), "{state}");
    let transaction = &state["transactions"][0];
    assert_eq!(transaction["cost"], 0.9, "{transaction}");
    assert_eq!(transaction["currency"], "EUR", "{transaction}");
    let (code, open) = admin(&server, "GET", "/transactions", "");
    assert_eq!(code, 200);
    assert_eq!(open[0]["cost"], 0.9, "{open}");
    ws.close();
}

/// TC_I_02_CSMS, Show EV Driver Final Total Cost After Charging (I03.FR.02; the tool checks
/// that the Ended answer's totalCost is not omitted): EVConnectedPreSession with the register
/// at 1000 Wh (Transaction.Begin), Authorized, EnergyTransferStarted, StopAuthorized,
/// EVConnectedPostSession, StatusNotification Available and NotifyEvent, Ended at 6000 Wh
/// (Transaction.End): totalCost 1.50 (5 kWh at 0.30). The optional CostUpdated after the
/// first metered Updated goes at once; with the default interval (60 s) a second metered
/// Updated a moment later gets none.
fn tc_i_02_final_total_cost(binary: &str) {
    let server = Server::start(binary, TARIFF);
    let mut ws = booted(&server, "CS-I02");
    let tx = "TX-I02";
    status(&mut ws, 1, 1, "Occupied");
    let event_answer = ws.result("NotifyEvent", notify_event_payload("Occupied"));
    assert_eq!(event_answer, json!({}));
    let connected = event(
        "Updated",
        "CablePluggedIn",
        0,
        tx,
        json!({"chargingState": "EVConnected"}),
        register(1_000, "Transaction.Begin"),
    );
    assert_eq!(ws.result("TransactionEvent", connected), json!({}));
    assert_eq!(cost_updated(&mut ws, tx), json!(0.0));
    let authorized = event(
        "Updated",
        "Authorized",
        1,
        tx,
        json!({}),
        json!({"idToken": id_token("TAG-OK")}),
    );
    let answer = ws.result("TransactionEvent", authorized);
    assert_eq!(answer["idTokenInfo"]["status"], "Accepted");
    let charging = event(
        "Updated",
        "ChargingStateChanged",
        2,
        tx,
        json!({"chargingState": "Charging"}),
        register(3_000, "Sample.Periodic"),
    );
    // Metered, but within the interval: no CostUpdated (the Heartbeat's answer comes next).
    assert_eq!(ws.result("TransactionEvent", charging), json!({}));
    assert_date_time(&ws.result("Heartbeat", json!({}))["currentTime"]);
    let stop = event(
        "Updated",
        "StopAuthorized",
        3,
        tx,
        json!({"chargingState": "EVConnected"}),
        json!({"idToken": id_token("TAG-OK")}),
    );
    assert_eq!(
        ws.result("TransactionEvent", stop)["idTokenInfo"]["status"],
        "Accepted"
    );
    status(&mut ws, 1, 1, "Available");
    let event_answer = ws.result("NotifyEvent", notify_event_payload("Available"));
    assert_eq!(event_answer, json!({}));
    let ended = event(
        "Ended",
        "EVCommunicationLost",
        4,
        tx,
        json!({"chargingState": "Idle", "stoppedReason": "EVDisconnected"}),
        register(6_000, "Transaction.End"),
    );
    let answer = ws.call_raw("TransactionEvent", ended);
    assert_eq!(answer[2], json!({"totalCost": 1.5}), "{answer}");
    let state = charge_point_state(&server, "CS-I02");
    assert_eq!(state["cost_updates"].as_array().map(Vec::len), Some(1));
    let transaction = &state["transactions"][0];
    assert_eq!(transaction["energy_wh"], 5_000.0, "{transaction}");
    assert_eq!(transaction["cost"], 1.5, "{transaction}");
    let (_, listed) = admin(&server, "GET", "/chargepoints/CS-I02/transactions", "");
    assert_eq!(listed[0]["cost"], 1.5, "{listed}");
    assert_eq!(listed[0]["currency"], "EUR", "{listed}");
    ws.close();
}

/// One transaction of `wh` Wh (from a register at 1000 Wh) on `ws`: Started, one metered
/// Updated, then the CostUpdated with `cost_updated` as totalCost if given, Ended. Returns
/// the Updated and the Ended answers.
fn priced_transaction(
    ws: &mut Ws,
    tx: &str,
    wh: u32,
    cost_update: Option<Value>,
) -> (Value, Value) {
    let begin = register(1_000, "Transaction.Begin");
    let started = event("Started", "CablePluggedIn", 0, tx, json!({}), begin);
    assert_eq!(ws.result("TransactionEvent", started), json!({}));
    let updated = event(
        "Updated",
        "MeterValuePeriodic",
        1,
        tx,
        json!({}),
        register(1_000 + wh, "Sample.Periodic"),
    );
    let updated = ws.result("TransactionEvent", updated);
    if let Some(expected) = cost_update {
        assert_eq!(cost_updated(ws, tx), expected);
    }
    let ended = event(
        "Ended",
        "EVCommunicationLost",
        2,
        tx,
        json!({"stoppedReason": "EVDisconnected"}),
        register(1_000 + wh, "Transaction.End"),
    );
    (updated, ws.result("TransactionEvent", ended))
}

/// No OCTT case id: the per-station tariff of the admin API (`PUT|GET|DELETE
/// /chargepoints/ID/tariff`) prices that station's transactions; without any tariff nothing
/// about cost is sent (no totalCost, no CostUpdated) nor shown. On OCPP 2.1 the running cost
/// also goes in the Updated answer, which its schema allows.
fn tariff_per_station_and_none(binary: &str) {
    let server = Server::start(binary, &[]);
    let (code, tariff) = admin(&server, "GET", "/tariff", "");
    assert_eq!((code, &tariff["default"]), (200, &Value::Null), "{tariff}");
    // No tariff: the answers are as before, no CostUpdated follows.
    let mut ws = booted(&server, "CS-NOTARIFF");
    let (updated, ended) = priced_transaction(&mut ws, "TX-N", 2_000, None);
    assert_eq!((updated, ended), (json!({}), json!({})));
    assert_date_time(&ws.result("Heartbeat", json!({}))["currentTime"]);
    let state = charge_point_state(&server, "CS-NOTARIFF");
    assert_eq!(state["cost_updates"], json!([]), "{state}");
    assert_eq!(state["transactions"][0]["cost"], Value::Null, "{state}");
    assert_eq!(state["transactions"][0]["currency"], Value::Null, "{state}");
    ws.close();

    // A tariff for one station, before it is seen.
    for bad in [
        "{}",
        r#"{"price_per_kwh": "-1"}"#,
        r#"{"price_per_kwh": "0.00001"}"#,
        r#"{"price_per_kwh": true}"#,
        r#"{"price_per_kwh": "0.1", "currency": "eur"}"#,
        "not json",
    ] {
        let (code, _) = admin(&server, "PUT", "/chargepoints/CS-TARIFF/tariff", bad);
        assert_eq!(code, 400, "{bad}");
    }
    let body = r#"{"price_per_kwh": 0.4, "currency": "CHF"}"#;
    let (code, set) = admin(&server, "PUT", "/chargepoints/CS-TARIFF/tariff", body);
    assert_eq!(code, 200, "{set}");
    let expected = json!({"price_per_kwh": "0.4", "price_per_hour": "0", "currency": "CHF"});
    assert_eq!(set["tariff"], expected);
    let (_, shown) = admin(&server, "GET", "/chargepoints/CS-TARIFF/tariff", "");
    assert_eq!(shown["tariff"], expected, "{shown}");
    assert_eq!(shown["applies"], expected, "{shown}");
    assert_eq!(shown["default"], Value::Null, "{shown}");

    let mut ws = connect(&server, "CS-TARIFF", "ocpp2.1");
    let boot = ws.result("BootNotification", boot_payload("PowerUp"));
    assert_eq!(boot["status"], "Accepted");
    // 2.5 kWh at 0.40: 1.00, in the 2.1 Updated answer, the CostUpdated and the Ended answer.
    let started = event(
        "Started",
        "CablePluggedIn",
        0,
        "TX-T1",
        json!({}),
        json!({}),
    );
    assert_eq!(ws.result("TransactionEvent", started), json!({}));
    let updated = event(
        "Updated",
        "MeterValuePeriodic",
        1,
        "TX-T1",
        json!({}),
        register(1_000, "Sample.Periodic"),
    );
    assert_eq!(
        ws.result("TransactionEvent", updated),
        json!({"totalCost": 0.0})
    );
    assert_eq!(cost_updated(&mut ws, "TX-T1"), json!(0.0));
    let ended = event(
        "Ended",
        "EVCommunicationLost",
        2,
        "TX-T1",
        json!({"stoppedReason": "EVDisconnected"}),
        register(3_500, "Transaction.End"),
    );
    assert_eq!(
        ws.result("TransactionEvent", ended),
        json!({"totalCost": 1.0})
    );

    // A new price for the next transaction: 2 kWh at 0.55.
    let body = r#"{"price_per_kwh": "0.55"}"#;
    let (code, _) = admin(&server, "PUT", "/chargepoints/CS-TARIFF/tariff", body);
    assert_eq!(code, 200);
    let (_, shown) = admin(&server, "GET", "/chargepoints/CS-TARIFF/tariff", "");
    assert_eq!(shown["tariff"]["currency"], "EUR", "no default tariff: EUR");
    let (updated, ended) = priced_transaction(&mut ws, "TX-T2", 2_000, Some(json!(1.1)));
    assert_eq!(updated, json!({"totalCost": 1.1}));
    assert_eq!(ended, json!({"totalCost": 1.1}));

    // An Ended of a transaction the CSMS never saw: its cost is not known, so no totalCost
    // (0.00 would tell the driver it was free).
    let unknown = event(
        "Ended",
        "EVCommunicationLost",
        7,
        "TX-UNSEEN",
        json!({"stoppedReason": "EVDisconnected"}),
        register(9_000, "Transaction.End"),
    );
    assert_eq!(ws.result("TransactionEvent", unknown), json!({}));

    // Back to the default (none): no cost again.
    let (code, _) = admin(&server, "DELETE", "/chargepoints/CS-TARIFF/tariff", "");
    assert_eq!(code, 200);
    let (updated, ended) = priced_transaction(&mut ws, "TX-T3", 2_000, None);
    assert_eq!((updated, ended), (json!({}), json!({})));
    assert_date_time(&ws.result("Heartbeat", json!({}))["currentTime"]);
    let (_, listed) = admin(&server, "GET", "/chargepoints/CS-TARIFF/transactions", "");
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["cost"].is_null()),
        "costs follow the tariff that applies now: {listed}"
    );
    ws.close();
}

/// Remote start; `cable_first`: TC_F_01 (plugged in before the command), else TC_F_02. The
/// CSMS sends RequestStartTransaction (Accepted); the station's Started / Updated event with
/// triggerReason RemoteStart carries the remoteStartId and is answered with the token's info.
fn remote_start(binary: &str, cable_first: bool) {
    let server = Server::start(binary, &[]);
    let mut ws = booted(&server, "CS-F");
    let mut seq_no = 0;
    if cable_first {
        status(&mut ws, 1, 1, "Occupied");
        let started = event(
            "Started",
            "CablePluggedIn",
            0,
            "TX-F",
            json!({"chargingState": "EVConnected"}),
            json!({}),
        );
        assert_eq!(ws.result("TransactionEvent", started), json!({}));
        seq_no = 1;
    }
    let body = json!({"idToken": id_token("TAG-OK"), "remoteStartId": 7, "evseId": 1});
    let mut answer = json!({"status": "Accepted"});
    if cable_first {
        answer["transactionId"] = json!("TX-F");
    }
    command(
        &server,
        &mut ws,
        "CS-F",
        "RequestStartTransaction",
        body.clone(),
        Answer::Result(answer.clone()),
    )
    .assert_result(&body, &answer);
    let kind = if cable_first { "Updated" } else { "Started" };
    let remote = event(
        kind,
        "RemoteStart",
        seq_no,
        "TX-F",
        json!({"remoteStartId": 7}),
        json!({"idToken": id_token("TAG-OK")}),
    );
    assert_eq!(
        ws.result("TransactionEvent", remote),
        json!({"idTokenInfo": {"status": "Accepted"}})
    );
    if !cable_first {
        status(&mut ws, 1, 1, "Occupied");
    }
    let transaction = &charge_point_state(&server, "CS-F")["transactions"][0];
    assert_eq!(transaction["id"], "TX-F");
    assert_eq!(transaction["id_tag"], "TAG-OK");
    assert!(transaction["ended"].is_null());
    ws.close();
}

/// TC_F_01_CSMS, Remote start transaction - Cable plugin first.
fn tc_f_01_remote_start_cable_plugin_first(binary: &str) {
    remote_start(binary, true);
}

/// TC_F_02_CSMS, Remote start transaction - Remote start first (AuthorizeRemoteStart is true:
/// the CSMS answers the station's event with the token's info).
fn tc_f_02_remote_start_first(binary: &str) {
    remote_start(binary, false);
}

/// TC_E_21_CSMS, Stop transaction options - StopAuthorized - Remote: RequestStopTransaction,
/// Accepted; the station's Ended event (triggerReason RemoteStop, stoppedReason Remote) is
/// acknowledged and recorded.
fn tc_e_21_stop_authorized_remote(binary: &str) {
    let server = Server::start(binary, &[]);
    let mut ws = booted(&server, "CS-E21");
    let started = event(
        "Started",
        "Authorized",
        0,
        "TX-E21",
        json!({}),
        json!({"idToken": id_token("TAG-OK")}),
    );
    ws.result("TransactionEvent", started);
    let body = json!({"transactionId": "TX-E21"});
    let accepted = json!({"status": "Accepted"});
    command(
        &server,
        &mut ws,
        "CS-E21",
        "RequestStopTransaction",
        body.clone(),
        Answer::Result(accepted.clone()),
    )
    .assert_result(&body, &accepted);
    let ended = event(
        "Ended",
        "RemoteStop",
        1,
        "TX-E21",
        json!({"stoppedReason": "Remote"}),
        json!({}),
    );
    assert_eq!(ws.result("TransactionEvent", ended), json!({}));
    let transaction = &charge_point_state(&server, "CS-E21")["transactions"][0];
    assert_eq!(transaction["stop_reason"], "Remote");
    ws.close();
}

/// TC_F_06_CSMS, Remote unlock Connector - Without ongoing transaction - Accepted.
fn tc_f_06_unlock_connector_without_transaction(binary: &str) {
    let body = json!({"evseId": 1, "connectorId": 1});
    simple_command(
        binary,
        "UnlockConnector",
        body,
        json!({"status": "Unlocked"}),
    );
}

/// TriggerMessage `body`, Accepted; then the station sends `action` with `payload`: answered.
fn trigger(binary: &str, body: Value, action: &str, payload: Value) -> (Server, Value) {
    let server = Server::start(binary, &[]);
    let mut ws = booted(&server, "CS-TRIG");
    let accepted = json!({"status": "Accepted"});
    command(
        &server,
        &mut ws,
        "CS-TRIG",
        "TriggerMessage",
        body.clone(),
        Answer::Result(accepted.clone()),
    )
    .assert_result(&body, &accepted);
    let answer = ws.result(action, payload);
    ws.close();
    (server, answer)
}

/// TC_F_20_CSMS, Trigger message - Heartbeat.
fn tc_f_20_trigger_message_heartbeat(binary: &str) {
    let body = json!({"requestedMessage": "Heartbeat"});
    let (_server, answer) = trigger(binary, body, "Heartbeat", json!({}));
    assert_date_time(&answer["currentTime"]);
}

/// TC_F_23_CSMS, Trigger message - StatusNotification - Specific EVSE - Available.
fn tc_f_23_trigger_status_notification_available(binary: &str) {
    let body = json!({"requestedMessage": "StatusNotification",
                      "evse": {"id": 1, "connectorId": 1}});
    let payload = status_payload(1, 1, "Available");
    let (server, answer) = trigger(binary, body, "StatusNotification", payload);
    assert_eq!(answer, json!({}));
    let state = charge_point_state(&server, "CS-TRIG");
    assert_eq!(state["connectors"]["1/1"]["status"], "Available");
}

/// TC_F_11_CSMS, Trigger message - MeterValues - Specific EVSE.
fn tc_f_11_trigger_meter_values_specific_evse(binary: &str) {
    let body = json!({"requestedMessage": "MeterValues", "evse": {"id": 1}});
    let payload = with(json!({"evseId": 1}), energy(100));
    let (_server, answer) = trigger(binary, body, "MeterValues", payload);
    assert_eq!(answer, json!({}));
}

/// TC_F_12_CSMS, Trigger message - MeterValues - All EVSE: one MeterValues per EVSE.
fn tc_f_12_trigger_meter_values_all_evse(binary: &str) {
    let body = json!({"requestedMessage": "MeterValues"});
    let (_server, answer) = trigger(
        binary,
        body,
        "MeterValues",
        with(json!({"evseId": 1}), energy(100)),
    );
    assert_eq!(answer, json!({}));
}

/// TC_F_13_CSMS, Trigger message - TransactionEvent - Specific EVSE: the triggered Updated
/// event (triggerReason Trigger) of an unseen transaction is acknowledged and recorded.
fn tc_f_13_trigger_transaction_event_specific_evse(binary: &str) {
    let body = json!({"requestedMessage": "TransactionEvent", "evse": {"id": 1}});
    let updated = event(
        "Updated",
        "Trigger",
        3,
        "TX-F13",
        json!({"chargingState": "Charging"}),
        energy(900),
    );
    let (server, answer) = trigger(binary, body, "TransactionEvent", updated);
    assert_eq!(answer, json!({}));
    let transaction = &charge_point_state(&server, "CS-TRIG")["transactions"][0];
    assert_eq!(transaction["id"], "TX-F13");
    assert_eq!(transaction["charging_state"], "Charging");
}

/// TC_F_15_CSMS, Trigger message - LogStatusNotification - Idle: acknowledged and kept.
fn tc_f_15_trigger_log_status_notification_idle(binary: &str) {
    let body = json!({"requestedMessage": "LogStatusNotification"});
    let (server, answer) = trigger(
        binary,
        body,
        "LogStatusNotification",
        json!({"status": "Idle"}),
    );
    assert_eq!(answer, json!({}));
    let kept = &charge_point_state(&server, "CS-TRIG")["notifications"]["LogStatusNotification"];
    assert_eq!(kept["last_status"], "Idle");
}

/// TC_F_18_CSMS, Trigger message - FirmwareStatusNotification - Idle: acknowledged and kept.
fn tc_f_18_trigger_firmware_status_notification_idle(binary: &str) {
    let body = json!({"requestedMessage": "FirmwareStatusNotification"});
    let payload = json!({"status": "Idle"});
    let (server, answer) = trigger(binary, body, "FirmwareStatusNotification", payload);
    assert_eq!(answer, json!({}));
    let state = charge_point_state(&server, "CS-TRIG");
    assert_eq!(
        state["notifications"]["FirmwareStatusNotification"]["last_status"],
        "Idle"
    );
}

/// TC_F_24_CSMS, Trigger message - StatusNotification - Specific EVSE - Occupied.
fn tc_f_24_trigger_status_notification_occupied(binary: &str) {
    let body =
        json!({"requestedMessage": "StatusNotification", "evse": {"id": 1, "connectorId": 1}});
    let payload = status_payload(1, 1, "Occupied");
    let (server, answer) = trigger(binary, body, "StatusNotification", payload);
    assert_eq!(answer, json!({}));
    let state = charge_point_state(&server, "CS-TRIG");
    assert_eq!(state["connectors"]["1/1"]["status"], "Occupied");
}

/// TC_F_27_CSMS, Trigger message - NotImplemented: the station's answer reaches the operator.
fn tc_f_27_trigger_message_not_implemented(binary: &str) {
    let body = json!({"requestedMessage": "PublishFirmwareStatusNotification"});
    let answer = json!({"status": "NotImplemented"});
    simple_command(binary, "TriggerMessage", body, answer);
}

/// ChangeAvailability of `evse` (None: the whole station) to `status`, Accepted; the
/// station then reports the connector's new state.
fn availability(binary: &str, evse: Option<Value>, operational: &str) {
    let mut body = json!({"operationalStatus": operational});
    if let Some(evse) = evse {
        body["evse"] = evse;
    }
    let server = Server::start(binary, &[]);
    let mut ws = booted(&server, "CS-G");
    let accepted = json!({"status": "Accepted"});
    command(
        &server,
        &mut ws,
        "CS-G",
        "ChangeAvailability",
        body.clone(),
        Answer::Result(accepted.clone()),
    )
    .assert_result(&body, &accepted);
    let connector = if operational == "Operative" {
        "Available"
    } else {
        "Unavailable"
    };
    status(&mut ws, 1, 1, connector);
    let state = charge_point_state(&server, "CS-G");
    assert_eq!(state["connectors"]["1/1"]["status"], connector);
    ws.close();
}

/// TC_G_03_CSMS, Change Availability EVSE - Operative to inoperative.
fn tc_g_03_change_availability_evse_inoperative(binary: &str) {
    availability(binary, Some(json!({"id": 1})), "Inoperative");
}

/// TC_G_04_CSMS, Change Availability EVSE - Inoperative to operative.
fn tc_g_04_change_availability_evse_operative(binary: &str) {
    availability(binary, Some(json!({"id": 1})), "Operative");
}

/// TC_G_05_CSMS, Change Availability Charging Station - Operative to inoperative.
fn tc_g_05_change_availability_station_inoperative(binary: &str) {
    availability(binary, None, "Inoperative");
}

/// TC_G_06_CSMS, Change Availability Charging Station - Inoperative to operative.
fn tc_g_06_change_availability_station_operative(binary: &str) {
    availability(binary, None, "Operative");
}

/// TC_G_07_CSMS, Change Availability Connector - Operative to inoperative.
fn tc_g_07_change_availability_connector_inoperative(binary: &str) {
    availability(
        binary,
        Some(json!({"id": 1, "connectorId": 1})),
        "Inoperative",
    );
}

/// TC_G_08_CSMS, Change Availability Connector - Inoperative to operative.
fn tc_g_08_change_availability_connector_operative(binary: &str) {
    availability(
        binary,
        Some(json!({"id": 1, "connectorId": 1})),
        "Operative",
    );
}

/// ChangeAvailability of `evse` to Inoperative during a transaction: Scheduled; the change
/// happens when the transaction ends (the StatusNotification Unavailable recorded).
fn availability_with_transaction(binary: &str, evse: Option<Value>) {
    let server = Server::start(binary, &[]);
    let mut ws = booted(&server, "CS-G");
    let started = event(
        "Started",
        "Authorized",
        0,
        "TX-G",
        json!({}),
        json!({"idToken": id_token("TAG-OK")}),
    );
    ws.result("TransactionEvent", started);
    let mut body = json!({"operationalStatus": "Inoperative"});
    if let Some(evse) = evse {
        body["evse"] = evse;
    }
    let scheduled = json!({"status": "Scheduled"});
    command(
        &server,
        &mut ws,
        "CS-G",
        "ChangeAvailability",
        body.clone(),
        Answer::Result(scheduled.clone()),
    )
    .assert_result(&body, &scheduled);
    let ended = event(
        "Ended",
        "StopAuthorized",
        1,
        "TX-G",
        json!({"stoppedReason": "Local"}),
        json!({}),
    );
    assert_eq!(ws.result("TransactionEvent", ended), json!({}));
    status(&mut ws, 1, 1, "Unavailable");
    let state = charge_point_state(&server, "CS-G");
    assert_eq!(state["connectors"]["1/1"]["status"], "Unavailable");
    assert!(state["transactions"][0]["ended"].is_string());
    ws.close();
}

/// TC_G_11_CSMS, Change Availability EVSE - With ongoing transaction.
fn tc_g_11_change_availability_evse_with_ongoing_transaction(binary: &str) {
    availability_with_transaction(binary, Some(json!({"id": 1})));
}

/// TC_G_14_CSMS, Change Availability Charging Station - With ongoing transaction.
fn tc_g_14_change_availability_station_with_ongoing_transaction(binary: &str) {
    availability_with_transaction(binary, None);
}

/// TC_G_17_CSMS, Change Availability Connector - With ongoing transaction.
fn tc_g_17_change_availability_connector_with_ongoing_transaction(binary: &str) {
    availability_with_transaction(binary, Some(json!({"id": 1, "connectorId": 1})));
}

/// TC_E_30_CSMS, Check Transaction status - Transaction with id ongoing - without message in
/// queue: GetTransactionStatus with the transactionId; the answer reaches the operator.
fn tc_e_30_check_transaction_status_ongoing_without_messages(binary: &str) {
    let server = Server::start(binary, &[]);
    let mut ws = booted(&server, "CS-E30");
    let started = event(
        "Started",
        "Authorized",
        0,
        "TX-E30",
        json!({}),
        json!({"idToken": id_token("TAG-OK")}),
    );
    ws.result("TransactionEvent", started);
    let body = json!({"transactionId": "TX-E30"});
    let answer = json!({"ongoingIndicator": true, "messagesInQueue": false});
    command(
        &server,
        &mut ws,
        "CS-E30",
        "GetTransactionStatus",
        body.clone(),
        Answer::Result(answer.clone()),
    )
    .assert_result(&body, &answer);
    ws.close();
}

/// TC_E_34_CSMS, Check Transaction status - Without transactionId - without message in queue.
fn tc_e_34_check_transaction_status_without_transaction_id(binary: &str) {
    let answer = json!({"messagesInQueue": false});
    simple_command(binary, "GetTransactionStatus", json!({}), answer);
}

/// TC_J_01_CSMS, Clock-aligned Meter Values - No transaction ongoing: MeterValues acknowledged.
fn tc_j_01_clock_aligned_meter_values_no_transaction(binary: &str) {
    let server = Server::start(binary, &[]);
    let mut ws = booted(&server, "CS-J01");
    let values = json!({"evseId": 1, "meterValue": [{"timestamp": T0, "sampledValue": [
        {"value": 12345.5, "measurand": "Energy.Active.Import.Register", "context": "Sample.Clock",
         "unitOfMeasure": {"unit": "Wh"}}]}]});
    assert_eq!(ws.result("MeterValues", values), json!({}));
    ws.close();
}

/// TC_J_02_CSMS, Clock-aligned Meter Values - Transaction ongoing: TransactionEvent Updated
/// (triggerReason MeterValueClock) acknowledged, the value recorded for the transaction.
fn tc_j_02_clock_aligned_meter_values_transaction_ongoing(binary: &str) {
    let server = Server::start(binary, &[]);
    let mut ws = booted(&server, "CS-J02");
    let started = event(
        "Started",
        "Authorized",
        0,
        "TX-J",
        json!({}),
        with(json!({"idToken": id_token("TAG-OK")}), energy(0)),
    );
    ws.result("TransactionEvent", started);
    let mut clock = energy(750);
    clock["meterValue"][0]["sampledValue"][0]["context"] = json!("Sample.Clock");
    let updated = event("Updated", "MeterValueClock", 1, "TX-J", json!({}), clock);
    assert_eq!(ws.result("TransactionEvent", updated), json!({}));
    let transaction = &charge_point_state(&server, "CS-J02")["transactions"][0];
    assert_eq!(transaction["meter_last_wh"], 750.0);
    assert_eq!(transaction["energy_wh"], 750.0);
    ws.close();
}

/// TC_P_02_CSMS, Data Transfer to the CSMS - Rejected / Unknown VendorId / Unknown MessageId.
fn tc_p_02_data_transfer_unknown_vendor(binary: &str) {
    let server = Server::start(binary, &[]);
    let mut ws = booted(&server, "CS-P02");
    let payload =
        json!({"vendorId": "com.example.unknown", "messageId": "TestMessage", "data": "x"});
    assert_eq!(
        ws.result("DataTransfer", payload),
        json!({"status": "UnknownVendorId"})
    );
    ws.close();
}

/// TC_P_03_CSMS, CustomData - Receive custom data: a StatusNotification and a TransactionEvent
/// carrying `customData` (a vendorId and a property of the vendor's) at the top level and in
/// transactionInfo are answered as without it.
fn tc_p_03_receive_custom_data(binary: &str) {
    let server = Server::start(binary, &[]);
    let mut ws = booted(&server, "CS-P03");
    let custom = json!({"vendorId": "com.example", "customKey": "custom value"});
    let status = with(
        status_payload(1, 1, "Available"),
        json!({"customData": custom}),
    );
    assert_eq!(ws.result("StatusNotification", status), json!({}));
    let info = json!({"chargingState": "EVConnected", "customData": custom});
    let started = event(
        "Started",
        "CablePluggedIn",
        0,
        "TX-P03",
        info,
        json!({"customData": custom}),
    );
    assert_eq!(ws.result("TransactionEvent", started), json!({}));
    let state = charge_point_state(&server, "CS-P03");
    assert_eq!(state["transactions"][0]["id"], "TX-P03");
    ws.close();
}

fn basic_auth_server(binary: &str, file: &TempFile) -> Server {
    Server::start(binary, &["--basic-auth", &file.path()])
}

/// TC_A_01_CSMS, Basic Authentication - Valid username/password combination.
fn tc_a_01_basic_auth_valid(binary: &str) {
    let file = TempFile::new("passwords201", "CS-A01:0123456789abcdef\n");
    let server = basic_auth_server(binary, &file);
    let credentials = Some(("CS-A01", &b"0123456789abcdef"[..]));
    let mut ws = upgrade(server.ocpp, "CS-A01", Some(V201), credentials).opened(V201);
    assert_eq!(
        ws.result("BootNotification", boot_payload("PowerUp"))["status"],
        "Accepted"
    );
    ws.close();
}

/// TC_A_02_CSMS, Basic Authentication - Username does not equal ChargingStationId: 401.
fn tc_a_02_basic_auth_username_not_identity(binary: &str) {
    let file = TempFile::new(
        "passwords201",
        "CS-A02:0123456789abcdef\nOTHER:0123456789abcdef\n",
    );
    let server = basic_auth_server(binary, &file);
    let credentials = Some(("OTHER", &b"0123456789abcdef"[..]));
    let refused = upgrade(server.ocpp, "CS-A02", Some(V201), credentials);
    assert_eq!(refused.status, 401);
    assert!(refused.ws.is_none());
}

/// TC_A_03_CSMS, Basic Authentication - Invalid password: 401 (and without credentials too).
fn tc_a_03_basic_auth_invalid_password(binary: &str) {
    let file = TempFile::new("passwords201", "CS-A03:0123456789abcdef\n");
    let server = basic_auth_server(binary, &file);
    let credentials = Some(("CS-A03", &b"0123456789abcdeX"[..]));
    assert_eq!(
        upgrade(server.ocpp, "CS-A03", Some(V201), credentials).status,
        401
    );
    assert_eq!(upgrade(server.ocpp, "CS-A03", Some(V201), None).status, 401);
}

/// The password change of TC_A_09 / TC_A_10: SetVariables SecurityCtrlr.BasicAuthPassword,
/// answered `status`; then which of the old and the new password opens the next connection.
fn password_update(binary: &str, answer_status: &str) -> (u16, u16) {
    let file = TempFile::new("passwords201", "CS-A09:old-password-0000\n");
    let server = basic_auth_server(binary, &file);
    let open = |password: &str| {
        upgrade(
            server.ocpp,
            "CS-A09",
            Some(V201),
            Some(("CS-A09", password.as_bytes())),
        )
    };
    let mut ws = open("old-password-0000").opened(V201);
    ws.result("BootNotification", boot_payload("PowerUp"));
    let password = with(
        variable("SecurityCtrlr", "BasicAuthPassword"),
        json!({"attributeValue": "new-password-1111"}),
    );
    let body = json!({"setVariableData": [password]});
    let answer = json!({"setVariableResult": [with(variable("SecurityCtrlr", "BasicAuthPassword"),
                                                   json!({"attributeStatus": answer_status}))]});
    command(
        &server,
        &mut ws,
        "CS-A09",
        "SetVariables",
        body.clone(),
        Answer::Result(answer.clone()),
    )
    .assert_result(&body, &answer);
    ws.close();
    let old = open("old-password-0000");
    let old_status = old.status;
    if let Some(mut ws) = old.ws {
        ws.result("BootNotification", boot_payload("PowerUp"));
        ws.close();
    }
    let new = open("new-password-1111");
    let new_status = new.status;
    if let Some(mut ws) = new.ws {
        let boot = ws.result("BootNotification", boot_payload("PowerUp"));
        assert_eq!(boot["status"], "Accepted");
        status(&mut ws, 1, 1, "Available");
        ws.close();
    }
    (old_status, new_status)
}

/// TC_A_09_CSMS, Update Charging Station Password for HTTP Basic Authentication - Accepted:
/// from the next connection on, the new password opens (and boots Accepted) and the old one gets
/// 401. The case ends with the operator setting the old password back
/// (`PUT /chargepoints/ID/password`): then the old one opens again and the new one gets 401.
fn tc_a_09_password_update_accepted(binary: &str) {
    assert_eq!(password_update(binary, "Accepted"), (401, 101));
    // The test case allows RebootRequired too: it counts from the reboot's connection.
    assert_eq!(password_update(binary, "RebootRequired"), (401, 101));

    let file = TempFile::new("passwords201-back", "CS-A09:old-password-0000\n");
    let server = basic_auth_server(binary, &file);
    let open = |password: &str| {
        upgrade(
            server.ocpp,
            "CS-A09",
            Some(V201),
            Some(("CS-A09", password.as_bytes())),
        )
    };
    let path = "/chargepoints/CS-A09/password";
    let (status, _) = admin(&server, "PUT", path, r#"{"password":"new-password-1111"}"#);
    assert_eq!(status, 200);
    assert_eq!(open("old-password-0000").status, 401);
    open("new-password-1111").opened(V201).close();
    let (status, _) = admin(&server, "PUT", path, r#"{"password":"old-password-0000"}"#);
    assert_eq!(status, 200);
    assert_eq!(open("new-password-1111").status, 401);
    let mut ws = open("old-password-0000").opened(V201);
    assert_eq!(
        ws.result("BootNotification", boot_payload("PowerUp"))["status"],
        "Accepted"
    );
    ws.close();
    // Removed: no password opens it.
    let (status, body) = admin(&server, "DELETE", path, "");
    assert_eq!((status, &body["password"]), (200, &json!(false)));
    assert_eq!(open("old-password-0000").status, 401);
}

/// TC_A_10_CSMS, Update Charging Station Password for HTTP Basic Authentication - Rejected:
/// the CSMS keeps accepting the old password (and boots the station Accepted), not the new.
fn tc_a_10_password_update_rejected(binary: &str) {
    assert_eq!(password_update(binary, "Rejected"), (101, 401));
}

/// No OCTT case id found for this one: OCPP-J 2.0.1 §4.1.7/§4.2, an action the station may not
/// send (a CSMS-to-station action) gets NotSupported, an action that does not exist
/// NotImplemented, and a payload without a required field OccurrenceConstraintViolation; the
/// connection goes on.
fn wrong_calls_get_call_errors(binary: &str) {
    let server = Server::start(binary, &[]);
    let mut ws = booted(&server, "CS-ERR");
    assert_eq!(
        ws.error("Reset", json!({"type": "Immediate"})),
        "NotSupported"
    );
    assert_eq!(ws.error("NoSuchAction", json!({})), "NotImplemented");
    let missing = json!({"timestamp": T0, "evseId": 1, "connectorId": 1});
    let code = ws.error("StatusNotification", missing);
    assert_eq!(code, "OccurrenceConstraintViolation");
    assert_date_time(&ws.result("Heartbeat", json!({}))["currentTime"]);
    ws.close();
}

/// A station on the admin API's `/charging-profiles` (smart charging state).
fn charging_profiles(server: &Server, identity: &str) -> Value {
    let (status, body) = admin(
        server,
        "GET",
        &format!("/chargepoints/{identity}/charging-profiles"),
        "",
    );
    assert_eq!(status, 200, "{body}");
    body
}

/// The station's smart-charging state once every profile sent has an answer: the answer to
/// a CALL of the CSMS reaches its record a moment after the station wrote it (on
/// tokio-server, in the task that sent the CALL), so this polls, for at most 5 s.
fn charging_profiles_answered(server: &Server, identity: &str) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let state = charging_profiles(server, identity);
        let sent = state["charging_profiles"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if sent.iter().all(|p| !p["answer"].is_null()) || std::time::Instant::now() > deadline {
            return state;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// NotifyEVChargingNeeds of an AC three-phase EV on `evse` that takes at most `max_amps`.
fn ac_needs(evse: u32, max_amps: u32) -> Value {
    json!({"evseId": evse, "maxScheduleTuples": 3, "chargingNeeds": {
        "requestedEnergyTransfer": "AC_three_phase",
        "acChargingParameters": {"energyAmount": 5000, "evMinCurrent": 6,
                                 "evMaxCurrent": max_amps, "evMaxVoltage": 230}}})
}

/// An EV's NotifyEVChargingSchedule on `evse`: one period at `limit` in `unit`.
fn ev_schedule(evse: u32, unit: &str, limit: f64) -> Value {
    json!({"timeBase": T0, "evseId": evse, "chargingSchedule": {
        "id": 1, "chargingRateUnit": unit,
        "chargingSchedulePeriod": [{"startPeriod": 0, "limit": limit}]}})
}

/// A booted station with an EVSE `evse` in transaction `tx` (Started, `state`).
fn in_transaction(ws: &mut Ws, evse: u32, tx: &str, state: &str) {
    status(ws, evse, 1, "Occupied");
    let mut started = event(
        "Started",
        "Authorized",
        0,
        tx,
        json!({"chargingState": state}),
        json!({"idToken": id_token("TAG-OK")}),
    );
    started["evse"] = json!({"id": evse, "connectorId": 1});
    let answer = ws.result("TransactionEvent", started);
    assert_eq!(answer["idTokenInfo"]["status"], "Accepted", "{answer}");
}

/// Waits for the CSMS's SetChargingProfile and checks it is a TxProfile for `tx` on `evse`
/// with one period at `limit` in `unit` (kind Absolute, starting now); answers `answer`.
/// Returns the profile.
fn expect_tx_profile(
    ws: &mut Ws,
    evse: u32,
    tx: &str,
    unit: &str,
    limit: f64,
    answer: &str,
) -> Value {
    let (id, action, payload) = ws.expect_call();
    assert_eq!(action, "SetChargingProfile", "{payload}");
    assert_eq!(payload["evseId"], evse, "{payload}");
    let profile = payload["chargingProfile"].clone();
    assert_eq!(profile["chargingProfilePurpose"], "TxProfile", "{payload}");
    assert_eq!(profile["chargingProfileKind"], "Absolute", "{payload}");
    assert_eq!(profile["transactionId"], tx, "{payload}");
    assert_eq!(profile["stackLevel"], 0, "{payload}");
    let schedules = profile["chargingSchedule"]
        .as_array()
        .expect("chargingSchedule");
    assert_eq!(schedules.len(), 1, "{payload}");
    let schedule = &schedules[0];
    assert_date_time(&schedule["startSchedule"]);
    assert_eq!(schedule["chargingRateUnit"], unit, "{payload}");
    let periods = schedule["chargingSchedulePeriod"].as_array().unwrap();
    assert!(periods.len() <= 3, "maxScheduleTuples: {payload}");
    assert_eq!(periods[0]["startPeriod"], 0, "{payload}");
    assert_eq!(periods[0]["limit"].as_f64(), Some(limit), "{payload}");
    ws.reply(&id, json!({"status": answer}));
    profile
}

/// TC_K_53_CSMS (K15, load leveling with ISO 15118): the EV's charging needs on an EVSE in
/// transaction are Accepted and a SetChargingProfile follows: a TxProfile for that
/// transaction at the site limit (24 A), below what the EV asked (32 A), on three phases;
/// the EV's schedule within it is Accepted. Needs on an EVSE without a transaction are
/// Rejected and no profile follows. The profiles and answers are on the admin API.
fn tc_k_53_load_leveling_needs_accepted_then_tx_profile(binary: &str) {
    let server = Server::start(binary, &["--site-limit-amps", "24"]);
    let mut ws = booted(&server, "CS-K53");
    status(&mut ws, 1, 1, "Available");
    in_transaction(&mut ws, 1, "TX-K53", "EVConnected");
    let answer = ws.result("NotifyEVChargingNeeds", ac_needs(1, 32));
    assert_eq!(answer, json!({"status": "Accepted"}));
    let profile = expect_tx_profile(&mut ws, 1, "TX-K53", "A", 24.0, "Accepted");
    let period = &profile["chargingSchedule"][0]["chargingSchedulePeriod"][0];
    assert_eq!(period["numberPhases"], 3, "{profile}");
    let answer = ws.result("NotifyEVChargingSchedule", ev_schedule(1, "A", 24.0));
    assert_eq!(answer, json!({"status": "Accepted"}));
    let mut charging = event(
        "Updated",
        "ChargingStateChanged",
        1,
        "TX-K53",
        json!({"chargingState": "Charging"}),
        json!({}),
    );
    charging["evse"] = json!({"id": 1, "connectorId": 1});
    assert_eq!(ws.result("TransactionEvent", charging), json!({}));
    // No transaction on EVSE 2: nothing to attach a TxProfile to (K15), no CALL follows.
    let answer = ws.result("NotifyEVChargingNeeds", ac_needs(2, 32));
    assert_eq!(answer, json!({"status": "Rejected"}));
    assert_date_time(&ws.result("Heartbeat", json!({}))["currentTime"]);
    let state = charging_profiles_answered(&server, "CS-K53");
    assert_eq!(
        state["default_site_limit"],
        json!({"amps": 24.0, "watts": null}),
        "{state}"
    );
    let sent = state["charging_profiles"].as_array().unwrap();
    assert_eq!(sent.len(), 1, "{state}");
    assert_eq!(sent[0]["answer"], "Accepted", "{state}");
    assert_eq!(sent[0]["reason"], "ChargingNeeds", "{state}");
    assert_eq!(sent[0]["charging_profile"], profile, "{state}");
    let needs = state["charging_needs"].as_array().unwrap();
    assert_eq!(needs.len(), 2, "{state}");
    assert_eq!(needs[0]["ev_max_current"], 32.0, "{state}");
    assert_eq!(needs[0]["transaction_id"], "TX-K53", "{state}");
    let record = charge_point_state(&server, "CS-K53");
    assert_eq!(
        record["smart_charging"]["charging_profiles"][0]["id"],
        profile["id"]
    );
    ws.close();
}

/// TC_K_55_CSMS (K15-K17): the EV's schedule exceeds the profile the CSMS sent (100 A over
/// 16 A): Rejected, and the CSMS renegotiates with a new SetChargingProfile for the same
/// transaction (the same profile id, so that it replaces the first).
fn tc_k_55_ev_schedule_exceeding_limits_rejected_and_renegotiated(binary: &str) {
    let server = Server::start(binary, &["--site-limit-amps", "16"]);
    let mut ws = booted(&server, "CS-K55");
    status(&mut ws, 1, 1, "Available");
    in_transaction(&mut ws, 1, "TX-K55", "EVConnected");
    let answer = ws.result("NotifyEVChargingNeeds", ac_needs(1, 32));
    assert_eq!(answer["status"], "Accepted");
    let first = expect_tx_profile(&mut ws, 1, "TX-K55", "A", 16.0, "Accepted");
    let answer = ws.result("NotifyEVChargingSchedule", ev_schedule(1, "A", 100.0));
    assert_eq!(answer, json!({"status": "Rejected"}));
    let second = expect_tx_profile(&mut ws, 1, "TX-K55", "A", 16.0, "Accepted");
    assert_eq!(second["id"], first["id"]);
    let mut charging = event(
        "Updated",
        "ChargingStateChanged",
        1,
        "TX-K55",
        json!({"chargingState": "Charging"}),
        json!({}),
    );
    charging["evse"] = json!({"id": 1, "connectorId": 1});
    assert_eq!(ws.result("TransactionEvent", charging), json!({}));
    // Watts are converted: 11 kW on three phases at 230 V is within 16 A.
    let answer = ws.result("NotifyEVChargingSchedule", ev_schedule(1, "W", 11_000.0));
    assert_eq!(answer, json!({"status": "Accepted"}));
    let state = charging_profiles(&server, "CS-K55");
    let reasons: Vec<&Value> = state["charging_profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["reason"])
        .collect();
    assert_eq!(
        reasons,
        [&json!("ChargingNeeds"), &json!("ScheduleRejected")],
        "{state}"
    );
    ws.close();
}

/// TC_K_57_CSMS (K17, renegotiation initiated by the EV): a second NotifyEVChargingNeeds
/// during the transaction (the EV now takes at most 10 A) is Accepted and a new TxProfile
/// follows within the new needs.
fn tc_k_57_renegotiation_initiated_by_ev(binary: &str) {
    let server = Server::start(binary, &["--site-limit-amps", "24"]);
    let mut ws = booted(&server, "CS-K57");
    status(&mut ws, 1, 1, "Available");
    in_transaction(&mut ws, 1, "TX-K57", "Charging");
    assert_eq!(
        ws.result("NotifyEVChargingNeeds", ac_needs(1, 32))["status"],
        "Accepted"
    );
    let first = expect_tx_profile(&mut ws, 1, "TX-K57", "A", 24.0, "Accepted");
    assert_eq!(
        ws.result("NotifyEVChargingSchedule", ev_schedule(1, "A", 24.0))["status"],
        "Accepted"
    );
    assert_eq!(
        ws.result("NotifyEVChargingNeeds", ac_needs(1, 10))["status"],
        "Accepted"
    );
    let second = expect_tx_profile(&mut ws, 1, "TX-K57", "A", 10.0, "Accepted");
    assert_eq!(second["id"], first["id"]);
    // The schedule that fitted the first profile is over the new one: Rejected, and the
    // profile is sent again; one within it is Accepted.
    assert_eq!(
        ws.result("NotifyEVChargingSchedule", ev_schedule(1, "A", 24.0))["status"],
        "Rejected"
    );
    expect_tx_profile(&mut ws, 1, "TX-K57", "A", 10.0, "Accepted");
    assert_eq!(
        ws.result("NotifyEVChargingSchedule", ev_schedule(1, "A", 10.0))["status"],
        "Accepted"
    );
    ws.close();
}

/// Changes the site limit of `identity` through the admin API while the station answers
/// each SetChargingProfile that follows with `Accepted`; checks each against `expected`
/// (evse, transaction, limit in A) and returns the admin API's answer.
fn put_site_limit(
    server: &Server,
    ws: &mut Ws,
    identity: &str,
    body: Value,
    expected: &[(u32, &str, f64)],
) -> (u16, Value) {
    let admin_addr = server.admin;
    let path = format!("/chargepoints/{identity}/site-limit");
    let request = std::thread::spawn(move || http(admin_addr, "PUT", &path, &body.to_string()));
    for (evse, tx, limit) in expected {
        expect_tx_profile(ws, *evse, tx, "A", *limit, "Accepted");
    }
    let (status, text) = request.join().expect("the admin request");
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// TC_K_58_CSMS (K16, renegotiation initiated by the CSMS): the operator lowers the site
/// limit on the admin API and the CSMS sends the EVSE's transaction a new TxProfile; the
/// EV's schedule within it is Accepted. When a second EVSE starts charging, the limit is
/// shared and the first gets a new profile; a new limit is shared between both (one
/// SetChargingProfile each, one after the other, one admin answer); when the second ends,
/// the first gets the whole limit again.
fn tc_k_58_renegotiation_initiated_by_csms(binary: &str) {
    let server = Server::start(binary, &[]);
    let mut ws = booted(&server, "CS-K58");
    status(&mut ws, 1, 1, "Available");
    in_transaction(&mut ws, 1, "TX-K58", "Charging");
    let (status_code, body) = put_site_limit(
        &server,
        &mut ws,
        "CS-K58",
        json!({"amps": 16}),
        &[(1, "TX-K58", 16.0)],
    );
    assert_eq!(status_code, 200, "{body}");
    assert_eq!(body["result"], json!({"status": "Accepted"}), "{body}");
    let answer = ws.result("NotifyEVChargingSchedule", ev_schedule(1, "A", 16.0));
    assert_eq!(answer, json!({"status": "Accepted"}));
    let (_, limit) = admin(&server, "GET", "/chargepoints/CS-K58/site-limit", "");
    assert_eq!(
        limit["site_limit"],
        json!({"amps": 16.0, "watts": null}),
        "{limit}"
    );
    assert_eq!(limit["default"], Value::Null, "{limit}");
    // A second EVSE in transaction: the 16 A are shared now, and EVSE 1's profile follows
    // that TransactionEvent's answer at once (8 A); EVSE 2 has no profile of ours yet.
    in_transaction(&mut ws, 2, "TX-K58-2", "Charging");
    expect_tx_profile(&mut ws, 1, "TX-K58", "A", 8.0, "Accepted");
    // A new limit, 20 A: 10 A each, two CALLs one after the other, one admin answer.
    let (status_code, body) = put_site_limit(
        &server,
        &mut ws,
        "CS-K58",
        json!({"amps": 20}),
        &[(1, "TX-K58", 10.0), (2, "TX-K58-2", 10.0)],
    );
    assert_eq!(status_code, 200, "{body}");
    assert_eq!(
        body["result"]["results"],
        json!([{"status": "Accepted"}, {"status": "Accepted"}]),
        "{body}"
    );
    // EVSE 2's transaction ends: EVSE 1 gets the whole 20 A again.
    let mut ended = event(
        "Ended",
        "EVDeparted",
        1,
        "TX-K58-2",
        json!({"stoppedReason": "EVDisconnected"}),
        json!({}),
    );
    ended["evse"] = json!({"id": 2, "connectorId": 1});
    assert_eq!(ws.result("TransactionEvent", ended), json!({}));
    expect_tx_profile(&mut ws, 1, "TX-K58", "A", 20.0, "Accepted");
    let state = charging_profiles_answered(&server, "CS-K58");
    let sent = state["charging_profiles"].as_array().unwrap();
    assert_eq!(sent.len(), 5, "{state}");
    assert!(
        sent.iter()
            .all(|p| p["answer"] == "Accepted" && p["reason"] == "Renegotiation"),
        "{state}"
    );
    // A bad limit changes nothing.
    for bad in [r#"{"amps":0}"#, r#"{"watts":"many"}"#, "{}", "not json"] {
        let (status_code, _) = admin(&server, "PUT", "/chargepoints/CS-K58/site-limit", bad);
        assert_eq!(status_code, 400, "{bad}");
    }
    // Back to the default (none): no limit and no EV needs, nothing to send.
    let (status_code, body) = admin(&server, "DELETE", "/chargepoints/CS-K58/site-limit", "");
    assert_eq!(status_code, 200, "{body}");
    assert_eq!(body["site_limit"], Value::Null, "{body}");
    assert_eq!(body["renegotiated"], 0, "{body}");
    assert_date_time(&ws.result("Heartbeat", json!({}))["currentTime"]);
    let (status_code, _) = admin(&server, "GET", "/chargepoints/NOBODY/charging-profiles", "");
    assert_eq!(status_code, 404);
    ws.close();
}

/// TC_K_59_CSMS (K16 then K15): after the CSMS renegotiated (`POST .../renegotiate`), the
/// station sends the EV's charging needs again; they are Accepted and another TxProfile
/// follows.
fn tc_k_59_renegotiation_by_csms_then_charging_needs(binary: &str) {
    let server = Server::start(binary, &["--site-limit-amps", "20"]);
    let mut ws = booted(&server, "CS-K59");
    status(&mut ws, 1, 1, "Available");
    in_transaction(&mut ws, 1, "TX-K59", "Charging");
    let composite = command(
        &server,
        &mut ws,
        "CS-K59",
        "GetCompositeSchedule",
        json!({"duration": 3600, "evseId": 1}),
        Answer::Result(json!({"status": "Rejected"})),
    );
    assert_eq!(composite.status, 200, "{}", composite.body);
    let admin_addr = server.admin;
    let request = std::thread::spawn(move || {
        http(admin_addr, "POST", "/chargepoints/CS-K59/renegotiate", "")
    });
    let first = expect_tx_profile(&mut ws, 1, "TX-K59", "A", 20.0, "Accepted");
    let (status_code, text) = request.join().unwrap();
    assert_eq!(status_code, 200, "{text}");
    assert_eq!(
        ws.result("NotifyEVChargingNeeds", ac_needs(1, 16))["status"],
        "Accepted"
    );
    let second = expect_tx_profile(&mut ws, 1, "TX-K59", "A", 16.0, "Accepted");
    assert_eq!(second["id"], first["id"]);
    // The operator clears it (the generic command route): Accepted drops it from force.
    let id = first["id"].clone();
    command(
        &server,
        &mut ws,
        "CS-K59",
        "ClearChargingProfile",
        json!({"chargingProfileId": id}),
        Answer::Result(json!({"status": "Accepted"})),
    )
    .assert_result(
        &json!({"chargingProfileId": id}),
        &json!({"status": "Accepted"}),
    );
    let state = charging_profiles(&server, "CS-K59");
    let sent = state["charging_profiles"].as_array().unwrap();
    assert_eq!(sent.len(), 2, "{state}");
    assert!(sent.iter().all(|p| p["cleared"] == true), "{state}");
    ws.close();
}

/// K15 on OCPP 2.1: the same profile from the same policy; needs without a transaction get
/// 2.1's own answer, NoChargingProfile.
fn k15_on_ocpp_2_1(binary: &str) {
    let server = Server::start(binary, &["--site-limit-watts", "11000"]);
    let mut ws = connect(&server, "CS-K21", "ocpp2.1");
    let boot = ws.result("BootNotification", boot_payload("PowerUp"));
    assert_eq!(boot["status"], "Accepted");
    let answer = ws.result("NotifyEVChargingNeeds", ac_needs(1, 32));
    assert_eq!(answer, json!({"status": "NoChargingProfile"}));
    in_transaction(&mut ws, 1, "TX-K21", "EVConnected");
    assert_eq!(
        ws.result("NotifyEVChargingNeeds", ac_needs(1, 32))["status"],
        "Accepted"
    );
    let (id, action, payload) = ws.expect_call();
    assert_eq!(action, "SetChargingProfile");
    let schedule = &payload["chargingProfile"]["chargingSchedule"][0];
    assert_eq!(
        payload["chargingProfile"]["transactionId"], "TX-K21",
        "{payload}"
    );
    assert_eq!(schedule["chargingRateUnit"], "W", "{payload}");
    assert_eq!(
        schedule["chargingSchedulePeriod"][0]["limit"], 11000.0,
        "{payload}"
    );
    ws.reply(&id, json!({"status": "Accepted"}));
    let answer = ws.result("NotifyEVChargingSchedule", ev_schedule(1, "W", 22_000.0));
    assert_eq!(answer, json!({"status": "Rejected"}));
    let (id, action, _) = ws.expect_call();
    assert_eq!(action, "SetChargingProfile");
    ws.reply(&id, json!({"status": "Rejected"}));
    assert_date_time(&ws.result("Heartbeat", json!({}))["currentTime"]);
    let state = charging_profiles_answered(&server, "CS-K21");
    assert_eq!(
        state["charging_profiles"][1]["answer"], "Rejected",
        "{state}"
    );
    ws.close();
}

/// The Plug & Charge cases' station: booted, an EV connected on EVSE 1 before
/// authorization (the reusable state EVConnectedPreSession), transaction `tx`.
fn ev_connected_pre_session(server: &Server, identity: &str, tx: &str) -> Ws {
    let mut ws = booted(server, identity);
    status(&mut ws, 1, 1, "Occupied");
    let started = event(
        "Started",
        "CablePluggedIn",
        0,
        tx,
        json!({"chargingState": "EVConnected"}),
        json!({}),
    );
    assert_eq!(ws.result("TransactionEvent", started), json!({}));
    ws
}

/// `iso15118CertificateHashData` for a contract certificate of `pki` (SHA256, hex, the
/// responder URL of its AIA).
fn hash_data(pki: &ocsp_responder::Pki, leaf: &ocsp_responder::Issued) -> Value {
    use ocpp_reference_csms::ocsp::{HashAlgorithm, OcspRequestData};
    let data =
        OcspRequestData::for_certificate(&leaf.der(), &pki.sub_ca.der(), HashAlgorithm::Sha256)
            .expect("hash data");
    let (name, key, serial) = data.hex_fields();
    json!([{"hashAlgorithm": "SHA256", "issuerNameHash": name, "issuerKeyHash": key,
            "serialNumber": serial, "responderURL": data.responder_url}])
}

const EMAID: &str = "DE-ABC-C12345-6";

fn emaid() -> Value {
    json!({"idToken": EMAID, "type": "eMAID"})
}

/// The rest of TC_C_50/52 after an Accepted Authorize: TransactionEvent (Authorized) with
/// the eMAID is Accepted, then the energy transfer starts (EnergyTransferStarted).
fn authorized_then_charging(ws: &mut Ws, tx: &str) {
    let authorized = event(
        "Updated",
        "Authorized",
        1,
        tx,
        json!({"chargingState": "EVConnected"}),
        json!({"idToken": emaid()}),
    );
    let answer = ws.result("TransactionEvent", authorized);
    assert_eq!(answer["idTokenInfo"]["status"], "Accepted", "{answer}");
    let charging = event(
        "Updated",
        "ChargingStateChanged",
        2,
        tx,
        json!({"chargingState": "Charging"}),
        json!({}),
    );
    assert_eq!(ws.result("TransactionEvent", charging), json!({}));
}

/// TC_C_50_CSMS, Authorization using Contract Certificates 15118, Online, Local validation,
/// Accepted (C07.FR.04): Authorize with the eMAID and the contract certificate's hash data;
/// the CSMS asks the responder the hash data names (`openssl ocsp`, which knows the
/// certificate as valid), verifies the signed answer against the MO root and answers
/// Accepted / certificateStatus Accepted; the transaction is then authorized.
fn tc_c_50_contract_certificate_hash_data_accepted(binary: &str) {
    if !ocsp_responder::openssl_available() {
        return;
    }
    let mut pki = ocsp_responder::Pki::new("c50");
    let leaf = pki.issue("contract", EMAID);
    let _responder = pki.responder(None);
    let root = pki.root.pem.display().to_string();
    let server = Server::start(binary, &["--mo-root", &root]);
    let mut ws = ev_connected_pre_session(&server, "CS-C50", "TX-C50");
    let authorize =
        json!({"idToken": emaid(), "iso15118CertificateHashData": hash_data(&pki, &leaf)});
    let answer = ws.result("Authorize", authorize);
    assert_eq!(answer["idTokenInfo"]["status"], "Accepted", "{answer}");
    assert_eq!(answer["certificateStatus"], "Accepted", "{answer}");
    authorized_then_charging(&mut ws, "TX-C50");
    ws.close();
}

/// TC_C_51_CSMS, Authorization using Contract Certificates 15118, Online, Local validation,
/// Rejected (C07.FR.16): the responder knows the contract certificate as revoked, so the
/// token is Invalid and certificateStatus CertificateRevoked. A contract whose responder
/// cannot be reached is not Accepted either.
fn tc_c_51_contract_certificate_revoked(binary: &str) {
    if !ocsp_responder::openssl_available() {
        return;
    }
    let mut pki = ocsp_responder::Pki::new("c51");
    let leaf = pki.issue("contract", EMAID);
    pki.revoke(&leaf);
    let root = pki.root.pem.display().to_string();
    let server = Server::start(binary, &["--mo-root", &root]);
    let mut ws = ev_connected_pre_session(&server, "CS-C51", "TX-C51");
    // No responder yet: no status to be had.
    let authorize =
        json!({"idToken": emaid(), "iso15118CertificateHashData": hash_data(&pki, &leaf)});
    let answer = ws.result("Authorize", authorize.clone());
    assert_eq!(answer["idTokenInfo"]["status"], "Invalid", "{answer}");
    assert_eq!(
        answer["certificateStatus"], "NoCertificateAvailable",
        "{answer}"
    );
    let _responder = pki.responder(None);
    let answer = ws.result("Authorize", authorize);
    assert_eq!(answer["idTokenInfo"]["status"], "Invalid", "{answer}");
    assert_eq!(
        answer["certificateStatus"], "CertificateRevoked",
        "{answer}"
    );
    ws.close();
}

/// TC_C_52_CSMS, Authorization using Contract Certificates 15118 - Online - Central
/// validation - Accepted (C07.FR.04, C07.FR.05): the station sends the contract chain (leaf
/// and sub-CA, PEM) and no hash data; the CSMS checks the chain up to the MO root and the
/// validity, takes the responder from the leaf's AIA, computes the CertID and asks it:
/// Accepted. A chain that does not reach the MO root is CertChainError.
fn tc_c_52_contract_certificate_central_validation(binary: &str) {
    if !ocsp_responder::openssl_available() {
        return;
    }
    let mut pki = ocsp_responder::Pki::new("c52");
    let leaf = pki.issue("contract", EMAID);
    let _responder = pki.responder(None);
    let root = pki.root.pem.display().to_string();
    let server = Server::start(binary, &["--mo-root", &root]);
    let mut ws = ev_connected_pre_session(&server, "CS-C52", "TX-C52");
    let chain = format!("{}{}", leaf.pem_text(), pki.sub_ca.pem_text());
    let answer = ws.result(
        "Authorize",
        json!({"idToken": emaid(), "certificate": chain}),
    );
    assert_eq!(answer["idTokenInfo"]["status"], "Accepted", "{answer}");
    assert_eq!(answer["certificateStatus"], "Accepted", "{answer}");
    authorized_then_charging(&mut ws, "TX-C52");
    let stranger = pki.stranger().pem_text();
    let answer = ws.result(
        "Authorize",
        json!({"idToken": emaid(), "certificate": stranger}),
    );
    assert_eq!(answer["idTokenInfo"]["status"], "Invalid", "{answer}");
    assert_eq!(answer["certificateStatus"], "CertChainError", "{answer}");
    ws.close();
}

/// TC_M_24_CSMS, Get Charging Station Certificate status - Success (M06): the CSMS makes the
/// OCSP request the station describes and relays the DER response (base64) with Accepted;
/// `openssl ocsp` reads it back as good for that serial. A responder that cannot be reached
/// gives Failed with a reason.
fn tc_m_24_get_certificate_status(binary: &str) {
    use base64::Engine as _;
    if !ocsp_responder::openssl_available() {
        return;
    }
    let mut pki = ocsp_responder::Pki::new("m24");
    let v2g = pki.issue("v2g", "CS-M24");
    let _responder = pki.responder(None);
    let root = pki.root.pem.display().to_string();
    let server = Server::start(binary, &["--v2g-root", &root]);
    let mut ws = booted(&server, "CS-M24");
    let data = hash_data(&pki, &v2g)[0].clone();
    let answer = ws.result(
        "GetCertificateStatus",
        json!({"ocspRequestData": data.clone()}),
    );
    assert_eq!(answer["status"], "Accepted", "{answer}");
    let der = base64::engine::general_purpose::STANDARD
        .decode(answer["ocspResult"].as_str().expect("ocspResult"))
        .expect("base64");
    let path = pki.dir.join("relayed.der");
    std::fs::write(&path, der).expect("write");
    let output = std::process::Command::new("openssl")
        .args(["ocsp", "-resp_text", "-noverify", "-respin"])
        .arg(&path)
        .output()
        .expect("openssl");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("Cert Status: good"), "{text}");
    assert!(
        text.contains(&format!("Serial Number: {}", v2g.serial)),
        "{text}"
    );

    let mut unreachable = data;
    unreachable["responderURL"] =
        json!(format!("http://127.0.0.1:{}/", ocsp_responder::free_port()));
    let answer = ws.result(
        "GetCertificateStatus",
        json!({"ocspRequestData": unreachable}),
    );
    assert_eq!(answer["status"], "Failed", "{answer}");
    assert_eq!(answer["statusInfo"]["reasonCode"], "OCSPFailed", "{answer}");
    assert!(answer.get("ocspResult").is_none(), "{answer}");
    ws.close();
}

/// Get15118EVCertificate with `action`, through a contract-certificate service: Accepted
/// with the service's exiResponse, which got the station's EXI request and schema version.
fn contract_certificate_through_service(binary: &str, identity: &str, action: &str) {
    let service = contract_service::ContractService::start(true);
    let server = Server::start(binary, &["--contract-certificate-service", &service.url]);
    let mut ws = booted(&server, identity);
    let exi = base64(format!("{action}-REQ-{identity}").as_bytes());
    let schema = "urn:iso:15118:2:2013:MsgDef";
    let request = json!({"iso15118SchemaVersion": schema, "action": action, "exiRequest": exi});
    let answer = ws.result("Get15118EVCertificate", request);
    assert_eq!(answer["status"], "Accepted", "{answer}");
    assert_eq!(
        answer["exiResponse"],
        contract_service::exi_response_for(action, &exi)
    );
    let received = service.received();
    assert_eq!(received.len(), 1, "{received:?}");
    assert_eq!(received[0]["action"], action);
    assert_eq!(received[0]["iso15118SchemaVersion"], schema);
    assert_eq!(received[0]["exiRequest"], exi);
    ws.close();
}

/// TC_M_26_CSMS, Certificate Installation EV - Success (M01): Install forwarded, Accepted
/// with the exiResponse. Without a service, or when it fails, the answer is Failed.
fn tc_m_26_certificate_installation_ev(binary: &str) {
    contract_certificate_through_service(binary, "CS-M26", "Install");
    let request = json!({"iso15118SchemaVersion": "urn:iso:15118:2:2013:MsgDef",
                         "action": "Install", "exiRequest": "AAAA"});
    let failing = contract_service::ContractService::start(false);
    let server = Server::start(binary, &["--contract-certificate-service", &failing.url]);
    let mut ws = booted(&server, "CS-M26-F");
    let answer = ws.result("Get15118EVCertificate", request.clone());
    assert_eq!(answer["status"], "Failed", "{answer}");
    ws.close();
    let server = Server::start(binary, &[]);
    let mut ws = booted(&server, "CS-M26-N");
    let answer = ws.result("Get15118EVCertificate", request);
    assert_eq!(answer["status"], "Failed", "{answer}");
    assert_eq!(answer["statusInfo"]["reasonCode"], "NoService", "{answer}");
    ws.close();
}

/// TC_M_28_CSMS, Certificate Update EV - Success (M02): Update forwarded, Accepted with the
/// exiResponse.
fn tc_m_28_certificate_update_ev(binary: &str) {
    contract_certificate_through_service(binary, "CS-M28", "Update");
}

/// The OCSP round trip of a C07 Authorize runs off the I/O loop: while its responder keeps
/// silent, another station's Heartbeat is answered at once; the Authorize is answered when
/// the check gives up (its timeout), not Accepted.
fn pnc_ocsp_check_does_not_block_other_stations(binary: &str) {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", silent.local_addr().unwrap());
    let _silent = std::thread::spawn(move || {
        let held: Vec<_> = silent.incoming().take(1).collect();
        std::thread::sleep(Duration::from_secs(8));
        drop(held);
    });
    let server = Server::start(binary, &[]);
    let mut waiting = booted(&server, "CS-PNC-A");
    let mut other = booted(&server, "CS-PNC-B");
    let data = json!([{"hashAlgorithm": "SHA256", "issuerNameHash": "00", "issuerKeyHash": "00",
                       "serialNumber": "01", "responderURL": url}]);
    let authorize = json!([2, "pnc-1", "Authorize",
                           {"idToken": emaid(), "iso15118CertificateHashData": data}]);
    let sent = Instant::now();
    waiting.send_text(&authorize.to_string());
    std::thread::sleep(Duration::from_millis(300));
    let asked = Instant::now();
    assert_date_time(&other.result("Heartbeat", json!({}))["currentTime"]);
    assert!(
        asked.elapsed() < Duration::from_secs(1),
        "{:?}",
        asked.elapsed()
    );
    let answer = waiting.recv_json();
    assert_eq!(answer[1], "pnc-1", "{answer}");
    assert_eq!(answer[2]["idTokenInfo"]["status"], "Invalid", "{answer}");
    assert_eq!(
        answer[2]["certificateStatus"], "NoCertificateAvailable",
        "{answer}"
    );
    assert!(
        sent.elapsed() >= Duration::from_secs(3),
        "{:?}",
        sent.elapsed()
    );
    waiting.close();
    other.close();
}

/// OCPP 2.1 shares the Plug & Charge handlers: Authorize with hash data (OCSP good), the
/// contract certificate's status relayed by GetCertificateStatus, Get15118EVCertificate
/// through the service.
fn pnc_ocpp_2_1_same_handlers(binary: &str) {
    if !ocsp_responder::openssl_available() {
        return;
    }
    let mut pki = ocsp_responder::Pki::new("v21");
    let leaf = pki.issue("contract", EMAID);
    let _responder = pki.responder(None);
    let service = contract_service::ContractService::start(true);
    let root = pki.root.pem.display().to_string();
    let server = Server::start(
        binary,
        &[
            "--mo-root",
            &root,
            "--v2g-root",
            &root,
            "--contract-certificate-service",
            &service.url,
        ],
    );
    let mut ws = connect(&server, "CS-PNC-21", "ocpp2.1");
    let boot = ws.result("BootNotification", boot_payload("PowerUp"));
    assert_eq!(boot["status"], "Accepted");
    let data = hash_data(&pki, &leaf);
    let answer = ws.result(
        "Authorize",
        json!({"idToken": emaid(), "iso15118CertificateHashData": data.clone()}),
    );
    assert_eq!(answer["idTokenInfo"]["status"], "Accepted", "{answer}");
    assert_eq!(answer["certificateStatus"], "Accepted", "{answer}");
    let answer = ws.result(
        "GetCertificateStatus",
        json!({"ocspRequestData": data[0].clone()}),
    );
    assert_eq!(answer["status"], "Accepted", "{answer}");
    assert!(
        answer["ocspResult"].as_str().is_some_and(|r| !r.is_empty()),
        "{answer}"
    );
    let request = json!({"iso15118SchemaVersion": "urn:iso:std:iso:15118:-20:CommonMessages",
                         "action": "Install", "exiRequest": "AAAA",
                         "maximumContractCertificateChains": 2});
    let answer = ws.result("Get15118EVCertificate", request);
    assert_eq!(answer["status"], "Accepted", "{answer}");
    assert_eq!(
        answer["exiResponse"],
        contract_service::exi_response_for("Install", "AAAA")
    );
    ws.close();
}

on_both_servers!(
    tc_a_01_basic_auth_valid,
    tc_a_02_basic_auth_username_not_identity,
    tc_a_03_basic_auth_invalid_password,
    tc_a_09_password_update_accepted,
    tc_a_10_password_update_rejected,
    tc_b_01_cold_boot_accepted,
    tc_b_02_cold_boot_pending,
    tc_b_06_get_variables_single_value,
    tc_b_07_get_variables_multiple_values,
    tc_b_09_set_variables_single_value,
    tc_b_10_set_variables_multiple_values,
    tc_b_12_get_base_report_configuration_inventory,
    tc_b_13_get_base_report_full_inventory,
    tc_b_14_get_base_report_summary_inventory,
    tc_b_20_reset_without_transaction_on_idle,
    tc_b_21_reset_with_transaction_on_idle,
    tc_b_22_reset_with_transaction_immediate,
    tc_b_25_reset_evse_without_transaction,
    tc_b_30_security_error_while_pending,
    tc_b_30_security_error_while_rejected,
    tc_b_31_pending_trigger_message_boot_notification,
    tc_b_58_no_common_subprotocol_rejected_400,
    tc_b_58_no_common_subprotocol_accept_then_close,
    tc_c_02_authorization_invalid_unknown,
    tc_c_06_authorization_blocked,
    tc_c_07_authorization_expired,
    tc_c_37_clear_cache_accepted,
    tc_c_38_clear_cache_rejected,
    tc_c_39_authorization_by_group_id,
    tc_c_49_master_pass_without_ui,
    tc_c_50_contract_certificate_hash_data_accepted,
    tc_c_51_contract_certificate_revoked,
    tc_c_52_contract_certificate_central_validation,
    tc_e_03_local_start_cable_plugin_first,
    tc_e_04_local_start_authorization_first,
    tc_e_21_stop_authorized_remote,
    tc_e_30_check_transaction_status_ongoing_without_messages,
    tc_e_34_check_transaction_status_without_transaction_id,
    tc_e_53_seq_no_restarts_at_0_for_a_new_transaction,
    tc_e_31_seq_no_gap_asks_get_transaction_status,
    tc_i_01_running_cost_cost_updated,
    tc_i_02_final_total_cost,
    tariff_per_station_and_none,
    tc_f_01_remote_start_cable_plugin_first,
    tc_f_02_remote_start_first,
    tc_f_06_unlock_connector_without_transaction,
    tc_f_11_trigger_meter_values_specific_evse,
    tc_f_12_trigger_meter_values_all_evse,
    tc_f_13_trigger_transaction_event_specific_evse,
    tc_f_15_trigger_log_status_notification_idle,
    tc_f_18_trigger_firmware_status_notification_idle,
    tc_f_20_trigger_message_heartbeat,
    tc_f_23_trigger_status_notification_available,
    tc_f_24_trigger_status_notification_occupied,
    tc_f_27_trigger_message_not_implemented,
    tc_g_03_change_availability_evse_inoperative,
    tc_g_04_change_availability_evse_operative,
    tc_g_05_change_availability_station_inoperative,
    tc_g_06_change_availability_station_operative,
    tc_g_07_change_availability_connector_inoperative,
    tc_g_08_change_availability_connector_operative,
    tc_g_11_change_availability_evse_with_ongoing_transaction,
    tc_g_14_change_availability_station_with_ongoing_transaction,
    tc_g_17_change_availability_connector_with_ongoing_transaction,
    tc_j_01_clock_aligned_meter_values_no_transaction,
    tc_j_02_clock_aligned_meter_values_transaction_ongoing,
    tc_k_53_load_leveling_needs_accepted_then_tx_profile,
    tc_k_55_ev_schedule_exceeding_limits_rejected_and_renegotiated,
    tc_k_57_renegotiation_initiated_by_ev,
    tc_k_58_renegotiation_initiated_by_csms,
    tc_k_59_renegotiation_by_csms_then_charging_needs,
    k15_on_ocpp_2_1,
    tc_m_24_get_certificate_status,
    tc_m_26_certificate_installation_ev,
    tc_m_28_certificate_update_ev,
    pnc_ocsp_check_does_not_block_other_stations,
    pnc_ocpp_2_1_same_handlers,
    tc_p_02_data_transfer_unknown_vendor,
    tc_p_03_receive_custom_data,
    wrong_calls_get_call_errors,
);
