//! Behaviour of the server side of the opening handshake (RFC 6455 §4.2) through the public API.

use std::io::{self, Cursor, Read, Write};

use base64::Engine as _;
use ocpp_frame::handshake::{
    reason_phrase, Accept, BasicAuthError, BuildError, HandshakeConfig, HandshakeError, Progress,
    RejectionResponse, SecWebSocketAccept, SecWebSocketKey, ServerHandshake, UpgradeRequest,
};
use proptest::prelude::*;

mod against_tungstenite;
mod answers;
mod basic_credentials;
mod refusals;
mod split_independence;
mod valid_request;
mod vectors;

/// Extra headers as `Accept` and `RejectionResponse` take them.
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
