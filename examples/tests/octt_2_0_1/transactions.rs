//! Block E, transactions: local start (cable or authorization first), seqNo restarting at 0 and
//! its gaps.

use super::*;

/// A local transaction: Started, Updated with meter values, Ended; `cable_first`: TC_E_03
/// (plug in, then authorize), else TC_E_04 (authorize first). Every event is answered, the one
/// with an idToken with its idTokenInfo, and the transaction is recorded with its energy.
fn local_transaction(binary: &str, cable_first: bool) {
    let server = ServerProcess::start(binary, &[]);
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
pub(crate) fn tc_e_03_local_start_cable_plugin_first(binary: &str) {
    local_transaction(binary, true);
}

/// TC_E_04_CSMS, Local start transaction - Authorization first - Success.
pub(crate) fn tc_e_04_local_start_authorization_first(binary: &str) {
    local_transaction(binary, false);
}

/// TC_E_53_CSMS, Reset Sequence Number - CSMS accepting seqNo = 0 at start of transaction:
/// two transactions one after the other, each numbered from 0, both answered, no gap counted.
pub(crate) fn tc_e_53_seq_no_restarts_at_0_for_a_new_transaction(binary: &str) {
    let server = ServerProcess::start(binary, &[]);
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
pub(crate) fn tc_e_31_seq_no_gap_asks_get_transaction_status(binary: &str) {
    let server = ServerProcess::start(binary, &[]);
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
