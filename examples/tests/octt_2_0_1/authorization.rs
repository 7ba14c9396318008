//! Block C, authorization: invalid, blocked, expired tokens from the store, group ids, the master
//! pass, ClearCache.

use super::*;

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
pub(crate) fn tc_c_02_authorization_invalid_unknown(binary: &str) {
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
pub(crate) fn tc_c_06_authorization_blocked(binary: &str) {
    assert_eq!(
        authorize_from_store(binary, "TAG-BLOCKED"),
        json!({"status": "Blocked"})
    );
}

/// TC_C_07_CSMS, Local start transaction - Authorization Expired.
pub(crate) fn tc_c_07_authorization_expired(binary: &str) {
    assert_eq!(
        authorize_from_store(binary, "TAG-OLD"),
        json!({"status": "Expired", "cacheExpiryDateTime": "2020-01-01T00:00:00Z"})
    );
}

/// TC_C_39_CSMS, Authorization by GroupId - Success: two tokens of one group; each answer
/// (Authorize and TransactionEvent) carries the group, so the second may stop the first's
/// transaction.
pub(crate) fn tc_c_39_authorization_by_group_id(binary: &str) {
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
pub(crate) fn tc_c_49_master_pass_without_ui(binary: &str) {
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
pub(crate) fn tc_c_37_clear_cache_accepted(binary: &str) {
    simple_command(
        binary,
        "ClearCache",
        json!({}),
        json!({"status": "Accepted"}),
    );
}

/// TC_C_38_CSMS, Clear Authorization Data in Authorization Cache - Rejected.
pub(crate) fn tc_c_38_clear_cache_rejected(binary: &str) {
    simple_command(
        binary,
        "ClearCache",
        json!({}),
        json!({"status": "Rejected"}),
    );
}
