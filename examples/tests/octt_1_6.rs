//! OCTT CSMS test cases of OCPP 1.6 (`TC_nnn_CSMS`) that the example CSMS implements, end to
//! end against both servers: each case is a `fn tc_<id>_<what>(binary)`, run as
//! `mio_server::tc_...` and `tokio_server::tc_...`. The test runs the charge point's side of
//! the case's scenario on a real loopback socket, with the operator's manual actions done
//! through the admin API, and checks what the CSMS puts on the wire. The case ids and their
//! meaning, the sources and what is not covered are in `examples/README.md`.

mod common;
#[macro_use]
mod octt;

use common::*;
use octt::*;
use serde_json::json;

const V16: &str = "ocpp1.6";

/// Connects `identity` and boots it (Accepted).
fn booted(server: &ServerProcess, identity: &str) -> Ws {
    let mut ws = connect(server, identity, V16);
    let boot = ws.result(
        "BootNotification",
        json!({"chargePointVendor": "ACME", "chargePointModel": "Fast-50"}),
    );
    assert_eq!(boot["status"], "Accepted");
    ws
}

fn status(ws: &mut Ws, connector: u32, status: &str) {
    let payload = json!({"connectorId": connector, "errorCode": "NoError", "status": status});
    assert_eq!(ws.result("StatusNotification", payload), json!({}));
}

/// StartTransaction on connector 1: the answer's payload.
fn start_transaction(ws: &mut Ws, id_tag: &str, meter_start: i64) -> Value {
    let start = ws.result(
        "StartTransaction",
        json!({"connectorId": 1, "idTag": id_tag, "meterStart": meter_start, "timestamp": T0}),
    );
    assert!(start["transactionId"].is_i64(), "{start}");
    start
}

fn tokens(name: &str) -> TempFile {
    TempFile::new(
        name,
        "TAG-OK Accepted GROUP1\nTAG-INVALID Invalid\nTAG-OLD Accepted - 2020-01-01T00:00:00Z\n\
         TAG-BLOCKED Blocked\n",
    )
}

/// TC_001_CSMS, Cold Boot Charge Point: BootNotification Accepted (with the clock and the
/// heartbeat interval), a StatusNotification per connector and for connector 0, Heartbeat.
fn tc_001_cold_boot_accepted(binary: &str) {
    let server = ServerProcess::start(binary, &[]);
    let mut ws = connect(&server, "CP001", V16);
    let boot = ws.result(
        "BootNotification",
        json!({"chargePointVendor": "ACME", "chargePointModel": "Fast-50",
               "chargePointSerialNumber": "SN-001", "firmwareVersion": "1.2.3"}),
    );
    assert_eq!(boot["status"], "Accepted");
    assert_eq!(boot["interval"], 300);
    assert_date_time(&boot["currentTime"]);
    assert_eq!(boot.as_object().unwrap().len(), 3, "{boot}");
    status(&mut ws, 0, "Available");
    status(&mut ws, 1, "Available");
    let heartbeat = ws.result("Heartbeat", json!({}));
    assert_date_time(&heartbeat["currentTime"]);
    let state = charge_point_state(&server, "CP001");
    assert_eq!(state["status"], "Accepted");
    assert_eq!(state["boot"]["serial_number"], "SN-001");
    assert_eq!(state["boot"]["firmware_version"], "1.2.3");
    assert_eq!(state["connectors"]["0"]["status"], "Available");
    assert_eq!(state["connectors"]["1"]["status"], "Available");
    assert!(state["last_heartbeat"].is_string());
    ws.close();
}

