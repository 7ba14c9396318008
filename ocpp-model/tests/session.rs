//! One charging session (Authorize, start, meter values with a `2935.600` register and a
//! signed meter value, stop), written as 1.6 messages and as 2.0.1 messages, gives the same
//! neutral events with exact values. What only one version says is set aside first, and named:
//! the transaction's id (1.6: none at the start, then the CSMS's integer; 2.0.1: the station's
//! string), 2.x's seqNo and trigger reason, and the signature's metadata that 2.0.1 carries
//! beside the signed data and 1.6 inside it.

use ocpp_messages::{DecodeOptions, OcppVersion, Request};
use ocpp_model::{Decimal, MeterReading, StationEvent, TransactionId};

fn events(version: OcppVersion, messages: &[(&str, &str)]) -> Vec<StationEvent> {
    messages
        .iter()
        .map(|(action, json)| {
            let request = Request::decode(version, action, json, &DecodeOptions::strict()).unwrap();
            StationEvent::from_request(&request)
        })
        .collect()
}

const SIGNED: &str =
    "OCMF|{\"RD\":[{\"RV\":2935.600,\"RI\":\"1-b:1.8.0\",\"RU\":\"kWh\"}]}|{\"SD\":\"3045\"}";

fn session_1_6() -> Vec<StationEvent> {
    let meter_values = format!(
        r#"{{"connectorId":1,"transactionId":17,"meterValue":[{{"timestamp":"2025-01-02T03:20:00Z","sampledValue":[{{"value":"2935.600","measurand":"Energy.Active.Import.Register","unit":"kWh","context":"Sample.Periodic"}},{{"value":{signed},"format":"SignedData","measurand":"Energy.Active.Import.Register","unit":"kWh","context":"Sample.Periodic"}}]}}]}}"#,
        signed = serde_json::to_string(SIGNED).unwrap()
    );
    events(
        OcppVersion::V1_6,
        &[
            ("Authorize", r#"{"idTag":"04A2B3C4"}"#),
            (
                "StartTransaction",
                r#"{"connectorId":1,"idTag":"04A2B3C4","meterStart":2935000,"timestamp":"2025-01-02T03:04:05Z"}"#,
            ),
            ("MeterValues", &meter_values),
            (
                "StopTransaction",
                r#"{"transactionId":17,"idTag":"04A2B3C4","meterStop":2936100,"timestamp":"2025-01-02T03:40:00Z","reason":"EVDisconnected"}"#,
            ),
        ],
    )
}

fn session_2_0_1() -> Vec<StationEvent> {
    let updated = format!(
        r#"{{"eventType":"Updated","timestamp":"2025-01-02T03:20:00Z","triggerReason":"MeterValuePeriodic","seqNo":1,"transactionInfo":{{"transactionId":"tx-17"}},"evse":{{"id":1}},"meterValue":[{{"timestamp":"2025-01-02T03:20:00Z","sampledValue":[{{"value":2935.600,"measurand":"Energy.Active.Import.Register","unitOfMeasure":{{"unit":"kWh"}},"context":"Sample.Periodic","signedMeterValue":{{"signedMeterData":{signed},"signingMethod":"ECDSA-secp256r1-SHA256","encodingMethod":"OCMF","publicKey":"MFkw"}}}}]}}]}}"#,
        signed = serde_json::to_string(SIGNED).unwrap()
    );
    events(
        OcppVersion::V2_0_1,
        &[
            (
                "Authorize",
                r#"{"idToken":{"idToken":"04A2B3C4","type":"ISO14443"}}"#,
            ),
            (
                "TransactionEvent",
                r#"{"eventType":"Started","timestamp":"2025-01-02T03:04:05Z","triggerReason":"Authorized","seqNo":0,"transactionInfo":{"transactionId":"tx-17"},"evse":{"id":1},"idToken":{"idToken":"04A2B3C4","type":"ISO14443"},"meterValue":[{"timestamp":"2025-01-02T03:04:05Z","sampledValue":[{"value":2935000,"context":"Transaction.Begin"}]}]}"#,
            ),
            ("TransactionEvent", &updated),
            (
                "TransactionEvent",
                r#"{"eventType":"Ended","timestamp":"2025-01-02T03:40:00Z","triggerReason":"EVDeparted","seqNo":2,"transactionInfo":{"transactionId":"tx-17","stoppedReason":"EVDisconnected"},"idToken":{"idToken":"04A2B3C4","type":"ISO14443"},"meterValue":[{"timestamp":"2025-01-02T03:40:00Z","sampledValue":[{"value":2936100,"context":"Transaction.End"}]}]}"#,
            ),
        ],
    )
}

/// Sets aside what only one version says (see the module).
fn neutral(mut events: Vec<StationEvent>) -> Vec<StationEvent> {
    let id = TransactionId::Text("the transaction".into());
    let readings = |readings: &mut Vec<MeterReading>| {
        for reading in readings {
            if let Some(signed) = &mut reading.signed {
                signed.signing_method = None;
                signed.encoding_method = None;
                signed.public_key = None;
            }
        }
    };
    for event in &mut events {
        match event {
            StationEvent::TransactionStarted(e) => {
                (e.id, e.seq_no, e.trigger, e.raw_trigger) = (None, None, None, None);
                readings(&mut e.readings);
            }
            StationEvent::TransactionUpdated(e) => {
                (e.id, e.seq_no, e.trigger, e.raw_trigger) = (id.clone(), None, None, None);
                readings(&mut e.readings);
            }
            StationEvent::TransactionEnded(e) => {
                (e.id, e.seq_no, e.trigger, e.raw_trigger) = (id.clone(), None, None, None);
                e.evse = None;
                readings(&mut e.readings);
            }
            _ => {}
        }
    }
    events
}

#[test]
fn the_same_session_in_1_6_and_2_0_1_gives_the_same_events() {
    let (v16, v201) = (session_1_6(), session_2_0_1());
    assert_eq!(neutral(v16.clone()), neutral(v201.clone()));

    // The values are exact, as sent.
    let StationEvent::TransactionUpdated(updated) = &v16[2] else {
        panic!()
    };
    let register = &updated.readings[0];
    assert_eq!(
        register.value.map(|v| v.to_string()).as_deref(),
        Some("2935.600")
    );
    assert_eq!(register.value, Some(Decimal::new(2935600, 3)));
    assert_eq!(register.signed.as_ref().unwrap().signed_meter_data, SIGNED);
    let StationEvent::TransactionUpdated(updated) = &v201[2] else {
        panic!()
    };
    assert_eq!(updated.readings[0].value, Some(Decimal::new(2935600, 3)));
    let signed = updated.readings[0].signed.as_ref().unwrap();
    assert_eq!(signed.signed_meter_data, SIGNED);
    assert_eq!(signed.encoding_method.as_deref(), Some("OCMF"));
    assert_eq!(signed.public_key.as_deref(), Some("MFkw"));

    // What was set aside.
    let StationEvent::TransactionUpdated(u16) = &v16[2] else {
        panic!()
    };
    assert_eq!(u16.id, TransactionId::Number(17));
    assert_eq!(
        (updated.id.clone(), updated.seq_no),
        (TransactionId::Text("tx-17".into()), Some(1))
    );
}
