//! The `charge-point` binary against a small CSMS written here on `ocpp-proto`'s CSMS side
//! (std::net, a thread per connection, on a free loopback port): boot, status and heartbeat;
//! a charging session in 1.6, 2.0.1 and 2.1; commands answered; reconnect with back-off after
//! the CSMS drops the link or refuses the upgrade with 401; the summary line.
//!
//! Every wait is bounded; the child is killed by its PID when the guard drops.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ocpp_messages::version::OcppVersion;
use ocpp_messages::{v1_6, v2_0_1, v2_1};
use ocpp_proto::{Answer, CallFailure, Connection, ConnectionConfig, Event, Request, Response};
use serde_json::{json, Value};

/// How long any single expectation may take.
const WAIT: Duration = Duration::from_secs(15);

// ---- the test CSMS ----

/// What the test CSMS saw, in order.
#[derive(Debug, Clone)]
enum Seen {
    Upgrade {
        at: Instant,
        identity: String,
        subprotocols: Vec<String>,
        credentials: Option<(String, Vec<u8>)>,
        accepted: bool,
    },
    Connected {
        version: OcppVersion,
    },
    Call {
        action: String,
        payload: Value,
    },
    Completed {
        action: String,
        /// The CALLRESULT's payload, or the CALLERROR's code.
        result: Result<Value, String>,
    },
    Closed,
}

#[derive(Debug)]
struct Policy {
    /// Upgrades to refuse with 401 before accepting.
    reject_401: usize,
    /// If set, the password a charge point must send.
    password: Option<Vec<u8>>,
    /// The heartbeat interval given in BootNotification's answer.
    heartbeat_s: i64,
}

#[derive(Debug)]
struct Shared {
    seen: Mutex<Vec<Seen>>,
    changed: Condvar,
    policy: Mutex<Policy>,
    /// CALLs to send to the charge point, in order.
    commands: Mutex<Vec<Request>>,
    /// Bumped to make every serving thread drop its socket without a close frame.
    drop_generation: AtomicU64,
    stop: AtomicBool,
}

impl Shared {
    fn record(&self, seen: Seen) {
        self.seen.lock().unwrap().push(seen);
        self.changed.notify_all();
    }
}

struct Csms {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl Csms {
    fn start(policy: Policy) -> Csms {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            seen: Mutex::new(Vec::new()),
            changed: Condvar::new(),
            policy: Mutex::new(policy),
            commands: Mutex::new(Vec::new()),
            drop_generation: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let acceptor = {
            let shared = shared.clone();
            std::thread::spawn(move || {
                let mut workers = Vec::new();
                while !shared.stop.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            let shared = shared.clone();
                            workers.push(std::thread::spawn(move || serve(stream, &shared)));
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(5)),
                    }
                }
                for worker in workers {
                    let _ = worker.join();
                }
            })
        };
        Csms {
            addr,
            shared,
            acceptor: Some(acceptor),
        }
    }

    fn url(&self, identity: &str) -> String {
        format!("ws://{}/ocpp/{identity}", self.addr)
    }

    fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }

    /// Waits until `done` holds for what was seen; panics after [`WAIT`].
    fn wait_for(&self, what: &str, done: impl Fn(&[Seen]) -> bool) -> Vec<Seen> {
        let deadline = Instant::now() + WAIT;
        let mut seen = self.shared.seen.lock().unwrap();
        loop {
            if done(&seen) {
                return seen.clone();
            }
            let now = Instant::now();
            assert!(
                now < deadline,
                "timed out waiting for {what}; saw {:#?}",
                *seen
            );
            seen = self
                .shared
                .changed
                .wait_timeout(seen, deadline - now)
                .unwrap()
                .0;
        }
    }

    /// Waits for the `n`-th (from 1) CALL of `action` and returns its payload.
    fn wait_call(&self, action: &str, n: usize) -> Value {
        let seen = self.wait_for(&format!("{action} #{n}"), |s| calls(s, action).len() >= n);
        calls(&seen, action)[n - 1].clone()
    }

    /// Sends a command and waits for its answer (the `n`-th of that action).
    fn command(&self, request: Request) -> Result<Value, String> {
        let action = request.action().to_string();
        let before = completions(&self.seen(), &action).len();
        self.shared.commands.lock().unwrap().push(request);
        let seen = self.wait_for(&format!("answer to {action}"), |s| {
            completions(s, &action).len() > before
        });
        completions(&seen, &action)[before].clone()
    }

    /// Drops every connection without a close handshake (like a crashed server or a proxy).
    fn drop_connections(&self) {
        self.shared.drop_generation.fetch_add(1, Ordering::SeqCst);
    }
}

