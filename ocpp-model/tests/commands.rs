//! Commands made into each version's request (valid, or NotExpressible before anything is
//! sent) and the responses read back as outcomes.

use ocpp_messages::{v1_6, v2_0_1, v2_1, OcppVersion, Response};
use ocpp_model::{
    ChargingLimit, ChargingProfilePurpose, Command, IdToken, LimitPeriod, MessageTrigger,
    ModelError, Outcome, RateUnit, ResetKind, Setting, TransactionId,
};

const V16: OcppVersion = OcppVersion::V1_6;
const V201: OcppVersion = OcppVersion::V2_0_1;
const V21: OcppVersion = OcppVersion::V2_1;

fn json(command: &Command, version: OcppVersion) -> String {
    let request = command.to_request(version).unwrap();
    request.validate().unwrap();
    format!(
        "{} {}",
        request.action(),
        serde_json::to_string(&request).unwrap()
    )
}

fn not_expressible(command: &Command, version: OcppVersion) -> bool {
    matches!(
        command.to_request(version),
        Err(ModelError::NotExpressible { .. })
    )
}

fn limit(transaction: Option<TransactionId>) -> ChargingLimit {
    ChargingLimit {
        id: 3,
        stack_level: 1,
        purpose: ChargingProfilePurpose::Tx,
        evse: 1,
        transaction,
        starts: None,
        unit: RateUnit::Watts,
        periods: vec![
            LimitPeriod {
                start_s: 0,
                limit: "11000.5".parse().unwrap(),
                phases: Some(3),
            },
            LimitPeriod {
                start_s: 600,
                limit: "7400".parse().unwrap(),
                phases: None,
            },
        ],
    }
}

#[test]
fn remote_start_and_stop() {
    let start = Command::RemoteStart {
        evse: Some(1),
        token: IdToken::from_id_tag("TAG"),
        remote_start_id: 77,
        limit: None,
    };
    assert_eq!(
        json(&start, V16),
        r#"RemoteStartTransaction {"connectorId":1,"idTag":"TAG"}"#
    );
    assert_eq!(
        json(&start, V201),
        r#"RequestStartTransaction {"evseId":1,"idToken":{"idToken":"TAG","type":"ISO14443"},"remoteStartId":77}"#
    );
    json(&start, V21);
    let long = Command::RemoteStart {
        evse: None,
        token: IdToken::from_id_tag("X".repeat(21)),
        remote_start_id: 1,
        limit: None,
    };
    assert!(matches!(
        long.to_request(V16),
        Err(ModelError::OutOfRange { .. })
    ));

    let stop_16 = Command::RemoteStop {
        transaction: TransactionId::Number(5),
    };
    let stop_2 = Command::RemoteStop {
        transaction: TransactionId::Text("t-5".into()),
    };
    assert_eq!(
        json(&stop_16, V16),
        r#"RemoteStopTransaction {"transactionId":5}"#
    );
    assert_eq!(
        json(&stop_2, V201),
        r#"RequestStopTransaction {"transactionId":"t-5"}"#
    );
    assert!(not_expressible(&stop_16, V201) && not_expressible(&stop_16, V21));
    assert!(not_expressible(&stop_2, V16));
}

#[test]
fn reset_per_version() {
    let reset = |kind, evse| Command::Reset { kind, evse };
    assert_eq!(
        json(&reset(ResetKind::Immediate, None), V16),
        r#"Reset {"type":"Hard"}"#
    );
    assert_eq!(
        json(&reset(ResetKind::Soft, None), V16),
        r#"Reset {"type":"Soft"}"#
    );
    assert_eq!(
        json(&reset(ResetKind::Immediate, Some(2)), V201),
        r#"Reset {"type":"Immediate","evseId":2}"#
    );
    assert_eq!(
        json(&reset(ResetKind::OnIdle, None), V21),
        r#"Reset {"type":"OnIdle"}"#
    );
    assert_eq!(
        json(&reset(ResetKind::ImmediateAndResume, None), V21),
        r#"Reset {"type":"ImmediateAndResume"}"#
    );
    assert!(not_expressible(&reset(ResetKind::OnIdle, None), V16));
    assert!(not_expressible(&reset(ResetKind::Immediate, Some(1)), V16));
    assert!(not_expressible(&reset(ResetKind::Soft, None), V201));
    assert!(not_expressible(
        &reset(ResetKind::ImmediateAndResume, None),
        V201
    ));
    assert!(not_expressible(
        &reset(ResetKind::ImmediateAndResume, None),
        V16
    ));
}

