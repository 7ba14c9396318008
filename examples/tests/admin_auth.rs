//! The admin API lets no one in who does not belong (`--admin-token-file`, `OCPP_ADMIN_TOKENS`,
//! `--metrics-public`), on both servers: every route answers 401 with `WWW-Authenticate:
//! Bearer` without a right token, a command with one reaches the charge point, and a server
//! whose admin interface would answer other hosts without a token does not start.

mod common;

use common::*;

const TOKIO: &str = env!("CARGO_BIN_EXE_tokio-server");
const MIO: &str = env!("CARGO_BIN_EXE_mio-server");

const TOKEN: &str = "operator-token-0123456789";
const ENV_TOKEN: &str = "from-the-environment-0123";

/// One admin request with `headers`; the status, the whole head and the body.
fn ask(admin: SocketAddr, head: &str, headers: &str, body: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect_timeout(&admin, WAIT).expect("admin connect");
    stream.set_read_timeout(Some(WAIT)).unwrap();
    write!(
        stream,
        "{head} HTTP/1.1\r\nHost: {admin}\r\nContent-Type: application/json\r\n\
         {headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("response");
    let status = response[9..12].parse().expect("status");
    let (head, body) = response.split_once("\r\n\r\n").expect("a head");
    (status, head.to_owned(), body.to_owned())
}

fn bearer(token: &str) -> String {
    format!("Authorization: Bearer {token}\r\n")
}

fn tokens_file(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("admin-auth-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("tokens");
    std::fs::write(&file, format!("# the operators\n{TOKEN}\n")).unwrap();
    file
}

fn start(binary: &str, extra: &[&str]) -> ServerProcess {
    // The environment's token is the second way in (OCPP_ADMIN_TOKENS), beside the file.
    ServerProcess::start_with_env(binary, extra, &[("OCPP_ADMIN_TOKENS", ENV_TOKEN)])
}

fn every_route_needs_a_token(binary: &str) {
    let file = tokens_file(binary.rsplit('/').next().unwrap_or("server"));
    let server = start(binary, &["--admin-token-file", file.to_str().unwrap()]);
    let mut cp = ChargePoint::connect(server.ocpp, "CP-AUTH", &[OcppVersion::V1_6], None)
        .expect("connected");
    cp.call(
        "BootNotification",
        r#"{"chargePointVendor":"V","chargePointModel":"M"}"#,
    );

    for (method, path, body) in [
        ("GET", "/chargepoints", ""),
        ("GET", "/chargepoints/CP-AUTH", ""),
        ("GET", "/chargepoints/CP-AUTH/boot", ""),
        ("PUT", "/tokens/TAG1", r#"{"status":"Accepted"}"#),
        ("POST", "/chargepoints/CP-AUTH/call/ClearCache", "{}"),
        ("GET", "/metrics", ""),
        ("GET", "/no/such/route", ""),
    ] {
        let head = format!("{method} {path}");
        let (status, response_head, _) = ask(server.admin, &head, "", body);
        assert_eq!(status, 401, "{head}: {response_head}");
        assert!(
            response_head.contains("WWW-Authenticate: Bearer realm=\"ocpp-admin\"")
                || response_head.contains("www-authenticate: Bearer realm=\"ocpp-admin\""),
            "{head}: {response_head}"
        );
        for wrong in [
            bearer("operator-token-012345678"),
            bearer("operator-token-0123456789x"),
            format!("Authorization: Basic {TOKEN}\r\n"),
        ] {
            let (status, response_head, _) = ask(server.admin, &head, &wrong, body);
            assert_eq!(status, 401, "{head} {wrong:?}: {response_head}");
            assert!(
                response_head
                    .to_ascii_lowercase()
                    .contains("error=\"invalid_token\"")
                    || wrong.contains("Basic"),
                "{head}: {response_head}"
            );
        }
    }
    // The CALL never went out: nothing is waiting for the charge point.
    assert!(cp.next_event_within(Duration::from_millis(200)).is_none());

    // With a token: the same routes work, commands reach the charge point.
    for token in [TOKEN, ENV_TOKEN] {
        let (status, _, body) = ask(server.admin, "GET /chargepoints", &bearer(token), "");
        assert_eq!(status, 200, "{body}");
        assert!(body.contains("CP-AUTH"), "{body}");
    }
    let admin = server.admin;
    let command = std::thread::spawn(move || {
        ask(
            admin,
            "POST /chargepoints/CP-AUTH/call/ClearCache",
            &bearer(TOKEN),
            "{}",
        )
    });
    let (id, request) = cp.expect_call();
    assert_eq!(request.action(), "ClearCache");
    cp.respond_error(&id, ocpp_messages::error_code::ErrorCode::NotSupported);
    // The charge point's own CALLERROR: the command went through.
    let (status, _, body) = command.join().unwrap();
    assert_eq!(status, 502, "{body}");
    assert!(body.contains("NotSupported"), "{body}");
    let (status, _, body) = ask(server.admin, "GET /metrics", &bearer(TOKEN), "");
    assert_eq!(status, 200, "{body}");
    let _ = std::fs::remove_dir_all(file.parent().unwrap());
}

fn metrics_public(binary: &str) {
    let file = tokens_file(&format!(
        "metrics-{}",
        binary.rsplit('/').next().unwrap_or("server")
    ));
    let server = start(
        binary,
        &[
            "--admin-token-file",
            file.to_str().unwrap(),
            "--metrics-public",
        ],
    );
    let (status, _, body) = ask(server.admin, "GET /metrics", "", "");
    assert_eq!(status, 200, "{body}");
    let (status, _, _) = ask(server.admin, "GET /chargepoints", "", "");
    assert_eq!(status, 401);
    let _ = std::fs::remove_dir_all(file.parent().unwrap());
}

/// An admin interface on every address with no token: a clear message and exit code 1,
/// before anything listens.
fn refuses_an_exposed_admin_interface(binary: &str) {
    let output = Command::new(binary)
        .env("OCPP_DATABASE_URL", "memory")
        .args(["--listen", "127.0.0.1:0", "--admin", "0.0.0.0:0"])
        .env_remove("OCPP_ADMIN_TOKENS")
        .env_remove("OCPP_ADMIN_TOKEN_FILE")
        .env("RUST_LOG", "off")
        .output()
        .expect("run the server");
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("can be reached from other hosts and has no token"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty(), "it listened: {output:?}");
    // A bad token file is refused the same way.
    let output = Command::new(binary)
        .env("OCPP_DATABASE_URL", "memory")
        .args(["--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0"])
        .args(["--admin-token-file", "/nonexistent/admin-tokens"])
        .env("RUST_LOG", "off")
        .output()
        .expect("run the server");
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cannot read the admin tokens"), "{stderr}");
}

#[test]
fn mio_server_every_admin_route_needs_a_token() {
    every_route_needs_a_token(MIO);
}

#[test]
fn tokio_server_every_admin_route_needs_a_token() {
    every_route_needs_a_token(TOKIO);
}

#[test]
fn mio_server_metrics_may_be_public() {
    metrics_public(MIO);
}

#[test]
fn tokio_server_metrics_may_be_public() {
    metrics_public(TOKIO);
}

#[test]
fn mio_server_refuses_an_exposed_admin_interface() {
    refuses_an_exposed_admin_interface(MIO);
}

#[test]
fn tokio_server_refuses_an_exposed_admin_interface() {
    refuses_an_exposed_admin_interface(TOKIO);
}
