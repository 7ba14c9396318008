//! The payloads' tests: every message in every version, and the commands read back.

use ocpp_messages::version::OcppVersion;
use ocpp_messages::{v1_6, v2_0_1, v2_1};
use ocpp_proto::Request;

use super::*;

fn tx() -> TxRef {
    TxRef {
        connector: 1,
        id_tag: "TAG1".into(),
        local_id: "tx-1".into(),
        csms_id: Some(7),
        seq_no: 0,
        remote_start_id: Some(3),
    }
}

#[test]
fn every_outgoing_message_passes_every_versions_schema() {
    let reading = MeterSnapshot {
        energy_wh: 1234,
        power_w: 11000.0,
    };
    let messages = [
        Outgoing::Boot {
            identity: "CP001".into(),
            reason: BootReason::PowerUp,
        },
        Outgoing::Heartbeat,
        Outgoing::Status {
            connector: 1,
            state: ConnectorStage::Charging,
        },
        Outgoing::Authorize {
            id_tag: "TAG1".into(),
        },
        Outgoing::TxStarted {
            tx: tx(),
            reading,
            remote: true,
        },
        Outgoing::TxUpdated {
            tx: tx(),
            reading,
            triggered: false,
        },
        Outgoing::TxEnded {
            tx: tx(),
            reading,
            reason: StationStopReason::HardReset,
        },
        Outgoing::Meter {
            connector: 1,
            reading,
        },
    ];
    for version in OcppVersion::ALL {
        for message in &messages {
            let request = request(version, message).unwrap();
            assert_eq!(request.version(), version);
            match request {
                Request::V1_6(r) => r.validate().unwrap(),
                Request::V2_0_1(r) => r.validate().unwrap(),
                Request::V2_1(r) => r.validate().unwrap(),
                _ => unreachable!(),
            }
        }
    }
}

#[test]
fn replies_decode_in_every_version() {
    let cases_v2 = [
        ("TriggerMessage", CommandReply::TriggerNotImplemented),
        (
            "SetVariables",
            CommandReply::SetVariables(vec![(
                "OCPPCommCtrlr".into(),
                "X".into(),
                SettingStatus::Unknown,
            )]),
        ),
        (
            "GetVariables",
            CommandReply::GetVariables(vec![(
                "OCPPCommCtrlr".into(),
                "HeartbeatInterval".into(),
                Some("10".into()),
            )]),
        ),
        ("DataTransfer", CommandReply::DataTransfer),
    ];
    for version in [OcppVersion::V2_0_1, OcppVersion::V2_1] {
        for (action, reply) in &cases_v2 {
            let response = response(version, action, reply).unwrap();
            assert_eq!(response.action(), *action);
        }
    }
    let cases_v16 = [
        ("TriggerMessage", CommandReply::TriggerNotImplemented),
        (
            "ChangeConfiguration",
            CommandReply::ChangeConfiguration(SettingStatus::Unknown),
        ),
        (
            "GetConfiguration",
            CommandReply::GetConfiguration {
                known: vec![("HeartbeatInterval".into(), "10".into(), false)],
                unknown: vec![],
            },
        ),
        ("DataTransfer", CommandReply::DataTransfer),
    ];
    for (action, reply) in &cases_v16 {
        let response = response(OcppVersion::V1_6, action, reply).unwrap();
        assert_eq!(response.action(), *action);
    }
}

/// A CSMS's CALL of `version`, read.
fn read(version: OcppVersion, action: &str, payload: &str) -> CsmsCommand {
    let request = match version {
        OcppVersion::V1_6 => Request::from(v1_6::decode_call(action, payload).unwrap()),
        OcppVersion::V2_0_1 => Request::from(v2_0_1::decode_call(action, payload).unwrap()),
        OcppVersion::V2_1 => Request::from(v2_1::decode_call(action, payload).unwrap()),
    };
    read_command(&request)
}

#[test]
fn commands_read_in_both_families() {
    // What the model reads is the model's command.
    assert!(matches!(
        read(
            OcppVersion::V2_0_1,
            "RequestStartTransaction",
            r#"{"idToken":{"idToken":"ABC","type":"ISO14443"},"remoteStartId":9,"evseId":1}"#,
        ),
        CsmsCommand::Model(Command::RemoteStart {
            evse: Some(1),
            remote_start_id: 9,
            ..
        })
    ));
    assert!(matches!(
        read(
            OcppVersion::V1_6,
            "ChangeConfiguration",
            r#"{"key":"HeartbeatInterval","value":"30"}"#,
        ),
        CsmsCommand::Model(Command::Configure { .. })
    ));
    // The rest is the simulators' own.
    assert!(matches!(
        read(
            OcppVersion::V1_6,
            "ChangeConfiguration",
            r#"{"key":"RetryBackOffWaitMinimum","value":"30"}"#,
        ),
        CsmsCommand::ChangeConfiguration { key, .. } if key == "RetryBackOffWaitMinimum"
    ));
    assert_eq!(
        read(
            OcppVersion::V2_0_1,
            "TriggerMessage",
            r#"{"requestedMessage":"SignChargingStationCertificate"}"#,
        ),
        CsmsCommand::OtherTrigger
    );
    for (version, data) in [(OcppVersion::V1_6, "1:2"), (OcppVersion::V2_1, "5:6")] {
        let payload = format!(r#"{{"vendorId":"bench","messageId":"ts","data":"{data}"}}"#);
        assert!(
            matches!(read(version, "DataTransfer", &payload), CsmsCommand::DataTransfer { data: Some(d), .. } if d == data)
        );
    }
}
