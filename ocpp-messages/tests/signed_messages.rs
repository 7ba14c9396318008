//! Signed messages (OCPP Part 4 chapter 7) through the public API: sign → write → parse →
//! open round trips for arbitrary payloads, every kind of tampering refused with its own error,
//! and arbitrary input never panics.

use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ocpp_messages::envelope::{parse, Call, CallResult, MessageId, MessageTypeId, RpcMessage};
use ocpp_messages::signed::es256::{certificate_thumbprint, Es256Signer, Es256Verifier};
use ocpp_messages::signed::{
    is_signed, sign, JwsAlgorithm, MessageSigner, SignatureError, SignaturePolicy, SignatureStatus,
    VerifyError,
};
use ocpp_messages::{ErrorCode, OcppVersion};
use proptest::prelude::*;
use serde_json::value::RawValue;

const CERT: &[u8] = b"station certificate (DER)";
const V: OcppVersion = OcppVersion::V2_1;

fn signer() -> Es256Signer {
    Es256Signer::from_secret_scalar(&[0x42; 32])
        .unwrap()
        .with_certificate(CERT)
}

fn policy() -> SignaturePolicy {
    let s = signer();
    SignaturePolicy::RequireSigned(Arc::new(
        Es256Verifier::new().with_key(s.certificate_thumbprint(), s.verifying_key()),
    ))
}

fn raw(text: &str) -> Box<RawValue> {
    RawValue::from_string(text.to_owned()).unwrap()
}

/// A signed CALL, written as bytes.
fn signed_call(action: &str, payload: &str) -> Vec<u8> {
    let payload = raw(payload);
    let call = RpcMessage::Call(Call::new(MessageId::new("id-1").unwrap(), action, &payload));
    sign(&call, None, &signer()).unwrap().to_vec(V).unwrap()
}

/// The three JWS members of a signed frame (CALL: its 4th element).
fn members(frame: &[u8]) -> (String, String, String) {
    let value: serde_json::Value = serde_json::from_slice(frame).unwrap();
    let jws = value.as_array().unwrap().last().unwrap();
    let get = |k: &str| jws[k].as_str().unwrap().to_owned();
    (get("protected"), get("payload"), get("signature"))
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// A CALL frame with a hand-made JWS.
fn frame(action: &str, protected: &str, payload: &str, signature: &str) -> Vec<u8> {
    format!(
        r#"[2,"id-1","{action}",{{"protected":"{protected}","payload":"{payload}","signature":"{signature}"}}]"#
    )
    .into_bytes()
}

/// A CALL whose protected header is `header`, validly signed by the station's key.
fn signed_with_header(action: &str, header: &str, payload: &str) -> Vec<u8> {
    let (h, p) = (b64(header.as_bytes()), b64(payload.as_bytes()));
    let signature = signer().sign(format!("{h}.{p}").as_bytes()).unwrap();
    frame(action, &h, &p, &b64(&signature))
}

fn open(frame: &[u8]) -> Result<RpcMessage<'static>, SignatureError> {
    let message = parse(frame, V).expect("the frame parses");
    policy()
        .open(&message, None)
        .map(|o| o.message.into_owned())
}

