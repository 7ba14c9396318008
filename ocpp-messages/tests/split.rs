//! `envelope::split` against `envelope::parse_str`: whenever `split` delimits a frame and the
//! payload then decodes, `parse_str` must read the same frame (the same id, action and payload
//! text) and the payload must decode to the same value. Frames are valid typed messages of
//! OCPP 1.6 written by `write_call` / `write_call_result`, with odd ids and whitespace, then
//! mutated character by character (inserted, deleted or replaced brackets, quotes, commas,
//! backslashes, control and non-ASCII characters), so that most are broken somewhere.

use std::borrow::Cow;

use ocpp_messages::envelope::{parse_str, split, write_call, write_call_result, Split};
use ocpp_messages::{v1_6, DecodeOptions, MessageId, OcppVersion, Request, Response, RpcMessage};
use proptest::prelude::*;

const V16: OcppVersion = OcppVersion::V1_6;

fn json<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).expect("typed values serialise")
}

/// A valid frame and whether its id is plain (no character `split` leaves to `parse_str`).
fn frame() -> impl Strategy<Value = (String, bool)> {
    let id = prop_oneof![
        4 => "[0-9a-f-]{1,36}".prop_map(|id| (id, true)),
        1 => "[a-z\"\\\\\u{1}é ]{1,8}".prop_map(|id| {
            let plain = !id.contains(['"', '\\', '\u{1}']);
            (id, plain)
        }),
    ];
    let payload = prop_oneof![
        any::<v1_6::BootNotificationRequest>().prop_map(|r| ("BootNotification", true, json(&r))),
        any::<v1_6::MeterValuesRequest>().prop_map(|r| ("MeterValues", true, json(&r))),
        any::<v1_6::StatusNotificationRequest>().prop_map(|r| (
            "StatusNotification",
            true,
            json(&r)
        )),
        Just(("Heartbeat", true, serde_json::json!({}))),
        any::<v1_6::BootNotificationResponse>().prop_map(|r| ("BootNotification", false, json(&r))),
        any::<v1_6::DataTransferResponse>().prop_map(|r| ("DataTransfer", false, json(&r))),
    ];
    (id, payload, any::<bool>()).prop_map(|((id, plain), (action, is_call, payload), spaced)| {
        let id =
            MessageId::new(Cow::Owned(id.clone())).unwrap_or_else(|_| MessageId::from_counter(7));
        let mut out = Vec::new();
        if is_call {
            write_call(&mut out, &id, action, &payload).expect("write");
        } else {
            write_call_result(&mut out, &id, &payload).expect("write");
        }
        let mut text = String::from_utf8(out).expect("UTF-8");
        if spaced {
            text = format!(" {}\n", text.replacen(',', " , ", 2));
        }
        let plain = plain && !id.as_str().contains(['"', '\\', '\u{1}']);
        (text, plain)
    })
}

#[derive(Debug, Clone)]
enum Edit {
    Insert(usize, char),
    Delete(usize),
    Replace(usize, char),
}

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    let ch = prop::sample::select(vec![
        '[', ']', '{', '}', '"', ',', ':', '\\', ' ', '0', '2', '3', 'a', '\u{1}', 'é',
    ]);
    let edit = prop_oneof![
        (any::<usize>(), ch.clone()).prop_map(|(at, c)| Edit::Insert(at, c)),
        any::<usize>().prop_map(Edit::Delete),
        (any::<usize>(), ch).prop_map(|(at, c)| Edit::Replace(at, c)),
    ];
    prop::collection::vec(edit, 0..3)
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for edit in edits {
        let len = chars.len().max(1);
        match *edit {
            Edit::Insert(at, c) => chars.insert(at % (chars.len() + 1), c),
            Edit::Delete(at) if !chars.is_empty() => {
                chars.remove(at % len);
            }
            Edit::Replace(at, c) if !chars.is_empty() => chars[at % len] = c,
            _ => {}
        }
    }
    chars.into_iter().collect()
}

/// The property; returns whether the fast way took the frame.
fn agrees(text: &str) -> bool {
    let options = DecodeOptions::strict();
    match split(text) {
        Some(Split::Call {
            id,
            action,
            payload,
        }) => {
            let Ok(request) = Request::decode(V16, action, payload, &options) else {
                return false;
            };
            match parse_str(text, V16) {
                Ok(RpcMessage::Call(call)) => {
                    assert_eq!(call.id, id, "{text:?}");
                    assert_eq!(call.action, action, "{text:?}");
                    assert_eq!(call.payload.get(), payload, "{text:?}");
                    let again = Request::decode(V16, &call.action, call.payload.get(), &options);
                    assert_eq!(again, Ok(request), "{text:?}");
                }
                other => panic!("split and decoded, but parse_str says {other:?}: {text:?}"),
            }
            true
        }
        Some(Split::CallResult { id, payload }) => {
            let mut took = false;
            for action in ["BootNotification", "DataTransfer", "Heartbeat"] {
                let Ok(response) = Response::decode(V16, action, payload, &options) else {
                    continue;
                };
                took = true;
                match parse_str(text, V16) {
                    Ok(RpcMessage::CallResult(result)) => {
                        assert_eq!(result.id, id, "{text:?}");
                        assert_eq!(result.payload.get(), payload, "{text:?}");
                        let again = Response::decode(V16, action, result.payload.get(), &options);
                        assert_eq!(again, Ok(response), "{text:?}");
                    }
                    other => panic!("split and decoded, but parse_str says {other:?}: {text:?}"),
                }
            }
            took
        }
        None => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// Unmutated frames with plain ids take the fast way: it is the one the core uses.
    #[test]
    fn valid_plain_frames_take_the_fast_way((text, plain) in frame()) {
        let took = agrees(&text);
        if plain {
            prop_assert!(took, "{text:?}");
        }
    }

    #[test]
    fn mutated_frames_agree_with_parse_str((text, _) in frame(), edits in edits()) {
        agrees(&apply(&text, &edits));
    }
}

#[test]
fn hand_picked_frames_agree() {
    for text in [
        r#"[2,"1","Heartbeat",{}]"#,
        r#"[2,"1","Heartbeat",{},{}]"#,
        r#"[2,"1","Heartbeat",{}}]"#,
        r#"[2,"1","Heartbeat",{"a":1}]"#,
        r#"[2,"1","Heartbeat",{} ] "#,
        r#"[3,"1",{"status":"Accepted"}]"#,
        r#"[3,"1",{"status":"Accepted"},{"status":"Accepted"}]"#,
        r#"[3,"1",{"status":"Accepted"}]]"#,
        r#"[3,"1",{"status":"Accepted","data":"]"}]"#,
    ] {
        agrees(text);
    }
    assert!(agrees(r#"[2,"1","Heartbeat",{}]"#));
    assert!(!agrees(r#"[2,"1","Heartbeat",{},{}]"#));
}
