//! The station's side of the command vocabulary: the central system's request of every version
//! read as a [`Command`] (reading it and making it again gives the same request), and each
//! [`Outcome`] made into that version's response (valid by its schema, and read back as the
//! same outcome by the central system's side).

use ocpp_messages::{v1_6, v2_0_1, DecodeOptions, OcppVersion, Request};
use ocpp_model::{
    ChargingLimit, ChargingProfilePurpose, Command, IdToken, LimitPeriod, MessageTrigger,
    ModelError, Outcome, RateUnit, ResetKind, Setting, TransactionId,
};

const VERSIONS: [OcppVersion; 3] = [OcppVersion::V1_6, OcppVersion::V2_0_1, OcppVersion::V2_1];

/// Every kind of command, with the parameters each version can say and some it cannot.
fn commands() -> Vec<Command> {
    let mut commands = vec![
        Command::RemoteStop {
            transaction: TransactionId::Number(42),
        },
        Command::RemoteStop {
            transaction: TransactionId::Text("TX-1".into()),
        },
        Command::UnlockConnector {
            evse: 2,
            connector: None,
        },
        Command::UnlockConnector {
            evse: 2,
            connector: Some(3),
        },
        Command::ChangeAvailability {
            evse: None,
            connector: None,
            operative: false,
        },
        Command::ChangeAvailability {
            evse: Some(1),
            connector: Some(1),
            operative: true,
        },
        Command::ChangeAvailability {
            evse: Some(2),
            connector: None,
            operative: true,
        },
    ];
    for evse in [None, Some(2)] {
        commands.push(Command::RemoteStart {
            evse,
            token: IdToken::from_id_tag("TAG-1"),
            remote_start_id: 7,
            limit: None,
        });
        for kind in [
            ResetKind::Immediate,
            ResetKind::Soft,
            ResetKind::OnIdle,
            ResetKind::ImmediateAndResume,
        ] {
            commands.push(Command::Reset { kind, evse });
        }
        for message in [
            MessageTrigger::BootNotification,
            MessageTrigger::Heartbeat,
            MessageTrigger::StatusNotification,
            MessageTrigger::MeterValues,
            MessageTrigger::FirmwareStatusNotification,
            MessageTrigger::DiagnosticsStatusNotification,
            MessageTrigger::LogStatusNotification,
            MessageTrigger::TransactionEvent,
        ] {
            commands.push(Command::TriggerMessage { message, evse });
        }
    }
    for setting in Setting::ALL {
        commands.push(Command::Configure {
            setting: *setting,
            value: "60".into(),
        });
    }
    commands
}

fn limit() -> ChargingLimit {
    ChargingLimit {
        id: 3,
        stack_level: 1,
        purpose: ChargingProfilePurpose::TxDefault,
        evse: 1,
        transaction: None,
        starts: None,
        unit: RateUnit::Watts,
        periods: vec![LimitPeriod {
            start_s: 0,
            limit: "11000".parse().unwrap(),
            phases: None,
        }],
    }
}

fn wire(request: &Request) -> String {
    format!(
        "{} {}",
        request.action(),
        serde_json::to_string(request).unwrap()
    )
}

#[test]
fn a_request_read_as_a_command_is_made_again_as_it_came() {
    let mut read = 0;
    for command in commands() {
        for version in VERSIONS {
            let Ok(request) = command.to_request(version) else {
                continue;
            };
            let again = Command::from_request(&request)
                .unwrap_or_else(|| panic!("{version}: {} not read", wire(&request)));
            let remade = again.to_request(version).unwrap();
            assert_eq!(wire(&remade), wire(&request), "{version}: {again:?}");
            read += 1;
        }
    }
    assert!(read > 80, "{read} requests read");
}

