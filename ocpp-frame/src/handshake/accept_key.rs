//! `Sec-WebSocket-Key` and `Sec-WebSocket-Accept` (RFC 6455 §4.1, §4.2.2, §11.3.1, §11.3.3).

use base64::Engine as _;
use core::fmt;

/// The GUID appended to the key before hashing (RFC 6455 §1.3, §4.2.2 step 5.4).
pub const WEBSOCKET_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// The client's handshake nonce: 16 bytes, sent base64-encoded (RFC 6455 §4.1 item 7).
///
/// The crate has no randomness: a client supplies the 16 bytes (RFC 6455 asks for them to be
/// randomly selected per connection), a server gets them from the request.
///
/// ```
/// use ocpp_frame::handshake::SecWebSocketKey;
///
/// let key = SecWebSocketKey::parse(b"dGhlIHNhbXBsZSBub25jZQ==").unwrap();
/// assert_eq!(key.as_bytes(), b"the sample nonce");
/// assert_eq!(key.to_string(), "dGhlIHNhbXBsZSBub25jZQ==");
/// assert_eq!(key.accept().as_str(), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SecWebSocketKey([u8; 16]);

impl SecWebSocketKey {
    /// Length of the key's base64 text.
    pub const ENCODED_LEN: usize = 24;

    /// A key from its 16 raw bytes.
    pub const fn from_bytes(bytes: [u8; 16]) -> Self {
        SecWebSocketKey(bytes)
    }

    /// Parses a header value (surrounding whitespace allowed): it must be the canonical, padded
    /// base64 (RFC 4648 §4) of exactly 16 bytes (RFC 6455 §4.2.1 item 5), so 15 or 17 bytes,
    /// missing padding or non-zero trailing bits give `None`.
    pub fn parse(value: &[u8]) -> Option<Self> {
        let text = crate::handshake::headers::trim_ows(value);
        if text.len() != Self::ENCODED_LEN {
            return None;
        }
        let mut decoded = [0u8; 18];
        match base64::engine::general_purpose::STANDARD.decode_slice(text, &mut decoded) {
            Ok(16) => {
                let mut key = [0u8; 16];
                key.copy_from_slice(decoded.get(..16)?);
                Some(SecWebSocketKey(key))
            }
            _ => None,
        }
    }

    /// The 16 raw bytes.
    pub const fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// The base64 text sent in the header.
    pub fn encode(&self) -> [u8; Self::ENCODED_LEN] {
        encode_fixed(&self.0)
    }

    /// The `Sec-WebSocket-Accept` value a server answers this key with (RFC 6455 §4.2.2).
    pub fn accept(&self) -> SecWebSocketAccept {
        SecWebSocketAccept::derive(&self.encode())
    }
}

impl fmt::Display for SecWebSocketKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.encode();
        f.write_str(core::str::from_utf8(&text).unwrap_or(""))
    }
}

impl fmt::Debug for SecWebSocketKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecWebSocketKey({self})")
    }
}

/// The server's proof that it read the handshake: `base64(SHA-1(key text + GUID))`
/// (RFC 6455 §4.2.2 step 5.4, checked by the client in §4.1 item 4 of the response checks).
///
/// ```
/// use ocpp_frame::handshake::SecWebSocketAccept;
///
/// let accept = SecWebSocketAccept::derive(b"dGhlIHNhbXBsZSBub25jZQ==");
/// assert_eq!(accept.as_str(), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SecWebSocketAccept([u8; 28]);

impl SecWebSocketAccept {
    /// Length of the accept value's base64 text.
    pub const ENCODED_LEN: usize = 28;

    /// Computes the accept value from the key *as sent* (its base64 text, whitespace trimmed).
    pub fn derive(key_text: &[u8]) -> Self {
        let mut sha1 = sha1_smol::Sha1::new();
        sha1.update(crate::handshake::headers::trim_ows(key_text));
        sha1.update(WEBSOCKET_GUID.as_bytes());
        SecWebSocketAccept(encode_fixed(&sha1.digest().bytes()))
    }

    /// The base64 text.
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(&self.0).unwrap_or("")
    }

    /// The base64 text as bytes, as it appears in the header.
    pub const fn as_bytes(&self) -> &[u8; Self::ENCODED_LEN] {
        &self.0
    }
}

impl fmt::Display for SecWebSocketAccept {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for SecWebSocketAccept {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecWebSocketAccept({})", self.as_str())
    }
}

/// Padded base64 of `input` into an array sized for it (callers pick `N = 4 * ceil(len / 3)`).
fn encode_fixed<const N: usize>(input: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    // Cannot fail: N is the exact encoded length for every caller.
    let _ = base64::engine::general_purpose::STANDARD.encode_slice(input, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc6455_sample() {
        let key = SecWebSocketKey::parse(b" dGhlIHNhbXBsZSBub25jZQ==\t").unwrap();
        assert_eq!(key.accept().as_str(), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        assert_eq!(&key.encode(), b"dGhlIHNhbXBsZSBub25jZQ==");
    }

    #[test]
    fn rejects_wrong_lengths_and_non_canonical() {
        // 15 bytes, 17 bytes, unpadded, bad trailing bits, not base64.
        for bad in [
            &b"MTIzNDU2Nzg5MDEyMzQ1"[..],
            b"MTIzNDU2Nzg5MDEyMzQ1Njc=",
            b"dGhlIHNhbXBsZSBub25jZQ",
            b"dGhlIHNhbXBsZSBub25jZR==",
            b"dGhlIHNhbXBsZSBub25jZ!==",
        ] {
            assert_eq!(SecWebSocketKey::parse(bad), None, "{bad:?}");
        }
    }
}
