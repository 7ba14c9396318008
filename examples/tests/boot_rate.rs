//! `--boot-rate` on both servers: past the rate, a BootNotification is answered Pending with
//! the interval of the slot kept for the charge point, the storm is spread in arrival order,
//! and the metrics count it (`ocpp_reference_csms::admission`).

mod common;

use common::*;

fn a_boot_storm_is_answered_pending_past_the_rate(binary: &str) {
    let server = ServerProcess::start(binary, &["--boot-rate", "1/1"]);
    let boot = r#"{"chargePointVendor":"ACME","chargePointModel":"Fast-50"}"#;
    let mut answers = Vec::new();
    let mut charge_points = Vec::new();
    for i in 0..3 {
        let identity = format!("CP{i}");
        let mut cp =
            ChargePoint::connect(server.ocpp, &identity, &[OcppVersion::V1_6], None).unwrap();
        let answer = cp.call("BootNotification", boot);
        answers.push((answer["status"].clone(), answer["interval"].clone()));
        charge_points.push(cp);
    }
    assert_eq!(answers[0].0, "Accepted", "{answers:?}");
    // One a second: the second and third are told to come back in 1 and 2 seconds.
    assert_eq!(answers[1], ("Pending".into(), 1.into()), "{answers:?}");
    assert_eq!(answers[2], ("Pending".into(), 2.into()), "{answers:?}");
    let (status, metrics) = http(server.admin, "GET", "/metrics", "");
    assert_eq!(status, 200);
    assert!(
        metrics.contains("ocpp_boots_deferred_total 2\n"),
        "{metrics}"
    );
    assert!(metrics.contains("ocpp_boots_waiting 2\n"), "{metrics}");
    for cp in charge_points {
        cp.close();
    }
}

#[test]
fn mio_server() {
    a_boot_storm_is_answered_pending_past_the_rate(env!("CARGO_BIN_EXE_mio-server"));
}

#[test]
fn tokio_server() {
    a_boot_storm_is_answered_pending_past_the_rate(env!("CARGO_BIN_EXE_tokio-server"));
}
