//! Block K, smart charging: load leveling from the charging needs, EV schedules over the limits
//! renegotiated, renegotiation by the EV and by the CSMS, K15 on OCPP 2.1.

use super::*;

/// A station on the admin API's `/charging-profiles` (smart charging state).
fn charging_profiles(server: &ServerProcess, identity: &str) -> Value {
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
fn charging_profiles_answered(server: &ServerProcess, identity: &str) -> Value {
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
pub(crate) fn tc_k_53_load_leveling_needs_accepted_then_tx_profile(binary: &str) {
    let server = ServerProcess::start(binary, &["--site-limit-amps", "24"]);
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
pub(crate) fn tc_k_55_ev_schedule_exceeding_limits_rejected_and_renegotiated(binary: &str) {
    let server = ServerProcess::start(binary, &["--site-limit-amps", "16"]);
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
pub(crate) fn tc_k_57_renegotiation_initiated_by_ev(binary: &str) {
    let server = ServerProcess::start(binary, &["--site-limit-amps", "24"]);
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
    server: &ServerProcess,
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
pub(crate) fn tc_k_58_renegotiation_initiated_by_csms(binary: &str) {
    let server = ServerProcess::start(binary, &[]);
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
pub(crate) fn tc_k_59_renegotiation_by_csms_then_charging_needs(binary: &str) {
    let server = ServerProcess::start(binary, &["--site-limit-amps", "20"]);
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
pub(crate) fn k15_on_ocpp_2_1(binary: &str) {
    let server = ServerProcess::start(binary, &["--site-limit-watts", "11000"]);
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
