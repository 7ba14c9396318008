//! Signed messages (OCPP 2.1 Part 4 chapter 7, also 2.0.1 Part 4 chapter 7): a JWS over one
//! OCPP-J message, so that a message stays attributable to its author across a Local Controller
//! or any other hop (TLS proves only who the next hop is). Feature `signed-messages`.
//!
//! Sans-IO like the rest of the crate: [`sign`] turns a message into its signed equivalent,
//! [`SignaturePolicy::open`] turns a received message back into the normal one it encapsulates,
//! after checking what the application's policy says to check. The cryptography is behind two
//! traits, [`MessageSigner`] and [`MessageVerifier`], so that a key held in a secure element or
//! an HSM never has to reach memory; feature `jws-es256` adds a software ES256 pair
//! ([`es256`]).
//!
//! ```
//! # #[cfg(feature = "jws-es256")] {
//! use std::sync::Arc;
//! use ocpp_messages::envelope::{parse, MessageId, RpcMessage};
//! use ocpp_messages::signed::es256::{Es256Signer, Es256Verifier};
//! use ocpp_messages::signed::{sign, MessageSigner, SignaturePolicy, SignatureStatus};
//! use ocpp_messages::OcppVersion;
//!
//! // The station's key (a fixed test scalar here) and the certificate that names it.
//! let signer = Es256Signer::from_secret_scalar(&[7; 32])?.with_certificate(b"<DER certificate>");
//! let verifier = Es256Verifier::new().with_key(signer.certificate_thumbprint(), signer.verifying_key());
//!
//! // Station: sign a CALL; the frame carries "Heartbeat-Signed" and a flattened JWS.
//! let payload = serde_json::value::RawValue::from_string("{}".into())?;
//! let call = RpcMessage::Call(ocpp_messages::envelope::Call::new(MessageId::new("m1")?, "Heartbeat", &payload));
//! let frame = sign(&call, None, &signer)?.to_vec(OcppVersion::V2_1)?;
//! assert!(frame.starts_with(br#"[2,"m1","Heartbeat-Signed",{"protected":""#));
//!
//! // CSMS: the application chose to require signatures.
//! let policy = SignaturePolicy::RequireSigned(Arc::new(verifier));
//! let received = parse(&frame, OcppVersion::V2_1)?;
//! let opened = policy.open(&received, None)?;
//! assert_eq!(opened.message.action(), Some("Heartbeat"));
//! assert_eq!(opened.message.payload().map(|p| p.get()), Some("{}"));
//! assert!(matches!(opened.signature, SignatureStatus::Verified(_)));
//!
//! // An unsigned Heartbeat is refused under that policy, with a SecurityError to answer.
//! let unsigned = parse(br#"[2,"m2","Heartbeat",{}]"#, OcppVersion::V2_1)?;
//! let refused = policy.open(&unsigned, None).unwrap_err();
//! let answer = refused.refusal(&unsigned, OcppVersion::V2_1).unwrap().to_vec(OcppVersion::V2_1)?;
//! assert_eq!(answer, br#"[4,"m2","SecurityError","Message signature refused",{}]"#);
//! # }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The format, and where each part of it comes from
//! All of it is written and checked in one file, `signed/format.rs`; a correction goes there.
//!
//! Confirmed from the text of OCPP 2.1 Part 4 (Edition 1, 2025-01-23, and Edition 2,
//! 2025-12-03, §7.1-§7.4; 2.0.1 Part 4 §7 reads the same), as transcribed in public
//! repositories (the PDFs are the OCA's):
//! - the signed equivalent of a message keeps its MessageTypeId and MessageId; its action is
//!   the original action with `-Signed` appended (`BootNotification-Signed`);
//! - its payload is "the JWS encoding of the payload" in the **Flattened JWS JSON
//!   Serialization** (RFC 7515 §7.2.2), the JWS Payload being the original `<Payload>`;
//! - the JWS Protected Header SHALL contain `OCPPAction` (the original action) and a field
//!   spelt **`OCPPMessageTypedId`** (sic) "containing the message ID (`<MessageTypeId>`)";
//! - it SHOULD contain `x5t#S256`, the SHA-256 hash of the DER encoding of the signing
//!   certificate (RFC 7515 §4.1.8, so base64url of the hash);
//! - the algorithms are ES256, RS256 and RS384 (§7.3), nothing else;
//! - a receiver SHALL extract and process the encapsulated message normally; checking the
//!   signature is a MAY (§7.2); a station that receives a signed request and supports signing
//!   SHALL send a signed reply;
//! - behind a Local Controller the signing key differs from the TLS peer's, and that SHALL NOT
//!   invalidate the signature (§7.4 NOTE): the relay must pass the frame through unchanged.
//!
//! Our reading, where the text is ambiguous or silent:
//! - `OCPPMessageTypedId` holds the message **type** id as a JSON number (2 for a CALL), as the
//!   field's name and the `<MessageTypeId>` in the text say, not the message id (the text's
//!   "message ID" wording). `OCPPMessageTypeId` (without the `d`) is read too, never written.
//! - The `{<Extension>}` element the §7.1 pattern shows between the id and the action exists
//!   nowhere in §4's message structures: signed frames have the normal 4 elements.
//! - A CALLRESULT has no action to suffix: a signed reply is a CALLRESULT whose payload is the
//!   flattened JWS object (members `protected`, `payload`, `signature`, optionally `header`,
//!   nothing else), its `OCPPAction` the action of the CALL it answers, its
//!   `OCPPMessageTypedId` 3. A SEND (2.1) is signed like a CALL, with 6.
//! - CALLERROR and CALLRESULTERROR are never signed (they have no payload to sign) and pass
//!   every policy unchanged. Note that a hop can therefore replace a signed reply by an error.
//! - The unprotected `header` member is allowed and ignored; a `crit` header is refused (OCPP
//!   defines no extension to honour, RFC 7515 §4.1.11), which refuses `b64: false` too.
//! - The JWS Payload is signed as the exact bytes of the original payload text; the unwrapped
//!   message carries those bytes again (no re-serialisation).
//! - OCPP defines no error code for a refused signature: [`SignatureError::refusal`] answers a
//!   CALL with a CALLERROR `SecurityError` (J21 Table 9: "a security issue occurred preventing
//!   receiver from completing the Action successfully"), a CALLRESULT in 2.1 with a
//!   CALLRESULTERROR `SecurityError`, and nothing else (a SEND is never answered).
//!
//! # The policy is the application's choice
//! [`SignaturePolicy`] has no default. A verifier can only check a signature that is present:
//! "verify it if it is signed" accepts a message from which a hop removed the signature (three
//! JSON members and a suffix), so [`SignaturePolicy::VerifyWhenSigned`] is for a migration,
//! and [`SignaturePolicy::RequireSigned`] is the one that proves authorship.
//!
//! # Algorithms of the software implementation
//! [`es256`] implements ES256 only, on RustCrypto's `p256`. RS256 and RS384 are allowed by §7.3
//! and accepted by the format: a [`MessageSigner`] / [`MessageVerifier`] of the application
//! (an HSM, `ring`, OpenSSL) can provide them. No RSA implementation ships here because the one
//! pure-Rust RSA crate available (`rsa` 0.9) carries an open timing side-channel advisory
//! (RUSTSEC-2023-0071) for private-key operations. ES384 and EdDSA are not in §7.3.

