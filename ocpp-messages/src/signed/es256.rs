//! A software ES256 signer and verifier (feature `jws-es256`), on RustCrypto's `p256` (ECDSA on
//! P-256 with SHA-256, deterministic nonces per RFC 6979) and `sha2` (the `x5t#S256`).
//!
//! For a key in memory. A key in a secure element implements [`MessageSigner`] itself.
//!
//! ```
//! use ocpp_messages::signed::es256::{certificate_thumbprint, Es256Signer, Es256Verifier};
//! use ocpp_messages::signed::{JwsAlgorithm, MessageSigner, MessageVerifier};
//!
//! let certificate = b"<the DER encoding of the station's certificate>";
//! let signer = Es256Signer::from_secret_scalar(&[1; 32])?.with_certificate(certificate);
//! assert_eq!(signer.certificate_thumbprint(), Some(certificate_thumbprint(certificate).as_str()));
//!
//! let verifier = Es256Verifier::new()
//!     .with_key(Some(&certificate_thumbprint(certificate)), signer.verifying_key());
//! let signature = signer.sign(b"header.payload")?;
//! let thumbprint = signer.certificate_thumbprint();
//! assert!(verifier.verify(JwsAlgorithm::Es256, thumbprint, b"header.payload", &signature).is_ok());
//! assert!(verifier.verify(JwsAlgorithm::Es256, thumbprint, b"header.payloaD", &signature).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use alloc::string::String;
use alloc::vec::Vec;

use p256::ecdsa::signature::{Signer as _, Verifier as _};
use p256::ecdsa::{Signature, SigningKey, VerifyingKey};
use sha2::{Digest as _, Sha256};

use super::format::b64;
use super::{JwsAlgorithm, MessageSigner, MessageVerifier, SignerError, VerifyError};

pub use p256::ecdsa::{SigningKey as P256SigningKey, VerifyingKey as P256VerifyingKey};

/// The `x5t#S256` of a certificate: base64url (no padding) of the SHA-256 hash of its DER
/// encoding (RFC 7515 §4.1.8, OCPP Part 4 §7.4).
///
/// ```
/// // SHA-256 of the empty string, base64url.
/// assert_eq!(
///     ocpp_messages::signed::es256::certificate_thumbprint(b""),
///     "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"
/// );
/// ```
#[must_use]
pub fn certificate_thumbprint(certificate_der: &[u8]) -> String {
    b64(&Sha256::digest(certificate_der))
}

/// An ES256 key in memory.
#[derive(Clone)]
pub struct Es256Signer {
    key: SigningKey,
    thumbprint: Option<String>,
}

impl core::fmt::Debug for Es256Signer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // Never the key.
        f.debug_struct("Es256Signer")
            .field("thumbprint", &self.thumbprint)
            .finish_non_exhaustive()
    }
}

/// The secret scalar is not a valid P-256 private key (zero, or not below the group order).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a valid P-256 private key")]
pub struct InvalidKey;

impl Es256Signer {
    /// A signer for `key`, writing no `x5t#S256` until [`Es256Signer::with_certificate`].
    ///
    /// ```
    /// use ocpp_messages::signed::es256::{Es256Signer, P256SigningKey};
    /// let key = P256SigningKey::from_slice(&[3; 32]).unwrap();
    /// let signer = Es256Signer::new(key);
    /// # let _ = signer;
    /// ```
    #[must_use]
    pub fn new(key: SigningKey) -> Es256Signer {
        Es256Signer {
            key,
            thumbprint: None,
        }
    }

    /// A signer for the big-endian secret scalar `secret` (32 bytes).
    ///
    /// ```
    /// use ocpp_messages::signed::es256::Es256Signer;
    /// assert!(Es256Signer::from_secret_scalar(&[0; 32]).is_err());
    /// assert!(Es256Signer::from_secret_scalar(&[9; 32]).is_ok());
    /// ```
    ///
    /// # Errors
    /// [`InvalidKey`] when `secret` is not a valid P-256 scalar.
    pub fn from_secret_scalar(secret: &[u8; 32]) -> Result<Es256Signer, InvalidKey> {
        SigningKey::from_slice(secret)
            .map(Es256Signer::new)
            .map_err(|_| InvalidKey)
    }

    /// Names the signing certificate (its DER encoding) in `x5t#S256`.
    ///
    /// ```
    /// use ocpp_messages::signed::{es256::Es256Signer, MessageSigner};
    /// let signer = Es256Signer::from_secret_scalar(&[9; 32])?.with_certificate(b"");
    /// assert_eq!(signer.certificate_thumbprint(), Some("47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"));
    /// # Ok::<(), ocpp_messages::signed::es256::InvalidKey>(())
    /// ```
    #[must_use]
    pub fn with_certificate(mut self, certificate_der: &[u8]) -> Es256Signer {
        self.thumbprint = Some(certificate_thumbprint(certificate_der));
        self
    }

