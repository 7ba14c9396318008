//! The summary line (bench latency, gaps), many simulated charge points, the help and bad
//! arguments.

use super::*;

#[test]
fn prints_the_summary_with_bench_latency_and_gaps() {
    let csms = Csms::start(Policy {
        heartbeat_s: 60,
        ..default_policy()
    });
    let mut cp = ChargePoint::spawn(&[
        "--url",
        &csms.url("CP001"),
        "--version",
        "1.6",
        "--duration-s",
        "4",
    ]);
    csms.wait_call("StatusNotification", 2);
    let v = OcppVersion::V1_6;
    for seq in [1, 2, 5] {
        let data = format!("{seq}:{}", unix_nanos());
        let answer = csms
            .command(request(
                v,
                "DataTransfer",
                json!({"vendorId": "bench", "messageId": "ts", "data": data}),
            ))
            .unwrap();
        assert_eq!(answer["status"], "Accepted");
    }
    let out = cp.wait_output(Duration::from_secs(15));
    let summary = out
        .lines()
        .find(|l| l.starts_with("summary:"))
        .unwrap_or_else(|| panic!("no summary in {out:?}"));
    assert_eq!(summary_value(summary, "stations"), 1);
    assert_eq!(summary_value(summary, "connections"), 1);
    assert_eq!(summary_value(summary, "booted"), 1);
    assert_eq!(summary_value(summary, "commands"), 3);
    assert_eq!(summary_value(summary, "datatransfer_n"), 3);
    assert_eq!(summary_value(summary, "sequence_gaps"), 2);
    assert!(summary_value(summary, "calls_sent") >= 3); // boot + 2 statuses
    assert_eq!(
        summary_value(summary, "calls_sent"),
        summary_value(summary, "calls_answered")
    );
    let max = summary_value(summary, "max");
    assert!(max > 0 && max < 5_000_000, "{summary}");
    // The charge point closed its connection cleanly before exiting.
    csms.wait_for("the close", |s| s.iter().any(|e| matches!(e, Seen::Closed)));
}

#[test]
fn simulates_many_charge_points() {
    let csms = Csms::start(Policy {
        heartbeat_s: 60,
        ..default_policy()
    });
    let _cp = ChargePoint::spawn(&[
        "--url",
        &csms.url("ignored"),
        "--version",
        "1.6",
        "--count",
        "5",
    ]);
    let seen = csms.wait_for("five boots", |s| calls(s, "BootNotification").len() >= 5);
    let mut identities: Vec<String> = seen
        .iter()
        .filter_map(|s| match s {
            Seen::Upgrade { identity, .. } => Some(identity.clone()),
            _ => None,
        })
        .collect();
    identities.sort();
    assert_eq!(
        identities,
        vec!["CP0001", "CP0002", "CP0003", "CP0004", "CP0005"]
    );
}

#[test]
fn help_and_bad_arguments() {
    let out = Command::new(env!("CARGO_BIN_EXE_charge-point"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("--retry-wait-min-s"));
    let out = Command::new(env!("CARGO_BIN_EXE_charge-point"))
        .args(["--version", "9"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