#[test]
fn the_wire_form_is_the_documented_one() {
    let frame = signed_call("BootNotification", r#"{"reason":"PowerUp"}"#);
    let text = String::from_utf8(frame.clone()).unwrap();
    assert!(
        text.starts_with(r#"[2,"id-1","BootNotification-Signed",{"protected":""#),
        "{text}"
    );
    let (h, p, s) = members(&frame);
    let header = URL_SAFE_NO_PAD.decode(h).unwrap();
    let expected = format!(
        r#"{{"alg":"ES256","OCPPAction":"BootNotification","OCPPMessageTypedId":2,"x5t#S256":"{}"}}"#,
        certificate_thumbprint(CERT)
    );
    assert_eq!(String::from_utf8(header).unwrap(), expected);
    assert_eq!(
        URL_SAFE_NO_PAD.decode(p).unwrap(),
        br#"{"reason":"PowerUp"}"#
    );
    assert_eq!(URL_SAFE_NO_PAD.decode(s).unwrap().len(), 64, "R || S");
    assert!(!text.contains('='), "no padding");
}

#[test]
fn sends_and_call_results_are_signed_and_opened() {
    let s = signer();
    let payload = raw(r#"{"data":[1,2]}"#);
    let send = RpcMessage::Send(Call::new(
        MessageId::new("s1").unwrap(),
        "NotifyPeriodicEventStream",
        &payload,
    ));
    let bytes = sign(&send, None, &s).unwrap().to_vec(V).unwrap();
    assert!(bytes.starts_with(br#"[6,"s1","NotifyPeriodicEventStream-Signed","#));
    let opened = policy().open(&parse(&bytes, V).unwrap(), None).unwrap();
    assert_eq!(opened.message, send);

    let answer = RpcMessage::CallResult(CallResult::new(MessageId::new("c1").unwrap(), &payload));
    assert!(
        sign(&answer, None, &s).is_err(),
        "a CALLRESULT needs its CALL's action"
    );
    let bytes = sign(&answer, Some("Reset"), &s).unwrap().to_vec(V).unwrap();
    let received = parse(&bytes, V).unwrap();
    assert!(is_signed(&received));
    assert_eq!(
        policy().open(&received, None),
        Err(SignatureError::CallActionNeeded)
    );
    assert!(matches!(
        policy().open(&received, Some("GetVariables")),
        Err(SignatureError::ActionMismatch { .. })
    ));
    let opened = policy().open(&received, Some("Reset")).unwrap();
    assert_eq!(opened.message, answer);
    let SignatureStatus::Verified(info) = opened.signature else {
        panic!()
    };
    assert_eq!(info.algorithm, JwsAlgorithm::Es256);
    assert_eq!(info.thumbprint, Some(certificate_thumbprint(CERT)));
}

#[test]
fn errors_are_not_signed_and_pass() {
    let error = parse(br#"[4,"1","SecurityError","",{}]"#, V).unwrap();
    assert!(sign(&error, None, &signer()).is_err());
    assert_eq!(
        policy().open(&error, None).unwrap().signature,
        SignatureStatus::Unsigned
    );
}

#[test]
fn unsigned_messages_follow_the_policy() {
    let plain = parse(br#"[2,"1","Heartbeat",{}]"#, V).unwrap();
    assert_eq!(policy().open(&plain, None), Err(SignatureError::Unsigned));
    let s = signer();
    let verifier =
        Arc::new(Es256Verifier::new().with_key(s.certificate_thumbprint(), s.verifying_key()));
    for lenient in [
        SignaturePolicy::VerifyWhenSigned(verifier),
        SignaturePolicy::UnwrapUnverified,
    ] {
        let opened = lenient.open(&plain, None).unwrap();
        assert_eq!(
            (opened.message, opened.signature),
            (plain.clone(), SignatureStatus::Unsigned)
        );
    }
    // An already signed message is not signed twice.
    let bytes = signed_call("Heartbeat", "{}");
    let signed = parse(&bytes, V).unwrap();
    assert!(sign(&signed, None, &s).is_err());
}

#[test]
fn a_tampered_payload_fails() {
    let (h, _, s) = members(&signed_call("Heartbeat", "{}"));
    let forged = frame("Heartbeat-Signed", &h, &b64(br#"{"x":1}"#), &s);
    assert_eq!(
        open(&forged),
        Err(SignatureError::Verification(VerifyError::InvalidSignature))
    );
}

#[test]
fn a_tampered_header_fails() {
    let (_, p, s) = members(&signed_call("Heartbeat", "{}"));
    // The header names another action, consistently with the frame: the signature fails.
    let header = format!(
        r#"{{"alg":"ES256","OCPPAction":"Reset","OCPPMessageTypedId":2,"x5t#S256":"{}"}}"#,
        certificate_thumbprint(CERT)
    );
    let forged = frame("Reset-Signed", &b64(header.as_bytes()), &p, &s);
    assert_eq!(
        open(&forged),
        Err(SignatureError::Verification(VerifyError::InvalidSignature))
    );
}

#[test]
fn a_signature_moved_to_another_action_or_type_fails() {
    let (h, p, s) = members(&signed_call("Heartbeat", "{}"));
    let moved = frame("Reset-Signed", &h, &p, &s);
    assert_eq!(
        open(&moved),
        Err(SignatureError::ActionMismatch {
            signed: "Heartbeat".into(),
            frame: "Reset".into()
        })
    );
    let mut as_send = frame("Heartbeat-Signed", &h, &p, &s);
    as_send[1] = b'6';
    assert_eq!(
        open(&as_send),
        Err(SignatureError::MessageTypeMismatch {
            signed: 2,
            frame: MessageTypeId::Send
        })
    );
}

#[test]
fn a_tampered_signature_fails() {
    let (h, p, s) = members(&signed_call("Heartbeat", "{}"));
    let mut bytes = URL_SAFE_NO_PAD.decode(s).unwrap();
    bytes[10] ^= 1;
    assert_eq!(
        open(&frame("Heartbeat-Signed", &h, &p, &b64(&bytes))),
        Err(SignatureError::Verification(VerifyError::InvalidSignature))
    );
    // A DER signature (a common mistake) is not the JWS form.
    bytes.insert(0, 0x30);
    assert_eq!(
        open(&frame("Heartbeat-Signed", &h, &p, &b64(&bytes))),
        Err(SignatureError::Verification(VerifyError::InvalidSignature))
    );
}

#[test]
fn a_wrong_key_fails() {
    let frame = parse(&signed_call("Heartbeat", "{}"), V)
        .unwrap()
        .into_owned();
    let other = Es256Signer::from_secret_scalar(&[0x43; 32]).unwrap();
    let same_name = SignaturePolicy::RequireSigned(Arc::new(
        Es256Verifier::new().with_key(Some(&certificate_thumbprint(CERT)), other.verifying_key()),
    ));
    assert_eq!(
        same_name.open(&frame, None),
        Err(SignatureError::Verification(VerifyError::InvalidSignature))
    );
    let other_name = SignaturePolicy::RequireSigned(Arc::new(
        Es256Verifier::new().with_key(Some("another"), signer().verifying_key()),
    ));
    assert_eq!(
        other_name.open(&frame, None),
        Err(SignatureError::Verification(VerifyError::UnknownKey))
    );
}

#[test]
fn wrong_and_missing_algorithms_fail() {
    let t = certificate_thumbprint(CERT);
    let rs256 = format!(
        r#"{{"alg":"RS256","OCPPAction":"Heartbeat","OCPPMessageTypedId":2,"x5t#S256":"{t}"}}"#
    );
    assert_eq!(
        open(&signed_with_header("Heartbeat-Signed", &rs256, "{}")),
        Err(SignatureError::Verification(
            VerifyError::AlgorithmNotAccepted(JwsAlgorithm::Rs256)
        ))
    );
    let es384 = format!(
        r#"{{"alg":"ES384","OCPPAction":"Heartbeat","OCPPMessageTypedId":2,"x5t#S256":"{t}"}}"#
    );
    assert_eq!(
        open(&signed_with_header("Heartbeat-Signed", &es384, "{}")),
        Err(SignatureError::UnsupportedAlgorithm {
            alg: "ES384".into()
        })
    );
    let none = r#"{"alg":"none","OCPPAction":"Heartbeat","OCPPMessageTypedId":2}"#;
    let unsecured = frame("Heartbeat-Signed", &b64(none.as_bytes()), &b64(b"{}"), "");
    assert_eq!(open(&unsecured), Err(SignatureError::AlgorithmNone));
    // Even the policy that checks no signature refuses alg none.
    let message = parse(&unsecured, V).unwrap();
    assert_eq!(
        SignaturePolicy::UnwrapUnverified.open(&message, None),
        Err(SignatureError::AlgorithmNone)
    );
    let no_alg = r#"{"OCPPAction":"Heartbeat","OCPPMessageTypedId":2}"#;
    assert_eq!(
        open(&signed_with_header("Heartbeat-Signed", no_alg, "{}")),
        Err(SignatureError::MissingHeader { name: "alg" })
    );
}

#[test]
fn headers_are_checked() {
    let t = certificate_thumbprint(CERT);
    let cases: Vec<(String, SignatureError)> = vec![
        (
            format!(
                r#"{{"alg":"ES256","OCPPAction":"Heartbeat","OCPPMessageTypedId":2,"x5t#S256":"{t}","crit":["b64"],"b64":false}}"#
            ),
            SignatureError::CriticalHeader,
        ),
        (
            format!(r#"{{"alg":"ES256","OCPPMessageTypedId":2,"x5t#S256":"{t}"}}"#),
            SignatureError::MissingHeader { name: "OCPPAction" },
        ),
        (
            format!(r#"{{"alg":"ES256","OCPPAction":"Heartbeat","x5t#S256":"{t}"}}"#),
            SignatureError::MissingHeader {
                name: "OCPPMessageTypedId",
            },
        ),
        (
            format!(
                r#"{{"alg":"ES256","OCPPAction":"Heartbeat","OCPPMessageTypedId":"2","x5t#S256":"{t}"}}"#
            ),
            SignatureError::InvalidHeader {
                name: "OCPPMessageTypedId",
            },
        ),
        (
            format!(
                r#"{{"alg":"ES256","OCPPAction":"Heartbeat","OCPPMessageTypedId":2,"OCPPMessageTypeId":3,"x5t#S256":"{t}"}}"#
            ),
            SignatureError::InvalidHeader {
                name: "OCPPMessageTypedId",
            },
        ),
        (
            r#"{"alg":"ES256","OCPPAction":"Heartbeat","OCPPMessageTypedId":2,"x5t#S256":7}"#
                .to_owned(),
            SignatureError::InvalidHeader { name: "x5t#S256" },
        ),
        (
            format!(
                r#"{{"alg":"ES256","OCPPAction":["Heartbeat"],"OCPPMessageTypedId":2,"x5t#S256":"{t}"}}"#
            ),
            SignatureError::InvalidHeader { name: "OCPPAction" },
        ),
    ];
    for (header, expected) in cases {
        assert_eq!(
            open(&signed_with_header("Heartbeat-Signed", &header, "{}")),
            Err(expected),
            "{header}"
        );
    }
    // The spelling without the d is read as well.
    let untypoed = format!(
        r#"{{"alg":"ES256","OCPPAction":"Heartbeat","OCPPMessageTypeId":2,"x5t#S256":"{t}"}}"#
    );
    assert!(open(&signed_with_header("Heartbeat-Signed", &untypoed, "{}")).is_ok());
    // A payload that is not a JSON object.
    let good = format!(
        r#"{{"alg":"ES256","OCPPAction":"Heartbeat","OCPPMessageTypedId":2,"x5t#S256":"{t}"}}"#
    );
    for payload in ["[1]", "{", "\"x\""] {
        assert_eq!(
            open(&signed_with_header("Heartbeat-Signed", &good, payload)),
            Err(SignatureError::PayloadNotAnObject)
        );
    }
}

#[test]
fn malformed_jws_objects_fail() {
    let (h, p, s) = members(&signed_call("Heartbeat", "{}"));
    let extra = format!(
        r#"[2,"1","Heartbeat-Signed",{{"protected":"{h}","payload":"{p}","signature":"{s}","x":1}}]"#
    );
    let twice = format!(
        r#"[2,"1","Heartbeat-Signed",{{"protected":"{h}","payload":"{p}","payload":"{p}","signature":"{s}"}}]"#
    );
    let missing = format!(r#"[2,"1","Heartbeat-Signed",{{"protected":"{h}","payload":"{p}"}}]"#);
    let plain = r#"[2,"1","Heartbeat-Signed",{}]"#.to_owned();
    for text in [extra, twice, missing, plain] {
        assert!(
            matches!(
                open(text.as_bytes()),
                Err(SignatureError::NotFlattenedJws { .. })
            ),
            "{text}"
        );
    }
    assert_eq!(
        open(&frame("Heartbeat-Signed", &format!("{h}="), &p, &s)),
        Err(SignatureError::Base64 { part: "protected" })
    );
    assert_eq!(
        open(&frame("Heartbeat-Signed", &h, &p.replace('e', "+"), &s)),
        Err(SignatureError::Base64 { part: "payload" })
    );
    assert_eq!(
        open(&frame("Heartbeat-Signed", &b64(b"not json"), &p, &s))
            .map_err(|e| matches!(e, SignatureError::HeaderNotJson { .. })),
        Err(true)
    );
    // The unprotected header is allowed, and ignored.
    let with_header = format!(
        r#"[2,"id-1","Heartbeat-Signed",{{"protected":"{h}","header":{{"kid":"x"}},"payload":"{p}","signature":"{s}"}}]"#
    );
    assert!(open(with_header.as_bytes()).is_ok());
}

#[test]
fn a_refused_message_is_answered_with_security_error() {
    let plain = parse(br#"[2,"r1","Reset",{"type":"Immediate"}]"#, V).unwrap();
    let error = policy().open(&plain, None).unwrap_err();
    assert_eq!(error.error_code(), ErrorCode::SecurityError);
    let answer = error.refusal(&plain, V).unwrap().to_vec(V).unwrap();
    assert_eq!(
        answer,
        br#"[4,"r1","SecurityError","Message signature refused",{}]"#
    );
    let result = parse(br#"[3,"r2",{"status":"Accepted"}]"#, V).unwrap();
    let answer = SignatureError::Unsigned
        .refusal(&result, V)
        .unwrap()
        .to_vec(V)
        .unwrap();
    assert_eq!(
        answer,
        br#"[5,"r2","SecurityError","Message signature refused",{}]"#
    );
    let send = parse(br#"[6,"r3","NotifyPeriodicEventStream",{}]"#, V).unwrap();
    assert!(SignatureError::Unsigned.refusal(&send, V).is_none());
}

#[test]
fn the_unverified_policy_unwraps_a_bad_signature_but_says_so() {
    let (h, p, _) = members(&signed_call("Heartbeat", r#"{"a":1}"#));
    let bytes = frame("Heartbeat-Signed", &h, &p, &b64(&[0; 64]));
    let bad = parse(&bytes, V).unwrap();
    let opened = SignaturePolicy::UnwrapUnverified.open(&bad, None).unwrap();
    assert!(matches!(opened.signature, SignatureStatus::Unchecked(_)));
    assert_eq!(opened.message.payload().unwrap().get(), r#"{"a":1}"#);
}

/// A JSON object of arbitrary shape, as text.
fn json_object() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        "\\PC{0,20}".prop_map(serde_json::Value::from),
    ];
    let value = leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
            prop::collection::btree_map("\\PC{0,10}", inner, 0..6)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    });
    prop::collection::btree_map("\\PC{0,10}", value, 0..6).prop_map(|m| {
        let object = serde_json::Value::Object(m.into_iter().collect());
        serde_json::to_string(&object).unwrap()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn sign_then_open_gives_the_message_back(
        id in "[!-~]{1,36}".prop_filter("no quote or backslash", |s| !s.contains(['"', '\\'])),
        action in "[A-Za-z]{1,30}",
        payload in json_object(),
        kind in 0u8..3,
    ) {
        let signer = signer();
        let raw_payload = raw(&payload);
        let id = MessageId::new(id.as_str()).unwrap();
        let message = match kind {
            0 => RpcMessage::Call(Call::new(id, action.as_str(), &raw_payload)),
            1 => RpcMessage::Send(Call::new(id, action.as_str(), &raw_payload)),
            _ => RpcMessage::CallResult(CallResult::new(id, &raw_payload)),
        };
        let signed = sign(&message, Some(&action), &signer).unwrap();
        let bytes = signed.to_vec(V).unwrap();
        let received = parse(&bytes, V).unwrap();
        prop_assert!(is_signed(&received));
        let opened = policy().open(&received, Some(&action)).unwrap();
        prop_assert_eq!(&opened.message, &message);
        prop_assert_eq!(opened.message.payload().unwrap().get(), payload.as_str());
        prop_assert!(matches!(opened.signature, SignatureStatus::Verified(_)));
    }

    #[test]
    fn any_change_to_a_signed_frame_is_refused_or_harmless(
        payload in json_object(),
        position in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let mut bytes = signed_call("Heartbeat", &payload);
        let i = position.index(bytes.len());
        prop_assume!(bytes[i] != byte);
        bytes[i] = byte;
        if let Ok(message) = parse(&bytes, V) {
            if let Ok(opened) = policy().open(&message, None) {
                // Accepted only if what the application sees is what was signed (a change to
                // the id or to insignificant JSON outside the JWS is not covered by the
                // signature, by the format's design).
                if is_signed(&message) {
                    prop_assert_eq!(opened.message.action(), Some("Heartbeat"));
                    prop_assert_eq!(opened.message.payload().unwrap().get(), payload.as_str());
                }
            }
        }
    }

    #[test]
    fn arbitrary_input_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..300), text in "\\PC{0,200}") {
        let s = signer();
        let verifier = Arc::new(Es256Verifier::new().with_key(s.certificate_thumbprint(), s.verifying_key()));
        let policies = [
            SignaturePolicy::RequireSigned(verifier.clone()),
            SignaturePolicy::VerifyWhenSigned(verifier),
            SignaturePolicy::UnwrapUnverified,
        ];
        let as_payload = format!(r#"[2,"1","A-Signed",{}]"#, serde_json::to_string(&serde_json::json!({"protected": text, "payload": text, "signature": text})).unwrap());
        for input in [bytes.as_slice(), text.as_bytes(), as_payload.as_bytes()] {
            if let Ok(message) = parse(input, V) {
                for policy in &policies {
                    let _ = policy.open(&message, Some("A"));
                }
            }
        }
    }
}

/// The README's signed-messages program is `examples/signed_messages.rs`, verbatim (`cargo test`
/// builds the examples; `cargo run -p ocpp-messages --example signed_messages --features
/// jws-es256` runs it).
#[test]
fn the_readme_shows_examples_signed_messages_rs() {
    let readme = include_str!("../README.md");
    let section = &readme[readme.find("## Signed messages").expect("the section")..];
    let start = section.find("```rust\n").expect("a rust block") + "```rust\n".len();
    let end = start + section[start..].find("\n```").expect("its end");
    let example = include_str!("../examples/signed_messages.rs");
    assert_eq!(&section[start..end], example.trim_end());
}
