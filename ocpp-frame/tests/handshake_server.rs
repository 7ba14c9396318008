//! Behaviour of the server side of the opening handshake (RFC 6455 §4.2) through the public API.

use std::io::{self, Cursor, Read, Write};

use base64::Engine as _;
use ocpp_frame::handshake::{
    reason_phrase, Accept, BasicAuthError, BuildError, HandshakeConfig, HandshakeError, Progress,
    Rejection, SecWebSocketAccept, SecWebSocketKey, ServerHandshake, UpgradeRequest,
};
use proptest::prelude::*;

/// Extra headers as `Accept` and `Rejection` take them.
type Headers<'a> = &'a [(&'a str, &'a [u8])];

const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";
const ACCEPT: &str = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

/// The headers of a valid request, in order.
fn valid_headers() -> Vec<(&'static str, &'static str)> {
    vec![
        ("Host", "csms.example:9000"),
        ("Upgrade", "websocket"),
        ("Connection", "Upgrade"),
        ("Sec-WebSocket-Key", KEY),
        ("Sec-WebSocket-Version", "13"),
    ]
}

fn build(start_line: &str, headers: &[(&str, &str)]) -> Vec<u8> {
    let mut out = format!("{start_line}\r\n");
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    out.into_bytes()
}

/// A valid request to `/ocpp/CP001` with `extra` headers appended.
fn request_with(extra: &[(&str, &str)]) -> Vec<u8> {
    let mut headers = valid_headers();
    headers.extend_from_slice(extra);
    build("GET /ocpp/CP001 HTTP/1.1", &headers)
}

/// The valid request with header `name` replaced by `value` (or removed when `None`).
fn request_replacing(name: &str, value: Option<&'static str>) -> Vec<u8> {
    let headers: Vec<_> = valid_headers()
        .into_iter()
        .filter_map(|(n, v)| match (n == name, value) {
            (false, _) => Some((n, v)),
            (true, Some(new)) => Some((n, new)),
            (true, None) => None,
        })
        .collect();
    build("GET /ocpp/CP001 HTTP/1.1", &headers)
}

/// Feeds `bytes` in one piece; the outcome and the bytes that followed the head.
fn parse_with(
    config: HandshakeConfig,
    bytes: &[u8],
) -> Result<(UpgradeRequest, Vec<u8>), HandshakeError> {
    let mut handshake = ServerHandshake::with_config(config);
    match handshake.handle_data(bytes)? {
        Progress::Complete { value, consumed } => Ok((value, bytes[consumed..].to_vec())),
        Progress::NeedMore => panic!("incomplete: {:?}", String::from_utf8_lossy(bytes)),
    }
}

fn parse(bytes: &[u8]) -> Result<UpgradeRequest, HandshakeError> {
    parse_with(HandshakeConfig::default(), bytes).map(|(request, _)| request)
}

fn refusal(bytes: &[u8]) -> HandshakeError {
    parse(bytes).expect_err("request should be refused")
}

fn response_of(error: &HandshakeError) -> String {
    let mut out = Vec::new();
    error.write_response(&mut out);
    String::from_utf8(out).unwrap()
}

// ---------------------------------------------------------------------------------------------
// Known-answer vectors

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

// ---------------------------------------------------------------------------------------------
// A valid request

#[test]
fn valid_request_exposes_everything_the_application_needs() {
    let bytes = build(
        "GET /ocpp/CP%2F001?token=abc&v=2 HTTP/1.1",
        &[
            ("Host", "csms.example:9000"),
            ("Upgrade", "websocket"),
            ("Connection", "Upgrade"),
            ("Sec-WebSocket-Key", KEY),
            ("Sec-WebSocket-Version", "13"),
            ("Sec-WebSocket-Protocol", "ocpp2.0.1 ,ocpp1.6"),
            ("Sec-WebSocket-Protocol", "ocpp2.1"),
            (
                "Sec-WebSocket-Extensions",
                "permessage-deflate; client_max_window_bits",
            ),
            ("Sec-WebSocket-Extensions", "x-other"),
            ("Origin", "https://portal.example"),
            ("Authorization", "Basic Q1AwMDE6c2VjcmV0"),
            ("X-Custom", "a\tb"),
        ],
    );
    let request = parse(&bytes).unwrap();
    assert_eq!(request.method(), "GET");
    assert_eq!(request.target(), "/ocpp/CP%2F001?token=abc&v=2");
    assert_eq!(request.path(), "/ocpp/CP%2F001");
    assert_eq!(request.query(), Some("token=abc&v=2"));
    assert_eq!(request.host(), b"csms.example:9000");
    assert_eq!(request.key().as_bytes(), b"the sample nonce");
    assert_eq!(
        request.subprotocols().collect::<Vec<_>>(),
        ["ocpp2.0.1", "ocpp1.6", "ocpp2.1"]
    );
    assert!(request.offers_subprotocol("ocpp1.6"));
    assert!(!request.offers_subprotocol("OCPP1.6"));
    assert_eq!(
        request.extensions().collect::<Vec<_>>(),
        [
            &b"permessage-deflate; client_max_window_bits"[..],
            b"x-other"
        ]
    );
    assert_eq!(request.origin(), Some(&b"https://portal.example"[..]));
    let credentials = request.basic_credentials().unwrap().unwrap();
    assert_eq!(credentials.user(), Some("CP001"));
    assert_eq!(credentials.password(), b"secret");
    assert_eq!(request.header("x-custom"), Some(&b"a\tb"[..]));
    assert_eq!(request.header_values("SEC-WEBSOCKET-PROTOCOL").count(), 2);
    assert_eq!(request.headers().count(), 12);
    assert_eq!(
        request.headers().next(),
        Some(("Host", &b"csms.example:9000"[..]))
    );
    assert_eq!(request.as_bytes(), &bytes[..]);
}

