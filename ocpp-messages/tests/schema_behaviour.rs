//! Behaviour of the typed API through its public surface: decode errors and their kinds,
//! lenient mode, actions, SEND-only, typed response decoding, date-times.

use ocpp_messages::action::{ActionRequest, OcppAction, Payload};
use ocpp_messages::{
    v1_6, v2_0_1, v2_1, DateTime, DecodeError, DecodeOptions, Mode, ViolationKind,
};

fn kind(result: Result<impl std::fmt::Debug, DecodeError>) -> Option<ViolationKind> {
    result.expect_err("must be refused").violation_kind()
}

#[test]
fn action_names_round_trip_and_counts() {
    assert_eq!(v1_6::Action::ALL.len(), 39);
    assert_eq!(v2_0_1::Action::ALL.len(), 64);
    assert_eq!(v2_1::Action::ALL.len(), 91);
    for a in v2_1::Action::ALL {
        assert_eq!(a.as_str().parse::<v2_1::Action>(), Ok(a));
    }
    assert!(
        "bootnotification".parse::<v1_6::Action>().is_err(),
        "names are case-sensitive"
    );
    let send_only: Vec<_> = v2_1::Action::ALL
        .iter()
        .filter(|a| !a.has_response())
        .collect();
    assert_eq!(send_only, [&v2_1::Action::NotifyPeriodicEventStream]);
    assert!(v2_0_1::Action::ALL.iter().all(|a| a.has_response()));
}

