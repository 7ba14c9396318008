//! The Local Controller between independent peers on both sides: stations on the PyPI `ocpp`
//! library (1.6 and 2.0.1, `tests/interop/python_field_station.py`) relayed to a central
//! system on the same library (`tests/interop/python_relay_csms.py`). Both Python peers log
//! every text exactly as their WebSocket sent or received it, so the test compares the two ends
//! byte for byte. The controller runs here, on ocpp-tokio, with its hooks.
//!
//! - each station reaches the central system under its own identity and version, and every
//!   message arrives unchanged, both ways;
//! - a site limit set on the controller (its own SetChargingProfile, 1.6 and 2.0.1) reaches the
//!   station, which accepts it; the central system never sees it;
//! - the central system killed: the station's connection closes (1001), and once the central
//!   system is back on its port the station reconnects, boots and is relayed again;
//! - the station killed: its upstream connection closes;
//! - towards `mio-server` the same comparison, against the texts its `--capture` recorded
//!   as they came over its sockets.
//!
//! Without Python's `ocpp` and `websockets` the tests are skipped with a line on stderr; with
//! `OCPP_INTEROP_REQUIRED=1` they fail instead.

#[path = "../../ocpp-tokio/tests/common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use common::{free_port, mio_server_binary, python, python_ocpp_present, Killed};
use ocpp_local_controller::{Leg, LocalController, RelayedStations};
use serde_json::{json, Value};

/// The longest one wait for a Python peer may take (an import of `ocpp` takes a second).
const INTEROP_WAIT: Duration = Duration::from_secs(60);
const CSMS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/interop/python_relay_csms.py"
);
const STATION: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/interop/python_field_station.py"
);

/// A Python peer: its process (killed when dropped or by [`Peer::kill`]) and the JSON lines
/// it printed.
struct Peer {
    name: String,
    child: Option<Killed>,
    lines: mpsc::Receiver<Value>,
    seen: Vec<Value>,
}

impl Peer {
    fn spawn(name: &str, args: &[&str]) -> Peer {
        let mut child = Command::new(python())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        let echo = name.to_owned();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                println!("[{echo}] {line}");
                let Ok(value) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        Peer {
            name: name.into(),
            child: Some(Killed(child)),
            lines,
            seen: Vec::new(),
        }
    }

    /// Reads what the peer printed since the last call, waiting at most `within`.
    fn pump(&mut self, within: Duration) {
        if let Ok(line) = self.lines.recv_timeout(within) {
            self.seen.push(line);
        }
        while let Ok(line) = self.lines.try_recv() {
            self.seen.push(line);
        }
    }

    /// Waits (bounded) until `count` lines satisfy `matches`; returns them.
    fn wait_for(
        &mut self,
        what: &str,
        count: usize,
        matches: impl Fn(&Value) -> bool,
    ) -> Vec<Value> {
        let deadline = Instant::now() + INTEROP_WAIT;
        loop {
            let found: Vec<Value> = self.seen.iter().filter(|l| matches(l)).cloned().collect();
            if found.len() >= count {
                return found;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "{}: no {count} × {what} within {INTEROP_WAIT:?}: {:#?}",
                self.name,
                self.seen
            );
            self.pump(left.min(Duration::from_millis(200)));
        }
    }

    /// The first line satisfying `matches` (bounded wait).
    fn wait_one(&mut self, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
        self.wait_for(what, 1, matches).remove(0)
    }

    /// SIGKILL, reaped.
    fn kill(&mut self) {
        drop(self.child.take());
    }
}

fn event(line: &Value, name: &str) -> bool {
    line["event"] == name
}

/// The central system on `port`, once it listens.
fn start_csms(port: u16) -> Peer {
    let port_text = port.to_string();
    let mut csms = Peer::spawn("python-csms", &[CSMS, "--port", &port_text]);
    csms.wait_one("listening", |l| event(l, "listening"));
    csms
}

fn start_station(controller: SocketAddr, version: &str, identity: &str) -> Peer {
    let url = format!("ws://{controller}/ocpp");
    Peer::spawn(
        &format!("python-station-{identity}"),
        &[STATION, &url, version, identity],
    )
}

/// The controller on a runtime of its own, relaying to the central system on `port`; the
/// texts its hook saw, by direction.
struct Controller {
    runtime: tokio::runtime::Runtime,
    addr: SocketAddr,
    stations: RelayedStations,
    seen: Arc<Mutex<Vec<(String, Leg, String)>>>,
}

