//! Neutral answers made into each version's response: the right action, schema-valid, and a
//! typed error where the answer does not fit.

use ocpp_messages::{DateTime, DecodeOptions, OcppVersion, Request};
use ocpp_model::{
    respond, Authorization, AuthorizationStatus, BootAnswer, EventAnswer, IdToken, ModelError,
    RegistrationStatus, StationEvent,
};

fn event(version: OcppVersion, action: &str, json: &str) -> StationEvent {
    StationEvent::from_request(
        &Request::decode(version, action, json, &DecodeOptions::strict()).unwrap(),
    )
}

fn time() -> DateTime {
    "2025-01-02T03:04:05Z".parse().unwrap()
}

fn authorization() -> Authorization {
    Authorization {
        status: AuthorizationStatus::NotAtThisTime,
        expiry: Some(time()),
        group: Some(IdToken::from_id_tag("GROUP")),
    }
}

/// (event JSON per version: 1.6, 2.x), the answer, the action of the response.
fn cases() -> Vec<(
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    EventAnswer,
)> {
    let tx = EventAnswer::transaction(Some(42), Some(authorization()));
    vec![
        (
            "BootNotification",
            r#"{"chargePointVendor":"A","chargePointModel":"B"}"#,
            "BootNotification",
            r#"{"chargingStation":{"vendorName":"A","model":"B"},"reason":"PowerUp"}"#,
            EventAnswer::Boot(BootAnswer {
                status: RegistrationStatus::Accepted,
                interval_s: 300,
                current_time: time(),
            }),
        ),
        (
            "Heartbeat",
            "{}",
            "Heartbeat",
            "{}",
            EventAnswer::Heartbeat {
                current_time: time(),
            },
        ),
        (
            "Authorize",
            r#"{"idTag":"T"}"#,
            "Authorize",
            r#"{"idToken":{"idToken":"T","type":"ISO14443"}}"#,
            EventAnswer::Authorization(authorization()),
        ),
        (
            "StartTransaction",
            r#"{"connectorId":1,"idTag":"T","meterStart":0,"timestamp":"2025-01-02T03:04:05Z"}"#,
            "TransactionEvent",
            r#"{"eventType":"Started","timestamp":"2025-01-02T03:04:05Z","triggerReason":"Authorized","seqNo":0,"transactionInfo":{"transactionId":"t"}}"#,
            tx.clone(),
        ),
        (
            "MeterValues",
            r#"{"connectorId":1,"transactionId":42,"meterValue":[{"timestamp":"2025-01-02T03:04:05Z","sampledValue":[{"value":"1"}]}]}"#,
            "TransactionEvent",
            r#"{"eventType":"Updated","timestamp":"2025-01-02T03:04:05Z","triggerReason":"MeterValuePeriodic","seqNo":1,"transactionInfo":{"transactionId":"t"}}"#,
            EventAnswer::Received,
        ),
        (
            "StopTransaction",
            r#"{"transactionId":42,"meterStop":1,"timestamp":"2025-01-02T03:04:05Z"}"#,
            "TransactionEvent",
            r#"{"eventType":"Ended","timestamp":"2025-01-02T03:04:05Z","triggerReason":"EVDeparted","seqNo":2,"transactionInfo":{"transactionId":"t"}}"#,
            tx,
        ),
        (
            "StatusNotification",
            r#"{"connectorId":1,"errorCode":"NoError","status":"Available"}"#,
            "StatusNotification",
            r#"{"timestamp":"2025-01-02T03:04:05Z","connectorStatus":"Available","evseId":1,"connectorId":1}"#,
            EventAnswer::Received,
        ),
        (
            "MeterValues",
            r#"{"connectorId":0,"meterValue":[{"timestamp":"2025-01-02T03:04:05Z","sampledValue":[{"value":"1"}]}]}"#,
            "MeterValues",
            r#"{"evseId":0,"meterValue":[{"timestamp":"2025-01-02T03:04:05Z","sampledValue":[{"value":1}]}]}"#,
            EventAnswer::Received,
        ),
        (
            "SecurityEventNotification",
            r#"{"type":"X","timestamp":"2025-01-02T03:04:05Z"}"#,
            "SecurityEventNotification",
            r#"{"type":"X","timestamp":"2025-01-02T03:04:05Z"}"#,
            EventAnswer::Received,
        ),
        (
            "FirmwareStatusNotification",
            r#"{"status":"Installed"}"#,
            "FirmwareStatusNotification",
            r#"{"status":"Installed"}"#,
            EventAnswer::Received,
        ),
        (
            "LogStatusNotification",
            r#"{"status":"Uploaded"}"#,
            "LogStatusNotification",
            r#"{"status":"Uploaded"}"#,
            EventAnswer::Received,
        ),
    ]
}

#[test]
fn every_answer_in_every_version_is_its_action_and_valid() {
    for (action_1_6, json_1_6, action_2, json_2, answer) in cases() {
        for version in OcppVersion::ALL {
            let (action, json) = if version == OcppVersion::V1_6 {
                (action_1_6, json_1_6)
            } else {
                (action_2, json_2)
            };
            let response = respond(&event(version, action, json), &answer, version)
                .unwrap_or_else(|e| panic!("{action} {version}: {e}"));
            assert_eq!(response.action(), action, "{version}");
            assert_eq!(response.version(), version);
            response.validate().unwrap();
        }
    }
}

