//! Interop: the `charge-point` binary against a central system written with the Python `ocpp`
//! package (2.1.0) on `websockets` (`tests/interop/python_csms.py`), on OCPP 1.6, 2.0.1 and 2.1.
//!
//! Skipped, with a note on stderr, when `python3` or its `ocpp`/`websockets` modules are missing
//! (`pip install ocpp==2.1.0 websockets`); set `OCPP_INTEROP_REQUIRED=1` to make that a failure.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A child process killed by its PID when dropped.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn python_ready() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import ocpp, websockets"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var_os("OCPP_INTEROP_REQUIRED").is_none(),
            "python3 with the ocpp and websockets modules is required"
        );
        eprintln!(
            "skipped: python3 with `ocpp` and `websockets` not found (pip install ocpp==2.1.0)"
        );
    }
    ok
}

fn run_against_python(version: &str) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/interop/python_csms.py");
    let mut csms = Guard(
        Command::new("python3")
            .arg(&script)
            .args(["--timeout", "30"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    let (lines_tx, lines) = mpsc::channel::<String>();
    let stdout = csms.0.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let first = lines.recv_timeout(Duration::from_secs(30)).unwrap();
    let port: u16 = first
        .strip_prefix("listening ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .parse()
        .unwrap();
    let _cp = Guard(
        Command::new(env!("CARGO_BIN_EXE_charge-point"))
            .args([
                "--url",
                &format!("ws://127.0.0.1:{port}/ocpp/PYCP01"),
                "--version",
                version,
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(40);
    let mut seen = Vec::new();
    let status = loop {
        while let Ok(line) = lines.try_recv() {
            seen.push(line);
        }
        if let Some(status) = csms.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the Python CSMS did not finish: {seen:#?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    // The reader thread may still hold the last lines.
    while let Ok(line) = lines.recv_timeout(Duration::from_millis(200)) {
        seen.push(line);
    }
    assert!(status.success(), "{version}: {status}; saw {seen:#?}");
    for action in ["BootNotification", "StatusNotification", "Heartbeat"] {
        let needle = format!("\"action\": \"{action}\"");
        assert!(
            seen.iter()
                .any(|l| l.contains(&needle) && l.contains("\"PYCP01\"")),
            "{version}: no {action} in {seen:#?}"
        );
    }
    assert!(seen
        .iter()
        .all(|l| !l.contains("\"version\"") || l.contains(&format!("\"version\": \"{version}\""))));
}

#[test]
fn boots_against_the_python_ocpp_central_system() {
    if !python_ready() {
        return;
    }
    run_against_python("1.6");
    run_against_python("2.0.1");
    run_against_python("2.1");
}
