//! Block I, tariff and cost: the running cost (CostUpdated), the final total cost, a tariff per
//! station or none.

use super::*;

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
pub(crate) fn tc_i_01_running_cost_cost_updated(binary: &str) {
    let mut args = TARIFF.to_vec();
    args.extend(["--cost-updated-interval", "0"]);
    let server = ServerProcess::start(binary, &args);
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
pub(crate) fn tc_i_02_final_total_cost(binary: &str) {
    let server = ServerProcess::start(binary, TARIFF);
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
pub(crate) fn tariff_per_station_and_none(binary: &str) {
    let server = ServerProcess::start(binary, &[]);
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
