//! Signed messages against an independent JWS implementation, Python `jwcrypto`: a message
//! signed here verifies there, one signed there (ES256, flattened JSON serialization) verifies
//! here, and a tampered one fails in both. Needs python3 with `jwcrypto` (installed by
//! `bash scripts/interop-ocpp.sh --deps-only`); skipped with a printed reason when missing,
//! failed when `OCPP_INTEROP_REQUIRED=1`.

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ocpp_messages::envelope::{parse, Call, MessageId, RpcMessage};
use ocpp_messages::signed::es256::{certificate_thumbprint, Es256Signer, Es256Verifier};
use ocpp_messages::signed::{sign, SignatureError, SignaturePolicy, VerifyError};
use ocpp_messages::OcppVersion;
use serde_json::{json, Value};

const V: OcppVersion = OcppVersion::V2_1;

fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Whether python has `jwcrypto`; fails instead of skipping when required.
fn jwcrypto_present() -> bool {
    let present = Command::new(python())
        .args(["-c", "import jwcrypto"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !present {
        let reason = "python3 with `jwcrypto` is missing \
                      (install: bash scripts/interop-ocpp.sh --deps-only)";
        assert!(
            std::env::var("OCPP_INTEROP_REQUIRED").as_deref() != Ok("1"),
            "OCPP_INTEROP_REQUIRED=1 but {reason}"
        );
        eprintln!("SKIPPED: {reason}");
    }
    present
}

/// Runs `script` with `input` (JSON) on stdin; returns its stdout as JSON.
fn run_python(script: &str, input: &Value) -> Value {
    let mut child = Command::new(python())
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("python prints JSON")
}

/// Verifies a flattened JWS with jwcrypto: the verdict, the payload and the protected header.
const VERIFY: &str = r#"
import json, sys
from jwcrypto import jwk, jws
i = json.load(sys.stdin)
key = jwk.JWK(kty="EC", crv="P-256", x=i["x"], y=i["y"])
out = []
for text in i["jws"]:
    t = jws.JWS()
    try:
        t.deserialize(text)
        t.verify(key, alg="ES256")
        out.append({"ok": True, "payload": t.payload.decode(), "header": json.loads(t.objects["protected"])})
    except Exception as e:
        out.append({"ok": False, "error": type(e).__name__})
print(json.dumps(out))
"#;

/// Signs payloads with jwcrypto (a fresh P-256 key): ES256, flattened JSON serialization.
const SIGN: &str = r#"
import json, sys
from jwcrypto import jwk, jws
i = json.load(sys.stdin)
key = jwk.JWK.generate(kty="EC", crv="P-256")
pub = key.export_public(as_dict=True)
out = []
for m in i["messages"]:
    t = jws.JWS(m["payload"].encode())
    t.add_signature(key, alg="ES256", protected=json.dumps(m["header"]))
    out.append(t.serialize(compact=False))
print(json.dumps({"x": pub["x"], "y": pub["y"], "jws": out}))
"#;

fn signer() -> Es256Signer {
    Es256Signer::from_secret_scalar(&[0x11; 32])
        .unwrap()
        .with_certificate(b"certificate")
}

#[test]
fn signed_here_verifies_in_jwcrypto_and_tampering_fails_there() {
    if !jwcrypto_present() {
        return;
    }
    let signer = signer();
    let payload_text =
        r#"{"reason":"PowerUp","chargingStation":{"model":"M","vendorName":"V\u00e9 \"q\""}}"#;
    let payload = serde_json::value::RawValue::from_string(payload_text.into()).unwrap();
    let call = RpcMessage::Call(Call::new(
        MessageId::new("b-1").unwrap(),
        "BootNotification",
        &payload,
    ));
    let signed = sign(&call, None, &signer).unwrap();
    let RpcMessage::Call(signed_call) = &signed else {
        panic!()
    };
    let jws_text = signed_call.payload.get().to_owned();

    // Tampered: the same header and signature over another payload.
    let jws: Value = serde_json::from_str(&jws_text).unwrap();
    let mut tampered = jws.clone();
    tampered["payload"] = json!(URL_SAFE_NO_PAD.encode(br#"{"reason":"Watchdog"}"#));

    let point = signer.verifying_key().to_encoded_point(false);
    let input = json!({
        "x": URL_SAFE_NO_PAD.encode(point.x().unwrap()),
        "y": URL_SAFE_NO_PAD.encode(point.y().unwrap()),
        "jws": [jws_text, tampered.to_string()],
    });
    let verdicts = run_python(VERIFY, &input);
    assert_eq!(verdicts[0]["ok"], json!(true), "{verdicts}");
    assert_eq!(verdicts[0]["payload"], json!(payload_text));
    assert_eq!(
        verdicts[0]["header"],
        json!({
            "alg": "ES256",
            "OCPPAction": "BootNotification",
            "OCPPMessageTypedId": 2,
            "x5t#S256": certificate_thumbprint(b"certificate"),
        })
    );
    assert_eq!(verdicts[1]["ok"], json!(false), "{verdicts}");
}

#[test]
fn signed_in_jwcrypto_verifies_here_and_tampering_fails_here() {
    if !jwcrypto_present() {
        return;
    }
    let thumbprint = certificate_thumbprint(b"their certificate");
    let payload = r#"{"idToken":{"idToken":"04A1B2","type":"ISO14443"}}"#;
    let header = json!({
        "alg": "ES256",
        "OCPPAction": "Authorize",
        "OCPPMessageTypedId": 2,
        "x5t#S256": thumbprint,
    });
    let input = json!({"messages": [{"payload": payload, "header": header}]});
    let signed = run_python(SIGN, &input);
    let jws = signed["jws"][0].as_str().unwrap();
    let jws_value: Value = serde_json::from_str(jws).unwrap();
    assert!(
        jws_value.get("signatures").is_none() && jws_value.get("signature").is_some(),
        "jwcrypto wrote the flattened serialization: {jws}"
    );

    let decode = |k: &str| URL_SAFE_NO_PAD.decode(signed[k].as_str().unwrap()).unwrap();
    let point = [vec![4], decode("x"), decode("y")].concat();
    let verifier = Es256Verifier::new()
        .with_sec1_key(Some(&thumbprint), &point)
        .unwrap();
    let policy = SignaturePolicy::RequireSigned(Arc::new(verifier));

    let frame = format!(r#"[2,"a-1","Authorize-Signed",{jws}]"#);
    let message = parse(frame.as_bytes(), V).unwrap();
    let opened = policy.open(&message, None).unwrap();
    assert_eq!(opened.message.action(), Some("Authorize"));
    assert_eq!(opened.message.payload().unwrap().get(), payload);

    // Tampered: another payload under their header and signature.
    let mut tampered = jws_value.clone();
    tampered["payload"] =
        json!(URL_SAFE_NO_PAD.encode(br#"{"idToken":{"idToken":"FFFFFF","type":"ISO14443"}}"#));
    let frame = format!(r#"[2,"a-2","Authorize-Signed",{tampered}]"#);
    let message = parse(frame.as_bytes(), V).unwrap();
    assert_eq!(
        policy.open(&message, None),
        Err(SignatureError::Verification(VerifyError::InvalidSignature))
    );
    // And theirs, moved onto another action, is refused before any key is asked.
    let frame = format!(r#"[2,"a-3","RequestStartTransaction-Signed",{jws}]"#);
    let message = parse(frame.as_bytes(), V).unwrap();
    assert!(matches!(
        policy.open(&message, None),
        Err(SignatureError::ActionMismatch { .. })
    ));
}
