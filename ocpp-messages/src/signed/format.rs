//! The wire format of a signed message, and only it: every name, header and encoding rule of
//! OCPP Part 4 chapter 7 that this crate writes or checks lives in this file, so that a
//! correction to our reading of the specification is made here and nowhere else. (What is
//! confirmed and what is our reading: the docs of [`crate::signed`].)
//!
//! ```text
//! [2,"19223201","BootNotification",{"reason":"PowerUp",...}]
//! [2,"19223201","BootNotification-Signed",{"protected":"<b64u(header)>","payload":"<b64u(payload)>","signature":"<b64u(sig)>"}]
//! header: {"alg":"ES256","OCPPAction":"BootNotification","OCPPMessageTypedId":2,"x5t#S256":"<b64u(SHA-256(cert DER))>"}
//! ```

use alloc::borrow::{Cow, ToOwned};
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{MessageSigner, MessageVerifier, SignError, SignatureError, VerifyError};
use crate::envelope::{nests_deeper_than, MessageTypeId, MAX_NESTING_DEPTH};

/// What a signed action ends with (§7.1: `BootNotification` becomes `BootNotification-Signed`).
pub const SIGNED_ACTION_SUFFIX: &str = "-Signed";
/// The protected header field naming the original action (§7.1).
pub const HEADER_ACTION: &str = "OCPPAction";
/// The protected header field holding the message type id (§7.1), spelt as the specification
/// spells it: with a `d`. Written by this crate.
pub const HEADER_MESSAGE_TYPE: &str = "OCPPMessageTypedId";
/// The same field spelt without the `d`, as a peer that "corrected" the specification may
/// write it. Read (never written); a header with both spellings must give the same value.
pub const HEADER_MESSAGE_TYPE_UNTYPOED: &str = "OCPPMessageTypeId";
/// The protected header field that names the signing certificate (§7.4, RFC 7515 §4.1.8):
/// base64url of the SHA-256 hash of the certificate's DER encoding.
pub const HEADER_THUMBPRINT: &str = "x5t#S256";

/// A JWS algorithm (RFC 7518 §3.1) that OCPP allows for signed messages (§7.3: "the same
/// algorithms ... as for the TLS connection": ES256, RS256, RS384). Any other `alg`, `none`
/// included, is refused before a verifier is asked.
///
/// ```
/// use ocpp_messages::signed::JwsAlgorithm;
///
/// assert_eq!(JwsAlgorithm::from_name("ES256"), Some(JwsAlgorithm::Es256));
/// assert_eq!(JwsAlgorithm::Rs384.name(), "RS384");
/// assert_eq!(JwsAlgorithm::from_name("none"), None);
/// assert_eq!(JwsAlgorithm::from_name("ES384"), None); // not in §7.3
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum JwsAlgorithm {
    /// `ES256`: ECDSA on P-256 with SHA-256; the signature is `R || S`, 64 bytes (RFC 7518 §3.4).
    Es256,
    /// `RS256`: RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
    /// `RS384`: RSASSA-PKCS1-v1_5 with SHA-384.
    Rs384,
}

impl JwsAlgorithm {
    /// Every algorithm §7.3 allows.
    pub const ALL: [JwsAlgorithm; 3] = [
        JwsAlgorithm::Es256,
        JwsAlgorithm::Rs256,
        JwsAlgorithm::Rs384,
    ];

    /// The `alg` value (case-sensitive, RFC 7515 §4.1.1).
    ///
    /// ```
    /// assert_eq!(ocpp_messages::signed::JwsAlgorithm::Es256.name(), "ES256");
    /// ```
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            JwsAlgorithm::Es256 => "ES256",
            JwsAlgorithm::Rs256 => "RS256",
            JwsAlgorithm::Rs384 => "RS384",
        }
    }

    /// The algorithm an `alg` value names, if §7.3 allows it.
    ///
    /// ```
    /// use ocpp_messages::signed::JwsAlgorithm;
    /// assert_eq!(JwsAlgorithm::from_name("RS256"), Some(JwsAlgorithm::Rs256));
    /// assert_eq!(JwsAlgorithm::from_name("es256"), None); // names are case-sensitive
    /// ```
    #[must_use]
    pub fn from_name(name: &str) -> Option<JwsAlgorithm> {
        JwsAlgorithm::ALL.into_iter().find(|a| a.name() == name)
    }
}