/// A local charging session; `plugin_first`: TC_003 (plug, then present the tag), else TC_004_1
/// (tag first).
fn charging_session(binary: &str, plugin_first: bool) {
    let server = ServerProcess::start(binary, &[]);
    let mut ws = booted(&server, "CP003");
    let authorize = |ws: &mut Ws| {
        let answer = ws.result("Authorize", json!({"idTag": "TAG-1"}));
        assert_eq!(answer, json!({"idTagInfo": {"status": "Accepted"}}));
    };
    if plugin_first {
        status(&mut ws, 1, "Preparing");
        authorize(&mut ws);
    } else {
        authorize(&mut ws);
        status(&mut ws, 1, "Preparing");
    }
    let start = start_transaction(&mut ws, "TAG-1", 1000);
    assert_eq!(start["idTagInfo"], json!({"status": "Accepted"}));
    let tx = start["transactionId"].as_i64().unwrap();
    status(&mut ws, 1, "Charging");
    let meter = json!({"connectorId": 1, "transactionId": tx, "meterValue": [{
        "timestamp": "2026-12-01T12:10:00Z",
        "sampledValue": [{"value": "1600", "measurand": "Energy.Active.Import.Register",
                          "unit": "Wh", "context": "Sample.Periodic"}]}]});
    assert_eq!(ws.result("MeterValues", meter), json!({}));
    status(&mut ws, 1, "Finishing");
    let stop = ws.result(
        "StopTransaction",
        json!({"transactionId": tx, "idTag": "TAG-1", "meterStop": 3000,
               "timestamp": "2026-12-01T12:30:00Z", "reason": "Local"}),
    );
    assert_eq!(stop, json!({"idTagInfo": {"status": "Accepted"}}));
    status(&mut ws, 1, "Available");
    let state = charge_point_state(&server, "CP003");
    let transaction = &state["transactions"][0];
    assert_eq!(transaction["id"], tx.to_string());
    assert_eq!(transaction["id_tag"], "TAG-1");
    assert_eq!(transaction["energy_wh"], 2000.0);
    assert_eq!(transaction["stop_reason"], "Local");
    assert!(transaction["ended"].is_string());
    assert_eq!(state["connectors"]["1"]["status"], "Available");
    ws.close();
}

/// TC_003_CSMS, Regular Charging Session - Plugin First.
fn tc_003_regular_charging_session_plugin_first(binary: &str) {
    charging_session(binary, true);
}

/// TC_004_1_CSMS, Regular Charging Session - Identification First.
fn tc_004_1_regular_charging_session_identification_first(binary: &str) {
    charging_session(binary, false);
}

/// Authorize `tag` against the token store: the `idTagInfo` answered.
fn authorize_from_store(binary: &str, tag: &str) -> Value {
    let file = tokens("tokens16");
    let server = ServerProcess::start(binary, &["--tokens", &file.path()]);
    let mut ws = booted(&server, "CP023");
    let answer = ws.result("Authorize", json!({"idTag": tag}));
    ws.close();
    answer["idTagInfo"].clone()
}

/// TC_023_1_CSMS, Start Charging Session - Authorize Invalid: an idTag the store marks
/// Invalid, and one it does not know (1.6 has no Unknown: Invalid too).
fn tc_023_1_authorize_invalid(binary: &str) {
    assert_eq!(
        authorize_from_store(binary, "TAG-INVALID"),
        json!({"status": "Invalid"})
    );
    assert_eq!(
        authorize_from_store(binary, "NOBODY"),
        json!({"status": "Invalid"})
    );
}

/// TC_023_2_CSMS, Start Charging Session - Authorize Expired.
fn tc_023_2_authorize_expired(binary: &str) {
    assert_eq!(
        authorize_from_store(binary, "TAG-OLD"),
        json!({"status": "Expired", "expiryDate": "2020-01-01T00:00:00Z"})
    );
}

/// TC_023_3_CSMS, Start Charging Session - Authorize Blocked.
fn tc_023_3_authorize_blocked(binary: &str) {
    assert_eq!(
        authorize_from_store(binary, "TAG-BLOCKED"),
        json!({"status": "Blocked"})
    );
}

