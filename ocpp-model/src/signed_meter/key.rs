//! The meter's public key in its every shape, the ECDSA checks on P-256 and P-384, and the hex and
//! Base64 the texts come in.

use base64::Engine as _;

use super::{Curve, SignedMeterError};

fn key_error(problem: &str) -> SignedMeterError {
    SignedMeterError::PublicKey {
        problem: problem.to_owned(),
    }
}

pub(super) fn verify_p256(
    point: &[u8],
    digest: &[u8],
    signature: &[u8],
) -> Result<(), SignedMeterError> {
    use p256::ecdsa::signature::hazmat::PrehashVerifier;
    let key = p256::ecdsa::VerifyingKey::from_sec1_bytes(point)
        .map_err(|_| key_error("not a point on secp256r1"))?;
    let rs = signature_scalars(signature, 32)?;
    let signature =
        p256::ecdsa::Signature::from_slice(&rs).map_err(|_| SignedMeterError::InvalidSignature)?;
    key.verify_prehash(digest, &signature)
        .map_err(|_| SignedMeterError::InvalidSignature)
}

pub(super) fn verify_p384(
    point: &[u8],
    digest: &[u8],
    signature: &[u8],
) -> Result<(), SignedMeterError> {
    use p384::ecdsa::signature::hazmat::PrehashVerifier;
    let key = p384::ecdsa::VerifyingKey::from_sec1_bytes(point)
        .map_err(|_| key_error("not a point on secp384r1"))?;
    let rs = signature_scalars(signature, 48)?;
    let signature =
        p384::ecdsa::Signature::from_slice(&rs).map_err(|_| SignedMeterError::InvalidSignature)?;
    key.verify_prehash(digest, &signature)
        .map_err(|_| SignedMeterError::InvalidSignature)
}

/// `r‖s`, each `size` bytes, from a DER `ECDSA-Sig-Value` (leniently: an integer with a
/// superfluous leading zero or without the zero that would make it positive is read as the
/// unsigned number it means) or from raw `r‖s`.
fn signature_scalars(bytes: &[u8], size: usize) -> Result<Vec<u8>, SignedMeterError> {
    let problem = |problem: &str| SignedMeterError::SignatureEncoding {
        problem: problem.to_owned(),
    };
    if let Some(rs) = der_signature(bytes, size) {
        return Ok(rs);
    }
    if bytes.len() == 2 * size {
        return Ok(bytes.to_vec());
    }
    Err(problem(&format!(
        "neither a DER ECDSA signature nor {} bytes of r and s ({} bytes)",
        2 * size,
        bytes.len()
    )))
}

fn der_signature(bytes: &[u8], size: usize) -> Option<Vec<u8>> {
    let (tag, body, rest) = der_tlv(bytes)?;
    if tag != 0x30 || !rest.is_empty() {
        return None;
    }
    let mut rs = Vec::with_capacity(2 * size);
    let mut body = body;
    for _ in 0..2 {
        let (tag, integer, rest) = der_tlv(body)?;
        if tag != 0x02 {
            return None;
        }
        let start = integer
            .iter()
            .position(|&b| b != 0)
            .unwrap_or(integer.len());
        let magnitude = &integer[start..];
        if magnitude.len() > size {
            return None;
        }
        rs.extend(std::iter::repeat_n(0, size - magnitude.len()));
        rs.extend_from_slice(magnitude);
        body = rest;
    }
    body.is_empty().then_some(rs)
}

/// One DER tag-length-value: (tag, value, the bytes after it).
fn der_tlv(bytes: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = bytes.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (length, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 2 || rest.len() < count {
            return None;
        }
        let (digits, rest) = rest.split_at(count);
        let length = digits
            .iter()
            .fold(0usize, |acc, &d| (acc << 8) | usize::from(d));
        (length, rest)
    };
    if rest.len() < length {
        return None;
    }
    let (value, rest) = rest.split_at(length);
    Some((tag, value, rest))
}

/// A meter's public key: a SEC1 point, and its curve when the key names one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MeterPublicKey {
    /// The curve named by the key (a DER `SubjectPublicKeyInfo` names it; a bare point does
    /// not, and is then taken to be on the record's curve).
    pub curve: Option<Curve>,
    /// The point, SEC1-encoded (`04‖X‖Y`, or compressed `02|03‖X`).
    pub point: Vec<u8>,
}