#[test]
fn minimal_request_has_no_optional_parts() {
    let request = parse(&request_with(&[])).unwrap();
    assert_eq!(request.query(), None);
    assert_eq!(request.subprotocols().count(), 0);
    assert_eq!(request.extensions().count(), 0);
    assert_eq!(request.origin(), None);
    assert_eq!(request.basic_credentials(), Ok(None));
}

#[test]
fn header_names_and_tokens_are_case_insensitive() {
    let bytes = build(
        "GET / HTTP/1.1",
        &[
            ("hOsT", "h"),
            ("UPGRADE", "WebSocket"),
            ("connection", "UPGRADE"),
            ("sec-websocket-key", KEY),
            ("SEC-WEBSOCKET-VERSION", "13"),
            ("sec-websocket-protocol", "ocpp1.6"),
        ],
    );
    let request = parse(&bytes).unwrap();
    assert_eq!(request.subprotocols().collect::<Vec<_>>(), ["ocpp1.6"]);
}

#[test]
fn connection_and_upgrade_are_token_lists_across_repeated_headers() {
    for (connection, upgrade) in [
        (vec!["keep-alive, Upgrade"], vec!["websocket"]),
        (vec!["Upgrade,keep-alive"], vec!["h2c, websocket"]),
        (vec!["keep-alive", "upgrade"], vec!["h2c", "websocket"]),
        (vec![" , Upgrade ,"], vec!["websocket ,"]),
    ] {
        let mut headers = vec![
            ("Host", "h"),
            ("Sec-WebSocket-Key", KEY),
            ("Sec-WebSocket-Version", "13"),
        ];
        headers.extend(connection.iter().map(|v| ("Connection", *v)));
        headers.extend(upgrade.iter().map(|v| ("Upgrade", *v)));
        let request = build("GET / HTTP/1.1", &headers);
        assert!(parse(&request).is_ok(), "{connection:?} {upgrade:?}");
    }
}

#[test]
fn target_forms() {
    let parse_target = |target: &str| {
        parse(&build(&format!("GET {target} HTTP/1.1"), &valid_headers()))
            .map(|r| (r.path().to_owned(), r.query().map(str::to_owned)))
    };
    assert_eq!(parse_target("/"), Ok(("/".into(), None)));
    assert_eq!(parse_target("/a?"), Ok(("/a".into(), Some("".into()))));
    assert_eq!(
        parse_target("/a?b?c"),
        Ok(("/a".into(), Some("b?c".into())))
    );
    assert_eq!(
        parse_target("ws://csms.example:9000/ocpp/CP1?x=1"),
        Ok(("/ocpp/CP1".into(), Some("x=1".into())))
    );
    assert_eq!(parse_target("WSS://csms.example"), Ok(("/".into(), None)));
    assert_eq!(
        parse_target("https://h?q"),
        Ok(("/".into(), Some("q".into())))
    );
    for bad in ["*", "csms.example:9000", "ftp://h/x", "ws:///x", "/a#frag"] {
        assert_eq!(
            parse_target(bad),
            Err(HandshakeError::InvalidRequestTarget),
            "{bad}"
        );
    }
}