#[test]
fn error_kinds() {
    assert!(
        matches!(v1_6::decode_call("Nope", "{}"), Err(DecodeError::UnknownAction(a)) if a == "Nope")
    );
    assert_eq!(
        kind(v1_6::decode_call("Heartbeat", "{")),
        Some(ViolationKind::Format)
    );
    assert_eq!(
        kind(v1_6::decode_call("Heartbeat", "[]")),
        Some(ViolationKind::Format)
    );
    assert_eq!(
        kind(v1_6::decode_call("Heartbeat", r#"{"x":1}"#)),
        Some(ViolationKind::Format)
    );
    let boot = |p: &str| v1_6::decode_call("BootNotification", p);
    assert_eq!(
        kind(boot(r#"{"chargePointVendor":"V"}"#)),
        Some(ViolationKind::Occurrence)
    );
    assert_eq!(
        kind(boot(r#"{"chargePointVendor":"V","chargePointModel":5}"#)),
        Some(ViolationKind::Type)
    );
    let long = "M".repeat(21);
    let err = boot(&format!(
        r#"{{"chargePointVendor":"V","chargePointModel":"{long}"}}"#
    ))
    .unwrap_err();
    let DecodeError::Violation(v) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(v.kind(), ViolationKind::Property);
    assert_eq!(v.path(), "chargePointModel");
    assert!(v.rule().contains("maxLength 20"), "{v}");
    // 20 characters of 2 bytes each are fine: lengths count characters.
    assert!(boot(&format!(
        r#"{{"chargePointVendor":"V","chargePointModel":"{}"}}"#,
        "é".repeat(20)
    ))
    .is_ok());

    let status = r#"{"connectorId":1,"errorCode":"NoError","status":"Parking"}"#;
    let err = v1_6::decode_call("StatusNotification", status).unwrap_err();
    let DecodeError::Violation(v) = &err else {
        panic!("{err:?}")
    };
    assert_eq!((v.kind(), v.path()), (ViolationKind::Property, "status"));

    let mv = r#"{"connectorId":1,"meterValue":[{"timestamp":"2025-01-01T00:00:00Z","sampledValue":[{"value":"1","unit":"Parsec"}]}]}"#;
    let err = v1_6::decode_call("MeterValues", mv).unwrap_err();
    let DecodeError::Violation(v) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(v.path(), "meterValue[0].sampledValue[0].unit");
    let mv = r#"{"connectorId":1,"meterValue":[]}"#;
    assert_eq!(
        kind(v1_6::decode_call("MeterValues", mv)),
        Some(ViolationKind::Occurrence)
    );
    let hb = r#"{"currentTime":"2025-01-01 00:00:00"}"#;
    assert_eq!(
        kind(v1_6::decode_result("Heartbeat", hb)),
        Some(ViolationKind::Format)
    );
    // 2.x: null is not an absent optional property
    let boot2 = r#"{"reason":"PowerUp","chargingStation":{"model":"M","vendorName":"V","serialNumber":null}}"#;
    assert_eq!(
        kind(v2_0_1::decode_call("BootNotification", boot2)),
        Some(ViolationKind::Type)
    );
    assert!(matches!(
        v2_1::decode_result("NotifyPeriodicEventStream", "{}"),
        Err(DecodeError::NoResponse("NotifyPeriodicEventStream"))
    ));
}

#[test]
fn lenient_mode_keeps_unknown_values_and_ignores_extra_fields() {
    let status = r#"{"connectorId":1,"errorCode":"NoError","status":"Parking","vendorExtra":true}"#;
    let options = DecodeOptions::strict().with_lenient_action("StatusNotification");
    assert_eq!(options.mode_for("StatusNotification"), Mode::Lenient);
    let request = v1_6::decode_call_with("StatusNotification", status, &options).expect("lenient");
    let v1_6::Request::StatusNotification(s) = &request else {
        panic!("{request:?}")
    };
    assert_eq!(
        s.status,
        v1_6::ChargePointStatus::Unrecognized("Parking".into())
    );
    assert!(!s.status.is_recognized());
    assert_eq!(s.status.as_str(), "Parking");
    // Extra field dropped; the unknown value is written back as it came.
    assert_eq!(
        request.to_json().unwrap(),
        r#"{"connectorId":1,"errorCode":"NoError","status":"Parking"}"#
    );
    // Other actions stay strict, and lenient mode still enforces types and lengths.
    assert!(v1_6::decode_call_with("Authorize", r#"{"idTag":"A","x":1}"#, &options).is_err());
    let bad = r#"{"connectorId":"1","errorCode":"NoError","status":"Available"}"#;
    assert_eq!(
        kind(v1_6::decode_call_with("StatusNotification", bad, &options)),
        Some(ViolationKind::Type)
    );
    // Lenient: null counts as an absent optional property.
    let boot2 = r#"{"reason":"PowerUp","chargingStation":{"model":"M","vendorName":"V","serialNumber":null}}"#;
    assert!(v2_0_1::decode_call_with("BootNotification", boot2, &DecodeOptions::lenient()).is_ok());
    // Strict FromStr refuses what lenient decoding keeps.
    assert!("Parking".parse::<v1_6::ChargePointStatus>().is_err());
    assert_eq!(
        "Charging".parse::<v1_6::ChargePointStatus>(),
        Ok(v1_6::ChargePointStatus::Charging)
    );
}

#[test]
fn typed_calls_know_their_response() {
    let request = v2_0_1::HeartbeatRequest { custom_data: None };
    assert_eq!(request.action_name(), "Heartbeat");
    assert_eq!(<v2_0_1::Heartbeat as OcppAction>::NAME, "Heartbeat");
    let response =
        v2_0_1::HeartbeatRequest::decode_response(r#"{"currentTime":"2025-06-01T12:00:00+02:00"}"#)
            .unwrap();
    assert_eq!(response.current_time.unix_timestamp(), 1_748_772_000);
    let response = v2_0_1::HeartbeatResponse::decode_with(
        r#"{"currentTime":"2025-06-01T12:00:00Z"}"#,
        Mode::Strict,
    );
    assert!(response.is_ok());
}

#[test]
fn built_values_validate_and_encode_without_absent_fields() {
    let response = v1_6::BootNotificationResponse {
        current_time: DateTime::from_unix_timestamp(1_700_000_000).unwrap(),
        interval: 300,
        status: v1_6::RegistrationStatus::Accepted,
    };
    assert!(response.validate().is_ok());
    assert_eq!(
        serde_json::to_string(&response).unwrap(),
        r#"{"status":"Accepted","currentTime":"2023-11-14T22:13:20Z","interval":300}"#
    );
    let too_long = v1_6::AuthorizeRequest {
        id_tag: "X".repeat(21),
    };
    assert_eq!(
        too_long.validate().unwrap_err().kind(),
        ViolationKind::Property
    );
}

#[test]
fn date_times_round_trip_exactly() {
    for text in [
        "2025-01-02T03:04:05Z",
        "2025-01-02T03:04:05.1Z",
        "2025-01-02T03:04:05.123456789123+05:30",
        "2024-02-29T23:59:59-00:00",
        "2016-12-31T23:59:60Z",
        "2025-01-02t03:04:05z",
    ] {
        let t: DateTime = text.parse().unwrap();
        assert_eq!(t.to_string(), text);
        assert_eq!(serde_json::to_string(&t).unwrap(), format!("\"{text}\""));
    }
    for text in [
        "2025-01-02T03:04:05",
        "2025-01-02 03:04:05Z",
        "2023-02-29T00:00:00Z",
        "2025-13-01T00:00:00Z",
        "2025-01-01T24:00:00Z",
        "2025-01-01T12:00:60Z",
        "2025-01-01T00:00:00.Z",
        "2025-01-01T00:00:00+0100",
        "",
    ] {
        assert!(DateTime::parse(text).is_err(), "{text}");
    }
    let t = DateTime::parse("2025-01-02T03:04:05.5-01:30").unwrap();
    assert_eq!(
        (
            t.hour(),
            t.minute(),
            t.second(),
            t.nanosecond(),
            t.offset_minutes()
        ),
        (3, 4, 5, 500_000_000, -90)
    );
}
