//! Each concept read from requests of 1.6, 2.0.1 and 2.1, decoded from their JSON as on the
//! wire.

use ocpp_messages::{DecodeOptions, OcppVersion, Request};
use ocpp_model::{
    BootReason, ConnectorStatus, Decimal, IdToken, IdTokenType, StationEvent, StopReason,
    TransactionId, TriggerReason,
};

fn request(version: OcppVersion, action: &str, json: &str) -> Request {
    Request::decode(version, action, json, &DecodeOptions::strict()).unwrap()
}

fn event(version: OcppVersion, action: &str, json: &str) -> StationEvent {
    StationEvent::from_request(&request(version, action, json))
}

const V16: OcppVersion = OcppVersion::V1_6;
const V2: [OcppVersion; 2] = [OcppVersion::V2_0_1, OcppVersion::V2_1];

#[test]
fn booted() {
    let StationEvent::Booted(b) = event(
        V16,
        "BootNotification",
        r#"{"chargePointVendor":"ACME","chargePointModel":"One","chargeBoxSerialNumber":"S1","firmwareVersion":"1.2"}"#,
    ) else {
        panic!()
    };
    assert_eq!((b.vendor.as_str(), b.model.as_str()), ("ACME", "One"));
    assert_eq!(
        (b.serial.as_deref(), b.firmware.as_deref()),
        (Some("S1"), Some("1.2"))
    );
    assert_eq!((b.reason, b.raw_reason), (BootReason::Unknown, None));
    for v in V2 {
        let StationEvent::Booted(b) = event(
            v,
            "BootNotification",
            r#"{"chargingStation":{"vendorName":"ACME","model":"One","serialNumber":"S1","firmwareVersion":"1.2"},"reason":"PowerUp"}"#,
        ) else {
            panic!()
        };
        assert_eq!((b.vendor.as_str(), b.model.as_str()), ("ACME", "One"));
        assert_eq!(
            (b.serial.as_deref(), b.firmware.as_deref()),
            (Some("S1"), Some("1.2"))
        );
        assert_eq!(b.reason, BootReason::PowerUp);
        assert_eq!(b.raw_reason.as_deref(), Some("PowerUp"));
    }
}

#[test]
fn status_changed() {
    let StationEvent::StatusChanged(s) = event(
        V16,
        "StatusNotification",
        r#"{"connectorId":2,"errorCode":"NoError","status":"SuspendedEVSE"}"#,
    ) else {
        panic!()
    };
    assert_eq!((s.evse, s.connector), (2, None));
    assert_eq!(
        (s.status, s.raw_status.as_str()),
        (ConnectorStatus::Occupied, "SuspendedEVSE")
    );
    assert_eq!(s.error_code.as_deref(), Some("NoError"));
    for v in V2 {
        let StationEvent::StatusChanged(s) = event(
            v,
            "StatusNotification",
            r#"{"timestamp":"2025-01-02T03:04:05Z","connectorStatus":"Faulted","evseId":2,"connectorId":1}"#,
        ) else {
            panic!()
        };
        assert_eq!((s.evse, s.connector), (2, Some(1)));
        assert_eq!(
            (s.status, s.raw_status.as_str()),
            (ConnectorStatus::Faulted, "Faulted")
        );
        assert_eq!(s.error_code, None);
    }
    // A negative 1.6 connector id is not read: the request stays as it came.
    let negative = request(
        V16,
        "StatusNotification",
        r#"{"connectorId":-1,"errorCode":"NoError","status":"Available"}"#,
    );
    assert_eq!(
        StationEvent::from_request(&negative),
        StationEvent::Other(negative.clone())
    );
}