#[test]
fn leading_empty_lines_and_bare_lf_are_tolerated() {
    let mut bytes = b"\r\n\r\n".to_vec();
    bytes.extend_from_slice(&request_with(&[]));
    assert!(parse(&bytes).is_ok());
    let lf_only = String::from_utf8(request_with(&[]))
        .unwrap()
        .replace("\r\n", "\n");
    let request = parse(lf_only.as_bytes()).unwrap();
    assert_eq!(request.path(), "/ocpp/CP001");
}

// ---------------------------------------------------------------------------------------------
// Refusals, each with its status and response

#[test]
fn wrong_method_is_405_with_allow_get() {
    for method in ["POST", "PUT", "get", "HEAD"] {
        let bytes = build(&format!("{method} / HTTP/1.1"), &valid_headers());
        let error = refusal(&bytes);
        assert_eq!(error, HandshakeError::MethodNotAllowed);
        assert_eq!(error.status(), 405);
    }
    assert_eq!(
        response_of(&HandshakeError::MethodNotAllowed),
        "HTTP/1.1 405 Method Not Allowed\r\nAllow: GET\r\nConnection: close\r\n\
         Content-Type: text/plain; charset=utf-8\r\nContent-Length: 31\r\n\r\n\
         a WebSocket handshake uses GET\n"
    );
}

#[test]
fn http_1_0_is_505() {
    let bytes = build("GET / HTTP/1.0", &valid_headers());
    let error = refusal(&bytes);
    assert_eq!(error, HandshakeError::HttpVersionNotSupported);
    assert_eq!(error.status(), 505);
    assert!(response_of(&error).starts_with("HTTP/1.1 505 HTTP Version Not Supported\r\n"));
}

#[test]
fn host_must_appear_exactly_once() {
    let error = refusal(&request_replacing("Host", None));
    assert_eq!(
        (error.clone(), error.status()),
        (HandshakeError::MissingHost, 400)
    );
    let error = refusal(&request_with(&[("Host", "other")]));
    assert_eq!(
        (error.clone(), error.status()),
        (HandshakeError::DuplicateHost, 400)
    );
}

#[test]
fn upgrade_must_carry_websocket() {
    for value in [None, Some("h2c"), Some("websocket2"), Some("")] {
        let error = refusal(&request_replacing("Upgrade", value));
        assert_eq!(error, HandshakeError::MissingUpgradeWebSocket, "{value:?}");
        assert_eq!(error.status(), 400);
    }
}

#[test]
fn connection_must_carry_upgrade() {
    for value in [
        None,
        Some("keep-alive"),
        Some("close"),
        Some("upgrade-insecure"),
    ] {
        let error = refusal(&request_replacing("Connection", value));
        assert_eq!(error, HandshakeError::MissingConnectionUpgrade, "{value:?}");
        assert_eq!(error.status(), 400);
    }
}

#[test]
fn websocket_version_other_than_13_is_426() {
    let error = refusal(&request_replacing("Sec-WebSocket-Version", None));
    assert_eq!(error, HandshakeError::MissingWebSocketVersion);
    assert_eq!(error.status(), 426);
    for value in ["8", "12", "13, 8", "", "013"] {
        let error = refusal(&request_replacing("Sec-WebSocket-Version", Some(value)));
        assert_eq!(
            error,
            HandshakeError::UnsupportedWebSocketVersion,
            "{value:?}"
        );
        assert_eq!(error.status(), 426);
    }
    let error = refusal(&request_with(&[("Sec-WebSocket-Version", "13")]));
    assert_eq!(error, HandshakeError::UnsupportedWebSocketVersion);
    assert_eq!(
        response_of(&error),
        "HTTP/1.1 426 Upgrade Required\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
         Connection: Upgrade, close\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: 34\r\n\r\nSec-WebSocket-Version 13 required\n"
    );
}

#[test]
fn key_must_be_one_base64_of_16_bytes() {
    let error = refusal(&request_replacing("Sec-WebSocket-Key", None));
    assert_eq!(
        (error.clone(), error.status()),
        (HandshakeError::MissingKey, 400)
    );
    let error = refusal(&request_with(&[("Sec-WebSocket-Key", KEY)]));
    assert_eq!(
        (error.clone(), error.status()),
        (HandshakeError::DuplicateKey, 400)
    );
    let engine = base64::engine::general_purpose::STANDARD;
    let fifteen: &'static str = engine.encode([7u8; 15]).leak();
    let seventeen: &'static str = engine.encode([7u8; 17]).leak();
    for bad in [
        fifteen,
        seventeen,
        "dGhlIHNhbXBsZSBub25jZQ",
        "dGhlIHNhbXBsZSBub25jZR==",
        "not base64 at all!!!!!!!",
        "",
    ] {
        let error = refusal(&request_replacing("Sec-WebSocket-Key", Some(bad)));
        assert_eq!(error, HandshakeError::InvalidKey, "{bad:?}");
        assert_eq!(error.status(), 400);
    }
}