mod format;

#[cfg(feature = "jws-es256")]
pub mod es256;

use alloc::borrow::Cow;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;

use crate::envelope::{Call, CallError, CallResult, MessageTypeId, RpcMessage};
use crate::error_code::ErrorCode;
use crate::version::OcppVersion;

pub use format::{
    signed_action, unsigned_action, JwsAlgorithm, HEADER_ACTION, HEADER_MESSAGE_TYPE,
    HEADER_MESSAGE_TYPE_UNTYPOED, HEADER_THUMBPRINT, SIGNED_ACTION_SUFFIX,
};

/// Signs messages: the private key, wherever it lives (memory, a secure element, an HSM).
///
/// ```
/// use ocpp_messages::signed::{JwsAlgorithm, MessageSigner, SignerError};
///
/// /// A signer whose key lives in a secure element (here: a stand-in).
/// struct SecureElement;
/// impl MessageSigner for SecureElement {
///     fn algorithm(&self) -> JwsAlgorithm { JwsAlgorithm::Es256 }
///     fn certificate_thumbprint(&self) -> Option<&str> { Some("q3k8Ykq3k8Ykq3k8Ykq3k8Ykq3k8Ykq3k8Ykq3k8Y") }
///     fn sign(&self, _signing_input: &[u8]) -> Result<Vec<u8>, SignerError> {
///         Err(SignerError::new("secure element not reachable"))
///     }
/// }
/// # let _ = SecureElement;
/// ```
pub trait MessageSigner {
    /// The JWS `alg` this signer produces.
    fn algorithm(&self) -> JwsAlgorithm;
    /// The `x5t#S256` to write: base64url (no padding) of the SHA-256 hash of the DER encoding
    /// of the signing certificate; `None` writes no such header (§7.4 says SHOULD write it).
    fn certificate_thumbprint(&self) -> Option<&str>;
    /// Signs the JWS Signing Input (`b64u(header) '.' b64u(payload)`, RFC 7515 §5.1) and
    /// returns the JWS Signature bytes (for ES256 `R || S`, 64 bytes, not DER).
    ///
    /// # Errors
    /// [`SignerError`] when the key cannot sign (device absent, key locked...).
    fn sign(&self, signing_input: &[u8]) -> Result<Vec<u8>, SignerError>;
}

