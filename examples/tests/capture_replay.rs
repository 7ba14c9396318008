//! `--capture FILE` on both servers: a station (the tests' charge point on the core, over a
//! real loopback socket) talks to one server with a capture on; the capture holds every
//! message in and out in ocpp-cli's format; `ocpp replay` (`ocpp_cli::replay`, the code of
//! the subcommand) plays it against a fresh server of the other kind and finds no difference.
//!
//! mio-server records the bytes that went over the wire (its tap on the byte streams), so a
//! text sent with odd spacing and a CALL the core refused before the application saw it are
//! in its capture exactly as sent, with the core's own CALLERROR; over TLS too (the tap sees
//! the plaintext). Its permessage-deflate path is checked by the tap's unit test
//! (`src/mio_server/capture.rs`).

mod common;

use std::io::BufReader as FileReader;

use common::*;
use ocpp_cli::capture::{read_capture, CaptureDirection, CaptureLine};
use ocpp_cli::replay::{replay, ReplayOptions};

const MIO: &str = env!("CARGO_BIN_EXE_mio-server");
const TOKIO: &str = env!("CARGO_BIN_EXE_tokio-server");

/// A CALL with spaces the serialiser would not write: only a byte-level capture keeps them.
const SPACED: &str = r#"[2, "raw-1", "Heartbeat", {}]"#;
/// A BootNotification without its required model: the core answers it alone.
const INVALID: &str = r#"[2,"bad-1","BootNotification",{"chargePointVendor":"ACME"}]"#;

