//! Charging sessions played end to end through the handler API, one per version.

use std::time::Duration;

use ocpp_frame::handshake::BasicCredentials;
use ocpp_messages::error_code::ErrorCode;
use ocpp_messages::version::OcppVersion;
use ocpp_messages::{v1_6, v2_0_1, v2_1, DateTime, Decimal};
use ocpp_proto::{
    CallFailure, CallOutcome, ChargePointIdentity, CloseReason, Closed, Rejection, Request,
    Response,
};
use serde_json::Value;

use super::*;

fn identity(name: &str) -> ChargePointIdentity {
    ChargePointIdentity::new(name.into(), true).unwrap()
}

/// Sends the CALL `action` with `payload` (JSON) through [`Csms::on_call`] and returns the
/// CALLRESULT payload as JSON. A test names it for its charge point: `send(action, payload)`.
fn call(
    csms: &Csms,
    session: SessionId,
    cp: &ChargePointIdentity,
    action: &str,
    payload: &str,
) -> Value {
    let version = csms.version_of(cp).expect("connected");
    let request = crate::command::decode_command(version, action, payload).expect("valid request");
    match csms.on_call(session, cp, &request).wait(csms) {
        Answer::Result(response) => {
            assert_eq!(response.action(), action);
            assert_eq!(response.version(), version);
            response.validate_json()
        }
        other => panic!("{action}: {other:?}"),
    }
}

/// `cp` connects with `version` and boots with the BootNotification `payload`, which is
/// Accepted: its session and the answer.
fn connect_and_boot(
    csms: &Csms,
    cp: &ChargePointIdentity,
    version: OcppVersion,
    payload: &str,
) -> (SessionId, Value) {
    let session = csms.on_connected(cp, version);
    let boot = call(csms, session, cp, "BootNotification", payload);
    assert_eq!(boot["status"], "Accepted");
    (session, boot)
}

/// `cp`'s first transaction has ended, for `reason`, with `energy_wh` delivered.
fn assert_first_transaction_ended(
    csms: &Csms,
    cp: &ChargePointIdentity,
    energy_wh: Decimal,
    reason: &str,
) {
    let state = csms.charge_point(cp).unwrap();
    let ended = &state.transactions[0];
    assert!(!ended.is_active());
    assert_eq!(ended.energy_wh(), Some(energy_wh));
    assert_eq!(ended.stop_reason.as_deref(), Some(reason));
}

trait ValidateJson {
    fn validate_json(&self) -> Value;
}

impl ValidateJson for Response {
    /// The payload as JSON, after checking it against its schema.
    fn validate_json(&self) -> Value {
        match self {
            Response::V1_6(r) => r.validate().unwrap(),
            Response::V2_0_1(r) => r.validate().unwrap(),
            Response::V2_1(r) => r.validate().unwrap(),
            _ => unreachable!(),
        }
        serde_json::to_value(self).unwrap()
    }
}