#[test]
fn subprotocols_must_be_tokens() {
    let error = refusal(&request_with(&[(
        "Sec-WebSocket-Protocol",
        "ocpp1.6, ocpp 2.0",
    )]));
    assert_eq!(
        (error.clone(), error.status()),
        (HandshakeError::InvalidSubprotocol, 400)
    );
}

#[test]
fn malformed_heads_are_400() {
    for bytes in [
        &b"GET / HTTP/1.1 extra\r\nHost: h\r\n\r\n"[..],
        b"GET /\r\n\r\n",
        b"GET / HTTP/2.0\r\nHost: h\r\n\r\n",
        b"GET / HTTP/1.1\r\nBad Name: v\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost h\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\x00b\r\n\r\n",
        b"GET / HTTP/1.1\r\n Host: h\r\n\r\n",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\n\n",
    ] {
        let error = refusal(bytes);
        assert!(
            matches!(error, HandshakeError::MalformedRequest { .. }),
            "{error:?} for {:?}",
            String::from_utf8_lossy(bytes)
        );
        assert_eq!(error.status(), 400);
        assert!(response_of(&error).starts_with("HTTP/1.1 400 Bad Request\r\n"));
    }
}

#[test]
fn header_bytes_cap_is_431() {
    let base = request_with(&[]);
    let config = HandshakeConfig::default().with_max_header_bytes(base.len());
    assert!(parse_with(config, &base).is_ok(), "exactly at the cap");

    let config = HandshakeConfig::default().with_max_header_bytes(base.len() - 1);
    let error = parse_with(config, &base).unwrap_err();
    assert_eq!(
        error,
        HandshakeError::HeaderTooLarge {
            limit: base.len() - 1
        }
    );
    assert_eq!(error.status(), 431);
    assert!(response_of(&error).starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"));

    // Default cap: 16 KiB, counting everything up to the blank line.
    let filler = "x".repeat(16 * 1024);
    let error = refusal(&request_with(&[("X-Filler", filler.as_str())]));
    assert_eq!(error, HandshakeError::HeaderTooLarge { limit: 16 * 1024 });
}

#[test]
fn a_request_line_past_the_cap_is_414() {
    // RFC 9112 §3: a request-target longer than the server parses gets 414 URI Too Long.
    let target = format!("/ocpp/{}", "A".repeat(100 * 1024));
    let request = format!(
        "GET {target} HTTP/1.1\r\nHost: csms\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
    );
    let error = refusal(request.as_bytes());
    assert_eq!(error, HandshakeError::UriTooLong { limit: 16 * 1024 });
    assert_eq!(error.status(), 414);
    assert!(response_of(&error).starts_with("HTTP/1.1 414 URI Too Long\r\n"));
    // The same line arriving a byte at a time.
    let mut handshake = ServerHandshake::new();
    let error = request
        .as_bytes()
        .chunks(1)
        .find_map(|b| handshake.handle_data(b).err())
        .unwrap();
    assert_eq!(error.status(), 414);
}

#[test]
fn endless_head_is_cut_at_the_cap_and_buffer_never_exceeds_it() {
    let mut handshake =
        ServerHandshake::with_config(HandshakeConfig::default().with_max_header_bytes(1000));
    assert_eq!(
        handshake.handle_data(b"GET / HTTP/1.1\r\n"),
        Ok(Progress::NeedMore)
    );
    let line = b"X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
    let error = loop {
        match handshake.handle_data(line) {
            Ok(Progress::NeedMore) => assert!(handshake.buffered_len() <= 1000),
            Ok(Progress::Complete { .. }) => panic!("no blank line was sent"),
            Err(error) => break error,
        }
    };
    assert_eq!(error, HandshakeError::HeaderTooLarge { limit: 1000 });
    assert_eq!(handshake.buffered_len(), 0);
    assert!(handshake.is_finished());
}

#[test]
fn header_count_cap_is_431() {
    // 5 required headers + 59 extras = 64: accepted; one more is refused.
    let extras: Vec<(String, &str)> = (0..60).map(|i| (format!("X-H{i}"), "v")).collect();
    let extra_refs: Vec<(&str, &str)> = extras.iter().map(|(n, v)| (n.as_str(), *v)).collect();
    assert!(parse(&request_with(&extra_refs[..59])).is_ok());
    let error = refusal(&request_with(&extra_refs));
    assert_eq!(error, HandshakeError::TooManyHeaders { limit: 64 });
    assert_eq!(error.status(), 431);

    let config = HandshakeConfig::default().with_max_headers(5);
    assert!(parse_with(config, &request_with(&[])).is_ok());
    let error = parse_with(config, &request_with(&[("X", "y")])).unwrap_err();
    assert_eq!(error, HandshakeError::TooManyHeaders { limit: 5 });

    // A huge cap does not translate into a huge allocation.
    let config = HandshakeConfig::default().with_max_headers(usize::MAX);
    assert!(parse_with(config, &request_with(&extra_refs)).is_ok());
}

#[test]
fn every_refusal_maps_to_its_status() {
    let cases = [
        (HandshakeError::HeaderTooLarge { limit: 1 }, 431),
        (HandshakeError::TooManyHeaders { limit: 1 }, 431),
        (HandshakeError::MalformedRequest { reason: "x" }, 400),
        (HandshakeError::MethodNotAllowed, 405),
        (HandshakeError::HttpVersionNotSupported, 505),
        (HandshakeError::InvalidRequestTarget, 400),
        (HandshakeError::MissingHost, 400),
        (HandshakeError::DuplicateHost, 400),
        (HandshakeError::MissingUpgradeWebSocket, 400),
        (HandshakeError::MissingConnectionUpgrade, 400),
        (HandshakeError::MissingWebSocketVersion, 426),
        (HandshakeError::UnsupportedWebSocketVersion, 426),
        (HandshakeError::MissingKey, 400),
        (HandshakeError::DuplicateKey, 400),
        (HandshakeError::InvalidKey, 400),
        (HandshakeError::InvalidSubprotocol, 400),
        (HandshakeError::AlreadyFinished, 500),
    ];
    for (error, status) in cases {
        assert_eq!(error.status(), status, "{error:?}");
        let response = response_of(&error);
        let status_line = format!("HTTP/1.1 {status} {}\r\n", reason_phrase(status));
        assert!(response.starts_with(&status_line), "{response}");
        assert!(response.contains("\r\nConnection: ") && response.contains("close\r\n"));
        let body = error.detail();
        assert!(response.ends_with(&format!("Content-Length: {}\r\n\r\n{body}", body.len())));
        assert!(!error.to_string().is_empty());
    }
}

#[test]
fn feeding_after_the_end_is_a_caller_error() {
    let mut handshake = ServerHandshake::new();
    assert!(handshake
        .handle_data(&request_with(&[]))
        .unwrap()
        .is_complete());
    assert!(handshake.is_finished());
    assert_eq!(
        handshake.handle_data(b"x"),
        Err(HandshakeError::AlreadyFinished)
    );

    let mut handshake = ServerHandshake::new();
    assert!(handshake.handle_data(b"POST / HTTP/1.1\r\n\r\n").is_err());
    assert_eq!(
        handshake.handle_data(b""),
        Err(HandshakeError::AlreadyFinished)
    );
}

// ---------------------------------------------------------------------------------------------
// Basic credentials

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

// ---------------------------------------------------------------------------------------------
// Answers

#[test]
fn accept_writes_the_101() {
    let request = parse(&request_with(&[(
        "Sec-WebSocket-Protocol",
        "ocpp2.0.1, ocpp1.6",
    )]))
    .unwrap();
    let mut out = Vec::new();
    request.accept(&Accept::new(), &mut out).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Accept: {ACCEPT}\r\n\r\n"
        )
    );

    let extra: &[(&str, &[u8])] = &[
        ("Sec-WebSocket-Extensions", b"permessage-deflate"),
        ("Set-Cookie", b"a=b"),
    ];
    let mut out = Vec::new();
    request
        .accept(
            &Accept::new()
                .with_subprotocol("ocpp1.6")
                .with_headers(extra),
            &mut out,
        )
        .unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Accept: {ACCEPT}\r\nSec-WebSocket-Protocol: ocpp1.6\r\n\
             Sec-WebSocket-Extensions: permessage-deflate\r\nSet-Cookie: a=b\r\n\r\n"
        )
    );
}

