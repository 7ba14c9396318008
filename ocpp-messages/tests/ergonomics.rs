//! The ergonomic surface through the public API: generated constructors (`new`, `with_*`,
//! `Default`), the versioned `Request` / `Response` with their `From` / `TryFrom` conversions for
//! every action of every version, `view()`, `decode()`, `DecodeError::error_code` and
//! `DateTime::now`.

use std::fmt::Debug;
use std::time::{SystemTime, UNIX_EPOCH};

use ocpp_messages::action::{OcppAction, Payload};
use ocpp_messages::{
    v1_6, v2_0_1, v2_1, DateTime, DecodeError, DecodeOptions, ErrorCode, OcppVersion, Request,
    RequestRef, Response, ResponseRef,
};
use proptest::arbitrary::Arbitrary;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{json, Value};

fn time(text: &str) -> DateTime {
    text.parse().unwrap()
}

/// The payload's JSON, after checking it against its schema.
fn checked_json<P: Payload>(payload: &P) -> Value {
    payload.validate().unwrap();
    serde_json::to_value(payload).unwrap()
}

// --- constructors and setters: JSON equal to the hand-written one, and valid ---

#[test]
fn v1_6_boot_notification_response() {
    let response = v1_6::BootNotificationResponse::new(
        v1_6::RegistrationStatus::Accepted,
        time("2025-01-02T03:04:05Z"),
        300,
    );
    assert_eq!(
        checked_json(&response),
        json!({"status": "Accepted", "currentTime": "2025-01-02T03:04:05Z", "interval": 300})
    );
}

#[test]
fn v1_6_boot_notification_request_with_optionals() {
    let request = v1_6::BootNotificationRequest::new("ACME", "One")
        .with_charge_point_serial_number("SN-1")
        .with_firmware_version(String::from("1.2.3"));
    assert_eq!(
        checked_json(&request),
        json!({
            "chargePointVendor": "ACME",
            "chargePointModel": "One",
            "chargePointSerialNumber": "SN-1",
            "firmwareVersion": "1.2.3",
        })
    );
}

#[test]
fn v1_6_start_transaction_response() {
    let response = v1_6::StartTransactionResponse::new(
        v1_6::IdTagInfo::new(v1_6::AuthorizationStatus::Accepted)
            .with_expiry_date(time("2025-12-31T23:59:59Z"))
            .with_parent_id_tag("PARENT"),
        42,
    );
    assert_eq!(
        checked_json(&response),
        json!({
            "idTagInfo": {
                "status": "Accepted",
                "expiryDate": "2025-12-31T23:59:59Z",
                "parentIdTag": "PARENT",
            },
            "transactionId": 42,
        })
    );
}

#[test]
fn v2_0_1_authorize_response() {
    let response = v2_0_1::AuthorizeResponse::new(v2_0_1::IdTokenInfo::new(
        v2_0_1::AuthorizationStatusEnum::Accepted,
    ));
    assert_eq!(
        checked_json(&response),
        json!({"idTokenInfo": {"status": "Accepted"}})
    );
    // The same value, written out field by field.
    let by_hand = v2_0_1::AuthorizeResponse {
        custom_data: None,
        certificate_status: None,
        id_token_info: v2_0_1::IdTokenInfo {
            custom_data: None,
            status: v2_0_1::AuthorizationStatusEnum::Accepted,
            cache_expiry_date_time: None,
            charging_priority: None,
            language1: None,
            evse_id: None,
            group_id_token: None,
            language2: None,
            personal_message: None,
        },
    };
    assert_eq!(response, by_hand);
}

#[test]
fn v2_0_1_transaction_event_request() {
    let request = v2_0_1::TransactionEventRequest::new(
        v2_0_1::TransactionEventEnum::Started,
        time("2025-01-02T03:04:05.123Z"),
        v2_0_1::TriggerReasonEnum::Authorized,
        0,
        v2_0_1::Transaction::new("tx-1").with_charging_state(v2_0_1::ChargingStateEnum::Charging),
    )
    .with_evse(v2_0_1::EVSE::new(1).with_connector_id(2))
    .with_id_token(v2_0_1::IdToken::new(
        "04A2B3C4",
        v2_0_1::IdTokenEnum::ISO14443,
    ))
    .with_offline(false);
    assert_eq!(
        checked_json(&request),
        json!({
            "eventType": "Started",
            "timestamp": "2025-01-02T03:04:05.123Z",
            "triggerReason": "Authorized",
            "seqNo": 0,
            "transactionInfo": {"transactionId": "tx-1", "chargingState": "Charging"},
            "evse": {"id": 1, "connectorId": 2},
            "idToken": {"idToken": "04A2B3C4", "type": "ISO14443"},
            "offline": false,
        })
    );
}