fn closed() -> Closed {
    // `Closed` is non-exhaustive: build one the way the core reports it.
    let mut pair = ocpp_proto::Connection::accept_incoming(
        std::time::Instant::now(),
        std::sync::Arc::new(ocpp_proto::ConnectionConfig::default()),
    );
    pair.handle_eof(std::time::Instant::now());
    match pair.poll_event() {
        Some(ocpp_proto::Event::Closed(closed)) => {
            assert_eq!(closed.reason, CloseReason::Eof);
            *closed
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn charging_session_v1_6() {
    let csms = Csms::new(CsmsConfig::default().heartbeat_interval(Duration::from_secs(120)));
    let cp = identity("CP16");
    let boot =
        r#"{"chargePointVendor":"ACME","chargePointModel":"Fast-50","firmwareVersion":"1.2.3"}"#;
    let (session, boot) = connect_and_boot(&csms, &cp, OcppVersion::V1_6, boot);
    let send = |action: &str, payload: &str| call(&csms, session, &cp, action, payload);
    assert_eq!(boot["interval"], 120);
    assert!(DateTime::parse(boot["currentTime"].as_str().unwrap()).is_ok());

    let heartbeat = send("Heartbeat", "{}");
    assert!(heartbeat["currentTime"].is_string());

    send(
        "StatusNotification",
        r#"{"connectorId":1,"errorCode":"NoError","status":"Preparing"}"#,
    );
    let auth = send("Authorize", r#"{"idTag":"TAG1"}"#);
    assert_eq!(auth["idTagInfo"]["status"], "Accepted");

    let start = send(
        "StartTransaction",
        r#"{"connectorId":1,"idTag":"TAG1","meterStart":1000,"timestamp":"2026-11-29T12:00:00Z"}"#,
    );
    let tx = start["transactionId"].as_i64().unwrap();
    assert_eq!(start["idTagInfo"]["status"], "Accepted");
    send(
        "StatusNotification",
        r#"{"connectorId":1,"errorCode":"NoError","status":"Charging"}"#,
    );
    send(
        "MeterValues",
        &format!(
            r#"{{"connectorId":1,"transactionId":{tx},"meterValue":[{{"timestamp":"2026-11-29T12:05:00Z",
        "sampledValue":[{{"value":"1.5","unit":"kWh","measurand":"Energy.Active.Import.Register"}},
        {{"value":"7000","measurand":"Power.Active.Import","unit":"W"}}]}}]}}"#
        ),
    );

    let state = csms.charge_point(&cp).unwrap();
    assert_eq!(&*state.registration.as_ref().unwrap().vendor, "ACME");
    assert!(state.last_heartbeat.is_some());
    assert_eq!(&*state.connectors["1"].status, "Charging");
    let active = &state.transactions[0];
    assert!(active.is_active());
    assert_eq!(active.energy_wh(), Some(500.into()));
    assert_eq!(active.samples, 2);

    let stop = send(
        "StopTransaction",
        &format!(
            r#"{{"transactionId":{tx},"meterStop":4000,"timestamp":"2026-11-29T13:00:00Z","reason":"Local","idTag":"TAG1"}}"#
        ),
    );
    assert_eq!(stop["idTagInfo"]["status"], "Accepted");
    assert_first_transaction_ended(&csms, &cp, 3000.into(), "Local");

    // A second transaction gets another id.
    let again = send(
        "StartTransaction",
        r#"{"connectorId":1,"idTag":"TAG1","meterStart":4000,"timestamp":"2026-11-29T14:00:00Z"}"#,
    );
    assert_ne!(again["transactionId"].as_i64().unwrap(), tx);

    // A report: answered and kept.
    let firmware = Request::from(v1_6::Request::from(
        v1_6::FirmwareStatusNotificationRequest {
            status: v1_6::FirmwareStatus::Installed,
        },
    ));
    assert!(matches!(
        csms.on_call(session, &cp, &firmware).wait(&csms),
        Answer::Result(_)
    ));
    let state = csms.charge_point(&cp).unwrap();
    let kept = &state.extras.notifications["FirmwareStatusNotification"];
    assert_eq!(kept.back().unwrap().payload["status"], "Installed");
    // A CALL only the central system sends: NotSupported.
    let reset =
        crate::command::decode_command(OcppVersion::V1_6, "Reset", r#"{"type":"Soft"}"#).unwrap();
    match csms.on_call(session, &cp, &reset).wait(&csms) {
        Answer::Error(error) => assert_eq!(error.code, ErrorCode::NotSupported),
        other => panic!("{other:?}"),
    }
    assert_eq!(csms.metrics().call_errors_sent.get(), 1);
    assert_eq!(csms.connected().len(), 1);
    csms.on_closed(Some(session), Some(&cp), &closed());
    assert!(csms.connected().is_empty());
    assert_eq!(csms.metrics().charge_points_connected.get(), 0);
}