/// TC_024_CSMS, Start Charging Session Lock Failure: the StatusNotification reporting the
/// connector Faulted with ConnectorLockFailure is acknowledged and the error code recorded.
fn tc_024_start_charging_session_lock_failure(binary: &str) {
    let server = ServerProcess::start(binary, &[]);
    let mut ws = booted(&server, "CP024");
    status(&mut ws, 1, "Preparing");
    let faulted =
        json!({"connectorId": 1, "errorCode": "ConnectorLockFailure", "status": "Faulted"});
    assert_eq!(ws.result("StatusNotification", faulted), json!({}));
    let connector = &charge_point_state(&server, "CP024")["connectors"]["1"];
    assert_eq!(connector["status"], "Faulted");
    assert_eq!(connector["error_code"], "ConnectorLockFailure");
    ws.close();
}

/// TC_032_1_CSMS, Power Failure Boot - Stop Transactions: the charge point loses power during
/// a transaction, boots again and sends the StopTransaction (reason PowerLoss) it kept.
fn tc_032_1_power_failure_boot_stop_transactions(binary: &str) {
    let server = ServerProcess::start(binary, &[]);
    let mut ws = booted(&server, "CP032");
    status(&mut ws, 1, "Charging");
    let tx = start_transaction(&mut ws, "TAG-1", 0)["transactionId"].clone();
    drop(ws); // power failure: the TCP connection just goes
    let mut ws = booted(&server, "CP032");
    let stop = ws.result(
        "StopTransaction",
        json!({"transactionId": tx, "meterStop": 500, "timestamp": T0, "reason": "PowerLoss"}),
    );
    assert_eq!(stop, json!({}), "no idTag, no idTagInfo");
    status(&mut ws, 1, "Available");
    let transaction = &charge_point_state(&server, "CP032")["transactions"][0];
    assert_eq!(transaction["stop_reason"], "PowerLoss");
    assert!(transaction["ended"].is_string());
    ws.close();
}

/// TC_037_3_CSMS, Offline Start Transaction - Invalid IdTag - StopTransactionOnInvalidId: a
/// transaction started offline with an idTag the CSMS refuses still gets a transaction id;
/// the charge point then stops it (DeAuthorized), which is accepted.
fn tc_037_3_offline_start_transaction_invalid_id_tag(binary: &str) {
    let file = tokens("tokens16");
    let server = ServerProcess::start(binary, &["--tokens", &file.path()]);
    let mut ws = booted(&server, "CP037");
    let start = start_transaction(&mut ws, "NOBODY", 0);
    assert_eq!(start["idTagInfo"], json!({"status": "Invalid"}));
    let tx = start["transactionId"].clone();
    let stop = ws.result(
        "StopTransaction",
        json!({"transactionId": tx, "meterStop": 0, "timestamp": T0, "reason": "DeAuthorized"}),
    );
    assert_eq!(stop, json!({}));
    let transaction = &charge_point_state(&server, "CP037")["transactions"][0];
    assert_eq!(transaction["stop_reason"], "DeAuthorized");
    ws.close();
}

/// TC_037_1_CSMS, Offline Start Transaction - Valid IdTag: the StartTransaction of a session
/// started offline (an older timestamp) is answered Accepted with a transaction id.
fn tc_037_1_offline_start_transaction_valid_id_tag(binary: &str) {
    let file = tokens("tokens16");
    let server = ServerProcess::start(binary, &["--tokens", &file.path()]);
    let mut ws = booted(&server, "CP037");
    let start = start_transaction(&mut ws, "TAG-OK", 0);
    assert_eq!(
        start["idTagInfo"],
        json!({"status": "Accepted", "parentIdTag": "GROUP1"})
    );
    ws.close();
}

