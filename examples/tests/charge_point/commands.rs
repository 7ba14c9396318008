//! The CSMS's commands answered, in 1.6 and 2.0.1: the model's commands (`Router::on_command`)
//! and the simulator's own (configuration keys and variables the model does not name, a
//! trigger it does not read).

use super::*;

#[test]
fn answers_commands_v16() {
    let csms = Csms::start(Policy {
        heartbeat_s: 60,
        ..default_policy()
    });
    let _cp = ChargePoint::spawn(&["--url", &csms.url("CP001"), "--version", "1.6"]);
    let v = OcppVersion::V1_6;
    csms.wait_call("StatusNotification", 2);

    let config = csms
        .command(request(
            v,
            "GetConfiguration",
            json!({"key": ["HeartbeatInterval", "Nope"]}),
        ))
        .unwrap();
    assert_eq!(config["configurationKey"][0]["key"], "HeartbeatInterval");
    assert_eq!(config["configurationKey"][0]["value"], "60");
    assert_eq!(config["unknownKey"], json!(["Nope"]));
    let change = csms
        .command(request(
            v,
            "ChangeConfiguration",
            json!({"key": "HeartbeatInterval", "value": "1"}),
        ))
        .unwrap();
    assert_eq!(change["status"], "Accepted");
    csms.wait_call("Heartbeat", 1);
    // Keys the model does not name go to the simulator's own reader.
    for (key, status) in [
        ("RetryBackOffWaitMinimum", "Accepted"),
        ("NumberOfConnectors", "Rejected"),
        ("Nope", "NotSupported"),
    ] {
        let change = csms
            .command(request(
                v,
                "ChangeConfiguration",
                json!({"key": key, "value": "3"}),
            ))
            .unwrap();
        assert_eq!(change["status"], status, "{key}");
    }
    let diagnostics = csms
        .command(request(
            v,
            "TriggerMessage",
            json!({"requestedMessage": "DiagnosticsStatusNotification"}),
        ))
        .unwrap();
    assert_eq!(diagnostics["status"], "NotImplemented");

    let trigger = csms
        .command(request(
            v,
            "TriggerMessage",
            json!({"requestedMessage": "StatusNotification", "connectorId": 1}),
        ))
        .unwrap();
    assert_eq!(trigger["status"], "Accepted");
    csms.wait_call("StatusNotification", 3);

    let unsupported = csms.command(request(v, "ClearCache", json!({})));
    assert_eq!(unsupported, Err("NotSupported".to_string()));

    let start = csms
        .command(request(
            v,
            "RemoteStartTransaction",
            json!({"idTag": "REMOTE1", "connectorId": 1}),
        ))
        .unwrap();
    assert_eq!(start["status"], "Accepted");
    let started = csms.wait_call("StartTransaction", 1);
    assert_eq!(started["idTag"], "REMOTE1");
    // A second start while one runs is rejected.
    let again = csms
        .command(request(
            v,
            "RemoteStartTransaction",
            json!({"idTag": "REMOTE2"}),
        ))
        .unwrap();
    assert_eq!(again["status"], "Rejected");
    let stop = csms
        .command(request(
            v,
            "RemoteStopTransaction",
            json!({"transactionId": 42}),
        ))
        .unwrap();
    assert_eq!(stop["status"], "Accepted");
    let stopped = csms.wait_call("StopTransaction", 1);
    assert_eq!(
        (
            stopped["transactionId"].as_i64(),
            stopped["reason"].as_str()
        ),
        (Some(42), Some("Remote"))
    );

    let reset = csms
        .command(request(v, "Reset", json!({"type": "Soft"})))
        .unwrap();
    assert_eq!(reset["status"], "Accepted");
    // Reset: the charge point closes, reconnects at once and boots again.
    csms.wait_call("BootNotification", 2);
    let seen = csms.seen();
    assert_eq!(upgrades(&seen).len(), 2);
    assert!(seen.iter().any(|s| matches!(s, Seen::Closed)));
}