#[test]
fn v2_1_boot_notification_request() {
    let request = v2_1::BootNotificationRequest::new(
        v2_1::ChargingStation::new("Model X", "ACME")
            .with_serial_number("SN-1")
            .with_firmware_version("2.1.0"),
        v2_1::BootReasonEnum::PowerUp,
    );
    assert_eq!(
        checked_json(&request),
        json!({
            "chargingStation": {
                "model": "Model X",
                "vendorName": "ACME",
                "serialNumber": "SN-1",
                "firmwareVersion": "2.1.0",
            },
            "reason": "PowerUp",
        })
    );
}

#[test]
fn v2_1_custom_data_new_has_no_extra() {
    let data = v2_1::CustomData::new("com.example");
    assert!(data.extra.is_empty());
    assert_eq!(
        serde_json::to_value(&data).unwrap(),
        json!({"vendorId": "com.example"})
    );
}

#[test]
fn default_on_all_optional_payloads() {
    assert_eq!(checked_json(&v1_6::HeartbeatRequest::default()), json!({}));
    assert_eq!(
        checked_json(&v2_0_1::HeartbeatRequest::default()),
        json!({})
    );
    assert_eq!(checked_json(&v2_1::HeartbeatRequest::default()), json!({}));
    assert_eq!(
        checked_json(&v1_6::GetConfigurationRequest::default()),
        json!({})
    );
    let some = v1_6::GetConfigurationRequest::default().with_key(vec!["HeartbeatInterval".into()]);
    assert_eq!(checked_json(&some), json!({"key": ["HeartbeatInterval"]}));
    let clear = v2_0_1::ClearChargingProfileRequest::default().with_charging_profile_id(7);
    assert_eq!(checked_json(&clear), json!({"chargingProfileId": 7}));
}

#[test]
fn setter_overwrites() {
    let info = v1_6::IdTagInfo::new(v1_6::AuthorizationStatus::Blocked)
        .with_parent_id_tag("A")
        .with_parent_id_tag("B");
    assert_eq!(info.parent_id_tag.as_deref(), Some("B"));
}

// --- From / TryFrom, every action of every version ---

/// A strategy's values, deterministic.
fn samples<P: Arbitrary>(runner: &mut TestRunner, n: usize) -> Vec<P> {
    let strategy = proptest::arbitrary::any::<P>();
    (0..n)
        .map(|_| strategy.new_tree(runner).unwrap().current())
        .collect()
}

/// Values of other actions or versions, which `TryFrom` must hand back unchanged.
fn others() -> [Request; 2] {
    [
        v1_6::HeartbeatRequest::default().into(),
        v2_1::HeartbeatRequest::default().into(),
    ]
}

fn other_responses() -> [Response; 2] {
    [
        v1_6::HeartbeatResponse::new(time("2025-01-02T03:04:05Z")).into(),
        v2_1::HeartbeatResponse::new(time("2025-01-02T03:04:05Z")).into(),
    ]
}

fn request_round_trip<P>(runner: &mut TestRunner, version: OcppVersion, action: &str)
where
    P: Arbitrary + Clone + PartialEq + Debug + Payload + Into<Request>,
    P: TryFrom<Request, Error = Request>,
{
    for payload in samples::<P>(runner, 4) {
        let request: Request = payload.clone().into();
        assert_eq!((request.version(), request.action()), (version, action));
        assert_eq!(
            serde_json::to_value(&request).unwrap(),
            serde_json::to_value(&payload).unwrap()
        );
        assert_eq!(P::try_from(request).unwrap(), payload);
    }
    for other in others() {
        if (other.version(), other.action()) != (version, action) {
            assert_eq!(P::try_from(other.clone()), Err(other));
        }
    }
}

fn response_round_trip<P>(runner: &mut TestRunner, version: OcppVersion, action: &str)
where
    P: Arbitrary + Clone + PartialEq + Debug + Payload + Into<Response>,
    P: TryFrom<Response, Error = Response>,
{
    for payload in samples::<P>(runner, 4) {
        let response: Response = payload.clone().into();
        assert_eq!((response.version(), response.action()), (version, action));
        assert_eq!(
            serde_json::to_value(&response).unwrap(),
            serde_json::to_value(&payload).unwrap()
        );
        assert_eq!(P::try_from(response).unwrap(), payload);
    }
    for other in other_responses() {
        if (other.version(), other.action()) != (version, action) {
            assert_eq!(P::try_from(other.clone()), Err(other));
        }
    }
}