/// Checks signatures: the public keys the application trusts, found by certificate thumbprint.
///
/// ```
/// use ocpp_messages::signed::{JwsAlgorithm, MessageVerifier, VerifyError};
///
/// /// Trusts nobody: every signature fails.
/// struct NoKeys;
/// impl MessageVerifier for NoKeys {
///     fn verify(&self, _: JwsAlgorithm, _: Option<&str>, _: &[u8], _: &[u8]) -> Result<(), VerifyError> {
///         Err(VerifyError::UnknownKey)
///     }
/// }
/// # let _ = NoKeys;
/// ```
pub trait MessageVerifier {
    /// Whether `signature` is a valid `algorithm` signature of `signing_input` by the key the
    /// certificate `thumbprint` (`x5t#S256`, as received) names, or the key used for messages
    /// without one when `None`.
    ///
    /// # Errors
    /// [`VerifyError`]: no trusted key, algorithm not accepted for that key, invalid signature.
    fn verify(
        &self,
        algorithm: JwsAlgorithm,
        thumbprint: Option<&str>,
        signing_input: &[u8],
        signature: &[u8],
    ) -> Result<(), VerifyError>;
}

/// Why a [`MessageSigner`] could not sign.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the signer failed: {reason}")]
pub struct SignerError {
    reason: String,
}

impl SignerError {
    /// A failure, said in words.
    ///
    /// ```
    /// let e = ocpp_messages::signed::SignerError::new("HSM offline");
    /// assert_eq!(e.to_string(), "the signer failed: HSM offline");
    /// ```
    #[must_use]
    pub fn new(reason: impl Into<String>) -> SignerError {
        SignerError {
            reason: reason.into(),
        }
    }
}

/// Why a [`MessageVerifier`] refused a signature.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// No trusted key for the certificate named (or for messages naming none).
    #[error("no trusted key for the signing certificate")]
    UnknownKey,
    /// The key exists but is not used with this algorithm.
    #[error("algorithm {0} is not accepted for that key")]
    AlgorithmNotAccepted(JwsAlgorithm),
    /// The signature does not verify (or does not have the algorithm's form).
    #[error("the signature is not valid")]
    InvalidSignature,
    /// The verifier could not answer (device or service unavailable).
    #[error("the verifier failed: {0}")]
    Unavailable(String),
}

/// Why [`sign`] could not sign a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignError {
    /// CALLERROR and CALLRESULTERROR are not signed (our reading: they carry no payload).
    #[error("a {0:?} is not signed")]
    NotSignable(MessageTypeId),
    /// A CALLRESULT is signed with the action of the CALL it answers, and none was given.
    #[error("signing a CALLRESULT needs the action of the CALL it answers")]
    CallActionNeeded,
    /// The action already ends with `-Signed`.
    #[error("the message is already signed")]
    AlreadySigned,
    /// The signer failed.
    #[error(transparent)]
    Signer(#[from] SignerError),
    /// The JWS could not be written (not expected: the parts are base64url).
    #[error("the signed payload could not be encoded")]
    Encoding,
}

