//! What the admin interface and the OCPP port refuse, on both servers, over real sockets:
//! cross-site and DNS-rebinding requests to the admin API (F1), idle and slow sockets on the
//! admin port and the OCPP handshake (F2), malformed Basic credentials (F3), an empty
//! `OCPP_ADMIN_TOKENS` (F4), and the limit on failed Basic authentication attempts.

mod common;

use base64::Engine as _;
use common::*;

const TOKIO: &str = env!("CARGO_BIN_EXE_tokio-server");
const MIO: &str = env!("CARGO_BIN_EXE_mio-server");

/// One raw HTTP request (`head` ends with the blank line, `body` follows): status, head,
/// body.
fn raw(addr: SocketAddr, head: &str, body: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect_timeout(&addr, WAIT).expect("connect");
    stream.set_read_timeout(Some(WAIT)).unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let status = response
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {response:?}"));
    let (head, body) = response.split_once("\r\n\r\n").expect("a head");
    (status, head.to_owned(), body.to_owned())
}

/// An admin request with `headers` (each ending in CRLF) and `body`.
fn admin(addr: SocketAddr, request: &str, headers: &str, body: &str) -> (u16, String, String) {
    let head = format!(
        "{request} HTTP/1.1\r\n{headers}Content-Length: {}\r\n\r\n",
        body.len()
    );
    raw(addr, &head, body)
}

fn boot(server: &ServerProcess, identity: &str) -> ChargePoint {
    let mut cp =
        ChargePoint::connect(server.ocpp, identity, &[OcppVersion::V1_6], None).expect("connect");
    cp.call(
        "BootNotification",
        r#"{"chargePointVendor":"V","chargePointModel":"M"}"#,
    );
    cp
}

fn metric(server: &ServerProcess, line_start: &str) -> u64 {
    let (status, text) = http(server.admin, "GET", "/metrics", "");
    assert_eq!(status, 200, "{text}");
    text.lines()
        .find_map(|line| line.strip_prefix(line_start))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {line_start} in\n{text}"))
}

// ---- F1: cross-site and rebinding requests ----