#[test]
fn accept_refuses_what_would_break_the_response() {
    let request = parse(&request_with(&[("Sec-WebSocket-Protocol", "ocpp1.6")])).unwrap();
    let mut out = Vec::new();
    let try_accept = |accept: Accept<'_>, out: &mut Vec<u8>| request.accept(&accept, out);
    assert_eq!(
        try_accept(Accept::new().with_subprotocol("ocpp2.0.1"), &mut out),
        Err(BuildError::SubprotocolNotOffered)
    );
    let cases: [(Headers<'_>, BuildError); 5] = [
        (
            &[("X-Bad", b"a\r\nInjected: yes")],
            BuildError::InvalidHeaderValue,
        ),
        (&[("X-Bad", b"nul\x00")], BuildError::InvalidHeaderValue),
        (&[("Bad Name", b"v")], BuildError::InvalidHeaderName),
        (
            &[("sec-websocket-accept", b"forged")],
            BuildError::ReservedHeader,
        ),
        (&[("Connection", b"close")], BuildError::ReservedHeader),
    ];
    for (headers, expected) in cases {
        assert_eq!(
            try_accept(Accept::new().with_headers(headers), &mut out),
            Err(expected)
        );
    }
    assert!(out.is_empty(), "nothing written on error");
}

#[test]
fn rejections_are_complete_responses() {
    let written = |rejection: Rejection<'_>| {
        let mut out = Vec::new();
        rejection.write(&mut out);
        String::from_utf8(out).unwrap()
    };
    assert_eq!(
        written(Rejection::unauthorized("OCPP CSMS").unwrap()),
        "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"OCPP CSMS\"\r\n\
         Connection: close\r\nContent-Length: 0\r\n\r\n"
    );
    assert_eq!(
        written(Rejection::new(401).unwrap()),
        "HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    );
    assert_eq!(
        written(Rejection::new(404).unwrap().with_body("unknown charge point\n")),
        "HTTP/1.1 404 Not Found\r\nConnection: close\r\n\
         Content-Type: text/plain; charset=utf-8\r\nContent-Length: 21\r\n\r\nunknown charge point\n"
    );
    let retry: &[(&str, &[u8])] = &[("Retry-After", b"30")];
    assert_eq!(
        written(Rejection::new(503).unwrap().with_headers(retry).unwrap()),
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 30\r\nConnection: close\r\n\
         Content-Length: 0\r\n\r\n"
    );
    assert_eq!(
        written(Rejection::new(426).unwrap()),
        "HTTP/1.1 426 Upgrade Required\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
         Connection: Upgrade, close\r\nContent-Length: 0\r\n\r\n"
    );
    for status in [403, 400, 409, 500] {
        let text = written(Rejection::new(status).unwrap());
        assert!(text.starts_with(&format!("HTTP/1.1 {status} {}\r\n", reason_phrase(status))));
    }
    assert_eq!(
        written(Rejection::new(599).unwrap()).lines().next(),
        Some("HTTP/1.1 599 ")
    );
    for status in [0, 101, 200, 299, 600] {
        assert_eq!(
            Rejection::new(status),
            Err(BuildError::InvalidStatus(status))
        );
    }
    assert_eq!(
        Rejection::unauthorized("a\"b"),
        Err(BuildError::InvalidRealm)
    );
    assert_eq!(
        Rejection::unauthorized("a\r\nb"),
        Err(BuildError::InvalidRealm)
    );
    let smuggle: &[(&str, &[u8])] = &[("Content-Length", b"5")];
    assert_eq!(
        Rejection::new(403).unwrap().with_headers(smuggle),
        Err(BuildError::ReservedHeader)
    );
}

// ---------------------------------------------------------------------------------------------
// Bytes after the head

#[test]
fn pipelined_frames_are_handed_on() {
    let frame = [
        0x81u8,
        0x85,
        1,
        2,
        3,
        4,
        b'h' ^ 1,
        b'e' ^ 2,
        b'l' ^ 3,
        b'l' ^ 4,
        b'o' ^ 1,
    ];
    let mut bytes = request_with(&[]);
    let head_len = bytes.len();
    bytes.extend_from_slice(&frame);
    let (_, trailing) = parse_with(HandshakeConfig::default(), &bytes).unwrap();
    assert_eq!(trailing, frame);

    // Head split so that the blank line's last byte starts the last input.
    let mut handshake = ServerHandshake::new();
    assert_eq!(
        handshake.handle_data(&bytes[..head_len - 1]),
        Ok(Progress::NeedMore)
    );
    match handshake.handle_data(&bytes[head_len - 1..]).unwrap() {
        Progress::Complete { consumed, .. } => assert_eq!(consumed, 1),
        Progress::NeedMore => panic!("complete"),
    }
    assert_eq!(handshake.buffered_len(), 0);
}

// ---------------------------------------------------------------------------------------------
// Split independence

/// Feeds `chunks` in order; the outcome and every byte after the head.
fn feed_chunks(
    config: HandshakeConfig,
    chunks: &[&[u8]],
) -> (Option<Result<UpgradeRequest, HandshakeError>>, Vec<u8>) {
    let mut handshake = ServerHandshake::with_config(config);
    let mut trailing = Vec::new();
    let mut outcome = None;
    for chunk in chunks {
        match outcome {
            Some(Ok(_)) => {
                trailing.extend_from_slice(chunk);
                continue;
            }
            Some(Err(_)) => break,
            None => {}
        }
        match handshake.handle_data(chunk) {
            Ok(Progress::NeedMore) => {
                assert!(handshake.buffered_len() <= config.max_header_bytes())
            }
            Ok(Progress::Complete { value, consumed }) => {
                outcome = Some(Ok(value));
                trailing.extend_from_slice(&chunk[consumed..]);
            }
            Err(error) => outcome = Some(Err(error)),
        }
    }
    (outcome, trailing)
}

fn split_at_points<'a>(bytes: &'a [u8], points: &[usize]) -> Vec<&'a [u8]> {
    let mut points: Vec<usize> = points.iter().map(|p| p % (bytes.len() + 1)).collect();
    points.sort_unstable();
    let mut chunks = Vec::new();
    let mut start = 0;
    for p in points {
        chunks.push(&bytes[start..p]);
        start = p;
    }
    chunks.push(&bytes[start..]);
    chunks
}