/// A test per version: the listed actions must be exactly the version's `Action::ALL` (so a new
/// action in the schemas fails here until it is listed), and each converts both ways.
macro_rules! conversions {
    ($test:ident, $m:ident, $version:expr, [$($action:ident),* $(,)?], send_only: [$($send:ident),* $(,)?]) => {
        #[test]
        fn $test() {
            let mut listed: Vec<&str> = vec![$(stringify!($action),)* $(stringify!($send),)*];
            listed.sort_unstable();
            let all: Vec<&str> = $m::Action::ALL.iter().map(|a| a.as_str()).collect();
            assert_eq!(listed, all, "the list of actions in this test is out of date");
            let mut runner = TestRunner::new_with_rng(
                Config::default(),
                TestRng::deterministic_rng(RngAlgorithm::ChaCha),
            );
            $(
                request_round_trip::<<$m::$action as OcppAction>::Request>(
                    &mut runner,
                    $version,
                    stringify!($action),
                );
                response_round_trip::<<$m::$action as OcppAction>::Response>(
                    &mut runner,
                    $version,
                    stringify!($action),
                );
            )*
            $(
                request_round_trip::<<$m::$send as OcppAction>::Request>(
                    &mut runner,
                    $version,
                    stringify!($send),
                );
            )*
        }
    };
}

conversions!(v1_6_every_action, v1_6, OcppVersion::V1_6, [
    Authorize, BootNotification, CancelReservation, CertificateSigned, ChangeAvailability, ChangeConfiguration, ClearCache, ClearChargingProfile, DataTransfer, DeleteCertificate, DiagnosticsStatusNotification, ExtendedTriggerMessage, FirmwareStatusNotification, GetCompositeSchedule, GetConfiguration, GetDiagnostics, GetInstalledCertificateIds, GetLocalListVersion, GetLog, Heartbeat, InstallCertificate, LogStatusNotification, MeterValues, RemoteStartTransaction, RemoteStopTransaction, ReserveNow, Reset, SecurityEventNotification, SendLocalList, SetChargingProfile, SignCertificate, SignedFirmwareStatusNotification, SignedUpdateFirmware, StartTransaction, StatusNotification, StopTransaction, TriggerMessage, UnlockConnector, UpdateFirmware,
], send_only: []);

conversions!(v2_0_1_every_action, v2_0_1, OcppVersion::V2_0_1, [
    Authorize, BootNotification, CancelReservation, CertificateSigned, ChangeAvailability, ClearCache, ClearChargingProfile, ClearDisplayMessage, ClearVariableMonitoring, ClearedChargingLimit, CostUpdated, CustomerInformation, DataTransfer, DeleteCertificate, FirmwareStatusNotification, Get15118EVCertificate, GetBaseReport, GetCertificateStatus, GetChargingProfiles, GetCompositeSchedule, GetDisplayMessages, GetInstalledCertificateIds, GetLocalListVersion, GetLog, GetMonitoringReport, GetReport, GetTransactionStatus, GetVariables, Heartbeat, InstallCertificate, LogStatusNotification, MeterValues, NotifyChargingLimit, NotifyCustomerInformation, NotifyDisplayMessages, NotifyEVChargingNeeds, NotifyEVChargingSchedule, NotifyEvent, NotifyMonitoringReport, NotifyReport, PublishFirmware, PublishFirmwareStatusNotification, ReportChargingProfiles, RequestStartTransaction, RequestStopTransaction, ReservationStatusUpdate, ReserveNow, Reset, SecurityEventNotification, SendLocalList, SetChargingProfile, SetDisplayMessage, SetMonitoringBase, SetMonitoringLevel, SetNetworkProfile, SetVariableMonitoring, SetVariables, SignCertificate, StatusNotification, TransactionEvent, TriggerMessage, UnlockConnector, UnpublishFirmware, UpdateFirmware,
], send_only: []);