#[test]
fn answers_commands_v201() {
    let csms = Csms::start(Policy {
        heartbeat_s: 60,
        ..default_policy()
    });
    let _cp = ChargePoint::spawn(&["--url", &csms.url("CP003"), "--version", "2.0.1"]);
    let v = OcppVersion::V2_0_1;
    csms.wait_call("StatusNotification", 1);

    let get = csms
        .command(request(
            v,
            "GetVariables",
            json!({"getVariableData": [
                {"component": {"name": "OCPPCommCtrlr"}, "variable": {"name": "HeartbeatInterval"}},
                {"component": {"name": "OCPPCommCtrlr"}, "variable": {"name": "Nope"}},
            ]}),
        ))
        .unwrap();
    assert_eq!(get["getVariableResult"][0]["attributeStatus"], "Accepted");
    assert_eq!(get["getVariableResult"][0]["attributeValue"], "60");
    assert_eq!(
        get["getVariableResult"][1]["attributeStatus"],
        "UnknownVariable"
    );
    let set = csms
        .command(request(
            v,
            "SetVariables",
            json!({"setVariableData": [{
                "component": {"name": "OCPPCommCtrlr"},
                "variable": {"name": "RetryBackOffWaitMinimum"},
                "attributeValue": "1",
            }]}),
        ))
        .unwrap();
    assert_eq!(set["setVariableResult"][0]["attributeStatus"], "Accepted");
    // One standard variable is the model's `Configure`; its answer names it back.
    let set = csms
        .command(request(
            v,
            "SetVariables",
            json!({"setVariableData": [{
                "component": {"name": "OCPPCommCtrlr"},
                "variable": {"name": "HeartbeatInterval"},
                "attributeValue": "45",
            }]}),
        ))
        .unwrap();
    assert_eq!(
        set["setVariableResult"][0],
        json!({
            "attributeStatus": "Accepted",
            "component": {"name": "OCPPCommCtrlr"},
            "variable": {"name": "HeartbeatInterval"},
        })
    );
    // A trigger the model reads but the simulator does not send, and one the model does not
    // read: NotImplemented both.
    for message in ["LogStatusNotification", "SignChargingStationCertificate"] {
        let trigger = csms
            .command(request(
                v,
                "TriggerMessage",
                json!({"requestedMessage": message}),
            ))
            .unwrap();
        assert_eq!(trigger["status"], "NotImplemented", "{message}");
    }

    let start = csms
        .command(request(
            v,
            "RequestStartTransaction",
            json!({"idToken": {"idToken": "R1", "type": "ISO14443"}, "remoteStartId": 7}),
        ))
        .unwrap();
    assert_eq!(start["status"], "Accepted");
    let started = csms.wait_call("TransactionEvent", 1);
    assert_eq!(started["eventType"], "Started");
    assert_eq!(started["triggerReason"], "RemoteStart");
    assert_eq!(started["transactionInfo"]["remoteStartId"], 7);
    let id = started["transactionInfo"]["transactionId"].clone();
    let stop = csms
        .command(request(
            v,
            "RequestStopTransaction",
            json!({"transactionId": id}),
        ))
        .unwrap();
    assert_eq!(stop["status"], "Accepted");
    let seen = csms.wait_for("TransactionEvent(Ended)", |s| {
        calls(s, "TransactionEvent")
            .iter()
            .any(|e| e["eventType"] == "Ended")
    });
    let ended = calls(&seen, "TransactionEvent").pop().unwrap();
    assert_eq!(ended["triggerReason"], "RemoteStop");
    assert_eq!(ended["transactionInfo"]["stoppedReason"], "Remote");

    let trigger = csms
        .command(request(
            v,
            "TriggerMessage",
            json!({"requestedMessage": "Heartbeat"}),
        ))
        .unwrap();
    assert_eq!(trigger["status"], "Accepted");
    csms.wait_call("Heartbeat", 1);

    let reset = csms
        .command(request(v, "Reset", json!({"type": "Immediate"})))
        .unwrap();
    assert_eq!(reset["status"], "Accepted");
    let boot = csms.wait_call("BootNotification", 2);
    assert_eq!(boot["reason"], "RemoteReset");
}
