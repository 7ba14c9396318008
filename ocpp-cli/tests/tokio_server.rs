//! `ocpp replay` against the reference CSMS, `tokio-server` (target/debug/tokio-server, built
//! with `cargo build -p ocpp-examples --bin tokio-server` when missing): the station script is
//! played once with `--record`, the recording validates, replays against a fresh server without
//! difference, and a changed recording reports the difference.

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{run, scratch, SCRIPT};

/// target/debug/tokio-server, built when missing.
fn tokio_server() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let binary = target.join("debug/tokio-server");
    if !binary.exists() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "-p", "ocpp-examples", "--bin", "tokio-server"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("run cargo build");
        assert!(
            status.success(),
            "cargo build -p ocpp-examples --bin tokio-server"
        );
    }
    binary
}

/// A tokio-server on free loopback ports, in-memory state; killed (its own handle) on drop.
struct TokioServerProcess {
    child: Child,
    url: String,
}

impl TokioServerProcess {
    fn start(binary: &PathBuf) -> TokioServerProcess {
        let mut child = Command::new(binary)
            .args(["--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0"])
            .env("RUST_LOG", "warn")
            .env("OCPP_DATABASE_URL", "memory")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start tokio-server");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        // `tokio-server listening on ADDR (admin on ADDR)`
        let line = match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(line) => line,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("tokio-server did not start");
            }
        };
        let addr = line
            .split_whitespace()
            .nth(3)
            .unwrap_or_default()
            .to_string();
        TokioServerProcess {
            child,
            url: format!("ws://{addr}/ocpp"),
        }
    }
}

impl Drop for TokioServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_recording_of_tokio_server_replays_against_it_without_difference() {
    let binary = tokio_server();
    let script = scratch("ts-script.jsonl");
    let recording = scratch("ts-recording.jsonl");
    let changed = scratch("ts-changed.jsonl");
    std::fs::write(&script, SCRIPT.join("\n")).expect("write script");
    let path = |p: &PathBuf| p.to_str().expect("path").to_string();

    // Record: the script against a first server, from the station's side.
    let first = TokioServerProcess::start(&binary);
    let output = run(
        &[
            "replay",
            &path(&script),
            "--url",
            &first.url,
            "--record",
            &path(&recording),
        ],
        None,
        Duration::from_secs(60),
    );
    drop(first);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{stdout}");
    let recorded = std::fs::read_to_string(&recording).expect("the recording");
    assert!(recorded.lines().count() >= 2 * SCRIPT.len(), "{recorded}");

    // The reference CSMS's answers are valid, as our decoder judges them.
    let output = run(
        &["validate", "--file", &path(&recording)],
        None,
        Duration::from_secs(10),
    );
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains(" 0 invalid, 0 unchecked"), "{stdout}");

    // Replay against a fresh server: the same answers but the times.
    let second = TokioServerProcess::start(&binary);
    let output = run(
        &["replay", &path(&recording), "--url", &second.url],
        None,
        Duration::from_secs(60),
    );
    drop(second);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{stdout}");
    assert!(
        stdout.contains("10 messages sent, 10 answers compared"),
        "{stdout}"
    );
    assert!(stdout.contains(", 0 differences"), "{stdout}");

    // A changed answer in the recording (Authorize's status) is reported.
    let text = recorded.replacen(
        r#"{\"idTagInfo\":{\"status\":\"Accepted\"}}"#,
        r#"{\"idTagInfo\":{\"status\":\"Blocked\"}}"#,
        1,
    );
    assert_ne!(
        text, recorded,
        "the recording has an Authorize Accepted: {recorded}"
    );
    std::fs::write(&changed, text).expect("write changed");
    let third = TokioServerProcess::start(&binary);
    let output = run(
        &["replay", &path(&changed), "--url", &third.url],
        None,
        Duration::from_secs(60),
    );
    drop(third);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(r#"DIFF CP1 Authorize (id 3) $.idTagInfo.status: recorded "Blocked", replayed "Accepted""#),
        "{stdout}"
    );
    for p in [script, recording, changed] {
        let _ = std::fs::remove_file(p);
    }
}
