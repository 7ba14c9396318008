//! Basic credentials: decoded, or each problem reported distinctly.

use super::*;

#[test]
fn basic_credentials_are_decoded_or_reported_distinctly() {
    let engine = base64::engine::general_purpose::STANDARD;
    let binary: &'static str = format!(
        "Basic {}",
        engine.encode(b"CP\xff01:\x00\x01\xfekey:with:colons")
    )
    .leak();
    let request = parse(&request_with(&[("Authorization", binary)])).unwrap();
    let credentials = request.basic_credentials().unwrap().unwrap();
    assert_eq!(credentials.user_bytes(), b"CP\xff01");
    assert_eq!(credentials.user(), None, "not UTF-8");
    assert_eq!(credentials.password(), b"\x00\x01\xfekey:with:colons");
    assert!(!format!("{credentials:?}").contains("key:with"));

    // Unpadded token, lower-case scheme.
    let request = parse(&request_with(&[(
        "Authorization",
        "basic Q1AwMDE6c2VjcmV0MQ",
    )]))
    .unwrap();
    assert_eq!(
        request.basic_credentials().unwrap().unwrap().password(),
        b"secret1"
    );

    // Another scheme is the application's business.
    let request = parse(&request_with(&[("Authorization", "Bearer abc.def")])).unwrap();
    assert_eq!(request.basic_credentials(), Ok(None));
    assert_eq!(
        request.header("authorization"),
        Some(&b"Bearer abc.def"[..])
    );

    for (value, expected) in [
        ("Basic", BasicAuthError::MissingCredentials),
        ("Basic ***", BasicAuthError::InvalidBase64),
        ("Basic Q1AwMDE=", BasicAuthError::MissingColon),
    ] {
        let request = parse(&request_with(&[("Authorization", value)])).unwrap();
        assert_eq!(request.basic_credentials(), Err(expected), "{value}");
    }
    let request = parse(&request_with(&[
        ("Authorization", "Basic Q1AwMDE6c2VjcmV0"),
        ("Authorization", "Basic Q1AwMDE6c2VjcmV0"),
    ]))
    .unwrap();
    assert_eq!(request.basic_credentials(), Err(BasicAuthError::Repeated));
}