fn token() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9.!#$%&'*+^_`|~-]{1,12}"
}

prop_compose! {
    fn valid_request()(
        path in "/[a-zA-Z0-9/%._~-]{0,30}",
        query in proptest::option::of("[a-zA-Z0-9=&%]{0,20}"),
        subprotocols in proptest::collection::vec(proptest::collection::vec(token(), 1..3), 0..3),
        extras in proptest::collection::vec(("X-[a-zA-Z0-9-]{1,10}", "[ -~]{0,40}"), 0..6),
        upper in any::<bool>(),
        key in any::<[u8; 16]>(),
        trailing in proptest::collection::vec(any::<u8>(), 0..40),
    ) -> (Vec<u8>, Vec<String>, Vec<u8>) {
        let case = |s: &str| if upper { s.to_ascii_uppercase() } else { s.to_owned() };
        let target = match &query { Some(q) => format!("{path}?{q}"), None => path.clone() };
        let mut text = format!("GET {target} HTTP/1.1\r\n");
        text.push_str(&format!("{}: csms\r\n", case("Host")));
        text.push_str(&format!("{}: keep-alive, Upgrade\r\n", case("Connection")));
        text.push_str(&format!("{}: websocket\r\n", case("Upgrade")));
        let key = SecWebSocketKey::from_bytes(key);
        text.push_str(&format!("{}: {key}\r\n", case("Sec-WebSocket-Key")));
        text.push_str(&format!("{}: 13\r\n", case("Sec-WebSocket-Version")));
        let mut offered = Vec::new();
        for line in &subprotocols {
            text.push_str(&format!("{}: {}\r\n", case("Sec-WebSocket-Protocol"), line.join(" , ")));
            offered.extend(line.iter().cloned());
        }
        for (name, value) in &extras {
            text.push_str(&format!("{name}: {}\r\n", value.trim()));
        }
        text.push_str("\r\n");
        (text.into_bytes(), offered, trailing)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn any_split_of_a_valid_request_gives_the_same_request(
        (head, offered, trailing) in valid_request(),
        points in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let mut bytes = head.clone();
        bytes.extend_from_slice(&trailing);
        let (whole, whole_trailing) = feed_chunks(HandshakeConfig::default(), &[&bytes]);
        let request = whole.clone().unwrap().unwrap();
        prop_assert_eq!(request.as_bytes(), &head[..]);
        prop_assert_eq!(request.subprotocols().collect::<Vec<_>>(), offered);
        prop_assert_eq!(&whole_trailing, &trailing);

        let chunks = split_at_points(&bytes, &points);
        let (split, split_trailing) = feed_chunks(HandshakeConfig::default(), &chunks);
        prop_assert_eq!(split, whole);
        prop_assert_eq!(split_trailing, trailing);
    }

    #[test]
    fn byte_at_a_time_gives_the_same_request((head, _, trailing) in valid_request()) {
        let mut bytes = head;
        bytes.extend_from_slice(&trailing);
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        let (whole, whole_trailing) = feed_chunks(HandshakeConfig::default(), &[&bytes]);
        let (split, split_trailing) = feed_chunks(HandshakeConfig::default(), &singles);
        prop_assert_eq!(split, whole);
        prop_assert_eq!(split_trailing, whole_trailing);
    }

    #[test]
    fn any_split_of_any_bytes_gives_the_same_outcome(
        bytes in proptest::collection::vec(
            prop_oneof![Just(b'\r'), Just(b'\n'), Just(b':'), Just(b' '), any::<u8>()], 0..300),
        points in proptest::collection::vec(any::<usize>(), 0..12),
        cap in 16usize..400,
    ) {
        let config = HandshakeConfig::default().with_max_header_bytes(cap).with_max_headers(4);
        let whole = feed_chunks(config, &[&bytes]);
        let split = feed_chunks(config, &split_at_points(&bytes, &points));
        prop_assert_eq!(split, whole);
    }
}

// ---------------------------------------------------------------------------------------------
// Differential against tungstenite

/// An in-memory stream: reads from `input` (then `WouldBlock`), writes to `output`.
#[derive(Debug, Default)]
struct MemoryStream {
    input: Cursor<Vec<u8>>,
    output: Vec<u8>,
}

impl Read for MemoryStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.input.read(buf)? {
            0 if !buf.is_empty() => Err(io::ErrorKind::WouldBlock.into()),
            n => Ok(n),
        }
    }
}

