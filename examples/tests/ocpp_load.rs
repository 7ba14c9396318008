//! `ocpp-load` runs its scenarios against `mio-server` and reports what it measured. These are
//! small cases that check the harness works (counts, no loss, no failure); the figures
//! themselves come from `bench/run.sh`, never from a test.

mod common;

use std::process::Command;

use common::{ServerProcess, Value};

const MIO: &str = env!("CARGO_BIN_EXE_mio-server");
const LOAD: &str = env!("CARGO_BIN_EXE_ocpp-load");

/// Runs `ocpp-load` (bounded: its own phase limits, plus a hard timeout) and reads its JSON.
fn load(args: &[&str]) -> Value {
    let json = std::env::temp_dir().join(format!(
        "ocpp-load-test-{}-{}.json",
        std::process::id(),
        args[0]
    ));
    let output = Command::new("timeout")
        .arg("120")
        .arg(LOAD)
        .args(args)
        .arg("--json")
        .arg(&json)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run ocpp-load");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "ocpp-load failed: {stderr}");
    let text = std::fs::read_to_string(&json).expect("report");
    let _ = std::fs::remove_file(&json);
    serde_json::from_str(&text).expect("json report")
}

fn phase<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["phases"]
        .as_array()
        .and_then(|phases| phases.iter().find(|p| p["phase"] == name))
        .unwrap_or_else(|| panic!("no phase {name} in {report}"))
}

fn counter(phase: &Value, name: &str) -> u64 {
    phase["counters"][name].as_u64().unwrap_or(0)
}

#[test]
fn heartbeat_scenario_over_two_processes_checks_every_answer() {
    let server = ServerProcess::start(MIO, &[]);
    let url = format!("ws://{}/ocpp", server.ocpp);
    let pid = server.child.id().to_string();
    let report = load(&[
        "heartbeat",
        "--url",
        &url,
        "--count",
        "40",
        "--processes",
        "2",
        "--rate",
        "400",
        "--duration-s",
        "2",
        "--heartbeat-s",
        "0.5",
        "--status-s",
        "1",
        "--meter-s",
        "1",
        "--server-pid",
        &pid,
    ]);
    let connect = phase(&report, "connect");
    assert_eq!(counter(connect, "connected"), 40, "{connect}");
    assert_eq!(connect["failed"], 0);
    assert_eq!(connect["latency"]["connect"]["count"], 40);
    assert!(connect["server_rss_bytes"].as_u64().unwrap() > 0);
    let heartbeat = phase(&report, "heartbeat");
    // 40 charge points for 2 s: 160 Heartbeats and 80 of each other kind are due, less the
    // ones still in flight when the phase ends.
    assert!(counter(heartbeat, "requests_ok") >= 250, "{heartbeat}");
    assert_eq!(counter(heartbeat, "requests_failed"), 0, "{heartbeat}");
    assert_eq!(counter(heartbeat, "disconnects"), 0, "{heartbeat}");
    assert_eq!(counter(heartbeat, "open_at_end"), 40);
    for kind in ["heartbeat", "status", "meter", "request"] {
        assert!(
            heartbeat["latency"][kind]["count"].as_u64().unwrap() > 0,
            "{kind}"
        );
    }
    assert!(heartbeat["server_cpu_us_per_request"].as_f64().is_some());
}

#[test]
fn push_scenario_counts_every_push_and_no_loss() {
    let server = ServerProcess::start(MIO, &["--push-interval-ms", "50"]);
    let url = format!("ws://{}/ocpp", server.ocpp);
    let pid = server.child.id().to_string();
    let report = load(&[
        "push",
        "--url",
        &url,
        "--count",
        "20",
        "--duration-s",
        "2",
        "--server-pid",
        &pid,
        "--version",
        "2.0.1",
    ]);
    let push = phase(&report, "push");
    // 20 clients, a push every 50 ms, for 2 s: about 800.
    let pushes = counter(push, "pushes");
    assert!((600..=900).contains(&pushes), "{push}");
    assert_eq!(counter(push, "push_lost"), 0, "{push}");
    assert_eq!(counter(push, "push_out_of_order"), 0, "{push}");
    assert_eq!(push["latency"]["push"]["count"].as_u64(), Some(pushes));
    assert!(push["server_cpu_us_per_push"].as_f64().is_some());
}

