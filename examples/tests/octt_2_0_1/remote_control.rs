//! Block F, remote control: remote start, stop (and E21 stop authorized remotely), unlock,
//! TriggerMessage.

use super::*;

/// Remote start; `cable_first`: TC_F_01 (plugged in before the command), else TC_F_02. The
/// CSMS sends RequestStartTransaction (Accepted); the station's Started / Updated event with
/// triggerReason RemoteStart carries the remoteStartId and is answered with the token's info.
fn remote_start(binary: &str, cable_first: bool) {
    let server = ServerProcess::start(binary, &[]);
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
pub(crate) fn tc_f_01_remote_start_cable_plugin_first(binary: &str) {
    remote_start(binary, true);
}

/// TC_F_02_CSMS, Remote start transaction - Remote start first (AuthorizeRemoteStart is true:
/// the CSMS answers the station's event with the token's info).
pub(crate) fn tc_f_02_remote_start_first(binary: &str) {
    remote_start(binary, false);
}

/// TC_E_21_CSMS, Stop transaction options - StopAuthorized - Remote: RequestStopTransaction,
/// Accepted; the station's Ended event (triggerReason RemoteStop, stoppedReason Remote) is
/// acknowledged and recorded.
pub(crate) fn tc_e_21_stop_authorized_remote(binary: &str) {
    let server = ServerProcess::start(binary, &[]);
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
pub(crate) fn tc_f_06_unlock_connector_without_transaction(binary: &str) {
    let body = json!({"evseId": 1, "connectorId": 1});
    simple_command(
        binary,
        "UnlockConnector",
        body,
        json!({"status": "Unlocked"}),
    );
}

/// TriggerMessage `body`, Accepted; then the station sends `action` with `payload`: answered.
fn trigger(binary: &str, body: Value, action: &str, payload: Value) -> (ServerProcess, Value) {
    let server = ServerProcess::start(binary, &[]);
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
pub(crate) fn tc_f_20_trigger_message_heartbeat(binary: &str) {
    let body = json!({"requestedMessage": "Heartbeat"});
    let (_server, answer) = trigger(binary, body, "Heartbeat", json!({}));
    assert_date_time(&answer["currentTime"]);
}

/// TC_F_23_CSMS, Trigger message - StatusNotification - Specific EVSE - Available.
pub(crate) fn tc_f_23_trigger_status_notification_available(binary: &str) {
    let body = json!({"requestedMessage": "StatusNotification",
                      "evse": {"id": 1, "connectorId": 1}});
    let payload = status_payload(1, 1, "Available");
    let (server, answer) = trigger(binary, body, "StatusNotification", payload);
    assert_eq!(answer, json!({}));
    let state = charge_point_state(&server, "CS-TRIG");
    assert_eq!(state["connectors"]["1/1"]["status"], "Available");
}

/// TC_F_11_CSMS, Trigger message - MeterValues - Specific EVSE.
pub(crate) fn tc_f_11_trigger_meter_values_specific_evse(binary: &str) {
    let body = json!({"requestedMessage": "MeterValues", "evse": {"id": 1}});
    let payload = with(json!({"evseId": 1}), energy(100));
    let (_server, answer) = trigger(binary, body, "MeterValues", payload);
    assert_eq!(answer, json!({}));
}

/// TC_F_12_CSMS, Trigger message - MeterValues - All EVSE: one MeterValues per EVSE.
pub(crate) fn tc_f_12_trigger_meter_values_all_evse(binary: &str) {
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
pub(crate) fn tc_f_13_trigger_transaction_event_specific_evse(binary: &str) {
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
pub(crate) fn tc_f_15_trigger_log_status_notification_idle(binary: &str) {
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
pub(crate) fn tc_f_18_trigger_firmware_status_notification_idle(binary: &str) {
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
pub(crate) fn tc_f_24_trigger_status_notification_occupied(binary: &str) {
    let body =
        json!({"requestedMessage": "StatusNotification", "evse": {"id": 1, "connectorId": 1}});
    let payload = status_payload(1, 1, "Occupied");
    let (server, answer) = trigger(binary, body, "StatusNotification", payload);
    assert_eq!(answer, json!({}));
    let state = charge_point_state(&server, "CS-TRIG");
    assert_eq!(state["connectors"]["1/1"]["status"], "Occupied");
}

/// TC_F_27_CSMS, Trigger message - NotImplemented: the station's answer reaches the operator.
pub(crate) fn tc_f_27_trigger_message_not_implemented(binary: &str) {
    let body = json!({"requestedMessage": "PublishFirmwareStatusNotification"});
    let answer = json!({"status": "NotImplemented"});
    simple_command(binary, "TriggerMessage", body, answer);
}