impl Drop for Csms {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

fn calls(seen: &[Seen], action: &str) -> Vec<Value> {
    seen.iter()
        .filter_map(|s| match s {
            Seen::Call { action: a, payload } if a == action => Some(payload.clone()),
            _ => None,
        })
        .collect()
}

fn completions(seen: &[Seen], action: &str) -> Vec<Result<Value, String>> {
    seen.iter()
        .filter_map(|s| match s {
            Seen::Completed { action: a, result } if a == action => Some(result.clone()),
            _ => None,
        })
        .collect()
}

fn upgrades(seen: &[Seen]) -> Vec<(Instant, bool)> {
    seen.iter()
        .filter_map(|s| match s {
            Seen::Upgrade { at, accepted, .. } => Some((*at, *accepted)),
            _ => None,
        })
        .collect()
}

/// Position of the first CALL of `action` (to check the order of events).
fn position(seen: &[Seen], action: &str) -> usize {
    seen.iter()
        .position(|s| matches!(s, Seen::Call { action: a, .. } if a == action))
        .unwrap_or_else(|| panic!("no {action} in {seen:#?}"))
}

/// One connection of the test CSMS: blocking reads with a short timeout, then the connection's
/// events, commands and output.
fn serve(mut stream: TcpStream, shared: &Shared) {
    let generation = shared.drop_generation.load(Ordering::SeqCst);
    stream
        .set_read_timeout(Some(Duration::from_millis(5)))
        .unwrap();
    stream.set_nodelay(true).unwrap();
    let mut conn =
        Connection::accept_incoming(Instant::now(), Arc::new(ConnectionConfig::default()));
    let mut version = OcppVersion::V1_6;
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        if shared.stop.load(Ordering::Relaxed)
            || shared.drop_generation.load(Ordering::SeqCst) != generation
        {
            return; // dropping the stream closes it without a close frame
        }
        let now = Instant::now();
        match stream.read(&mut buf) {
            Ok(0) => conn.handle_eof(now),
            Ok(n) => conn.handle_data(now, &buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => conn.handle_eof(now),
        }
        if conn.poll_timeout().is_some_and(|t| t <= now) {
            conn.handle_timeout(now);
        }
        while let Some(event) = conn.poll_event() {
            match event {
                Event::UpgradeRequested(upgrade) => {
                    let credentials = upgrade.credentials.as_ref().map(|c| {
                        (
                            c.user().unwrap_or_default().to_owned(),
                            c.password().to_vec(),
                        )
                    });
                    let mut policy = shared.policy.lock().unwrap();
                    let password_ok = match &policy.password {
                        None => true,
                        Some(p) => credentials.as_ref().is_some_and(|(_, got)| got == p),
                    };
                    let accepted = policy.reject_401 == 0 && password_ok;
                    if policy.reject_401 > 0 {
                        policy.reject_401 -= 1;
                    }
                    drop(policy);
                    shared.record(Seen::Upgrade {
                        at: now,
                        identity: upgrade.identity.as_str().to_owned(),
                        subprotocols: upgrade.offered_subprotocols.clone(),
                        credentials,
                        accepted,
                    });
                    if accepted {
                        conn.accept(now).unwrap();
                    } else {
                        conn.reject(now, 401).unwrap();
                    }
                }
                Event::Connected { version: v } => {
                    version = v;
                    shared.record(Seen::Connected { version: v });
                }
                Event::Call { id, request } => {
                    let action = request.action().to_owned();
                    let payload = serde_json::to_value(&request).unwrap();
                    let heartbeat_s = shared.policy.lock().unwrap().heartbeat_s;
                    let response = answer(version, &action, heartbeat_s);
                    shared.record(Seen::Call { action, payload });
                    conn.answer(now, &id, Answer::Result(response)).unwrap();
                }
                Event::CallCompleted {
                    action, outcome, ..
                } => {
                    let result = match outcome {
                        Ok(r) => Ok(serde_json::to_value(&r).unwrap()),
                        Err(CallFailure::ErrorResponse { code, .. }) => {
                            Err(code.as_str(version).to_owned())
                        }
                        other => Err(format!("{other:?}")),
                    };
                    shared.record(Seen::Completed {
                        action: action.to_owned(),
                        result,
                    });
                }
                Event::Closed(_) => {
                    let _ = stream.write_all(conn.pending_transmit());
                    shared.record(Seen::Closed);
                    return;
                }
                _ => {}
            }
        }
        if conn.is_open() {
            let commands: Vec<Request> = std::mem::take(&mut *shared.commands.lock().unwrap());
            for request in commands {
                conn.call(now, request).unwrap();
            }
        }
        let pending = conn.pending_transmit().len();
        if pending > 0 {
            if stream.write_all(conn.pending_transmit()).is_err() {
                conn.handle_eof(now);
            } else {
                conn.advance_transmit(pending);
            }
        }
    }
}

/// The test CSMS's answer to a charge point's CALL, for any version.
fn answer(version: OcppVersion, action: &str, heartbeat_s: i64) -> Response {
    let now = "2026-01-01T00:00:00Z";
    let payload = match (version, action) {
        (_, "BootNotification") => {
            json!({"status": "Accepted", "currentTime": now, "interval": heartbeat_s})
        }
        (_, "Heartbeat") => json!({ "currentTime": now }),
        (OcppVersion::V1_6, "Authorize") => json!({"idTagInfo": {"status": "Accepted"}}),
        (_, "Authorize") => json!({"idTokenInfo": {"status": "Accepted"}}),
        (_, "StartTransaction") => {
            json!({"idTagInfo": {"status": "Accepted"}, "transactionId": 42})
        }
        (_, "DataTransfer") => json!({"status": "Accepted"}),
        _ => json!({}),
    };
    response(version, action, &payload)
}

fn response(version: OcppVersion, action: &str, payload: &Value) -> Response {
    let text = payload.to_string();
    match version {
        OcppVersion::V1_6 => Response::from(v1_6::decode_result(action, &text).unwrap()),
        OcppVersion::V2_0_1 => Response::from(v2_0_1::decode_result(action, &text).unwrap()),
        OcppVersion::V2_1 => Response::from(v2_1::decode_result(action, &text).unwrap()),
    }
}

fn request(version: OcppVersion, action: &str, payload: Value) -> Request {
    let text = payload.to_string();
    match version {
        OcppVersion::V1_6 => Request::from(v1_6::decode_call(action, &text).unwrap()),
        OcppVersion::V2_0_1 => Request::from(v2_0_1::decode_call(action, &text).unwrap()),
        OcppVersion::V2_1 => Request::from(v2_1::decode_call(action, &text).unwrap()),
    }
}

// ---- the charge point under test ----

/// The `charge-point` child; killed by its PID on drop. Its stderr (the logs) goes to a file
/// that is printed when a test fails.
struct ChargePoint {
    child: Child,
    log: PathBuf,
}

impl ChargePoint {
    fn spawn(args: &[&str]) -> ChargePoint {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let log = std::env::temp_dir().join(format!(
            "charge-point-test-{}-{}.log",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let child = Command::new(env!("CARGO_BIN_EXE_charge-point"))
            .args(args)
            .env("RUST_LOG", "debug")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(File::create(&log).unwrap())
            .spawn()
            .unwrap();
        ChargePoint { child, log }
    }

    /// Waits for the child to exit by itself (bounded) and returns its stdout.
    fn wait_output(&mut self, within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "exit status {status}");
                let mut out = String::new();
                self.child
                    .stdout
                    .take()
                    .unwrap()
                    .read_to_string(&mut out)
                    .unwrap();
                return out;
            }
            assert!(
                Instant::now() < deadline,
                "charge-point did not exit in time"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for ChargePoint {
    fn drop(&mut self) {
        // `Child::kill` signals this child's PID only.
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            eprintln!("---- charge-point log ----\n{log}");
        }
        let _ = std::fs::remove_file(&self.log);
    }
}

fn default_policy() -> Policy {
    Policy {
        reject_401: 0,
        password: None,
        heartbeat_s: 1,
    }
}

fn unix_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

fn summary_value(summary: &str, key: &str) -> u64 {
    summary
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key} in {summary}"))
        .parse()
        .unwrap()
}

// ---- the tests ----

#[test]
fn boots_reports_status_and_heartbeats_v16() {
    let csms = Csms::start(default_policy());
    let _cp = ChargePoint::spawn(&["--url", &csms.url("CP001"), "--version", "1.6"]);
    let boot = csms.wait_call("BootNotification", 1);
    assert_eq!(boot["chargePointVendor"], "OcppWs");
    csms.wait_call("Heartbeat", 1);
    let seen = csms.wait_for("two StatusNotifications", |s| {
        calls(s, "StatusNotification").len() >= 2
    });
    let Seen::Upgrade {
        identity,
        subprotocols,
        credentials,
        ..
    } = &seen[0]
    else {
        panic!("{seen:?}")
    };
    assert_eq!(identity, "CP001");
    assert_eq!(subprotocols, &vec!["ocpp1.6".to_string()]);
    assert!(credentials.is_none());
    let statuses = calls(&seen, "StatusNotification");
    let connectors: Vec<i64> = statuses
        .iter()
        .map(|s| s["connectorId"].as_i64().unwrap())
        .collect();
    assert_eq!(connectors, vec![0, 1]);
    assert!(statuses.iter().all(|s| s["status"] == "Available"));
    // Boot, then status, then heartbeat at the interval the CSMS gave.
    assert!(position(&seen, "BootNotification") < position(&seen, "StatusNotification"));
    assert!(position(&seen, "StatusNotification") < position(&seen, "Heartbeat"));
}

#[test]
fn offers_versions_in_order_and_boots_v21() {
    let csms = Csms::start(default_policy());
    let _cp = ChargePoint::spawn(&[
        "--url",
        &csms.url("CP-21"),
        "--version",
        "2.1",
        "--version",
        "1.6",
    ]);
    let boot = csms.wait_call("BootNotification", 1);
    assert_eq!(boot["reason"], "PowerUp");
    assert_eq!(boot["chargingStation"]["vendorName"], "OcppWs");
    let status = csms.wait_call("StatusNotification", 1);
    assert_eq!(status["connectorStatus"], "Available");
    csms.wait_call("Heartbeat", 1);
    let seen = csms.seen();
    let Seen::Upgrade { subprotocols, .. } = &seen[0] else {
        panic!("{seen:?}")
    };
    assert_eq!(
        subprotocols,
        &vec!["ocpp2.1".to_string(), "ocpp1.6".to_string()]
    );
    assert!(matches!(
        seen[1],
        Seen::Connected {
            version: OcppVersion::V2_1
        }
    ));
}

#[test]
fn plays_a_session_v16() {
    let csms = Csms::start(Policy {
        heartbeat_s: 60,
        ..default_policy()
    });
    let _cp = ChargePoint::spawn(&[
        "--url",
        &csms.url("CP001"),
        "--version",
        "1.6",
        "--session",
        "--session-s",
        "1.5",
        "--meter-interval-s",
        "0.4",
        "--id-tag",
        "TAG-16",
    ]);
    let stop = csms.wait_call("StopTransaction", 1);
    let connector_1 = |s: &[Seen]| -> Vec<String> {
        calls(s, "StatusNotification")
            .iter()
            .filter(|s| s["connectorId"] == 1)
            .map(|s| s["status"].as_str().unwrap().to_owned())
            .collect()
    };
    let seen = csms.wait_for("the statuses after the stop", |s| connector_1(s).len() >= 5);
    assert_eq!(
        connector_1(&seen),
        vec![
            "Available",
            "Preparing",
            "Charging",
            "Finishing",
            "Available"
        ]
    );
    let authorize = &calls(&seen, "Authorize")[0];
    assert_eq!(authorize["idTag"], "TAG-16");
    let start = &calls(&seen, "StartTransaction")[0];
    assert_eq!(start["idTag"], "TAG-16");
    assert_eq!(start["connectorId"], 1);
    let meters = calls(&seen, "MeterValues");
    assert!(!meters.is_empty(), "{seen:#?}");
    assert!(meters.iter().all(|m| m["transactionId"] == 42));
    assert_eq!(stop["transactionId"], 42);
    assert_eq!(stop["reason"], "Local");
    assert!(stop["meterStop"].as_i64().unwrap() > start["meterStart"].as_i64().unwrap());
    assert!(position(&seen, "Authorize") < position(&seen, "StartTransaction"));
    assert!(position(&seen, "StartTransaction") < position(&seen, "MeterValues"));
    assert!(position(&seen, "MeterValues") < position(&seen, "StopTransaction"));
}

#[test]
fn plays_a_session_v201_and_v21() {
    for version in ["2.0.1", "2.1"] {
        let csms = Csms::start(Policy {
            heartbeat_s: 60,
            ..default_policy()
        });
        let _cp = ChargePoint::spawn(&[
            "--url",
            &csms.url("CP002"),
            "--version",
            version,
            "--session",
            "--session-s",
            "1.5",
            "--meter-interval-s",
            "0.4",
        ]);
        let seen = csms.wait_for("TransactionEvent(Ended)", |s| {
            calls(s, "TransactionEvent")
                .iter()
                .any(|e| e["eventType"] == "Ended")
        });
        let authorize = &calls(&seen, "Authorize")[0];
        assert_eq!(authorize["idToken"]["idToken"], "SIMTAG0001");
        let events = calls(&seen, "TransactionEvent");
        let types: Vec<&str> = events
            .iter()
            .map(|e| e["eventType"].as_str().unwrap())
            .collect();
        assert_eq!(types.first(), Some(&"Started"), "{version}: {types:?}");
        assert_eq!(types.last(), Some(&"Ended"));
        assert!(types.contains(&"Updated"), "{types:?}");
        let id = &events[0]["transactionInfo"]["transactionId"];
        assert!(events
            .iter()
            .all(|e| &e["transactionInfo"]["transactionId"] == id));
        let seq: Vec<i64> = events
            .iter()
            .map(|e| e["seqNo"].as_i64().unwrap())
            .collect();
        assert_eq!(seq, (0..events.len() as i64).collect::<Vec<_>>());
        assert_eq!(events[0]["idToken"]["idToken"], "SIMTAG0001");
        assert_eq!(
            events.last().unwrap()["transactionInfo"]["stoppedReason"],
            "Local"
        );
        assert!(position(&seen, "Authorize") < position(&seen, "TransactionEvent"));
    }
}

#[test]
fn answers_commands_v16() {
    let csms = Csms::start(Policy {
        heartbeat_s: 60,
        ..default_policy()
    });
    let _cp = ChargePoint::spawn(&["--url", &csms.url("CP001"), "--version", "1.6"]);
    let v = OcppVersion::V1_6;
    csms.wait_call("StatusNotification", 2);

    let config = csms
        .command(request(
            v,
            "GetConfiguration",
            json!({"key": ["HeartbeatInterval", "Nope"]}),
        ))
        .unwrap();
    assert_eq!(config["configurationKey"][0]["key"], "HeartbeatInterval");
    assert_eq!(config["configurationKey"][0]["value"], "60");
    assert_eq!(config["unknownKey"], json!(["Nope"]));
    let change = csms
        .command(request(
            v,
            "ChangeConfiguration",
            json!({"key": "HeartbeatInterval", "value": "1"}),
        ))
        .unwrap();
    assert_eq!(change["status"], "Accepted");
    csms.wait_call("Heartbeat", 1);

    let trigger = csms
        .command(request(
            v,
            "TriggerMessage",
            json!({"requestedMessage": "StatusNotification", "connectorId": 1}),
        ))
        .unwrap();
    assert_eq!(trigger["status"], "Accepted");
    csms.wait_call("StatusNotification", 3);

    let unsupported = csms.command(request(v, "ClearCache", json!({})));
    assert_eq!(unsupported, Err("NotSupported".to_string()));

    let start = csms
        .command(request(
            v,
            "RemoteStartTransaction",
            json!({"idTag": "REMOTE1", "connectorId": 1}),
        ))
        .unwrap();
    assert_eq!(start["status"], "Accepted");
    let started = csms.wait_call("StartTransaction", 1);
    assert_eq!(started["idTag"], "REMOTE1");
    // A second start while one runs is rejected.
    let again = csms
        .command(request(
            v,
            "RemoteStartTransaction",
            json!({"idTag": "REMOTE2"}),
        ))
        .unwrap();
    assert_eq!(again["status"], "Rejected");
    let stop = csms
        .command(request(
            v,
            "RemoteStopTransaction",
            json!({"transactionId": 42}),
        ))
        .unwrap();
    assert_eq!(stop["status"], "Accepted");
    let stopped = csms.wait_call("StopTransaction", 1);
    assert_eq!(
        (
            stopped["transactionId"].as_i64(),
            stopped["reason"].as_str()
        ),
        (Some(42), Some("Remote"))
    );

    let reset = csms
        .command(request(v, "Reset", json!({"type": "Soft"})))
        .unwrap();
    assert_eq!(reset["status"], "Accepted");
    // Reset: the charge point closes, reconnects at once and boots again.
    csms.wait_call("BootNotification", 2);
    let seen = csms.seen();
    assert_eq!(upgrades(&seen).len(), 2);
    assert!(seen.iter().any(|s| matches!(s, Seen::Closed)));
}

#[test]
fn answers_commands_v201() {
    let csms = Csms::start(Policy {
        heartbeat_s: 60,
        ..default_policy()
    });
    let _cp = ChargePoint::spawn(&["--url", &csms.url("CP003"), "--version", "2.0.1"]);
    let v = OcppVersion::V2_0_1;
    csms.wait_call("StatusNotification", 1);

    let get = csms
        .command(request(
            v,
            "GetVariables",
            json!({"getVariableData": [
                {"component": {"name": "OCPPCommCtrlr"}, "variable": {"name": "HeartbeatInterval"}},
                {"component": {"name": "OCPPCommCtrlr"}, "variable": {"name": "Nope"}},
            ]}),
        ))
        .unwrap();
    assert_eq!(get["getVariableResult"][0]["attributeStatus"], "Accepted");
    assert_eq!(get["getVariableResult"][0]["attributeValue"], "60");
    assert_eq!(
        get["getVariableResult"][1]["attributeStatus"],
        "UnknownVariable"
    );
    let set = csms
        .command(request(
            v,
            "SetVariables",
            json!({"setVariableData": [{
                "component": {"name": "OCPPCommCtrlr"},
                "variable": {"name": "RetryBackOffWaitMinimum"},
                "attributeValue": "1",
            }]}),
        ))
        .unwrap();
    assert_eq!(set["setVariableResult"][0]["attributeStatus"], "Accepted");

    let start = csms
        .command(request(
            v,
            "RequestStartTransaction",
            json!({"idToken": {"idToken": "R1", "type": "ISO14443"}, "remoteStartId": 7}),
        ))
        .unwrap();
    assert_eq!(start["status"], "Accepted");
    let started = csms.wait_call("TransactionEvent", 1);
    assert_eq!(started["eventType"], "Started");
    assert_eq!(started["triggerReason"], "RemoteStart");
    assert_eq!(started["transactionInfo"]["remoteStartId"], 7);
    let id = started["transactionInfo"]["transactionId"].clone();
    let stop = csms
        .command(request(
            v,
            "RequestStopTransaction",
            json!({"transactionId": id}),
        ))
        .unwrap();
    assert_eq!(stop["status"], "Accepted");
    let seen = csms.wait_for("TransactionEvent(Ended)", |s| {
        calls(s, "TransactionEvent")
            .iter()
            .any(|e| e["eventType"] == "Ended")
    });
    let ended = calls(&seen, "TransactionEvent").pop().unwrap();
    assert_eq!(ended["triggerReason"], "RemoteStop");
    assert_eq!(ended["transactionInfo"]["stoppedReason"], "Remote");

    let trigger = csms
        .command(request(
            v,
            "TriggerMessage",
            json!({"requestedMessage": "Heartbeat"}),
        ))
        .unwrap();
    assert_eq!(trigger["status"], "Accepted");
    csms.wait_call("Heartbeat", 1);

    let reset = csms
        .command(request(v, "Reset", json!({"type": "Immediate"})))
        .unwrap();
    assert_eq!(reset["status"], "Accepted");
    let boot = csms.wait_call("BootNotification", 2);
    assert_eq!(boot["reason"], "RemoteReset");
}

#[test]
fn reconnects_within_the_back_off_after_the_csms_drops_the_link() {
    let csms = Csms::start(Policy {
        heartbeat_s: 60,
        ..default_policy()
    });
    let _cp = ChargePoint::spawn(&[
        "--url",
        &csms.url("CP001"),
        "--version",
        "1.6",
        "--retry-wait-min-s",
        "0.5",
        "--retry-random-range-s",
        "0.3",
    ]);
    csms.wait_call("StatusNotification", 2);
    let dropped_at = Instant::now();
    csms.drop_connections();
    csms.wait_call("BootNotification", 2);
    let seen = csms.seen();
    let ups = upgrades(&seen);
    assert_eq!(ups.len(), 2, "{seen:#?}");
    let waited = ups[1].0 - dropped_at;
    // RetryBackOffWaitMinimum plus at most RetryBackOffRandomRange (and some scheduling).
    assert!(waited >= Duration::from_millis(450), "{waited:?}");
    assert!(waited <= Duration::from_millis(800 + 1500), "{waited:?}");

    // A second loss of an open connection starts the schedule again (not doubled).
    let dropped_at = Instant::now();
    csms.drop_connections();
    csms.wait_call("BootNotification", 3);
    let ups = upgrades(&csms.seen());
    let waited = ups[2].0 - dropped_at;
    assert!(waited >= Duration::from_millis(450), "{waited:?}");
    assert!(waited <= Duration::from_millis(800 + 1500), "{waited:?}");
}

#[test]
fn keeps_the_transaction_across_a_lost_connection_v16() {
    let csms = Csms::start(Policy {
        heartbeat_s: 60,
        ..default_policy()
    });
    let _cp = ChargePoint::spawn(&[
        "--url",
        &csms.url("CP001"),
        "--version",
        "1.6",
        "--session",
        "--session-s",
        "1.2",
        "--meter-interval-s",
        "0.3",
        "--retry-wait-min-s",
        "2",
        "--retry-random-range-s",
        "0",
    ]);
    csms.wait_call("StartTransaction", 1);
    // The link goes down during the session; the session ends while offline.
    csms.drop_connections();
    let stop = csms.wait_call("StopTransaction", 1);
    assert_eq!(stop["transactionId"], 42);
    let seen = csms.seen();
    let second_boot = seen
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s, Seen::Call { action, .. } if action == "BootNotification"))
        .nth(1)
        .map(|(i, _)| i)
        .expect("a second boot");
    // The queued messages went out after the second boot, in order, with the CSMS's id.
    assert!(position(&seen, "StopTransaction") > second_boot);
    let late_meters: Vec<&Value> = seen[second_boot..]
        .iter()
        .filter_map(|s| match s {
            Seen::Call { action, payload } if action == "MeterValues" => Some(payload),
            _ => None,
        })
        .collect();
    assert!(!late_meters.is_empty(), "{seen:#?}");
    assert!(late_meters.iter().all(|m| m["transactionId"] == 42));
    assert_eq!(calls(&seen, "StartTransaction").len(), 1);
}

