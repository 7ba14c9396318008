//! The OCPP-J bad-input rules, row by row and version by version, through the public API:
//! parse, decide with `respond_to_parse_error`, write the reply, and check what goes on the
//! wire.

use ocpp_messages::envelope::{
    parse, respond_to_parse_error, Disposition, Malformation, MessageIdError, MessageTypeId,
    ParseError, RpcMessage, MAX_NESTING_DEPTH,
};
use ocpp_messages::version::OcppVersion::{self, V1_6, V2_0_1, V2_1};
use serde_json::Value;

/// What is expected on the wire for one version.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Want {
    /// Nothing is sent.
    Ignore,
    /// A frame `[type, id, code, <fixed description>, {}]` is sent.
    Reply(u8, &'static str, &'static str),
}
use Want::{Ignore, Reply};

const FORMATION: &str = "FormationViolation";
const FORMAT: &str = "FormatViolation";
const RPC: &str = "RpcFrameworkError";
const MTNS: &str = "MessageTypeNotSupported";

/// The version-specific answer to invalid JSON or a broken frame with a readable id.
fn format_violation(id: &'static str) -> [Want; 3] {
    [
        Reply(4, id, FORMATION),
        Reply(4, id, FORMAT),
        Reply(4, id, FORMAT),
    ]
}

/// The answer to a frame whose id cannot be read.
const NO_ID: [Want; 3] = [
    Reply(4, "-1", FORMATION),
    Reply(4, "-1", RPC),
    Reply(4, "-1", RPC),
];

/// The answer to an unknown message type.
fn unknown_type(id: &'static str) -> [Want; 3] {
    [Ignore, Reply(4, id, MTNS), Ignore]
}

/// Parses `input` on `version`, expecting an error, and returns what goes on the wire.
fn wire_answer(input: &[u8], version: OcppVersion) -> (ParseError, Option<Vec<u8>>) {
    let err = match parse(input, version) {
        Ok(msg) => panic!(
            "{:?} parsed on {version}: {msg:?}",
            String::from_utf8_lossy(input)
        ),
        Err(err) => err,
    };
    let disposition = respond_to_parse_error(&err, version);
    assert_eq!(disposition, err.respond(version));
    let mut out = Vec::new();
    let wrote = disposition.write_to(&mut out, version).unwrap();
    assert_eq!(wrote, !out.is_empty());
    (err, wrote.then_some(out))
}

fn check(input: &[u8], want: [Want; 3]) {
    for (version, want) in [V1_6, V2_0_1, V2_1].into_iter().zip(want) {
        let (err, out) = wire_answer(input, version);
        let shown = String::from_utf8_lossy(input);
        match (want, out) {
            (Ignore, None) => {}
            (Reply(ty, id, code), Some(out)) => {
                let v: Value = serde_json::from_slice(&out).unwrap();
                let arr = v.as_array().unwrap();
                assert_eq!(arr.len(), 5, "{shown} on {version}: {v}");
                assert_eq!(arr[0], ty, "{shown} on {version}: {v} ({err:?})");
                assert_eq!(arr[1], id, "{shown} on {version}: {v} ({err:?})");
                assert_eq!(arr[2], code, "{shown} on {version}: {v} ({err:?})");
                assert!(arr[3].is_string());
                assert_eq!(arr[4], serde_json::json!({}));
                // The reply re-parses as a valid frame of this version.
                let back = parse(&out, version).unwrap();
                assert_eq!(back.message_type().number(), ty);
                assert_no_echo(input, &out, id);
            }
            (want, out) => panic!(
                "{shown} on {version}: wanted {want:?}, got {:?} ({err:?})",
                out.map(|o| String::from_utf8_lossy(&o).into_owned())
            ),
        }
    }
}

/// The descriptions the bad-input rules may send: fixed sentences, never input.
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

/// The reply holds nothing of the input but the id: with the id blanked out, it is made only
/// of fixed parts.
fn assert_no_echo(input: &[u8], reply: &[u8], id: &str) {
    let v: Value = serde_json::from_slice(reply).unwrap();
    let desc = v[3].as_str().unwrap();
    assert!(
        DESCRIPTIONS.contains(&desc),
        "unexpected description {desc:?}"
    );
    if id != "-1" {
        // The echoed id is really the input's.
        let quoted = serde_json::to_string(id).unwrap();
        assert!(String::from_utf8_lossy(input).contains(&quoted[1..quoted.len() - 1]));
    }
    let rebuilt = format!(
        "[{},{},{},{},{{}}]",
        v[0],
        serde_json::to_string(id).unwrap(),
        v[2],
        serde_json::to_string(desc).unwrap()
    );
    assert_eq!(rebuilt.as_bytes(), reply);
}