conversions!(v2_1_every_action, v2_1, OcppVersion::V2_1, [
    AFRRSignal, AdjustPeriodicEventStream, Authorize, BatterySwap, BootNotification, CancelReservation, CertificateSigned, ChangeAvailability, ChangeTransactionTariff, ClearCache, ClearChargingProfile, ClearDERControl, ClearDisplayMessage, ClearTariffs, ClearVariableMonitoring, ClearedChargingLimit, ClosePeriodicEventStream, CostUpdated, CustomerInformation, DataTransfer, DeleteCertificate, FirmwareStatusNotification, Get15118EVCertificate, GetBaseReport, GetCertificateChainStatus, GetCertificateStatus, GetChargingProfiles, GetCompositeSchedule, GetDERControl, GetDisplayMessages, GetInstalledCertificateIds, GetLocalListVersion, GetLog, GetMonitoringReport, GetPeriodicEventStream, GetReport, GetTariffs, GetTransactionStatus, GetVariables, Heartbeat, InstallCertificate, LogStatusNotification, MeterValues, NotifyAllowedEnergyTransfer, NotifyChargingLimit, NotifyCustomerInformation, NotifyDERAlarm, NotifyDERStartStop, NotifyDisplayMessages, NotifyEVChargingNeeds, NotifyEVChargingSchedule, NotifyEvent, NotifyMonitoringReport, NotifyPriorityCharging, NotifyReport, NotifySettlement, NotifyWebPaymentStarted, OpenPeriodicEventStream, PublishFirmware, PublishFirmwareStatusNotification, PullDynamicScheduleUpdate, ReportChargingProfiles, ReportDERControl, RequestBatterySwap, RequestStartTransaction, RequestStopTransaction, ReservationStatusUpdate, ReserveNow, Reset, SecurityEventNotification, SendLocalList, SetChargingProfile, SetDERControl, SetDefaultTariff, SetDisplayMessage, SetMonitoringBase, SetMonitoringLevel, SetNetworkProfile, SetVariableMonitoring, SetVariables, SignCertificate, StatusNotification, TransactionEvent, TriggerMessage, UnlockConnector, UnpublishFirmware, UpdateDynamicSchedule, UpdateFirmware, UsePriorityCharging, VatNumberValidation,
], send_only: [NotifyPeriodicEventStream]);

#[test]
fn from_per_version_enum() {
    let inner = v2_0_1::Request::from(v2_0_1::HeartbeatRequest::default());
    let request = Request::from(inner.clone());
    assert_eq!(request, Request::V2_0_1(Box::new(inner)));
    assert_eq!(request.version(), OcppVersion::V2_0_1);
}

// --- view ---

#[test]
fn view_matches_every_version() {
    let requests: [Request; 3] = [
        v1_6::BootNotificationRequest::new("ACME", "One").into(),
        v2_0_1::BootNotificationRequest::new(
            v2_0_1::ChargingStation::new("Two", "ACME"),
            v2_0_1::BootReasonEnum::PowerUp,
        )
        .into(),
        v2_1::HeartbeatRequest::default().into(),
    ];
    let seen: Vec<String> = requests
        .iter()
        .map(|request| match request.view() {
            RequestRef::V1_6(v1_6::Request::BootNotification(boot)) => {
                format!("1.6 {}", boot.charge_point_model)
            }
            RequestRef::V2_0_1(v2_0_1::Request::BootNotification(boot)) => {
                format!("2.0.1 {}", boot.charging_station.model)
            }
            RequestRef::V2_1(v2_1::Request::Heartbeat(_)) => "2.1 heartbeat".to_owned(),
            _ => "other".to_owned(),
        })
        .collect();
    assert_eq!(seen, ["1.6 One", "2.0.1 Two", "2.1 heartbeat"]);

    let response: Response = v2_1::HeartbeatResponse::new(time("2025-01-02T03:04:05Z")).into();
    assert!(matches!(
        response.view(),
        ResponseRef::V2_1(v2_1::Response::Heartbeat(h)) if h.current_time.as_str() == "2025-01-02T03:04:05Z"
    ));
}

// --- decode ---

#[test]
fn decode_request_and_response() {
    let options = DecodeOptions::strict();
    let request = Request::decode(
        OcppVersion::V1_6,
        "BootNotification",
        r#"{"chargePointVendor":"ACME","chargePointModel":"One"}"#,
        &options,
    )
    .unwrap();
    assert_eq!(
        request,
        Request::from(v1_6::BootNotificationRequest::new("ACME", "One"))
    );
    let response = Response::decode(
        OcppVersion::V2_0_1,
        "Authorize",
        r#"{"idTokenInfo":{"status":"Accepted"}}"#,
        &options,
    )
    .unwrap();
    assert_eq!(
        v2_0_1::AuthorizeResponse::try_from(response).unwrap(),
        v2_0_1::AuthorizeResponse::new(v2_0_1::IdTokenInfo::new(
            v2_0_1::AuthorizationStatusEnum::Accepted
        ))
    );
}