#[test]
fn charging_session_v2_0_1() {
    let csms = Csms::new(CsmsConfig::default());
    let cp = identity("CS201");
    let boot = r#"{"chargingStation":{"vendorName":"ACME","model":"AC-22"},"reason":"PowerUp"}"#;
    let (session, boot) = connect_and_boot(&csms, &cp, OcppVersion::V2_0_1, boot);
    let send = |action: &str, payload: &str| call(&csms, session, &cp, action, payload);
    assert_eq!(boot["interval"], 300);
    send("Heartbeat", "{}");
    send(
        "StatusNotification",
        r#"{"timestamp":"2026-11-29T12:00:00Z","connectorStatus":"Occupied","evseId":1,"connectorId":1}"#,
    );
    let auth = send(
        "Authorize",
        r#"{"idToken":{"idToken":"TAG1","type":"ISO14443"}}"#,
    );
    assert_eq!(auth["idTokenInfo"]["status"], "Accepted");

    let event = |kind: &str, seq: u32, extra: &str| {
        format!(
            r#"{{"eventType":"{kind}","timestamp":"2026-11-29T12:00:00Z","triggerReason":"Authorized",
            "seqNo":{seq},"transactionInfo":{{"transactionId":"TX-1"{extra}}},"evse":{{"id":1,"connectorId":1}},
            "idToken":{{"idToken":"TAG1","type":"ISO14443"}},
            "meterValue":[{{"timestamp":"2026-11-29T12:00:00Z","sampledValue":[{{"value":{wh}}}]}}]}}"#,
            wh = 1000 + seq * 1000
        )
    };
    let started = send(
        "TransactionEvent",
        &event("Started", 0, r#","chargingState":"Charging""#),
    );
    assert_eq!(started["idTokenInfo"]["status"], "Accepted");
    send("TransactionEvent", &event("Updated", 1, ""));
    send(
        "MeterValues",
        r#"{"evseId":1,"meterValue":[{"timestamp":"2026-11-29T12:10:00Z","sampledValue":[{"value":2.5,"unitOfMeasure":{"unit":"kWh"}}]}]}"#,
    );
    let state = csms.charge_point(&cp).unwrap();
    let tx = &state.transactions[0];
    assert_eq!(tx.id, "TX-1");
    assert_eq!(tx.connector, "1/1");
    assert_eq!(tx.charging_state.as_deref(), Some("Charging"));
    assert_eq!(tx.energy_wh(), Some(1500.into()));
    assert_eq!(&*state.connectors["1/1"].status, "Occupied");

    send(
        "TransactionEvent",
        &event("Ended", 2, r#","stoppedReason":"EVDisconnected""#),
    );
    assert_eq!(csms.charge_point(&cp).unwrap().transactions.len(), 1);
    assert_first_transaction_ended(&csms, &cp, 2000.into(), "EVDisconnected");

    let notify = send(
        "SecurityEventNotification",
        r#"{"type":"StartupOfTheDevice","timestamp":"2026-11-29T12:00:00Z"}"#,
    );
    assert_eq!(notify, serde_json::json!({}));
    let state = csms.charge_point(&cp).unwrap();
    assert_eq!(
        state.extras.notifications["SecurityEventNotification"][0].payload["type"],
        "StartupOfTheDevice"
    );
    let reset =
        crate::command::decode_command(OcppVersion::V2_0_1, "Reset", r#"{"type":"Immediate"}"#)
            .unwrap();
    assert!(matches!(
        csms.on_call(session, &cp, &reset).wait(&csms),
        Answer::Error(error) if error.code == ErrorCode::NotSupported
    ));
}

#[test]
fn boot_and_transaction_v2_1() {
    // A transaction from the cable plugged in to the EV's departure, without an idToken.
    let start = r#"{"eventType":"Started","timestamp":"2026-11-29T12:00:00Z","triggerReason":"CablePluggedIn",
        "seqNo":0,"transactionInfo":{"transactionId":"T21"},"evse":{"id":2,"connectorId":1}}"#;
    let end = r#"{"eventType":"Ended","timestamp":"2026-11-29T12:30:00Z","triggerReason":"EVDeparted",
        "seqNo":1,"transactionInfo":{"transactionId":"T21","stoppedReason":"EVDisconnected"}}"#;
    let csms = Csms::new(CsmsConfig::default());
    let cp = identity("CS21");
    let boot = r#"{"chargingStation":{"vendorName":"ACME","model":"DC-400"},"reason":"PowerUp"}"#;
    let (session, _) = connect_and_boot(&csms, &cp, OcppVersion::V2_1, boot);
    let answer = call(&csms, session, &cp, "TransactionEvent", start);
    assert!(
        answer.get("idTokenInfo").is_none(),
        "no idToken, no idTokenInfo: {answer}"
    );
    call(&csms, session, &cp, "TransactionEvent", end);
    let state = csms.charge_point(&cp).unwrap();
    assert_eq!(state.transactions[0].connector, "2/1");
    assert!(!state.transactions[0].is_active());
    let _ = (v2_0_1::Action::ALL.len(), v2_1::Action::ALL.len());
}