#[test]
fn not_json_at_all() {
    for input in [
        &b"not json"[..],
        b"",
        b"   ",
        b"[",
        b"[2,",
        b"{\"a\":",
        b"\xef\xbb\xbf[2,\"a\",\"Heartbeat\",{}]", // a byte order mark
        b"\xff\xfe",
        b"[2 \"a\"]",
        b"nul",
    ] {
        check(input, format_violation("-1"));
        let err = parse(input, V2_0_1).unwrap_err();
        assert!(
            matches!(err, ParseError::InvalidJson { id: None, .. }),
            "{err:?}"
        );
    }
}

#[test]
fn invalid_json_after_a_readable_id_echoes_the_id() {
    for input in [
        &br#"[2,"abc","Heartbeat",{"#[..],
        br#"[2,"abc","Heartbeat",{}"#,
        br#"[2,"abc","Heartbeat",{},]"#,
        br#"[2,"abc","Heartbeat",{"a":tru}]"#,
        br#"[2,"abc","Heartbeat",{"a":1,}]"#,
        b"[2,\"abc\",\"Heart\xffbeat\",{}]", // invalid UTF-8 in the action
        b"[2,\"abc\",\"Heart\x01beat\",{}]", // raw control character in a string
        br#"[2,"abc","\ud800",{}]"#,         // lone surrogate in the action
        br#"[2,"abc","Heartbeat",{"k":"\x"}]"#,
    ] {
        check(input, format_violation("abc"));
    }
}

#[test]
fn trailing_data_is_refused() {
    for input in [
        &br#"[2,"abc","Heartbeat",{}] x"#[..],
        br#"[2,"abc","Heartbeat",{}][2,"abd","Heartbeat",{}]"#,
        br#"[2,"abc","Heartbeat",{}]]"#,
        b"[2,\"abc\",\"Heartbeat\",{}]\x00",
    ] {
        check(input, format_violation("abc"));
    }
    // Trailing whitespace is not data.
    assert!(parse(b"[2,\"abc\",\"Heartbeat\",{}] \r\n\t ", V1_6).is_ok());
}

