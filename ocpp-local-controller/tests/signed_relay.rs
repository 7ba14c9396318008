//! Signed messages (OCPP Part 4 chapter 7) through the Local Controller: a station's signed CALL
//! reaches the central system byte for byte and still verifies there, and the central system's
//! signed answer and signed CALL verify at the station. §7.4's NOTE: the TLS/WebSocket peer is
//! the controller, the signer is the station (or the CSMS), and that must not invalidate the
//! signature. The station's key is a ring key with an rcgen certificate behind
//! `MessageSigner` (a stand-in for a secure element); the CSMS's is the crate's software ES256.
//! Every wait is bounded; loopback only.

#[path = "../../ocpp-tokio/tests/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::time::Duration;

use ocpp_local_controller::LocalController;
use ocpp_messages::envelope::{parse, Call, CallResult, MessageId, RpcMessage};
use ocpp_messages::signed::es256::{certificate_thumbprint, Es256Signer, Es256Verifier};
use ocpp_messages::signed::{
    sign, JwsAlgorithm, MessageSigner, SignatureError, SignaturePolicy, SignatureStatus,
    SignerError,
};
use ocpp_proto::{ConnectionConfig, Event, OcppVersion};
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair as _, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::value::RawValue;
use tokio::net::TcpListener;

use common::raw_peer::RelayTextPeer;

const VERSION: OcppVersion = OcppVersion::V2_1;

/// The station's key, held by ring (not by `ocpp_messages`), with a real X.509 certificate.
struct StationKey {
    key: EcdsaKeyPair,
    rng: SystemRandom,
    thumbprint: String,
}

impl StationKey {
    fn generate() -> StationKey {
        let key = rcgen::KeyPair::generate().unwrap(); // P-256
        let params = rcgen::CertificateParams::new(vec!["CP-SIGNED".to_owned()]).unwrap();
        let certificate = params.self_signed(&key).unwrap();
        let rng = SystemRandom::new();
        let key =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &key.serialize_der(), &rng)
                .unwrap();
        StationKey {
            key,
            rng,
            thumbprint: certificate_thumbprint(certificate.der()),
        }
    }

    fn public_point(&self) -> &[u8] {
        self.key.public_key().as_ref()
    }
}

impl MessageSigner for StationKey {
    fn algorithm(&self) -> JwsAlgorithm {
        JwsAlgorithm::Es256
    }
    fn certificate_thumbprint(&self) -> Option<&str> {
        Some(&self.thumbprint)
    }
    fn sign(&self, signing_input: &[u8]) -> Result<Vec<u8>, SignerError> {
        let signature = self
            .key
            .sign(&self.rng, signing_input)
            .map_err(|_| SignerError::new("ring refused to sign"))?;
        Ok(signature.as_ref().to_vec()) // FIXED: R || S
    }
}

fn raw(text: &str) -> Box<RawValue> {
    RawValue::from_string(text.to_owned()).unwrap()
}

#[tokio::test]
async fn signed_messages_cross_the_local_controller_and_still_verify() {
    let station_key = StationKey::generate();
    let csms_key = Es256Signer::from_secret_scalar(&[0x5a; 32])
        .unwrap()
        .with_certificate(b"CSMS certificate");
    // What each end trusts: the CSMS the station's certificate, the station the CSMS's.
    let at_csms = SignaturePolicy::RequireSigned(Arc::new(
        Es256Verifier::new()
            .with_sec1_key(Some(&station_key.thumbprint), station_key.public_point())
            .unwrap(),
    ));
    let at_station = SignaturePolicy::RequireSigned(Arc::new(
        Es256Verifier::new().with_key(csms_key.certificate_thumbprint(), csms_key.verifying_key()),
    ));

    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream = listener.local_addr().unwrap();
    let controller = LocalController::builder(&format!("ws://{upstream}/ocpp"))
        .unwrap()
        .config(ConnectionConfig::default().close_timeout(Duration::from_secs(1)))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = controller.local_addr().unwrap();
    tokio::spawn(controller.run());

    let mut station = RelayTextPeer::station(addr, "CP-SIGNED", VERSION).await;
    let mut csms = RelayTextPeer::csms(&listener, VERSION).await.0;
    assert!(matches!(
        station.next_event().await,
        Event::Connected { .. }
    ));

    // Station → controller → CSMS: a signed BootNotification, byte for byte, verified.
    let payload =
        raw(r#"{"reason":"PowerUp","chargingStation":{"model":"M1","vendorName":"V\u00e9"}}"#);
    let boot = RpcMessage::Call(Call::new(
        MessageId::new("boot-1").unwrap(),
        "BootNotification",
        &payload,
    ));
    let signed_boot = sign(&boot, None, &station_key)
        .unwrap()
        .to_vec(VERSION)
        .unwrap();
    station
        .send(std::str::from_utf8(&signed_boot).unwrap())
        .await;
    let received = csms.next_text().await;
    assert_eq!(received.as_bytes(), signed_boot.as_slice());
    let message = parse(received.as_bytes(), VERSION).unwrap();
    let opened = at_csms.open(&message, None).unwrap();
    assert_eq!(opened.message, boot);
    let SignatureStatus::Verified(info) = opened.signature else {
        panic!("{:?}", opened.signature)
    };
    assert_eq!(
        info.thumbprint.as_deref(),
        Some(station_key.thumbprint.as_str())
    );

    // CSMS → controller → station: the signed answer (§7.2: a signed request gets a signed
    // reply), verified against the CALL's action.
    let answer_payload =
        raw(r#"{"currentTime":"2026-12-05T06:00:00Z","interval":300,"status":"Accepted"}"#);
    let answer = RpcMessage::CallResult(CallResult::new(
        MessageId::new("boot-1").unwrap(),
        &answer_payload,
    ));
    let signed_answer = sign(&answer, Some("BootNotification"), &csms_key)
        .unwrap()
        .to_vec(VERSION)
        .unwrap();
    csms.send(std::str::from_utf8(&signed_answer).unwrap())
        .await;
    let received = station.next_text().await;
    assert_eq!(received.as_bytes(), signed_answer.as_slice());
    let message = parse(received.as_bytes(), VERSION).unwrap();
    let opened = at_station.open(&message, Some("BootNotification")).unwrap();
    assert_eq!(opened.message, answer);

    // CSMS → station: a signed Reset verifies at the station.
    let reset_payload = raw(r#"{"type":"OnIdle"}"#);
    let reset = RpcMessage::Call(Call::new(
        MessageId::new("c-1").unwrap(),
        "Reset",
        &reset_payload,
    ));
    let signed_reset = sign(&reset, None, &csms_key)
        .unwrap()
        .to_vec(VERSION)
        .unwrap();
    csms.send(std::str::from_utf8(&signed_reset).unwrap()).await;
    let received = station.next_text().await;
    assert_eq!(received.as_bytes(), signed_reset.as_slice());
    let message = parse(received.as_bytes(), VERSION).unwrap();
    assert_eq!(at_station.open(&message, None).unwrap().message, reset);

    // The station's signature does not pass for the CSMS's key: who signed is what counts,
    // not which connection it came over.
    let message = parse(&signed_boot, VERSION).unwrap();
    assert!(matches!(
        at_station.open(&message, None),
        Err(SignatureError::Verification(_))
    ));
}
