//! Names for the OCPP 1.6 types that its JSON schemas define inline (without `definitions`):
//! the names of OCPP 1.6 edition 2 §7 (types) and their one-line meaning.
//!
//! A schema path is `<Message type>/<property>/<property>[]/...`; the longest suffix listed here
//! (on whole segments) names the type. An inline type with no entry stops the generator.

/// (path suffix, Rust type name, doc line).
pub(crate) const V1_6_INLINE: &[(&str, &str, &str)] = &[
    ("idTagInfo", "IdTagInfo", "Status information about an identifier (OCPP 1.6 §7.24)."),
    ("idTagInfo/status", "AuthorizationStatus", "Whether an identifier is allowed to charge (OCPP 1.6 §7.2)."),
    ("BootNotificationResponse/status", "RegistrationStatus", "Result of a BootNotification (OCPP 1.6 §7.47)."),
    ("CancelReservationResponse/status", "CancelReservationStatus", "Result of a CancelReservation (OCPP 1.6 §7.5)."),
    ("ClearCacheResponse/status", "ClearCacheStatus", "Result of a ClearCache (OCPP 1.6 §7.14)."),
    ("GetCompositeScheduleResponse/status", "GetCompositeScheduleStatus", "Result of a GetCompositeSchedule (OCPP 1.6 §7.26)."),
    ("RemoteStartTransactionResponse/status", "RemoteStartStopStatus", "Result of a RemoteStartTransaction or RemoteStopTransaction (OCPP 1.6 §7.48)."),
    ("RemoteStopTransactionResponse/status", "RemoteStartStopStatus", "Result of a RemoteStartTransaction or RemoteStopTransaction (OCPP 1.6 §7.48)."),
    ("ResetResponse/status", "ResetStatus", "Result of a Reset (OCPP 1.6 §7.51)."),
    ("ChangeAvailabilityRequest/type", "AvailabilityType", "Requested availability of a connector or the charge point (OCPP 1.6 §7.4)."),
    ("ChangeAvailabilityResponse/status", "AvailabilityStatus", "Result of a ChangeAvailability (OCPP 1.6 §7.3)."),
    ("ChangeConfigurationResponse/status", "ConfigurationStatus", "Result of a ChangeConfiguration (OCPP 1.6 §7.17)."),
    ("chargingProfilePurpose", "ChargingProfilePurposeType", "Purpose of a charging profile (OCPP 1.6 §7.10)."),
    ("ClearChargingProfileResponse/status", "ClearChargingProfileStatus", "Result of a ClearChargingProfile (OCPP 1.6 §7.15)."),
    ("DataTransferResponse/status", "DataTransferStatus", "Result of a DataTransfer (OCPP 1.6 §7.20)."),
    ("DiagnosticsStatusNotificationRequest/status", "DiagnosticsStatus", "Status of a diagnostics upload (OCPP 1.6 §7.21)."),
    ("FirmwareStatusNotificationRequest/status", "FirmwareStatus", "Status of a firmware update (OCPP 1.6 §7.25)."),
    ("chargingRateUnit", "ChargingRateUnitType", "Unit of a charging limit: amperes or watts (OCPP 1.6 §7.12)."),
    ("chargingSchedule", "ChargingSchedule", "A list of charging periods (OCPP 1.6 §7.13)."),
    ("chargingSchedulePeriod[]", "ChargingSchedulePeriod", "One period of a charging schedule (OCPP 1.6 §7.14)."),
    ("GetConfigurationResponse/configurationKey[]", "KeyValue", "A configuration key, its value and whether it is read-only (OCPP 1.6 §7.30)."),
    ("meterValue[]", "MeterValue", "Sampled values taken at one point in time (OCPP 1.6 §7.33)."),
    ("sampledValue[]", "SampledValue", "One measured value with its context and unit (OCPP 1.6 §7.45)."),
    ("sampledValue[]/context", "ReadingContext", "Why a value was sampled (OCPP 1.6 §7.41)."),
    ("sampledValue[]/format", "ValueFormat", "Whether a sampled value is a number or signed data (OCPP 1.6 §7.55)."),
    ("sampledValue[]/measurand", "Measurand", "What a sampled value measures (OCPP 1.6 §7.31)."),
    ("sampledValue[]/phase", "Phase", "The phase a value was measured on (OCPP 1.6 §7.38)."),
    ("sampledValue[]/location", "Location", "Where a value was measured (OCPP 1.6 §7.30)."),
    ("sampledValue[]/unit", "UnitOfMeasure", "Unit of a sampled value (OCPP 1.6 §7.52)."),
    ("StopTransactionRequest/transactionData[]", "TransactionData", "Meter values of a transaction in StopTransaction: a MeterValue whose units follow the StopTransaction schema (no `Hertz`)."),
    ("StopTransactionRequest/transactionData[]/sampledValue[]", "TransactionDataSampledValue", "A SampledValue in StopTransaction's transaction data (units without `Hertz`)."),
    ("StopTransactionRequest/transactionData[]/sampledValue[]/unit", "TransactionDataUnitOfMeasure", "Unit of a sampled value in StopTransaction: UnitOfMeasure without `Hertz`, as the StopTransaction schema lists them."),
    ("RemoteStartTransactionRequest/chargingProfile", "ChargingProfile", "A charging profile: limits over time (OCPP 1.6 §7.8)."),
    ("SetChargingProfileRequest/csChargingProfiles", "ChargingProfile", "A charging profile: limits over time (OCPP 1.6 §7.8)."),
    ("chargingProfileKind", "ChargingProfileKindType", "Kind of charging schedule (OCPP 1.6 §7.9)."),
    ("recurrencyKind", "RecurrencyKindType", "Recurrence of a recurring profile (OCPP 1.6 §7.44)."),
    ("ReserveNowResponse/status", "ReservationStatus", "Result of a ReserveNow (OCPP 1.6 §7.46)."),
    ("ResetRequest/type", "ResetType", "Kind of reset (OCPP 1.6 §7.52)."),
    ("SendLocalListRequest/localAuthorizationList[]", "AuthorizationData", "An identifier and its status in the local authorization list (OCPP 1.6 §7.1)."),
    ("SendLocalListRequest/updateType", "UpdateType", "Whether a local list update is full or differential (OCPP 1.6 §7.55)."),
    ("SendLocalListResponse/status", "UpdateStatus", "Result of a SendLocalList (OCPP 1.6 §7.54)."),
    ("SetChargingProfileResponse/status", "ChargingProfileStatus", "Result of a SetChargingProfile (OCPP 1.6 §7.11)."),
    ("StatusNotificationRequest/errorCode", "ChargePointErrorCode", "Error reported in a StatusNotification (OCPP 1.6 §7.6)."),
    ("StatusNotificationRequest/status", "ChargePointStatus", "Status of a connector or the charge point (OCPP 1.6 §7.7)."),
    ("StopTransactionRequest/reason", "Reason", "Why a transaction stopped (OCPP 1.6 §7.40)."),
    ("TriggerMessageRequest/requestedMessage", "MessageTrigger", "The message TriggerMessage asks for (OCPP 1.6 §7.32)."),
    ("TriggerMessageResponse/status", "TriggerMessageStatus", "Result of a TriggerMessage (OCPP 1.6 §7.52)."),
    ("UnlockConnectorResponse/status", "UnlockStatus", "Result of an UnlockConnector (OCPP 1.6 §7.53)."),
];

/// The entry for `path`, by longest matching suffix.
pub(crate) fn inline_name(path: &str) -> Option<(&'static str, &'static str)> {
    V1_6_INLINE
        .iter()
        .filter(|(suffix, _, _)| path == *suffix || path.ends_with(&format!("/{suffix}")))
        .max_by_key(|(suffix, _, _)| suffix.len())
        .map(|(_, name, doc)| (*name, *doc))
}