#[test]
fn reconnect_keeps_the_newer_session() {
    let csms = Csms::new(CsmsConfig::default());
    let cp = identity("CP1");
    let old = csms.on_connected(&cp, OcppVersion::V1_6);
    let new = csms.on_connected(&cp, OcppVersion::V2_0_1);
    csms.on_closed(Some(old), Some(&cp), &closed());
    assert_eq!(csms.version_of(&cp), Some(OcppVersion::V2_0_1));
    assert_eq!(csms.metrics().charge_points_connected.get(), 1);
    csms.on_closed(Some(new), Some(&cp), &closed());
    assert_eq!(csms.version_of(&cp), None);
}

#[test]
fn ended_transactions_are_pruned() {
    let csms = Csms::new(CsmsConfig::default().ended_transactions_kept(2));
    let cp = identity("CP1");
    let session = csms.on_connected(&cp, OcppVersion::V1_6);
    let send = |action: &str, payload: &str| call(&csms, session, &cp, action, payload);
    // Five transactions (a StartTransaction in the same words as an earlier one would be
    // that one sent again, and get its id: meterStart differs).
    for meter_start in 0..5 {
        let start = send(
            "StartTransaction",
            &format!(
                r#"{{"connectorId":1,"idTag":"T","meterStart":{meter_start},"timestamp":"2026-11-29T12:00:00Z"}}"#
            ),
        );
        let tx = start["transactionId"].as_i64().unwrap();
        send(
            "StopTransaction",
            &format!(
                r#"{{"transactionId":{tx},"meterStop":10,"timestamp":"2026-11-29T12:00:00Z"}}"#
            ),
        );
    }
    assert_eq!(csms.charge_point(&cp).unwrap().transactions.len(), 2);
}

/// The `UpgradeRequested` of a connection to `/ocpp/CP1`, with Basic credentials if given.
fn upgrade_request(basic: Option<(&[u8], &[u8])>) -> Box<ocpp_proto::IncomingUpgrade> {
    let mut connection = ocpp_proto::Connection::accept_incoming(
        std::time::Instant::now(),
        std::sync::Arc::new(ocpp_proto::ConnectionConfig::default()),
    );
    let auth = basic.map_or(String::new(), |(user, password)| {
        let value = BasicCredentials::new(user, password)
            .unwrap()
            .header_value();
        format!("Authorization: {value}\r\n")
    });
    let request = format!(
        "GET /ocpp/CP1 HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Protocol: ocpp1.6\r\n{auth}\r\n"
    );
    connection.handle_data(std::time::Instant::now(), request.as_bytes());
    match connection.poll_event() {
        Some(ocpp_proto::Event::UpgradeRequested(upgrade)) => upgrade,
        other => panic!("{other:?}"),
    }
}

#[test]
fn basic_auth_decides_the_upgrade() {
    let credentials = Credentials::parse("CP1:0123456789abcdef\n").unwrap();
    let csms = Csms::new(CsmsConfig::default().credentials(Some(credentials)));
    let upgrade = |user: &[u8], password: &[u8]| {
        csms.on_upgrade(&upgrade_request(Some((user, password))), &Transport::Plain)
    };
    assert_eq!(upgrade(b"CP1", b"0123456789abcdef"), Ok(()));
    assert!(matches!(
        upgrade(b"CP1", b"nope"),
        Err(Rejection { status: 401, .. })
    ));
    assert!(matches!(
        upgrade(b"CP2", b"0123456789abcdef"),
        Err(Rejection { status: 401, .. })
    ));
    assert_eq!(
        csms.on_upgrade(&upgrade_request(None), &Transport::Plain),
        Err(Rejection::new(401, "no Basic credentials"))
    );
    assert_eq!(csms.metrics().upgrades_rejected.get(), 3);
}