/// TC_064_CSMS, Data Transfer to a Central System: a vendorId the CSMS does not know gets
/// UnknownVendorId (OCPP 1.6 §4.3); the one it knows (`ocpp-ws`) Accepted.
fn tc_064_data_transfer_unknown_vendor(binary: &str) {
    let server = ServerProcess::start(binary, &[]);
    let mut ws = booted(&server, "CP064");
    let unknown = ws.result(
        "DataTransfer",
        json!({"vendorId": "com.example.unknown", "messageId": "Test", "data": "x"}),
    );
    assert_eq!(unknown, json!({"status": "UnknownVendorId"}));
    let known = ws.result("DataTransfer", json!({"vendorId": "ocpp-ws"}));
    assert_eq!(known["status"], "Accepted");
    ws.close();
}

/// Remote start; `plugged_first`: TC_010 (the cable is in before the command), else TC_011_1.
fn remote_start(binary: &str, plugged_first: bool) {
    let server = ServerProcess::start(binary, &[]);
    let mut ws = booted(&server, "CP010");
    if plugged_first {
        status(&mut ws, 1, "Preparing");
    }
    let body = json!({"connectorId": 1, "idTag": "TAG-1"});
    let accepted = json!({"status": "Accepted"});
    command(
        &server,
        &mut ws,
        "CP010",
        "RemoteStartTransaction",
        body.clone(),
        Answer::Result(accepted.clone()),
    )
    .assert_result(&body, &accepted);
    if !plugged_first {
        status(&mut ws, 1, "Preparing");
    }
    let start = start_transaction(&mut ws, "TAG-1", 0);
    assert_eq!(start["idTagInfo"]["status"], "Accepted");
    status(&mut ws, 1, "Charging");
    ws.close();
}

/// TC_010_CSMS, Remote Start Charging Session - Cable Plugged in First.
fn tc_010_remote_start_cable_plugged_in_first(binary: &str) {
    remote_start(binary, true);
}

/// TC_011_1_CSMS, Remote Start Charging Session - Remote Start First.
fn tc_011_1_remote_start_first(binary: &str) {
    remote_start(binary, false);
}

/// Remote stop of a running transaction, answered `answer`; returns the transaction's state.
fn remote_stop(binary: &str, answer: &str) -> Value {
    let server = ServerProcess::start(binary, &[]);
    let mut ws = booted(&server, "CP012");
    let tx = start_transaction(&mut ws, "TAG-1", 0)["transactionId"].clone();
    let body = json!({"transactionId": tx});
    let result = json!({"status": answer});
    command(
        &server,
        &mut ws,
        "CP012",
        "RemoteStopTransaction",
        body.clone(),
        Answer::Result(result.clone()),
    )
    .assert_result(&body, &result);
    if answer == "Accepted" {
        let stop = json!({"transactionId": tx, "meterStop": 10, "timestamp": T0,
                          "reason": "Remote", "idTag": "TAG-1"});
        assert_eq!(
            ws.result("StopTransaction", stop)["idTagInfo"]["status"],
            "Accepted"
        );
    }
    let state = charge_point_state(&server, "CP012");
    ws.close();
    state["transactions"][0].clone()
}

/// TC_012_CSMS, Remote Stop Charging Session.
fn tc_012_remote_stop_charging_session(binary: &str) {
    let transaction = remote_stop(binary, "Accepted");
    assert_eq!(transaction["stop_reason"], "Remote");
}

/// TC_028_CSMS, Remote Stop Transaction - Rejected: the CSMS reports the refusal; the
/// transaction goes on.
fn tc_028_remote_stop_rejected(binary: &str) {
    let transaction = remote_stop(binary, "Rejected");
    assert!(transaction["ended"].is_null(), "{transaction}");
}

/// TC_026_CSMS, Remote Start Charging Session - Rejected: the refusal reaches the operator;
/// no transaction is recorded.
fn tc_026_remote_start_rejected(binary: &str) {
    let server = ServerProcess::start(binary, &[]);
    let mut ws = booted(&server, "CP026");
    let body = json!({"idTag": "TAG-1"});
    let rejected = json!({"status": "Rejected"});
    command(
        &server,
        &mut ws,
        "CP026",
        "RemoteStartTransaction",
        body.clone(),
        Answer::Result(rejected.clone()),
    )
    .assert_result(&body, &rejected);
    assert_eq!(
        charge_point_state(&server, "CP026")["transactions"],
        json!([])
    );
    ws.close();
}

