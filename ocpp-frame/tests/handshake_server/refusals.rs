//! Refusals, each with its status and response: method, version, Host, Upgrade, Connection,
//! the key, subprotocols, malformed heads and every cap.

use super::*;

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