/// Why a received message was refused under a [`SignaturePolicy`]. Every variant is refused
/// before or instead of processing the message; [`SignatureError::refusal`] is the answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignatureError {
    /// The policy requires signatures and the message is not signed.
    #[error("the message is not signed and the policy requires signatures")]
    Unsigned,
    /// The payload of a signed message is not a flattened JWS JSON object (`protected`,
    /// `payload`, `signature` strings, optional `header`, nothing else, no duplicates).
    #[error("the signed payload is not a flattened JWS: {detail}")]
    NotFlattenedJws {
        /// What was wrong, as serde_json said it.
        detail: String,
    },
    /// A part is not base64url without padding.
    #[error("the JWS {part} is not base64url without padding")]
    Base64 {
        /// `protected`, `payload` or `signature`.
        part: &'static str,
    },
    /// The protected header is not a JSON object.
    #[error("the JWS protected header is not a JSON object: {detail}")]
    HeaderNotJson {
        /// What serde_json said.
        detail: String,
    },
    /// A required protected header field is missing.
    #[error("the JWS protected header has no {name}")]
    MissingHeader {
        /// The field (`alg`, `OCPPAction`, `OCPPMessageTypedId`).
        name: &'static str,
    },
    /// A protected header field has the wrong JSON type (or both spellings of the message
    /// type field disagree).
    #[error("the JWS protected header's {name} is not valid")]
    InvalidHeader {
        /// The field.
        name: &'static str,
    },
    /// `alg: none`: an unsecured JWS (RFC 7515 §A.5) is never accepted.
    #[error("alg \"none\" is refused")]
    AlgorithmNone,
    /// An `alg` outside §7.3 (ES256, RS256, RS384).
    #[error("alg {alg:?} is not allowed by OCPP (ES256, RS256, RS384)")]
    UnsupportedAlgorithm {
        /// The `alg` as received.
        alg: String,
    },
    /// A `crit` header: OCPP defines no extension this implementation could honour.
    #[error("the JWS protected header marks extensions critical (crit)")]
    CriticalHeader,
    /// `OCPPAction` names another action than the frame's.
    #[error("the signature is for action {signed:?}, the frame is {frame:?}")]
    ActionMismatch {
        /// `OCPPAction`.
        signed: String,
        /// The frame's (original) action.
        frame: String,
    },
    /// `OCPPMessageTypedId` is another message type than the frame's.
    #[error("the signature is for message type {signed}, the frame is a {frame:?}")]
    MessageTypeMismatch {
        /// The header's value.
        signed: i64,
        /// The frame's type.
        frame: MessageTypeId,
    },
    /// The JWS Payload is not a JSON object (nested at most
    /// [`crate::envelope::MAX_NESTING_DEPTH`]).
    #[error("the JWS payload is not a JSON object")]
    PayloadNotAnObject,
    /// A signed CALLRESULT, and the caller did not say which action the CALL had.
    #[error("a signed CALLRESULT cannot be checked without the action of its CALL")]
    CallActionNeeded,
    /// The verifier refused the signature.
    #[error(transparent)]
    Verification(#[from] VerifyError),
}

impl SignatureError {
    /// The CALLERROR code for a refused message: always `SecurityError` (OCPP defines none
    /// for signatures; see the module docs).
    ///
    /// ```
    /// use ocpp_messages::signed::SignatureError;
    /// use ocpp_messages::ErrorCode;
    /// assert_eq!(SignatureError::AlgorithmNone.error_code(), ErrorCode::SecurityError);
    /// ```
    #[must_use]
    pub fn error_code(&self) -> ErrorCode {
        ErrorCode::SecurityError
    }