impl Controller {
    fn start(port: u16) -> Controller {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let controller = runtime.block_on(async move {
            LocalController::builder(&format!("ws://127.0.0.1:{port}/ocpp"))
                .expect("URL")
                .on_message(move |m| {
                    log.lock().unwrap().push((
                        m.identity.to_owned(),
                        m.direction,
                        m.text.to_owned(),
                    ));
                })
                .bind("127.0.0.1:0")
                .await
                .expect("bind")
        });
        let addr = controller.local_addr().expect("address");
        let stations = controller.stations();
        runtime.spawn(controller.run());
        Controller {
            runtime,
            addr,
            stations,
            seen,
        }
    }

    /// Sends the controller's own CALL and waits for the station's answer (the CALL's text,
    /// as the hook saw it, and the answer).
    fn call(&self, identity: &str, action: &str, payload: &Value) -> (String, Value) {
        let answer = self
            .runtime
            .block_on(self.stations.call(identity, action, &payload.to_string()))
            .unwrap_or_else(|e| panic!("{action} to {identity}: {e}"));
        let answer: Value = serde_json::from_str(&answer).expect("the answer is JSON");
        let id = answer[1].as_str().expect("an id").to_owned();
        let call = self
            .seen
            .lock()
            .unwrap()
            .iter()
            .find(|(who, direction, text)| {
                who == identity
                    && *direction == Leg::ControllerToStation
                    && serde_json::from_str::<Value>(text).is_ok_and(|t| t[1] == id.as_str())
            })
            .map(|(_, _, text)| text.clone())
            .expect("the hook saw the controller's CALL");
        (call, answer)
    }