/// A file path of this test's own, removed first.
fn scratch(name: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!(
        "ocpp-capture-replay-{}-{name}.jsonl",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    path
}

/// Sends `text` as it is and waits for the server's answer to it (an answer to no CALL of
/// the station's connection, which did not write it).
fn send_raw(cp: &mut ChargePoint, text: &str) {
    cp.connection
        .send_text(Instant::now(), text)
        .expect("send the text");
    loop {
        match cp.next_event() {
            Event::UnmatchedResponse { .. } => return,
            Event::Closed(closed) => panic!("closed: {closed:?}"),
            _ => {}
        }
    }
}

/// One 1.6 station and one 2.0.1 station: boot, status, authorize, a transaction, heartbeats.
fn drive(server: &ServerProcess, raw: bool) {
    let mut cp = ChargePoint::connect(server.ocpp, "CAP16", &[OcppVersion::V1_6], None)
        .expect("1.6 station connects");
    cp.call(
        "BootNotification",
        r#"{"chargePointVendor":"ACME","chargePointModel":"X"}"#,
    );
    cp.call(
        "StatusNotification",
        r#"{"connectorId":1,"errorCode":"NoError","status":"Available"}"#,
    );
    cp.call("Authorize", r#"{"idTag":"TAG1"}"#);
    let started = cp.call(
        "StartTransaction",
        r#"{"connectorId":1,"idTag":"TAG1","meterStart":0,"timestamp":"2026-01-01T00:00:00Z"}"#,
    );
    let transaction = started["transactionId"].as_i64().expect("a transaction id");
    cp.call(
        "MeterValues",
        &format!(
            r#"{{"connectorId":1,"transactionId":{transaction},"meterValue":[{{"timestamp":"2026-01-01T00:01:00Z","sampledValue":[{{"value":"100"}}]}}]}}"#
        ),
    );
    cp.call(
        "StopTransaction",
        &format!(
            r#"{{"transactionId":{transaction},"meterStop":200,"timestamp":"2026-01-01T00:02:00Z"}}"#
        ),
    );
    if raw {
        send_raw(&mut cp, SPACED);
        send_raw(&mut cp, INVALID);
    }
    cp.call("Heartbeat", "{}");
    cp.close();

    let mut cp = ChargePoint::connect(server.ocpp, "CAP201", &[OcppVersion::V2_0_1], None)
        .expect("2.0.1 station connects");
    cp.call(
        "BootNotification",
        r#"{"chargingStation":{"model":"m","vendorName":"v"},"reason":"PowerUp"}"#,
    );
    cp.call(
        "TransactionEvent",
        r#"{"eventType":"Started","timestamp":"2026-01-01T00:00:00Z","triggerReason":"Authorized","seqNo":0,"transactionInfo":{"transactionId":"T1"},"idToken":{"idToken":"TAG2","type":"ISO14443"}}"#,
    );
    cp.call("Heartbeat", "{}");
    cp.close();
}

/// The capture, read (bounded wait until it holds `at_least` lines: the server writes the
/// last answer as it sends it).
fn read_lines(path: &Path, at_least: usize) -> Vec<CaptureLine> {
    let deadline = Instant::now() + WAIT;
    loop {
        let file = std::fs::File::open(path).expect("the capture exists");
        let lines = read_capture(FileReader::new(file)).expect("every line is a capture line");
        if lines.len() >= at_least || Instant::now() >= deadline {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Each station CALL of the capture has the server's answer with its id, the other way.
fn assert_answered(lines: &[CaptureLine]) -> usize {
    let mut calls = 0;
    for line in lines.iter().filter(|l| l.dir == CaptureDirection::In) {
        let frame: Value = serde_json::from_str(&line.text).expect("JSON");
        if frame[0] != 2 {
            continue;
        }
        calls += 1;
        let id = &frame[1];
        let answered = lines.iter().any(|answer| {
            answer.dir == CaptureDirection::Out
                && answer.identity == line.identity
                && serde_json::from_str::<Value>(&answer.text)
                    .is_ok_and(|a| (a[0] == 3 || a[0] == 4) && &a[1] == id)
        });
        assert!(answered, "no answer to {} in the capture", line.text);
    }
    calls
}

/// Replays the capture with the subcommand's code against `server`.
fn replay_against(lines: &[CaptureLine], server: &ServerProcess) -> ocpp_cli::replay::Report {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let url = format!("ws://{}/ocpp", server.ocpp);
    runtime.block_on(replay(lines, &ReplayOptions::new(url)))
}

#[test]
fn a_mio_server_capture_replays_against_tokio_server_without_difference() {
    let path = scratch("mio");
    let capture = path.to_str().expect("a UTF-8 path");
    let mio = ServerProcess::start(MIO, &["--capture", capture]);
    drive(&mio, true);
    // 1.6: 7 CALLs + 2 raw ones; 2.0.1: 3 CALLs; each answered.
    let lines = read_lines(&path, 24);
    drop(mio);

    assert_eq!(assert_answered(&lines), 12, "{lines:#?}");
    let identities: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| (l.identity.as_str(), l.version.as_str()))
        .collect();
    assert!(identities.contains(&("CAP16", "ocpp1.6")), "{identities:?}");
    assert!(
        identities.contains(&("CAP201", "ocpp2.0.1")),
        "{identities:?}"
    );
    // The bytes as sent, not the message written again.
    assert!(
        lines
            .iter()
            .any(|l| l.dir == CaptureDirection::In && l.text == SPACED),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.dir == CaptureDirection::In && l.text == INVALID),
        "{lines:#?}"
    );
    // The core's own answer to the invalid CALL: a CALLERROR, 1.6's spelling.
    let refused = lines
        .iter()
        .find(|l| l.dir == CaptureDirection::Out && l.text.starts_with(r#"[4,"bad-1""#))
        .expect("the CALLERROR to bad-1 is captured");
    assert!(
        refused.text.contains("OccurenceConstraintViolation"),
        "{}",
        refused.text
    );

    let tokio = ServerProcess::start(TOKIO, &[]);
    let report = replay_against(&lines, &tokio);
    assert!(report.differences.is_empty(), "{report}");
    assert_eq!(report.identities, 2, "{report}");
    assert_eq!(report.sent, 12, "{report}");
    assert_eq!(report.compared, 12, "{report}");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_tokio_server_capture_replays_against_mio_server_without_difference() {
    let path = scratch("tokio");
    let capture = path.to_str().expect("a UTF-8 path");
    let tokio = ServerProcess::start(TOKIO, &["--capture", capture]);
    drive(&tokio, false);
    let lines = read_lines(&path, 20);
    drop(tokio);
    assert_eq!(assert_answered(&lines), 10, "{lines:#?}");

    let mio = ServerProcess::start(MIO, &[]);
    let report = replay_against(&lines, &mio);
    assert!(report.differences.is_empty(), "{report}");
    assert_eq!(report.compared, 10, "{report}");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_capture_file_that_cannot_be_opened_stops_the_server_with_its_reason() {
    let dir = scratch("missing-dir");
    let path = dir.join("capture.jsonl");
    let mut child = Command::new(MIO)
        .args(["--listen", "127.0.0.1:0", "--admin", "off", "--capture"])
        .arg(&path)
        .env("OCPP_DATABASE_URL", "memory")
        .env("RUST_LOG", "off")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mio-server");
    let deadline = Instant::now() + WAIT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("mio-server started with a capture it cannot write");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!status.success());
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    assert!(stderr.contains("--capture"), "{stderr}");
}

#[test]
fn mio_server_captures_the_texts_of_a_tls_connection() {
    let pki = Pki::new("capture");
    let path = scratch("mio-tls");
    let mut args = pki.server_args();
    args.extend(["--capture".into(), path.to_str().expect("UTF-8").into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mio = ServerProcess::start(MIO, &args);
    let tls = pki.client(None);
    let mut cp = match ChargePoint::connect_with(
        mio.ocpp,
        "CAPTLS",
        &[OcppVersion::V2_0_1],
        None,
        Some(&tls),
    ) {
        Ok(cp) => cp,
        Err(refusal) => panic!("{refusal:?}"),
    };
    cp.call(
        "BootNotification",
        r#"{"chargingStation":{"model":"m","vendorName":"v"},"reason":"PowerUp"}"#,
    );
    send_raw(&mut cp, SPACED);
    cp.close();
    let lines = read_lines(&path, 4);
    drop(mio);
    assert_eq!(assert_answered(&lines), 2, "{lines:#?}");
    assert!(lines
        .iter()
        .all(|l| l.identity == "CAPTLS" && l.version == "ocpp2.0.1"));
    assert!(
        lines
            .iter()
            .any(|l| l.dir == CaptureDirection::In && l.text == SPACED),
        "{lines:#?}"
    );
    let _ = std::fs::remove_file(&path);
}
