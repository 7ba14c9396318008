//! The Local Controller (issue 37): stations relayed to a central system through
//! `ocpp_local_controller::LocalController`, in process (raw peers that compare the texts byte for byte,
//! and an `ocpp_tokio::Server`), and against independent peers (Python `ocpp` stations relayed
//! by `examples/local_controller.rs` to mio-server). Every wait is bounded; loopback only.

#[path = "../../ocpp-tokio/tests/common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use common::raw_peer::{RelayTextPeer, WAIT};
use common::{example_binary, mio_server_binary, python, python_ocpp_present, Killed, TestServer};
use ocpp_local_controller::{
    Leg, LocalController, MessageTypeId, RelayedStations, StationCallDecision,
};
use ocpp_proto::{CloseCode, CloseReason, ConnectionConfig, Event, OcppVersion};
use ocpp_test_kit::WireChargePoint;
use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};

type Seen = Arc<Mutex<Vec<(Leg, String)>>>;

/// A controller relaying to `upstream`; Authorize answered locally; every message recorded.
async fn start_controller(upstream: SocketAddr) -> (SocketAddr, RelayedStations, Seen) {
    let seen: Seen = Arc::default();
    let log = seen.clone();
    let controller = LocalController::builder(&format!("ws://{upstream}/ocpp"))
        .unwrap()
        .config(ConnectionConfig::default().close_timeout(Duration::from_secs(1)))
        .on_message(move |m| log.lock().unwrap().push((m.direction, m.text.to_owned())))
        .on_station_call(|m| match m.envelope {
            Some(e) if e.action == Some("Authorize") => {
                let info = serde_json::json!({"idTokenInfo": {"status": "Accepted"}});
                StationCallDecision::result(e.id, &info)
            }
            _ => StationCallDecision::Forward,
        })
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = controller.local_addr().unwrap();
    let stations = controller.stations();
    tokio::spawn(controller.run());
    (addr, stations, seen)
}

/// A station and a raw central system connected through a controller.
async fn relayed_pair(identity: &str) -> (RelayTextPeer, RelayTextPeer, RelayedStations, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (controller, stations, seen) = start_controller(listener.local_addr().unwrap()).await;
    let mut station = RelayTextPeer::station(controller, identity, OcppVersion::V2_0_1).await;
    station.flush().await;
    let (csms, path) = RelayTextPeer::csms(&listener, OcppVersion::V2_0_1).await;
    assert_eq!(
        path,
        format!("/ocpp/{identity}"),
        "the CSMS sees the station's identity"
    );
    match station.next_event().await {
        Event::Connected { version } => assert_eq!(version, OcppVersion::V2_0_1),
        other => panic!("expected Connected, got {other:?}"),
    }
    (station, csms, stations, seen)
}

