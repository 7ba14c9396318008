//! Block J, meter values: clock-aligned, without and with a transaction.

use super::*;

/// TC_J_01_CSMS, Clock-aligned Meter Values - No transaction ongoing: MeterValues acknowledged.
pub(crate) fn tc_j_01_clock_aligned_meter_values_no_transaction(binary: &str) {
    let server = ServerProcess::start(binary, &[]);
    let mut ws = booted(&server, "CS-J01");
    let values = json!({"evseId": 1, "meterValue": [{"timestamp": T0, "sampledValue": [
        {"value": 12345.5, "measurand": "Energy.Active.Import.Register", "context": "Sample.Clock",
         "unitOfMeasure": {"unit": "Wh"}}]}]});
    assert_eq!(ws.result("MeterValues", values), json!({}));
    ws.close();
}

/// TC_J_02_CSMS, Clock-aligned Meter Values - Transaction ongoing: TransactionEvent Updated
/// (triggerReason MeterValueClock) acknowledged, the value recorded for the transaction.
pub(crate) fn tc_j_02_clock_aligned_meter_values_transaction_ongoing(binary: &str) {
    let server = ServerProcess::start(binary, &[]);
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
