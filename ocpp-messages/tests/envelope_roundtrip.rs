//! Serialize-then-parse round trips (proptest), and a differential check of our output against
//! `serde_json::Value` parsing.

use std::borrow::Cow;

use ocpp_messages::envelope::{
    parse, write_call, write_call_error, write_call_result, write_call_result_error, write_send,
    Call, CallError, CallResult, MessageId, RpcMessage, MAX_DESCRIPTION_CHARS_2X,
};
use ocpp_messages::error_code::ErrorCode;
use ocpp_messages::version::OcppVersion;
use proptest::prelude::*;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

/// Any string of characters, weighted towards the ones that need escaping.
fn text(max: usize) -> impl Strategy<Value = String> {
    let ch = prop_oneof![
        3 => any::<char>(),
        2 => prop::sample::select(vec!['"', '\\', '\n', '\r', '\t', '\u{0}', '\u{1f}', '\u{7f}', '/', '\u{2028}', 'é', '🚗', '{', '[', ',']),
        2 => prop::char::range('a', 'z'),
    ];
    prop::collection::vec(ch, 0..=max).prop_map(String::from_iter)
}

fn id() -> impl Strategy<Value = MessageId<'static>> {
    text(MessageId::MAX_CHARS).prop_map(|s| MessageId::new(s).unwrap())
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        // serde_json (without `float_roundtrip`) reads some floats back one ulp off: keep to
        // those it reads back exactly, so that the comparison tests our code, not that.
        any::<f64>()
            .prop_filter("finite and round-trips in serde_json", |f| {
                f.is_finite()
                    && serde_json::from_str::<f64>(&serde_json::to_string(f).unwrap()).ok()
                        == Some(*f)
            })
            .prop_map(Value::from),
        text(20).prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::btree_map(text(10), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn payload() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(text(12), json_value(), 0..8).prop_map(|m| m.into_iter().collect())
}

fn code() -> impl Strategy<Value = ErrorCode> {
    prop_oneof![
        4 => prop::sample::select(ErrorCode::KNOWN.to_vec()),
        1 => text(30).prop_map(|s| ErrorCode::parse(&s)),
    ]
}

fn version() -> impl Strategy<Value = OcppVersion> {
    prop::sample::select(OcppVersion::ALL.to_vec())
}

fn raw(map: &Map<String, Value>) -> Box<RawValue> {
    serde_json::value::to_raw_value(map).unwrap()
}

/// What a CALLERROR looks like after being written for `version` and read back.
fn expected_error(e: &CallError<'_>, version: OcppVersion) -> CallError<'static> {
    let mut e = e.clone().into_owned();
    if version.is_2x() {
        e.description = Cow::Owned(
            e.description
                .chars()
                .take(MAX_DESCRIPTION_CHARS_2X)
                .collect(),
        );
    }
    // The spelling changes with the version; the meaning does not, except that 2.x-only codes
    // become their 1.6 counterpart.
    if !e.code.is_defined_in(version) {
        if let ErrorCode::Other(_) = e.code {
        } else {
            e.code = ErrorCode::from(e.code.to_v16());
        }
    }
    e
}

fn call() -> impl Strategy<Value = Call<'static>> {
    (id(), text(40), payload()).prop_map(|(id, action, p)| Call {
        id,
        action: Cow::Owned(action),
        payload: Cow::Owned(raw(&p)),
    })
}

fn call_error() -> impl Strategy<Value = CallError<'static>> {
    (id(), code(), text(300), prop::option::of(payload())).prop_map(|(id, code, d, det)| {
        CallError {
            id,
            code,
            description: Cow::Owned(d),
            details: det.map(|m| Cow::Owned(raw(&m))),
        }
    })
}

fn message() -> impl Strategy<Value = (RpcMessage<'static>, OcppVersion)> {
    let result = (id(), payload()).prop_map(|(id, p)| CallResult {
        id,
        payload: Cow::Owned(raw(&p)),
    });
    (
        prop_oneof![
            call().prop_map(RpcMessage::Call),
            result.prop_map(RpcMessage::CallResult),
            call_error().prop_map(RpcMessage::CallError),
            call_error().prop_map(RpcMessage::CallResultError),
            call().prop_map(RpcMessage::Send),
        ],
        version(),
    )
}

