//! Differential against tungstenite: its requests accepted, our 101 satisfying its client.

use super::*;

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
