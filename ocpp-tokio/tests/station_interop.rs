//! The README's station program (`examples/station.rs`, built by `cargo test`) against central
//! systems it was not written with: one on the PyPI `ocpp` library (2.1.0,
//! `tests/interop/python_csms.py`) and mio-server (the repository's main example server). Each
//! test runs its scenario on OCPP 1.6, 2.0.1 and 2.1 at once (a central system and a station
//! each): the station boots and is Accepted, heartbeats (Python: every second, the interval it
//! answered), takes a remote start (Python: sent after the boot; mio-server: sent through its
//! admin HTTP API) and answers Accepted; then the central system is killed,
//! the station prints `Waiting`, the central system comes back on the same port, and the
//! station reconnects by itself (default back-off: 3 s + up to 10 s) and boots again.
//!
//! The `sans_io_` tests run the same checks on `ocpp-proto`'s `station_loop` example: the
//! same program on the Sans-IO core and blocking std sockets, every decision
//! `ocpp_proto::station::Lifecycle`'s (built with cargo when missing).
//!
//! The Python tests need python3 with `ocpp` and `websockets` (`bash scripts/interop-ocpp.sh
//! --deps-only`): skipped with a printed reason when missing, failed when
//! `OCPP_INTEROP_REQUIRED=1`. mio-server is built with cargo when target/debug/mio-server is
//! missing.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{
    example_binary, free_port, mio_server_binary, python, python_ocpp_present, station_loop_binary,
    Killed,
};
use serde_json::Value;

const CSMS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/python_csms.py");
/// How long the first connection and boot may take.
const START: Duration = Duration::from_secs(10);
/// How long a reconnection may take: the default back-off (3 s + up to 10 s) and a margin.
const RECONNECT: Duration = Duration::from_secs(20);

/// A child process, killed (SIGKILL) and reaped when dropped, and the lines it prints on
/// stdout, each with the time it was read; echoed with `name` for `--nocapture`.
struct Process {
    name: String,
    _child: Killed,
    lines: mpsc::Receiver<(Instant, String)>,
    seen: Vec<(Instant, String)>,
}

impl Process {
    fn spawn(name: &str, command: &mut Command) -> Process {
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
                if tx.send((Instant::now(), line)).is_err() {
                    break;
                }
            }
        });
        Process {
            name: name.to_owned(),
            _child: Killed(child),
            lines,
            seen: Vec::new(),
        }
    }

    /// How many lines were seen so far: `wait`'s `from`.
    fn mark(&self) -> usize {
        self.seen.len()
    }

    /// Reads lines until `done` holds for those seen since `from`, within `timeout`; returns
    /// them.
    fn wait(
        &mut self,
        what: &str,
        from: usize,
        timeout: Duration,
        done: impl Fn(&[(Instant, String)]) -> bool,
    ) -> Vec<(Instant, String)> {
        let deadline = Instant::now() + timeout;
        loop {
            if done(&self.seen[from..]) {
                return self.seen[from..].to_vec();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(_) => panic!(
                    "{}: no {what} within {timeout:?}; its lines since: {:#?}",
                    self.name,
                    self.seen[from..]
                        .iter()
                        .map(|(_, l)| l.as_str())
                        .collect::<Vec<_>>()
                ),
            }
        }
    }

    /// Waits for a line `matches` accepts after `from`; returns the index after it.
    fn wait_line(
        &mut self,
        what: &str,
        from: usize,
        timeout: Duration,
        matches: impl Fn(&str) -> bool,
    ) -> usize {
        self.wait(what, from, timeout, |lines| {
            lines.iter().any(|(_, l)| matches(l))
        });
        from + self.seen[from..]
            .iter()
            .position(|(_, l)| matches(l))
            .unwrap()
            + 1
    }

    fn kill(self) {
        drop(self);
    }
}

/// A station program, `PROGRAM URL VERSION`: the README's `station` (on ocpp-tokio), or
/// `station_loop` (ocpp-proto's example on the Sans-IO core and std sockets).
fn start_station(program: &str, url: &str, version: &str) -> Process {
    let binary = match program {
        "station_loop" => station_loop_binary(),
        name => example_binary(name),
    };
    Process::spawn(program, Command::new(binary).args([url, version]))
}

/// Waits for the station's `Accepted { version: .. }` and `remote start for TAG-1` lines after
/// `from`, in either order (the remote start's handler may print before the status loop);
/// returns the index after both.
fn station_accepted_and_started(
    station: &mut Process,
    from: usize,
    version: &str,
    timeout: Duration,
) -> usize {
    let expected = [accepted_line(version), "remote start for TAG-1".to_owned()];
    let position =
        |lines: &[(Instant, String)], line: &str| lines.iter().position(|(_, l)| l == line);
    let lines = station.wait(&format!("{expected:?}"), from, timeout, |lines| {
        expected.iter().all(|e| position(lines, e).is_some())
    });
    let last = expected
        .iter()
        .filter_map(|e| position(&lines, e))
        .max()
        .unwrap();
    from + last + 1
}