#[test]
fn decode_errors_and_their_codes() {
    let options = DecodeOptions::strict();
    for version in OcppVersion::ALL {
        let unknown = Request::decode(version, "NoSuchAction", "{}", &options).unwrap_err();
        assert_eq!(unknown, DecodeError::UnknownAction("NoSuchAction".into()));
        assert_eq!(unknown.error_code(), ErrorCode::NotImplemented);
        let unknown = Response::decode(version, "NoSuchAction", "{}", &options).unwrap_err();
        assert_eq!(unknown.error_code(), ErrorCode::NotImplemented);

        let not_json = Request::decode(version, "Heartbeat", "{", &options).unwrap_err();
        assert_eq!(not_json.error_code(), ErrorCode::FormatViolation);
        let missing = Response::decode(version, "Heartbeat", "{}", &options).unwrap_err();
        assert_eq!(
            missing.error_code(),
            ErrorCode::OccurrenceConstraintViolation
        );
        let wrong_type =
            Response::decode(version, "Heartbeat", r#"{"currentTime":1}"#, &options).unwrap_err();
        assert_eq!(wrong_type.error_code(), ErrorCode::TypeConstraintViolation);
        let extra = Request::decode(version, "Heartbeat", r#"{"x":1}"#, &options).unwrap_err();
        assert_eq!(extra.error_code(), ErrorCode::FormatViolation);
        // Lenient: the unknown property is ignored.
        assert!(Request::decode(
            version,
            "Heartbeat",
            r#"{"x":1}"#,
            &DecodeOptions::lenient()
        )
        .is_ok());
    }
    let too_long = Request::decode(
        OcppVersion::V1_6,
        "Authorize",
        r#"{"idTag":"ABCDEFGHIJKLMNOPQRSTUVWXYZ"}"#,
        &options,
    )
    .unwrap_err();
    assert_eq!(
        too_long.error_code(),
        ErrorCode::PropertyConstraintViolation
    );
    let send_only = Response::decode(
        OcppVersion::V2_1,
        "NotifyPeriodicEventStream",
        "{}",
        &options,
    )
    .unwrap_err();
    assert_eq!(
        send_only,
        DecodeError::NoResponse("NotifyPeriodicEventStream")
    );
    assert_eq!(send_only.error_code(), ErrorCode::ProtocolError);
}

// --- DateTime::now ---

#[test]
fn date_time_now() {
    let now = DateTime::now();
    let system = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert!((now.unix_timestamp() - system).abs() <= 5, "{now:?}");
    let parsed: DateTime = now.as_str().parse().unwrap();
    assert_eq!(parsed, now);
    assert_eq!(now.offset_minutes(), 0);
    assert_eq!(now.nanosecond(), 0);
    assert_eq!(now.as_str().len(), "2025-01-02T03:04:05Z".len());
    let response: Response = v1_6::HeartbeatResponse::new(DateTime::now()).into();
    response.validate().unwrap();
}

/// The second example of README.md, kept compiling here.
#[test]
fn readme_example() -> Result<(), DecodeError> {
    // 2.0.1: answer an Authorize.
    let authorize = v2_0_1::AuthorizeResponse::new(v2_0_1::IdTokenInfo::new(
        v2_0_1::AuthorizationStatusEnum::Accepted,
    ));
    let response: Response = authorize.into();
    assert_eq!(
        serde_json::to_string(&response).unwrap(),
        r#"{"idTokenInfo":{"status":"Accepted"}}"#
    );

    // 1.6: optional fields through `with_*`.
    let start = v1_6::StartTransactionResponse::new(
        v1_6::IdTagInfo::new(v1_6::AuthorizationStatus::Accepted).with_parent_id_tag("FLEET-1"),
        42,
    );
    let heartbeat: Response = v1_6::HeartbeatResponse::new(DateTime::now()).into();
    start.validate().unwrap();
    heartbeat.validate().unwrap();

    // Any version's CALL, one match.
    let payload = r#"{"chargePointVendor":"ACME","chargePointModel":"One"}"#;
    let request = Request::decode(
        OcppVersion::V1_6,
        "BootNotification",
        payload,
        &DecodeOptions::strict(),
    )?;
    match request.view() {
        RequestRef::V1_6(v1_6::Request::BootNotification(boot)) => {
            println!("{}", boot.charge_point_model)
        }
        RequestRef::V2_0_1(v2_0_1::Request::BootNotification(boot)) => {
            println!("{}", boot.charging_station.model)
        }
        _ => {}
    }
    // And back to one action's type.
    let boot = v1_6::BootNotificationRequest::try_from(request).unwrap();
    assert_eq!(boot.charge_point_vendor, "ACME");
    Ok(())
}