#[test]
fn connectors_availability_and_triggers() {
    let unlock = Command::UnlockConnector {
        evse: 2,
        connector: None,
    };
    assert_eq!(json(&unlock, V16), r#"UnlockConnector {"connectorId":2}"#);
    assert_eq!(
        json(&unlock, V201),
        r#"UnlockConnector {"evseId":2,"connectorId":1}"#
    );
    assert!(not_expressible(
        &Command::UnlockConnector {
            evse: 2,
            connector: Some(2)
        },
        V16
    ));

    let station = Command::ChangeAvailability {
        evse: None,
        connector: None,
        operative: false,
    };
    assert_eq!(
        json(&station, V16),
        r#"ChangeAvailability {"connectorId":0,"type":"Inoperative"}"#
    );
    assert_eq!(
        json(&station, V21),
        r#"ChangeAvailability {"operationalStatus":"Inoperative"}"#
    );
    let evse = Command::ChangeAvailability {
        evse: Some(1),
        connector: Some(2),
        operative: true,
    };
    assert_eq!(
        json(&evse, V201),
        r#"ChangeAvailability {"evse":{"id":1,"connectorId":2},"operationalStatus":"Operative"}"#
    );
    assert!(not_expressible(&evse, V16));

    let trigger = |message| Command::TriggerMessage {
        message,
        evse: Some(1),
    };
    assert_eq!(
        json(&trigger(MessageTrigger::StatusNotification), V16),
        r#"TriggerMessage {"requestedMessage":"StatusNotification","connectorId":1}"#
    );
    assert_eq!(
        json(&trigger(MessageTrigger::TransactionEvent), V201),
        r#"TriggerMessage {"evse":{"id":1},"requestedMessage":"TransactionEvent"}"#
    );
    assert!(not_expressible(
        &trigger(MessageTrigger::TransactionEvent),
        V16
    ));
    assert!(not_expressible(
        &trigger(MessageTrigger::LogStatusNotification),
        V16
    ));
    assert!(not_expressible(
        &trigger(MessageTrigger::DiagnosticsStatusNotification),
        V21
    ));
}

#[test]
fn charging_limits_are_exact_and_typed_by_version() {
    let for_16 = Command::SetChargingProfile(limit(Some(TransactionId::Number(9))));
    assert_eq!(
        json(&for_16, V16),
        r#"SetChargingProfile {"connectorId":1,"csChargingProfiles":{"chargingProfileId":3,"transactionId":9,"stackLevel":1,"chargingProfilePurpose":"TxProfile","chargingProfileKind":"Relative","chargingSchedule":{"chargingRateUnit":"W","chargingSchedulePeriod":[{"startPeriod":0,"limit":11000.5,"numberPhases":3},{"startPeriod":600,"limit":7400}]}}}"#
    );
    let for_2 = Command::SetChargingProfile(limit(Some(TransactionId::Text("t".into()))));
    json(&for_2, V201);
    json(&for_2, V21);
    assert!(not_expressible(&for_16, V201));
    assert!(not_expressible(&for_2, V16));
}

#[test]
fn settings_map_to_keys_and_variables() {
    let mapping = [
        (
            Setting::HeartbeatInterval,
            "OCPPCommCtrlr",
            "HeartbeatInterval",
        ),
        (
            Setting::MeterValueSampleInterval,
            "SampledDataCtrlr",
            "TxUpdatedInterval",
        ),
        (
            Setting::AuthorizationKey,
            "SecurityCtrlr",
            "BasicAuthPassword",
        ),
        (Setting::ConnectionTimeOut, "TxCtrlr", "EVConnectionTimeOut"),
    ];
    for (setting, component, variable) in mapping {
        assert_eq!(setting.component_variable(), (component, variable));
        assert_eq!(
            Setting::from_component_variable(component, variable),
            Some(setting)
        );
    }
    for setting in Setting::ALL.iter().copied() {
        let configure = Command::Configure {
            setting,
            value: "60".into(),
        };
        assert_eq!(
            json(&configure, V16),
            format!(
                r#"ChangeConfiguration {{"key":"{}","value":"60"}}"#,
                setting.key_1_6()
            )
        );
        json(&configure, V201);
        json(&configure, V21);
    }
}

#[test]
fn outcomes() {
    let reset = Command::Reset {
        kind: ResetKind::Immediate,
        evse: None,
    };
    let r: Response = v2_0_1::ResetResponse::new(v2_0_1::ResetStatusEnum::Scheduled).into();
    assert_eq!(reset.outcome(&r).unwrap().outcome, Outcome::Scheduled);

    let unlock = Command::UnlockConnector {
        evse: 1,
        connector: None,
    };
    let r: Response = v1_6::UnlockConnectorResponse::new(v1_6::UnlockStatus::UnlockFailed).into();
    let outcome = unlock.outcome(&r).unwrap();
    assert_eq!(
        (outcome.outcome, outcome.raw_status.as_str()),
        (Outcome::Failed, "UnlockFailed")
    );
    let r: Response = v2_1::UnlockConnectorResponse::new(v2_1::UnlockStatusEnum::Unlocked).into();
    assert_eq!(unlock.outcome(&r).unwrap().outcome, Outcome::Accepted);

    let configure = Command::Configure {
        setting: Setting::HeartbeatInterval,
        value: "60".into(),
    };
    let r: Response =
        v1_6::ChangeConfigurationResponse::new(v1_6::ConfigurationStatus::RebootRequired).into();
    assert_eq!(
        configure.outcome(&r).unwrap().outcome,
        Outcome::RebootRequired
    );
    let r: Response = v2_0_1::SetVariablesResponse::new(vec![v2_0_1::SetVariableResult::new(
        v2_0_1::SetVariableStatusEnum::UnknownVariable,
        v2_0_1::Component::new("OCPPCommCtrlr"),
        v2_0_1::Variable::new("HeartbeatInterval"),
    )])
    .into();
    assert_eq!(
        configure.outcome(&r).unwrap().outcome,
        Outcome::NotSupported
    );

    let start = Command::RemoteStart {
        evse: None,
        token: IdToken::from_id_tag("T"),
        remote_start_id: 1,
        limit: None,
    };
    let r: Response =
        v2_0_1::RequestStartTransactionResponse::new(v2_0_1::RequestStartStopStatusEnum::Accepted)
            .with_transaction_id("running")
            .into();
    let outcome = start.outcome(&r).unwrap();
    assert_eq!(outcome.outcome, Outcome::Accepted);
    assert_eq!(
        outcome.transaction,
        Some(TransactionId::Text("running".into()))
    );

    // A response of another action is not this command's outcome.
    assert!(matches!(
        reset.outcome(&r),
        Err(ModelError::ResponseMismatch { .. })
    ));
    let trigger = Command::TriggerMessage {
        message: MessageTrigger::Heartbeat,
        evse: None,
    };
    let r: Response =
        v1_6::TriggerMessageResponse::new(v1_6::TriggerMessageStatus::NotImplemented).into();
    assert_eq!(trigger.outcome(&r).unwrap().outcome, Outcome::NotSupported);
}