#[test]
fn reconnect_scenario_brings_every_charge_point_back() {
    // A fixed port, so the restarted server is found at the same address.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let listen = format!("127.0.0.1:{port}");
    let server = ServerProcess::start(MIO, &["--listen", &listen]);
    let pid_file = std::env::temp_dir().join(format!("ocpp-load-restart-{}", std::process::id()));
    let restart = format!(
        "exec {MIO} --listen {listen} --admin 127.0.0.1:0 --database memory >/dev/null 2>&1"
    );
    // Stops the restarted server, by the PID ocpp-load wrote, however the test ends.
    struct Restarted(std::path::PathBuf);
    impl Drop for Restarted {
        fn drop(&mut self) {
            if let Some(pid) = std::fs::read_to_string(&self.0)
                .ok()
                .and_then(|text| text.trim().parse::<i32>().ok())
                .and_then(rustix::process::Pid::from_raw)
            {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
            let _ = std::fs::remove_file(&self.0);
        }
    }
    let _restarted = Restarted(pid_file.clone());
    let report = load(&[
        "reconnect",
        "--url",
        &format!("ws://{listen}/ocpp"),
        "--count",
        "30",
        "--server-pid",
        &server.child.id().to_string(),
        "--restart-cmd",
        &restart,
        "--restart-pid-file",
        pid_file.to_str().expect("utf-8 path"),
        "--retry-min-ms",
        "100",
        "--retry-random-ms",
        "200",
        "--connect-timeout-s",
        "30",
    ]);
    let reconnect = phase(&report, "reconnect");
    assert_eq!(counter(reconnect, "dropped"), 30, "{reconnect}");
    assert_eq!(counter(reconnect, "rebooted"), 30, "{reconnect}");
    assert_eq!(counter(reconnect, "not_back"), 0, "{reconnect}");
    assert!(reconnect["all_back_after_s"].as_f64().is_some());
}

#[test]
fn rejoin_brings_the_charge_points_of_a_killed_node_back_on_the_others() {
    // Two nodes on one port (the servers' listeners share it with SO_REUSEPORT), both with
    // boot admission: a boot past 20 a second is answered Pending, and sent again after the
    // interval.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let listen = format!("127.0.0.1:{port}");
    let args = ["--listen", listen.as_str(), "--boot-rate", "20/10"];
    let killed = ServerProcess::start(MIO, &args);
    let _other = ServerProcess::start(MIO, &args);
    // The connect phase takes about 2 s (40 boots at 20 a second); the kill comes 7 s in,
    // during the heartbeat phase (15 s).
    let victim = rustix::process::Pid::from_child(&killed.child);
    let killer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(7));
        let _ = rustix::process::kill_process(victim, rustix::process::Signal::KILL);
    });
    let report = load(&[
        "heartbeat",
        "--url",
        &format!("ws://{listen}/ocpp"),
        "--count",
        "40",
        "--rejoin",
        "--duration-s",
        "15",
        "--heartbeat-s",
        "1",
        "--status-s",
        "0",
        "--meter-s",
        "0",
        "--retry-min-ms",
        "100",
        "--retry-random-ms",
        "500",
    ]);
    killer.join().expect("killer");
    let connect = phase(&report, "connect");
    assert_eq!(counter(connect, "connected"), 40, "{connect}");
    assert_eq!(connect["failed"], 0, "{connect}");
    assert!(counter(connect, "boot_pending") > 0, "{connect}");
    let heartbeat = phase(&report, "heartbeat");
    let dropped = counter(heartbeat, "dropped");
    // The kernel spreads 40 connections over both listeners (all on one: 2^-39).
    assert!(dropped > 0 && dropped < 40, "{heartbeat}");
    assert_eq!(counter(heartbeat, "rebooted"), dropped, "{heartbeat}");
    assert_eq!(counter(heartbeat, "not_back"), 0, "{heartbeat}");
    assert_eq!(counter(heartbeat, "open_at_end"), 40, "{heartbeat}");
    assert_eq!(
        heartbeat["latency"]["reconnect"]["count"].as_u64(),
        Some(dropped),
        "{heartbeat}"
    );
    assert!(heartbeat["all_back_after_s"].as_f64().is_some());
}

#[test]
fn soak_scenario_accounts_for_every_call_and_command() {
    let server = ServerProcess::start(MIO, &[]);
    let url = format!("ws://{}/ocpp", server.ocpp);
    let admin = server.admin.to_string();
    let pid = server.child.id().to_string();
    // 30 charge points for 6 s with fast churn (a disconnect every 3 s on average), short
    // sessions, duplicates and 20 commands a second: every path runs, briefly.
    let report = load(&[
        "soak",
        "--url",
        &url,
        "--admin",
        &admin,
        "--count",
        "30",
        "--rate",
        "300",
        "--duration-s",
        "6",
        "--heartbeat-s",
        "1",
        "--meter-s",
        "0.5",
        "--session-s",
        "1",
        "--churn-s",
        "3",
        "--duplicate-share",
        "0.1",
        "--commands-per-s",
        "20",
        "--retry-min-ms",
        "50",
        "--retry-random-ms",
        "100",
        "--retry-max-ms",
        "1000",
        "--server-pid",
        &pid,
    ]);
    let soak = &report["soak"];
    assert_eq!(soak["all_ok"], true, "{soak:#}");
    let client = &soak["client"];
    let n = |name: &str| client[name].as_u64().unwrap_or(0);
    assert_eq!(n("calls_unanswered_other"), 0, "{client}");
    assert!(n("sessions_started") > 0, "{client}");
    assert!(n("reconnected") > 0, "{client}");
    assert!(n("closes_dropped") + n("closes_clean") > 0, "{client}");
    assert!(n("duplicate_connects") > 0, "{client}");
    assert!(n("srv_calls_received") > 0, "{client}");
    assert!(
        soak["commands"]["http_200"].as_u64().unwrap_or(0) > 0,
        "{soak}"
    );
}
