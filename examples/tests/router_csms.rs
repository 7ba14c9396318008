//! The `router-csms` example (a CSMS on `ocpp-tokio`'s typed router) against charge points on
//! the PyPI `ocpp` library (2.1.0), OCPP 1.6 and 2.0.1 (`tests/interop/router_csms_cp.py`): each
//! boots, heartbeats, reports two connector statuses, authorizes a good and a bad token, starts
//! a transaction and sends meter values; while it is connected the test reads
//! `GET /chargepoints` and sends remote starts through `POST /chargepoints/{id}/remote-start`,
//! then lets it stop the transaction and leave.
//!
//! Also checks the example's claims: its OCPP handling (between the `OCPP handling` markers),
//! one handler per concept for both versions, takes no more than 50 lines of code, where the
//! same CSMS took 89 on Python `ocpp` and 101 written per action and version.
//!
//! Needs python3 with `ocpp` and `websockets` (`bash scripts/interop-ocpp.sh --deps-only`):
//! skipped with a printed reason when missing, failed when `OCPP_INTEROP_REQUIRED=1`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/interop/router_csms_cp.py"
);
const SOURCE: &str = include_str!("../src/bin/router-csms/main.rs");
/// The lines of OCPP handling of the same CSMS on Python `ocpp`.
const PYTHON_LINES: usize = 89;
/// The bound on ours, on the model (issue 39).
const MODEL_LINES: usize = 50;
/// The bound of every wait.
const TIMEOUT: Duration = Duration::from_secs(30);

fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Whether python has `ocpp` and `websockets`; fails instead of skipping when required.
fn python_ocpp_present() -> bool {
    let present = Command::new(python())
        .args(["-c", "import ocpp, websockets"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !present {
        let reason = "python3 with `ocpp` and `websockets` is missing \
                      (install: bash scripts/interop-ocpp.sh --deps-only)";
        assert!(
            std::env::var("OCPP_INTEROP_REQUIRED").as_deref() != Ok("1"),
            "OCPP_INTEROP_REQUIRED=1 but {reason}"
        );
        eprintln!("SKIPPED: {reason}");
    }
    present
}

/// A child process, killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The lines a child prints, read by a thread of their own.
fn lines_of(output: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (lines_tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(output).lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    lines
}

/// The server, on free loopback ports.
struct Csms {
    _process: Killed,
    ocpp: SocketAddr,
    http: SocketAddr,
}

impl Csms {
    fn start() -> Csms {
        let mut child = Command::new(env!("CARGO_BIN_EXE_router-csms"))
            .args(["--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("router-csms starts");
        let stdout = child.stdout.take().unwrap();
        let process = Killed(child);
        let first = lines_of(stdout)
            .recv_timeout(TIMEOUT)
            .expect("router-csms prints its addresses");
        let addresses: Vec<&str> = first.split(' ').collect();
        let ["listening", "on", ocpp, "http", http] = addresses[..] else {
            panic!("unexpected first line {first:?}");
        };
        Csms {
            ocpp: ocpp.parse().unwrap(),
            http: http.parse().unwrap(),
            _process: process,
        }
    }

    /// One HTTP/1.1 request (`Connection: close`): the status and the JSON body.
    fn http(&self, method: &str, path: &str, body: &str) -> (u16, Value) {
        let mut stream = TcpStream::connect_timeout(&self.http, TIMEOUT).unwrap();
        stream.set_read_timeout(Some(TIMEOUT)).unwrap();
        stream.set_write_timeout(Some(TIMEOUT)).unwrap();
        let length = body.len();
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\
             Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n{body}",
            self.http
        );
        stream.write_all(request.as_bytes()).unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
        let status = head.split(' ').nth(1).and_then(|s| s.parse().ok());
        let status = status.unwrap_or_else(|| panic!("a status line: {head:?}"));
        let body = serde_json::from_str(body)
            .unwrap_or_else(|e| panic!("{method} {path}: a JSON body ({e}): {body:?}"));
        (status, body)
    }

    /// `GET /chargepoints`: the entry of `identity`.
    /// The entry of a connected charge point in `GET /chargepoints`, if listed.
    fn find(&self, identity: &str) -> Option<Value> {
        let (status, list) = self.http("GET", "/chargepoints", "");
        assert_eq!(status, 200, "GET /chargepoints: {list}");
        let list = list.as_array().expect("a JSON list");
        list.iter().find(|cp| cp["identity"] == identity).cloned()
    }

    fn charge_point(&self, identity: &str) -> Value {
        self.find(identity)
            .unwrap_or_else(|| panic!("{identity} is not listed"))
    }

    fn remote_start(&self, identity: &str, body: &str) -> (u16, Value) {
        let path = format!("/chargepoints/{identity}/remote-start");
        self.http("POST", &path, body)
    }
}

/// The Python charge point: its stdout lines as they come, stderr at the end.
struct PythonCp {
    process: Killed,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    printed: Vec<String>,
    stderr: Option<JoinHandle<String>>,
}

impl PythonCp {
    fn start(csms: &Csms, version: &str, identity: &str) -> PythonCp {
        let url = format!("ws://{}/ocpp", csms.ocpp);
        let mut child = Command::new(python())
            .args([SCRIPT, &url, version, identity, "--timeout", "30"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python3 starts");
        let stdin = child.stdin.take();
        let lines = lines_of(child.stdout.take().unwrap());
        let mut stderr = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        PythonCp {
            process: Killed(child),
            stdin,
            lines,
            printed: Vec::new(),
            stderr: Some(stderr),
        }
    }

    /// Reads lines until one starts with `prefix`; returns its rest.
    fn wait_for(&mut self, prefix: &str) -> String {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.printed.push(line.clone());
                    if let Some(rest) = line.strip_prefix(prefix) {
                        return rest.to_owned();
                    }
                }
                Err(e) => panic!("{prefix:?} never came ({e}): {}", self.output()),
            }
        }
    }

    /// Lets the charge point stop its transaction and leave; waits for its exit.
    fn finish(&mut self) {
        let mut stdin = self.stdin.take().expect("not finished yet");
        stdin.write_all(b"go\n").unwrap();
        drop(stdin);
        let deadline = Instant::now() + TIMEOUT;
        let status = loop {
            if let Some(status) = self.process.0.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "python still runs: {}",
                self.output()
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.printed.push(line);
        }
        assert!(status.success(), "python-ocpp failed: {}", self.output());
    }

    /// What it printed so far (stderr once it has exited).
    fn output(&mut self) -> String {
        let stderr = match self.process.0.try_wait() {
            Ok(Some(_)) => self.stderr.take().and_then(|t| t.join().ok()),
            _ => None,
        };
        let stdout = self.printed.join("\n");
        format!("\n{stdout}\n{}", stderr.unwrap_or_default())
    }
}

/// One charge point's run, checked through the HTTP API while it is connected.
fn run_charge_point(csms: &Csms, version: &str, identity: &str, expected: &Value) {
    let mut cp = PythonCp::start(csms, version, identity);
    let transaction = cp.wait_for("READY ");

    let entry = csms.charge_point(identity);
    assert_eq!(entry["version"], version, "{entry}");
    assert_eq!(entry["statuses"], expected["statuses"], "{entry}");
    assert_eq!(entry["energy"], expected["energy"], "{entry}");
    let mut open = serde_json::Map::new();
    open.insert(transaction.to_owned(), json!("1"));
    assert_eq!(entry["transactions"], Value::Object(open), "{entry}");

    // The charge point accepts; a failing one says whether the CALL may have reached it.
    let (status, answer) = csms.remote_start(identity, r#"{"idTag": "TAG-OK"}"#);
    assert_eq!((status, &answer), (200, &json!({ "status": "Accepted" })));
    assert_eq!(cp.wait_for("REMOTE-START "), expected["remote start"]);
    let (status, answer) = csms.remote_start(identity, r#"{"idTag": "TAG-FAIL"}"#);
    assert_eq!(status, 502, "{answer}");
    assert_eq!(answer["outcome"], "call_error", "{answer}");
    assert_eq!(answer["delivery"], "answered", "{answer}");
    let error = answer["error"].as_str().unwrap();
    assert!(error.contains("GenericError"), "{answer}");
    // Without a body: the first token of the list.
    let (status, answer) = csms.remote_start(identity, "");
    assert_eq!((status, &answer), (200, &json!({ "status": "Accepted" })));
    let (status, answer) = csms.remote_start(identity, "not json");
    assert_eq!(status, 400, "{answer}");

    cp.finish();
    let printed = cp.printed.join("\n");
    println!("python-ocpp {version}:\n{printed}");
    assert!(printed.contains("all checks passed"), "{printed}");

    // Gone: the charge point and what it reported on that connection leave the list.
    let deadline = Instant::now() + TIMEOUT;
    while csms.find(identity).is_some() {
        assert!(Instant::now() < deadline, "still connected");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (status, answer) = csms.remote_start(identity, "");
    assert_eq!(
        (status, &answer),
        (404, &json!({ "error": "not connected" }))
    );
}

#[test]
fn router_csms_against_python_ocpp_charge_points() {
    if !python_ocpp_present() {
        return;
    }
    let csms = Csms::start();
    let (status, list) = csms.http("GET", "/chargepoints", "");
    assert_eq!((status, list), (200, json!([])));
    let (status, answer) = csms.remote_start("NOBODY", "");
    assert_eq!((status, answer), (404, json!({ "error": "not connected" })));

    let v1_6 = json!({
        "statuses": { "1": "Preparing", "2": "Available" },
        // Energy.Active.Import.Register, not the Power.Active.Import sampled after it, exactly
        // as written (the text "1500").
        "energy": { "1": 1500 },
        "remote start": "idTag=TAG-OK",
    });
    run_charge_point(&csms, "1.6", "RC16", &v1_6);
    let v2_0_1 = json!({
        "statuses": { "1/1": "Occupied", "2/1": "Available" },
        // The sampled value without a measurand (Energy.Active.Import.Register), exactly as
        // written (the number 2500.0).
        "energy": { "1": 2500.0 },
        "remote start": "idToken=TAG-OK type=Central remoteStartId=1",
    });
    run_charge_point(&csms, "2.0.1", "RC201", &v2_0_1);
}

/// The lines strictly between the markers, rustfmt-formatted as the file is: all of them,
/// and the code lines (neither blank nor a comment).
fn ocpp_handling_lines() -> (usize, usize) {
    let lines: Vec<&str> = SOURCE.lines().map(str::trim).collect();
    let marker = |name: &str| {
        let marker = format!("// --- OCPP handling: {name} ---");
        let found = lines.iter().position(|line| *line == marker);
        found.unwrap_or_else(|| panic!("{marker} in router-csms/main.rs"))
    };
    let section = &lines[marker("begin") + 1..marker("end")];
    let code = section
        .iter()
        .filter(|line| !line.is_empty() && !line.starts_with("//"));
    (section.len(), code.count())
}

/// The Python `ocpp` CSMS with the same behaviour took 89 lines of OCPP handling (issue 20);
/// its count's rules for blank and comment lines are not known, so both figures are printed
/// and the code lines are held to 50 (on the model; 101 when written per action and version).
#[test]
fn the_ocpp_handling_takes_at_most_50_lines() {
    let (all, code) = ocpp_handling_lines();
    println!(
        "router-csms: {all} lines of OCPP handling, {code} of them code \
         (Python `ocpp`: {PYTHON_LINES})"
    );
    assert!(
        code <= MODEL_LINES,
        "{code} code lines of OCPP handling, at most {MODEL_LINES} (Python `ocpp` {PYTHON_LINES})"
    );
}