#[test]
fn client_certificate_must_name_the_identity() {
    let csms = Csms::new(CsmsConfig::default().client_certificates(true));
    let request = upgrade_request(None);
    let with_cn = |cn: Option<&str>| Transport::Tls {
        client_certificate: Some(ClientCertificate::new(cn.map(str::to_owned))),
    };
    assert_eq!(csms.on_upgrade(&request, &with_cn(Some("CP1"))), Ok(()));
    for (transport, why) in [
        (
            with_cn(Some("CP2")),
            "the client certificate's CN is not the identity",
        ),
        (
            with_cn(Some("cp1")),
            "the client certificate's CN is not the identity",
        ),
        (with_cn(None), "the client certificate has no subject CN"),
    ] {
        assert_eq!(
            csms.on_upgrade(&request, &transport),
            Err(Rejection::new(403, why))
        );
    }
    // No certificate: the credentials are missing (401).
    for transport in [
        Transport::Tls {
            client_certificate: None,
        },
        Transport::Plain,
    ] {
        assert_eq!(
            csms.on_upgrade(&request, &transport),
            Err(Rejection::new(
                401,
                "security profile 3: no client certificate"
            ))
        );
    }
    // Without the requirement a verified certificate still proves who the station is: one
    // naming another identity is refused, none at all changes nothing.
    let csms = Csms::new(CsmsConfig::default());
    assert!(matches!(
        csms.on_upgrade(&request, &with_cn(Some("CP2"))),
        Err(Rejection { status: 403, .. })
    ));
    assert_eq!(csms.on_upgrade(&request, &with_cn(Some("CP1"))), Ok(()));
    assert_eq!(
        csms.on_upgrade(
            &request,
            &Transport::Tls {
                client_certificate: None
            }
        ),
        Ok(())
    );
}

#[test]
fn call_outcomes_keep_the_pending_gauge() {
    let csms = Csms::new(CsmsConfig::default());
    let cp = identity("CP1");
    csms.on_call_sent(&cp, "Reset");
    assert_eq!(csms.metrics().calls_pending.get(), 1);
    csms.on_call_completed(&cp, "Reset", &Err(CallFailure::Timeout));
    assert_eq!(csms.metrics().calls_pending.get(), 0);
    assert_eq!(csms.metrics().call_timeouts.get(), 1);
}

#[test]
fn security_profiles_per_station_on_one_listener() {
    use super::SecurityProfile::{Basic, TlsBasic, TlsClientCertificate};
    let mut credentials = Credentials::parse("CP1:0123456789abcdef\n").unwrap();
    credentials.set_profile("CP1", Some(TlsBasic));
    let csms = Csms::new(CsmsConfig::default().credentials(Some(credentials)));
    let cp1 = identity("CP1");
    let password = upgrade_request(Some((b"CP1", b"0123456789abcdef")));
    let wrong = upgrade_request(Some((b"CP1", b"0123456789abcdeX")));
    let tls = |cn: Option<&str>| Transport::Tls {
        client_certificate: cn.map(|cn| ClientCertificate::new(Some(cn.into()))),
    };
    let status = |decision: Result<(), Rejection>| decision.map_or_else(|r| r.status, |()| 101);
    // Profile 2: its password over TLS; not on plain TCP, not a wrong one.
    assert_eq!(status(csms.on_upgrade(&password, &tls(None))), 101);
    assert_eq!(status(csms.on_upgrade(&password, &Transport::Plain)), 403);
    assert_eq!(status(csms.on_upgrade(&wrong, &tls(None))), 401);
    // Another station's certificate: 403 whatever the password.
    assert_eq!(status(csms.on_upgrade(&password, &tls(Some("CP2")))), 403);
    assert_eq!(
        csms.security_profile(&cp1),
        (Some(TlsBasic), Some(Basic), true)
    );
    // Its own certificate: profile 3, and held there: the password alone no longer does.
    assert_eq!(status(csms.on_upgrade(&wrong, &tls(Some("CP1")))), 101);
    assert_eq!(csms.security_profile(&cp1).0, Some(TlsClientCertificate));
    assert_eq!(status(csms.on_upgrade(&password, &tls(None))), 401);
    assert_eq!(csms.metrics().upgrades_rejected.get(), 4);
    // The operator may set it back.
    csms.set_security_profile(&cp1, Some(TlsBasic)).unwrap();
    assert_eq!(status(csms.on_upgrade(&password, &tls(None))), 101);
    // Without a store there is nothing to set.
    let open = Csms::new(CsmsConfig::default());
    assert!(open.set_security_profile(&cp1, Some(Basic)).is_err());
    assert_eq!(
        status(open.on_upgrade(&upgrade_request(None), &Transport::Plain)),
        101
    );
}

