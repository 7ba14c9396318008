//! Every charge-point-initiated action of OCPP 1.6, 2.0.1 and 2.1 answered through the `Csms`
//! API with a typed, schema-valid CALLRESULT (never NotSupported or NotImplemented), and what
//! they report kept on the admin API; authorization from a token store; the boot policy.
//!
//! The payloads are the minimal schema-valid ones (every required field, nothing else, the
//! first value of each enumeration), derived from the schemas in `ocpp-messages/schemas/`
//! (decoding them in strict mode checks them again); each list is checked
//! against the version's `Action::ALL` so that an action added to a version cannot be
//! forgotten.

use std::collections::BTreeSet;

use ocpp_messages::error_code::ErrorCode;
use ocpp_messages::version::OcppVersion;
use ocpp_messages::{v1_6, v2_0_1, v2_1};
use ocpp_proto::Answer;
use ocpp_proto::{ChargePointIdentity, Response};
use ocpp_reference_csms::admin::{self, decode_command, AdminRequest, Route};
use ocpp_reference_csms::{BootPolicy, Csms, CsmsConfig, TokenStore};
use serde_json::{json, Value};

/// OCPP 1.6 (with the security whitepaper): what a charge point sends, with a minimal payload.
const CHARGE_POINT_1_6: &[(&str, &str)] = &[
    ("Authorize", r#"{"idTag":"x"}"#),
    (
        "BootNotification",
        r#"{"chargePointVendor":"x","chargePointModel":"x"}"#,
    ),
    ("DataTransfer", r#"{"vendorId":"x"}"#),
    ("DiagnosticsStatusNotification", r#"{"status":"Idle"}"#),
    ("FirmwareStatusNotification", r#"{"status":"Downloaded"}"#),
    ("Heartbeat", r#"{}"#),
    ("LogStatusNotification", r#"{"status":"BadMessage"}"#),
    (
        "MeterValues",
        r#"{"connectorId":0,"meterValue":[{"timestamp":"2026-01-01T00:00:00Z","sampledValue":[{"value":"x"}]}]}"#,
    ),
    (
        "SecurityEventNotification",
        r#"{"type":"x","timestamp":"2026-01-01T00:00:00Z"}"#,
    ),
    ("SignCertificate", r#"{"csr":"x"}"#),
    (
        "SignedFirmwareStatusNotification",
        r#"{"status":"Downloaded"}"#,
    ),
    (
        "StartTransaction",
        r#"{"connectorId":0,"idTag":"x","meterStart":0,"timestamp":"2026-01-01T00:00:00Z"}"#,
    ),
    (
        "StatusNotification",
        r#"{"connectorId":0,"errorCode":"ConnectorLockFailure","status":"Available"}"#,
    ),
    (
        "StopTransaction",
        r#"{"transactionId":0,"timestamp":"2026-01-01T00:00:00Z","meterStop":0}"#,
    ),
];

/// OCPP 1.6: what the central system sends.
const CENTRAL_SYSTEM_1_6: &[&str] = &[
    "CancelReservation",
    "CertificateSigned",
    "ChangeAvailability",
    "ChangeConfiguration",
    "ClearCache",
    "ClearChargingProfile",
    "DataTransfer",
    "DeleteCertificate",
    "ExtendedTriggerMessage",
    "GetCompositeSchedule",
    "GetConfiguration",
    "GetDiagnostics",
    "GetInstalledCertificateIds",
    "GetLocalListVersion",
    "GetLog",
    "InstallCertificate",
    "RemoteStartTransaction",
    "RemoteStopTransaction",
    "ReserveNow",
    "Reset",
    "SendLocalList",
    "SetChargingProfile",
    "SignedUpdateFirmware",
    "TriggerMessage",
    "UnlockConnector",
    "UpdateFirmware",
];

/// OCPP 2.0.1: what a charging station sends, with a minimal payload.
const CHARGING_STATION_2_0_1: &[(&str, &str)] = &[
    (
        "Authorize",
        r#"{"idToken":{"idToken":"x","type":"Central"}}"#,
    ),
    (
        "BootNotification",
        r#"{"reason":"ApplicationReset","chargingStation":{"model":"x","vendorName":"x"}}"#,
    ),
    ("ClearedChargingLimit", r#"{"chargingLimitSource":"EMS"}"#),
    ("DataTransfer", r#"{"vendorId":"x"}"#),
    ("FirmwareStatusNotification", r#"{"status":"Downloaded"}"#),
    (
        "Get15118EVCertificate",
        r#"{"iso15118SchemaVersion":"x","action":"Install","exiRequest":"x"}"#,
    ),
    (
        "GetCertificateStatus",
        r#"{"ocspRequestData":{"hashAlgorithm":"SHA256","issuerNameHash":"x","issuerKeyHash":"x","serialNumber":"x","responderURL":"x"}}"#,
    ),
    ("Heartbeat", r#"{}"#),
    ("LogStatusNotification", r#"{"status":"BadMessage"}"#),
    (
        "MeterValues",
        r#"{"evseId":0,"meterValue":[{"timestamp":"2026-01-01T00:00:00Z","sampledValue":[{"value":0}]}]}"#,
    ),
    (
        "NotifyChargingLimit",
        r#"{"chargingLimit":{"chargingLimitSource":"EMS"}}"#,
    ),
    (
        "NotifyCustomerInformation",
        r#"{"data":"x","seqNo":0,"generatedAt":"2026-01-01T00:00:00Z","requestId":0}"#,
    ),
    ("NotifyDisplayMessages", r#"{"requestId":0}"#),
    (
        "NotifyEVChargingNeeds",
        r#"{"evseId":0,"chargingNeeds":{"requestedEnergyTransfer":"DC"}}"#,
    ),
    (
        "NotifyEVChargingSchedule",
        r#"{"timeBase":"2026-01-01T00:00:00Z","evseId":0,"chargingSchedule":{"id":0,"chargingRateUnit":"W","chargingSchedulePeriod":[{"startPeriod":0,"limit":0}]}}"#,
    ),
    (
        "NotifyEvent",
        r#"{"generatedAt":"2026-01-01T00:00:00Z","seqNo":0,"eventData":[{"eventId":0,"timestamp":"2026-01-01T00:00:00Z","trigger":"Alerting","actualValue":"x","eventNotificationType":"HardWiredNotification","component":{"name":"x"},"variable":{"name":"x"}}]}"#,
    ),
    (
        "NotifyMonitoringReport",
        r#"{"requestId":0,"seqNo":0,"generatedAt":"2026-01-01T00:00:00Z"}"#,
    ),
    (
        "NotifyReport",
        r#"{"requestId":0,"generatedAt":"2026-01-01T00:00:00Z","seqNo":0}"#,
    ),
    ("PublishFirmwareStatusNotification", r#"{"status":"Idle"}"#),
    (
        "ReportChargingProfiles",
        r#"{"requestId":0,"chargingLimitSource":"EMS","evseId":0,"chargingProfile":[{"id":0,"stackLevel":0,"chargingProfilePurpose":"ChargingStationExternalConstraints","chargingProfileKind":"Absolute","chargingSchedule":[{"id":0,"chargingRateUnit":"W","chargingSchedulePeriod":[{"startPeriod":0,"limit":0}]}]}]}"#,
    ),
    (
        "ReservationStatusUpdate",
        r#"{"reservationId":0,"reservationUpdateStatus":"Expired"}"#,
    ),
    (
        "SecurityEventNotification",
        r#"{"type":"x","timestamp":"2026-01-01T00:00:00Z"}"#,
    ),
    ("SignCertificate", r#"{"csr":"x"}"#),
    (
        "StatusNotification",
        r#"{"timestamp":"2026-01-01T00:00:00Z","connectorStatus":"Available","evseId":0,"connectorId":0}"#,
    ),
    (
        "TransactionEvent",
        r#"{"eventType":"Ended","timestamp":"2026-01-01T00:00:00Z","triggerReason":"Authorized","seqNo":0,"transactionInfo":{"transactionId":"x"}}"#,
    ),
];

/// OCPP 2.0.1: what the CSMS sends.
const CSMS_2_0_1: &[&str] = &[
    "CancelReservation",
    "CertificateSigned",
    "ChangeAvailability",
    "ClearCache",
    "ClearChargingProfile",
    "ClearDisplayMessage",
    "ClearVariableMonitoring",
    "CostUpdated",
    "CustomerInformation",
    "DataTransfer",
    "DeleteCertificate",
    "GetBaseReport",
    "GetChargingProfiles",
    "GetCompositeSchedule",
    "GetDisplayMessages",
    "GetInstalledCertificateIds",
    "GetLocalListVersion",
    "GetLog",
    "GetMonitoringReport",
    "GetReport",
    "GetTransactionStatus",
    "GetVariables",
    "InstallCertificate",
    "PublishFirmware",
    "RequestStartTransaction",
    "RequestStopTransaction",
    "ReserveNow",
    "Reset",
    "SendLocalList",
    "SetChargingProfile",
    "SetDisplayMessage",
    "SetMonitoringBase",
    "SetMonitoringLevel",
    "SetNetworkProfile",
    "SetVariableMonitoring",
    "SetVariables",
    "TriggerMessage",
    "UnlockConnector",
    "UnpublishFirmware",
    "UpdateFirmware",
];

/// OCPP 2.1: what a charging station sends as a CALL, with a minimal payload.
const CHARGING_STATION_2_1: &[(&str, &str)] = &[
    ("Authorize", r#"{"idToken":{"idToken":"x","type":"x"}}"#),
    (
        "BootNotification",
        r#"{"reason":"ApplicationReset","chargingStation":{"model":"x","vendorName":"x"}}"#,
    ),
    ("ClearedChargingLimit", r#"{"chargingLimitSource":"x"}"#),
    ("DataTransfer", r#"{"vendorId":"x"}"#),
    ("FirmwareStatusNotification", r#"{"status":"Downloaded"}"#),
    (
        "Get15118EVCertificate",
        r#"{"iso15118SchemaVersion":"x","action":"Install","exiRequest":"x"}"#,
    ),
    (
        "GetCertificateStatus",
        r#"{"ocspRequestData":{"hashAlgorithm":"SHA256","issuerNameHash":"x","issuerKeyHash":"x","serialNumber":"x","responderURL":"x"}}"#,
    ),
    ("Heartbeat", r#"{}"#),
    ("LogStatusNotification", r#"{"status":"BadMessage"}"#),
    (
        "MeterValues",
        r#"{"evseId":0,"meterValue":[{"timestamp":"2026-01-01T00:00:00Z","sampledValue":[{"value":0}]}]}"#,
    ),
    (
        "NotifyChargingLimit",
        r#"{"chargingLimit":{"chargingLimitSource":"x"}}"#,
    ),
    (
        "NotifyCustomerInformation",
        r#"{"data":"x","seqNo":0,"generatedAt":"2026-01-01T00:00:00Z","requestId":0}"#,
    ),
    ("NotifyDisplayMessages", r#"{"requestId":0}"#),
    (
        "NotifyEVChargingNeeds",
        r#"{"evseId":1,"chargingNeeds":{"requestedEnergyTransfer":"AC_single_phase"}}"#,
    ),
    (
        "NotifyEVChargingSchedule",
        r#"{"timeBase":"2026-01-01T00:00:00Z","evseId":1,"chargingSchedule":{"id":0,"chargingRateUnit":"W","chargingSchedulePeriod":[{"startPeriod":0}]}}"#,
    ),
    (
        "NotifyEvent",
        r#"{"generatedAt":"2026-01-01T00:00:00Z","seqNo":0,"eventData":[{"eventId":0,"timestamp":"2026-01-01T00:00:00Z","trigger":"Alerting","actualValue":"x","eventNotificationType":"HardWiredNotification","component":{"name":"x"},"variable":{"name":"x"}}]}"#,
    ),
    (
        "NotifyMonitoringReport",
        r#"{"requestId":0,"seqNo":0,"generatedAt":"2026-01-01T00:00:00Z"}"#,
    ),
    (
        "NotifyReport",
        r#"{"requestId":0,"generatedAt":"2026-01-01T00:00:00Z","seqNo":0}"#,
    ),
    ("PublishFirmwareStatusNotification", r#"{"status":"Idle"}"#),
    (
        "ReportChargingProfiles",
        r#"{"requestId":0,"chargingLimitSource":"x","evseId":0,"chargingProfile":[{"id":0,"stackLevel":0,"chargingProfilePurpose":"ChargingStationExternalConstraints","chargingProfileKind":"Absolute","chargingSchedule":[{"id":0,"chargingRateUnit":"W","chargingSchedulePeriod":[{"startPeriod":0}]}]}]}"#,
    ),
    (
        "ReservationStatusUpdate",
        r#"{"reservationId":0,"reservationUpdateStatus":"Expired"}"#,
    ),
    (
        "SecurityEventNotification",
        r#"{"type":"x","timestamp":"2026-01-01T00:00:00Z"}"#,
    ),
    ("SignCertificate", r#"{"csr":"x"}"#),
    (
        "StatusNotification",
        r#"{"timestamp":"2026-01-01T00:00:00Z","connectorStatus":"Available","evseId":0,"connectorId":0}"#,
    ),
    (
        "TransactionEvent",
        r#"{"eventType":"Ended","timestamp":"2026-01-01T00:00:00Z","triggerReason":"AbnormalCondition","seqNo":0,"transactionInfo":{"transactionId":"x"}}"#,
    ),
    (
        "BatterySwap",
        r#"{"eventType":"BatteryIn","requestId":0,"idToken":{"idToken":"x","type":"x"},"batteryData":[{"evseId":0,"serialNumber":"x","soC":0,"soH":0}]}"#,
    ),
    ("ClosePeriodicEventStream", r#"{"id":0}"#),
    (
        "GetCertificateChainStatus",
        r#"{"certificateStatusRequests":[{"source":"CRL","urls":["x"],"certificateHashData":{"hashAlgorithm":"SHA256","issuerNameHash":"x","issuerKeyHash":"x","serialNumber":"x"}}]}"#,
    ),
    (
        "NotifyDERAlarm",
        r#"{"controlType":"EnterService","timestamp":"2026-01-01T00:00:00Z"}"#,
    ),
    (
        "NotifyDERStartStop",
        r#"{"controlId":"x","started":false,"timestamp":"2026-01-01T00:00:00Z"}"#,
    ),
    (
        "NotifyPriorityCharging",
        r#"{"transactionId":"x","activated":false}"#,
    ),
    (
        "NotifySettlement",
        r#"{"pspRef":"x","status":"Settled","settlementAmount":0,"settlementTime":"2026-01-01T00:00:00Z"}"#,
    ),
    (
        "OpenPeriodicEventStream",
        r#"{"constantStreamData":{"id":0,"variableMonitoringId":0,"params":{}}}"#,
    ),
    ("PullDynamicScheduleUpdate", r#"{"chargingProfileId":0}"#),
    ("ReportDERControl", r#"{"requestId":0}"#),
    ("VatNumberValidation", r#"{"vatNumber":"x"}"#),
];

/// OCPP 2.1: what a charging station sends as a SEND (never answered).
const CHARGING_STATION_SEND_2_1: &[(&str, &str)] = &[(
    "NotifyPeriodicEventStream",
    r#"{"id":0,"pending":0,"basetime":"2026-01-01T00:00:00Z","data":[{"t":0,"v":"x"}]}"#,
)];

/// OCPP 2.1: what the CSMS sends.
const CSMS_2_1: &[&str] = &[
    "AFRRSignal",
    "AdjustPeriodicEventStream",
    "CancelReservation",
    "CertificateSigned",
    "ChangeAvailability",
    "ChangeTransactionTariff",
    "ClearCache",
    "ClearChargingProfile",
    "ClearDERControl",
    "ClearDisplayMessage",
    "ClearTariffs",
    "ClearVariableMonitoring",
    "CostUpdated",
    "CustomerInformation",
    "DataTransfer",
    "DeleteCertificate",
    "GetBaseReport",
    "GetChargingProfiles",
    "GetCompositeSchedule",
    "GetDERControl",
    "GetDisplayMessages",
    "GetInstalledCertificateIds",
    "GetLocalListVersion",
    "GetLog",
    "GetMonitoringReport",
    "GetPeriodicEventStream",
    "GetReport",
    "GetTariffs",
    "GetTransactionStatus",
    "GetVariables",
    "InstallCertificate",
    "NotifyAllowedEnergyTransfer",
    "NotifyWebPaymentStarted",
    "PublishFirmware",
    "RequestBatterySwap",
    "RequestStartTransaction",
    "RequestStopTransaction",
    "ReserveNow",
    "Reset",
    "SendLocalList",
    "SetChargingProfile",
    "SetDERControl",
    "SetDefaultTariff",
    "SetDisplayMessage",
    "SetMonitoringBase",
    "SetMonitoringLevel",
    "SetNetworkProfile",
    "SetVariableMonitoring",
    "SetVariables",
    "TriggerMessage",
    "UnlockConnector",
    "UnpublishFirmware",
    "UpdateDynamicSchedule",
    "UpdateFirmware",
    "UsePriorityCharging",
];

fn identity(name: &str) -> ChargePointIdentity {
    ChargePointIdentity::new(name.into(), true).unwrap()
}

/// Checks that the charge-point actions and the central-system actions of a version, between
/// them, are exactly its `Action::ALL` (DataTransfer goes both ways).
fn assert_covers(charge_point: &[&str], central: &[&str], all: &[&str]) {
    let ours: BTreeSet<&str> = charge_point.iter().chain(central).copied().collect();
    let all: BTreeSet<&str> = all.iter().copied().collect();
    let missing: Vec<_> = all.difference(&ours).collect();
    let extra: Vec<_> = ours.difference(&all).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing {missing:?}, not actions {extra:?}"
    );
    for action in charge_point {
        assert!(
            *action == "DataTransfer" || !central.contains(action),
            "{action} listed both ways"
        );
    }
}

/// The CALLRESULT payload of `action`, after checking it is one and passes its schema.
fn call(csms: &Csms, cp: &ChargePointIdentity, action: &str, payload: &str) -> Value {
    match call_reply(csms, cp, action, payload) {
        Answer::Result(response) => {
            assert_eq!(response.action(), action);
            validated(&response)
        }
        other => panic!("{action}: {other:?}"),
    }
}

fn call_reply(csms: &Csms, cp: &ChargePointIdentity, action: &str, payload: &str) -> Answer {
    let version = csms.version_of(cp).expect("connected");
    let request = decode_command(version, action, payload)
        .unwrap_or_else(|e| panic!("{action} {payload}: {e}"));
    csms.on_call(csms_session(csms, cp), cp, &request)
        .wait(csms)
}

fn csms_session(csms: &Csms, cp: &ChargePointIdentity) -> ocpp_reference_csms::SessionId {
    csms.charge_point(cp).unwrap().session.unwrap().id
}

fn validated(response: &Response) -> Value {
    match response {
        Response::V1_6(r) => r.validate().unwrap(),
        Response::V2_0_1(r) => r.validate().unwrap(),
        Response::V2_1(r) => r.validate().unwrap(),
        other => panic!("{other:?}"),
    }
    serde_json::to_value(response).unwrap()
}

fn error_code(reply: Answer) -> ErrorCode {
    match reply {
        Answer::Error(error) => error.code,
        other => panic!("expected a CALLERROR, got {other:?}"),
    }
}

/// Every charge-point action answered, none NotSupported/NotImplemented, every answer valid,
/// every report kept.
fn answers_everything(version: OcppVersion, actions: &[(&str, &str)]) {
    let csms = Csms::new(CsmsConfig::default());
    let cp = identity("CP-ALL");
    csms.on_connected(&cp, version);
    for (action, payload) in actions {
        let reply = call_reply(&csms, &cp, action, payload);
        let Answer::Result(response) = reply else {
            panic!("{version:?} {action}: {reply:?}")
        };
        assert_eq!(response.action(), *action);
        assert_eq!(response.version(), version);
        validated(&response);
    }
    assert_eq!(csms.metrics().call_errors_sent.get(), 0);
    let state = csms.charge_point(&cp).unwrap();
    for (action, _) in actions {
        let typed = [
            "BootNotification",
            "Heartbeat",
            "StatusNotification",
            "MeterValues",
            "Authorize",
            "StartTransaction",
            "StopTransaction",
            "TransactionEvent",
        ];
        if !typed.contains(action) {
            assert_eq!(state.extras.notifications[action].len(), 1, "{action} kept");
        }
    }
}

fn names(list: &[(&'static str, &str)]) -> Vec<&'static str> {
    list.iter().map(|(action, _)| *action).collect()
}

#[test]
fn v1_6_every_charge_point_action_answered() {
    let all: Vec<&str> = v1_6::Action::ALL.iter().map(|a| a.as_str()).collect();
    assert_covers(&names(CHARGE_POINT_1_6), CENTRAL_SYSTEM_1_6, &all);
    answers_everything(OcppVersion::V1_6, CHARGE_POINT_1_6);
}

#[test]
fn v2_0_1_every_charging_station_action_answered() {
    let all: Vec<&str> = v2_0_1::Action::ALL.iter().map(|a| a.as_str()).collect();
    assert_covers(&names(CHARGING_STATION_2_0_1), CSMS_2_0_1, &all);
    answers_everything(OcppVersion::V2_0_1, CHARGING_STATION_2_0_1);
}

#[test]
fn v2_1_every_charging_station_action_answered() {
    let all: Vec<&str> = v2_1::Action::ALL.iter().map(|a| a.as_str()).collect();
    let mut station = names(CHARGING_STATION_2_1);
    station.extend(names(CHARGING_STATION_SEND_2_1));
    assert_covers(&station, CSMS_2_1, &all);
    answers_everything(OcppVersion::V2_1, CHARGING_STATION_2_1);
    // The SEND is kept too.
    let csms = Csms::new(CsmsConfig::default());
    let cp = identity("CS-SEND");
    csms.on_connected(&cp, OcppVersion::V2_1);
    for (action, payload) in CHARGING_STATION_SEND_2_1 {
        let request = decode_command(OcppVersion::V2_1, action, payload).unwrap();
        csms.on_send(&cp, &request);
        assert_eq!(
            csms.charge_point(&cp).unwrap().extras.notifications[action].len(),
            1
        );
    }
}

#[test]
fn csms_initiated_actions_sent_by_a_charge_point_are_not_supported() {
    let csms = Csms::new(CsmsConfig::default());
    let cp = identity("CP-WRONG-WAY");
    csms.on_connected(&cp, OcppVersion::V2_0_1);
    let reply = call_reply(&csms, &cp, "Reset", r#"{"type":"Immediate"}"#);
    assert_eq!(error_code(reply), ErrorCode::NotSupported);
}

#[test]
fn data_transfer_known_and_unknown_vendors() {
    for version in [OcppVersion::V1_6, OcppVersion::V2_0_1, OcppVersion::V2_1] {
        let csms = Csms::new(CsmsConfig::default().data_transfer_vendors(vec!["acme".into()]));
        let cp = identity("CP-DT");
        csms.on_connected(&cp, version);
        let known = call(
            &csms,
            &cp,
            "DataTransfer",
            r#"{"vendorId":"acme","messageId":"m"}"#,
        );
        assert_eq!(known["status"], "Accepted", "{version:?}");
        let unknown = call(&csms, &cp, "DataTransfer", r#"{"vendorId":"other"}"#);
        assert_eq!(unknown["status"], "UnknownVendorId", "{version:?}");
        let kept = &csms.charge_point(&cp).unwrap().extras.notifications["DataTransfer"];
        assert_eq!(kept[1].payload["vendorId"], "other");
    }
    let csms = Csms::new(CsmsConfig::default());
    let cp = identity("CP-DT");
    csms.on_connected(&cp, OcppVersion::V1_6);
    assert_eq!(
        call(&csms, &cp, "DataTransfer", r#"{"vendorId":"ocpp-ws"}"#)["status"],
        "Accepted"
    );
}

fn admin_get(csms: &Csms, method: &str, path: &str, body: &str) -> (u16, Value) {
    let request = AdminRequest {
        method: method.into(),
        path: path.into(),
        body: body.as_bytes().to_vec(),
        authorization: None,
        caller_timeout: None,
    };
    match admin::route(csms, &request) {
        Route::Respond(response) => {
            let body = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
            (response.status, body)
        }
        Route::Call { .. } | Route::Calls { .. } => panic!("{path}: a CALL"),
    }
}

#[test]
fn notifications_are_bounded_and_on_the_admin_api() {
    let csms = Csms::new(CsmsConfig::default().notifications_kept(3));
    let cp = identity("CS-EVENTS");
    csms.on_connected(&cp, OcppVersion::V2_0_1);
    for seq in 0..20 {
        let event = format!(
            r#"{{"generatedAt":"2026-01-01T00:00:00Z","seqNo":{seq},"eventData":[{{"eventId":{seq},"timestamp":"2026-01-01T00:00:00Z","trigger":"Delta","actualValue":"Unavailable","eventNotificationType":"HardWiredNotification","component":{{"name":"Connector"}},"variable":{{"name":"AvailabilityState"}}}}]}}"#
        );
        assert_eq!(call(&csms, &cp, "NotifyEvent", &event), json!({}));
    }
    call(
        &csms,
        &cp,
        "FirmwareStatusNotification",
        r#"{"status":"Installed","requestId":1}"#,
    );
    let state = csms.charge_point(&cp).unwrap();
    let kept = &state.extras.notifications["NotifyEvent"];
    assert_eq!(kept.len(), 3);
    assert_eq!(kept[0].payload["seqNo"], 17);
    assert_eq!(state.extras.notification_counts["NotifyEvent"], 20);

    let (status, body) = admin_get(&csms, "GET", "/chargepoints/CS-EVENTS", "");
    assert_eq!(status, 200);
    assert_eq!(body["notifications"]["NotifyEvent"]["count"], 20);
    assert_eq!(
        body["notifications"]["FirmwareStatusNotification"]["last_status"],
        "Installed"
    );
    let (status, body) = admin_get(
        &csms,
        "GET",
        "/chargepoints/CS-EVENTS/notifications/NotifyEvent",
        "",
    );
    assert_eq!(status, 200);
    assert_eq!(body.as_array().unwrap().len(), 3);
    assert_eq!(body[2]["payload"]["seqNo"], 19);
    let (_, body) = admin_get(&csms, "GET", "/chargepoints/CS-EVENTS/notifications", "");
    assert_eq!(
        body["FirmwareStatusNotification"][0]["payload"]["requestId"],
        1
    );
    let (status, _) = admin_get(&csms, "GET", "/chargepoints/NOBODY/notifications", "");
    assert_eq!(status, 404);
    let (status, _) = admin_get(&csms, "POST", "/chargepoints/CS-EVENTS/notifications", "");
    assert_eq!(status, 405);
}

fn store() -> TokenStore {
    TokenStore::parse(
        "TAG-OK Accepted GROUP1\nTAG-BLOCKED Blocked\nTAG-OLD Accepted - 2020-01-01T00:00:00Z\n\
         TAG-BROKE NoCredit\nTAG-BOSS Accepted MASTER\n",
    )
    .unwrap()
    .with_master_pass(Some("MASTER".into()))
}

#[test]
fn v1_6_authorization_from_the_token_store() {
    let csms = Csms::new(CsmsConfig::default().tokens(Some(store())));
    let cp = identity("CP-AUTH");
    csms.on_connected(&cp, OcppVersion::V1_6);
    let status = |tag: &str| {
        call(&csms, &cp, "Authorize", &format!(r#"{{"idTag":"{tag}"}}"#))["idTagInfo"].clone()
    };
    assert_eq!(
        status("TAG-OK"),
        json!({"status":"Accepted","parentIdTag":"GROUP1"})
    );
    assert_eq!(status("TAG-BLOCKED")["status"], "Blocked");
    assert_eq!(status("TAG-OLD")["status"], "Expired");
    assert_eq!(
        status("TAG-BROKE")["status"],
        "Invalid",
        "NoCredit is 2.x only"
    );
    assert_eq!(status("NOBODY")["status"], "Invalid", "1.6 has no Unknown");
    assert_eq!(
        status("TAG-BOSS"),
        json!({"status":"Accepted","parentIdTag":"MASTER"})
    );
    let start = call(
        &csms,
        &cp,
        "StartTransaction",
        r#"{"connectorId":1,"idTag":"TAG-BLOCKED","meterStart":0,"timestamp":"2026-01-01T00:00:00Z"}"#,
    );
    assert_eq!(start["idTagInfo"]["status"], "Blocked");
    let tx = start["transactionId"].as_i64().unwrap();
    // The master pass may stop it.
    let stop = call(
        &csms,
        &cp,
        "StopTransaction",
        &format!(
            r#"{{"transactionId":{tx},"idTag":"MASTER","meterStop":0,"timestamp":"2026-01-01T00:01:00Z"}}"#
        ),
    );
    assert_eq!(
        stop["idTagInfo"],
        json!({"status":"Accepted","parentIdTag":"MASTER"})
    );

    // Without a store: everything Accepted, as before.
    let open = Csms::new(CsmsConfig::default());
    open.on_connected(&cp, OcppVersion::V1_6);
    assert_eq!(
        call(&open, &cp, "Authorize", r#"{"idTag":"NOBODY"}"#)["idTagInfo"],
        json!({"status":"Accepted"})
    );
}

#[test]
fn v2_authorization_from_the_token_store() {
    for version in [OcppVersion::V2_0_1, OcppVersion::V2_1] {
        let csms = Csms::new(CsmsConfig::default().tokens(Some(store())));
        let cp = identity("CS-AUTH");
        csms.on_connected(&cp, version);
        let info = |token: &str| {
            call(
                &csms,
                &cp,
                "Authorize",
                &format!(r#"{{"idToken":{{"idToken":"{token}","type":"ISO14443"}}}}"#),
            )["idTokenInfo"]
                .clone()
        };
        assert_eq!(
            info("TAG-OK"),
            json!({"status":"Accepted","groupIdToken":{"idToken":"GROUP1","type":"Central"}})
        );
        assert_eq!(info("TAG-BLOCKED")["status"], "Blocked");
        assert_eq!(info("TAG-OLD")["status"], "Expired");
        assert_eq!(
            info("TAG-OLD")["cacheExpiryDateTime"],
            "2020-01-01T00:00:00Z"
        );
        assert_eq!(info("TAG-BROKE")["status"], "NoCredit");
        assert_eq!(info("NOBODY")["status"], "Unknown");
        assert_eq!(info("MASTER")["groupIdToken"]["idToken"], "MASTER");
        let event = call(
            &csms,
            &cp,
            "TransactionEvent",
            r#"{"eventType":"Started","timestamp":"2026-01-01T00:00:00Z","triggerReason":"Authorized","seqNo":0,"transactionInfo":{"transactionId":"T1"},"idToken":{"idToken":"NOBODY","type":"ISO14443"}}"#,
        );
        assert_eq!(event["idTokenInfo"]["status"], "Unknown", "{version:?}");
        // NoAuthorization: the station decided, the CSMS does not refuse it.
        let free = call(
            &csms,
            &cp,
            "TransactionEvent",
            r#"{"eventType":"Started","timestamp":"2026-01-01T00:00:00Z","triggerReason":"CablePluggedIn","seqNo":0,"transactionInfo":{"transactionId":"T2"},"idToken":{"idToken":"","type":"NoAuthorization"}}"#,
        );
        assert_eq!(free["idTokenInfo"]["status"], "Accepted");
    }
}

#[test]
fn tokens_on_the_admin_api() {
    let csms = Csms::new(CsmsConfig::default());
    let cp = identity("CS-TOK");
    csms.on_connected(&cp, OcppVersion::V2_0_1);
    let (_, body) = admin_get(&csms, "GET", "/tokens", "");
    assert_eq!(body["enabled"], false);
    assert_eq!(admin_get(&csms, "GET", "/tokens/TAG1", "").0, 404);
    let authorize = r#"{"idToken":{"idToken":"TAG1","type":"ISO14443"}}"#;
    assert_eq!(
        call(&csms, &cp, "Authorize", authorize)["idTokenInfo"]["status"],
        "Accepted"
    );
    let (status, body) = admin_get(
        &csms,
        "PUT",
        "/tokens/TAG1",
        r#"{"status":"Blocked","group":"G"}"#,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        admin_get(&csms, "GET", "/tokens/TAG1", "").1["status"],
        "Blocked"
    );
    assert_eq!(
        call(&csms, &cp, "Authorize", authorize)["idTokenInfo"]["status"],
        "Blocked"
    );
    assert_eq!(
        admin_get(&csms, "PUT", "/tokens/TAG1", r#"{"status":"Sometimes"}"#).0,
        400
    );
    assert_eq!(
        admin_get(
            &csms,
            "PUT",
            "/tokens/TAG1",
            r#"{"status":"Accepted","expiry":"soon"}"#
        )
        .0,
        400
    );
    let (_, body) = admin_get(&csms, "GET", "/tokens", "");
    assert_eq!(body["enabled"], true);
    assert_eq!(body["tokens"]["TAG1"]["group"], "G");
    assert_eq!(admin_get(&csms, "DELETE", "/tokens/TAG1", "").0, 200);
    assert_eq!(admin_get(&csms, "DELETE", "/tokens/TAG1", "").0, 404);
    // The store is on and empty: unknown from now on.
    assert_eq!(
        call(&csms, &cp, "Authorize", authorize)["idTokenInfo"]["status"],
        "Unknown"
    );
}

#[test]
fn v2_0_1_seq_no_gaps_are_noticed() {
    let csms = Csms::new(CsmsConfig::default());
    let cp = identity("CS-SEQ");
    csms.on_connected(&cp, OcppVersion::V2_0_1);
    let event = |kind: &str, seq: i32| {
        let payload = format!(
            r#"{{"eventType":"{kind}","timestamp":"2026-01-01T00:00:00Z","triggerReason":"MeterValuePeriodic","seqNo":{seq},"transactionInfo":{{"transactionId":"TX1"}}}}"#
        );
        call(&csms, &cp, "TransactionEvent", &payload);
    };
    event("Started", 0);
    event("Updated", 1);
    // Sent again (its answer lost): the same event, not a gap.
    event("Updated", 1);
    event("Updated", 4);
    event("Ended", 5);
    let state = csms.charge_point(&cp).unwrap();
    assert_eq!(state.extras.seq_no_gap_count, 1);
    assert_eq!(state.extras.seq_no_gaps[0].expected, 2);
    assert_eq!(state.extras.seq_no_gaps[0].received, 4);
    let (_, body) = admin_get(&csms, "GET", "/chargepoints/CS-SEQ", "");
    assert_eq!(body["seq_no_gaps"]["count"], 1);
    assert_eq!(body["seq_no_gaps"]["recent"][0]["transaction"], "TX1");
    assert_eq!(body["transactions"][0]["last_seq_no"], 5);
    assert_eq!(csms.metrics().seq_no_gaps.get(), 1);
    assert!(csms
        .metrics()
        .render()
        .contains("ocpp_transaction_seq_no_gaps_total 1\n"));
}

#[test]
fn v2_0_1_pending_station_gets_security_error_until_accepted() {
    let csms = Csms::new(CsmsConfig::default().boot_policy(BootPolicy::Pending));
    let cp = identity("CS-NEW");
    csms.on_connected(&cp, OcppVersion::V2_0_1);
    let boot = r#"{"chargingStation":{"vendorName":"ACME","model":"AC-22"},"reason":"PowerUp"}"#;
    let answer = call(&csms, &cp, "BootNotification", boot);
    assert_eq!(answer["status"], "Pending");
    assert_eq!(answer["interval"], 60);
    let heartbeat = call_reply(&csms, &cp, "Heartbeat", "{}");
    assert_eq!(error_code(heartbeat), ErrorCode::SecurityError);
    // Provisioning: the station answers our GetBaseReport with NotifyReport.
    call(
        &csms,
        &cp,
        "NotifyReport",
        r#"{"requestId":1,"generatedAt":"2026-01-01T00:00:00Z","seqNo":0}"#,
    );
    // Triggered messages are allowed once we sent a TriggerMessage.
    csms.on_call_sent(&cp, "TriggerMessage");
    call(&csms, &cp, "Heartbeat", "{}");
    let event = r#"{"eventType":"Started","timestamp":"2026-01-01T00:00:00Z","triggerReason":"Authorized","seqNo":0,"transactionInfo":{"transactionId":"T"}}"#;
    assert_eq!(
        error_code(call_reply(&csms, &cp, "TransactionEvent", event)),
        ErrorCode::SecurityError
    );

    let (status, _) = admin_get(
        &csms,
        "PUT",
        "/chargepoints/CS-NEW/boot",
        r#"{"status":"Accepted"}"#,
    );
    assert_eq!(status, 200);
    let (_, body) = admin_get(&csms, "GET", "/chargepoints/CS-NEW/boot", "");
    assert_eq!(
        body,
        json!({"policy":"Accepted","default":"Pending","answered":"Pending"})
    );
    assert_eq!(
        call(&csms, &cp, "BootNotification", boot)["status"],
        "Accepted"
    );
    assert_eq!(call(&csms, &cp, "BootNotification", boot)["interval"], 300);
    call(&csms, &cp, "TransactionEvent", event);
    assert_eq!(
        admin_get(
            &csms,
            "PUT",
            "/chargepoints/CS-NEW/boot",
            r#"{"status":"Maybe"}"#
        )
        .0,
        400
    );
    assert_eq!(
        admin_get(&csms, "DELETE", "/chargepoints/CS-NEW/boot", "").0,
        200
    );
    assert_eq!(
        call(&csms, &cp, "BootNotification", boot)["status"],
        "Pending"
    );
}

#[test]
fn v1_6_rejected_charge_point_may_only_boot() {
    let csms = Csms::new(CsmsConfig::default());
    let cp = identity("CP-BAD");
    csms.set_boot_policy(&cp, Some(BootPolicy::Rejected))
        .unwrap();
    csms.on_connected(&cp, OcppVersion::V1_6);
    // Never booted (a 1.6 charge point reconnecting to a restarted CSMS): served.
    call(&csms, &cp, "Heartbeat", "{}");
    let boot = r#"{"chargePointVendor":"ACME","chargePointModel":"X"}"#;
    assert_eq!(
        call(&csms, &cp, "BootNotification", boot)["status"],
        "Rejected"
    );
    for (action, payload) in [
        ("Heartbeat", "{}"),
        ("FirmwareStatusNotification", r#"{"status":"Installed"}"#),
        ("Authorize", r#"{"idTag":"T"}"#),
    ] {
        assert_eq!(
            error_code(call_reply(&csms, &cp, action, payload)),
            ErrorCode::SecurityError,
            "{action}"
        );
    }
    assert_eq!(csms.charge_point(&cp).unwrap().status(), "Rejected");
    assert_eq!(
        call(&csms, &cp, "BootNotification", boot)["status"],
        "Rejected"
    );
}
