//! Behaviour of the client side of the opening handshake (RFC 6455 §4.1) through the public API.

use std::io::{self, Cursor, Read, Write};

use ocpp_frame::handshake::{
    Accept, BasicCredentials, BuildError, ClientHandshake, ClientHandshakeError, ClientRequest,
    HandshakeConfig, Progress, SecWebSocketKey, ServerHandshake, UpgradeResponse,
};
use proptest::prelude::*;

const KEY_BYTES: [u8; 16] = *b"the sample nonce";
const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";
const ACCEPT: &str = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

fn key() -> SecWebSocketKey {
    SecWebSocketKey::from_bytes(KEY_BYTES)
}

fn ocpp_request() -> ClientRequest {
    ClientRequest::new("csms.example", "/ocpp/CP001", key())
        .unwrap()
        .with_subprotocol("ocpp2.0.1")
        .unwrap()
        .with_subprotocol("ocpp1.6")
        .unwrap()
}

fn written(request: &ClientRequest) -> String {
    let mut out = Vec::new();
    request.write(&mut out);
    String::from_utf8(out).unwrap()
}

fn response(status_line: &str, headers: &[(&str, &str)]) -> Vec<u8> {
    let mut out = format!("{status_line}\r\n");
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    out.into_bytes()
}

fn switching(extra: &[(&str, &str)]) -> Vec<u8> {
    let mut headers = vec![
        ("Upgrade", "websocket"),
        ("Connection", "Upgrade"),
        ("Sec-WebSocket-Accept", ACCEPT),
    ];
    headers.extend_from_slice(extra);
    response("HTTP/1.1 101 Switching Protocols", &headers)
}

fn check_with(
    request: &ClientRequest,
    config: HandshakeConfig,
    bytes: &[u8],
) -> Result<(UpgradeResponse, Vec<u8>), ClientHandshakeError> {
    let mut handshake = ClientHandshake::with_config(request, config);
    match handshake.handle_data(bytes)? {
        Progress::Complete { value, consumed } => Ok((value, bytes[consumed..].to_vec())),
        Progress::NeedMore => panic!("incomplete"),
    }
}

fn check(bytes: &[u8]) -> Result<UpgradeResponse, ClientHandshakeError> {
    check_with(&ocpp_request(), HandshakeConfig::default(), bytes).map(|(r, _)| r)
}

// ---------------------------------------------------------------------------------------------
// The request

