//! Signed messages (OCPP Part 4 chapter 7): a station signs, the CSMS requires signatures.
use std::sync::Arc;

use ocpp_messages::envelope::{parse, to_payload, Call, MessageId, RpcMessage};
use ocpp_messages::signed::es256::{Es256Signer, Es256Verifier};
use ocpp_messages::signed::{sign, MessageSigner, SignaturePolicy};
use ocpp_messages::OcppVersion;
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let version = OcppVersion::V2_1;
    // The station's key and the DER of its certificate (x5t#S256 names it).
    let station = Es256Signer::from_secret_scalar(&[7; 32])?.with_certificate(b"<DER>");

    // Station: the signed equivalent of a CALL, "BootNotification-Signed" + a flattened JWS.
    let payload = to_payload(&json!({"reason": "PowerUp",
        "chargingStation": {"model": "M1", "vendorName": "V"}}))?;
    let boot = RpcMessage::Call(Call::new(
        MessageId::new("1")?,
        "BootNotification",
        &payload,
    ));
    let frame = sign(&boot, None, &station)?.to_vec(version)?;

    // CSMS: the application chooses its policy; there is no default.
    let trusted =
        Es256Verifier::new().with_key(station.certificate_thumbprint(), station.verifying_key());
    let policy = SignaturePolicy::RequireSigned(Arc::new(trusted));
    let received = parse(&frame, version)?;
    match policy.open(&received, None) {
        Ok(opened) => assert_eq!(opened.message, boot), // process it as usual
        Err(refused) => {
            // A SecurityError CALLERROR, holding nothing of the input but its id.
            let _answer = refused.refusal(&received, version);
        }
    }
    Ok(())
}
