#![no_main]
//! The OCPP-J envelope parser and the bad-input rules on arbitrary bytes, for every version.
//!
//! Invariants: no panic; a reply's id is `"-1"` or the valid id read from the input; a reply
//! holds nothing of the input but that id; a parsed message, written back, parses to the same
//! message; whenever `split` delimits a frame whose payload is one JSON value, `parse_str`
//! reads the same id, action and payload (the promise the core's fast way relies on).
use libfuzzer_sys::fuzz_target;
use ocpp_messages::envelope::{
    parse, parse_str, split, Disposition, MessageTypeId, RpcMessage, Split,
    MAX_DESCRIPTION_CHARS_2X,
};
use ocpp_messages::error_code::ErrorCode;
use ocpp_messages::version::OcppVersion;

/// The fixed descriptions a reply may carry.
const DESCRIPTIONS: [&str; 15] = [
    "Message is not valid JSON",
    "Message is not a JSON array",
    "Message is an empty array",
    "MessageTypeId is not a number",
    "Message type not supported",
    "MessageId is missing",
    "MessageId is not a string",
    "MessageId is longer than 36 characters",
    "Message has the wrong number of elements",
    "Action is not a string",
    "Payload is not a JSON object",
    "Payload is nested too deeply",
    "ErrorCode is not a string",
    "ErrorDescription is not a string",
    "ErrorDetails is not a JSON object",
];

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        check_split(text);
    }
    for version in OcppVersion::ALL {
        match parse(data, version) {
            Ok(msg) => check_round_trip(&msg, version),
            Err(err) => check_reply(
                data,
                &err.respond(version),
                err.id().map(|id| id.as_str()),
                version,
            ),
        }
    }
});

fn check_split(text: &str) {
    let (id, action, payload) = match split(text) {
        Some(Split::Call {
            id,
            action,
            payload,
        }) => (id, Some(action), payload),
        Some(Split::CallResult { id, payload }) => (id, None, payload),
        None => return,
    };
    if serde_json::from_str::<&serde_json::value::RawValue>(payload).is_err() {
        return; // a decoder refuses it too, and the frame goes to parse_str
    }
    for version in OcppVersion::ALL {
        match (parse_str(text, version), action) {
            (Ok(RpcMessage::Call(call)), Some(action)) => {
                assert_eq!((&call.id, &*call.action), (&id, action));
                assert_eq!(call.payload.get(), payload);
            }
            (Ok(RpcMessage::CallResult(result)), None) => {
                assert_eq!(result.id, id);
                assert_eq!(result.payload.get(), payload);
            }
            (other, _) => panic!("split {text:?}, but parse_str read {other:?}"),
        }
    }
}

fn check_round_trip(msg: &RpcMessage<'_>, version: OcppVersion) {
    assert!(msg.message_type().exists_in(version));
    assert!(msg.id().chars().count() <= 36);
    let bytes = msg
        .to_vec(version)
        .expect("a parsed message is writable for its version");
    let back = parse(&bytes, version).expect("our own output parses");
    let expected = match msg {
        RpcMessage::CallError(e) | RpcMessage::CallResultError(e) => {
            let mut e = e.clone();
            if version.is_2x() {
                e.description = e
                    .description
                    .chars()
                    .take(MAX_DESCRIPTION_CHARS_2X)
                    .collect();
            }
            if !e.code.is_defined_in(version) && !matches!(e.code, ErrorCode::Other(_)) {
                e.code = ErrorCode::from(e.code.to_v16());
            }
            if msg.message_type() == MessageTypeId::CallError {
                RpcMessage::CallError(e)
            } else {
                RpcMessage::CallResultError(e)
            }
        }
        other => other.clone(),
    };
    assert_eq!(back, expected);
    assert_eq!(
        back.to_vec(version).unwrap(),
        bytes,
        "writing is idempotent"
    );
}

fn check_reply(
    input: &[u8],
    disposition: &Disposition,
    read_id: Option<&str>,
    version: OcppVersion,
) {
    let mut out = Vec::new();
    let wrote = disposition
        .write_to(&mut out, version)
        .expect("replies are writable");
    let Some(reply) = disposition.reply() else {
        assert!(!wrote && out.is_empty());
        return;
    };
    // The id is "-1" or the valid id that was read from the input.
    let id = reply.id.as_str();
    assert!(
        id == "-1" || Some(id) == read_id,
        "reply id {id:?}, read {read_id:?}"
    );
    assert!(id.chars().count() <= 36);
    // Nothing else from the input: fixed description, known code, empty details.
    assert!(DESCRIPTIONS.contains(&&*reply.description));
    assert!(reply.code.is_defined_in(version));
    assert!(reply.details.is_none());
    // The reply is a valid frame of the version.
    let back = parse(&out, version).expect("the reply parses");
    assert_eq!(back.id().as_str(), id);
    // An echoed id really comes from the input: when the input has no escapes, it appears
    // there verbatim between quotes.
    if id != "-1" && !input.contains(&b'\\') {
        let quoted = [&b"\""[..], id.as_bytes(), b"\""].concat();
        assert!(input.windows(quoted.len()).any(|w| w == quoted.as_slice()));
    }
}
