//! Block P, DataTransfer: an unknown vendor, custom data.

use super::*;

/// TC_P_02_CSMS, Data Transfer to the CSMS - Rejected / Unknown VendorId / Unknown MessageId.
pub(crate) fn tc_p_02_data_transfer_unknown_vendor(binary: &str) {
    let server = ServerProcess::start(binary, &[]);
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
pub(crate) fn tc_p_03_receive_custom_data(binary: &str) {
    let server = ServerProcess::start(binary, &[]);
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