impl MeterPublicKey {
    /// Reads a public key from text in any of the shapes it arrives in: hex or Base64 of a
    /// DER `SubjectPublicKeyInfo`, of a SEC1 point, or of bare `X‖Y`; Base64 of that hex
    /// (the OCA note's example); and `base64("oca:<base16|base64>:<content>:<key>")` (the OCA
    /// note, §3.2.2, where spaces and a `0x` in a base16 key are ignored).
    ///
    /// ```
    /// use ocpp_model::signed_meter::{Curve, MeterPublicKey};
    /// let key = MeterPublicKey::parse(concat!(
    ///     "3059301306072A8648CE3D020106082A8648CE3D030107034200043AEEB45C392357820A58FDFB",
    ///     "0857BD77ADA31585C61C430531DFA53B440AFBFDD95AC887C658EA55260F808F55CA948DF235C2",
    ///     "108A0D6DC7D4AB1A5E1A7955BE",
    /// )).unwrap();
    /// assert_eq!(key.curve, Some(Curve::Secp256r1));
    /// assert_eq!(key.point.len(), 65);
    /// ```
    pub fn parse(text: &str) -> Result<MeterPublicKey, SignedMeterError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(SignedMeterError::MissingPublicKey);
        }
        let bytes = if let Some(bytes) = decode_hex(text) {
            bytes
        } else if let Some(bytes) = decode_base64(text) {
            match core::str::from_utf8(&bytes) {
                Ok(inner) if inner.starts_with("oca:") => return Self::parse_oca(inner),
                Ok(inner) => decode_hex(inner.trim()).unwrap_or(bytes),
                Err(_) => bytes,
            }
        } else {
            return Err(key_error("neither hex nor Base64"));
        };
        Self::from_bytes(&bytes)
    }

    /// `oca:<encoding>:<content-type>:<printed key>`.
    fn parse_oca(text: &str) -> Result<MeterPublicKey, SignedMeterError> {
        let mut parts = text.splitn(4, ':');
        let (_, encoding, _content, key) = (parts.next(), parts.next(), parts.next(), parts.next());
        let key = key.ok_or_else(|| key_error("an \"oca:\" key without its four parts"))?;
        let bytes = match encoding {
            Some("base16") => {
                let key = key.trim();
                let key = key
                    .strip_prefix("0x")
                    .or_else(|| key.strip_prefix("0X"))
                    .unwrap_or(key);
                let digits: String = key.chars().filter(char::is_ascii_hexdigit).collect();
                decode_hex(&digits)
            }
            Some("base64") => decode_base64(key.trim()),
            _ => return Err(key_error("an \"oca:\" key in an unknown encoding")),
        }
        .ok_or_else(|| key_error("an \"oca:\" key that does not decode"))?;
        Self::from_bytes(&bytes)
    }

    /// Reads a key from its bytes: DER `SubjectPublicKeyInfo`, a SEC1 point or bare `X‖Y`.
    pub fn from_bytes(bytes: &[u8]) -> Result<MeterPublicKey, SignedMeterError> {
        match bytes.first() {
            Some(0x30) => spki(bytes),
            Some(0x04) if matches!(bytes.len(), 49 | 65 | 97) => Ok(MeterPublicKey {
                curve: None,
                point: bytes.to_vec(),
            }),
            Some(0x02 | 0x03) if matches!(bytes.len(), 25 | 33 | 49) => Ok(MeterPublicKey {
                curve: None,
                point: bytes.to_vec(),
            }),
            _ if matches!(bytes.len(), 48 | 64 | 96) => {
                let mut point = Vec::with_capacity(bytes.len() + 1);
                point.push(0x04);
                point.extend_from_slice(bytes);
                Ok(MeterPublicKey { curve: None, point })
            }
            _ => Err(key_error(&format!(
                "{} bytes are neither a DER SubjectPublicKeyInfo nor an elliptic-curve point",
                bytes.len()
            ))),
        }
    }
}

/// `SubjectPublicKeyInfo { AlgorithmIdentifier { id-ecPublicKey, namedCurve }, BIT STRING }`.
fn spki(bytes: &[u8]) -> Result<MeterPublicKey, SignedMeterError> {
    const EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
    let not_spki = || key_error("not a DER SubjectPublicKeyInfo of an elliptic-curve key");
    let (tag, info, rest) = der_tlv(bytes).ok_or_else(not_spki)?;
    if tag != 0x30 || !rest.is_empty() {
        return Err(not_spki());
    }
    let (tag, algorithm, rest) = der_tlv(info).ok_or_else(not_spki)?;
    if tag != 0x30 {
        return Err(not_spki());
    }
    let (tag, bits, rest) = der_tlv(rest).ok_or_else(not_spki)?;
    if tag != 0x03 || !rest.is_empty() {
        return Err(not_spki());
    }
    let (tag, oid, rest) = der_tlv(algorithm).ok_or_else(not_spki)?;
    if tag != 0x06 || oid != EC_PUBLIC_KEY {
        return Err(not_spki());
    }
    let (tag, curve, _) = der_tlv(rest).ok_or_else(not_spki)?;
    if tag != 0x06 {
        return Err(key_error("an elliptic-curve key without a named curve"));
    }
    let curve = match curve {
        [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07] => Curve::Secp256r1,
        [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x01] => Curve::Secp192r1,
        [0x2b, 0x81, 0x04, 0x00, 0x22] => Curve::Secp384r1,
        [0x2b, 0x81, 0x04, 0x00, 0x0a] => Curve::Secp256k1,
        [0x2b, 0x81, 0x04, 0x00, 0x1f] => Curve::Secp192k1,
        [0x2b, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01, 0x07] => Curve::Brainpool256r1,
        [0x2b, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01, 0x0b] => Curve::Brainpool384r1,
        _ => return Err(key_error("a key on a curve OCMF does not name")),
    };
    match bits.split_first() {
        Some((0, point)) if !point.is_empty() => Ok(MeterPublicKey {
            curve: Some(curve),
            point: point.to_vec(),
        }),
        _ => Err(not_spki()),
    }
}

/// The bytes of an even number of hex digits (either case), or `None`.
pub(super) fn decode_hex(text: &str) -> Option<Vec<u8>> {
    let digits = text.as_bytes();
    if digits.is_empty() || digits.len() % 2 != 0 {
        return None;
    }
    let nibble = |d: u8| char::from(d).to_digit(16);
    digits
        .chunks_exact(2)
        .map(|pair| Some((nibble(pair[0])? * 16 + nibble(pair[1])?) as u8))
        .collect()
}

/// The bytes of standard Base64 (padded or not), or `None`.
pub(super) fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    engine.decode(text).ok().filter(|bytes| !bytes.is_empty())
}