impl fmt::Display for JwsAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The action a signed message carries on the wire: `action` + [`SIGNED_ACTION_SUFFIX`].
///
/// ```
/// assert_eq!(ocpp_messages::signed::signed_action("Heartbeat"), "Heartbeat-Signed");
/// ```
#[must_use]
pub fn signed_action(action: &str) -> String {
    let mut signed = String::with_capacity(action.len() + SIGNED_ACTION_SUFFIX.len());
    signed.push_str(action);
    signed.push_str(SIGNED_ACTION_SUFFIX);
    signed
}

/// The original action of a signed action (`Heartbeat-Signed` gives `Heartbeat`); `None` when
/// `action` is not a signed action (no suffix, or nothing before it).
///
/// ```
/// use ocpp_messages::signed::unsigned_action;
/// assert_eq!(unsigned_action("Heartbeat-Signed"), Some("Heartbeat"));
/// assert_eq!(unsigned_action("Heartbeat"), None);
/// assert_eq!(unsigned_action("-Signed"), None);
/// ```
#[must_use]
pub fn unsigned_action(action: &str) -> Option<&str> {
    action
        .strip_suffix(SIGNED_ACTION_SUFFIX)
        .filter(|original| !original.is_empty())
}

/// base64url without padding (RFC 7515 §2).
pub(crate) fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The protected header this crate writes, in this member order.
#[derive(Serialize)]
struct ProtectedHeaderOut<'a> {
    alg: &'static str,
    #[serde(rename = "OCPPAction")]
    action: &'a str,
    #[serde(rename = "OCPPMessageTypedId")]
    message_type: u8,
    #[serde(rename = "x5t#S256", skip_serializing_if = "Option::is_none")]
    thumbprint: Option<&'a str>,
}

/// The `<SignedPayload>` of a message: the flattened JWS JSON serialization (RFC 7515 §7.2.2)
/// of `payload`, with the OCPP headers for `message_type` and `action` (the original action).
pub(crate) fn encode(
    message_type: MessageTypeId,
    action: &str,
    payload: &str,
    signer: &dyn MessageSigner,
) -> Result<Box<RawValue>, SignError> {
    let header = ProtectedHeaderOut {
        alg: signer.algorithm().name(),
        action,
        message_type: message_type.number(),
        thumbprint: signer.certificate_thumbprint(),
    };
    let header = serde_json::to_vec(&header).map_err(|_| SignError::Encoding)?;
    let protected = b64(&header);
    let payload = b64(payload.as_bytes());
    let mut signing_input = String::with_capacity(protected.len() + 1 + payload.len());
    signing_input.push_str(&protected);
    signing_input.push('.');
    signing_input.push_str(&payload);
    let signature = b64(&signer.sign(signing_input.as_bytes())?);
    // base64url needs no JSON escaping.
    let jws = alloc::format!(
        r#"{{"protected":"{protected}","payload":"{payload}","signature":"{signature}"}}"#
    );
    RawValue::from_string(jws).map_err(|_| SignError::Encoding)
}

/// The flattened JWS JSON serialization as read. `header` (the unprotected header) is allowed
/// by RFC 7515 §7.2.2 but never trusted: nothing in it is used.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FlattenedJws<'a> {
    #[serde(borrow)]
    protected: Cow<'a, str>,
    #[serde(borrow)]
    payload: Cow<'a, str>,
    #[serde(borrow)]
    signature: Cow<'a, str>,
    #[serde(default, borrow)]
    #[allow(dead_code)]
    header: Option<&'a RawValue>,
}

/// Whether a CALLRESULT payload is a signed one: a JSON object whose members are `protected`,
/// `payload` and `signature` (and at most `header`), all three strings. (No OCPP response
/// payload has that shape: our reading, see [`crate::signed`].)
pub(crate) fn looks_signed(payload: &RawValue) -> bool {
    serde_json::from_str::<FlattenedJws<'_>>(payload.get()).is_ok()
}

/// A signed payload, checked for everything but the signature.
pub(crate) struct DecodedSignedPayload {
    pub(crate) algorithm: super::JwsAlgorithm,
    pub(crate) thumbprint: Option<String>,
    pub(crate) payload: Box<RawValue>,
    pub(crate) signing_input: Vec<u8>,
    pub(crate) signature: Vec<u8>,
}

fn decode_b64(text: &str, part: &'static str) -> Result<Vec<u8>, SignatureError> {
    URL_SAFE_NO_PAD
        .decode(text)
        .map_err(|_| SignatureError::Base64 { part })
}