    /// What to send back for the refused `message`: a CALLERROR for a CALL; a CALLRESULTERROR
    /// for a CALLRESULT when `version` has one (2.1); nothing otherwise. The description is
    /// fixed text: nothing of the input is echoed.
    ///
    /// ```
    /// use ocpp_messages::envelope::parse;
    /// use ocpp_messages::signed::SignatureError;
    /// use ocpp_messages::OcppVersion;
    ///
    /// let v = OcppVersion::V2_0_1;
    /// let call = parse(br#"[2,"7","Reset-Signed",{}]"#, v)?;
    /// let answer = SignatureError::Unsigned.refusal(&call, v).unwrap();
    /// assert_eq!(answer.to_vec(v)?, br#"[4,"7","SecurityError","Message signature refused",{}]"#);
    /// let send = parse(br#"[3,"7",{}]"#, v)?;
    /// assert!(SignatureError::Unsigned.refusal(&send, v).is_none()); // no CALLRESULTERROR in 2.0.1
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn refusal(
        &self,
        message: &RpcMessage<'_>,
        version: OcppVersion,
    ) -> Option<RpcMessage<'static>> {
        const DESCRIPTION: &str = "Message signature refused";
        let error = || {
            CallError::new(
                message.id().clone().into_owned(),
                self.error_code(),
                DESCRIPTION,
            )
        };
        match message {
            RpcMessage::Call(_) => Some(RpcMessage::CallError(error())),
            RpcMessage::CallResult(_) if MessageTypeId::CallResultError.exists_in(version) => {
                Some(RpcMessage::CallResultError(error()))
            }
            _ => None,
        }
    }
}

/// Who signed a message that was accepted, as far as the header says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureInfo {
    /// The `alg`.
    pub algorithm: JwsAlgorithm,
    /// The `x5t#S256`, as received.
    pub thumbprint: Option<String>,
}

/// What [`SignaturePolicy::open`] found about the signature of an accepted message.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SignatureStatus {
    /// The message was not signed (or is a CALLERROR / CALLRESULTERROR, which never are).
    Unsigned,
    /// Signed, and the verifier accepted the signature.
    Verified(SignatureInfo),
    /// Signed, the format checked, the signature not (policy [`SignaturePolicy::UnwrapUnverified`]).
    Unchecked(SignatureInfo),
}

/// A received message as the application processes it: the normal message a signed one
/// encapsulates (or the message itself), and what was found about its signature.
#[derive(Debug, Clone, PartialEq)]
pub struct Opened<'a> {
    /// The normal message: original action, original payload bytes, same type and id.
    pub message: RpcMessage<'a>,
    /// Whether and how it was signed.
    pub signature: SignatureStatus,
}

/// What the application requires of received messages' signatures. No `Default`: the choice
/// is the application's, per connection or per peer.
///
/// | policy | unsigned | validly signed | badly signed |
/// | --- | --- | --- | --- |
/// | `RequireSigned` | refused ([`SignatureError::Unsigned`]) | unwrapped, `Verified` | refused |
/// | `VerifyWhenSigned` | accepted, `Unsigned` | unwrapped, `Verified` | refused |
/// | `UnwrapUnverified` | accepted, `Unsigned` | unwrapped, `Unchecked` | unwrapped, `Unchecked` if the format holds, refused otherwise |
///
/// "Badly signed" is every [`SignatureError`]: a malformed JWS, `alg: none` or another `alg`,
/// a `crit` header, headers that name another action or message type, an unknown key or an
/// invalid signature. A refused message gets [`SignatureError::refusal`] (`SecurityError`).
/// CALLERROR and CALLRESULTERROR are never signed and pass every policy as `Unsigned`.
///
/// ```
/// # #[cfg(feature = "jws-es256")] {
/// use std::sync::Arc;
/// use ocpp_messages::signed::es256::Es256Verifier;
/// use ocpp_messages::signed::SignaturePolicy;
///
/// let trusted = Arc::new(Es256Verifier::new());
/// let strict = SignaturePolicy::RequireSigned(trusted.clone());
/// let migrating = SignaturePolicy::VerifyWhenSigned(trusted);
/// let legacy = SignaturePolicy::UnwrapUnverified; // §7.2's minimum: unwrap, check nothing
/// # let _ = (strict, migrating, legacy);
/// # }
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub enum SignaturePolicy {
    /// Every CALL, SEND and CALLRESULT must be signed with a signature the verifier accepts.
    RequireSigned(Arc<dyn MessageVerifier + Send + Sync>),
    /// Signed messages must verify; unsigned ones are accepted as they are (a hop can remove
    /// a signature undetected: for migrating a fleet, not for proving authorship).
    VerifyWhenSigned(Arc<dyn MessageVerifier + Send + Sync>),
    /// Signed messages are unwrapped after checking their format, without checking the
    /// signature (§7.2 makes checking optional); unsigned ones are accepted.
    UnwrapUnverified,
}

