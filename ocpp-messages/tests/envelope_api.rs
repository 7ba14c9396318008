//! The envelope's public API beyond the bad-input rules: owned forms, writers, spellings.

use std::borrow::Cow;

use ocpp_messages::envelope::{
    parse, to_payload, write_call, write_call_error, write_call_result, Call, CallError,
    CallResult, MessageId, MessageTypeId, RpcMessage, SerializeError,
};
use ocpp_messages::error_code::ErrorCode;
use ocpp_messages::version::OcppVersion::{self, V1_6, V2_0_1, V2_1};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

#[derive(Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
struct BootNotification<'a> {
    charge_point_vendor: &'a str,
    charge_point_model: &'a str,
}

#[test]
fn parse_borrows_and_payload_decodes_later() {
    let bytes = br#"[2,"19223201","BootNotification",{"chargePointVendor":"VendorX","chargePointModel":"SingleSocketCharger"}]"#;
    let RpcMessage::Call(call) = parse(bytes, V1_6).unwrap() else {
        panic!("not a CALL")
    };
    assert!(matches!(call.action, Cow::Borrowed(_)));
    assert!(matches!(call.payload, Cow::Borrowed(_)));
    let req: BootNotification<'_> = call.deserialize_payload().unwrap();
    assert_eq!(req.charge_point_vendor, "VendorX");
    // The owned form outlives the input.
    let owned: RpcMessage<'static> = RpcMessage::Call(call.clone()).into_owned();
    assert_eq!(owned, RpcMessage::Call(call));
}