/// Reset of `kind` (Hard, Soft), Accepted; the charge point then reboots: a new connection
/// and BootNotification, Accepted.
fn reset(binary: &str, kind: &str) {
    let server = ServerProcess::start(binary, &[]);
    let mut ws = booted(&server, "CP013");
    let body = json!({"type": kind});
    let accepted = json!({"status": "Accepted"});
    command(
        &server,
        &mut ws,
        "CP013",
        "Reset",
        body.clone(),
        Answer::Result(accepted.clone()),
    )
    .assert_result(&body, &accepted);
    ws.close();
    let mut ws = booted(&server, "CP013");
    status(&mut ws, 1, "Available");
    ws.close();
}

/// TC_013_CSMS, Hard Reset.
fn tc_013_hard_reset(binary: &str) {
    reset(binary, "Hard");
}

/// TC_014_CSMS, Soft Reset.
fn tc_014_soft_reset(binary: &str) {
    reset(binary, "Soft");
}

/// A command `action` with `body` answered `answer` by a booted charge point: checks the
/// CALL's payload and the CALLRESULT the admin API reports.
fn simple_command(binary: &str, action: &str, body: Value, answer: Value) {
    let server = ServerProcess::start(binary, &[]);
    let mut ws = booted(&server, "CPCMD");
    command(
        &server,
        &mut ws,
        "CPCMD",
        action,
        body.clone(),
        Answer::Result(answer.clone()),
    )
    .assert_result(&body, &answer);
    // The connection carries on.
    assert_date_time(&ws.result("Heartbeat", json!({}))["currentTime"]);
    ws.close();
}

/// TC_017_1_CSMS, Unlock Connector - No Charging Session (Not Fixed Cable).
fn tc_017_1_unlock_connector_no_charging_session(binary: &str) {
    let body = json!({"connectorId": 1});
    simple_command(
        binary,
        "UnlockConnector",
        body,
        json!({"status": "Unlocked"}),
    );
}

/// TC_018_1_CSMS, Unlock Connector - With Charging Session (Not Fixed Cable): UnlockConnector,
/// Unlocked; the charge point stops the transaction (reason UnlockCommand), accepted and
/// recorded.
fn tc_018_1_unlock_connector_with_charging_session(binary: &str) {
    let server = ServerProcess::start(binary, &[]);
    let mut ws = booted(&server, "CP018");
    let tx = start_transaction(&mut ws, "TAG-1", 0)["transactionId"].clone();
    status(&mut ws, 1, "Charging");
    let body = json!({"connectorId": 1});
    let unlocked = json!({"status": "Unlocked"});
    command(
        &server,
        &mut ws,
        "CP018",
        "UnlockConnector",
        body.clone(),
        Answer::Result(unlocked.clone()),
    )
    .assert_result(&body, &unlocked);
    let stop = json!({"transactionId": tx, "meterStop": 10, "timestamp": T0,
                      "reason": "UnlockCommand"});
    assert_eq!(ws.result("StopTransaction", stop), json!({}));
    status(&mut ws, 1, "Finishing");
    let transaction = &charge_point_state(&server, "CP018")["transactions"][0];
    assert_eq!(transaction["stop_reason"], "UnlockCommand");
    ws.close();
}

/// TC_030_CSMS, Unlock Connector - Unlock Failure.
fn tc_030_unlock_connector_unlock_failure(binary: &str) {
    let body = json!({"connectorId": 1});
    let answer = json!({"status": "UnlockFailed"});
    simple_command(binary, "UnlockConnector", body, answer);
}