impl fmt::Debug for SignaturePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SignaturePolicy::RequireSigned(_) => "RequireSigned(..)",
            SignaturePolicy::VerifyWhenSigned(_) => "VerifyWhenSigned(..)",
            SignaturePolicy::UnwrapUnverified => "UnwrapUnverified",
        })
    }
}

/// Whether a received message is signed: CALL and SEND by their `-Signed` action, CALLRESULT
/// by its payload's shape (a flattened JWS object).
///
/// ```
/// use ocpp_messages::envelope::parse;
/// use ocpp_messages::signed::is_signed;
/// use ocpp_messages::OcppVersion;
///
/// assert!(is_signed(&parse(br#"[2,"1","Heartbeat-Signed",{}]"#, OcppVersion::V2_1)?));
/// assert!(!is_signed(&parse(br#"[2,"1","Heartbeat",{}]"#, OcppVersion::V2_1)?));
/// # Ok::<(), ocpp_messages::envelope::ParseError>(())
/// ```
#[must_use]
pub fn is_signed(message: &RpcMessage<'_>) -> bool {
    match message {
        RpcMessage::Call(call) | RpcMessage::Send(call) => unsigned_action(&call.action).is_some(),
        RpcMessage::CallResult(result) => format::looks_signed(&result.payload),
        RpcMessage::CallError(_) | RpcMessage::CallResultError(_) => false,
    }
}

impl SignaturePolicy {
    /// Checks `message` against the policy and returns the normal message it encapsulates.
    /// `call_action` is the action of the CALL a CALLRESULT answers (needed to check a signed
    /// CALLRESULT's `OCPPAction`; ignored for other messages).
    ///
    /// ```
    /// use ocpp_messages::envelope::parse;
    /// use ocpp_messages::signed::{SignaturePolicy, SignatureStatus};
    /// use ocpp_messages::OcppVersion;
    ///
    /// let plain = parse(br#"[3,"1",{"status":"Accepted"}]"#, OcppVersion::V2_1)?;
    /// let opened = SignaturePolicy::UnwrapUnverified.open(&plain, Some("Reset"))?;
    /// assert_eq!(opened.message, plain);
    /// assert_eq!(opened.signature, SignatureStatus::Unsigned);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`SignatureError`]: the message is refused; answer with [`SignatureError::refusal`].
    pub fn open<'a>(
        &self,
        message: &RpcMessage<'a>,
        call_action: Option<&str>,
    ) -> Result<Opened<'a>, SignatureError> {
        let message_type = message.message_type();
        let (action, signed_payload) = match message {
            RpcMessage::Call(call) | RpcMessage::Send(call) => {
                match unsigned_action(&call.action) {
                    Some(original) => (original, &*call.payload),
                    None => return self.unsigned(message),
                }
            }
            RpcMessage::CallResult(result) if format::looks_signed(&result.payload) => (
                call_action.ok_or(SignatureError::CallActionNeeded)?,
                &*result.payload,
            ),
            RpcMessage::CallResult(_) => return self.unsigned(message),
            RpcMessage::CallError(_) | RpcMessage::CallResultError(_) => {
                return Ok(Opened {
                    message: message.clone(),
                    signature: SignatureStatus::Unsigned,
                })
            }
        };
        let decoded = format::decode(signed_payload, message_type, action)?;
        let info = SignatureInfo {
            algorithm: decoded.algorithm,
            thumbprint: decoded.thumbprint.clone(),
        };
        let signature = match self {
            SignaturePolicy::RequireSigned(verifier)
            | SignaturePolicy::VerifyWhenSigned(verifier) => {
                decoded.verify(&**verifier)?;
                SignatureStatus::Verified(info)
            }
            SignaturePolicy::UnwrapUnverified => SignatureStatus::Unchecked(info),
        };
        let id = message.id().clone().into_owned();
        let payload = Cow::Owned(decoded.payload);
        let message = match message {
            RpcMessage::Call(_) => RpcMessage::Call(Call {
                id,
                action: Cow::Owned(String::from(action)),
                payload,
            }),
            RpcMessage::Send(_) => RpcMessage::Send(Call {
                id,
                action: Cow::Owned(String::from(action)),
                payload,
            }),
            _ => RpcMessage::CallResult(CallResult { id, payload }),
        };
        Ok(Opened { message, signature })
    }

    fn unsigned<'a>(&self, message: &RpcMessage<'a>) -> Result<Opened<'a>, SignatureError> {
        match self {
            SignaturePolicy::RequireSigned(_) => Err(SignatureError::Unsigned),
            _ => Ok(Opened {
                message: message.clone(),
                signature: SignatureStatus::Unsigned,
            }),
        }
    }
}

