//! Replay answers the server's CALLs with the station's recorded answers: a server that calls
//! Reset when a station connects, recorded once with a hand-driven station, then replayed.

mod common;

use std::io;
use std::sync::Arc;
use std::time::Duration;

use common::SharedWriter;
use ocpp_cli::capture::{read_capture, CaptureDirection, CaptureLine, CaptureRecorder};
use ocpp_cli::replay::{replay, ReplayOptions};
use ocpp_cli::websocket::Link;
use ocpp_messages::OcppVersion;
use ocpp_model::{BootAnswer, Booted};
use ocpp_tokio::{v1_6, CallFailure, DateTime, Router, Server, Session};
use tokio::sync::mpsc;

type Outcome = Result<v1_6::ResetResponse, CallFailure>;

/// A server that accepts boots and calls Reset on every station that connects, telling `tx`
/// how the call ended; recording into `out`.
async fn server(
    out: SharedWriter,
    tx: mpsc::UnboundedSender<Outcome>,
) -> (String, tokio::task::JoinHandle<()>) {
    let recorder = Arc::new(CaptureRecorder::new(out));
    let router = Router::<()>::default()
        .on_concept(|_: Session<()>, _: Booted| async {
            Ok(BootAnswer::accepted(60, DateTime::now()))
        })
        .on_connect(move |session: Session<()>| {
            let tx = tx.clone();
            async move {
                let reset = v1_6::ResetRequest::new(v1_6::ResetType::Soft);
                let _ = tx.send(session.charge_point().call(reset).await);
            }
        });
    let server = Server::builder()
        .handler(router)
        .on_message(recorder.hook())
        .bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("ws://{}/ocpp", server.local_addr().expect("addr"));
    let task = tokio::spawn(async move {
        let _ = server.run().await;
    });
    (url, task)
}

fn lines(out: &SharedWriter) -> Vec<CaptureLine> {
    let bytes = out.0.lock().expect("lock").clone();
    read_capture(io::BufReader::new(bytes.as_slice())).expect("read capture")
}

#[tokio::test]
async fn the_servers_calls_are_answered_from_the_capture() {
    // Record: a station driven by hand boots and answers Reset Accepted.
    let out = SharedWriter::default();
    let (tx, mut outcomes) = mpsc::unbounded_channel();
    let (url, task) = server(out.clone(), tx).await;
    let mut link = Link::connect(&url, "CP9", OcppVersion::V1_6)
        .await
        .expect("connect");
    link.send_text(
        r#"[2,"1","BootNotification",{"chargePointVendor":"ACME","chargePointModel":"X"}]"#,
    )
    .await
    .expect("send");
    let mut booted = false;
    let mut reset = false;
    while !(booted && reset) {
        let text = tokio::time::timeout(Duration::from_secs(10), link.next_text())
            .await
            .expect("a message in time")
            .expect("a message");
        let frame: serde_json::Value = serde_json::from_str(&text).expect("json");
        match frame[0].as_u64() {
            Some(2) if frame[2] == "Reset" => {
                let answer = serde_json::json!([3, frame[1], {"status": "Accepted"}]);
                link.send_text(&answer.to_string()).await.expect("answer");
                reset = true;
            }
            Some(3) if frame[1] == "1" => booted = true,
            _ => {}
        }
    }
    let outcome = tokio::time::timeout(Duration::from_secs(10), outcomes.recv()).await;
    assert!(matches!(outcome, Ok(Some(Ok(_)))), "{outcome:?}");
    link.close().await;
    task.abort();
    let recorded = lines(&out);
    assert_eq!(recorded.len(), 4, "{recorded:?}");
    let reset_answer = recorded
        .iter()
        .find(|l| l.dir == CaptureDirection::In && l.text.starts_with("[3,"))
        .expect("the station's recorded answer");
    assert!(
        reset_answer.text.ends_with(r#"{"status":"Accepted"}]"#),
        "{reset_answer:?}"
    );

    // Replay against a fresh server: its Reset gets the recorded answer.
    let again = SharedWriter::default();
    let (tx, mut outcomes) = mpsc::unbounded_channel();
    let (url, task) = server(again.clone(), tx).await;
    let options = ReplayOptions::new(url).linger(Duration::from_millis(500));
    let report = tokio::time::timeout(Duration::from_secs(20), replay(&recorded, &options))
        .await
        .expect("replay in time");
    assert!(report.differences.is_empty(), "{report}");
    assert_eq!(
        (report.sent, report.compared, report.answered),
        (1, 1, 1),
        "{report}"
    );
    let outcome = tokio::time::timeout(Duration::from_secs(10), outcomes.recv()).await;
    match outcome {
        Ok(Some(Ok(response))) => assert_eq!(response.status, v1_6::ResetStatus::Accepted),
        other => panic!("the replayed Reset: {other:?}"),
    }
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mock_station_answers_not_supported_and_logs_both() {
    let (tx, mut outcomes) = mpsc::unbounded_channel();
    let router = Router::<()>::default()
        .on_concept(|_: Session<()>, _: Booted| async {
            Ok(BootAnswer::accepted(60, DateTime::now()))
        })
        .on_connect(move |session: Session<()>| {
            let tx = tx.clone();
            async move {
                let request = v1_6::GetConfigurationRequest::default();
                let _ = tx.send(session.charge_point().call(request).await);
            }
        });
    let server = Server::builder()
        .handler(router)
        .bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("ws://{}/ocpp/CP-S", server.local_addr().expect("addr"));
    let task = tokio::spawn(async move {
        let _ = server.run().await;
    });
    let station = tokio::process::Command::new(env!("CARGO_BIN_EXE_ocpp"))
        .args([
            "station",
            "--url",
            &url,
            "--version",
            "1.6",
            "--duration",
            "2",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(20), station)
        .await
        .expect("the station ends in time")
        .expect("the station runs");
    task.abort();
    let outcome = tokio::time::timeout(Duration::from_secs(5), outcomes.recv()).await;
    match outcome {
        Ok(Some(Err(CallFailure::ErrorResponse { code, .. }))) => {
            assert_eq!(code, ocpp_tokio::ErrorCode::NotSupported)
        }
        other => panic!("GetConfiguration: {other:?}"),
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines = read_capture(io::BufReader::new(stdout.as_bytes())).expect("capture lines");
    assert_eq!(lines.len(), 2, "{stdout}");
    assert_eq!(
        (lines[0].dir, lines[1].dir),
        (CaptureDirection::Out, CaptureDirection::In)
    );
    assert!(
        lines[0].text.contains(r#""GetConfiguration",{}]"#),
        "{stdout}"
    );
    assert!(
        lines[1].text.starts_with("[4,") && lines[1].text.contains("NotSupported"),
        "{stdout}"
    );
    assert!(lines
        .iter()
        .all(|l| l.identity == "CP-S" && l.version == "ocpp1.6"));
}