#[test]
fn a_transaction_survives_a_restart_with_a_state_dir_v201() {
    let csms = Csms::start(Policy {
        heartbeat_s: 60,
        ..default_policy()
    });
    let dir = std::env::temp_dir().join(format!("charge-point-state-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let args = [
        "--url",
        &csms.url("CP-RESTART"),
        "--version",
        "2.0.1",
        "--session",
        "--session-s",
        "600",
        "--meter-interval-s",
        "0.2",
        "--state-dir",
        dir.to_str().unwrap(),
    ];
    let events_of = |seen: &[Seen]| calls(seen, "TransactionEvent");
    let cp = ChargePoint::spawn(&args);
    let seen = csms.wait_for("a Started and two Updated events", |s| {
        events_of(s)
            .iter()
            .filter(|e| e["eventType"] == "Updated")
            .count()
            >= 2
    });
    let id = events_of(&seen)[0]["transactionInfo"]["transactionId"].clone();
    // Killed (SIGKILL) during the transaction, then started again on the same state.
    drop(cp);
    let _cp = ChargePoint::spawn(&args);
    let seen = csms.wait_for("the Ended event", |s| {
        events_of(s).iter().any(|e| e["eventType"] == "Ended")
    });
    let events: Vec<Value> = events_of(&seen)
        .into_iter()
        .filter(|e| e["transactionInfo"]["transactionId"] == id)
        .collect();
    let ended = events.last().unwrap();
    assert_eq!(ended["eventType"], "Ended");
    assert_eq!(ended["transactionInfo"]["stoppedReason"], "PowerLoss");
    // seqNo goes on across the restart (a resend of the same message may repeat one).
    let mut seq: Vec<i64> = events
        .iter()
        .map(|e| e["seqNo"].as_i64().unwrap())
        .collect();
    seq.dedup();
    assert_eq!(
        seq,
        (0..seq.len() as i64).collect::<Vec<_>>(),
        "{events:#?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn backs_off_and_retries_after_401() {
    let password = "0123456789abcdef";
    let csms = Csms::start(Policy {
        reject_401: 2,
        password: Some(password.as_bytes().to_vec()),
        heartbeat_s: 60,
    });
    let _cp = ChargePoint::spawn(&[
        "--url",
        &csms.url("CP401"),
        "--version",
        "1.6",
        "--password",
        password,
        "--retry-wait-min-s",
        "0.3",
        "--retry-random-range-s",
        "0",
        "--retry-repeat-times",
        "3",
    ]);
    csms.wait_call("BootNotification", 1);
    let seen = csms.seen();
    let ups = upgrades(&seen);
    assert_eq!(
        ups.iter().map(|u| u.1).collect::<Vec<_>>(),
        vec![false, false, true]
    );
    // 0.3 s, then doubled: 0.6 s.
    let first = ups[1].0 - ups[0].0;
    let second = ups[2].0 - ups[1].0;
    assert!(
        first >= Duration::from_millis(280) && first < Duration::from_millis(1800),
        "{first:?}"
    );
    assert!(
        second >= Duration::from_millis(580) && second < Duration::from_millis(2100),
        "{second:?}"
    );
    for s in &seen {
        if let Seen::Upgrade { credentials, .. } = s {
            let (user, pass) = credentials
                .as_ref()
                .expect("Basic credentials sent up front");
            assert_eq!(user, "CP401");
            assert_eq!(pass, password.as_bytes());
        }
    }
}

#[test]
fn prints_the_summary_with_bench_latency_and_gaps() {
    let csms = Csms::start(Policy {
        heartbeat_s: 60,
        ..default_policy()
    });
    let mut cp = ChargePoint::spawn(&[
        "--url",
        &csms.url("CP001"),
        "--version",
        "1.6",
        "--duration-s",
        "4",
    ]);
    csms.wait_call("StatusNotification", 2);
    let v = OcppVersion::V1_6;
    for seq in [1, 2, 5] {
        let data = format!("{seq}:{}", unix_nanos());
        let answer = csms
            .command(request(
                v,
                "DataTransfer",
                json!({"vendorId": "bench", "messageId": "ts", "data": data}),
            ))
            .unwrap();
        assert_eq!(answer["status"], "Accepted");
    }
    let out = cp.wait_output(Duration::from_secs(15));
    let summary = out
        .lines()
        .find(|l| l.starts_with("summary:"))
        .unwrap_or_else(|| panic!("no summary in {out:?}"));
    assert_eq!(summary_value(summary, "stations"), 1);
    assert_eq!(summary_value(summary, "connections"), 1);
    assert_eq!(summary_value(summary, "booted"), 1);
    assert_eq!(summary_value(summary, "commands"), 3);
    assert_eq!(summary_value(summary, "datatransfer_n"), 3);
    assert_eq!(summary_value(summary, "sequence_gaps"), 2);
    assert!(summary_value(summary, "calls_sent") >= 3); // boot + 2 statuses
    assert_eq!(
        summary_value(summary, "calls_sent"),
        summary_value(summary, "calls_answered")
    );
    let max = summary_value(summary, "max");
    assert!(max > 0 && max < 5_000_000, "{summary}");
    // The charge point closed its connection cleanly before exiting.
    csms.wait_for("the close", |s| s.iter().any(|e| matches!(e, Seen::Closed)));
}

#[test]
fn simulates_many_charge_points() {
    let csms = Csms::start(Policy {
        heartbeat_s: 60,
        ..default_policy()
    });
    let _cp = ChargePoint::spawn(&[
        "--url",
        &csms.url("ignored"),
        "--version",
        "1.6",
        "--count",
        "5",
    ]);
    let seen = csms.wait_for("five boots", |s| calls(s, "BootNotification").len() >= 5);
    let mut identities: Vec<String> = seen
        .iter()
        .filter_map(|s| match s {
            Seen::Upgrade { identity, .. } => Some(identity.clone()),
            _ => None,
        })
        .collect();
    identities.sort();
    assert_eq!(
        identities,
        vec!["CP0001", "CP0002", "CP0003", "CP0004", "CP0005"]
    );
}

#[test]
fn help_and_bad_arguments() {
    let out = Command::new(env!("CARGO_BIN_EXE_charge-point"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("--retry-wait-min-s"));
    let out = Command::new(env!("CARGO_BIN_EXE_charge-point"))
        .args(["--version", "9"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