/// The signed equivalent of `message` (§7.1): same type and id, action `<Action>-Signed`,
/// payload the flattened JWS of the original payload. A CALLRESULT keeps its shape and needs
/// `call_action`, the action of the CALL it answers; a CALLERROR or CALLRESULTERROR is not
/// signed.
///
/// ```
/// use ocpp_messages::envelope::{parse, RpcMessage};
/// use ocpp_messages::signed::{sign, JwsAlgorithm, MessageSigner, SignerError};
/// use ocpp_messages::OcppVersion;
///
/// struct Fixed; // a stand-in for a real key
/// impl MessageSigner for Fixed {
///     fn algorithm(&self) -> JwsAlgorithm { JwsAlgorithm::Es256 }
///     fn certificate_thumbprint(&self) -> Option<&str> { None }
///     fn sign(&self, _: &[u8]) -> Result<Vec<u8>, SignerError> { Ok(vec![0; 64]) }
/// }
///
/// let answer = parse(br#"[3,"9",{"status":"Accepted"}]"#, OcppVersion::V2_1)?;
/// let signed = sign(&answer, Some("Reset"), &Fixed)?;
/// let RpcMessage::CallResult(result) = &signed else { unreachable!() };
/// assert!(result.payload.get().starts_with(r#"{"protected":"eyJhbGciOiJFUzI1NiIsIk9DUFBBY3Rpb24iOiJSZXNldCIs"#));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`SignError`]: not a signable message, a CALLRESULT without `call_action`, an action that
/// is already signed, or the signer failed.
pub fn sign(
    message: &RpcMessage<'_>,
    call_action: Option<&str>,
    signer: &dyn MessageSigner,
) -> Result<RpcMessage<'static>, SignError> {
    let message_type = message.message_type();
    match message {
        RpcMessage::Call(call) | RpcMessage::Send(call) => {
            if unsigned_action(&call.action).is_some() {
                return Err(SignError::AlreadySigned);
            }
            let signed = Call {
                id: call.id.clone().into_owned(),
                action: Cow::Owned(signed_action(&call.action)),
                payload: Cow::Owned(format::encode(
                    message_type,
                    &call.action,
                    call.payload.get(),
                    signer,
                )?),
            };
            Ok(if message_type == MessageTypeId::Send {
                RpcMessage::Send(signed)
            } else {
                RpcMessage::Call(signed)
            })
        }
        RpcMessage::CallResult(result) => {
            let action = call_action.ok_or(SignError::CallActionNeeded)?;
            Ok(RpcMessage::CallResult(CallResult {
                id: result.id.clone().into_owned(),
                payload: Cow::Owned(format::encode(
                    message_type,
                    action,
                    result.payload.get(),
                    signer,
                )?),
            }))
        }
        RpcMessage::CallError(_) | RpcMessage::CallResultError(_) => {
            Err(SignError::NotSignable(message_type))
        }
    }
}