#[test]
fn request_bytes() {
    assert_eq!(
        written(&ClientRequest::new("csms.example", "/", key()).unwrap()),
        format!(
            "GET / HTTP/1.1\r\nHost: csms.example\r\nUpgrade: websocket\r\n\
             Connection: Upgrade\r\nSec-WebSocket-Key: {KEY}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
    );
    let request = ocpp_request()
        .with_port(9000)
        .with_header("Origin", b"https://cp.example")
        .unwrap()
        .with_basic_auth(b"CP001", b"\x00\xffkey")
        .unwrap();
    assert_eq!(
        written(&request),
        format!(
            "GET /ocpp/CP001 HTTP/1.1\r\nHost: csms.example:9000\r\nUpgrade: websocket\r\n\
             Connection: Upgrade\r\nSec-WebSocket-Key: {KEY}\r\nSec-WebSocket-Version: 13\r\n\
             Sec-WebSocket-Protocol: ocpp2.0.1, ocpp1.6\r\nOrigin: https://cp.example\r\n\
             Authorization: Basic Q1AwMDE6AP9rZXk=\r\n\r\n"
        )
    );
    assert!(
        !format!("{request:?}").contains("Q1AwMDE6"),
        "Debug hides header values"
    );
    assert_eq!(
        request.subprotocols().collect::<Vec<_>>(),
        ["ocpp2.0.1", "ocpp1.6"]
    );
    assert_eq!(request.key(), &key());
}

#[test]
fn hosts() {
    let host_line = |host: &str, port: Option<u16>| {
        let mut request = ClientRequest::new(host, "/", key()).unwrap();
        if let Some(port) = port {
            request = request.with_port(port);
        }
        written(&request).lines().nth(1).unwrap().to_owned()
    };
    assert_eq!(host_line("10.0.0.1", Some(80)), "Host: 10.0.0.1:80");
    assert_eq!(host_line("::1", Some(9000)), "Host: [::1]:9000");
    assert_eq!(host_line("[fe80::1]", None), "Host: [fe80::1]");
    for bad in [
        "",
        "csms.example:9000",
        // Once taken for an IPv6 literal and written as `[127.0.0.1:9000]`.
        "127.0.0.1:9000",
        "1:2",
        "a b",
        "a\r\nX: y",
        "host/path",
        "[zz::1]",
        "user@h",
    ] {
        assert_eq!(
            ClientRequest::new(bad, "/", key()).unwrap_err(),
            BuildError::InvalidHost,
            "{bad:?}"
        );
    }
}

#[test]
fn builder_refuses_what_would_break_the_request() {
    for bad in ["", "ocpp", "/a b", "/a#b", "/a\r\nX: y", "/caf\u{e9}"] {
        assert_eq!(
            ClientRequest::new("h", bad, key()).unwrap_err(),
            BuildError::InvalidPath,
            "{bad:?}"
        );
    }
    let base = || ClientRequest::new("h", "/", key()).unwrap();
    assert_eq!(
        base().with_subprotocol("ocpp 1.6").unwrap_err(),
        BuildError::InvalidSubprotocol
    );
    assert_eq!(
        base().with_subprotocol("").unwrap_err(),
        BuildError::InvalidSubprotocol
    );
    assert_eq!(
        base().with_header("X", b"a\nb").unwrap_err(),
        BuildError::InvalidHeaderValue
    );
    assert_eq!(
        base().with_header("X:", b"v").unwrap_err(),
        BuildError::InvalidHeaderName
    );
    for reserved in [
        "host",
        "Sec-WebSocket-Key",
        "sec-websocket-version",
        "Upgrade",
    ] {
        assert_eq!(
            base().with_header(reserved, b"v").unwrap_err(),
            BuildError::ReservedHeader
        );
    }
    assert_eq!(
        base().with_basic_auth(b"a:b", b"p").unwrap_err(),
        BuildError::InvalidBasicUser
    );
}

#[test]
fn basic_credentials_round_trip() {
    let credentials = BasicCredentials::new(b"CP001", b"\x01\x02:\xff").unwrap();
    let value = credentials.header_value();
    let parsed = BasicCredentials::parse_authorization(value.as_bytes())
        .unwrap()
        .unwrap();
    assert_eq!(parsed, credentials);
    assert_eq!(parsed.password(), b"\x01\x02:\xff");
}

// ---------------------------------------------------------------------------------------------
// The response

#[test]
fn valid_101() {
    let bytes = switching(&[
        ("Sec-WebSocket-Protocol", "ocpp1.6"),
        ("Date", "Thu, 01 Jan 2026 00:00:00 GMT"),
    ]);
    let response = check(&bytes).unwrap();
    assert_eq!(response.status(), 101);
    assert_eq!(response.reason(), "Switching Protocols");
    assert_eq!(response.subprotocol(), Some("ocpp1.6"));
    assert_eq!(
        response.header("date"),
        Some(&b"Thu, 01 Jan 2026 00:00:00 GMT"[..])
    );
    assert_eq!(response.headers().count(), 5);
    assert_eq!(response.header_values("UPGRADE").count(), 1);
    assert_eq!(response.extensions().count(), 0);
    assert_eq!(response.as_bytes(), &bytes[..]);
}

#[test]
fn case_insensitive_names_and_tokens() {
    let bytes = response(
        "HTTP/1.1 101 Whatever",
        &[
            ("upgrade", "WebSocket"),
            ("CONNECTION", "keep-alive, UPGRADE"),
            ("sec-websocket-accept", ACCEPT),
        ],
    );
    let response = check(&bytes).unwrap();
    assert_eq!(
        response.subprotocol(),
        None,
        "offered but none selected: caller decides"
    );
}

#[test]
fn other_statuses_carry_code_and_reason() {
    for (line, status, reason) in [
        ("HTTP/1.1 404 Not Found", 404, "Not Found"),
        ("HTTP/1.1 401 Unauthorized", 401, "Unauthorized"),
        (
            "HTTP/1.1 503 Service Unavailable",
            503,
            "Service Unavailable",
        ),
        ("HTTP/1.0 403 Forbidden", 403, "Forbidden"),
        ("HTTP/1.1 200 OK", 200, "OK"),
        ("HTTP/1.1 426 ", 426, ""),
    ] {
        let error = check(&response(line, &[("Content-Length", "0")])).unwrap_err();
        assert_eq!(
            error,
            ClientHandshakeError::UnexpectedStatus {
                status,
                reason: reason.to_owned()
            }
        );
        assert_eq!(error.status(), Some(status));
    }
}

#[test]
fn strict_checks_of_the_101() {
    let cases: Vec<(Vec<u8>, ClientHandshakeError)> = vec![
        (
            response(
                "HTTP/1.0 101 Switching Protocols",
                &[
                    ("Upgrade", "websocket"),
                    ("Connection", "Upgrade"),
                    ("Sec-WebSocket-Accept", ACCEPT),
                ],
            ),
            ClientHandshakeError::HttpVersionNotSupported,
        ),
        (
            response(
                "HTTP/1.1 101 Switching Protocols",
                &[("Connection", "Upgrade"), ("Sec-WebSocket-Accept", ACCEPT)],
            ),
            ClientHandshakeError::MissingUpgradeWebSocket,
        ),
        (
            response(
                "HTTP/1.1 101 Switching Protocols",
                &[
                    ("Upgrade", "h2c, websocket"),
                    ("Connection", "Upgrade"),
                    ("Sec-WebSocket-Accept", ACCEPT),
                ],
            ),
            ClientHandshakeError::MissingUpgradeWebSocket,
        ),
        (
            response(
                "HTTP/1.1 101 Switching Protocols",
                &[
                    ("Upgrade", "websocket"),
                    ("Connection", "keep-alive"),
                    ("Sec-WebSocket-Accept", ACCEPT),
                ],
            ),
            ClientHandshakeError::MissingConnectionUpgrade,
        ),
        (
            response(
                "HTTP/1.1 101 Switching Protocols",
                &[("Upgrade", "websocket"), ("Connection", "Upgrade")],
            ),
            ClientHandshakeError::MissingAccept,
        ),
        (
            response(
                "HTTP/1.1 101 Switching Protocols",
                &[
                    ("Upgrade", "websocket"),
                    ("Connection", "Upgrade"),
                    ("Sec-WebSocket-Accept", KEY),
                ],
            ),
            ClientHandshakeError::AcceptMismatch,
        ),
        (
            switching(&[("Sec-WebSocket-Accept", ACCEPT)]),
            ClientHandshakeError::AcceptMismatch,
        ),
        (
            switching(&[("Sec-WebSocket-Protocol", "ocpp2.1")]),
            ClientHandshakeError::SubprotocolNotOffered,
        ),
        (
            switching(&[("Sec-WebSocket-Protocol", "OCPP1.6")]),
            ClientHandshakeError::SubprotocolNotOffered,
        ),
        (
            switching(&[("Sec-WebSocket-Protocol", "ocpp1.6, ocpp2.0.1")]),
            ClientHandshakeError::SubprotocolNotOffered,
        ),
        (
            switching(&[
                ("Sec-WebSocket-Protocol", "ocpp1.6"),
                ("Sec-WebSocket-Protocol", "ocpp1.6"),
            ]),
            ClientHandshakeError::SubprotocolNotOffered,
        ),
        (
            switching(&[("Sec-WebSocket-Extensions", "permessage-deflate")]),
            ClientHandshakeError::ExtensionNotOffered,
        ),
        (
            b"HTTP/1.1 10x Switching\r\n\r\n".to_vec(),
            ClientHandshakeError::MalformedResponse {
                reason: "invalid status",
            },
        ),
    ];
    for (bytes, expected) in cases {
        assert_eq!(
            check(&bytes).unwrap_err(),
            expected,
            "{}",
            String::from_utf8_lossy(&bytes)
        );
    }

    // A subprotocol when none was offered.
    let plain = ClientRequest::new("h", "/", key()).unwrap();
    let bytes = switching(&[("Sec-WebSocket-Protocol", "ocpp1.6")]);
    assert_eq!(
        check_with(&plain, HandshakeConfig::default(), &bytes).unwrap_err(),
        ClientHandshakeError::SubprotocolNotOffered
    );
}

#[test]
fn offered_extensions_are_surfaced_raw() {
    let request = ocpp_request()
        .with_header(
            "Sec-WebSocket-Extensions",
            b"permessage-deflate; client_max_window_bits",
        )
        .unwrap();
    assert!(request.offers_extensions());
    let bytes = switching(&[
        (
            "Sec-WebSocket-Extensions",
            "permessage-deflate; server_no_context_takeover",
        ),
        ("Sec-WebSocket-Extensions", "x-other"),
    ]);
    let (response, _) = check_with(&request, HandshakeConfig::default(), &bytes).unwrap();
    assert_eq!(
        response.extensions().collect::<Vec<_>>(),
        [
            &b"permessage-deflate; server_no_context_takeover"[..],
            b"x-other"
        ]
    );
}

#[test]
fn caps_apply_to_the_response() {
    let bytes = switching(&[]);
    let request = ocpp_request();
    let exact = HandshakeConfig::default().with_max_header_bytes(bytes.len());
    assert!(check_with(&request, exact, &bytes).is_ok());
    let short = HandshakeConfig::default().with_max_header_bytes(bytes.len() - 1);
    assert_eq!(
        check_with(&request, short, &bytes).unwrap_err(),
        ClientHandshakeError::HeaderTooLarge {
            limit: bytes.len() - 1
        }
    );
    let few = HandshakeConfig::default().with_max_headers(2);
    assert_eq!(
        check_with(&request, few, &bytes).unwrap_err(),
        ClientHandshakeError::TooManyHeaders { limit: 2 }
    );

    let mut handshake = ClientHandshake::with_config(&request, exact);
    for &byte in &bytes[..bytes.len() - 1] {
        assert_eq!(handshake.handle_data(&[byte]), Ok(Progress::NeedMore));
        assert!(handshake.buffered_len() <= bytes.len());
    }
    assert!(handshake
        .handle_data(&bytes[bytes.len() - 1..])
        .unwrap()
        .is_complete());
    assert_eq!(handshake.buffered_len(), 0);
    assert!(handshake.is_finished());
    assert_eq!(
        handshake.handle_data(b"x"),
        Err(ClientHandshakeError::AlreadyFinished)
    );
}

#[test]
fn server_frames_after_the_101_are_handed_on() {
    let mut bytes = switching(&[]);
    let frames = [0x81u8, 0x02, b'h', b'i', 0x89, 0x00];
    bytes.extend_from_slice(&frames);
    let (_, trailing) = check_with(&ocpp_request(), HandshakeConfig::default(), &bytes).unwrap();
    assert_eq!(trailing, frames);
}

// ---------------------------------------------------------------------------------------------
// Our client against our server

#[test]
fn our_client_and_server_agree() {
    let request = ocpp_request()
        .with_basic_auth(b"CP001", b"secret")
        .unwrap()
        .with_header("Sec-WebSocket-Extensions", b"permessage-deflate")
        .unwrap();
    let mut wire = Vec::new();
    request.write(&mut wire);
    let mut server = ServerHandshake::new();
    let Ok(Progress::Complete {
        value: seen,
        consumed,
    }) = server.handle_data(&wire)
    else {
        panic!("server refused our request");
    };
    assert_eq!(consumed, wire.len());
    assert_eq!(
        seen.subprotocols().collect::<Vec<_>>(),
        ["ocpp2.0.1", "ocpp1.6"]
    );
    assert_eq!(
        seen.basic_credentials().unwrap().unwrap().password(),
        b"secret"
    );
    assert_eq!(seen.key(), request.key());

    let headers: &[(&str, &[u8])] = &[("Sec-WebSocket-Extensions", b"permessage-deflate")];
    let mut answer = Vec::new();
    seen.accept(
        &Accept::new()
            .with_subprotocol("ocpp2.0.1")
            .with_headers(headers),
        &mut answer,
    )
    .unwrap();
    let mut client = ClientHandshake::new(&request);
    let Ok(Progress::Complete { value, consumed }) = client.handle_data(&answer) else {
        panic!("client refused our 101");
    };
    assert_eq!(consumed, answer.len());
    assert_eq!(value.subprotocol(), Some("ocpp2.0.1"));
    assert_eq!(
        value.extensions().collect::<Vec<_>>(),
        [&b"permessage-deflate"[..]]
    );
}

// ---------------------------------------------------------------------------------------------
// Split independence

fn feed_chunks(
    request: &ClientRequest,
    config: HandshakeConfig,
    chunks: &[&[u8]],
) -> (
    Option<Result<UpgradeResponse, ClientHandshakeError>>,
    Vec<u8>,
) {
    let mut handshake = ClientHandshake::with_config(request, config);
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

prop_compose! {
    fn valid_response()(
        subprotocol in proptest::option::of(prop_oneof![Just("ocpp2.0.1"), Just("ocpp1.6")]),
        extras in proptest::collection::vec(("X-[a-zA-Z0-9-]{1,10}", "[!-~]{0,40}"), 0..6),
        reason in "[a-zA-Z ]{0,20}",
        trailing in proptest::collection::vec(any::<u8>(), 0..40),
    ) -> (Vec<u8>, Option<&'static str>, Vec<u8>) {
        let mut headers = vec![
            ("Upgrade".to_owned(), "websocket".to_owned()),
            ("Connection".to_owned(), "Upgrade".to_owned()),
            ("Sec-WebSocket-Accept".to_owned(), ACCEPT.to_owned()),
        ];
        if let Some(p) = subprotocol {
            headers.push(("Sec-WebSocket-Protocol".to_owned(), p.to_owned()));
        }
        headers.extend(extras);
        let mut text = format!("HTTP/1.1 101 {reason}\r\n");
        for (name, value) in headers {
            text.push_str(&format!("{name}: {value}\r\n"));
        }
        text.push_str("\r\n");
        (text.into_bytes(), subprotocol, trailing)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn any_split_of_a_valid_response_gives_the_same_response(
        (head, subprotocol, trailing) in valid_response(),
        points in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let request = ocpp_request();
        let mut bytes = head.clone();
        bytes.extend_from_slice(&trailing);
        let (whole, whole_trailing) = feed_chunks(&request, HandshakeConfig::default(), &[&bytes]);
        let response = whole.clone().unwrap().unwrap();
        prop_assert_eq!(response.as_bytes(), &head[..]);
        prop_assert_eq!(response.subprotocol(), subprotocol);
        prop_assert_eq!(&whole_trailing, &trailing);

        let (split, split_trailing) =
            feed_chunks(&request, HandshakeConfig::default(), &split_at_points(&bytes, &points));
        prop_assert_eq!(split, whole);
        prop_assert_eq!(split_trailing, trailing.clone());

        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        let (single, single_trailing) = feed_chunks(&request, HandshakeConfig::default(), &singles);
        prop_assert_eq!(single.unwrap().unwrap(), response);
        prop_assert_eq!(single_trailing, trailing);
    }

    #[test]
    fn any_split_of_any_bytes_gives_the_same_outcome(
        bytes in proptest::collection::vec(
            prop_oneof![Just(b'\r'), Just(b'\n'), Just(b':'), Just(b' '), any::<u8>()], 0..300),
        points in proptest::collection::vec(any::<usize>(), 0..12),
        cap in 16usize..400,
    ) {
        let config = HandshakeConfig::default().with_max_header_bytes(cap).with_max_headers(4);
        let request = ocpp_request();
        let whole = feed_chunks(&request, config, &[&bytes]);
        let split = feed_chunks(&request, config, &split_at_points(&bytes, &points));
        prop_assert_eq!(split, whole);
    }
}

// ---------------------------------------------------------------------------------------------
// Differential against tungstenite

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
#[allow(clippy::result_large_err)] // the callback's signature is tungstenite's
fn tungstenite_server_accepts_our_request_and_we_accept_its_101() {
    use tungstenite::handshake::server::{ErrorResponse, Request, Response};

    let request = ocpp_request()
        .with_port(9000)
        .with_basic_auth(b"CP001", b"secret")
        .unwrap();
    let mut wire = Vec::new();
    request.write(&mut wire);
    // (tungstenite's server refuses bytes pipelined behind the request: `JunkAfterRequest`;
    // the frame is sent after the handshake instead.)

    let stream = MemoryStream {
        input: Cursor::new(wire),
        output: Vec::new(),
    };
    let mut seen_protocols = String::new();
    let callback = |req: &Request, mut response: Response| -> Result<Response, ErrorResponse> {
        assert_eq!(req.uri().path(), "/ocpp/CP001");
        assert_eq!(req.headers()["Host"], "csms.example:9000");
        assert_eq!(req.headers()["Authorization"], "Basic Q1AwMDE6c2VjcmV0");
        seen_protocols = req.headers()["Sec-WebSocket-Protocol"]
            .to_str()
            .unwrap()
            .to_owned();
        response
            .headers_mut()
            .insert("Sec-WebSocket-Protocol", "ocpp1.6".parse().unwrap());
        Ok(response)
    };
    let mut socket = tungstenite::accept_hdr(stream, callback).expect("tungstenite accepts");
    assert_eq!(seen_protocols, "ocpp2.0.1, ocpp1.6");
    socket.get_mut().input = Cursor::new(vec![0x81, 0x82, 0, 0, 0, 0, b'h', b'i']);
    assert_eq!(socket.read().unwrap(), tungstenite::Message::text("hi"));

    let answer = std::mem::take(&mut socket.get_mut().output);
    let mut handshake = ClientHandshake::new(&request);
    let mut response = None;
    for (at, byte) in answer.iter().enumerate() {
        match handshake.handle_data(std::slice::from_ref(byte)).unwrap() {
            Progress::NeedMore => {}
            Progress::Complete { value, consumed } => {
                assert_eq!((consumed, at + 1), (1, answer.len()));
                response = Some(value);
            }
        }
    }
    let response = response.expect("complete 101");
    assert_eq!(response.subprotocol(), Some("ocpp1.6"));
}

#[test]
fn tungstenite_server_accepts_many_keys() {
    for seed in 0u8..32 {
        let key = SecWebSocketKey::from_bytes([seed.wrapping_mul(37); 16]);
        let request = ClientRequest::new("h", "/x", key).unwrap();
        let mut wire = Vec::new();
        request.write(&mut wire);
        let stream = MemoryStream {
            input: Cursor::new(wire),
            output: Vec::new(),
        };
        let mut socket = tungstenite::accept(stream).expect("tungstenite accepts");
        let answer = std::mem::take(&mut socket.get_mut().output);
        let mut handshake = ClientHandshake::new(&request);
        assert!(handshake.handle_data(&answer).unwrap().is_complete());
    }
}
