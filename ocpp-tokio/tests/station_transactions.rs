//! The `two_connectors` example (its transactions are the library's, journaled with the
//! offline queue in a `FileStore`) killed with SIGKILL during transactions and started again on
//! the same journal, against a central system it was not written with: one on the PyPI `ocpp`
//! library (`tests/interop/python_transactions_csms.py`), OCPP 1.6 and 2.0.1.
//!
//! Kill points: right after a remote start (the station has journaled it; the central system
//! may not have its message yet), between meter values, and while offline (the central system
//! refuses connections; readings pile up in the journal). A fourth transaction ends normally
//! (remote stop). At the central system: every transaction message of a transaction arrives in
//! order, none lost and none made twice (a message whose answer was lost with the kill may come
//! again, identical: OCPP's at-least-once for transaction messages); each killed transaction
//! ends once, with `PowerLoss` and the last reading known, under the id it started with; 2.0.1
//! `seqNo`s go 0, 1, 2, ... with no reuse across the restarts; 1.6 transactionIds given by the
//! central system are all used, none lost.
//!
//! Needs python3 with `ocpp` and `websockets` (`bash scripts/interop-ocpp.sh --deps-only`):
//! skipped with a printed reason when missing, failed when `OCPP_INTEROP_REQUIRED=1`. Every wait
//! is bounded.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{example_binary, free_port, python, python_ocpp_present, Killed};
use serde_json::Value;

const CSMS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/interop/python_transactions_csms.py"
);
/// Every wait of these tests ends within this.
const WAIT: Duration = Duration::from_secs(15);

/// A child process, killed (SIGKILL) and reaped when dropped, and its stdout lines.
struct Process {
    name: String,
    child: Killed,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Process {
    fn spawn(name: &str, command: &mut Command) -> Process {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let stdout = child.stdout.take().unwrap();
        let stdin = child.stdin.take();
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
        Process {
            name: name.to_owned(),
            child: Killed(child),
            stdin,
            lines,
            seen: Vec::new(),
        }
    }

    /// Reads lines until `done` holds for all seen so far, within [`WAIT`].
    fn wait(&mut self, what: &str, done: impl Fn(&[String]) -> bool) {
        let deadline = Instant::now() + WAIT;
        while !done(&self.seen) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(_) => panic!("{}: no {what} within {WAIT:?}", self.name),
            }
        }
    }

    /// Waits for a line after the first `from` that `matches` accepts.
    fn wait_line(&mut self, what: &str, from: usize, matches: impl Fn(&str) -> bool) {
        self.wait(what, |seen| seen.iter().skip(from).any(|l| matches(l)));
    }

    fn send(&mut self, command: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{command}").unwrap();
        stdin.flush().unwrap();
    }

    /// SIGKILL, now.
    fn kill(mut self) {
        let _ = self.child.0.kill();
        let _ = self.child.0.wait();
    }
}