#[test]
fn valid_json_that_is_not_a_frame() {
    for input in [
        &br#"{"messageTypeId":2,"id":"abc"}"#[..],
        br#""[2,\"abc\",\"Heartbeat\",{}]""#,
        b"42",
        b"null",
        b"1e999",
        b"[]",
        b" [ ] ",
        br#"["2","abc","Heartbeat",{}]"#,
        br#"[null,"abc","Heartbeat",{}]"#,
        br#"[[2],"abc","Heartbeat",{}]"#,
        br#"[{"t":2},"abc","Heartbeat",{}]"#,
    ] {
        check(input, NO_ID);
    }
    assert_eq!(parse(b"[]", V1_6).unwrap_err(), ParseError::EmptyArray);
    assert_eq!(parse(b"{}", V1_6).unwrap_err(), ParseError::NotAnArray);
    assert_eq!(
        parse(br#"["2"]"#, V1_6).unwrap_err(),
        ParseError::MessageTypeNotANumber
    );
}

#[test]
fn ids_that_cannot_be_echoed() {
    let long = format!(r#"[2,"{}","Heartbeat",{{}}]"#, "x".repeat(37));
    let long_unicode = format!(r#"[2,"{}","Heartbeat",{{}}]"#, "é".repeat(37));
    for input in [
        &br#"[2,19223201,"Heartbeat",{}]"#[..],
        br#"[2,-1,"Heartbeat",{}]"#,
        br#"[2,1.5,"Heartbeat",{}]"#,
        br#"[2,null,"Heartbeat",{}]"#,
        br#"[2,["abc"],"Heartbeat",{}]"#,
        br#"[2,{"id":"abc"},"Heartbeat",{}]"#,
        br#"[2,true,"Heartbeat",{}]"#,
        br#"[2]"#,
        long.as_bytes(),
        long_unicode.as_bytes(),
    ] {
        check(input, NO_ID);
    }
    assert_eq!(
        parse(br#"[2,19223201,"Heartbeat",{}]"#, V2_0_1).unwrap_err(),
        ParseError::InvalidMessageId {
            message_type: MessageTypeId::Call,
            problem: MessageIdError::NotAString
        }
    );
    assert!(matches!(
        parse(long.as_bytes(), V1_6).unwrap_err(),
        ParseError::InvalidMessageId {
            problem: MessageIdError::TooLong,
            ..
        }
    ));
    // An id that cannot be decoded (lone surrogate) is not readable either.
    check(br#"[2,"\ud800","Heartbeat",{}]"#, format_violation("-1"));
}

#[test]
fn ids_up_to_36_characters_are_fine() {
    for id in [
        "x".repeat(36),
        "é".repeat(36),
        "🚗".repeat(36),
        String::new(),
    ] {
        let input = format!(r#"[2,"{id}","Heartbeat",{{}}]"#);
        for v in [V1_6, V2_0_1, V2_1] {
            let msg = parse(input.as_bytes(), v).unwrap();
            assert_eq!(msg.id().as_str(), id);
        }
    }
    // Escapes count as the characters they stand for.
    let input = format!(r#"[2,"{}\u00e9","Heartbeat",{{}}]"#, "x".repeat(35));
    assert_eq!(
        parse(input.as_bytes(), V2_1)
            .unwrap()
            .id()
            .as_str()
            .chars()
            .count(),
        36
    );
}

#[test]
fn wrong_arity_and_element_types_in_a_call() {
    for (input, problem) in [
        (
            &br#"[2,"abc"]"#[..],
            Malformation::WrongLength {
                expected: 4,
                found: 2,
            },
        ),
        (
            br#"[2,"abc","Heartbeat"]"#,
            Malformation::WrongLength {
                expected: 4,
                found: 3,
            },
        ),
        (
            br#"[2,"abc","Heartbeat",{},{}]"#,
            Malformation::WrongLength {
                expected: 4,
                found: 5,
            },
        ),
        (
            br#"[2,"abc","Heartbeat",{},1,2,3,4,5]"#,
            Malformation::WrongLength {
                expected: 4,
                found: 9,
            },
        ),
        (br#"[2,"abc",5,{}]"#, Malformation::ActionNotAString),
        (br#"[2,"abc",null,{}]"#, Malformation::ActionNotAString),
        (
            br#"[2,"abc",["Heartbeat"],{}]"#,
            Malformation::ActionNotAString,
        ),
        (
            br#"[2,"abc","Heartbeat",[]]"#,
            Malformation::PayloadNotAnObject,
        ),
        (
            br#"[2,"abc","Heartbeat",null]"#,
            Malformation::PayloadNotAnObject,
        ),
        (
            br#"[2,"abc","Heartbeat","{}"]"#,
            Malformation::PayloadNotAnObject,
        ),
        (
            br#"[2,"abc","Heartbeat",42]"#,
            Malformation::PayloadNotAnObject,
        ),
    ] {
        check(input, format_violation("abc"));
        for v in [V1_6, V2_0_1, V2_1] {
            assert_eq!(
                parse(input, v).unwrap_err(),
                ParseError::Malformed {
                    message_type: MessageTypeId::Call,
                    id: "abc".parse().unwrap(),
                    problem
                }
            );
        }
    }
}

#[test]
fn nested_garbage_is_kept_raw_or_refused() {
    // Garbage inside a payload object is still a valid payload at this layer.
    let msg = parse(
        br#"[2,"abc","Heartbeat",{"a":[[[{"b":null}]]],"c":"]]]}}}"}]"#,
        V2_0_1,
    )
    .unwrap();
    assert_eq!(
        msg.payload().unwrap().get(),
        r#"{"a":[[[{"b":null}]]],"c":"]]]}}}"}"#
    );
    // Garbage in the frame itself is not.
    check(
        br#"[2,"abc",{"nested":["garbage"]},{}]"#,
        format_violation("abc"),
    );
    check(
        br#"[2,"abc","Heartbeat",[{"nested":"garbage"}]]"#,
        format_violation("abc"),
    );
}

#[test]
fn unknown_message_types() {
    for (input, id) in [
        (&br#"[7,"abc",{}]"#[..], "abc"),
        (br#"[1,"abc","Heartbeat",{}]"#, "abc"),
        (br#"[0,"abc"]"#, "abc"),
        (br#"[-2,"abc","Heartbeat",{}]"#, "abc"),
        (br#"[2.0,"abc","Heartbeat",{}]"#, "abc"),
        (br#"[2e0,"abc","Heartbeat",{}]"#, "abc"),
        (br#"[1e400,"abc"]"#, "abc"),
        (br#"[99999999999999999999999999,"abc"]"#, "abc"),
        (br#"[7]"#, "-1"),
        (br#"[7,5]"#, "-1"),
        (br#"[7,"abc",{"#, "abc"), // the type decides before the syntax error
    ] {
        check(input, unknown_type(id));
    }
    assert_eq!(
        parse(br#"[7,"abc",{}]"#, V2_0_1).unwrap_err(),
        ParseError::UnknownMessageType {
            number: Some(7),
            id: Some("abc".parse().unwrap())
        }
    );
    assert!(matches!(
        parse(br#"[1e400,"abc"]"#, V2_0_1).unwrap_err(),
        ParseError::UnknownMessageType { number: None, .. }
    ));
}

#[test]
fn types_5_and_6_exist_only_in_2_1() {
    let result_error = br#"[5,"abc","GenericError","boom",{}]"#;
    let send = br#"[6,"abc","NotifyPeriodicEventStream",{"id":1,"pending":0,"basetime":"2025-01-01T00:00:00Z","data":[]}]"#;
    for input in [&result_error[..], &send[..]] {
        for v in [V1_6, V2_0_1] {
            let (err, _) = wire_answer(input, v);
            assert!(
                matches!(err, ParseError::UnknownMessageType { .. }),
                "{err:?}"
            );
        }
        assert_eq!(wire_answer(input, V1_6).1, None);
        let (_, out) = wire_answer(input, V2_0_1);
        assert_eq!(
            out.unwrap(),
            br#"[4,"abc","MessageTypeNotSupported","Message type not supported",{}]"#
        );
    }
    assert!(matches!(
        parse(result_error, V2_1).unwrap(),
        RpcMessage::CallResultError(_)
    ));
    assert!(matches!(parse(send, V2_1).unwrap(), RpcMessage::Send(_)));
}

#[test]
fn malformed_answers_are_not_answered_with_a_callerror() {
    // A broken CALLERROR is never answered (no error about an error).
    for input in [
        &br#"[4,"abc","GenericError"]"#[..],
        br#"[4,"abc"]"#,
        br#"[4,"abc",5,"",{}]"#,
        br#"[4,"abc","GenericError",5,{}]"#,
        br#"[4,"abc","GenericError","",[]]"#,
        br#"[4,"abc","GenericError","",{},{}]"#,
        br#"[4,5,"GenericError","",{}]"#,
        br#"[4,"abc","GenericError","",{"#,
    ] {
        check(input, [Ignore, Ignore, Ignore]);
    }
    // A broken CALLRESULT: only 2.1 can answer it, with a CALLRESULTERROR.
    check(
        br#"[3,"abc",[]]"#,
        [Ignore, Ignore, Reply(5, "abc", FORMAT)],
    );
    check(br#"[3,"abc"]"#, [Ignore, Ignore, Reply(5, "abc", FORMAT)]);
    check(br#"[3,"abc",{"#, [Ignore, Ignore, Reply(5, "abc", FORMAT)]);
    check(br#"[3,5,{}]"#, [Ignore, Ignore, Reply(5, "-1", RPC)]);
    // The caller can still fail its pending CALL: the error carries the id.
    let err = parse(br#"[3,"abc",[]]"#, V1_6).unwrap_err();
    assert_eq!(err.id().map(|id| id.as_str()), Some("abc"));
    assert_eq!(err.message_type(), Some(MessageTypeId::CallResult));
    // 2.1: a broken CALLRESULTERROR or SEND is not answered.
    for input in [
        &br#"[5,"abc","GenericError"]"#[..],
        br#"[6,"abc",5,{}]"#,
        br#"[6,"abc","X",[]]"#,
    ] {
        assert_eq!(wire_answer(input, V2_1).1, None);
    }
}

#[test]
fn callerror_with_missing_details_is_accepted_as_empty() {
    for v in [V1_6, V2_0_1, V2_1] {
        let RpcMessage::CallError(e) = parse(br#"[4,"abc","NotSupported","no"]"#, v).unwrap()
        else {
            panic!("not a CALLERROR")
        };
        assert!(e.details.is_none());
        assert_eq!(e.details_json(), "{}");
        assert_eq!(e.description, "no");
        // Written back, details become the `{}` the specification asks for.
        let out = RpcMessage::CallError(e).to_vec(v).unwrap();
        assert_eq!(out, br#"[4,"abc","NotSupported","no",{}]"#);
    }
}

fn nested(depth: usize) -> String {
    let mut s = String::with_capacity(depth * 6);
    for _ in 0..depth - 1 {
        s.push_str(r#"{"a":"#);
    }
    s.push_str("{}");
    for _ in 0..depth - 1 {
        s.push('}');
    }
    s
}

#[test]
fn deep_nesting_is_bounded() {
    // Exactly at the limit: fine.
    let ok = format!(r#"[2,"abc","DataTransfer",{}]"#, nested(MAX_NESTING_DEPTH));
    assert!(parse(ok.as_bytes(), V2_0_1).is_ok());
    // One deeper: refused, answered like any broken payload.
    let deep = format!(
        r#"[2,"abc","DataTransfer",{}]"#,
        nested(MAX_NESTING_DEPTH + 1)
    );
    check(deep.as_bytes(), format_violation("abc"));
    assert!(matches!(
        parse(deep.as_bytes(), V1_6).unwrap_err(),
        ParseError::Malformed {
            problem: Malformation::TooDeep,
            ..
        }
    ));
    // Very deep inputs do not overflow the stack, wherever the nesting is.
    let very = format!(r#"[2,"abc","DataTransfer",{}]"#, nested(200_000));
    check(very.as_bytes(), format_violation("abc"));
    let arrays = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
    check(arrays.as_bytes(), NO_ID);
    let unclosed = "[".repeat(200_000);
    check(unclosed.as_bytes(), format_violation("-1"));
    let in_details = format!(r#"[4,"abc","GenericError","",{}]"#, nested(200_000));
    check(in_details.as_bytes(), [Ignore, Ignore, Ignore]);
}

#[test]
fn huge_numbers() {
    // Inside a payload, numbers are not interpreted at this layer.
    let input = br#"[2,"abc","MeterValues",{"v":1e999,"w":-123456789012345678901234567890,"x":0.000000000000000000000000000001}]"#;
    let msg = parse(input, V2_1).unwrap();
    assert!(msg.payload().unwrap().get().contains("1e999"));
    // As an id, a number is never echoed.
    check(
        br#"[2,123456789012345678901234567890,"Heartbeat",{}]"#,
        NO_ID,
    );
    check(br#"[2,1e999,"Heartbeat",{}]"#, NO_ID);
}

#[test]
fn whitespace_is_allowed_everywhere_json_allows_it() {
    let input = b" \n\t[ 2 ,\r\n \"abc\" , \"Heartbeat\" , { } ] \n";
    for v in [V1_6, V2_0_1, V2_1] {
        let RpcMessage::Call(call) = parse(input, v).unwrap() else {
            panic!("not a CALL")
        };
        assert_eq!(call.id, "abc");
        assert_eq!(call.action, "Heartbeat");
        assert_eq!(call.payload.get(), "{ }");
    }
}

#[test]
fn every_reply_is_valid_for_its_version() {
    // Replies to every row above are checked in `check`; this checks the Disposition helpers.
    let err = parse(b"garbage", V2_1).unwrap_err();
    let d = err.respond(V2_1);
    let e = d.reply().unwrap().clone();
    assert_eq!(e.id.as_str(), "-1");
    assert_eq!(d.into_message(), Some(RpcMessage::CallError(e)));
    let d = parse(br#"[3,"abc",[]]"#, V2_1).unwrap_err().respond(V2_1);
    assert!(matches!(d, Disposition::ReplyResultError(_)));
    // A CALLRESULTERROR cannot be written on a version without it.
    assert!(d.write_to(&mut Vec::new(), V2_0_1).is_err());
    assert_eq!(Disposition::Ignore.into_message(), None);
}
