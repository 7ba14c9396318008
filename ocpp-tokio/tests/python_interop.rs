//! The README's two programs (`examples/csms.rs` and `examples/stations.rs`, built by `cargo
//! test`) against charge points on the PyPI `ocpp` library (2.1.0), OCPP 1.6 and 2.0.1 (and
//! 2.1 for the one-handler program, `examples/every_version.rs`): boots,
//! heartbeats, the typed result of the RemoteStartTransaction the first sends once a 1.6
//! charge point has booted; Authorize against the token list and the StatusNotifications
//! counted in each connection's state, printed at its close, for the second.
//!
//! Needs python3 with `ocpp` and `websockets` (`bash scripts/interop-ocpp.sh --deps-only`):
//! skipped with a printed reason when missing, failed when `OCPP_INTEROP_REQUIRED=1`.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{example_binary, python, python_ocpp_present, Killed};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/python_cp.py");
const STATION: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/interop/python_station.py"
);
const SESSION: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/interop/python_session.py"
);

/// A running example: its process (killed when dropped), the lines it prints after the first,
/// and the URL it serves (from its first line, `listening on ADDR`).
struct Example {
    _process: Killed,
    lines: mpsc::Receiver<String>,
    url: String,
}

fn start(name: &str) -> Example {
    let mut child = Command::new(example_binary(name))
        .arg("127.0.0.1:0")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let process = Killed(child);
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
    Example {
        _process: process,
        lines,
        url: format!("ws://{addr}/ocpp"),
    }
}

/// Runs a Python charge point script and returns what it printed; fails the test if it fails.
fn run_python(args: &[&str]) -> String {
    let output = Command::new(python()).args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(output.status.success(), "{args:?}:\n{stdout}\n{stderr}");
    stdout.into_owned()
}

#[test]
fn the_readme_csms_against_python_ocpp_charge_points() {
    if !python_ocpp_present() {
        return;
    }
    let Example { lines, url, .. } = &start("csms");
    for (version, identity) in [("1.6", "PY16"), ("2.0.1", "PY201")] {
        run_python(&[SCRIPT, url, version, identity, "--timeout", "20"]);
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

#[test]
fn the_readme_stations_against_python_ocpp_charge_points() {
    if !python_ocpp_present() {
        return;
    }
    let Example { lines, url, .. } = &start("stations");
    for (version, identity, statuses) in [("1.6", "PY16", "3"), ("2.0.1", "PY201", "2")] {
        run_python(&[STATION, url, version, identity, statuses, "--timeout", "20"]);
        // What the example printed at the close: the count from that connection's state.
        let printed = lines
            .recv_timeout(Duration::from_secs(10))
            .expect("the close line");
        assert_eq!(
            printed,
            format!("{identity} closed: {statuses} status notifications")
        );
    }
}

/// The README's one-handler program (`examples/every_version.rs`) against the same charging
/// session played by a Python `ocpp` charge point as 1.6, as 2.0.1 and as 2.1 (Authorize, a
/// start, meter values with a `2935.600` register and a signed meter value, a stop), each
/// version's messages built and checked by the library's own classes and schemas: the same
/// events in the same order, each register value printed as the charge point wrote it.
#[test]
fn one_handler_per_concept_sees_the_same_session_in_1_6_2_0_1_and_2_1() {
    if !python_ocpp_present() {
        return;
    }
    let Example { lines, url, .. } = &start("every_version");
    let mut sessions = Vec::new();
    for (version, identity) in [("1.6", "PY16"), ("2.0.1", "PY201"), ("2.1", "PY21")] {
        let written: Vec<String> =
            run_python(&[SESSION, url, version, identity, "--timeout", "20"])
                .lines()
                .filter_map(|line| line.strip_prefix("wrote ").map(str::to_owned))
                .collect();
        assert_eq!(written, ["2935", "2935.600", "2940"], "{version}");
        let printed: Vec<String> = (0..5)
            .map(|_| lines.recv_timeout(Duration::from_secs(10)).expect("a line"))
            .collect();
        let id = printed[0]
            .strip_prefix(&format!("{identity} started "))
            .unwrap_or_else(|| panic!("{printed:?}"))
            .to_owned();
        let mut expected = vec![format!("{identity} started {id}")];
        for value in &written {
            expected.push(format!("{identity} meter {id} {value} Wh"));
        }
        expected.push(format!("{identity} ended {id} EVDisconnected"));
        assert_eq!(printed, expected, "{version}");
        // The neutral events, without the identity and the id: the same in every version.
        let neutral: Vec<String> = printed
            .iter()
            .map(|line| line.replacen(identity, "CP", 1).replacen(&id, "TX", 1))
            .collect();
        sessions.push(neutral);
    }
    assert_eq!(sessions[0], sessions[1], "1.6 and 2.0.1");
    assert_eq!(sessions[0], sessions[2], "1.6 and 2.1");
}
