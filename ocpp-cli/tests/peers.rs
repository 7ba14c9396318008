//! The mock peers and replay, as processes on loopback: `station` boots against `csms`; a
//! capture made by `csms` replays against a fresh `csms` with no difference, and a changed one
//! reports the difference.

mod common;

use std::time::Duration;

use common::{run, scratch, Csms, SCRIPT};

#[test]
fn a_station_boots_against_the_csms() {
    let csms = Csms::start("boot", 1);
    let output = run(
        &[
            "station",
            "--url",
            &format!("{}/CP-B", csms.url()),
            "--version",
            "2.0.1",
            "--duration",
            "2",
        ],
        None,
        Duration::from_secs(20),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("CP-B Accepted { version: V2_0_1 }"),
        "{stderr}"
    );
    let capture = csms.wait_for_lines(2, Duration::from_secs(5));
    let mut lines = capture.lines();
    let boot = lines.next().unwrap_or_default();
    let accepted = lines.next().unwrap_or_default();
    assert!(
        boot.contains(r#""identity":"CP-B","version":"ocpp2.0.1","dir":"in""#)
            && boot.contains("BootNotification"),
        "{capture}"
    );
    assert!(
        accepted.contains(r#""dir":"out""#) && accepted.contains(r#"\"status\":\"Accepted\""#),
        "{capture}"
    );
    assert!(accepted.contains(r#"\"interval\":1"#), "{capture}");
}

#[test]
fn a_capture_of_the_csms_replays_without_difference_and_a_changed_one_with() {
    // Record: the script played against a first csms, whose stdout is the capture.
    let script = scratch("script.jsonl");
    std::fs::write(&script, SCRIPT.join("\n")).expect("write script");
    let first = Csms::start("first", 60);
    let output = run(
        &[
            "replay",
            script.to_str().expect("path"),
            "--url",
            &first.url(),
        ],
        None,
        Duration::from_secs(30),
    );
    // The script has no recorded answers: nothing to compare yet.
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let recorded = first.wait_for_lines(2 * SCRIPT.len(), Duration::from_secs(5));
    assert_eq!(recorded.lines().count(), 2 * SCRIPT.len(), "{recorded}");
    let capture = scratch("recorded.jsonl");
    std::fs::write(&capture, &recorded).expect("write capture");

    // Every answer of the mock is schema-valid, as our own decoder judges it.
    let output = run(
        &["validate", "--file", capture.to_str().expect("path")],
        None,
        Duration::from_secs(10),
    );
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{stdout}");
    assert!(
        stdout.ends_with("20 valid, 0 invalid, 0 unchecked\n"),
        "{stdout}"
    );

    // Replay against a fresh csms: the same answers but the times.
    let second = Csms::start("second", 60);
    let output = run(
        &[
            "replay",
            capture.to_str().expect("path"),
            "--url",
            &second.url(),
        ],
        None,
        Duration::from_secs(30),
    );
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{stdout}");
    assert!(
        stdout.contains("10 messages sent, 10 answers compared"),
        "{stdout}"
    );
    assert!(stdout.contains(", 0 differences"), "{stdout}");

    // A changed answer in the capture: reported with its path, exit code 1.
    let changed = scratch("changed.jsonl");
    std::fs::write(
        &changed,
        recorded.replace(r#"\"interval\":60"#, r#"\"interval\":30"#),
    )
    .expect("write changed");
    let third = Csms::start("third", 60);
    let output = run(
        &[
            "replay",
            changed.to_str().expect("path"),
            "--url",
            &third.url(),
        ],
        None,
        Duration::from_secs(30),
    );
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("DIFF CP1 BootNotification (id 1) $.interval: recorded 30, replayed 60"),
        "{stdout}"
    );
    assert!(
        stdout.contains("DIFF CP2 BootNotification (id a) $.interval: recorded 30, replayed 60"),
        "{stdout}"
    );
    assert!(stdout.contains(", 2 differences"), "{stdout}");

    // Ignoring the field makes the changed capture pass.
    let fourth = Csms::start("fourth", 60);
    let output = run(
        &[
            "replay",
            changed.to_str().expect("path"),
            "--url",
            &fourth.url(),
            "--ignore",
            "interval",
        ],
        None,
        Duration::from_secs(30),
    );
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{stdout}");
    assert!(
        stdout.starts_with("ignoring fields: currentTime, timestamp, interval\n"),
        "{stdout}"
    );

    for path in [script, capture, changed] {
        let _ = std::fs::remove_file(path);
    }
}

#[test]
fn replay_reports_a_server_that_is_not_there() {
    let script = scratch("nobody.jsonl");
    std::fs::write(&script, SCRIPT[0]).expect("write script");
    // A port that was free a moment ago.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let output = run(
        &[
            "replay",
            script.to_str().expect("path"),
            "--url",
            &format!("ws://127.0.0.1:{port}/ocpp"),
        ],
        None,
        Duration::from_secs(20),
    );
    let _ = std::fs::remove_file(&script);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("DIFF CP1 - (id -) connection"), "{stdout}");
}
