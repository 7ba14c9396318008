//! Split independence: the outcome and the bytes after the head do not depend on how the
//! request is cut into reads (proptest).

use super::*;

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
