//! `mio-server`, `tokio-server` and `uring-server` end to end, each scenario written once and
//! run against each:
//! the built binary on free loopback ports, charge points built on `ocpp-proto`'s
//! charge-point side over blocking std sockets, the admin API over plain HTTP. Every wait is
//! bounded; the server is stopped by PID when a test ends.
//!
//! A scenario is a `fn scenario(kind: Kind)`; [`on_both_servers!`] runs it as three tests,
//! `mio_server::scenario`, `tokio_server::scenario` and `uring_server::scenario` (the naming of
//! the OCTT tests), so a failure names the server. What differs between the servers is data on
//! [`Kind`]. No scenario here needs TLS or a cluster (which uring-server refuses), so
//! uring-server runs them all; off Linux its tests say they are skipped and pass.

mod common;

use common::*;

/// Which server binary a scenario runs against.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Mio,
    Tokio,
    Uring,
}

/// The crowd scenario's load: `clients` threads, each holding `per_client` charge points.
struct Crowd {
    clients: usize,
    per_client: usize,
}

impl Kind {
    fn binary(self) -> &'static str {
        match self {
            Kind::Mio => env!("CARGO_BIN_EXE_mio-server"),
            Kind::Tokio => env!("CARGO_BIN_EXE_tokio-server"),
            Kind::Uring => env!("CARGO_BIN_EXE_uring-server"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Mio => "mio-server",
            Kind::Tokio => "tokio-server",
            Kind::Uring => "uring-server",
        }
    }

    /// 100 charge points on mio-server's and uring-server's two loops (four sockets' worth of
    /// kernel spreading), 50 on tokio-server's two worker threads.
    fn crowd(self) -> Crowd {
        match self {
            Kind::Mio | Kind::Uring => Crowd {
                clients: 4,
                per_client: 25,
            },
            Kind::Tokio => Crowd {
                clients: 5,
                per_client: 10,
            },
        }
    }

    fn start(self, extra: &[&str]) -> ServerProcess {
        ServerProcess::start(self.binary(), extra)
    }
}