impl Write for MemoryStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.output.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn tungstenite_request_is_accepted_and_our_101_satisfies_tungstenite() {
    use tungstenite::client::IntoClientRequest;
    use tungstenite::handshake::HandshakeError as TungsteniteError;

    let mut request = "ws://csms.example:9000/ocpp/CP001?v=1"
        .into_client_request()
        .unwrap();
    let headers = request.headers_mut();
    headers.insert(
        "Sec-WebSocket-Protocol",
        "ocpp2.0.1, ocpp1.6".parse().unwrap(),
    );
    headers.insert("Sec-WebSocket-Key", KEY.parse().unwrap());
    headers.insert("Origin", "https://portal.example".parse().unwrap());

    let mid = match tungstenite::client(request, MemoryStream::default()) {
        Err(TungsteniteError::Interrupted(mid)) => mid,
        other => panic!("expected to wait for the response: {other:?}"),
    };
    let mut mid = mid;
    let stream = mid.get_mut().get_mut();
    let request_bytes = std::mem::take(&mut stream.output);

    // Our server parses tungstenite's request, fed one byte at a time.
    let mut server = ServerHandshake::new();
    let mut parsed = None;
    for (at, byte) in request_bytes.iter().enumerate() {
        match server.handle_data(std::slice::from_ref(byte)).unwrap() {
            Progress::NeedMore => {}
            Progress::Complete { value, consumed } => {
                assert_eq!((consumed, at + 1), (1, request_bytes.len()));
                parsed = Some(value);
            }
        }
    }
    let request = parsed.expect("complete request");
    assert_eq!(request.path(), "/ocpp/CP001");
    assert_eq!(request.query(), Some("v=1"));
    assert_eq!(request.host(), b"csms.example:9000");
    assert_eq!(
        request.subprotocols().collect::<Vec<_>>(),
        ["ocpp2.0.1", "ocpp1.6"]
    );
    assert_eq!(request.origin(), Some(&b"https://portal.example"[..]));
    assert_eq!(request.key().accept().as_str(), ACCEPT);