/// A SetVariables split by ItemsPerMessage whose second chunk carries
/// `SecurityCtrlr.BasicAuthPassword`: the first chunk's answer does not settle the password
/// change, the second one's Accepted does.
#[test]
fn password_change_in_a_later_chunk_of_a_split_set_variables() {
    let credentials = Credentials::parse("CP1:0123456789abcdef\n").unwrap();
    let config = CsmsConfig::default()
        .credentials(Some(credentials))
        .items_per_message(Some(1));
    let csms = Csms::new(config);
    let cp = ChargePointIdentity::new("CP1".into(), false).unwrap();
    csms.on_connected(&cp, OcppVersion::V2_0_1);
    let other = serde_json::json!({"component": {"name": "Ctrlr"}, "variable": {"name": "V"},
                                   "attributeValue": "1"});
    let password = serde_json::json!({"component": {"name": "SecurityCtrlr"},
                                      "variable": {"name": "BasicAuthPassword"},
                                      "attributeValue": "fedcba9876543210"});
    let body = serde_json::json!({"setVariableData": [other, password]}).to_string();
    let request = admin::AdminRequest {
        method: "POST".into(),
        path: "/chargepoints/CP1/call/SetVariables".into(),
        body: body.into_bytes(),
        authorization: None,
        caller_timeout: None,
    };
    let admin::Route::Calls { mut split, .. } = admin::route(&csms, &request) else {
        panic!("expected a split command")
    };
    let accepted = |data: &Value| -> CallOutcome {
        let payload = serde_json::json!({"setVariableResult": [{"attributeStatus": "Accepted",
            "component": data["component"], "variable": data["variable"]}]});
        let response: v2_0_1::SetVariablesResponse = serde_json::from_value(payload).unwrap();
        Ok(v2_0_1::Response::from(response).into())
    };
    let upgrade = |password: &[u8]| {
        csms.on_upgrade(
            &upgrade_request(Some((b"CP1", password))),
            &Transport::Plain,
        )
    };
    let mut answered = None;
    let mut chunks = 0;
    while let Some(chunk) = split.next_request() {
        chunks += 1;
        let data = serde_json::to_value(&chunk).unwrap()["setVariableData"][0].clone();
        let outcome = accepted(&data);
        csms.on_call_completed(&cp, "SetVariables", &outcome);
        if chunks == 1 {
            // After the first chunk: still the old password.
            assert_eq!(upgrade(b"0123456789abcdef"), Ok(()));
        }
        answered = split.complete(&outcome);
    }
    assert_eq!(chunks, 2);
    assert!(
        matches!(answered, Some(crate::SplitEnd::Done(_))),
        "{answered:?}"
    );
    assert_eq!(upgrade(b"fedcba9876543210"), Ok(()));
    assert!(matches!(
        upgrade(b"0123456789abcdef"),
        Err(Rejection { status: 401, .. })
    ));
}