fn browsers_are_refused(binary: &str) {
    let server = ServerProcess::start(binary, &["--admin-host", "ops.example"]);
    let mut cp = boot(&server, "CP-F1");
    let port = server.admin.port();
    let own = format!("Host: {}\r\n", server.admin);
    let reset = "POST /chargepoints/CP-F1/call/Reset";
    let soft = r#"{"type":"Soft"}"#;

    // The CSRF of the probe: a page's `fetch(url, {method: "POST", mode: "no-cors", body})`,
    // text/plain, with the Origin and Sec-Fetch-Site a browser adds.
    let page = format!(
        "{own}Origin: http://evil.example\r\nSec-Fetch-Site: cross-site\r\n\
         Content-Type: text/plain;charset=UTF-8\r\n"
    );
    let (status, _, body) = admin(server.admin, reset, &page, soft);
    assert_eq!(status, 403, "{body}");
    assert!(json(&body)["error"].is_string(), "{body}");
    // An older browser without Fetch Metadata or Origin: text/plain is 415.
    let plain = format!("{own}Content-Type: text/plain\r\n");
    let (status, head, body) = admin(server.admin, reset, &plain, soft);
    assert_eq!(status, 415, "{head}\n{body}");
    assert!(body.contains("application/json"), "{body}");
    let (status, _, _) = admin(server.admin, reset, &own, soft);
    assert_eq!(status, 415, "a body without Content-Type");
    // DNS rebinding: the page's own name in Host, whatever else.
    let json_type = "Content-Type: application/json\r\n";
    let rebound = format!("Host: evil.example:{port}\r\n{json_type}");
    let (status, _, body) = admin(server.admin, reset, &rebound, soft);
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("Host"), "{body}");
    let (status, _, _) = admin(server.admin, "GET /chargepoints", &rebound, "");
    assert_eq!(status, 403, "a rebound read");
    let (status, _, _) = admin(server.admin, "GET /chargepoints", "", "");
    assert_eq!(status, 400, "no Host");
    let wrong_port = format!("Host: 127.0.0.1:{}\r\n", port.wrapping_add(1));
    let (status, _, _) = admin(server.admin, "GET /chargepoints", &wrong_port, "");
    assert_eq!(status, 403, "another port");
    // A foreign Origin alone; Sec-Fetch-Site cross-site or same-site alone.
    for extra in [
        "Origin: http://evil.example\r\n".to_owned(),
        format!("Origin: http://localhost:{}\r\n", port.wrapping_add(1)),
        "Origin: null\r\n".to_owned(),
        "Sec-Fetch-Site: cross-site\r\n".to_owned(),
        "Sec-Fetch-Site: same-site\r\n".to_owned(),
    ] {
        let (status, _, body) = admin(
            server.admin,
            "GET /chargepoints",
            &format!("{own}{extra}"),
            "",
        );
        assert_eq!(status, 403, "{extra:?}: {body}");
    }
    // Nothing reached the charge point.
    assert!(cp.next_event_within(Duration::from_millis(300)).is_none());

    // The admin's own page (same origin), a typed URL, a name given with --admin-host.
    for headers in [
        format!(
            "Host: localhost:{port}\r\nOrigin: http://localhost:{port}\r\nSec-Fetch-Site: same-origin\r\n"
        ),
        format!("Host: [::1]:{port}\r\nSec-Fetch-Site: none\r\n"),
        "Host: ops.example\r\n".to_owned(),
        format!("Host: OPS.example:{port}\r\nOrigin: https://ops.example\r\n"),
    ] {
        let (status, _, body) = admin(server.admin, "GET /chargepoints", &headers, "");
        assert_eq!(status, 200, "{headers:?}: {body}");
    }
    let same_origin = format!(
        "Host: 127.0.0.1:{port}\r\nOrigin: http://127.0.0.1:{port}\r\n\
         Sec-Fetch-Site: same-origin\r\nContent-Type: application/json; charset=utf-8\r\n"
    );
    let addr = server.admin;
    let command = std::thread::spawn(move || admin(addr, reset, &same_origin, soft));
    let (id, request) = cp.expect_call();
    assert_eq!(request.action(), "Reset");
    cp.respond(&id, cluster::reset_accepted());
    let (status, _, body) = command.join().unwrap();
    assert_eq!(status, 200, "{body}");

    assert!(metric(&server, "ocpp_admin_refused_total{reason=\"host\"} ") >= 4);
    assert!(metric(&server, "ocpp_admin_refused_total{reason=\"origin\"} ") >= 3);
    assert!(metric(&server, "ocpp_admin_refused_total{reason=\"fetch_site\"} ") >= 3);
    assert!(
        metric(
            &server,
            "ocpp_admin_refused_total{reason=\"content_type\"} "
        ) >= 2
    );
}

#[test]
fn mio_refuses_cross_site_and_rebinding_requests() {
    browsers_are_refused(MIO);
}

#[test]
fn tokio_refuses_cross_site_and_rebinding_requests() {
    browsers_are_refused(TOKIO);
}

// ---- the route table: unknown paths, wrong methods ----

