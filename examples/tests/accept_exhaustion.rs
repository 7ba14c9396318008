//! Out of descriptors, on both servers: a flood of connections takes every descriptor the
//! server may open (its limit lowered with `prlimit`), the accept loop waits and tries again
//! (`ocpp_proto::accept::after_accept_error`, the one policy) instead of spinning or dying,
//! a charge point connected before the flood keeps being answered, and once the flood goes, a
//! new charge point connects and boots. Bounded: every wait has a deadline.

mod common;

use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

/// The descriptors the server holds now (`/proc/PID/fd`).
fn open_files(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|dir| dir.count())
        .unwrap_or(0)
}

fn the_accept_loop_survives_running_out_of_descriptors(binary: &str) {
    let mut server = ServerProcess::start(binary, &[]);
    let pid = server.child.id();
    let boot = r#"{"chargePointVendor":"ACME","chargePointModel":"Fast-50"}"#;
    let mut before =
        ChargePoint::connect(server.ocpp, "CP-BEFORE", &[OcppVersion::V1_6], None).unwrap();
    assert_eq!(before.call("BootNotification", boot)["status"], "Accepted");

    // Room for a few more descriptors, then a flood three times larger.
    let limit = open_files(pid) + 8;
    let status = Command::new("prlimit")
        .arg(format!("--pid={pid}"))
        .arg(format!("--nofile={limit}:{limit}"))
        .status()
        .expect("prlimit (util-linux) runs");
    assert!(status.success(), "prlimit failed: {status}");
    let flood: Vec<TcpStream> = (0..24)
        .map(|_| TcpStream::connect(server.ocpp).expect("the backlog takes it"))
        .collect();
    let deadline = Instant::now() + WAIT;
    while open_files(pid) < limit {
        assert!(
            Instant::now() < deadline,
            "the server never reached its limit of {limit} descriptors ({} open)",
            open_files(pid)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Out of descriptors, with connections still in the backlog: the server carries on.
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        server.child.try_wait().expect("try_wait").is_none(),
        "{binary} exited when it ran out of descriptors"
    );
    let answer = before.call("Heartbeat", "{}");
    assert!(answer["currentTime"].is_string(), "{answer}");

    // The flood goes; the descriptors come back and the loop accepts again.
    drop(flood);
    let deadline = Instant::now() + WAIT;
    let mut after = loop {
        match ChargePoint::connect(server.ocpp, "CP-AFTER", &[OcppVersion::V1_6], None) {
            Ok(cp) => break cp,
            Err(e) => {
                assert!(
                    Instant::now() < deadline,
                    "no connection after the flood: {e:?}"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    };
    assert_eq!(after.call("BootNotification", boot)["status"], "Accepted");
    let answer = before.call("Heartbeat", "{}");
    assert!(answer["currentTime"].is_string(), "{answer}");
    after.close();
    before.close();
}

#[test]
fn mio_server() {
    the_accept_loop_survives_running_out_of_descriptors(env!("CARGO_BIN_EXE_mio-server"));
}

#[test]
fn tokio_server() {
    the_accept_loop_survives_running_out_of_descriptors(env!("CARGO_BIN_EXE_tokio-server"));
}