/// TC_031_CSMS, Unlock Connector - Unknown Connector (the charge point answers NotSupported).
fn tc_031_unlock_connector_unknown_connector(binary: &str) {
    let body = json!({"connectorId": 9});
    let answer = json!({"status": "NotSupported"});
    simple_command(binary, "UnlockConnector", body, answer);
}

/// TC_019_1_CSMS, Retrieve All Configuration Keys.
fn tc_019_1_retrieve_all_configuration_keys(binary: &str) {
    let answer = json!({"configurationKey": [
        {"key": "HeartbeatInterval", "readonly": false, "value": "300"},
        {"key": "NumberOfConnectors", "readonly": true, "value": "1"}]});
    simple_command(binary, "GetConfiguration", json!({}), answer);
}

/// TC_019_2_CSMS, Retrieve Specific Configuration Key.
fn tc_019_2_retrieve_specific_configuration_key(binary: &str) {
    let body = json!({"key": ["HeartbeatInterval", "NoSuchKey"]});
    let answer = json!({
        "configurationKey": [{"key": "HeartbeatInterval", "readonly": false, "value": "300"}],
        "unknownKey": ["NoSuchKey"]});
    simple_command(binary, "GetConfiguration", body, answer);
}

/// TC_021_CSMS, Change/Set Configuration.
fn tc_021_change_configuration(binary: &str) {
    let body = json!({"key": "MeterValueSampleInterval", "value": "60"});
    simple_command(
        binary,
        "ChangeConfiguration",
        body,
        json!({"status": "Accepted"}),
    );
}

/// TC_040_1_CSMS, Configuration Keys - NotSupported.
fn tc_040_1_configuration_key_not_supported(binary: &str) {
    let body = json!({"key": "NoSuchKey", "value": "1"});
    let answer = json!({"status": "NotSupported"});
    simple_command(binary, "ChangeConfiguration", body, answer);
}

/// TC_040_2_CSMS, Configuration Keys - Invalid Value.
fn tc_040_2_configuration_key_invalid_value(binary: &str) {
    let body = json!({"key": "MeterValueSampleInterval", "value": "-5"});
    simple_command(
        binary,
        "ChangeConfiguration",
        body,
        json!({"status": "Rejected"}),
    );
}

/// TC_061_CSMS, Clear Authorization Data in Authorization Cache.
fn tc_061_clear_authorization_cache(binary: &str) {
    simple_command(
        binary,
        "ClearCache",
        json!({}),
        json!({"status": "Accepted"}),
    );
}

/// TC_054_CSMS, Trigger Message: TriggerMessage StatusNotification for connector 1, Accepted,
/// then the triggered StatusNotification is answered and recorded.
fn tc_054_trigger_message(binary: &str) {
    let server = ServerProcess::start(binary, &[]);
    let mut ws = booted(&server, "CP054");
    let body = json!({"requestedMessage": "StatusNotification", "connectorId": 1});
    let accepted = json!({"status": "Accepted"});
    command(
        &server,
        &mut ws,
        "CP054",
        "TriggerMessage",
        body.clone(),
        Answer::Result(accepted.clone()),
    )
    .assert_result(&body, &accepted);
    status(&mut ws, 1, "Available");
    assert_eq!(
        charge_point_state(&server, "CP054")["connectors"]["1"]["status"],
        "Available"
    );
    ws.close();
}

/// TC_055_CSMS, Trigger Message - Rejected.
fn tc_055_trigger_message_rejected(binary: &str) {
    let body = json!({"requestedMessage": "MeterValues", "connectorId": 1});
    simple_command(
        binary,
        "TriggerMessage",
        body,
        json!({"status": "Rejected"}),
    );
}

