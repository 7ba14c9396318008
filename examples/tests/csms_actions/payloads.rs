//! The minimal schema-valid payload of every action, per version and direction.

/// OCPP 1.6 (with the security whitepaper): what a charge point sends, with a minimal payload.
pub(crate) const CHARGE_POINT_1_6: &[(&str, &str)] = &[
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
pub(crate) const CENTRAL_SYSTEM_1_6: &[&str] = &[
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
pub(crate) const CHARGING_STATION_2_0_1: &[(&str, &str)] = &[
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
pub(crate) const CSMS_2_0_1: &[&str] = &[
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
pub(crate) const CHARGING_STATION_2_1: &[(&str, &str)] = &[
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
pub(crate) const CHARGING_STATION_SEND_2_1: &[(&str, &str)] = &[(
    "NotifyPeriodicEventStream",
    r#"{"id":0,"pending":0,"basetime":"2026-01-01T00:00:00Z","data":[{"t":0,"v":"x"}]}"#,
)];

/// OCPP 2.1: what the CSMS sends.
pub(crate) const CSMS_2_1: &[&str] = &[
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