/// `Accepted { version: V1_6 }` for "1.6".
fn accepted_line(version: &str) -> String {
    format!("Accepted {{ version: V{} }}", version.replace('.', "_"))
}

// ---- the Python central system ----

fn start_python_csms(port: u16, version: &str) -> Process {
    let mut csms = Process::spawn(
        "python-csms",
        Command::new(python()).args([CSMS, "--port", &port.to_string(), "--version", version]),
    );
    csms.wait_line("listening", 0, START, |l| {
        event(l).is_some_and(|e| e["event"] == "listening")
    });
    csms
}

/// A line of the Python CSMS as JSON (`None`: not JSON).
fn event(line: &str) -> Option<Value> {
    serde_json::from_str(line).ok()
}

/// The events of `kind` among `lines`, with the time each was read.
fn events(lines: &[(Instant, String)], kind: &str) -> Vec<(Instant, Value)> {
    lines
        .iter()
        .filter_map(|(at, l)| event(l).map(|e| (*at, e)))
        .filter(|(_, e)| e["event"] == kind)
        .collect()
}

/// One connection's checks against the Python CSMS, from its line `from` and the station's
/// line `station_from`: a boot (with `reason`) from `identity`, the station Accepted, the
/// remote start answered Accepted both ends, and `heartbeats` heartbeats about a second apart.
fn python_session(
    csms: &mut Process,
    station: &mut Process,
    (from, station_from): (usize, usize),
    identity: &str,
    version: &str,
    reason: Value,
    timeout: Duration,
) -> usize {
    let lines = csms.wait("boot", from, timeout, |l| !events(l, "boot").is_empty());
    let boot = &events(&lines, "boot")[0].1;
    assert_eq!(boot["id"], identity, "{boot}");
    assert_eq!(boot["reason"], reason, "{boot}");
    let station_from = station_accepted_and_started(station, station_from, version, START);
    let lines = csms.wait("remote start result and 3 heartbeats", from, START, |l| {
        !events(l, "remote_start").is_empty() && events(l, "heartbeat").len() >= 3
    });
    let remote = &events(&lines, "remote_start")[0].1;
    assert_eq!(remote["status"], "Accepted", "{remote}");
    let beats = events(&lines, "heartbeat");
    for pair in beats.windows(2) {
        let gap = pair[1].0 - pair[0].0;
        assert!(
            gap >= Duration::from_millis(500) && gap <= Duration::from_millis(2500),
            "heartbeats {gap:?} apart, the interval is 1 s"
        );
        assert_eq!(pair[1].1["id"], identity);
    }
    station_from
}

fn station_against_python_csms(program: &str, version: &str, identity: &str) {
    if !python_ocpp_present() {
        return;
    }
    let port = free_port();
    let mut csms = start_python_csms(port, version);
    let url = format!("ws://127.0.0.1:{port}/ocpp/{identity}");
    let mut station = start_station(program, &url, version);
    let first_reason = if version == "1.6" {
        Value::Null
    } else {
        "PowerUp".into()
    };
    let from = csms.mark();
    let station_from = python_session(
        &mut csms,
        &mut station,
        (from, 0),
        identity,
        version,
        first_reason,
        START,
    );

    // The central system goes away: the station waits, then reconnects to the new one.
    csms.kill();
    let station_from = station.wait_line("Waiting", station_from, START, |l| {
        l.starts_with("Waiting { wait: ")
    });
    let mut csms = start_python_csms(port, version);
    let later_reason = if version == "1.6" {
        Value::Null
    } else {
        "Unknown".into()
    };
    let from = csms.mark();
    python_session(
        &mut csms,
        &mut station,
        (from, station_from),
        identity,
        version,
        later_reason,
        RECONNECT,
    );
}

/// `run` for `program` on 1.6, 2.0.1 and 2.1 at once, each in a thread of its own with the
/// identity `{prefix}-16`, `-201`, `-21`: the scenarios mostly wait (heartbeats, the back-off
/// before a reconnection), so the three take the time of one. A failure names its version.
fn on_every_version(run: fn(&str, &str, &str), program: &'static str, prefix: &'static str) {
    let runs: Vec<_> = [("1.6", "16"), ("2.0.1", "201"), ("2.1", "21")]
        .into_iter()
        .map(|(version, suffix)| {
            let identity = format!("{prefix}-{suffix}");
            let thread = std::thread::spawn(move || run(program, version, &identity));
            (version, thread)
        })
        .collect();
    let failed: Vec<&str> = runs
        .into_iter()
        .filter_map(|(version, thread)| thread.join().is_err().then_some(version))
        .collect();
    assert!(
        failed.is_empty(),
        "{program} failed on {failed:?} (its panic is printed above)"
    );
}

#[test]
fn station_against_python_csms_on_every_version() {
    on_every_version(station_against_python_csms, "station", "CP-PY");
}

#[test]
fn sans_io_station_against_python_csms_on_every_version() {
    on_every_version(station_against_python_csms, "station_loop", "CP-SIO-PY");
}

// ---- mio-server ----

/// A running mio-server: its process, and its WebSocket and admin addresses.
struct Mio {
    process: Process,
    listen: SocketAddr,
    admin: SocketAddr,
}