/// Runs each named scenario (a `fn scenario(kind: Kind)`) as three tests,
/// `mio_server::scenario`, `tokio_server::scenario` and `uring_server::scenario` (Linux only:
/// elsewhere it prints that it is skipped).
macro_rules! on_both_servers {
    ($($scenario:ident),* $(,)?) => {
        mod mio_server {
            $(#[test] fn $scenario() { super::$scenario(super::Kind::Mio) })*
        }
        mod tokio_server {
            $(#[test] fn $scenario() { super::$scenario(super::Kind::Tokio) })*
        }
        mod uring_server {
            $(#[test] fn $scenario() {
                if cfg!(target_os = "linux") {
                    super::$scenario(super::Kind::Uring)
                } else {
                    eprintln!("skipped: uring-server needs io_uring (Linux)");
                }
            })*
        }
    };
}

on_both_servers!(
    v1_6_charging_session_and_admin_commands,
    v2_0_1_charging_session,
    basic_auth_rejects_bad_credentials_with_401,
    concurrent_charge_points_on_two_threads,
    push_interval_sends_numbered_data_transfers,
    a_reconnect_replaces_the_old_connection,
    sigterm_closes_connections_with_1001_and_exits,
    sigterm_answers_a_waiting_admin_command_and_closes_with_1001,
    sockets_open_counts_every_socket_until_it_closes,
    bad_input_gets_the_same_answers_as_mio_server,
    many_pipelined_calls_are_all_answered_in_order,
    a_peer_that_does_not_read_is_paused_then_answered,
);

/// An admin command on its own thread: the HTTP request waits for the charge point's answer.
fn command(
    admin: SocketAddr,
    path: String,
    body: &'static str,
) -> std::thread::JoinHandle<(u16, String)> {
    std::thread::spawn(move || http(admin, "POST", &path, body))
}

/// A `Reset` with `payload` through the admin API: checks `cp` receives it, answers with
/// `response`, checks the API's 200 and returns its `result`.
fn reset(
    server: &ServerProcess,
    cp: &mut ChargePoint,
    identity: &str,
    payload: &'static str,
    response: Response,
) -> Value {
    let reset = command(
        server.admin,
        format!("/chargepoints/{identity}/call/Reset"),
        payload,
    );
    let (id, request) = cp.expect_call();
    assert_eq!(request.action(), "Reset");
    cp.respond(&id, response);
    let (status, body) = reset.join().unwrap();
    assert_eq!(status, 200, "{identity}: {body}");
    json(&body)["result"].clone()
}

/// Reads until the connection ends and checks the server closed it with `code`.
fn expect_closed_with(cp: &mut ChargePoint, code: ocpp_frame::CloseCode) {
    loop {
        if let Event::Closed(closed) = cp.next_event() {
            match closed.reason {
                CloseReason::PeerClosed { code: got, .. } => assert_eq!(got, Some(code)),
                other => panic!("{other:?}"),
            }
            return;
        }
    }
}

/// The `/chargepoints` list.
fn charge_points(server: &ServerProcess) -> Vec<Value> {
    let (status, body) = http(server.admin, "GET", "/chargepoints", "");
    assert_eq!(status, 200, "{body}");
    match json(&body) {
        Value::Array(list) => list,
        other => panic!("not a list: {other}"),
    }
}

fn metrics(server: &ServerProcess) -> String {
    let (status, metrics) = http(server.admin, "GET", "/metrics", "");
    assert_eq!(status, 200);
    metrics
}

fn v1_6_charging_session_and_admin_commands(kind: Kind) {
    let server = kind.start(&[]);
    let mut cp = ChargePoint::connect(server.ocpp, "CP1", &[OcppVersion::V1_6], None).unwrap();
    assert_eq!(cp.version, OcppVersion::V1_6);
    let boot = cp.call(
        "BootNotification",
        r#"{"chargePointVendor":"ACME","chargePointModel":"Fast-50"}"#,
    );
    assert_eq!(boot["status"], "Accepted");
    assert_eq!(boot["interval"], 300);
    assert!(cp.call("Heartbeat", "{}")["currentTime"].is_string());
    cp.call(
        "StatusNotification",
        r#"{"connectorId":1,"errorCode":"NoError","status":"Preparing"}"#,
    );
    assert_eq!(
        cp.call("Authorize", r#"{"idTag":"TAG1"}"#)["idTagInfo"]["status"],
        "Accepted"
    );
    let start = cp.call(
        "StartTransaction",
        r#"{"connectorId":1,"idTag":"TAG1","meterStart":100,"timestamp":"2026-11-29T12:00:00Z"}"#,
    );
    let tx = start["transactionId"].as_i64().unwrap();
    cp.call(
        "MeterValues",
        &format!(
            r#"{{"connectorId":1,"transactionId":{tx},"meterValue":[{{"timestamp":"2026-11-29T12:01:00Z","sampledValue":[{{"value":"600"}}]}}]}}"#
        ),
    );
    let state = charge_point_state(&server, "CP1");
    assert_eq!(state["version"], "1.6");
    assert_eq!(state["transactions"][0]["energy_wh"], 500.0);
    cp.call(
        "StopTransaction",
        &format!(r#"{{"transactionId":{tx},"meterStop":1100,"timestamp":"2026-11-29T12:30:00Z"}}"#),
    );
    let state = charge_point_state(&server, "CP1");
    assert_eq!(state["transactions"][0]["energy_wh"], 1000.0);
    assert!(state["transactions"][0]["ended"].is_string());

    let list = charge_points(&server);
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["identity"], "CP1");
    assert_eq!(list[0]["status"], "Accepted");
    assert!(list[0]["connected_since"].is_string());

    // A command down: the HTTP request waits for the charge point's answer.
    let accepted = decode_command(OcppVersion::V1_6, "Reset", "{}").err();
    assert!(accepted.is_some(), "an empty Reset does not validate");
    let accepted = Response::from(ocpp_messages::v1_6::Response::from(
        ocpp_messages::v1_6::ResetResponse {
            status: ocpp_messages::v1_6::ResetStatus::Accepted,
        },
    ));
    let result = reset(&server, &mut cp, "CP1", r#"{"type":"Soft"}"#, accepted);
    assert_eq!(result["status"], "Accepted");

    // A CALLERROR from the charge point comes back as 502.
    let transfer = command(
        server.admin,
        "/chargepoints/CP1/call/DataTransfer".into(),
        r#"{"vendorId":"x"}"#,
    );
    let (id, _) = cp.expect_call();
    cp.respond_error(&id, ocpp_messages::error_code::ErrorCode::NotSupported);
    let (status, body) = transfer.join().unwrap();
    assert_eq!(status, 502, "{body}");
    assert_eq!(json(&body)["error"]["code"], "NotSupported");

    // Bad payload: 400; unknown identity: 404; unknown path: 404.
    for (method, path, body, expected) in [
        (
            "POST",
            "/chargepoints/CP1/call/Reset",
            r#"{"type":"Sometimes"}"#,
            400,
        ),
        (
            "POST",
            "/chargepoints/NOPE/call/Reset",
            r#"{"type":"Soft"}"#,
            404,
        ),
        ("GET", "/nothing", "", 404),
    ] {
        let (status, _) = http(server.admin, method, path, body);
        assert_eq!(status, expected, "{method} {path}");
    }

    let metrics = metrics(&server);
    assert!(
        metrics.contains("ocpp_charge_points_connected 1\n"),
        "{metrics}"
    );
    assert!(metrics.contains("ocpp_messages_in_total "), "{metrics}");
    cp.close();
}

fn v2_0_1_charging_session(kind: Kind) {
    let server = kind.start(&[]);
    let mut cp = ChargePoint::connect(
        server.ocpp,
        "CS201",
        &[OcppVersion::V2_0_1, OcppVersion::V1_6],
        None,
    )
    .unwrap();
    assert_eq!(cp.version, OcppVersion::V2_0_1);
    let boot = cp.call(
        "BootNotification",
        r#"{"chargingStation":{"vendorName":"ACME","model":"AC-22"},"reason":"PowerUp"}"#,
    );
    assert_eq!(boot["status"], "Accepted");
    cp.call("Heartbeat", "{}");
    cp.call(
        "StatusNotification",
        r#"{"timestamp":"2026-11-29T12:00:00Z","connectorStatus":"Occupied","evseId":1,"connectorId":1}"#,
    );
    let event = |kind: &str, seq: u32, wh: u32| {
        format!(
            r#"{{"eventType":"{kind}","timestamp":"2026-11-29T12:00:00Z","triggerReason":"Authorized","seqNo":{seq},
            "transactionInfo":{{"transactionId":"TX-9"}},"evse":{{"id":1,"connectorId":1}},
            "idToken":{{"idToken":"TAG1","type":"ISO14443"}},
            "meterValue":[{{"timestamp":"2026-11-29T12:00:00Z","sampledValue":[{{"value":{wh}}}]}}]}}"#
        )
    };
    let started = cp.call("TransactionEvent", &event("Started", 0, 0));
    assert_eq!(started["idTokenInfo"]["status"], "Accepted");
    cp.call("TransactionEvent", &event("Updated", 1, 2500));
    cp.call("TransactionEvent", &event("Ended", 2, 7000));
    let state = charge_point_state(&server, "CS201");
    assert_eq!(state["version"], "2.0.1");
    assert_eq!(state["connectors"]["1/1"]["status"], "Occupied");
    let tx = &state["transactions"][0];
    assert_eq!(tx["id"], "TX-9");
    assert_eq!(tx["energy_wh"], 7000.0);
    assert!(tx["ended"].is_string());

    // A command down on 2.0.1.
    let scheduled =
        ocpp_messages::v2_0_1::decode_result("Reset", r#"{"status":"Scheduled"}"#).unwrap();
    let result = reset(
        &server,
        &mut cp,
        "CS201",
        r#"{"type":"Immediate"}"#,
        scheduled.into(),
    );
    assert_eq!(result["status"], "Scheduled");
    cp.close();
}

fn basic_auth_rejects_bad_credentials_with_401(kind: Kind) {
    let dir = std::env::temp_dir().join(format!("{}-auth-{}", kind.name(), std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("passwords");
    std::fs::write(&file, "CP1:0123456789abcdef\n").unwrap();
    let server = kind.start(&["--basic-auth", file.to_str().unwrap()]);
    let v16 = [OcppVersion::V1_6];
    let refused = |reason: CloseReason| match reason {
        CloseReason::UpgradeRefused { status, .. } => status,
        other => panic!("{other:?}"),
    };
    let wrong = ChargePoint::connect(server.ocpp, "CP1", &v16, Some(b"wrong-password-123")).err();
    assert_eq!(wrong.map(refused), Some(Some(401)));
    let missing = ChargePoint::connect(server.ocpp, "CP1", &v16, None).err();
    assert_eq!(missing.map(refused), Some(Some(401)));
    let unknown = ChargePoint::connect(server.ocpp, "CP2", &v16, Some(b"0123456789abcdef")).err();
    assert_eq!(unknown.map(refused), Some(Some(401)));
    let mut good =
        ChargePoint::connect(server.ocpp, "CP1", &v16, Some(b"0123456789abcdef")).unwrap();
    good.call("Heartbeat", "{}");
    let metrics = metrics(&server);
    assert!(
        metrics.contains("ocpp_upgrades_rejected_total 3\n"),
        "{metrics}"
    );
    good.close();
    let _ = std::fs::remove_dir_all(&dir);
}

/// [`Kind::crowd`]'s charge points, booted (1.6 and 2.0.1 alternately) and held open from
/// their client threads, then commands to four more charge points, on `--threads 2`.
fn concurrent_charge_points_on_two_threads(kind: Kind) {
    let Crowd {
        clients,
        per_client,
    } = kind.crowd();
    let server = kind.start(&["--threads", "2"]);
    let addr = server.ocpp;
    let (ready_tx, ready_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let release_rx = Arc::new(std::sync::Mutex::new(release_rx));
    let threads: Vec<_> = (0..clients)
        .map(|t| {
            let ready_tx = ready_tx.clone();
            let release_rx = Arc::clone(&release_rx);
            std::thread::spawn(move || {
                let mut cps: Vec<ChargePoint> = (0..per_client)
                    .map(|i| {
                        let version = if i % 2 == 0 {
                            OcppVersion::V1_6
                        } else {
                            OcppVersion::V2_0_1
                        };
                        let identity = format!("CP-{t}-{i}");
                        let mut cp = ChargePoint::connect(addr, &identity, &[version], None)
                            .unwrap();
                        let boot = if version == OcppVersion::V1_6 {
                            r#"{"chargePointVendor":"ACME","chargePointModel":"M"}"#
                        } else {
                            r#"{"chargingStation":{"vendorName":"ACME","model":"M"},"reason":"PowerUp"}"#
                        };
                        assert_eq!(cp.call("BootNotification", boot)["status"], "Accepted");
                        cp
                    })
                    .collect();
                for cp in &mut cps {
                    cp.call("Heartbeat", "{}");
                }
                ready_tx.send(()).unwrap();
                // Hold every connection open until the main thread has checked.
                let _ = release_rx.lock().unwrap().recv_timeout(WAIT * 3);
                for cp in cps {
                    cp.close();
                }
            })
        })
        .collect();
    for _ in 0..clients {
        ready_rx
            .recv_timeout(WAIT * 3)
            .expect("charge points booted");
    }
    let total = clients * per_client;
    let list = charge_points(&server);
    assert_eq!(list.len(), total);
    assert!(list.iter().all(|cp| cp["status"] == "Accepted"));
    let metrics = metrics(&server);
    assert!(
        metrics.contains(&format!("ocpp_charge_points_connected {total}\n")),
        "{metrics}"
    );

    // Commands reach charge points whichever of the two threads (mio-server's event loops,
    // tokio-server's worker threads) holds them; the kernel spreads these four over mio-server's
    // loops with high probability.
    for i in 0..4 {
        let identity = format!("CMD-{i}");
        let mut cp = ChargePoint::connect(addr, &identity, &[OcppVersion::V1_6], None).unwrap();
        let rejected =
            ocpp_messages::v1_6::decode_result("Reset", r#"{"status":"Rejected"}"#).unwrap();
        let result = reset(
            &server,
            &mut cp,
            &identity,
            r#"{"type":"Hard"}"#,
            rejected.into(),
        );
        assert_eq!(result["status"], "Rejected");
        cp.close();
    }
    for _ in 0..clients {
        release_tx.send(()).unwrap();
    }
    for thread in threads {
        thread.join().unwrap();
    }
    let deadline = Instant::now() + WAIT;
    loop {
        let list = charge_points(&server);
        if list.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "charge points still listed: {list:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn push_interval_sends_numbered_data_transfers(kind: Kind) {
    // tokio-server pushes on its shards and with a task per connection (mio-server ignores
    // `--shards`).
    for shards in ["1", "0"] {
        let server = kind.start(&["--push-interval-ms", "50", "--shards", shards]);
        pushes_to_each_version(&server);
    }
}

fn pushes_to_each_version(server: &ServerProcess) {
    for version in [OcppVersion::V1_6, OcppVersion::V2_0_1] {
        let mut cp = ChargePoint::connect(
            server.ocpp,
            &format!("P{}", version.as_str()),
            &[version],
            None,
        )
        .unwrap();
        for expected in 1..=3u64 {
            let (id, request) = cp.expect_call();
            assert_eq!(request.action(), "DataTransfer");
            let payload = serde_json::to_value(&request).unwrap();
            assert_eq!(payload["vendorId"], "bench");
            assert_eq!(payload["messageId"], "ts");
            let data = payload["data"].as_str().unwrap();
            let (seq, nanos) = data.split_once(':').unwrap();
            assert_eq!(seq.parse::<u64>().unwrap(), expected);
            assert!(nanos.parse::<u128>().unwrap() > 1_600_000_000_000_000_000);
            let response = decode_result(version, r#"{"status":"Accepted"}"#);
            cp.respond(&id, response);
        }
        cp.close();
    }
}

/// Waits (at most 5 s) until `GET /metrics` has `line`.
fn wait_for_metric(server: &ServerProcess, line: &str) {
    for _ in 0..250 {
        if metrics(server).contains(line) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("no {line:?} in {}", metrics(server));
}

/// `ocpp_sockets_open` counts a socket from its accept (before any handshake) until it is
/// closed, on tokio-server's shards as with a task per connection (mio-server ignores
/// `--shards`).
fn sockets_open_counts_every_socket_until_it_closes(kind: Kind) {
    for extra in [
        &[][..],
        &["--shards", "0"][..],
        &["--threads", "2", "--shards", "3"][..],
    ] {
        let server = kind.start(extra);
        wait_for_metric(&server, "ocpp_sockets_open 0\n");
        let silent = std::net::TcpStream::connect(server.ocpp).unwrap();
        wait_for_metric(&server, "ocpp_sockets_open 1\n");
        let cp = ChargePoint::connect(server.ocpp, "OPEN1", &[OcppVersion::V1_6], None).unwrap();
        wait_for_metric(&server, "ocpp_sockets_open 2\n");
        cp.close();
        drop(silent);
        wait_for_metric(&server, "ocpp_sockets_open 0\n");
        let metrics = metrics(&server);
        assert!(
            metrics.contains("ocpp_sockets_accepted_total 2\n"),
            "{extra:?}: {metrics}"
        );
    }
}

/// A DataTransfer CALLRESULT of `version`.
fn decode_result(version: OcppVersion, payload: &str) -> Response {
    match version {
        OcppVersion::V1_6 => ocpp_messages::v1_6::decode_result("DataTransfer", payload)
            .unwrap()
            .into(),
        OcppVersion::V2_0_1 => ocpp_messages::v2_0_1::decode_result("DataTransfer", payload)
            .unwrap()
            .into(),
        OcppVersion::V2_1 => ocpp_messages::v2_1::decode_result("DataTransfer", payload)
            .unwrap()
            .into(),
    }
}

fn a_reconnect_replaces_the_old_connection(kind: Kind) {
    let server = kind.start(&[]);
    let mut old = ChargePoint::connect(server.ocpp, "CP1", &[OcppVersion::V1_6], None).unwrap();
    let mut new = ChargePoint::connect(server.ocpp, "CP1", &[OcppVersion::V1_6], None).unwrap();
    expect_closed_with(&mut old, ocpp_frame::CloseCode::POLICY_VIOLATION);
    new.call("Heartbeat", "{}");
    assert_eq!(charge_points(&server).len(), 1);
    new.close();
}

fn sigterm_closes_connections_with_1001_and_exits(kind: Kind) {
    let mut server = kind.start(&[]);
    let mut cp = ChargePoint::connect(server.ocpp, "CP1", &[OcppVersion::V1_6], None).unwrap();
    cp.call("Heartbeat", "{}");
    server.sigterm();
    expect_closed_with(&mut cp, ocpp_frame::CloseCode::GOING_AWAY);
    let status = server.wait_exit();
    assert!(status.success(), "{status:?}");
}

fn sigterm_answers_a_waiting_admin_command_and_closes_with_1001(kind: Kind) {
    let mut server = kind.start(&["--threads", "2"]);
    let mut cp = ChargePoint::connect(server.ocpp, "CP1", &[OcppVersion::V1_6], None).unwrap();
    cp.call("Heartbeat", "{}");
    let reset = command(
        server.admin,
        "/chargepoints/CP1/call/Reset".into(),
        r#"{"type":"Soft"}"#,
    );
    // The charge point never answers this CALL.
    let (_, request) = cp.expect_call();
    assert_eq!(request.action(), "Reset");
    server.sigterm();
    expect_closed_with(&mut cp, ocpp_frame::CloseCode::GOING_AWAY);
    let (status, body) = reset.join().unwrap();
    // The CALL reached the charge point: 504 (it may have run), never the retryable 503.
    assert_eq!(status, 504, "{body}");
    assert_eq!(json(&body)["delivery"], "unknown", "{body}");
    let exit = server.wait_exit();
    assert!(exit.success(), "{exit:?}");
}

/// An upgrade request for `identity` on OCPP 1.6, as bytes.
fn raw_upgrade(identity: &str) -> Vec<u8> {
    format!(
        "GET /ocpp/{identity} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Protocol: ocpp1.6\r\n\r\n"
    )
    .into_bytes()
}

/// Sends the upgrade request for `identity` on `socket` and reads the `101` (a client waits
/// for it before its first frame).
fn raw_upgraded(socket: &mut TcpStream, identity: &str) {
    socket.write_all(&raw_upgrade(identity)).unwrap();
    let mut head = Vec::new();
    let mut byte = [0; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(
            socket.read(&mut byte).unwrap(),
            1,
            "closed during the upgrade"
        );
        head.push(byte[0]);
    }
    assert!(
        head.starts_with(b"HTTP/1.1 101"),
        "{}",
        String::from_utf8_lossy(&head)
    );
}

/// A client's frame (FIN, `opcode`) with a zero mask, so the payload goes as it is.
fn raw_frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut frame = vec![0x80 | opcode];
    match payload.len() {
        n @ 0..=125 => frame.push(0x80 | n as u8),
        n => {
            frame.push(0x80 | 126);
            frame.extend_from_slice(&u16::try_from(n).unwrap().to_be_bytes());
        }
    }
    frame.extend_from_slice(&[0; 4]);
    frame.extend_from_slice(payload);
    frame
}

/// Writes `input` on a new connection to `addr` and returns what comes back until the server
/// closes or stays quiet for 300 ms (at most [`WAIT`]).
fn raw_exchange(addr: SocketAddr, input: &[u8]) -> Vec<u8> {
    let mut socket = TcpStream::connect_timeout(&addr, WAIT).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    socket.write_all(input).unwrap();
    let deadline = Instant::now() + WAIT;
    let mut output = Vec::new();
    let mut buffer = [0; 4096];
    while Instant::now() < deadline {
        match socket.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => output.extend_from_slice(&buffer[..n]),
        }
    }
    output
}

/// Bad input (HTTP that is no upgrade, garbage, malformed JSON, an unknown action, a payload
/// the schema refuses, an unmasked frame, a binary frame) gets the bytes mio-server answers,
/// byte for byte: the core decides them, whatever the loop.
fn bad_input_gets_the_same_answers_as_mio_server(kind: Kind) {
    let mio = Kind::Mio.start(&[]);
    let server = kind.start(&[]);
    let upgraded = |frame: Vec<u8>| [raw_upgrade("BAD1"), frame].concat();
    let cases: [(&str, Vec<u8>); 7] = [
        ("plain GET", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec()),
        ("garbage", b"\x00\x01garbage\r\n\r\n".to_vec()),
        ("bad JSON", upgraded(raw_frame(1, br#"[2,"1","Heartbeat""#))),
        (
            "unknown action",
            upgraded(raw_frame(1, br#"[2,"1","NoSuchAction",{}]"#)),
        ),
        (
            "bad payload",
            upgraded(raw_frame(1, br#"[2,"1","Heartbeat",{"x":1}]"#)),
        ),
        ("unmasked frame", upgraded(b"\x81\x05hello".to_vec())),
        ("binary frame", upgraded(raw_frame(2, b"abc"))),
    ];
    for (name, input) in cases {
        let expected = raw_exchange(mio.ocpp, &input);
        assert!(!expected.is_empty(), "{name}: mio-server said nothing");
        let got = raw_exchange(server.ocpp, &input);
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&expected),
            "{name}"
        );
    }
}

/// 2,000 Heartbeats written at once, before reading anything: more than the connection holds
/// pipelined, so reading pauses and resumes, and those past the hold get a CALLERROR at once
/// (the core's rule): every CALL answered exactly once, the CALLRESULTs in order.
fn many_pipelined_calls_are_all_answered_in_order(kind: Kind) {
    const CALLS: usize = 2_000;
    let server = kind.start(&[]);
    let mut socket = TcpStream::connect_timeout(&server.ocpp, WAIT).unwrap();
    socket.set_read_timeout(Some(WAIT)).unwrap();
    raw_upgraded(&mut socket, "PIPE1");
    let mut input = Vec::new();
    for id in 0..CALLS {
        input.extend(raw_frame(
            1,
            format!(r#"[2,"{id}","Heartbeat",{{}}]"#).as_bytes(),
        ));
    }
    socket.write_all(&input).unwrap();
    let deadline = Instant::now() + WAIT * 3;
    let mut output = Vec::new();
    let mut buffer = [0; 64 * 1024];
    // The ids answered with `[type,"`, in the order they came.
    let answered = |output: &[u8], kind: &str| -> Vec<usize> {
        String::from_utf8_lossy(output)
            .split(kind)
            .skip(1)
            .filter_map(|rest| rest.split('"').next()?.parse().ok())
            .collect()
    };
    let count = |output: &[u8]| answered(output, "[3,\"").len() + answered(output, "[4,\"").len();
    while count(&output) < CALLS {
        assert!(Instant::now() < deadline, "{} answered", count(&output));
        match socket.read(&mut buffer) {
            Ok(0) => panic!("closed after {} answers", count(&output)),
            Ok(n) => output.extend_from_slice(&buffer[..n]),
            Err(e) => panic!("{e} after {} answers", count(&output)),
        }
    }
    let results = answered(&output, "[3,\"");
    assert!(!results.is_empty());
    assert!(results.windows(2).all(|w| w[0] < w[1]), "{results:?}");
    let mut all = [results, answered(&output, "[4,\"")].concat();
    all.sort_unstable();
    assert_eq!(all, (0..CALLS).collect::<Vec<_>>());
}

/// A peer that writes 30,000 Heartbeats without reading, through a 4 KiB receive buffer: the
/// server's output backs up past half of `max_outbound_bytes`, so it stops reading the peer;
/// once the peer reads, it resumes, and every CALL is answered exactly once.
fn a_peer_that_does_not_read_is_paused_then_answered(kind: Kind) {
    const CALLS: usize = 30_000;
    let server = kind.start(&[]);
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket.connect_timeout(&server.ocpp.into(), WAIT).unwrap();
    let mut socket = TcpStream::from(socket);
    socket.set_read_timeout(Some(WAIT)).unwrap();
    socket.set_write_timeout(Some(WAIT * 3)).unwrap();
    raw_upgraded(&mut socket, "SLOW1");
    let mut input = Vec::new();
    for id in 0..CALLS {
        input.extend(raw_frame(
            1,
            format!(r#"[2,"{id}","Heartbeat",{{}}]"#).as_bytes(),
        ));
    }
    let mut writer = socket.try_clone().unwrap();
    let writing = std::thread::spawn(move || writer.write_all(&input));
    // Nothing read for a while: the server's output backs up.
    std::thread::sleep(Duration::from_millis(500));
    let deadline = Instant::now() + WAIT * 3;
    let mut answers = 0;
    let mut tail = Vec::new();
    let mut buffer = [0; 64 * 1024];
    while answers < CALLS {
        assert!(Instant::now() < deadline, "{answers} answered");
        match socket.read(&mut buffer) {
            Ok(0) => panic!("closed after {answers} answers"),
            Ok(n) => {
                // Count `[3,"` and `[4,"` across reads: keep the last 3 bytes for the next one.
                tail.extend_from_slice(&buffer[..n]);
                let text = String::from_utf8_lossy(&tail);
                answers += text.matches("[3,\"").count() + text.matches("[4,\"").count();
                let keep = tail.len().saturating_sub(3);
                tail.drain(..keep);
            }
            Err(e) => panic!("{e} after {answers} answers"),
        }
    }
    writing.join().unwrap().unwrap();
}

/// uring-server serves plain `ws://` on one node: an option of TLS or of a cluster is refused
/// before anything is opened, with a message that says so, and exit code 2.
#[cfg(target_os = "linux")]
#[test]
fn uring_server_refuses_tls_and_cluster_options() {
    for options in [
        &["--tls-cert", "cert.pem", "--tls-key", "key.pem"][..],
        &["--redis", "redis://127.0.0.1:1/", "--node-id", "a"][..],
    ] {
        let output = Command::new(Kind::Uring.binary())
            .args(["--listen", "127.0.0.1:0", "--admin", "off"])
            .args(options)
            .env("OCPP_DATABASE_URL", "memory")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{options:?}: {stderr}");
        assert!(stderr.contains("is not supported"), "{options:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{options:?}: it started");
    }
}
