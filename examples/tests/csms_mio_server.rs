//! The CSMS application's new behaviour through a real `mio-server` socket, one charge point
//! per version: reports answered and shown on the admin API, the token store and the boot
//! policy from the command line and the admin API, and `--no-common-version`.

mod common;

use common::*;
use ocpp_proto::CallFailure;

fn start(extra: &[&str]) -> ServerProcess {
    ServerProcess::start(env!("CARGO_BIN_EXE_mio-server"), extra)
}

/// Sends a CALL and returns its outcome (a CALLRESULT as JSON, or the CALLERROR code).
fn call_outcome(cp: &mut ChargePoint, action: &str, payload: &str) -> Result<Value, String> {
    let request = decode_command(cp.version, action, payload).expect("valid request");
    let id = cp.connection.call(Instant::now(), request).expect("call");
    loop {
        match cp.next_event() {
            Event::CallCompleted {
                id: done, outcome, ..
            } if done == id => {
                return match outcome {
                    Ok(response) => Ok(serde_json::to_value(&response).unwrap()),
                    Err(CallFailure::ErrorResponse { code, .. }) => {
                        Err(code.as_str(cp.version).to_owned())
                    }
                    other => panic!("{action}: {other:?}"),
                }
            }
            Event::Call { .. } => panic!("unexpected CALL from the server"),
            _ => {}
        }
    }
}