#[test]
fn authorization_requested() {
    let StationEvent::AuthorizationRequested(a) = event(V16, "Authorize", r#"{"idTag":"04A2"}"#)
    else {
        panic!()
    };
    assert_eq!(a.token, IdToken::new("04A2", IdTokenType::Iso14443));
    let StationEvent::AuthorizationRequested(a) = event(
        OcppVersion::V2_0_1,
        "Authorize",
        r#"{"idToken":{"idToken":"EMP123","type":"eMAID"}}"#,
    ) else {
        panic!()
    };
    assert_eq!(a.token, IdToken::new("EMP123", IdTokenType::EMaid));
    // 2.1: the type is free text.
    let StationEvent::AuthorizationRequested(a) = event(
        OcppVersion::V2_1,
        "Authorize",
        r#"{"idToken":{"idToken":"X1","type":"DirectPayment"}}"#,
    ) else {
        panic!()
    };
    assert_eq!(a.token.kind, IdTokenType::Other("DirectPayment".into()));
}

#[test]
fn transaction_1_6() {
    let StationEvent::TransactionStarted(s) = event(
        V16,
        "StartTransaction",
        r#"{"connectorId":1,"idTag":"T","meterStart":1000,"reservationId":5,"timestamp":"2025-01-02T03:04:05Z"}"#,
    ) else {
        panic!()
    };
    assert_eq!(
        (s.id, s.evse, s.reservation, s.seq_no, s.offline),
        (None, Some(1), Some(5), None, false)
    );
    assert_eq!(s.readings[0].value, Some(Decimal::from(1000)));
    assert_eq!(s.readings[0].context, "Transaction.Begin");

    let StationEvent::TransactionUpdated(u) = event(
        V16,
        "MeterValues",
        r#"{"connectorId":1,"transactionId":7,"meterValue":[{"timestamp":"2025-01-02T03:05:05Z","sampledValue":[{"value":"1234.5","unit":"kWh","measurand":"Energy.Active.Import.Register","phase":"L1","location":"Outlet","context":"Sample.Clock"}]}]}"#,
    ) else {
        panic!()
    };
    assert_eq!(u.id, TransactionId::Number(7));
    let r = &u.readings[0];
    assert_eq!(
        (r.unit.as_str(), r.phase.as_deref(), r.context.as_str()),
        ("kWh", Some("L1"), "Sample.Clock")
    );
    assert_eq!(r.value.map(|v| v.to_string()).as_deref(), Some("1234.5"));

    let StationEvent::TransactionEnded(e) = event(
        V16,
        "StopTransaction",
        r#"{"transactionId":7,"meterStop":2000,"timestamp":"2025-01-02T04:00:00Z","reason":"SoftReset","idTag":"T"}"#,
    ) else {
        panic!()
    };
    assert_eq!(e.id, TransactionId::Number(7));
    assert_eq!(
        (e.reason, e.raw_reason.as_deref()),
        (StopReason::ImmediateReset, Some("SoftReset"))
    );
    assert_eq!(e.readings.last().unwrap().value, Some(Decimal::from(2000)));
    assert_eq!(e.readings.last().unwrap().context, "Transaction.End");
    // No reason: Local.
    let StationEvent::TransactionEnded(e) = event(
        V16,
        "StopTransaction",
        r#"{"transactionId":7,"meterStop":2000,"timestamp":"2025-01-02T04:00:00Z"}"#,
    ) else {
        panic!()
    };
    assert_eq!((e.reason, e.raw_reason), (StopReason::Local, None));
}

#[test]
fn transaction_2_x() {
    for v in V2 {
        let StationEvent::TransactionStarted(s) = event(
            v,
            "TransactionEvent",
            r#"{"eventType":"Started","timestamp":"2025-01-02T03:04:05Z","triggerReason":"CablePluggedIn","seqNo":0,"offline":true,"transactionInfo":{"transactionId":"tx-1","remoteStartId":9},"evse":{"id":1,"connectorId":2},"idToken":{"idToken":"T","type":"ISO14443"}}"#,
        ) else {
            panic!()
        };
        assert_eq!(s.id, Some(TransactionId::Text("tx-1".into())));
        assert_eq!(
            (s.evse, s.connector, s.seq_no, s.offline),
            (Some(1), Some(2), Some(0), true)
        );
        assert_eq!(
            (s.trigger, s.remote_start_id),
            (Some(TriggerReason::CablePluggedIn), Some(9))
        );
        assert_eq!(s.token, Some(IdToken::from_id_tag("T")));

        let StationEvent::TransactionUpdated(u) = event(
            v,
            "TransactionEvent",
            r#"{"eventType":"Updated","timestamp":"2025-01-02T03:05:05Z","triggerReason":"MeterValuePeriodic","seqNo":1,"transactionInfo":{"transactionId":"tx-1"},"meterValue":[{"timestamp":"2025-01-02T03:05:05Z","sampledValue":[{"value":7.25,"measurand":"Current.Import","phase":"L2","unitOfMeasure":{"unit":"A"}}]}]}"#,
        ) else {
            panic!()
        };
        assert_eq!(
            (u.seq_no, u.trigger),
            (Some(1), Some(TriggerReason::MeterValuePeriodic))
        );
        let r = &u.readings[0];
        assert_eq!(
            (r.measurand.as_str(), r.unit.as_str(), r.phase.as_deref()),
            ("Current.Import", "A", Some("L2"))
        );
        assert_eq!(r.value, Some(Decimal::new(725, 2)));

        let StationEvent::TransactionEnded(e) = event(
            v,
            "TransactionEvent",
            r#"{"eventType":"Ended","timestamp":"2025-01-02T04:00:00Z","triggerReason":"EVDeparted","seqNo":2,"transactionInfo":{"transactionId":"tx-1","stoppedReason":"EVDisconnected"}}"#,
        ) else {
            panic!()
        };
        assert_eq!(
            (e.reason, e.raw_reason.as_deref()),
            (StopReason::EvDisconnected, Some("EVDisconnected"))
        );
        assert_eq!(e.trigger, Some(TriggerReason::EvDeparted));
    }
}

#[test]
fn meter_readings_and_signed_values() {
    // 1.6: a signed sample is folded into the plain sample of the same reading.
    let StationEvent::MeterReadings(m) = event(
        V16,
        "MeterValues",
        r#"{"connectorId":0,"meterValue":[{"timestamp":"2025-01-02T03:05:05Z","sampledValue":[{"value":"OCMF|{}|{}","format":"SignedData"},{"value":"2935.600"},{"value":"230.1","measurand":"Voltage","unit":"V"},{"value":"LONE","format":"SignedData","measurand":"Power.Active.Import"}]}]}"#,
    ) else {
        panic!()
    };
    assert_eq!(m.evse, 0);
    assert_eq!(m.readings.len(), 3);
    let energy = &m.readings[0];
    assert_eq!(
        energy.value.map(|v| v.to_string()).as_deref(),
        Some("2935.600")
    );
    assert_eq!(
        energy.signed.as_ref().unwrap().signed_meter_data,
        "OCMF|{}|{}"
    );
    assert_eq!(m.readings[1].signed, None);
    // A signed sample alone: no value, the blob kept.
    assert_eq!(m.readings[2].value, None);
    assert_eq!(
        m.readings[2].signed.as_ref().unwrap().signed_meter_data,
        "LONE"
    );

    let json_2_0_1 = r#"{"evseId":1,"meterValue":[{"timestamp":"2025-01-02T03:05:05Z","sampledValue":[{"value":2935.6,"signedMeterValue":{"signedMeterData":"DATA","signingMethod":"ECDSA","encodingMethod":"OCMF","publicKey":""}}]}]}"#;
    let StationEvent::MeterReadings(m) = event(OcppVersion::V2_0_1, "MeterValues", json_2_0_1)
    else {
        panic!()
    };
    let signed = m.readings[0].signed.as_ref().unwrap();
    assert_eq!(signed.signing_method.as_deref(), Some("ECDSA"));
    assert_eq!(signed.encoding_method.as_deref(), Some("OCMF"));
    assert_eq!(signed.public_key, None); // empty: left out
    let json_2_1 = r#"{"evseId":1,"meterValue":[{"timestamp":"2025-01-02T03:05:05Z","sampledValue":[{"value":2935.6,"signedMeterValue":{"signedMeterData":"DATA","encodingMethod":"OCMF"}}]}]}"#;
    let StationEvent::MeterReadings(m) = event(OcppVersion::V2_1, "MeterValues", json_2_1) else {
        panic!()
    };
    let signed = m.readings[0].signed.as_ref().unwrap();
    assert_eq!(
        (
            signed.signing_method.as_deref(),
            signed.encoding_method.as_deref()
        ),
        (None, Some("OCMF"))
    );
    assert_eq!(m.readings[0].value, Some("2935.600".parse().unwrap()));
}

#[test]
fn notifications() {
    for v in OcppVersion::ALL {
        assert_eq!(
            event(v, "Heartbeat", "{}"),
            StationEvent::Heartbeat(ocpp_model::Heartbeat)
        );
        let StationEvent::SecurityEvent(s) = event(
            v,
            "SecurityEventNotification",
            r#"{"type":"FirmwareUpdated","timestamp":"2025-01-02T03:04:05Z","techInfo":"x"}"#,
        ) else {
            panic!()
        };
        assert_eq!(
            (s.kind.as_str(), s.tech_info.as_deref()),
            ("FirmwareUpdated", Some("x"))
        );
        let StationEvent::LogStatus(l) = event(
            v,
            "LogStatusNotification",
            r#"{"status":"Uploaded","requestId":3}"#,
        ) else {
            panic!()
        };
        assert_eq!((l.status.as_str(), l.request_id), ("Uploaded", Some(3)));
    }
    let StationEvent::FirmwareStatus(f) = event(
        V16,
        "FirmwareStatusNotification",
        r#"{"status":"Installed"}"#,
    ) else {
        panic!()
    };
    assert_eq!((f.status.as_str(), f.request_id), ("Installed", None));
    for v in V2 {
        let StationEvent::FirmwareStatus(f) = event(
            v,
            "FirmwareStatusNotification",
            r#"{"status":"Installed","requestId":4}"#,
        ) else {
            panic!()
        };
        assert_eq!((f.status.as_str(), f.request_id), ("Installed", Some(4)));
    }
}

#[test]
fn other_requests_stay_as_they_came() {
    for (v, action) in [
        (V16, "ClearCache"),
        (OcppVersion::V2_0_1, "ClearCache"),
        (OcppVersion::V2_1, "ClearCache"),
    ] {
        let raw = request(v, action, "{}");
        assert_eq!(
            StationEvent::from_request(&raw),
            StationEvent::Other(raw.clone())
        );
    }
}
