//! The README's example (`examples/csms.rs`, built by `cargo test`) against charge points on
//! the PyPI `ocpp` library (2.1.0), OCPP 1.6 and 2.0.1: boots, heartbeats, and the typed result
//! of the RemoteStartTransaction the example sends once a 1.6 charge point has booted.
//!
//! Needs python3 with `ocpp` and `websockets` (`bash scripts/interop-ocpp.sh --deps-only`):
//! skipped with a printed reason when missing, failed when `OCPP_INTEROP_REQUIRED=1`.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/python_cp.py");

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

/// target/debug/examples/csms, next to this test's binary (target/debug/deps/..).
fn example_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let debug = exe.parent().and_then(|deps| deps.parent()).unwrap();
    debug
        .join("examples")
        .join(format!("csms{}", std::env::consts::EXE_SUFFIX))
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_readme_csms_against_python_ocpp_charge_points() {
    if !python_ocpp_present() {
        return;
    }
    let binary = example_binary();
    assert!(
        binary.exists(),
        "{} (built by cargo test)",
        binary.display()
    );
    let mut child = Command::new(&binary)
        .arg("127.0.0.1:0")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let _guard = Killed(child);
    let (lines_tx, lines) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let first = lines
        .recv_timeout(Duration::from_secs(10))
        .expect("the example starts");
    let addr = first
        .strip_prefix("listening on ")
        .expect("its first line")
        .to_owned();
    let url = format!("ws://{addr}/ocpp");

    for (version, identity) in [("1.6", "PY16"), ("2.0.1", "PY201")] {
        let output = Command::new(python())
            .args([SCRIPT, &url, version, identity, "--timeout", "20"])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        println!("{stdout}");
        assert!(
            output.status.success(),
            "python-ocpp {version}:\n{stdout}\n{stderr}"
        );
    }
    // What the example printed: the typed result of its RemoteStartTransaction.
    let printed = lines
        .recv_timeout(Duration::from_secs(10))
        .expect("the typed result");
    assert_eq!(
        printed,
        "PY16: RemoteStartTransaction -> Ok(RemoteStartTransactionResponse { status: Accepted })"
    );
}