#[test]
fn authorization_is_translated_per_version() {
    let e = event(OcppVersion::V1_6, "Authorize", r#"{"idTag":"T"}"#);
    let r = respond(
        &e,
        &EventAnswer::Authorization(authorization()),
        OcppVersion::V1_6,
    )
    .unwrap();
    assert_eq!(
        serde_json::to_string(&r).unwrap(),
        r#"{"idTagInfo":{"expiryDate":"2025-01-02T03:04:05Z","parentIdTag":"GROUP","status":"Invalid"}}"#
    );
    let e = event(
        OcppVersion::V2_0_1,
        "Authorize",
        r#"{"idToken":{"idToken":"T","type":"ISO14443"}}"#,
    );
    let r = respond(
        &e,
        &EventAnswer::Authorization(authorization()),
        OcppVersion::V2_0_1,
    )
    .unwrap();
    assert_eq!(
        serde_json::to_string(&r).unwrap(),
        r#"{"idTokenInfo":{"status":"NotAtThisTime","cacheExpiryDateTime":"2025-01-02T03:04:05Z","groupIdToken":{"idToken":"GROUP","type":"ISO14443"}}}"#
    );
}

#[test]
fn a_1_6_start_needs_its_id_and_authorization() {
    let e = event(
        OcppVersion::V1_6,
        "StartTransaction",
        r#"{"connectorId":1,"idTag":"T","meterStart":0,"timestamp":"2025-01-02T03:04:05Z"}"#,
    );
    let answer = EventAnswer::transaction(None, Some(authorization()));
    assert!(matches!(
        respond(&e, &answer, OcppVersion::V1_6),
        Err(ModelError::Missing {
            field: "transaction_id",
            ..
        })
    ));
    assert!(matches!(
        respond(
            &e,
            &EventAnswer::Heartbeat {
                current_time: time()
            },
            OcppVersion::V1_6
        ),
        Err(ModelError::AnswerMismatch { .. })
    ));
    // A parentIdTag longer than 1.6's 20 characters is refused, not cut.
    let long = EventAnswer::Authorization(Authorization {
        group: Some(IdToken::from_id_tag("G".repeat(21))),
        ..Authorization::new(AuthorizationStatus::Accepted)
    });
    let e = event(OcppVersion::V1_6, "Authorize", r#"{"idTag":"T"}"#);
    assert!(matches!(
        respond(&e, &long, OcppVersion::V1_6),
        Err(ModelError::OutOfRange { .. })
    ));
}

#[test]
fn a_signed_firmware_status_is_answered_as_such() {
    let e = event(
        OcppVersion::V1_6,
        "SignedFirmwareStatusNotification",
        r#"{"status":"Installed"}"#,
    );
    let r = respond(&e, &EventAnswer::Received, OcppVersion::V1_6).unwrap();
    assert_eq!(r.action(), "SignedFirmwareStatusNotification");
}

#[test]
fn other_is_not_modelled() {
    let e = event(OcppVersion::V2_0_1, "ClearCache", "{}");
    assert_eq!(
        respond(&e, &EventAnswer::Received, OcppVersion::V2_0_1),
        Err(ModelError::NotModelled {
            action: "ClearCache"
        })
    );
}

/// A report or notification the model does not read is acknowledged with `Received` in every
/// version (its empty response); a request whose response needs fields is not.
#[test]
fn received_acknowledges_any_notification_of_every_version() {
    let cases = [
        (
            OcppVersion::V1_6,
            "DiagnosticsStatusNotification",
            r#"{"status":"Uploaded"}"#,
        ),
        (
            OcppVersion::V2_0_1,
            "NotifyReport",
            r#"{"requestId":1,"generatedAt":"2025-01-02T03:04:05Z","seqNo":0}"#,
        ),
        (
            OcppVersion::V2_1,
            "ReservationStatusUpdate",
            r#"{"reservationId":3,"reservationUpdateStatus":"Expired"}"#,
        ),
    ];
    for (version, action, payload) in cases {
        let e = event(version, action, payload);
        assert!(matches!(e, StationEvent::Other(_)), "{action}");
        let response = respond(&e, &EventAnswer::Received, version).unwrap();
        assert_eq!(response.action(), action);
        assert_eq!(serde_json::to_string(&response).unwrap(), "{}");
        // Not for another version than the request's.
        let other = if version == OcppVersion::V1_6 {
            OcppVersion::V2_0_1
        } else {
            OcppVersion::V1_6
        };
        assert!(matches!(
            respond(&e, &EventAnswer::Received, other),
            Err(ModelError::NotModelled { .. })
        ));
    }
    // DataTransfer's response needs a status: "received" is not an answer to it.
    let e = event(OcppVersion::V2_0_1, "DataTransfer", r#"{"vendorId":"V"}"#);
    assert_eq!(
        respond(&e, &EventAnswer::Received, OcppVersion::V2_0_1),
        Err(ModelError::NotModelled {
            action: "DataTransfer"
        })
    );
}

/// 2.x answers carry the total cost exactly; 1.6 has no place for it.
#[test]
fn total_cost_goes_into_2x_transaction_answers_only() {
    let ended = event(
        OcppVersion::V2_0_1,
        "TransactionEvent",
        r#"{"eventType":"Ended","timestamp":"2025-01-02T03:04:05Z","triggerReason":"EVDeparted","seqNo":3,"transactionInfo":{"transactionId":"T1"}}"#,
    );
    let answer = EventAnswer::transaction(None, None).with_total_cost("12.50".parse().unwrap());
    let response = respond(&ended, &answer, OcppVersion::V2_0_1).unwrap();
    assert_eq!(
        serde_json::to_string(&response).unwrap(),
        r#"{"totalCost":12.50}"#
    );
    let stop = event(
        OcppVersion::V1_6,
        "StopTransaction",
        r#"{"transactionId":7,"meterStop":10,"timestamp":"2025-01-02T03:04:05Z"}"#,
    );
    let response = respond(&stop, &answer, OcppVersion::V1_6).unwrap();
    assert_eq!(serde_json::to_string(&response).unwrap(), "{}");
}
