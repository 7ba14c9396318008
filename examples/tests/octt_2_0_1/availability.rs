//! Block G, availability: ChangeAvailability of an EVSE, the station, a connector, with and
//! without an ongoing transaction.

use super::*;

/// ChangeAvailability of `evse` (None: the whole station) to `status`, Accepted; the
/// station then reports the connector's new state.
fn availability(binary: &str, evse: Option<Value>, operational: &str) {
    let mut body = json!({"operationalStatus": operational});
    if let Some(evse) = evse {
        body["evse"] = evse;
    }
    let server = ServerProcess::start(binary, &[]);
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
pub(crate) fn tc_g_03_change_availability_evse_inoperative(binary: &str) {
    availability(binary, Some(json!({"id": 1})), "Inoperative");
}

/// TC_G_04_CSMS, Change Availability EVSE - Inoperative to operative.
pub(crate) fn tc_g_04_change_availability_evse_operative(binary: &str) {
    availability(binary, Some(json!({"id": 1})), "Operative");
}

/// TC_G_05_CSMS, Change Availability Charging Station - Operative to inoperative.
pub(crate) fn tc_g_05_change_availability_station_inoperative(binary: &str) {
    availability(binary, None, "Inoperative");
}

/// TC_G_06_CSMS, Change Availability Charging Station - Inoperative to operative.
pub(crate) fn tc_g_06_change_availability_station_operative(binary: &str) {
    availability(binary, None, "Operative");
}

/// TC_G_07_CSMS, Change Availability Connector - Operative to inoperative.
pub(crate) fn tc_g_07_change_availability_connector_inoperative(binary: &str) {
    availability(
        binary,
        Some(json!({"id": 1, "connectorId": 1})),
        "Inoperative",
    );
}

/// TC_G_08_CSMS, Change Availability Connector - Inoperative to operative.
pub(crate) fn tc_g_08_change_availability_connector_operative(binary: &str) {
    availability(
        binary,
        Some(json!({"id": 1, "connectorId": 1})),
        "Operative",
    );
}

/// ChangeAvailability of `evse` to Inoperative during a transaction: Scheduled; the change
/// happens when the transaction ends (the StatusNotification Unavailable recorded).
fn availability_with_transaction(binary: &str, evse: Option<Value>) {
    let server = ServerProcess::start(binary, &[]);
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
pub(crate) fn tc_g_11_change_availability_evse_with_ongoing_transaction(binary: &str) {
    availability_with_transaction(binary, Some(json!({"id": 1})));
}

/// TC_G_14_CSMS, Change Availability Charging Station - With ongoing transaction.
pub(crate) fn tc_g_14_change_availability_station_with_ongoing_transaction(binary: &str) {
    availability_with_transaction(binary, None);
}

/// TC_G_17_CSMS, Change Availability Connector - With ongoing transaction.
pub(crate) fn tc_g_17_change_availability_connector_with_ongoing_transaction(binary: &str) {
    availability_with_transaction(binary, Some(json!({"id": 1, "connectorId": 1})));
}