    /// Waits (bounded) until the controller holds (or no longer holds) `identity`.
    fn wait_connected(&self, identity: &str, connected: bool) {
        let deadline = Instant::now() + INTEROP_WAIT;
        while self.stations.identities().contains(&identity.to_owned()) != connected {
            assert!(
                Instant::now() < deadline,
                "{identity} connected = {} after {INTEROP_WAIT:?}",
                !connected
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A site limit of 32 A as this version's SetChargingProfile.
fn site_limit(version: &str) -> Value {
    match version {
        "1.6" => json!({
            "connectorId": 0,
            "csChargingProfiles": {
                "chargingProfileId": 100, "stackLevel": 0,
                "chargingProfilePurpose": "ChargePointMaxProfile",
                "chargingProfileKind": "Absolute",
                "chargingSchedule": {
                    "chargingRateUnit": "A",
                    "chargingSchedulePeriod": [{"startPeriod": 0, "limit": 32.0}]
                }
            }
        }),
        _ => json!({
            "evseId": 0,
            "chargingProfile": {
                "id": 100, "stackLevel": 0,
                "chargingProfilePurpose": "ChargingStationMaxProfile",
                "chargingProfileKind": "Absolute",
                "chargingSchedule": [{
                    "id": 1, "chargingRateUnit": "A",
                    "chargingSchedulePeriod": [{"startPeriod": 0, "limit": 32.0}]
                }]
            }
        }),
    }
}

/// The texts a peer logged for one direction (`sent` or `recv`) and, for the central system,
/// one identity.
fn texts(lines: &[Value], kind: &str, identity: Option<&str>) -> Vec<String> {
    lines
        .iter()
        .filter(|l| event(l, kind) && identity.is_none_or(|id| l["id"] == id))
        .filter_map(|l| l["text"].as_str().map(str::to_owned))
        .collect()
}

/// The message id of an OCPP-J text.
fn message_id(text: &str) -> Option<String> {
    let frame: Value = serde_json::from_str(text).ok()?;
    frame[1].as_str().map(str::to_owned)
}

#[test]
fn python_stations_reach_a_python_csms_unchanged_under_their_identity_and_take_a_site_limit() {
    if !python_ocpp_present() {
        return;
    }
    let port = free_port();
    let mut csms = start_csms(port);
    let controller = Controller::start(port);
    let stations = [("1.6", "PY-FIELD-16"), ("2.0.1", "PY-FIELD-201")];
    let mut peers: Vec<Peer> = stations
        .iter()
        .map(|(version, identity)| start_station(controller.addr, version, identity))
        .collect();

    for ((version, identity), station) in stations.iter().zip(&mut peers) {
        let boot = station.wait_one("boot", |l| event(l, "boot"));
        assert_eq!(boot["status"], "Accepted", "{identity}: {boot}");
        station.wait_one("heartbeat", |l| event(l, "heartbeat"));
        // The central system sees the station under its identity, with its version.
        let connected = csms.wait_one("connected", |l| {
            event(l, "connected") && l["id"] == *identity
        });
        let subprotocol = format!("ocpp{version}");
        assert_eq!(
            connected["subprotocol"],
            subprotocol.as_str(),
            "{connected}"
        );

        // The site limit, set on the controller, reaches the station and is accepted there.
        let (call, answer) = controller.call(identity, "SetChargingProfile", &site_limit(version));
        assert_eq!(answer[0], 3, "{answer}");
        assert_eq!(answer[2]["status"], "Accepted", "{answer}");
        let profile = station.wait_one("profile", |l| event(l, "profile"));
        let period = match *version {
            "1.6" => {
                &profile["payload"]["profile"]["charging_schedule"]["charging_schedule_period"][0]
            }
            _ => {
                &profile["payload"]["profile"]["charging_schedule"][0]["charging_schedule_period"]
                    [0]
            }
        };
        assert_eq!(period["limit"], 32.0, "{profile}");
        // The station received the controller's CALL byte for byte.
        let received = station.wait_for("the controller's CALL", 1, |l| {
            event(l, "recv") && l["text"].as_str() == Some(call.as_str())
        });
        assert_eq!(received.len(), 1);
    }

    // Byte for byte, both ways: what each station sent is what the central system received
    // under its identity, in order (but the answer to the controller's own CALL, which stays
    // at the controller), and what the central system sent is what the station received (but
    // the controller's CALL).
    for ((_, identity), station) in stations.iter().zip(&mut peers) {
        let controller_ids: Vec<String> = controller
            .seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(who, d, _)| who == identity && *d == Leg::ControllerToStation)
            .filter_map(|(_, _, text)| message_id(text))
            .collect();
        assert_eq!(controller_ids.len(), 1, "one CALL of the controller's own");
        let own = |text: &String| message_id(text).is_some_and(|id| controller_ids.contains(&id));

        // boot, heartbeat, the profile's answer: 3 sent; 2 answers + the profile: 3 received.
        station.wait_for("sent", 3, |l| event(l, "sent"));
        station.wait_for("recv", 3, |l| event(l, "recv"));
        let sent: Vec<String> = texts(&station.seen, "sent", None)
            .into_iter()
            .filter(|t| !own(t))
            .collect();
        let received: Vec<String> = texts(&station.seen, "recv", None)
            .into_iter()
            .filter(|t| !own(t))
            .collect();
        assert_eq!(sent.len(), 2, "{sent:#?}");
        csms.wait_for("recv", sent.len(), |l| {
            event(l, "recv") && l["id"] == *identity
        });
        csms.wait_for("sent", received.len(), |l| {
            event(l, "sent") && l["id"] == *identity
        });
        assert_eq!(
            texts(&csms.seen, "recv", Some(identity)),
            sent,
            "{identity}: station → CSMS"
        );
        assert_eq!(
            texts(&csms.seen, "sent", Some(identity)),
            received,
            "{identity}: CSMS → station"
        );
    }
    // The central system never saw the site limit.
    assert!(
        !csms.seen.iter().any(|l| l["text"]
            .as_str()
            .is_some_and(|t| t.contains("SetChargingProfile"))),
        "{:#?}",
        csms.seen
    );
}

/// The central system killed: the station is closed (1001); the central system back on its
/// port: the station reconnects through the controller, boots again and is relayed.
fn killing_the_csms_closes_the_station_and_it_comes_back(version: &str, identity: &str) {
    if !python_ocpp_present() {
        return;
    }
    let port = free_port();
    let mut csms = start_csms(port);
    let controller = Controller::start(port);
    let mut station = start_station(controller.addr, version, identity);
    let boot = station.wait_one("boot", |l| event(l, "boot") && l["connection"] == 1);
    assert_eq!(boot["status"], "Accepted", "{boot}");
    station.wait_one("heartbeat", |l| {
        event(l, "heartbeat") && l["connection"] == 1
    });
    csms.wait_one("connected", |l| {
        event(l, "connected") && l["id"] == identity
    });
    controller.wait_connected(identity, true);

    csms.kill();
    let closed = station.wait_one("closed", |l| event(l, "closed") && l["connection"] == 1);
    assert_eq!(closed["code"], 1001, "{closed}");
    controller.wait_connected(identity, false);
    // While the central system is away the controller refuses the station (502), which
    // keeps trying.
    station.wait_one("refused", |l| event(l, "refused"));

    let mut csms = start_csms(port);
    let boot = station.wait_one("boot again", |l| event(l, "boot") && l["connection"] == 2);
    assert_eq!(boot["status"], "Accepted", "{boot}");
    csms.wait_one("connected", |l| {
        event(l, "connected") && l["id"] == identity
    });
    let booted = csms.wait_one("the BootNotification", |l| {
        event(l, "recv")
            && l["id"] == identity
            && l["text"]
                .as_str()
                .is_some_and(|t| t.contains("\"BootNotification\""))
    });
    // Relayed unchanged again: the station's second boot is the text the central system got.
    let sent = station.wait_for("boots sent", 2, |l| {
        event(l, "sent")
            && l["text"]
                .as_str()
                .is_some_and(|t| t.contains("\"BootNotification\""))
    });
    assert_eq!(booted["text"], sent[1]["text"]);
    controller.wait_connected(identity, true);
}

/// The station killed: the controller closes its upstream connection (1001).
fn killing_the_station_closes_its_upstream(version: &str, identity: &str) {
    if !python_ocpp_present() {
        return;
    }
    let port = free_port();
    let mut csms = start_csms(port);
    let controller = Controller::start(port);
    let mut station = start_station(controller.addr, version, identity);
    station.wait_one("heartbeat", |l| event(l, "heartbeat"));
    csms.wait_one("connected", |l| {
        event(l, "connected") && l["id"] == identity
    });
    controller.wait_connected(identity, true);

    station.kill();
    let gone = csms.wait_one("disconnected", |l| {
        event(l, "disconnected") && l["id"] == identity
    });
    assert_eq!(gone["code"], 1001, "{gone}");
    controller.wait_connected(identity, false);
}

#[test]
fn killing_the_python_csms_closes_a_1_6_station_which_comes_back() {
    killing_the_csms_closes_the_station_and_it_comes_back("1.6", "PY-CSMS-KILL-16");
}

#[test]
fn killing_the_python_csms_closes_a_2_0_1_station_which_comes_back() {
    killing_the_csms_closes_the_station_and_it_comes_back("2.0.1", "PY-CSMS-KILL-201");
}

#[test]
fn killing_a_python_1_6_station_closes_its_upstream() {
    killing_the_station_closes_its_upstream("1.6", "PY-ST-KILL-16");
}

#[test]
fn killing_a_python_2_0_1_station_closes_its_upstream() {
    killing_the_station_closes_its_upstream("2.0.1", "PY-ST-KILL-201");
}

/// mio-server on a free port with `--capture capture`, killed when dropped; its port.
fn start_mio_server(capture: &std::path::Path) -> (Killed, u16) {
    let mut child = Command::new(mio_server_binary())
        .args([
            "--listen",
            "127.0.0.1:0",
            "--admin",
            "off",
            "--database",
            "memory",
        ])
        .arg("--capture")
        .arg(capture)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start mio-server");
    let stdout = child.stdout.take().expect("stdout");
    let child = Killed(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    // `mio-server listening on ADDR (admin on off)`
    let line = rx.recv_timeout(INTEROP_WAIT).expect("mio-server starts");
    let addr: SocketAddr = line
        .split_whitespace()
        .nth(3)
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| {
            panic!(
                "mio-server did not start ({line:?}): is target/debug/mio-server older than \
                 its --capture option? `cargo build -p ocpp-examples --bin mio-server`"
            )
        });
    (child, addr.port())
}

#[test]
fn python_stations_reach_mio_server_unchanged_as_its_capture_shows() {
    if !python_ocpp_present() {
        return;
    }
    let capture =
        std::env::temp_dir().join(format!("ocpp-lc-python-mio-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&capture);
    let (_mio, port) = start_mio_server(&capture);
    let controller = Controller::start(port);
    for (version, identity) in [("1.6", "PY-MIO-16"), ("2.0.1", "PY-MIO-201")] {
        let mut station = start_station(controller.addr, version, identity);
        let boot = station.wait_one("boot", |l| event(l, "boot"));
        assert_eq!(boot["status"], "Accepted", "{identity}: {boot}");
        station.wait_one("heartbeat", |l| event(l, "heartbeat"));
        station.wait_for("recv", 2, |l| event(l, "recv"));
        let sent = texts(&station.seen, "sent", None);
        let received = texts(&station.seen, "recv", None);
        assert_eq!(sent.len(), 2, "{sent:#?}");

        // What mio-server's sockets carried, for this identity and version.
        let deadline = Instant::now() + INTEROP_WAIT;
        let (captured_in, captured_out) = loop {
            let file = std::fs::File::open(&capture).expect("the capture exists");
            let lines = ocpp_cli_capture(file);
            let of = |dir: &str| -> Vec<String> {
                lines
                    .iter()
                    .filter(|l| l["identity"] == identity && l["dir"] == dir)
                    .inspect(|l| assert_eq!(l["version"], format!("ocpp{version}").as_str()))
                    .filter_map(|l| l["text"].as_str().map(str::to_owned))
                    .collect()
            };
            let (i, o) = (of("in"), of("out"));
            if (i.len() >= sent.len() && o.len() >= received.len()) || Instant::now() >= deadline {
                break (i, o);
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        assert_eq!(captured_in, sent, "{identity}: station → mio-server");
        assert_eq!(captured_out, received, "{identity}: mio-server → station");
        station.kill();
    }
    let _ = std::fs::remove_file(&capture);
}

/// The lines of a capture file (ocpp-cli's format: one JSON object per line).
fn ocpp_cli_capture(file: std::fs::File) -> Vec<Value> {
    BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(&l).expect("a capture line is JSON"))
        .collect()
}