/// Reads a `<SignedPayload>` and checks its protected header against the frame that carried
/// it: `message_type` and `action` (the original action, for a CALLRESULT the CALL's).
pub(crate) fn decode(
    signed_payload: &RawValue,
    message_type: MessageTypeId,
    action: &str,
) -> Result<DecodedSignedPayload, SignatureError> {
    let jws: FlattenedJws<'_> = serde_json::from_str(signed_payload.get()).map_err(|e| {
        SignatureError::NotFlattenedJws {
            detail: alloc::format!("{e}"),
        }
    })?;
    let header_bytes = decode_b64(&jws.protected, "protected")?;
    // serde_json keeps the lexically last of duplicate names (allowed by RFC 7515 §4).
    let header: Map<String, Value> =
        serde_json::from_slice(&header_bytes).map_err(|e| SignatureError::HeaderNotJson {
            detail: alloc::format!("{e}"),
        })?;

    let algorithm = match header.get("alg") {
        None => return Err(SignatureError::MissingHeader { name: "alg" }),
        Some(Value::String(alg)) if alg == "none" => return Err(SignatureError::AlgorithmNone),
        Some(Value::String(alg)) => super::JwsAlgorithm::from_name(alg)
            .ok_or_else(|| SignatureError::UnsupportedAlgorithm { alg: alg.clone() })?,
        Some(_) => return Err(SignatureError::InvalidHeader { name: "alg" }),
    };
    // OCPP defines no critical extension: one the signer marked critical cannot be honoured
    // (RFC 7515 §4.1.11), `b64: false` (RFC 7797) included.
    if header.contains_key("crit") {
        return Err(SignatureError::CriticalHeader);
    }
    match header.get(HEADER_ACTION) {
        None => {
            return Err(SignatureError::MissingHeader {
                name: HEADER_ACTION,
            })
        }
        Some(Value::String(signed)) if signed == action => {}
        Some(Value::String(signed)) => {
            return Err(SignatureError::ActionMismatch {
                signed: signed.clone(),
                frame: action.to_owned(),
            })
        }
        Some(_) => {
            return Err(SignatureError::InvalidHeader {
                name: HEADER_ACTION,
            })
        }
    }
    let read_type = |name: &'static str| match header.get(name) {
        None => Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .map(Some)
            .ok_or(SignatureError::InvalidHeader { name }),
        Some(_) => Err(SignatureError::InvalidHeader { name }),
    };
    let signed_type = match (
        read_type(HEADER_MESSAGE_TYPE)?,
        read_type(HEADER_MESSAGE_TYPE_UNTYPOED)?,
    ) {
        (None, None) => {
            return Err(SignatureError::MissingHeader {
                name: HEADER_MESSAGE_TYPE,
            })
        }
        (Some(a), Some(b)) if a != b => {
            return Err(SignatureError::InvalidHeader {
                name: HEADER_MESSAGE_TYPE,
            })
        }
        (Some(t), _) | (None, Some(t)) => t,
    };
    if signed_type != i64::from(message_type.number()) {
        return Err(SignatureError::MessageTypeMismatch {
            signed: signed_type,
            frame: message_type,
        });
    }
    let thumbprint = match header.get(HEADER_THUMBPRINT) {
        None => None,
        Some(Value::String(t)) => Some(t.clone()),
        Some(_) => {
            return Err(SignatureError::InvalidHeader {
                name: HEADER_THUMBPRINT,
            })
        }
    };

    let payload_bytes = decode_b64(&jws.payload, "payload")?;
    let payload: Box<RawValue> =
        serde_json::from_slice(&payload_bytes).map_err(|_| SignatureError::PayloadNotAnObject)?;
    if !payload.get().starts_with('{') || nests_deeper_than(payload.get(), MAX_NESTING_DEPTH) {
        return Err(SignatureError::PayloadNotAnObject);
    }
    let signature = decode_b64(&jws.signature, "signature")?;
    let mut signing_input = Vec::with_capacity(jws.protected.len() + 1 + jws.payload.len());
    signing_input.extend_from_slice(jws.protected.as_bytes());
    signing_input.push(b'.');
    signing_input.extend_from_slice(jws.payload.as_bytes());
    Ok(DecodedSignedPayload {
        algorithm,
        thumbprint,
        payload,
        signing_input,
        signature,
    })
}

impl DecodedSignedPayload {
    /// Asks `verifier` whether the signature is valid.
    pub(crate) fn verify(&self, verifier: &dyn MessageVerifier) -> Result<(), VerifyError> {
        verifier.verify(
            self.algorithm,
            self.thumbprint.as_deref(),
            &self.signing_input,
            &self.signature,
        )
    }
}
