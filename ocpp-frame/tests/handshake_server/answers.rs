//! Answers: the 101, the rejections, and the bytes after the head handed on.

use super::*;

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
    let written = |rejection: RejectionResponse<'_>| {
        let mut out = Vec::new();
        rejection.write(&mut out);
        String::from_utf8(out).unwrap()
    };
    assert_eq!(
        written(RejectionResponse::unauthorized("OCPP CSMS").unwrap()),
        "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"OCPP CSMS\"\r\n\
         Connection: close\r\nContent-Length: 0\r\n\r\n"
    );
    assert_eq!(
        written(RejectionResponse::new(401).unwrap()),
        "HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
    );
    assert_eq!(
        written(RejectionResponse::new(404).unwrap().with_body("unknown charge point\n")),
        "HTTP/1.1 404 Not Found\r\nConnection: close\r\n\
         Content-Type: text/plain; charset=utf-8\r\nContent-Length: 21\r\n\r\nunknown charge point\n"
    );
    let retry: &[(&str, &[u8])] = &[("Retry-After", b"30")];
    assert_eq!(
        written(
            RejectionResponse::new(503)
                .unwrap()
                .with_headers(retry)
                .unwrap()
        ),
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 30\r\nConnection: close\r\n\
         Content-Length: 0\r\n\r\n"
    );
    assert_eq!(
        written(RejectionResponse::new(426).unwrap()),
        "HTTP/1.1 426 Upgrade Required\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
         Connection: Upgrade, close\r\nContent-Length: 0\r\n\r\n"
    );
    for status in [403, 400, 409, 500] {
        let text = written(RejectionResponse::new(status).unwrap());
        assert!(text.starts_with(&format!("HTTP/1.1 {status} {}\r\n", reason_phrase(status))));
    }
    assert_eq!(
        written(RejectionResponse::new(599).unwrap()).lines().next(),
        Some("HTTP/1.1 599 ")
    );
    for status in [0, 101, 200, 299, 600] {
        assert_eq!(
            RejectionResponse::new(status),
            Err(BuildError::InvalidStatus(status))
        );
    }
    assert_eq!(
        RejectionResponse::unauthorized("a\"b"),
        Err(BuildError::InvalidRealm)
    );
    assert_eq!(
        RejectionResponse::unauthorized("a\r\nb"),
        Err(BuildError::InvalidRealm)
    );
    let smuggle: &[(&str, &[u8])] = &[("Content-Length", b"5")];
    assert_eq!(
        RejectionResponse::new(403).unwrap().with_headers(smuggle),
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