/// Both servers route by one table: a known route answers, an unknown path is 404, another
/// method on a known path 405 with `Allow` (also through tokio-server's axum router), and a
/// path with a trailing slash is the route without it.
fn routes_answer_by_the_table(binary: &str) {
    let server = ServerProcess::start(binary, &[]);
    let host = format!("Host: {}\r\n", server.admin);
    let admin = |request: &str| admin(server.admin, request, &host, "");
    let (status, _, body) = admin("GET /chargepoints");
    assert_eq!((status, body.as_str()), (200, "[]"));
    let (status, _, _) = admin("GET /chargepoints/");
    assert_eq!(status, 200);
    let (status, _, body) = admin("GET /nothing/here");
    assert_eq!(status, 404, "{body}");
    let (status, head, body) = admin("PATCH /chargepoints/CP1/boot");
    assert_eq!(status, 405, "{body}");
    let allow = head.lines().find_map(|line| {
        line.to_ascii_lowercase()
            .strip_prefix("allow:")
            .map(|v| v.trim().to_owned())
    });
    assert_eq!(allow.as_deref(), Some("get, put, delete"), "{head}");
    let (status, _, _) = admin("DELETE /chargepoints");
    assert_eq!(status, 405);
    let (status, _, body) = admin("GET /tokens/T1");
    assert_eq!(status, 404, "{body}");
    let (status, _, body) = admin("POST /chargepoints/CP9/call/Reset");
    assert_eq!(status, 404, "{body}");
}

#[test]
fn mio_routes_answer_by_the_table() {
    routes_answer_by_the_table(MIO);
}

#[test]
fn tokio_routes_answer_by_the_table() {
    routes_answer_by_the_table(TOKIO);
}

// ---- F2: idle and slow sockets ----

/// Whether the server closed `stream` (EOF, a reset, or an answer then EOF) within `within`.
fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    stream
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let deadline = Instant::now() + within;
    let mut buf = [0u8; 512];
    while Instant::now() < deadline {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {} // an answer (408, 503): read on until the end
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => return true,
        }
    }
    false
}

fn idle_sockets_keep_no_one_out(binary: &str) {
    // A long header timeout: the sockets beyond the limit are closed for the limit, not by
    // their timeout.
    let server = ServerProcess::start(
        binary,
        &[
            "--admin-max-connections",
            "8",
            "--admin-header-timeout-ms",
            "60000",
        ],
    );
    let mut idle: Vec<TcpStream> = (0..40)
        .map(|_| TcpStream::connect_timeout(&server.admin, WAIT).expect("idle connect"))
        .collect();
    // All but the newest 8 are closed (bounded wait).
    let deadline = Instant::now() + WAIT;
    let mut closed = 0;
    for stream in idle.iter_mut().take(32) {
        let left = deadline.saturating_duration_since(Instant::now());
        if closed_within(stream, left) {
            closed += 1;
        }
    }
    assert_eq!(closed, 32, "the idle sockets beyond the limit were closed");
    // The operator gets in, and so does a charge point, while 8 idle sockets hold their
    // slots.
    let (status, body) = http(server.admin, "GET", "/chargepoints", "");
    assert_eq!(status, 200, "{body}");
    let _cp = boot(&server, "CP-F2");
    let (status, body) = http(server.admin, "GET", "/chargepoints/CP-F2", "");
    assert_eq!(status, 200, "{body}");
    assert!(metric(&server, "ocpp_admin_refused_total{reason=\"limit\"} ") >= 32);
    drop(idle);
}

#[test]
fn mio_idle_admin_sockets_keep_no_one_out() {
    idle_sockets_keep_no_one_out(MIO);
}

#[test]
fn tokio_idle_admin_sockets_keep_no_one_out() {
    idle_sockets_keep_no_one_out(TOKIO);
}

