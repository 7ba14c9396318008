//! `ocpp validate`: the error code the receiving side answers with and the field's JSON path,
//! for several versions, through the binary.

mod common;

use std::time::Duration;

use common::run;

/// One message through `ocpp validate --version <version>`: (exit code, the verdict line).
fn validate(version: &str, message: &str) -> (i32, String) {
    let output = run(
        &["validate", "--version", version, message],
        None,
        Duration::from_secs(10),
    );
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let first = stdout.lines().next().unwrap_or_default().to_string();
    (output.status.code().unwrap_or(-1), first)
}

#[test]
fn good_messages_are_ok() {
    for (version, message) in [
        (
            "1.6",
            r#"[2,"1","BootNotification",{"chargePointVendor":"ACME","chargePointModel":"X"}]"#,
        ),
        ("2.0.1", r#"[2,"1","Heartbeat",{}]"#),
        (
            "2.1",
            r#"[2,"1","BootNotification",{"chargingStation":{"model":"m","vendorName":"v"},"reason":"PowerUp"}]"#,
        ),
        ("1.6", r#"[4,"1","NotImplemented","",{}]"#),
    ] {
        let (code, line) = validate(version, message);
        assert_eq!(code, 0, "{version} {message}: {line}");
        assert!(line.starts_with("line 1: OK "), "{line}");
    }
}

#[test]
fn bad_messages_get_the_code_and_path_of_the_receiving_side() {
    let cases = [
        // 1.6 spells it "Occurence".
        (
            "1.6",
            r#"[2,"1","BootNotification",{"chargePointVendor":"ACME"}]"#,
            "OccurenceConstraintViolation at $.chargePointModel",
        ),
        (
            "2.0.1",
            r#"[2,"1","BootNotification",{"reason":"PowerUp"}]"#,
            "OccurrenceConstraintViolation at $.chargingStation",
        ),
        (
            "1.6",
            r#"[2,"1","Authorize",{"idTag":"THIS-ID-TAG-IS-FAR-TOO-LONG"}]"#,
            "PropertyConstraintViolation at $.idTag",
        ),
        (
            "2.1",
            r#"[2,"1","BootNotification",{"chargingStation":{"model":"m","vendorName":"v"},"reason":"Bogus"}]"#,
            "PropertyConstraintViolation at $.reason",
        ),
        (
            "1.6",
            r#"[2,"1","MeterValues",{"connectorId":"1","meterValue":[]}]"#,
            "TypeConstraintViolation at $.connectorId",
        ),
        (
            "2.0.1",
            r#"[2,"1","MeterValues",{"evseId":1,"meterValue":[{"timestamp":"2026-01-01T00:00:00Z","sampledValue":[{"value":1},{"value":"x"}]}]}]"#,
            "TypeConstraintViolation at $.meterValue[0].sampledValue[1].value",
        ),
        (
            "2.0.1",
            r#"[2,"1","Heartbeat",{"x":1}]"#,
            "FormatViolation at $.x",
        ),
        ("1.6", r#"[2,"1","NoSuchAction",{}]"#, "NotImplemented"),
        ("1.6", r#"[2,"1","Heartbeat",{"#, "FormationViolation"),
        ("2.0.1", r#"[2,"1","Heartbeat",{"#, "FormatViolation"),
        (
            "2.0.1",
            r#"[9,"1","Heartbeat",{}]"#,
            "MessageTypeNotSupported",
        ),
        ("1.6", r#"[9,"1","Heartbeat",{}]"#, "Ignored"),
    ];
    for (version, message, expected) in cases {
        let (code, line) = validate(version, message);
        assert_eq!(code, 1, "{version} {message}: {line}");
        assert!(
            line.starts_with(&format!("line 1: {expected}")),
            "{version} {message}: expected `{expected}`, got `{line}`"
        );
    }
}

#[test]
fn a_bare_payload_needs_its_action() {
    let output = run(
        &[
            "validate",
            "--version",
            "1.6",
            "--action",
            "BootNotification",
        ],
        Some("{\"chargePointVendor\":\"ACME\"}\n"),
        Duration::from_secs(10),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stdout.contains("OccurenceConstraintViolation at $.chargePointModel"),
        "{stdout}"
    );

    let output = run(
        &[
            "validate",
            "-v",
            "2.0.1",
            "-a",
            "Heartbeat",
            "--result",
            r#"{"currentTime":"yesterday"}"#,
        ],
        None,
        Duration::from_secs(10),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("FormatViolation at $.currentTime (CALLRESULT Heartbeat)"),
        "{stdout}"
    );
}

#[test]
fn a_capture_gives_callresults_the_action_of_their_call() {
    let capture = [
        r#"{"t_ms":1,"identity":"CP1","version":"ocpp1.6","dir":"in","text":"[2,\"1\",\"Heartbeat\",{}]"}"#,
        r#"{"t_ms":2,"identity":"CP2","version":"ocpp2.0.1","dir":"in","text":"[2,\"1\",\"Authorize\",{\"idToken\":{\"idToken\":\"A\",\"type\":\"ISO14443\"}}]"}"#,
        // CP1's answer lacks currentTime: the action comes from CP1's CALL "1", not CP2's.
        r#"{"t_ms":3,"identity":"CP1","version":"ocpp1.6","dir":"out","text":"[3,\"1\",{}]"}"#,
        r#"{"t_ms":4,"identity":"CP2","version":"ocpp2.0.1","dir":"out","text":"[3,\"1\",{\"idTokenInfo\":{\"status\":\"Accepted\"}}]"}"#,
        // No CALL of CP1 with id 7: not checked, not counted as invalid.
        r#"{"t_ms":5,"identity":"CP1","version":"ocpp1.6","dir":"out","text":"[3,\"7\",{}]"}"#,
    ]
    .join("\n");
    let path = common::scratch("validate-capture.jsonl");
    std::fs::write(&path, capture).expect("write capture");
    let output = run(
        &["validate", "--file", path.to_str().expect("path")],
        None,
        Duration::from_secs(10),
    );
    let _ = std::fs::remove_file(&path);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert_eq!(lines[0], "line 1 CP1 in: OK CALL Heartbeat");
    assert_eq!(lines[1], "line 2 CP2 in: OK CALL Authorize");
    assert!(
        lines[2].starts_with(
            "line 3 CP1 out: OccurenceConstraintViolation at $.currentTime (CALLRESULT Heartbeat)"
        ),
        "{}",
        lines[2]
    );
    assert_eq!(lines[3], "line 4 CP2 out: OK CALLRESULT Authorize");
    assert!(
        lines[4].starts_with("line 5 CP1 out: UNCHECKED"),
        "{}",
        lines[4]
    );
    assert_eq!(lines[5], "3 valid, 1 invalid, 1 unchecked");
}
