//! Known-answer vectors: the RFC 6455 accept key, SHA-1 and Base64.

use super::*;

#[test]
fn rfc6455_section_1_3_accept_key() {
    assert_eq!(SecWebSocketAccept::derive(KEY.as_bytes()).as_str(), ACCEPT);
    let key = SecWebSocketKey::parse(KEY.as_bytes()).unwrap();
    assert_eq!(key.as_bytes(), b"the sample nonce");
    assert_eq!(key.accept().as_str(), ACCEPT);
    assert_eq!(key.to_string(), KEY);
}

#[test]
fn sha1_known_answers() {
    let hex = |data: &[u8]| sha1_smol::Sha1::from(data).digest().to_string();
    assert_eq!(hex(b"abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
    assert_eq!(hex(b""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    assert_eq!(
        hex(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
        "84983e441c3bd26ebaae4aa1f95129e5e54670f1"
    );
}

#[test]
fn base64_rfc4648_section_10_vectors() {
    let engine = base64::engine::general_purpose::STANDARD;
    for (plain, encoded) in [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ] {
        assert_eq!(engine.encode(plain), encoded);
        assert_eq!(engine.decode(encoded).unwrap(), plain.as_bytes());
    }
}