fn slow_sockets_are_closed(binary: &str) {
    let server = ServerProcess::start(
        binary,
        &[
            "--admin-header-timeout-ms",
            "1000",
            "--admin-body-timeout-ms",
            "1000",
            "--handshake-timeout-ms",
            "1000",
        ],
    );
    let admin = server.admin;
    let connect = |addr: SocketAddr, bytes: &[u8]| {
        let mut stream = TcpStream::connect_timeout(&addr, WAIT).expect("connect");
        stream.write_all(bytes).unwrap();
        stream
    };
    let started = Instant::now();
    let mut sockets = [
        // Admin: nothing, half a head, a whole head and half its body.
        connect(admin, b""),
        connect(admin, b"GET /chargepoints HTTP/1.1\r\nHo"),
        connect(
            admin,
            format!(
                "PUT /tokens/T1 HTTP/1.1\r\nHost: {admin}\r\nContent-Type: application/json\r\n\
                 Content-Length: 100\r\n\r\n{{\"status\""
            )
            .as_bytes(),
        ),
        // OCPP: nothing, half an upgrade request.
        connect(server.ocpp, b""),
        connect(server.ocpp, b"GET /ocpp/CP-SLOW HTTP/1.1\r\nHost: x\r\n"),
    ];
    for (n, stream) in sockets.iter_mut().enumerate() {
        assert!(closed_within(stream, WAIT), "socket {n} still open");
    }
    // Not before the timeout (1 s; a generous margin below it), well before WAIT.
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(900), "{took:?}");
    assert!(metric(&server, "ocpp_admin_refused_total{reason=\"timeout\"} ") >= 3);
    if binary == MIO {
        // tokio-server's CSMS hears only of connections that reached the upgrade (ocpp-tokio
        // calls no handler for one that never did): the sockets closed is what counts.
        assert!(metric(&server, "ocpp_handshake_timeouts_total ") >= 2);
    }
    // The server still serves.
    let (status, body) = http(admin, "GET", "/chargepoints", "");
    assert_eq!(status, 200, "{body}");
}

#[test]
fn mio_closes_slow_admin_sockets_and_handshakes() {
    slow_sockets_are_closed(MIO);
}

#[test]
fn tokio_closes_slow_admin_sockets_and_handshakes() {
    slow_sockets_are_closed(TOKIO);
}

// ---- F3 and the attempt limit: Basic authentication on the OCPP port ----

const RIGHT: &str = "right-password-0001";

fn credentials_file(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("admin-surface-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("passwords");
    std::fs::write(&file, format!("CP-LIM:{RIGHT}\nCP-F3:{RIGHT}\n")).unwrap();
    file
}

/// An upgrade request for `identity` from `from` (a loopback address of the test's choice),
/// with `authorization`: the response head.
fn upgrade(ocpp: SocketAddr, from: &str, identity: &str, authorization: Option<&str>) -> String {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    let local: SocketAddr = format!("{from}:0").parse().unwrap();
    socket.bind(&local.into()).expect("bind the source address");
    socket.connect_timeout(&ocpp.into(), WAIT).expect("connect");
    let mut stream: TcpStream = socket.into();
    stream.set_read_timeout(Some(WAIT)).unwrap();
    let authorization = authorization
        .map(|value| format!("Authorization: {value}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "GET /ocpp/{identity} HTTP/1.1\r\nHost: {ocpp}\r\nUpgrade: websocket\r\n\
         Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: ocpp1.6\r\n{authorization}\r\n"
    )
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&head).into_owned()
}

fn basic(user_password: &[u8]) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(user_password)
    )
}

fn malformed_basic_gets_a_challenge(binary: &str) {
    let file = credentials_file(&format!("f3-{}", binary.len()));
    let server = ServerProcess::start(binary, &["--basic-auth", file.to_str().unwrap()]);
    for authorization in [
        "Basic !!!".to_owned(),
        "Basic".to_owned(),
        basic(b"CP-F3"),                      // no colon
        basic(b"\xff\xfe:\xc3\x28-password"), // not UTF-8
        basic(b"CP-F3:wrong-password"),
    ] {
        let head = upgrade(server.ocpp, "127.0.0.1", "CP-F3", Some(&authorization));
        assert!(
            head.starts_with("HTTP/1.1 401 "),
            "{authorization:?}: {head}"
        );
        assert!(
            head.contains("\r\nWWW-Authenticate: Basic realm=\"OCPP\"\r\n"),
            "{authorization:?}: {head}"
        );
    }
    let head = upgrade(
        server.ocpp,
        "127.0.0.1",
        "CP-F3",
        Some(&basic(b"CP-F3:right-password-0001")),
    );
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    let _ = std::fs::remove_dir_all(file.parent().unwrap());
}

