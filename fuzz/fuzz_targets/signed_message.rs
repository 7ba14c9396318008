#![no_main]
//! Signed messages (`ocpp_messages::signed`) on arbitrary bytes: as a whole frame, as the
//! signed payload of a `-Signed` CALL and of a CALLRESULT, for every policy.
//!
//! Invariants: no panic; a message a policy accepts keeps its type and id, and a signed one
//! comes out under its original action with a JSON-object payload; the format checks do not
//! depend on the policy (a verifier that accepts every signature accepts exactly what the
//! policy that checks no signature accepts); a refusal is answered with a frame of the version
//! that holds nothing of the input but the id.
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use ocpp_messages::envelope::{parse, RpcMessage};
use ocpp_messages::signed::es256::{Es256Signer, Es256Verifier};
use ocpp_messages::signed::{
    is_signed, unsigned_action, JwsAlgorithm, MessageSigner, MessageVerifier, SignaturePolicy,
    VerifyError,
};
use ocpp_messages::version::OcppVersion;

/// Accepts every signature: what is left to refuse is the format.
struct AcceptAll;
impl MessageVerifier for AcceptAll {
    fn verify(
        &self,
        _: JwsAlgorithm,
        _: Option<&str>,
        _: &[u8],
        _: &[u8],
    ) -> Result<(), VerifyError> {
        Ok(())
    }
}

fn policies() -> [SignaturePolicy; 4] {
    let signer = Es256Signer::from_secret_scalar(&[0x42; 32]).expect("a valid scalar");
    let es256 = Arc::new(
        Es256Verifier::new().with_key(signer.certificate_thumbprint(), signer.verifying_key()),
    );
    [
        SignaturePolicy::RequireSigned(Arc::new(AcceptAll)),
        SignaturePolicy::UnwrapUnverified,
        SignaturePolicy::RequireSigned(es256.clone()),
        SignaturePolicy::VerifyWhenSigned(es256),
    ]
}

fuzz_target!(|data: &[u8]| {
    let policies = policies();
    let mut frames = vec![data.to_vec()];
    if let Ok(text) = std::str::from_utf8(data) {
        frames.push(format!(r#"[2,"f1","Heartbeat-Signed",{text}]"#).into_bytes());
        frames.push(format!(r#"[3,"f2",{text}]"#).into_bytes());
    }
    for frame in &frames {
        for version in OcppVersion::ALL {
            let Ok(message) = parse(frame, version) else {
                continue;
            };
            check(&message, version, &policies);
        }
    }
});

fn check(message: &RpcMessage<'_>, version: OcppVersion, policies: &[SignaturePolicy; 4]) {
    let results: Vec<_> = policies
        .iter()
        .map(|p| p.open(message, Some("Heartbeat")))
        .collect();
    if is_signed(message) {
        assert_eq!(
            results[0].is_ok(),
            results[1].is_ok(),
            "format checks depend on the policy"
        );
    }
    for result in &results {
        match result {
            Ok(opened) => {
                assert_eq!(opened.message.message_type(), message.message_type());
                assert_eq!(opened.message.id(), message.id());
                if is_signed(message) {
                    if let Some(action) = message.action() {
                        assert_eq!(opened.message.action(), unsigned_action(action));
                    }
                    let payload = opened
                        .message
                        .payload()
                        .expect("a CALL, SEND or CALLRESULT");
                    assert!(payload.get().starts_with('{'));
                    opened
                        .message
                        .to_vec(version)
                        .expect("the unwrapped message is writable");
                }
            }
            Err(error) => {
                if let Some(answer) = error.refusal(message, version) {
                    let bytes = answer.to_vec(version).expect("a refusal is writable");
                    let back = parse(&bytes, version).expect("a refusal parses");
                    assert_eq!(back.id(), message.id());
                }
            }
        }
    }
}