    // Our 101, followed by a first server frame, satisfies tungstenite's client checks.
    let mut response = Vec::new();
    request
        .accept(&Accept::new().with_subprotocol("ocpp1.6"), &mut response)
        .unwrap();
    response.extend_from_slice(&[0x81, 0x02, b'h', b'i']);
    mid.get_mut().get_mut().input = Cursor::new(response);
    let (mut socket, response) = mid.handshake().expect("tungstenite accepts our 101");
    assert_eq!(response.status(), 101);
    assert_eq!(response.headers()["Sec-WebSocket-Protocol"], "ocpp1.6");
    assert_eq!(socket.read().unwrap(), tungstenite::Message::text("hi"));
}

#[test]
fn tungstenite_generated_requests_with_random_keys_are_accepted() {
    use tungstenite::client::IntoClientRequest;
    for _ in 0..50 {
        let request = "wss://csms.example/ocpp/CP001"
            .into_client_request()
            .unwrap();
        let (bytes, key) = tungstenite::handshake::client::generate_request(request).unwrap();
        let request = parse(&bytes).unwrap();
        assert_eq!(request.key().to_string(), key);
        assert_eq!(
            request.key().accept().as_str(),
            tungstenite::handshake::derive_accept_key(key.as_bytes())
        );
    }
}