/// TC_073_CSMS, Update Charge Point Password for HTTP Basic Authentication: ChangeConfiguration
/// AuthorizationKey (16 bytes, hex encoded as the test case checks), Accepted; from the next
/// connection on only the new password opens, and the old one gets 401; then the operator
/// sets the old one back (`PUT /chargepoints/ID/password`).
fn tc_073_update_authorization_key(binary: &str) {
    let old: &[u8] = b"old-password-0000";
    let new = "00112233445566778899AABBCCDDEEFF";
    let file = TempFile::new("passwords16", "CP073:old-password-0000\n");
    let server = ServerProcess::start(binary, &["--basic-auth", &file.path()]);
    let open =
        |password: &[u8]| upgrade(server.ocpp, "CP073", Some(V16), Some(("CP073", password)));
    let mut ws = open(old).opened(V16);
    let body = json!({"key": "AuthorizationKey", "value": new});
    let accepted = json!({"status": "Accepted"});
    command(
        &server,
        &mut ws,
        "CP073",
        "ChangeConfiguration",
        body.clone(),
        Answer::Result(accepted.clone()),
    )
    .assert_result(&body, &accepted);
    // Still this connection: it carries on with the password it opened with.
    ws.result("Heartbeat", json!({}));
    ws.close();
    assert_eq!(open(old).status, 401);
    let mut ws = open(new.as_bytes()).opened(V16);
    ws.result(
        "BootNotification",
        json!({"chargePointVendor": "ACME", "chargePointModel": "Fast-50"}),
    );
    ws.close();
    // The case's last operator step sets the password back, through the admin API: from the
    // next connection on the old one opens again, the changed one gets 401.
    let (status, body) = admin(
        &server,
        "PUT",
        "/chargepoints/CP073/password",
        r#"{"password":"old-password-0000"}"#,
    );
    assert_eq!((status, &body["password"]), (200, &json!(true)), "{body}");
    assert_eq!(open(new.as_bytes()).status, 401);
    open(old).opened(V16).close();
}

/// TC_088_CSMS, WebSocket Subprotocol Negotiation, as the test case expects it: with
/// `--no-common-version reject-400`, an upgrade offering only `ocpp0.1` is refused with 400
/// (not upgraded); one offering `ocpp0.1,ocpp1.6` (as the test case writes it, no space) is
/// upgraded with `ocpp1.6`.
fn tc_088_no_common_subprotocol_rejected_400(binary: &str) {
    let server = ServerProcess::start(binary, &["--no-common-version", "reject-400"]);
    let refused = upgrade(server.ocpp, "CP088", Some("ocpp0.1"), None);
    assert_eq!(refused.status, 400);
    assert!(refused.ws.is_none());
    let ws = upgrade(server.ocpp, "CP088", Some("ocpp0.1,ocpp1.6"), None).opened(V16);
    ws.close();
}

/// TC_088_CSMS with the servers' default (`accept-then-close`, what the OCPP-J text asks):
/// the upgrade completes without `Sec-WebSocket-Protocol` and the server closes at once with
/// 1002. The test case's step 2 ("does NOT upgrade") fails in this mode: a documented
/// deviation (see the README).
fn tc_088_no_common_subprotocol_accept_then_close(binary: &str) {
    let server = ServerProcess::start(binary, &[]);
    let answer = upgrade(server.ocpp, "CP088", Some("ocpp0.1"), None);
    assert_eq!(answer.status, 101);
    assert_eq!(answer.header("sec-websocket-protocol"), None);
    let mut ws = answer.ws.unwrap();
    assert_eq!(ws.recv(), Frame::Close(Some(1002)));
    let ws = upgrade(server.ocpp, "CP088", Some("ocpp0.1, ocpp1.6"), None).opened(V16);
    ws.close();
}