#[test]
fn escaped_strings_are_decoded() {
    let bytes = br#"[4,"a\"b","Formation\u0056iolation","line\nbreak \u00e9",{"k":"\u0000"}]"#;
    let RpcMessage::CallError(e) = parse(bytes, V1_6).unwrap() else {
        panic!()
    };
    assert_eq!(e.id.as_str(), "a\"b");
    assert_eq!(e.code, ErrorCode::FormatViolation);
    assert_eq!(e.description, "line\nbreak é");
    assert_eq!(e.details_json(), r#"{"k":"\u0000"}"#);
}

#[test]
fn received_codes_of_any_spelling_are_read_by_meaning() {
    for (code, meaning) in [
        ("FormationViolation", ErrorCode::FormatViolation),
        ("FormatViolation", ErrorCode::FormatViolation),
        (
            "OccurenceConstraintViolation",
            ErrorCode::OccurrenceConstraintViolation,
        ),
        (
            "OccurrenceConstraintViolation",
            ErrorCode::OccurrenceConstraintViolation,
        ),
        ("RpcFrameworkError", ErrorCode::RpcFrameworkError),
        ("SomethingElse", ErrorCode::Other("SomethingElse".into())),
    ] {
        for v in OcppVersion::ALL {
            let frame = format!(r#"[4,"1","{code}","",{{}}]"#);
            let RpcMessage::CallError(e) = parse(frame.as_bytes(), v).unwrap() else {
                panic!()
            };
            assert_eq!(e.code, meaning);
        }
    }
}

#[test]
fn callerror_codes_are_spelt_for_the_version() {
    let id = MessageId::new("1").unwrap();
    let cases = [
        (
            ErrorCode::FormatViolation,
            ["FormationViolation", "FormatViolation", "FormatViolation"],
        ),
        (
            ErrorCode::OccurrenceConstraintViolation,
            [
                "OccurenceConstraintViolation",
                "OccurrenceConstraintViolation",
                "OccurrenceConstraintViolation",
            ],
        ),
        (
            ErrorCode::RpcFrameworkError,
            ["ProtocolError", "RpcFrameworkError", "RpcFrameworkError"],
        ),
        (
            ErrorCode::MessageTypeNotSupported,
            [
                "ProtocolError",
                "MessageTypeNotSupported",
                "MessageTypeNotSupported",
            ],
        ),
        (ErrorCode::NotImplemented, ["NotImplemented"; 3]),
        (ErrorCode::NotSupported, ["NotSupported"; 3]),
    ];
    for (code, spellings) in cases {
        for (v, spelling) in [V1_6, V2_0_1, V2_1].into_iter().zip(spellings) {
            let mut out = Vec::new();
            write_call_error(&mut out, v, &id, &code, "", None).unwrap();
            assert_eq!(out, format!(r#"[4,"1","{spelling}","",{{}}]"#).as_bytes());
        }
    }
}

#[test]
fn writers_append_to_the_callers_buffer() {
    let mut out = b"previous".to_vec();
    let id = MessageId::from_counter(7);
    let req = BootNotification {
        charge_point_vendor: "V\"X",
        charge_point_model: "M",
    };
    write_call(&mut out, &id, "BootNotification", &req).unwrap();
    assert_eq!(
        out,
        br#"previous[2,"7","BootNotification",{"chargePointVendor":"V\"X","chargePointModel":"M"}]"#
    );
    // A raw payload is written verbatim.
    let raw = RawValue::from_string(r#"{ "status" : "Accepted" }"#.to_owned()).unwrap();
    out.clear();
    write_call_result(&mut out, &id, &*raw).unwrap();
    assert_eq!(out, br#"[3,"7",{ "status" : "Accepted" }]"#);
}

#[test]
fn payloads_and_details_must_be_objects() {
    let id = MessageId::from_counter(1);
    let mut out = Vec::new();
    for bad in [
        &serde_json::json!([]),
        &serde_json::json!(null),
        &serde_json::json!("x"),
    ] {
        assert!(matches!(
            write_call(&mut out, &id, "A", bad),
            Err(SerializeError::PayloadNotAnObject)
        ));
        assert!(matches!(
            write_call_result(&mut out, &id, bad),
            Err(SerializeError::PayloadNotAnObject)
        ));
        assert!(matches!(
            to_payload(bad),
            Err(SerializeError::PayloadNotAnObject)
        ));
    }
    let details = RawValue::from_string("[1]".to_owned()).unwrap();
    assert!(matches!(
        write_call_error(
            &mut out,
            V2_0_1,
            &id,
            &ErrorCode::GenericError,
            "",
            Some(&details)
        ),
        Err(SerializeError::DetailsNotAnObject)
    ));
    assert!(out.is_empty());
    // A map with non-string keys cannot be serialized as JSON.
    let mut map = std::collections::BTreeMap::new();
    map.insert(vec![1u8], 1);
    assert!(matches!(
        write_call(&mut out, &id, "A", &map),
        Err(SerializeError::Payload(_))
    ));
    assert!(out.is_empty());
}

#[test]
fn types_5_and_6_are_written_on_2_1_only() {
    let payload = to_payload(&serde_json::json!({})).unwrap();
    let send = RpcMessage::Send(Call {
        id: MessageId::from_counter(1),
        action: "NotifyPeriodicEventStream".into(),
        payload: Cow::Owned(payload),
    });
    let err = RpcMessage::CallResultError(CallError::new(
        MessageId::from_counter(2),
        ErrorCode::InternalError,
        "",
    ));
    for msg in [&send, &err] {
        for v in [V1_6, V2_0_1] {
            assert!(matches!(
                msg.to_vec(v),
                Err(SerializeError::NotInVersion { version, .. }) if version == v
            ));
        }
        let bytes = msg.to_vec(V2_1).unwrap();
        assert_eq!(&parse(&bytes, V2_1).unwrap(), msg);
    }
}

#[test]
fn message_accessors() {
    let raw = RawValue::from_string("{}".to_owned()).unwrap();
    let result = RpcMessage::CallResult(CallResult::new(MessageId::new("x").unwrap(), &raw));
    assert_eq!(result.message_type(), MessageTypeId::CallResult);
    assert_eq!(result.id().as_str(), "x");
    assert_eq!(result.action(), None);
    assert_eq!(result.payload().map(RawValue::get), Some("{}"));
    let call = RpcMessage::Call(Call::new(MessageId::new("y").unwrap(), "Heartbeat", &raw));
    assert_eq!(call.action(), Some("Heartbeat"));
    assert_eq!(call.to_vec(V1_6).unwrap(), br#"[2,"y","Heartbeat",{}]"#);
    assert_eq!(
        MessageTypeId::CallResultError.to_string(),
        "CALLRESULTERROR"
    );
}

#[test]
fn other_codes_are_forwarded_as_received() {
    let e = CallError::new(
        MessageId::from_counter(1),
        ErrorCode::parse("Vendor\"Code"),
        "d",
    );
    let bytes = RpcMessage::CallError(e.clone()).to_vec(V2_0_1).unwrap();
    assert_eq!(bytes, br#"[4,"1","Vendor\"Code","d",{}]"#);
    assert_eq!(parse(&bytes, V2_0_1).unwrap(), RpcMessage::CallError(e));
}