#[test]
fn charging_profiles_are_settled_in_the_order_sent_operator_and_ours() {
    let config = CsmsConfig::default().site_limit(SiteLimit::new(Some(20.0), None).unwrap());
    let csms = Csms::new(config);
    let cp = identity("CP-SC");
    let session = csms.on_connected(&cp, OcppVersion::V2_0_1);
    let send = |action: &str, payload: &str| call(&csms, session, &cp, action, payload);
    // The operator's own TxDefaultProfile, through the generic command route.
    let body = serde_json::json!({"evseId": 0, "chargingProfile": {"id": 7, "stackLevel": 0,
        "chargingProfilePurpose": "TxDefaultProfile", "chargingProfileKind": "Relative",
        "chargingSchedule": [{"id": 7, "chargingRateUnit": "A",
                              "chargingSchedulePeriod": [{"startPeriod": 0, "limit": 6.0}]}]}});
    let request = admin::AdminRequest {
        method: "POST".into(),
        path: "/chargepoints/CP-SC/call/SetChargingProfile".into(),
        body: body.to_string().into_bytes(),
        authorization: None,
        caller_timeout: None,
    };
    assert!(matches!(
        admin::route(&csms, &request),
        admin::Route::Call { .. }
    ));
    let started = r#"{"eventType":"Started","timestamp":"2026-01-01T00:00:00Z",
        "triggerReason":"Authorized","seqNo":0,"transactionInfo":{"transactionId":"TX"},
        "evse":{"id":1,"connectorId":1}}"#;
    send("TransactionEvent", started);
    let needs = r#"{"evseId":1,"chargingNeeds":{"requestedEnergyTransfer":"AC_single_phase",
        "acChargingParameters":{"energyAmount":1,"evMinCurrent":6,"evMaxCurrent":32,"evMaxVoltage":230}}}"#;
    let answer = send("NotifyEVChargingNeeds", needs);
    assert_eq!(answer["status"], "Accepted");
    let follow_up = csms.take_follow_up(&cp).expect("a SetChargingProfile");
    let sent = serde_json::to_value(&follow_up).unwrap();
    let period = &sent["chargingProfile"]["chargingSchedule"][0]["chargingSchedulePeriod"][0];
    assert_eq!(
        period,
        &serde_json::json!({"startPeriod": 0, "limit": 20.0, "numberPhases": 1})
    );
    assert!(csms.take_follow_up(&cp).is_none());
    let status = |status: &str| -> CallOutcome {
        let payload = serde_json::json!({ "status": status });
        let response: v2_0_1::SetChargingProfileResponse = serde_json::from_value(payload).unwrap();
        Ok(v2_0_1::Response::from(response).into())
    };
    csms.on_call_completed(&cp, "SetChargingProfile", &status("Rejected"));
    csms.on_call_completed(&cp, "SetChargingProfile", &status("Accepted"));
    let record = csms.charge_point(&cp).unwrap();
    let profiles = &record.extras.smart_charging.profiles;
    let answers: Vec<_> = profiles
        .iter()
        .map(|p| (p.id, p.reason.as_str(), p.answer.as_deref()))
        .collect();
    assert_eq!(
        answers,
        [
            (Some(7), "Operator", Some("Rejected")),
            (Some(1000), "ChargingNeeds", Some("Accepted")),
        ]
    );
    // The EV's schedule over our 20 A: Rejected, and the profile follows again; its CALL
    // unanswered when the connection ends is recorded as such.
    let schedule = r#"{"timeBase":"2026-01-01T00:00:00Z","evseId":1,"chargingSchedule":{"id":1,
        "chargingRateUnit":"A","chargingSchedulePeriod":[{"startPeriod":0,"limit":32.0}]}}"#;
    let answer = send("NotifyEVChargingSchedule", schedule);
    assert_eq!(answer["status"], "Rejected");
    // Sent on a real connection, which then ends before the answer.
    let now = std::time::Instant::now();
    let mut connection = ocpp_proto::Connection::accept_incoming(
        now,
        std::sync::Arc::new(ocpp_proto::ConnectionConfig::default()),
    );
    connection.handle_data(
        now,
        b"GET /ocpp/CP-SC HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n\
          Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\
          Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: ocpp2.0.1\r\n\r\n",
    );
    while let Some(event) = connection.poll_event() {
        if let ocpp_proto::Event::UpgradeRequested(_) = event {
            connection.decide(now, Ok(())).unwrap();
        }
    }
    // The driver's part: each follow-up on the connection, reported sent.
    while let Some(request) = csms.take_follow_up(&cp) {
        let action = request.action();
        connection.call_for(now, request, (), None).unwrap();
        csms.on_call_sent(&cp, action);
    }
    assert!(csms.take_follow_up(&cp).is_none());
    connection.handle_eof(now);
    let mut ended = None;
    while let Some(event) = connection.poll_event() {
        if let ocpp_proto::Event::Closed(closed) = event {
            ended = Some(closed);
        }
    }
    let ended = ended.expect("closed");
    assert_eq!(ended.unanswered_outgoing.len(), 1);
    csms.on_closed(Some(session), Some(&cp), &ended);
    let record = csms.charge_point(&cp).unwrap();
    let last = record.extras.smart_charging.profiles.back().unwrap();
    assert_eq!(last.reason.as_str(), "ScheduleRejected");
    assert_eq!(last.answer.as_deref(), Some("Disconnected"));
}

