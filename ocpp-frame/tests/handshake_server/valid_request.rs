//! A valid request: what the application gets, case-insensitive names and tokens, target
//! forms, tolerated blank lines.

use super::*;

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