#[test]
fn what_a_command_does_not_hold_is_not_read() {
    let with_profile = Command::RemoteStart {
        evse: Some(1),
        token: IdToken::from_id_tag("TAG-1"),
        remote_start_id: 7,
        limit: Some(limit()),
    };
    for version in VERSIONS {
        let request = with_profile.to_request(version).unwrap();
        assert_eq!(Command::from_request(&request), None, "{version}");
        let profile = Command::SetChargingProfile(limit())
            .to_request(version)
            .unwrap();
        assert_eq!(Command::from_request(&profile), None, "{version}");
    }
    let decode = |version, action, payload: &str| {
        Request::decode(version, action, payload, &DecodeOptions::strict()).unwrap()
    };
    // Several variables, or one that is not a Setting, or not its Actual value.
    for payload in [
        r#"{"setVariableData":[
            {"attributeValue":"60","component":{"name":"OCPPCommCtrlr"},"variable":{"name":"HeartbeatInterval"}},
            {"attributeValue":"60","component":{"name":"OCPPCommCtrlr"},"variable":{"name":"WebSocketPingInterval"}}]}"#,
        r#"{"setVariableData":[{"attributeValue":"1","component":{"name":"AuthCtrlr"},"variable":{"name":"Enabled"}}]}"#,
        r#"{"setVariableData":[{"attributeValue":"60","attributeType":"Target","component":{"name":"OCPPCommCtrlr"},"variable":{"name":"HeartbeatInterval"}}]}"#,
    ] {
        let request = decode(OcppVersion::V2_0_1, "SetVariables", payload);
        assert_eq!(Command::from_request(&request), None, "{payload}");
    }
    // A 1.6 key that is not a Setting, a 2.x trigger for one connector, a CALL that is no
    // command.
    let key = Request::from(v1_6::ChangeConfigurationRequest::new(
        "LocalAuthListEnabled",
        "true",
    ));
    assert_eq!(Command::from_request(&key), None);
    let connector = decode(
        OcppVersion::V2_0_1,
        "TriggerMessage",
        r#"{"requestedMessage":"StatusNotification","evse":{"id":1,"connectorId":2}}"#,
    );
    assert_eq!(Command::from_request(&connector), None);
    // A value the version does not define (kept by a lenient decoding) is not guessed at.
    let lenient = DecodeOptions::lenient();
    for (version, payload) in [
        (OcppVersion::V2_0_1, r#"{"operationalStatus":"Sleeping"}"#),
        (OcppVersion::V1_6, r#"{"connectorId":0,"type":"Sleeping"}"#),
    ] {
        let request = Request::decode(version, "ChangeAvailability", payload, &lenient)
            .expect("a lenient decoding keeps a value it does not know");
        assert_eq!(Command::from_request(&request), None, "{version}");
    }
    let clear = Request::from(v2_0_1::ClearCacheRequest::default());
    assert_eq!(Command::from_request(&clear), None);
}

#[test]
fn every_outcome_a_version_can_say_is_read_back_as_it_was_given() {
    let mut answered = 0;
    for command in commands() {
        for version in VERSIONS {
            if command.to_request(version).is_err() {
                continue;
            }
            for outcome in Outcome::ALL {
                match command.answer(version, outcome) {
                    Ok(response) => {
                        response.validate().unwrap();
                        let request = command.to_request(version).unwrap();
                        assert_eq!(response.action(), request.action(), "{version}");
                        let read = command.outcome(&response).unwrap();
                        assert_eq!(read.outcome, outcome, "{version} {command:?}");
                        answered += 1;
                    }
                    Err(ModelError::NotExpressible { .. }) => {}
                    Err(other) => panic!("{version} {command:?} {outcome:?}: {other}"),
                }
            }
            // Every command can be accepted (an unlock: Unlocked) and refused somehow.
            assert!(command.answer(version, Outcome::Accepted).is_ok());
            let refused = [Outcome::Rejected, Outcome::Failed, Outcome::NotSupported];
            assert!(
                refused.iter().any(|o| command.answer(version, *o).is_ok()),
                "{version} {command:?}"
            );
        }
    }
    assert!(answered > 250, "{answered} answers");
}

#[test]
fn each_version_spells_the_outcome_its_own_way() {
    let spelled = |command: &Command, version, outcome| {
        let response = command.answer(version, outcome).unwrap();
        serde_json::to_string(&response).unwrap()
    };
    let unlock = Command::UnlockConnector {
        evse: 1,
        connector: None,
    };
    assert_eq!(
        spelled(&unlock, OcppVersion::V1_6, Outcome::Accepted),
        r#"{"status":"Unlocked"}"#
    );
    assert_eq!(
        spelled(&unlock, OcppVersion::V2_0_1, Outcome::Failed),
        r#"{"status":"UnlockFailed"}"#
    );
    let trigger = Command::TriggerMessage {
        message: MessageTrigger::Heartbeat,
        evse: None,
    };
    assert_eq!(
        spelled(&trigger, OcppVersion::V2_1, Outcome::NotSupported),
        r#"{"status":"NotImplemented"}"#
    );
    let configure = Command::Configure {
        setting: Setting::HeartbeatInterval,
        value: "60".into(),
    };
    assert_eq!(
        spelled(&configure, OcppVersion::V1_6, Outcome::RebootRequired),
        r#"{"status":"RebootRequired"}"#
    );
    assert_eq!(
        spelled(&configure, OcppVersion::V2_0_1, Outcome::Accepted),
        r#"{"setVariableResult":[{"attributeStatus":"Accepted","component":{"name":"OCPPCommCtrlr"},"variable":{"name":"HeartbeatInterval"}}]}"#
    );
    // What the version has no word for is refused before anything is sent.
    let reset = Command::Reset {
        kind: ResetKind::Immediate,
        evse: None,
    };
    assert!(matches!(
        reset.answer(OcppVersion::V1_6, Outcome::Scheduled),
        Err(ModelError::NotExpressible { .. })
    ));
    assert!(matches!(
        unlock.answer(OcppVersion::V1_6, Outcome::Rejected),
        Err(ModelError::NotExpressible { .. })
    ));
}