/// No OCTT 1.6 case id found for this (see the README): OCPP-J 1.6 errata §3.8, a CALL other
/// than BootNotification from a charge point whose boot was answered Pending or Rejected gets
/// CALLERROR SecurityError; what a Pending charge point sends in answer to our requests
/// (here FirmwareStatusNotification) and, once triggered, StatusNotification are served.
fn boot_pending_or_rejected_then_security_error(binary: &str) {
    let server = ServerProcess::start(binary, &["--boot-policy", "pending"]);
    let boot_payload = json!({"chargePointVendor": "ACME", "chargePointModel": "Fast-50"});
    let mut ws = connect(&server, "CP-PENDING", V16);
    let boot = ws.result("BootNotification", boot_payload.clone());
    assert_eq!(boot["status"], "Pending");
    assert_eq!(boot["interval"], 60);
    assert_eq!(ws.error("Heartbeat", json!({})), "SecurityError");
    let status_payload = json!({"connectorId": 1, "errorCode": "NoError", "status": "Available"});
    assert_eq!(
        ws.error("StatusNotification", status_payload.clone()),
        "SecurityError"
    );
    assert_eq!(
        ws.error("Authorize", json!({"idTag": "TAG-1"})),
        "SecurityError"
    );
    let firmware = json!({"status": "Idle"});
    assert_eq!(ws.result("FirmwareStatusNotification", firmware), json!({}));
    let body = json!({"requestedMessage": "StatusNotification", "connectorId": 1});
    let accepted = json!({"status": "Accepted"});
    command(
        &server,
        &mut ws,
        "CP-PENDING",
        "TriggerMessage",
        body.clone(),
        Answer::Result(accepted.clone()),
    )
    .assert_result(&body, &accepted);
    assert_eq!(ws.result("StatusNotification", status_payload), json!({}));
    ws.close();

    let (status, _) = admin(
        &server,
        "PUT",
        "/chargepoints/CP-REJECTED/boot",
        r#"{"status":"Rejected"}"#,
    );
    assert_eq!(status, 200);
    let mut ws = connect(&server, "CP-REJECTED", V16);
    assert_eq!(
        ws.result("BootNotification", boot_payload.clone())["status"],
        "Rejected"
    );
    assert_eq!(ws.error("Heartbeat", json!({})), "SecurityError");
    let firmware = json!({"status": "Idle"});
    assert_eq!(
        ws.error("FirmwareStatusNotification", firmware),
        "SecurityError"
    );
    assert_eq!(
        ws.result("BootNotification", boot_payload)["status"],
        "Rejected"
    );
    ws.close();
}

on_both_servers!(
    tc_001_cold_boot_accepted,
    tc_003_regular_charging_session_plugin_first,
    tc_004_1_regular_charging_session_identification_first,
    tc_010_remote_start_cable_plugged_in_first,
    tc_011_1_remote_start_first,
    tc_012_remote_stop_charging_session,
    tc_013_hard_reset,
    tc_014_soft_reset,
    tc_017_1_unlock_connector_no_charging_session,
    tc_018_1_unlock_connector_with_charging_session,
    tc_019_1_retrieve_all_configuration_keys,
    tc_019_2_retrieve_specific_configuration_key,
    tc_021_change_configuration,
    tc_023_1_authorize_invalid,
    tc_023_2_authorize_expired,
    tc_023_3_authorize_blocked,
    tc_024_start_charging_session_lock_failure,
    tc_026_remote_start_rejected,
    tc_028_remote_stop_rejected,
    tc_030_unlock_connector_unlock_failure,
    tc_031_unlock_connector_unknown_connector,
    tc_032_1_power_failure_boot_stop_transactions,
    tc_037_1_offline_start_transaction_valid_id_tag,
    tc_037_3_offline_start_transaction_invalid_id_tag,
    tc_040_1_configuration_key_not_supported,
    tc_040_2_configuration_key_invalid_value,
    tc_054_trigger_message,
    tc_055_trigger_message_rejected,
    tc_061_clear_authorization_cache,
    tc_064_data_transfer_unknown_vendor,
    tc_073_update_authorization_key,
    tc_088_no_common_subprotocol_rejected_400,
    tc_088_no_common_subprotocol_accept_then_close,
    boot_pending_or_rejected_then_security_error,
);