/// The same message as a `serde_json::Value`, built independently of our writer.
fn as_value(msg: &RpcMessage<'_>, version: OcppVersion) -> Value {
    let obj = |r: &RawValue| serde_json::from_str::<Value>(r.get()).unwrap();
    match msg {
        RpcMessage::Call(c) => json!([2, c.id.as_str(), c.action, obj(&c.payload)]),
        RpcMessage::Send(c) => json!([6, c.id.as_str(), c.action, obj(&c.payload)]),
        RpcMessage::CallResult(r) => json!([3, r.id.as_str(), obj(&r.payload)]),
        RpcMessage::CallError(e) | RpcMessage::CallResultError(e) => {
            let ty = msg.message_type().number();
            let e = expected_error(e, version);
            let details = serde_json::from_str::<Value>(e.details_json()).unwrap();
            json!([
                ty,
                e.id.as_str(),
                e.code.as_str(version),
                e.description,
                details
            ])
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn write_then_parse_gives_the_same_message((msg, version) in message()) {
        let written = msg.to_vec(version);
        if !msg.message_type().exists_in(version) {
            prop_assert!(written.is_err());
            return Ok(());
        }
        let bytes = written.unwrap();
        let back = parse(&bytes, version).unwrap();
        let expected = match &msg {
            RpcMessage::CallError(e) => RpcMessage::CallError(expected_error(e, version)),
            RpcMessage::CallResultError(e) => RpcMessage::CallResultError(expected_error(e, version)),
            other => other.clone(),
        };
        prop_assert_eq!(&back, &expected);
        // Writing again gives the same bytes: the writer is deterministic and idempotent.
        prop_assert_eq!(back.to_vec(version).unwrap(), bytes);
    }

    #[test]
    fn output_matches_serde_json_value((msg, version) in message()) {
        let Ok(bytes) = msg.to_vec(version) else { return Ok(()) };
        let parsed: Value = serde_json::from_slice(&bytes).unwrap();
        prop_assert_eq!(parsed, as_value(&msg, version));
    }

    #[test]
    fn typed_writers_match_serde_json_value(
        id in id(), action in text(40), p in payload(), code in code(), desc in text(300),
        version in version(),
    ) {
        let mut out = Vec::new();
        write_call(&mut out, &id, &action, &p).unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        prop_assert_eq!(v, json!([2, id.as_str(), action, p]));

        out.clear();
        write_send(&mut out, &id, &action, &p).unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        prop_assert_eq!(v, json!([6, id.as_str(), action, p]));

        out.clear();
        write_call_result(&mut out, &id, &p).unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        prop_assert_eq!(v, json!([3, id.as_str(), p]));

        out.clear();
        write_call_error(&mut out, version, &id, &code, &desc, None).unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        let max = if version.is_2x() { MAX_DESCRIPTION_CHARS_2X } else { usize::MAX };
        let d: String = desc.chars().take(max).collect();
        prop_assert_eq!(v, json!([4, id.as_str(), code.as_str(version), d, {}]));

        out.clear();
        write_call_result_error(&mut out, &id, &code, &desc, Some(&raw(&p))).unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        let d: String = desc.chars().take(MAX_DESCRIPTION_CHARS_2X).collect();
        prop_assert_eq!(v, json!([5, id.as_str(), code.as_str(OcppVersion::V2_1), d, p]));
    }

    #[test]
    fn parse_agrees_with_serde_json_value_on_valid_frames(
        id in id(), action in text(40), p in payload(), version in version(),
    ) {
        // Frames written by serde_json itself (not by us), with its own escaping.
        let text = serde_json::to_string_pretty(&json!([2, id.as_str(), action, p])).unwrap();
        let RpcMessage::Call(call) = parse(text.as_bytes(), version).unwrap() else {
            panic!("not a CALL")
        };
        prop_assert_eq!(call.id.as_str(), id.as_str());
        prop_assert_eq!(&*call.action, action.as_str());
        let payload: Value = serde_json::from_str(call.payload.get()).unwrap();
        prop_assert_eq!(payload, Value::Object(p));
    }

    #[test]
    fn parse_never_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200), version in version()) {
        if let Err(e) = parse(&bytes, version) {
            let _ = e.respond(version).write_to(&mut Vec::new(), version).unwrap();
        }
    }
}

#[test]
fn description_is_cut_at_255_characters_on_2x_only() {
    let id = MessageId::from_counter(1);
    let desc = "é".repeat(300);
    for version in OcppVersion::ALL {
        let mut out = Vec::new();
        write_call_error(
            &mut out,
            version,
            &id,
            &ErrorCode::GenericError,
            &desc,
            None,
        )
        .unwrap();
        let RpcMessage::CallError(e) = parse(&out, version).unwrap() else {
            panic!()
        };
        let want = if version.is_2x() { 255 } else { 300 };
        assert_eq!(e.description.chars().count(), want, "{version}");
    }
}