/// The admin API's answer as JSON, after checking the status.
fn admin(server: &ServerProcess, method: &str, path: &str, body: &str, status: u16) -> Value {
    let (got, text) = http(server.admin, method, path, body);
    assert_eq!(got, status, "{method} {path}: {text}");
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

#[test]
fn v1_6_reports_and_tokens_over_the_socket() {
    let dir = std::env::temp_dir().join(format!("csms-mio-tokens-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tokens = dir.join("tokens.txt");
    std::fs::write(
        &tokens,
        "# idToken status [group] [expiry]\nTAG1 Accepted G1\nTAG2 Blocked\n",
    )
    .unwrap();
    let server = start(&[
        "--tokens",
        tokens.to_str().unwrap(),
        "--master-pass",
        "BOSS",
    ]);
    let mut cp = ChargePoint::connect(server.ocpp, "CP16", &[OcppVersion::V1_6], None).unwrap();
    let boot = r#"{"chargePointVendor":"ACME","chargePointModel":"Fast-50"}"#;
    assert_eq!(cp.call("BootNotification", boot)["status"], "Accepted");
    let authorize = |cp: &mut ChargePoint, tag: &str| {
        cp.call("Authorize", &format!(r#"{{"idTag":"{tag}"}}"#))["idTagInfo"].clone()
    };
    assert_eq!(
        authorize(&mut cp, "TAG1"),
        serde_json::json!({"status":"Accepted","parentIdTag":"G1"})
    );
    assert_eq!(authorize(&mut cp, "TAG2")["status"], "Blocked");
    assert_eq!(authorize(&mut cp, "NOBODY")["status"], "Invalid");
    assert_eq!(authorize(&mut cp, "BOSS")["parentIdTag"], "BOSS");
    admin(
        &server,
        "PUT",
        "/tokens/NOBODY",
        r#"{"status":"Accepted"}"#,
        200,
    );
    assert_eq!(authorize(&mut cp, "NOBODY")["status"], "Accepted");
    assert_eq!(
        admin(&server, "GET", "/tokens", "", 200)["tokens"]["TAG2"]["status"],
        "Blocked"
    );
    admin(&server, "DELETE", "/tokens/NOBODY", "", 200);
    assert_eq!(authorize(&mut cp, "NOBODY")["status"], "Invalid");

    // Reports: answered, kept, shown.
    cp.call("FirmwareStatusNotification", r#"{"status":"Installed"}"#);
    cp.call("DiagnosticsStatusNotification", r#"{"status":"Uploaded"}"#);
    let unknown = cp.call("DataTransfer", r#"{"vendorId":"nobody","messageId":"x"}"#);
    assert_eq!(unknown["status"], "UnknownVendorId");
    assert_eq!(
        cp.call("SignCertificate", r#"{"csr":"x"}"#)["status"],
        "Rejected"
    );
    let state = charge_point_state(&server, "CP16");
    assert_eq!(
        state["notifications"]["FirmwareStatusNotification"]["last_status"],
        "Installed"
    );
    assert_eq!(
        state["notifications"]["DiagnosticsStatusNotification"]["count"],
        1
    );
    let kept = admin(
        &server,
        "GET",
        "/chargepoints/CP16/notifications/DataTransfer",
        "",
        200,
    );
    assert_eq!(kept[0]["payload"]["vendorId"], "nobody");
    cp.close();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn v2_0_1_boot_pending_then_accepted_over_the_socket() {
    let server = start(&["--boot-policy", "pending"]);
    let mut cp = ChargePoint::connect(server.ocpp, "CS201", &[OcppVersion::V2_0_1], None).unwrap();
    let boot = r#"{"chargingStation":{"vendorName":"ACME","model":"AC-22"},"reason":"PowerUp"}"#;
    assert_eq!(cp.call("BootNotification", boot)["status"], "Pending");
    let event = r#"{"generatedAt":"2026-01-01T00:00:00Z","seqNo":0,"eventData":[{"eventId":1,"timestamp":"2026-01-01T00:00:00Z","trigger":"Delta","actualValue":"Occupied","eventNotificationType":"HardWiredNotification","component":{"name":"Connector","evse":{"id":1,"connectorId":1}},"variable":{"name":"AvailabilityState"}}]}"#;
    assert_eq!(
        call_outcome(&mut cp, "NotifyEvent", event),
        Err("SecurityError".into())
    );
    assert_eq!(
        call_outcome(&mut cp, "Heartbeat", "{}"),
        Err("SecurityError".into())
    );
    // Provisioning answers are allowed while Pending.
    let report = r#"{"requestId":7,"generatedAt":"2026-01-01T00:00:00Z","seqNo":0,"tbc":false}"#;
    assert_eq!(cp.call("NotifyReport", report), serde_json::json!({}));
    assert_eq!(charge_point_state(&server, "CS201")["status"], "Pending");

    admin(
        &server,
        "PUT",
        "/chargepoints/CS201/boot",
        r#"{"status":"Accepted"}"#,
        200,
    );
    assert_eq!(cp.call("BootNotification", boot)["status"], "Accepted");
    assert_eq!(cp.call("NotifyEvent", event), serde_json::json!({}));
    let get = |kind| {
        let path = format!("/chargepoints/CS201/notifications/{kind}");
        admin(&server, "GET", &path, "", 200)
    };
    assert_eq!(
        get("NotifyEvent")[0]["payload"]["eventData"][0]["actualValue"],
        "Occupied"
    );
    assert_eq!(get("NotifyReport")[0]["payload"]["requestId"], 7);
    let state = charge_point_state(&server, "CS201");
    assert_eq!(state["status"], "Accepted");
    assert_eq!(state["boot_policy"], "Accepted");
    cp.close();
}

#[test]
fn v2_1_station_calls_and_send_over_the_socket() {
    let server = start(&[]);
    let mut cp = ChargePoint::connect(server.ocpp, "CS21", &[OcppVersion::V2_1], None).unwrap();
    assert_eq!(cp.version, OcppVersion::V2_1);
    let opened = cp.call(
        "OpenPeriodicEventStream",
        r#"{"constantStreamData":{"id":1,"variableMonitoringId":2,"params":{}}}"#,
    );
    assert_eq!(opened["status"], "Accepted");
    let send = decode_command(
        OcppVersion::V2_1,
        "NotifyPeriodicEventStream",
        r#"{"data":[{"t":0,"v":"230"}],"id":1,"pending":0,"basetime":"2026-01-01T00:00:00Z"}"#,
    )
    .unwrap();
    cp.connection.send(Instant::now(), send).expect("SEND");
    cp.flush();
    let vat = cp.call("VatNumberValidation", r#"{"vatNumber":"NL123","evseId":1}"#);
    assert_eq!(vat["status"], "Rejected");
    // The SEND went before the CALL on the same connection: it has been handled.
    let state = charge_point_state(&server, "CS21");
    assert_eq!(
        state["notifications"]["NotifyPeriodicEventStream"]["count"],
        1
    );
    assert_eq!(
        state["notifications"]["OpenPeriodicEventStream"]["count"],
        1
    );
    cp.close();
}

/// The status line of an upgrade request offering only a subprotocol nobody speaks.
fn upgrade_without_common_version(server: &ServerProcess) -> String {
    let mut socket = TcpStream::connect_timeout(&server.ocpp, WAIT).unwrap();
    socket.set_read_timeout(Some(WAIT)).unwrap();
    socket
        .write_all(
            b"GET /ocpp/CPX HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
              Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
              Sec-WebSocket-Protocol: ocpp9.9\r\n\r\n",
        )
        .unwrap();
    let mut line = String::new();
    BufReader::new(socket).read_line(&mut line).unwrap();
    line
}

#[test]
fn no_common_version_accept_then_close_or_reject_400() {
    let server = start(&[]);
    let line = upgrade_without_common_version(&server);
    assert!(line.starts_with("HTTP/1.1 101"), "{line}");
    let server = start(&["--no-common-version", "reject-400"]);
    let line = upgrade_without_common_version(&server);
    assert!(line.starts_with("HTTP/1.1 400"), "{line}");
}

/// Changes a charge point's Basic password with `command` (ACTION, body), answered with
/// `answer`; returns whether the new password then opens a connection (and the old one not).
fn password_change(version: OcppVersion, command: (&str, &str), answer: &str) -> bool {
    let dir = std::env::temp_dir().join(format!(
        "csms-mio-password-{}-{}",
        std::process::id(),
        version.as_str()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("passwords");
    std::fs::write(&file, "CPW:old-password-0000\n").unwrap();
    let server = start(&["--basic-auth", file.to_str().unwrap()]);
    let old: &[u8] = b"old-password-0000";
    let new: &[u8] = b"new-password-1111";
    let mut cp = ChargePoint::connect(server.ocpp, "CPW", &[version], Some(old)).unwrap();
    let (action, body) = (command.0.to_owned(), command.1.to_owned());
    let admin_addr = server.admin;
    let sent = std::thread::spawn(move || {
        http(
            admin_addr,
            "POST",
            &format!("/chargepoints/CPW/call/{action}"),
            &body,
        )
    });
    let (id, request) = cp.expect_call();
    assert_eq!(request.action(), command.0);
    let options = ocpp_messages::decode::DecodeOptions::default();
    let response = Response::decode(version, command.0, answer, &options).expect("valid answer");
    cp.respond(&id, response);
    let (status, text) = sent.join().unwrap();
    assert_eq!(status, 200, "{text}");
    cp.close();
    let changed = ChargePoint::connect(server.ocpp, "CPW", &[version], Some(new)).is_ok();
    let old_works = ChargePoint::connect(server.ocpp, "CPW", &[version], Some(old)).is_ok();
    assert_ne!(changed, old_works, "exactly one password works");
    let _ = std::fs::remove_dir_all(&dir);
    changed
}

#[test]
fn v1_6_authorization_key_change_counts_from_the_next_connection() {
    let command = (
        "ChangeConfiguration",
        r#"{"key":"AuthorizationKey","value":"new-password-1111"}"#,
    );
    assert!(password_change(
        OcppVersion::V1_6,
        command,
        r#"{"status":"Accepted"}"#
    ));
    assert!(!password_change(
        OcppVersion::V1_6,
        command,
        r#"{"status":"Rejected"}"#
    ));
}

#[test]
fn v2_0_1_basic_auth_password_change_counts_from_the_next_connection() {
    let command = (
        "SetVariables",
        r#"{"setVariableData":[{"attributeValue":"new-password-1111","component":{"name":"SecurityCtrlr"},"variable":{"name":"BasicAuthPassword"}}]}"#,
    );
    let answer = |status: &str| {
        format!(
            r#"{{"setVariableResult":[{{"attributeStatus":"{status}","component":{{"name":"SecurityCtrlr"}},"variable":{{"name":"BasicAuthPassword"}}}}]}}"#
        )
    };
    assert!(password_change(
        OcppVersion::V2_0_1,
        command,
        &answer("Accepted")
    ));
    assert!(!password_change(
        OcppVersion::V2_0_1,
        command,
        &answer("Rejected")
    ));
}
