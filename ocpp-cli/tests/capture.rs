//! The capture format round trip: a server recording through ocpp-tokio's message hook
//! ([`CaptureRecorder`]) writes lines that [`read_capture`] reads back, with the texts that
//! went over the wire, and that `validate` accepts.

mod common;

use std::io;
use std::sync::Arc;
use std::time::Duration;

use common::SharedWriter;
use ocpp_cli::capture::{read_capture, CaptureDirection, CaptureLine, CaptureRecorder};
use ocpp_cli::mock_csms;
use ocpp_cli::validate::{Validator, Verdict};
use ocpp_cli::websocket::Link;
use ocpp_messages::OcppVersion;

#[tokio::test]
async fn a_recorded_capture_reads_back_with_the_wire_texts() {
    let out = SharedWriter::default();
    let recorder = Arc::new(CaptureRecorder::new(out.clone()));
    let server = mock_csms::bind("127.0.0.1:0", 60, &recorder)
        .await
        .expect("bind");
    let addr = server.local_addr().expect("addr");
    let serving = tokio::spawn(server.run());
    let url = format!("ws://{addr}/ocpp");

    let mut sent = Vec::new();
    let mut received = Vec::new();
    for (identity, version, call) in [
        (
            "CP16",
            OcppVersion::V1_6,
            r#"[2,"b1","BootNotification",{"chargePointVendor":"ACME","chargePointModel":"X"}]"#,
        ),
        (
            "CP201",
            OcppVersion::V2_0_1,
            r#"[2,"b2","BootNotification",{"chargingStation":{"model":"m","vendorName":"v"},"reason":"PowerUp"}]"#,
        ),
        ("CP21", OcppVersion::V2_1, r#"[2,"b3","Heartbeat",{}]"#),
    ] {
        let mut link = tokio::time::timeout(
            Duration::from_secs(10),
            Link::connect(&url, identity, version),
        )
        .await
        .expect("connect in time")
        .expect("connect");
        assert_eq!(link.subprotocol(), Some(version.subprotocol()));
        link.send_text(call).await.expect("send");
        let answer = tokio::time::timeout(Duration::from_secs(10), link.next_text())
            .await
            .expect("answer in time")
            .expect("answer");
        sent.push((identity, version, call.to_string()));
        received.push(answer);
        link.close().await;
    }

    // The hook runs before the answer is written: every line is there.
    let bytes = out.0.lock().expect("lock").clone();
    let lines = read_capture(io::BufReader::new(bytes.as_slice())).expect("read capture");
    assert_eq!(lines.len(), 6, "{}", String::from_utf8_lossy(&bytes));
    let mut validator = Validator::new();
    for (i, ((identity, version, call), answer)) in sent.iter().zip(&received).enumerate() {
        let (request, response) = (&lines[2 * i], &lines[2 * i + 1]);
        assert_eq!(
            (
                request.identity.as_str(),
                request.ocpp_version(),
                request.dir
            ),
            (*identity, Some(*version), CaptureDirection::In)
        );
        assert_eq!(&request.text, call, "the station's CALL, as sent");
        assert_eq!(
            (response.dir, &response.text),
            (CaptureDirection::Out, answer),
            "the answer, as sent"
        );
        for line in [request, response] {
            // Each line is one line of JSON that reads back the same.
            assert_eq!(CaptureLine::from_json(&line.to_json()).as_ref(), Ok(line));
            let verdict = validator.check_message(*version, identity, Some(line.dir), &line.text);
            assert!(matches!(verdict, Verdict::Valid { .. }), "{verdict}");
        }
    }
    assert_eq!(recorder.write_errors(), 0);
    serving.abort();
}