#[tokio::test]
async fn texts_are_relayed_byte_for_byte_and_the_controller_acts() {
    let (mut station, mut csms, stations, seen) = relayed_pair("CP-RELAY").await;

    // Unusual whitespace, field order and escapes: nothing may be normalised.
    let boot = "[2 , \"m1\",\"BootNotification\" ,{ \"reason\":\"PowerUp\" ,\
                \"chargingStation\":{\"vendorName\":\"V\\u00e9\",\"model\":\"M\u{e9}\"} }  ]";
    station.send(boot).await;
    assert_eq!(csms.next_text().await, boot);
    let answer = "[3,\"m1\",  {\"status\":\"Accepted\",\"interval\":300.0,\
                  \"currentTime\":\"2026-01-01T00:00:00.000Z\"}]";
    csms.send(answer).await;
    assert_eq!(station.next_text().await, answer);
    let reset = "[2,\"c-9\",\"Reset\",{\"type\" :\"Immediate\"}]";
    csms.send(reset).await;
    assert_eq!(station.next_text().await, reset);
    let reset_answer = "[3,\"c-9\",{\"status\":\"Rejected\"}]";
    station.send(reset_answer).await;
    assert_eq!(csms.next_text().await, reset_answer);

    // A CALL answered by the hook never reaches the central system.
    station
        .send(r#"[2,"m2","Authorize",{"idToken":{"idToken":"T","type":"ISO14443"}}]"#)
        .await;
    assert_eq!(
        station.next_text().await,
        r#"[3,"m2",{"idTokenInfo":{"status":"Accepted"}}]"#
    );

    // The controller's own CALL reaches the station; its answer stays with the controller.
    let payload = r#"{"evseId":0,"chargingProfile":{"id":1,"stackLevel":0,"chargingProfilePurpose":"ChargingStationMaxProfile","chargingProfileKind":"Absolute","chargingSchedule":[{"id":1,"chargingRateUnit":"A","chargingSchedulePeriod":[{"startPeriod":0,"limit":16}]}]}}"#;
    let calling = stations.clone();
    let call = tokio::spawn(async move {
        calling
            .call("CP-RELAY", "SetChargingProfile", payload)
            .await
    });
    let own = station.next_text().await;
    assert!(own.starts_with("[2,\"lc-"), "{own}");
    assert!(own.contains("\"SetChargingProfile\"") && own.ends_with(&format!("{payload}]")));
    let own_id = own.split('"').nth(1).unwrap().to_owned();
    let own_answer = format!("[3,\"{own_id}\",{{\"status\":\"Accepted\"}}]");
    station.send(&own_answer).await;
    let answered = tokio::time::timeout(WAIT, call).await.unwrap().unwrap();
    assert_eq!(answered.as_deref(), Ok(own_answer.as_str()));
    assert_eq!(
        stations.call("NOBODY", "ClearCache", "{}").await,
        Err(ocpp_local_controller::OwnCallError::NotConnected)
    );

    // The next text the central system gets is this Heartbeat: neither the Authorize nor the
    // answer to SetChargingProfile reached it.
    let heartbeat = "[2,\"m3\",\"Heartbeat\",{}]";
    station.send(heartbeat).await;
    assert_eq!(csms.next_text().await, heartbeat);

    {
        let seen = seen.lock().unwrap();
        let of = |d: Leg| -> Vec<&str> {
            seen.iter()
                .filter(|(x, _)| *x == d)
                .map(|(_, t)| t.as_str())
                .collect()
        };
        assert_eq!(of(Leg::StationToCsms), vec![boot, reset_answer, heartbeat]);
        assert_eq!(of(Leg::CsmsToStation), vec![answer, reset]);
        assert_eq!(of(Leg::ControllerToStation).len(), 2, "{seen:?}");
        assert_eq!(
            of(Leg::StationToController),
            vec![
                r#"[2,"m2","Authorize",{"idToken":{"idToken":"T","type":"ISO14443"}}]"#,
                &own_answer
            ]
        );
    }

    // The station closes: the central system sees its code.
    station.conn.close(Instant::now(), CloseCode::NORMAL, "bye");
    station.flush().await;
    match csms.expect_closed().await {
        CloseReason::PeerClosed { code, .. } => assert_eq!(code, Some(CloseCode::NORMAL)),
        other => panic!("{other:?}"),
    }
    station.expect_closed().await;
    let gone = || stations.identities().is_empty();
    common::eventually("the station leaves the controller's list", gone).await;
}

#[tokio::test]
async fn the_central_systems_close_closes_the_station_with_its_code() {
    let (mut station, mut csms, stations, _) = relayed_pair("CP-CLOSE").await;
    assert_eq!(stations.identities(), vec!["CP-CLOSE".to_owned()]);
    csms.conn
        .close(Instant::now(), CloseCode::SERVICE_RESTART, "restart");
    csms.flush().await;
    match station.expect_closed().await {
        CloseReason::PeerClosed { code, .. } => {
            assert_eq!(code, Some(CloseCode::SERVICE_RESTART))
        }
        other => panic!("{other:?}"),
    }
    csms.expect_closed().await;
}

#[tokio::test]
async fn an_upstream_that_drops_closes_the_station() {
    let (mut station, csms, _, _) = relayed_pair("CP-DROP").await;
    drop(csms); // no close frame: the stream just ends
    match station.expect_closed().await {
        CloseReason::PeerClosed { code, .. } => assert_eq!(code, Some(CloseCode::GOING_AWAY)),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn stations_reach_an_ocpp_tokio_server_under_their_identity() {
    let server = TestServer::start(common::server_config()).await;
    let (controller, _, seen) = start_controller(server.addr).await;

    // 1.6 and 2.0.1: the server sees the identity and boots the station.
    for (identity, version) in [
        ("CP-16", OcppVersion::V1_6),
        ("CP-201", OcppVersion::V2_0_1),
    ] {
        let mut cp = WireChargePoint::connect(controller, identity, version)
            .await
            .unwrap();
        assert_eq!(cp.connection().version(), Some(version));
        assert_eq!(cp.boot().await.unwrap(), "Accepted");
        let cps = server.charge_points.clone();
        common::eventually(identity, || cps.get(identity).is_some()).await;
        assert_eq!(
            server.charge_points.get(identity).unwrap().version(),
            version
        );
    }
    assert!(seen
        .lock()
        .unwrap()
        .iter()
        .any(|(d, t)| *d == Leg::CsmsToStation && t.contains("\"Accepted\"")));

    // The server's refusals reach the station: 404 for an unknown identity, 401 for wrong
    // credentials; the station's own credentials are passed on.
    let mut unknown = WireChargePoint::start(controller, "UNKNOWN-1", OcppVersion::V2_0_1, None)
        .await
        .unwrap();
    match unknown.wait_for_close().await.unwrap().reason {
        CloseReason::UpgradeRefused { status, .. } => assert_eq!(status, Some(404)),
        other => panic!("{other:?}"),
    }
    let mut wrong = WireChargePoint::start(controller, "AUTH-1", OcppVersion::V1_6, Some(b"wrong"))
        .await
        .unwrap();
    match wrong.wait_for_close().await.unwrap().reason {
        CloseReason::UpgradeRefused { status, .. } => assert_eq!(status, Some(401)),
        other => panic!("{other:?}"),
    }
    let mut auth = WireChargePoint::start(
        controller,
        "AUTH-2",
        OcppVersion::V1_6,
        Some(common::PASSWORD),
    )
    .await
    .unwrap();
    assert!(matches!(
        auth.next_event().await.unwrap(),
        Event::Connected { .. }
    ));
    assert_eq!(auth.boot().await.unwrap(), "Accepted");

    // The server goes away: its stations are closed.
    server.stop().await;
    match auth.wait_for_close().await.unwrap().reason {
        CloseReason::PeerClosed { code, .. } => assert_eq!(code, Some(CloseCode::GOING_AWAY)),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_unreachable_central_system_refuses_the_station_with_502() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let (controller, _, _) = start_controller(port).await;
    let mut cp = WireChargePoint::start(controller, "CP-X", OcppVersion::V1_6, None)
        .await
        .unwrap();
    match cp.wait_for_close().await.unwrap().reason {
        CloseReason::UpgradeRefused { status, .. } => assert_eq!(status, Some(502)),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn stations_reach_a_tls_central_system_through_the_controller() {
    let pki = common::pki();
    // Profile 2 (server certificate), then profile 3 (the controller's client certificate:
    // the test server wants its CN to be the identity).
    for (mutual, identity) in [(false, "CP-TLS"), (true, "CP001")] {
        let builder = ocpp_tokio::Server::builder()
            .config(common::server_config())
            .tls(common::server_tls(&pki, mutual));
        let server = TestServer::start_with(builder).await;
        let client = common::client_tls(&pki.ca, mutual.then_some(&pki.cp001));
        let url = format!("wss://localhost:{}/ocpp", server.addr.port());
        let controller = LocalController::builder(&url)
            .unwrap()
            .upstream_tls(client)
            .bind("127.0.0.1:0")
            .await
            .unwrap();
        let addr = controller.local_addr().unwrap();
        tokio::spawn(controller.run());
        let mut cp = WireChargePoint::connect(addr, identity, OcppVersion::V2_0_1)
            .await
            .unwrap();
        assert_eq!(cp.boot().await.unwrap(), "Accepted");
        assert!(server.charge_points.get(identity).is_some());
        server.stop().await;
    }
    // wss:// without a TLS configuration is refused at bind.
    let builder = LocalController::builder("wss://localhost:1/ocpp").unwrap();
    assert!(builder.bind("127.0.0.1:0").await.is_err());
}

/// A station over TLS to the controller at `addr` (the name checked: localhost).
async fn tls_station(
    addr: SocketAddr,
    tls: Arc<ocpp_tokio::rustls::ClientConfig>,
    identity: &str,
    password: Option<&[u8]>,
) -> std::io::Result<WireChargePoint<tokio_rustls::client::TlsStream<TcpStream>>> {
    let tcp = TcpStream::connect(addr).await?;
    let name = ocpp_tokio::rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let tls = tokio_rustls::TlsConnector::from(tls)
        .connect(name, tcp)
        .await?;
    let host = addr.to_string();
    let cp = WireChargePoint::over(tls, &host, identity, OcppVersion::V2_0_1, password);
    Ok(cp.expect("a charge point"))
}

#[tokio::test]
async fn stations_connect_to_the_controller_over_tls_as_to_a_central_system() {
    let pki = common::pki();
    let server = TestServer::start(common::server_config()).await;
    let upstream = format!("ws://{}/ocpp", server.addr);

    // Profile 2: the controller's server certificate, the station's Basic credentials passed
    // on to the central system (which checks them).
    let controller = LocalController::builder(&upstream)
        .unwrap()
        .station_tls(common::server_tls(&pki, false))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = controller.local_addr().unwrap();
    tokio::spawn(controller.run());
    let trusting = common::client_tls(&pki.ca, None);
    let mut cp = tls_station(addr, trusting.clone(), "AUTH-2", Some(common::PASSWORD))
        .await
        .expect("TLS handshake");
    assert!(matches!(
        cp.next_event().await.unwrap(),
        Event::Connected { .. }
    ));
    assert_eq!(cp.boot().await.unwrap(), "Accepted");
    assert!(server.charge_points.get("AUTH-2").is_some());
    let mut wrong = tls_station(addr, trusting, "AUTH-1", Some(b"wrong"))
        .await
        .expect("TLS handshake");
    match wrong.wait_for_close().await.unwrap().reason {
        CloseReason::UpgradeRefused { status, .. } => assert_eq!(status, Some(401)),
        other => panic!("{other:?}"),
    }
    // A station that does not speak TLS gets no upgrade.
    let mut plain = WireChargePoint::start(addr, "CP-PLAIN", OcppVersion::V2_0_1, None)
        .await
        .unwrap();
    assert!(!matches!(
        plain.next_event().await.unwrap(),
        Event::Connected { .. }
    ));
    // A station that does not trust the controller's certificate does not connect.
    let rogue_trust = common::client_tls(&pki.rogue_ca, None);
    assert!(tls_station(addr, rogue_trust, "CP-ROGUE", None)
        .await
        .is_err());

    // Profile 3: client certificates of the site's CA, required.
    let controller = LocalController::builder(&upstream)
        .unwrap()
        .station_tls(common::server_tls(&pki, true))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = controller.local_addr().unwrap();
    let stations = controller.stations();
    tokio::spawn(controller.run());
    let certified = common::client_tls(&pki.ca, Some(&pki.cp001));
    let mut cp = tls_station(addr, certified.clone(), "CP001", None)
        .await
        .expect("TLS handshake");
    assert!(matches!(
        cp.next_event().await.unwrap(),
        Event::Connected { .. }
    ));
    assert_eq!(cp.boot().await.unwrap(), "Accepted");
    assert!(server.charge_points.get("CP001").is_some());
    assert_eq!(stations.identities(), ["CP001"]);
    // CP001's certificate does not make another identity: 403, never relayed.
    let mut other = tls_station(addr, certified, "CP002", None)
        .await
        .expect("TLS handshake");
    match other.wait_for_close().await.unwrap().reason {
        CloseReason::UpgradeRefused { status, .. } => assert_eq!(status, Some(403)),
        other => panic!("{other:?}"),
    }
    assert!(server.charge_points.get("CP002").is_none());
    // Without a certificate, or with one of another CA: refused in the TLS handshake (TLS
    // 1.3 reports it on the first read), never relayed.
    for (identity, config) in [
        ("CP-NO-CERT", common::client_tls(&pki.ca, None)),
        (
            "CP-ROGUE-CERT",
            common::client_tls(&pki.ca, Some(&pki.rogue_cp001)),
        ),
    ] {
        if let Ok(mut cp) = tls_station(addr, config, identity, None).await {
            assert!(!matches!(
                cp.next_event().await.unwrap(),
                Event::Connected { .. }
            ));
        }
        assert!(server.charge_points.get(identity).is_none());
    }
    assert_eq!(stations.identities(), ["CP001"]);
    server.stop().await;
}

#[test]
fn urls_are_checked() {
    assert!(LocalController::builder("ws://127.0.0.1:9000").is_ok());
    assert!(LocalController::builder("wss://[::1]:9000/ocpp").is_ok());
    assert!(LocalController::builder("http://127.0.0.1:9000/ocpp").is_err());
    assert!(LocalController::builder("ws:///ocpp").is_err());
    assert!(LocalController::builder("ws://h/ocpp?x=1").is_err());
    assert_eq!(MessageTypeId::Call.number(), 2);
}

// ---- independent peers: Python `ocpp` stations, the example controller, mio-server ----

const INTEROP_WAIT: Duration = Duration::from_secs(60);
const STATION: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/interop/python_relay_station.py"
);

/// A child (killed when dropped) and the lines it prints.
struct Child {
    _child: Killed,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Child {
    fn spawn(name: &str, command: &mut Command) -> Child {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        let echo = name.to_owned();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                println!("[{echo}] {line}");
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Child {
            _child: Killed(child),
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits for a line that starts with `prefix`; returns it.
    fn line(&mut self, prefix: &str) -> String {
        let deadline = Instant::now() + INTEROP_WAIT;
        loop {
            if let Some(line) = self.seen.iter().find(|l| l.starts_with(prefix)) {
                return line.clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(_) => panic!(
                    "no line {prefix:?} within {INTEROP_WAIT:?}: {:#?}",
                    self.seen
                ),
            }
        }
    }
}

/// One HTTP request to mio-server's admin interface: the status and the JSON body.
fn admin(addr: &str, path: &str) -> (u16, Value) {
    let addr: SocketAddr = addr.parse().unwrap();
    let mut stream = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (
        status,
        serde_json::from_str(body).unwrap_or(Value::String(body.into())),
    )
}

fn python_station_through_the_controller_to_mio_server(version: &str, identity: &str) {
    if !python_ocpp_present() {
        return;
    }
    let mut mio = Child::spawn(
        "mio-server",
        Command::new(mio_server_binary()).args([
            "--listen",
            "127.0.0.1:0",
            "--admin",
            "127.0.0.1:0",
            "--database",
            "memory",
        ]),
    );
    let line = mio.line("mio-server listening on ");
    let rest = line.strip_prefix("mio-server listening on ").unwrap();
    let (listen, admin_addr) = rest.split_once(" (admin on ").expect(&line);
    let admin_addr = admin_addr.trim_end_matches(')').to_owned();

    let mut controller = Child::spawn(
        "local-controller",
        Command::new(example_binary("local_controller"))
            .args(["127.0.0.1:0", &format!("ws://{listen}/ocpp")]),
    );
    let line = controller.line("local controller listening on ");
    let at = line.strip_prefix("local controller listening on ").unwrap();
    let at = at.split_once(' ').map_or(at, |(a, _)| a).to_owned();

    let mut station = Child::spawn(
        "python-station",
        Command::new(python()).args([
            STATION,
            &format!("ws://{at}/ocpp"),
            version,
            identity,
            "--hold",
            "60",
        ]),
    );
    assert_eq!(station.line("BOOT "), "BOOT Accepted");
    station.line("HEARTBEAT ");
    // The controller printed the relayed boot both ways.
    controller.line(&format!("{identity} -> [2,"));
    controller.line(&format!("{identity} <- [3,"));

    // mio-server lists the station under its identity, booted through the controller.
    let deadline = Instant::now() + INTEROP_WAIT;
    loop {
        let (status, list) = admin(&admin_addr, "/chargepoints");
        let listed = list
            .as_array()
            .is_some_and(|l| l.iter().any(|cp| cp["identity"] == identity));
        let (_, cp) = admin(&admin_addr, &format!("/chargepoints/{identity}"));
        if status == 200 && listed && cp["connected"] == true && cp["status"] == "Accepted" {
            assert_eq!(cp["version"], version, "{cp}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{identity} not listed and Accepted: {list} {cp}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_python_1_6_station_boots_at_mio_server_through_the_controller() {
    python_station_through_the_controller_to_mio_server("1.6", "CP-LC-16");
}

#[test]
fn a_python_2_0_1_station_boots_at_mio_server_through_the_controller() {
    python_station_through_the_controller_to_mio_server("2.0.1", "CP-LC-201");
}