#[test]
fn mio_malformed_basic_credentials_get_a_challenge() {
    malformed_basic_gets_a_challenge(MIO);
}

#[test]
fn tokio_malformed_basic_credentials_get_a_challenge() {
    malformed_basic_gets_a_challenge(TOKIO);
}

fn failed_attempts_are_limited(binary: &str) {
    let file = credentials_file(&format!("limit-{}", binary.len()));
    let server = ServerProcess::start(binary, &["--basic-auth", file.to_str().unwrap()]);
    let wrong = basic(b"CP-LIM:wrong-password");
    let right = basic(format!("CP-LIM:{RIGHT}").as_bytes());
    for n in 0..5 {
        let head = upgrade(server.ocpp, "127.0.0.1", "CP-LIM", Some(&wrong));
        assert!(head.starts_with("HTTP/1.1 401 "), "attempt {n}: {head}");
    }
    // Locked: this address gets 429 with Retry-After, even with the right password.
    for authorization in [&wrong, &right] {
        let head = upgrade(server.ocpp, "127.0.0.1", "CP-LIM", Some(authorization));
        assert!(head.starts_with("HTTP/1.1 429 "), "{head}");
        let retry_after: u64 = head
            .lines()
            .find_map(|line| line.strip_prefix("Retry-After: "))
            .and_then(|value| value.trim().parse().ok())
            .unwrap_or_else(|| panic!("no Retry-After in {head}"));
        assert!((1..=11).contains(&retry_after), "{retry_after}");
    }
    // The station, from an address that has not failed, gets in with its password (the
    // identity's lockout refuses only addresses that failed).
    let head = upgrade(server.ocpp, "127.0.0.2", "CP-LIM", Some(&right));
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    // A wrong password from there is still checked (401), then that address is refused for
    // the locked identity.
    let head = upgrade(server.ocpp, "127.0.0.3", "CP-LIM", Some(&wrong));
    assert!(head.starts_with("HTTP/1.1 401 "), "{head}");
    let head = upgrade(server.ocpp, "127.0.0.3", "CP-LIM", Some(&right));
    assert!(head.starts_with("HTTP/1.1 429 "), "{head}");
    assert_eq!(metric(&server, "ocpp_auth_failures_total "), 6);
    assert_eq!(metric(&server, "ocpp_auth_throttled_total "), 3);
    let _ = std::fs::remove_dir_all(file.parent().unwrap());
}

#[test]
fn mio_limits_failed_basic_attempts() {
    failed_attempts_are_limited(MIO);
}

#[test]
fn tokio_limits_failed_basic_attempts() {
    failed_attempts_are_limited(TOKIO);
}

// ---- F4: an empty OCPP_ADMIN_TOKENS ----

fn empty_token_variable_is_refused(binary: &str) {
    for value in ["", "  \n", "# no token here\n\n"] {
        let mut child = Command::new(binary)
            .args(["--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0"])
            .env("OCPP_DATABASE_URL", "memory")
            .env("OCPP_ADMIN_TOKENS", value)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start");
        let deadline = Instant::now() + WAIT;
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("{binary} started with OCPP_ADMIN_TOKENS={value:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stdout = String::new();
        let mut stderr = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .unwrap();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        assert_eq!(status.code(), Some(1), "{value:?}: {stderr}");
        assert!(!stdout.contains("listening"), "{stdout}");
        assert!(
            stderr.contains("OCPP_ADMIN_TOKENS") && stderr.contains("no admin token"),
            "{stderr}"
        );
    }
}

#[test]
fn mio_refuses_an_empty_token_variable() {
    empty_token_variable_is_refused(MIO);
}

#[test]
fn tokio_refuses_an_empty_token_variable() {
    empty_token_variable_is_refused(TOKIO);
}
