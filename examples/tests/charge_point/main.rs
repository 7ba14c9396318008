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

mod boot;
mod commands;
mod reconnects;
mod sessions;
mod summary_and_cli;

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
struct CsmsShared {
    seen: Mutex<Vec<Seen>>,
    changed: Condvar,
    policy: Mutex<Policy>,
    /// CALLs to send to the charge point, in order.
    commands: Mutex<Vec<Request>>,
    /// Bumped to make every serving thread drop its socket without a close frame.
    drop_generation: AtomicU64,
    stop: AtomicBool,
}

impl CsmsShared {
    fn record(&self, seen: Seen) {
        self.seen.lock().unwrap().push(seen);
        self.changed.notify_all();
    }
}

struct Csms {
    addr: SocketAddr,
    shared: Arc<CsmsShared>,
    acceptor: Option<JoinHandle<()>>,
}

impl Csms {
    fn start(policy: Policy) -> Csms {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(CsmsShared {
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
fn serve(mut stream: TcpStream, shared: &CsmsShared) {
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