/// mio-server on `listen` (port 0: any) with an admin interface on any port.
fn start_mio(listen: &str) -> Mio {
    let mut process = Process::spawn(
        "mio-server",
        Command::new(mio_server_binary())
            .args(["--listen", listen, "--admin", "127.0.0.1:0"])
            // Nothing kept between runs (its default is a SQLite file in the working directory).
            .args(["--database", "memory"]),
    );
    let lines = process.wait("its listening line", 0, START, |l| {
        l.iter()
            .any(|(_, l)| l.starts_with("mio-server listening on "))
    });
    // `mio-server listening on ADDR (admin on ADDR)`
    let line = &lines
        .iter()
        .find(|(_, l)| l.starts_with("mio-server listening on "))
        .unwrap()
        .1;
    let rest = line.strip_prefix("mio-server listening on ").unwrap();
    let (listen, admin) = rest.split_once(" (admin on ").expect(line);
    Mio {
        listen: listen.parse().expect(line),
        admin: admin.trim_end_matches(')').parse().expect(line),
        process,
    }
}

/// One HTTP request to the admin interface: the status and the body as JSON.
fn admin(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, Value) {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("admin");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        stream,
        // The admin interface refuses a Host that does not name it, and a body that is not
        // JSON (a browser's cross-site request).
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("admin answer");
    let status = response[9..12].parse().expect(&response);
    let body = response.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let json = serde_json::from_str(body).unwrap_or(Value::String(body.to_owned()));
    (status, json)
}

/// The admin view of `identity` once mio-server has it connected and Accepted.
fn mio_accepted(mio: &Mio, identity: &str) -> Value {
    let deadline = Instant::now() + START;
    loop {
        let (status, cp) = admin(mio.admin, "GET", &format!("/chargepoints/{identity}"), "");
        if status == 200 && cp["connected"] == true && cp["status"] == "Accepted" {
            return cp;
        }
        assert!(Instant::now() < deadline, "{identity} not Accepted: {cp}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One connection's checks against mio-server: the station Accepted, mio-server has its
/// boot (with `reason`) on `version`, and a remote start through the admin API is answered
/// Accepted, printed by the station.
fn mio_session(
    mio: &Mio,
    station: &mut Process,
    station_from: usize,
    identity: &str,
    version: &str,
    reason: Value,
    timeout: Duration,
) -> usize {
    let accepted = accepted_line(version);
    station.wait_line(&accepted, station_from, timeout, |l| l == accepted);
    let cp = mio_accepted(mio, identity);
    assert_eq!(cp["version"], version, "{cp}");
    assert_eq!(cp["boot"]["vendor"], "ACME", "{cp}");
    assert_eq!(cp["boot"]["model"], "Example", "{cp}");
    assert_eq!(cp["boot"]["reason"], reason, "{cp}");
    let (action, payload) = if version == "1.6" {
        ("RemoteStartTransaction", r#"{"idTag":"TAG-1"}"#)
    } else {
        (
            "RequestStartTransaction",
            r#"{"idToken":{"idToken":"TAG-1","type":"ISO14443"},"remoteStartId":1}"#,
        )
    };
    let path = format!("/chargepoints/{identity}/call/{action}");
    let (status, answer) = admin(mio.admin, "POST", &path, payload);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["status"], "Accepted", "{answer}");
    station_accepted_and_started(station, station_from, version, START)
}

fn station_against_mio_server(program: &str, version: &str, identity: &str) {
    let mio = start_mio("127.0.0.1:0");
    let url = format!("ws://{}/ocpp/{identity}", mio.listen);
    let mut station = start_station(program, &url, version);
    let (first_reason, later_reason) = if version == "1.6" {
        (Value::Null, Value::Null)
    } else {
        ("PowerUp".into(), "Unknown".into())
    };
    let station_from = mio_session(
        &mio,
        &mut station,
        0,
        identity,
        version,
        first_reason,
        START,
    );
    // mio-server answers BootNotification with a 300 s heartbeat interval (no flag changes
    // it): no heartbeat is due within the test.
    let (_, cp) = admin(mio.admin, "GET", &format!("/chargepoints/{identity}"), "");
    assert_eq!(cp["last_heartbeat"], Value::Null, "{cp}");

    // mio-server goes away (killed) and comes back on the same port: a new boot.
    let listen = mio.listen;
    mio.process.kill();
    let station_from = station.wait_line("Waiting", station_from, START, |l| {
        l.starts_with("Waiting { wait: ")
    });
    let mio = start_mio(&listen.to_string());
    assert_eq!(mio.listen, listen);
    mio_session(
        &mio,
        &mut station,
        station_from,
        identity,
        version,
        later_reason,
        RECONNECT,
    );
}

#[test]
fn station_against_mio_server_on_every_version() {
    on_every_version(station_against_mio_server, "station", "CP-MIO");
}

#[test]
fn sans_io_station_against_mio_server_on_every_version() {
    on_every_version(station_against_mio_server, "station_loop", "CP-SIO-MIO");
}