    /// The public key, for the verifiers.
    ///
    /// ```
    /// use ocpp_messages::signed::es256::Es256Signer;
    /// let key = Es256Signer::from_secret_scalar(&[9; 32])?.verifying_key();
    /// assert_eq!(key.to_encoded_point(false).as_bytes().len(), 65);
    /// # Ok::<(), ocpp_messages::signed::es256::InvalidKey>(())
    /// ```
    #[must_use]
    pub fn verifying_key(&self) -> VerifyingKey {
        *self.key.verifying_key()
    }
}

impl MessageSigner for Es256Signer {
    fn algorithm(&self) -> JwsAlgorithm {
        JwsAlgorithm::Es256
    }

    fn certificate_thumbprint(&self) -> Option<&str> {
        self.thumbprint.as_deref()
    }

    fn sign(&self, signing_input: &[u8]) -> Result<Vec<u8>, SignerError> {
        let signature: Signature = self.key.sign(signing_input);
        Ok(signature.to_bytes().to_vec())
    }
}

/// Trusted ES256 public keys, each under the `x5t#S256` of its certificate (or under `None`
/// for messages that name no certificate). A signature is checked only against the key its
/// header names: an unknown thumbprint is [`VerifyError::UnknownKey`], never "try them all".
#[derive(Debug, Clone, Default)]
pub struct Es256Verifier {
    keys: Vec<(Option<String>, VerifyingKey)>,
}

impl Es256Verifier {
    /// No trusted key yet.
    ///
    /// ```
    /// let verifier = ocpp_messages::signed::es256::Es256Verifier::new();
    /// # let _ = verifier;
    /// ```
    #[must_use]
    pub fn new() -> Es256Verifier {
        Es256Verifier::default()
    }

    /// Trusts `key` for messages whose `x5t#S256` is `thumbprint` (`None`: messages without
    /// one). A later key for the same thumbprint replaces the earlier.
    ///
    /// ```
    /// use ocpp_messages::signed::es256::{Es256Signer, Es256Verifier};
    /// let key = Es256Signer::from_secret_scalar(&[9; 32])?.verifying_key();
    /// let verifier = Es256Verifier::new().with_key(Some("47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"), key);
    /// # let _ = verifier;
    /// # Ok::<(), ocpp_messages::signed::es256::InvalidKey>(())
    /// ```
    #[must_use]
    pub fn with_key(mut self, thumbprint: Option<&str>, key: VerifyingKey) -> Es256Verifier {
        self.keys.retain(|(t, _)| t.as_deref() != thumbprint);
        self.keys.push((thumbprint.map(String::from), key));
        self
    }

    /// Trusts the key given as a SEC1 point (`04 || X || Y`, or compressed).
    ///
    /// ```
    /// use ocpp_messages::signed::es256::{Es256Signer, Es256Verifier};
    /// let point = Es256Signer::from_secret_scalar(&[9; 32])?.verifying_key().to_encoded_point(false);
    /// assert!(Es256Verifier::new().with_sec1_key(None, point.as_bytes()).is_ok());
    /// assert!(Es256Verifier::new().with_sec1_key(None, b"junk").is_err());
    /// # Ok::<(), ocpp_messages::signed::es256::InvalidKey>(())
    /// ```
    ///
    /// # Errors
    /// [`InvalidKey`] when the bytes are not a point on P-256.
    pub fn with_sec1_key(
        self,
        thumbprint: Option<&str>,
        point: &[u8],
    ) -> Result<Es256Verifier, InvalidKey> {
        let key = VerifyingKey::from_sec1_bytes(point).map_err(|_| InvalidKey)?;
        Ok(self.with_key(thumbprint, key))
    }
}

impl MessageVerifier for Es256Verifier {
    fn verify(
        &self,
        algorithm: JwsAlgorithm,
        thumbprint: Option<&str>,
        signing_input: &[u8],
        signature: &[u8],
    ) -> Result<(), VerifyError> {
        let key = self
            .keys
            .iter()
            .find(|(t, _)| t.as_deref() == thumbprint)
            .map(|(_, k)| k)
            .ok_or(VerifyError::UnknownKey)?;
        if algorithm != JwsAlgorithm::Es256 {
            return Err(VerifyError::AlgorithmNotAccepted(algorithm));
        }
        // JWS ES256 is R || S, exactly 64 bytes (RFC 7518 §3.4), never DER.
        if signature.len() != 64 {
            return Err(VerifyError::InvalidSignature);
        }
        let signature =
            Signature::from_slice(signature).map_err(|_| VerifyError::InvalidSignature)?;
        key.verify(signing_input, &signature)
            .map_err(|_| VerifyError::InvalidSignature)
    }
}