/// The central system's events (its JSON lines).
fn events(seen: &[String]) -> Vec<Value> {
    seen.iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn count(seen: &[String], kind: &str, matches: impl Fn(&Value) -> bool) -> usize {
    events(seen)
        .iter()
        .filter(|e| e["event"] == kind && matches(e))
        .count()
}

struct Run {
    version: &'static str,
    csms: Process,
    url: String,
    journal: PathBuf,
}

impl Run {
    fn new(version: &'static str, identity: &str) -> Run {
        let port = free_port();
        let mut csms = Process::spawn(
            "python-csms",
            Command::new(python()).args([CSMS, "--port", &port.to_string(), "--version", version]),
        );
        csms.wait_line("listening", 0, |l| l.contains("\"listening\""));
        let journal = std::env::temp_dir().join(format!(
            "ocpp-station-transactions-{}-{identity}.jsonl",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&journal);
        Run {
            version,
            csms,
            url: format!("ws://127.0.0.1:{port}/ocpp/{identity}"),
            journal,
        }
    }

    /// The example on the journal; waits until it is Accepted.
    fn station(&mut self) -> Process {
        let boots = count(&self.csms.seen, "boot", |_| true);
        let mut station = Process::spawn(
            "station",
            Command::new(example_binary("two_connectors"))
                .args([&self.url, self.journal.to_str().unwrap(), self.version])
                .env("METER_INTERVAL_MS", "300"),
        );
        station.wait_line("Accepted", 0, |l| l.starts_with("Accepted"));
        self.csms
            .wait("a boot", |seen| count(seen, "boot", |_| true) > boots);
        station
    }

    /// A remote start; waits until the station has journaled the transaction.
    fn remote_start(&mut self, station: &mut Process, tag: &str) {
        let from = station.seen.len();
        self.csms.send(&format!("start {tag}"));
        station.wait_line("started", from, |l| l.starts_with("started on EVSE"));
    }

    /// Waits until the central system saw `n` meter readings of the transaction started
    /// `nth` (from 0).
    fn wait_readings(&mut self, nth: usize, n: usize) {
        let version = self.version;
        self.csms.wait("readings", |seen| {
            let by = transactions(version, seen);
            by.values()
                .nth(nth)
                .is_some_and(|t| t.iter().filter(|e| is_reading(e)).count() >= n)
        });
    }

    /// Waits until the central system saw the `nth` transaction end.
    fn wait_ended(&mut self, nth: usize) {
        let version = self.version;
        self.csms.wait("the transaction's end", |seen| {
            transactions(version, seen)
                .values()
                .nth(nth)
                .is_some_and(|t| t.iter().any(is_end))
        });
    }
}

fn is_reading(e: &Value) -> bool {
    e["event"] == "meter" || e["type"] == "Updated"
}

fn is_end(e: &Value) -> bool {
    e["event"] == "stop" || e["type"] == "Ended"
}

/// The transaction messages by transaction, in order of their first message's arrival (2.x:
/// by transactionId; 1.6: by the id the central system gave; a message with an id never given
/// is filed under "unknown").
fn transactions(version: &str, seen: &[String]) -> BTreeMap<(usize, String), Vec<Value>> {
    let mut first: BTreeMap<String, usize> = BTreeMap::new();
    let mut by: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for (at, e) in events(seen).into_iter().enumerate() {
        let key = match (version, e["event"].as_str()) {
            ("2.0.1", Some("tx")) => e["transaction"].as_str().unwrap().to_owned(),
            ("1.6", Some("start" | "meter" | "stop")) => e["transaction"].to_string(),
            _ => continue,
        };
        first.entry(key.clone()).or_insert(at);
        by.entry(key).or_default().push(e);
    }
    by.into_iter().map(|(k, v)| ((first[&k], k), v)).collect()
}

/// Drops a message repeated identically right after itself (sent again after a kill lost
/// its answer).
fn without_resends(messages: &[Value]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for m in messages {
        if out.last() != Some(m) {
            out.push(m.clone());
        }
    }
    out
}

/// The reading a message carries, Wh.
fn wh(e: &Value) -> i64 {
    match &e["value"] {
        Value::String(s) => s.parse().unwrap(),
        Value::Number(n) => n.as_f64().unwrap() as i64,
        _ => e["meter"].as_i64().unwrap(),
    }
}

fn check(version: &str, seen: &[String], reasons: &[&str]) {
    let by = transactions(version, seen);
    assert_eq!(
        by.len(),
        reasons.len(),
        "transactions: {:#?}",
        by.keys().collect::<Vec<_>>()
    );
    for (((_, id), messages), reason) in by.iter().zip(reasons) {
        let messages = without_resends(messages);
        let ends: Vec<&Value> = messages.iter().filter(|e| is_end(e)).collect();
        assert_eq!(ends.len(), 1, "{id}: one end: {messages:#?}");
        let end = ends[0];
        assert!(
            is_end(messages.last().unwrap()),
            "{id}: the end is last: {messages:#?}"
        );
        let last_reading = messages[..messages.len() - 1].last().map(wh);
        match version {
            "2.0.1" => {
                assert_eq!(messages[0]["type"], "Started", "{id}");
                let seq_nos: Vec<i64> = messages
                    .iter()
                    .map(|e| e["seq_no"].as_i64().unwrap())
                    .collect();
                let expected: Vec<i64> = (0..messages.len() as i64).collect();
                assert_eq!(seq_nos, expected, "{id}: seqNos, none reused");
                assert_eq!(end["reason"], *reason, "{id}");
                if *reason == "PowerLoss" {
                    assert_eq!(end["trigger"], "AbnormalCondition", "{id}");
                    // The last reading known.
                    assert_eq!(Some(wh(end)), last_reading, "{id}");
                }
            }
            _ => {
                assert_eq!(messages[0]["event"], "start", "{id}: {messages:#?}");
                assert!(
                    id.parse::<i64>().unwrap() >= 101,
                    "{id}: an id the central system gave"
                );
                assert_eq!(end["reason"], *reason, "{id}");
                if *reason == "PowerLoss" {
                    assert_eq!(Some(wh(end)), last_reading, "{id}");
                }
            }
        }
    }
}

fn killed_during_transactions(version: &'static str, identity: &str) {
    if !python_ocpp_present() {
        return;
    }
    let started = Instant::now();
    let mut run = Run::new(version, identity);

    // 1. Killed right after a remote start.
    let mut station = run.station();
    run.remote_start(&mut station, "TAG-A");
    station.kill();
    let mut station = run.station();
    run.wait_ended(0);

    // 2. Killed between meter values.
    run.remote_start(&mut station, "TAG-B");
    run.wait_readings(1, 2);
    station.kill();
    let mut station = run.station();
    run.wait_ended(1);

    // 3. Killed while offline, with readings in the journal only.
    run.remote_start(&mut station, "TAG-C");
    run.wait_readings(2, 1);
    let from = station.seen.len();
    run.csms.send("offline");
    station.wait_line("waiting", from, |l| l.starts_with("Waiting"));
    let from = station.seen.len();
    station.wait("readings offline", |seen| {
        seen.iter()
            .skip(from)
            .filter(|l| l.starts_with("meter EVSE"))
            .count()
            >= 2
    });
    station.kill();
    run.csms.send("online");
    let mut station = run.station();
    run.wait_ended(2);

    // 4. A transaction stopped remotely, under the id the station reports.
    run.remote_start(&mut station, "TAG-D");
    run.wait_readings(3, 1);
    let id = transactions(version, &run.csms.seen)
        .keys()
        .nth(3)
        .unwrap()
        .1
        .clone();
    run.csms.send(&format!("stop {}", id.trim_matches('"')));
    run.wait_ended(3);

    check(
        version,
        &run.csms.seen,
        &["PowerLoss", "PowerLoss", "PowerLoss", "Remote"],
    );
    station.kill();
    let _ = std::fs::remove_file(&run.journal);
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_secs(60), "{elapsed:?}");
}

#[test]
fn two_connectors_killed_during_transactions_1_6() {
    killed_during_transactions("1.6", "CP-TX-16");
}

#[test]
fn two_connectors_killed_during_transactions_2_0_1() {
    killed_during_transactions("2.0.1", "CP-TX-201");
}