/// A published OCMF record (KEBA KCP30, from the test data of the S.A.F.E. e.V. transparency
/// software, as `ocpp-model`'s tests cite it) and its meter's public key.
const KEBA_RECORD: &str = concat!(
    r#"OCMF|{"FV":"1.0","GI":"KEBA_KCP30","GS":"17619300","GV":"2.8.5","PG":"T32","IS":false,"#,
    r#""IL":"NONE","IF":["RFID_NONE","OCPP_NONE","ISO15118_NONE","PLMN_NONE"],"IT":"NONE","ID":"","#,
    r#""RD":[{"TM":"2019-08-13T10:03:15,000+0000 I","TX":"B","EF":"","ST":"G","RV":0.2596,"#,
    r#""RI":"1-b:1.8.0","RU":"kWh"},{"TM":"2019-08-13T10:03:36,000+0000 R","TX":"E","EF":"","#,
    r#""ST":"G","RV":0.2597,"RI":"1-b:1.8.0","RU":"kWh"}]}|{"SD":"304502200E2F107C987A300AC1"#,
    r#"695CA89EA149A8CDFA16188AF0A33EE64B67964AA943F9022100889A72B6D65364BEA8562E7F6A0253157AC"#,
    r#"FF84FE4929A93B5964D23C4265699"}"#,
);
const KEBA_KEY: &str = concat!(
    "3059301306072A8648CE3D020106082A8648CE3D030107034200043AEEB45C392357820A58FDFB",
    "0857BD77ADA31585C61C430531DFA53B440AFBFDD95AC887C658EA55260F808F55CA948DF235C2",
    "108A0D6DC7D4AB1A5E1A7955BE",
);

/// A signed meter value is kept verbatim with its transaction and its signature checked: the
/// meter's record verifies with the key the station sent; the same record with one digit
/// changed is kept too, and said not to verify.
#[test]
fn signed_meter_values_are_kept_verbatim_and_checked() {
    let csms = Csms::new(CsmsConfig::default());
    let cp = identity("CS-SIGNED");
    let session = csms.on_connected(&cp, OcppVersion::V2_0_1);
    let send = |action: &str, payload: &str| call(&csms, session, &cp, action, payload);
    let event = |kind: &str, seq: u32, data: &str| {
        let signed = serde_json::json!({
            "signedMeterData": data, "signingMethod": "ECDSA-secp256r1-SHA256",
            "encodingMethod": "OCMF", "publicKey": KEBA_KEY,
        });
        serde_json::json!({
            "eventType": kind, "timestamp": "2026-11-29T12:00:00Z", "triggerReason": "Authorized",
            "seqNo": seq, "transactionInfo": {"transactionId": "TX-S"},
            "evse": {"id": 1, "connectorId": 1},
            "meterValue": [{"timestamp": "2026-11-29T12:00:00Z", "sampledValue": [
                {"value": 259.7, "signedMeterValue": signed}
            ]}],
        })
        .to_string()
    };
    send("TransactionEvent", &event("Started", 0, KEBA_RECORD));
    let state = csms.charge_point(&cp).unwrap();
    let signed = *state.transactions[0].signed_meter.clone().expect("kept");
    assert_eq!(signed.data, KEBA_RECORD);
    assert_eq!(signed.encoding.as_deref(), Some("OCMF"));
    assert_eq!(signed.check, "verified with the key the station sent");

    let tampered = KEBA_RECORD.replacen("0.2597", "0.2598", 1);
    send("TransactionEvent", &event("Updated", 1, &tampered));
    let state = csms.charge_point(&cp).unwrap();
    let signed = *state.transactions[0].signed_meter.clone().expect("kept");
    assert_eq!(signed.data, tampered);
    assert!(
        signed
            .check
            .starts_with("not verified: the signature does not match"),
        "{}",
        signed.check
    );
}
