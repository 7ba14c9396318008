//! What a charge point says and hears, independent of the OCPP version, and its translation to
//! and from the payloads of the negotiated version.
//!
//! OCPP 1.6 payloads are built from the generated types of `ocpp_messages::v1_6`. OCPP 2.0.1
//! and 2.1 share their messages' JSON shape but not their Rust types (2.1 adds fields and makes
//! some integers unsigned), so their payloads are written once as JSON and decoded through the
//! version's generated, schema-checking decoder: one code path serves both, and a payload the
//! schema rejects is caught here rather than by the CSMS.
//!
//! The `charge-point` simulator and the `ocpp-load` swarm both build their messages here.

use std::time::{SystemTime, UNIX_EPOCH};

use ocpp_messages::version::OcppVersion;
use ocpp_messages::{v1_6, v2_0_1, v2_1, DateTime};
use ocpp_proto::{Request, Response};
use serde_json::{json, Value};

/// The wall clock as an OCPP date-time (UTC, whole seconds).
fn now_datetime() -> DateTime {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    DateTime::from_unix_timestamp(i64::try_from(secs).unwrap_or(0))
        .or_else(|| DateTime::from_unix_timestamp(0))
        .unwrap_or_else(|| unreachable!("1970 is a valid date"))
}

/// Why a charge point (re)booted (2.x `BootReasonEnum`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BootReason {
    /// Switched on (`PowerUp`).
    PowerUp,
    /// After a Reset of the CSMS (`RemoteReset`).
    RemoteReset,
    /// TriggerMessage(BootNotification) (`Triggered`).
    Triggered,
}

/// A connector's state, in the words of both versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectorState {
    /// Free for a new session.
    Available,
    /// A session is being set up (1.6 Preparing, 2.x Occupied).
    Preparing,
    /// Energy flows (1.6 Charging, 2.x Occupied).
    Charging,
    /// The session ended, the cable is still in (1.6 Finishing, 2.x Occupied).
    Finishing,
}

/// Why a transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// Stopped at the charge point.
    Local,
    /// RemoteStopTransaction / RequestStopTransaction.
    Remote,
    /// A Reset command (`hard`: 1.6 Hard, 2.x Immediate).
    Reset {
        /// 1.6 Hard, 2.x Immediate.
        hard: bool,
    },
    /// The CSMS did not accept the id tag.
    DeAuthorized,
}

/// One energy reading of a transaction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// The import register, in Wh.
    pub energy_wh: i64,
    /// The active power, in W.
    pub power_w: f64,
}

/// A transaction as the messages that report it need it.
#[derive(Debug, Clone, PartialEq)]
pub struct TxRef {
    /// The connector (1.6 connectorId; 2.x EVSE 1's connector).
    pub connector: u32,
    /// The id tag (2.x idToken) that started it.
    pub id_tag: String,
    /// 2.x: our transactionId.
    pub local_id: String,
    /// 1.6: the transactionId the CSMS gave in StartTransaction's answer.
    pub csms_id: Option<i32>,
    /// 2.x: the sequence number of this TransactionEvent.
    pub seq_no: u32,
    /// 2.x: the remoteStartId of RequestStartTransaction, if it started that way.
    pub remote_start_id: Option<i32>,
}

/// A CALL the charge point sends.
#[derive(Debug, Clone, PartialEq)]
pub enum Outgoing {
    /// BootNotification.
    Boot {
        /// The charge point's identity (its serial number in the payload).
        identity: String,
        /// Why it booted.
        reason: BootReason,
    },
    /// Heartbeat.
    Heartbeat,
    /// StatusNotification.
    Status {
        /// The connector reported.
        connector: u32,
        /// Its state.
        state: ConnectorState,
    },
    /// Authorize.
    Authorize {
        /// The id tag (2.x idToken) to check.
        id_tag: String,
    },
    /// 1.6 StartTransaction, 2.x TransactionEvent(Started).
    TxStarted {
        /// The transaction.
        tx: TxRef,
        /// The meter at the start.
        reading: Reading,
        /// Started by the CSMS (RemoteStart / RequestStartTransaction).
        remote: bool,
    },
    /// 1.6 MeterValues, 2.x TransactionEvent(Updated).
    TxUpdated {
        /// The transaction.
        tx: TxRef,
        /// The meter now.
        reading: Reading,
        /// Asked for by TriggerMessage rather than periodic.
        triggered: bool,
    },
    /// 1.6 StopTransaction, 2.x TransactionEvent(Ended).
    TxEnded {
        /// The transaction.
        tx: TxRef,
        /// The meter at the end.
        reading: Reading,
        /// Why it ended.
        reason: StopReason,
    },
    /// 1.6 MeterValues outside a transaction (TriggerMessage).
    Meter {
        /// The connector measured.
        connector: u32,
        /// The meter now.
        reading: Reading,
    },
}

/// A CALL of the CSMS, read into what the charge point acts on.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// 1.6 RemoteStartTransaction, 2.x RequestStartTransaction.
    RemoteStart {
        /// The id tag (2.x idToken) to charge for.
        id_tag: String,
        /// The connector asked for (`None`: the charge point picks).
        connector: Option<u32>,
        /// 2.x: the remoteStartId to report in TransactionEvent.
        remote_start_id: Option<i32>,
    },
    /// 1.6 RemoteStopTransaction, 2.x RequestStopTransaction.
    RemoteStop {
        /// The transaction to stop, as the CSMS knows it.
        transaction_id: String,
    },
    /// Reset.
    Reset {
        /// 1.6 Hard, 2.x Immediate.
        hard: bool,
    },
    /// TriggerMessage.
    Trigger {
        /// What to send.
        message: TriggerKind,
        /// The connector it is about, if any.
        connector: Option<u32>,
    },
    /// 1.6 ChangeConfiguration.
    ChangeConfiguration {
        /// The configuration key.
        key: String,
        /// Its new value.
        value: String,
    },
    /// 1.6 GetConfiguration (`None`: all keys).
    GetConfiguration {
        /// The keys asked for (`None`: all keys).
        keys: Option<Vec<String>>,
    },
    /// 2.x SetVariables: (component, variable, value).
    SetVariables(Vec<(String, String, String)>),
    /// 2.x GetVariables: (component, variable).
    GetVariables(Vec<(String, String)>),
    /// DataTransfer.
    DataTransfer {
        /// vendorId.
        vendor_id: String,
        /// messageId, if given.
        message_id: Option<String>,
        /// data, if given.
        data: Option<String>,
    },
    /// Anything else: answered NotSupported.
    Other(&'static str),
}

/// What TriggerMessage asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TriggerKind {
    /// BootNotification.
    Boot,
    /// Heartbeat.
    Heartbeat,
    /// StatusNotification.
    Status,
    /// MeterValues.
    Meter,
    /// 2.x TransactionEvent.
    TransactionEvent,
    /// Anything else (answered NotImplemented).
    Unsupported,
}

/// Status of a configuration change or a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetStatus {
    /// Accepted.
    Accepted,
    /// Rejected.
    Rejected,
    /// 1.6: the key is unknown (NotSupported); 2.x: UnknownVariable.
    Unknown,
}

/// The answer to a [`Command`].
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// RemoteStart/RemoteStop/RequestStart/RequestStop, with the 2.x transactionId if one runs.
    StartStop {
        /// Whether the command is accepted.
        accepted: bool,
        /// 2.x: the transactionId of the running transaction, if any.
        transaction_id: Option<String>,
    },
    /// Reset.
    Reset {
        /// Whether the reset is accepted.
        accepted: bool,
    },
    /// TriggerMessage.
    Trigger {
        /// Whether the message will be sent.
        accepted: bool,
        /// `false`: the trigger is not implemented (NotImplemented).
        implemented: bool,
    },
    /// 1.6 ChangeConfiguration.
    ChangeConfiguration(SetStatus),
    /// Known keys (key, value, read-only) and unknown ones.
    GetConfiguration {
        /// (key, value, read-only).
        known: Vec<(String, String, bool)>,
        /// The keys asked for that do not exist.
        unknown: Vec<String>,
    },
    /// (component, variable, status).
    SetVariables(Vec<(String, String, SetStatus)>),
    /// (component, variable, value if known).
    GetVariables(Vec<(String, String, Option<String>)>),
    /// DataTransfer (Accepted).
    DataTransfer,
}

/// A payload that did not come out right: a bug in this file, logged and skipped.
#[derive(Debug)]
pub struct PayloadError(
    /// What went wrong.
    pub String,
);

impl std::fmt::Display for PayloadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

// ---------------------------------------------------------------------------------------------
// Outgoing CALLs.

/// The request for `message` in `version`.
pub fn request(version: OcppVersion, message: &Outgoing) -> Result<Request, PayloadError> {
    match version {
        OcppVersion::V1_6 => Ok(Request::from(request_v16(message))),
        OcppVersion::V2_0_1 | OcppVersion::V2_1 => {
            let (action, payload) = request_v2(message);
            decode_v2_request(version, action, &payload)
        }
    }
}

fn request_v16(message: &Outgoing) -> v1_6::Request {
    let to_i32 = |n: u32| i32::try_from(n).unwrap_or(i32::MAX);
    let meter_i32 = |wh: i64| i32::try_from(wh).unwrap_or(i32::MAX);
    match message {
        Outgoing::Boot { identity, .. } => v1_6::BootNotificationRequest {
            charge_point_vendor: "OcppWs".into(),
            charge_point_model: "SimCP".into(),
            charge_point_serial_number: Some(identity.chars().take(25).collect()),
            charge_box_serial_number: None,
            firmware_version: Some(env!("CARGO_PKG_VERSION").into()),
            iccid: None,
            imsi: None,
            meter_type: Some("SimMeter".into()),
            meter_serial_number: None,
        }
        .into(),
        Outgoing::Heartbeat => v1_6::HeartbeatRequest {}.into(),
        Outgoing::Status { connector, state } => v1_6::StatusNotificationRequest {
            connector_id: to_i32(*connector),
            error_code: v1_6::ChargePointErrorCode::NoError,
            info: None,
            status: match state {
                ConnectorState::Available => v1_6::ChargePointStatus::Available,
                ConnectorState::Preparing => v1_6::ChargePointStatus::Preparing,
                ConnectorState::Charging => v1_6::ChargePointStatus::Charging,
                ConnectorState::Finishing => v1_6::ChargePointStatus::Finishing,
            },
            timestamp: Some(now_datetime()),
            vendor_id: None,
            vendor_error_code: None,
        }
        .into(),
        Outgoing::Authorize { id_tag } => v1_6::AuthorizeRequest {
            id_tag: id_tag.clone(),
        }
        .into(),
        Outgoing::TxStarted { tx, reading, .. } => v1_6::StartTransactionRequest {
            connector_id: to_i32(tx.connector),
            id_tag: tx.id_tag.clone(),
            meter_start: meter_i32(reading.energy_wh),
            reservation_id: None,
            timestamp: now_datetime(),
        }
        .into(),
        Outgoing::TxUpdated { tx, reading, .. } => v1_6::MeterValuesRequest {
            connector_id: to_i32(tx.connector),
            transaction_id: tx.csms_id,
            meter_value: vec![meter_value_v16(
                reading,
                v1_6::ReadingContext::SamplePeriodic,
            )],
        }
        .into(),
        Outgoing::Meter { connector, reading } => v1_6::MeterValuesRequest {
            connector_id: to_i32(*connector),
            transaction_id: None,
            meter_value: vec![meter_value_v16(reading, v1_6::ReadingContext::Trigger)],
        }
        .into(),
        Outgoing::TxEnded {
            tx,
            reading,
            reason,
        } => v1_6::StopTransactionRequest {
            id_tag: Some(tx.id_tag.clone()),
            meter_stop: meter_i32(reading.energy_wh),
            timestamp: now_datetime(),
            transaction_id: tx.csms_id.unwrap_or(0),
            reason: Some(match reason {
                StopReason::Local => v1_6::Reason::Local,
                StopReason::Remote => v1_6::Reason::Remote,
                StopReason::Reset { hard: true } => v1_6::Reason::HardReset,
                StopReason::Reset { hard: false } => v1_6::Reason::SoftReset,
                StopReason::DeAuthorized => v1_6::Reason::DeAuthorized,
            }),
            transaction_data: None,
        }
        .into(),
    }
}

fn meter_value_v16(reading: &Reading, context: v1_6::ReadingContext) -> v1_6::MeterValue {
    let sample = |value: String, measurand, unit| v1_6::SampledValue {
        value,
        context: Some(context.clone()),
        format: None,
        measurand: Some(measurand),
        phase: None,
        location: None,
        unit: Some(unit),
    };
    v1_6::MeterValue {
        timestamp: now_datetime(),
        sampled_value: vec![
            sample(
                reading.energy_wh.to_string(),
                v1_6::Measurand::EnergyActiveImportRegister,
                v1_6::UnitOfMeasure::Wh,
            ),
            sample(
                format!("{:.0}", reading.power_w),
                v1_6::Measurand::PowerActiveImport,
                v1_6::UnitOfMeasure::W,
            ),
        ],
    }
}

/// The 2.x action and JSON payload of `message` (the same for 2.0.1 and 2.1).
fn request_v2(message: &Outgoing) -> (&'static str, Value) {
    let now = now_datetime();
    match message {
        Outgoing::Boot { identity, reason } => (
            "BootNotification",
            json!({
                "chargingStation": {
                    "model": "SimCP",
                    "vendorName": "OcppWs",
                    "serialNumber": identity.chars().take(25).collect::<String>(),
                    "firmwareVersion": env!("CARGO_PKG_VERSION"),
                },
                "reason": match reason {
                    BootReason::PowerUp => "PowerUp",
                    BootReason::RemoteReset => "RemoteReset",
                    BootReason::Triggered => "Triggered",
                },
            }),
        ),
        Outgoing::Heartbeat => ("Heartbeat", json!({})),
        Outgoing::Status { connector, state } => (
            "StatusNotification",
            json!({
                "timestamp": now,
                "connectorStatus": match state {
                    ConnectorState::Available => "Available",
                    _ => "Occupied",
                },
                "evseId": (*connector).max(1),
                "connectorId": 1,
            }),
        ),
        Outgoing::Authorize { id_tag } => (
            "Authorize",
            json!({ "idToken": { "idToken": id_tag, "type": "ISO14443" } }),
        ),
        Outgoing::TxStarted {
            tx,
            reading,
            remote,
        } => {
            let trigger = if *remote { "RemoteStart" } else { "Authorized" };
            let mut event =
                transaction_event_v2("Started", trigger, tx, reading, "Transaction.Begin");
            event["idToken"] = json!({ "idToken": tx.id_tag, "type": "ISO14443" });
            event["evse"] = json!({ "id": tx.connector, "connectorId": 1 });
            ("TransactionEvent", event)
        }
        Outgoing::TxUpdated {
            tx,
            reading,
            triggered,
        } => {
            let trigger = if *triggered {
                "Trigger"
            } else {
                "MeterValuePeriodic"
            };
            let (context, trigger) = if *triggered {
                ("Trigger", trigger)
            } else {
                ("Sample.Periodic", trigger)
            };
            (
                "TransactionEvent",
                transaction_event_v2("Updated", trigger, tx, reading, context),
            )
        }
        Outgoing::TxEnded {
            tx,
            reading,
            reason,
        } => {
            let (trigger, stopped) = match reason {
                StopReason::Local => ("StopAuthorized", "Local"),
                StopReason::Remote => ("RemoteStop", "Remote"),
                StopReason::Reset { .. } => ("ResetCommand", "ImmediateReset"),
                StopReason::DeAuthorized => ("Deauthorized", "DeAuthorized"),
            };
            let mut event = transaction_event_v2("Ended", trigger, tx, reading, "Transaction.End");
            event["transactionInfo"]["stoppedReason"] = json!(stopped);
            event["transactionInfo"]["chargingState"] = json!("EVConnected");
            ("TransactionEvent", event)
        }
        Outgoing::Meter { connector, reading } => (
            "MeterValues",
            json!({
                "evseId": connector,
                "meterValue": [meter_value_v2(reading, "Trigger")],
            }),
        ),
    }
}

fn transaction_event_v2(
    event_type: &str,
    trigger: &str,
    tx: &TxRef,
    reading: &Reading,
    context: &str,
) -> Value {
    let mut info = json!({
        "transactionId": tx.local_id,
        "chargingState": "Charging",
    });
    if let Some(id) = tx.remote_start_id {
        info["remoteStartId"] = json!(id);
    }
    json!({
        "eventType": event_type,
        "timestamp": now_datetime(),
        "triggerReason": trigger,
        "seqNo": tx.seq_no,
        "transactionInfo": info,
        "meterValue": [meter_value_v2(reading, context)],
    })
}

fn meter_value_v2(reading: &Reading, context: &str) -> Value {
    json!({
        "timestamp": now_datetime(),
        "sampledValue": [
            {
                "value": reading.energy_wh,
                "context": context,
                "measurand": "Energy.Active.Import.Register",
                "unitOfMeasure": { "unit": "Wh" },
            },
            {
                "value": reading.power_w.round(),
                "context": context,
                "measurand": "Power.Active.Import",
                "unitOfMeasure": { "unit": "W" },
            },
        ],
    })
}

fn decode_v2_request(
    version: OcppVersion,
    action: &str,
    payload: &Value,
) -> Result<Request, PayloadError> {
    let text = payload.to_string();
    let error = |e: ocpp_messages::DecodeError| PayloadError(format!("{action}: {e}"));
    Ok(match version {
        OcppVersion::V2_1 => Request::from(v2_1::decode_call(action, &text).map_err(error)?),
        _ => Request::from(v2_0_1::decode_call(action, &text).map_err(error)?),
    })
}

fn decode_v2_response(
    version: OcppVersion,
    action: &str,
    payload: &Value,
) -> Result<Response, PayloadError> {
    let text = payload.to_string();
    let error = |e: ocpp_messages::DecodeError| PayloadError(format!("{action} response: {e}"));
    Ok(match version {
        OcppVersion::V2_1 => Response::from(v2_1::decode_result(action, &text).map_err(error)?),
        _ => Response::from(v2_0_1::decode_result(action, &text).map_err(error)?),
    })
}

// ---------------------------------------------------------------------------------------------
// Answers to our CALLs.

/// What the answer to a CALL of ours says, as far as the charge point cares.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// BootNotification: (accepted, pending, interval in seconds).
    Boot {
        /// Accepted (rather than Pending or Rejected).
        accepted: bool,
        /// The interval the CSMS gave, in seconds.
        interval_s: i64,
    },
    /// Authorize / StartTransaction / TransactionEvent: whether the id tag is accepted (`None`:
    /// not said), and 1.6 StartTransaction's transactionId.
    IdTag {
        /// Whether the id tag is accepted (`None`: not said).
        accepted: Option<bool>,
        /// 1.6 StartTransaction's transactionId.
        transaction_id: Option<i32>,
    },
    /// Anything else.
    Other,
}

/// Reads the answer to our CALL.
pub fn read_answer(response: &Response) -> Answer {
    match response {
        Response::V1_6(r) => match r.as_ref() {
            v1_6::Response::BootNotification(b) => Answer::Boot {
                accepted: b.status == v1_6::RegistrationStatus::Accepted,
                interval_s: i64::from(b.interval),
            },
            v1_6::Response::Authorize(a) => Answer::IdTag {
                accepted: Some(a.id_tag_info.status == v1_6::AuthorizationStatus::Accepted),
                transaction_id: None,
            },
            v1_6::Response::StartTransaction(s) => Answer::IdTag {
                accepted: Some(s.id_tag_info.status == v1_6::AuthorizationStatus::Accepted),
                transaction_id: Some(s.transaction_id),
            },
            _ => Answer::Other,
        },
        other => {
            let json = serde_json::to_value(other).unwrap_or_default();
            match other.action() {
                "BootNotification" => Answer::Boot {
                    accepted: json["status"] == "Accepted",
                    interval_s: json["interval"].as_i64().unwrap_or(0),
                },
                "Authorize" | "TransactionEvent" => Answer::IdTag {
                    accepted: json["idTokenInfo"]["status"]
                        .as_str()
                        .map(|s| s == "Accepted"),
                    transaction_id: None,
                },
                _ => Answer::Other,
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Commands of the CSMS.

/// Reads a CALL of the CSMS.
pub fn read_command(request: &Request) -> Command {
    match request {
        Request::V1_6(r) => read_command_v16(r),
        other => read_command_v2(
            other.action(),
            &serde_json::to_value(other).unwrap_or_default(),
        ),
    }
}

fn read_command_v16(request: &v1_6::Request) -> Command {
    use v1_6::Request as R;
    let connector = |c: Option<i32>| c.and_then(|c| u32::try_from(c).ok());
    match request {
        R::RemoteStartTransaction(r) => Command::RemoteStart {
            id_tag: r.id_tag.clone(),
            connector: connector(r.connector_id),
            remote_start_id: None,
        },
        R::RemoteStopTransaction(r) => Command::RemoteStop {
            transaction_id: r.transaction_id.to_string(),
        },
        R::Reset(r) => Command::Reset {
            hard: r.r#type == v1_6::ResetType::Hard,
        },
        R::TriggerMessage(r) => Command::Trigger {
            message: match r.requested_message {
                v1_6::MessageTrigger::BootNotification => TriggerKind::Boot,
                v1_6::MessageTrigger::Heartbeat => TriggerKind::Heartbeat,
                v1_6::MessageTrigger::StatusNotification => TriggerKind::Status,
                v1_6::MessageTrigger::MeterValues => TriggerKind::Meter,
                _ => TriggerKind::Unsupported,
            },
            connector: connector(r.connector_id),
        },
        R::ChangeConfiguration(r) => Command::ChangeConfiguration {
            key: r.key.clone(),
            value: r.value.clone(),
        },
        R::GetConfiguration(r) => Command::GetConfiguration {
            keys: r.key.clone(),
        },
        R::DataTransfer(r) => Command::DataTransfer {
            vendor_id: r.vendor_id.clone(),
            message_id: r.message_id.clone(),
            data: r.data.clone(),
        },
        other => Command::Other(other.action().as_str()),
    }
}

fn read_command_v2(action: &'static str, json: &Value) -> Command {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let names = |item: &Value| {
        (
            text(&item["component"]["name"]),
            text(&item["variable"]["name"]),
        )
    };
    match action {
        "RequestStartTransaction" => Command::RemoteStart {
            id_tag: text(&json["idToken"]["idToken"]),
            connector: json["evseId"].as_u64().and_then(|c| u32::try_from(c).ok()),
            remote_start_id: json["remoteStartId"]
                .as_i64()
                .and_then(|c| i32::try_from(c).ok()),
        },
        "RequestStopTransaction" => Command::RemoteStop {
            transaction_id: text(&json["transactionId"]),
        },
        "Reset" => Command::Reset {
            hard: json["type"] == "Immediate",
        },
        "TriggerMessage" => Command::Trigger {
            message: match json["requestedMessage"].as_str().unwrap_or_default() {
                "BootNotification" => TriggerKind::Boot,
                "Heartbeat" => TriggerKind::Heartbeat,
                "StatusNotification" => TriggerKind::Status,
                "MeterValues" => TriggerKind::Meter,
                "TransactionEvent" => TriggerKind::TransactionEvent,
                _ => TriggerKind::Unsupported,
            },
            connector: json["evse"]["id"]
                .as_u64()
                .and_then(|c| u32::try_from(c).ok()),
        },
        "SetVariables" => Command::SetVariables(
            json["setVariableData"]
                .as_array()
                .map(|items| {
                    items
                        .iter()
                        .map(|item| {
                            let (c, v) = names(item);
                            (c, v, text(&item["attributeValue"]))
                        })
                        .collect()
                })
                .unwrap_or_default(),
        ),
        "GetVariables" => Command::GetVariables(
            json["getVariableData"]
                .as_array()
                .map(|items| items.iter().map(names).collect())
                .unwrap_or_default(),
        ),
        "DataTransfer" => Command::DataTransfer {
            vendor_id: text(&json["vendorId"]),
            message_id: json["messageId"].as_str().map(str::to_owned),
            data: match &json["data"] {
                Value::Null => None,
                Value::String(s) => Some(s.clone()),
                other => Some(other.to_string()),
            },
        },
        other => Command::Other(other),
    }
}

/// The response to a command, in `version`.
pub fn response(
    version: OcppVersion,
    action: &str,
    reply: &Reply,
) -> Result<Response, PayloadError> {
    match version {
        OcppVersion::V1_6 => response_v16(action, reply).map(Response::from),
        OcppVersion::V2_0_1 | OcppVersion::V2_1 => {
            decode_v2_response(version, action, &response_v2(reply))
        }
    }
}

fn response_v16(action: &str, reply: &Reply) -> Result<v1_6::Response, PayloadError> {
    let start_stop = |accepted: bool| {
        if accepted {
            v1_6::RemoteStartStopStatus::Accepted
        } else {
            v1_6::RemoteStartStopStatus::Rejected
        }
    };
    Ok(match reply {
        // RemoteStart and RemoteStop answer with the same shape; the action decides the type.
        Reply::StartStop { accepted, .. } => {
            if action == "RemoteStopTransaction" {
                v1_6::RemoteStopTransactionResponse {
                    status: start_stop(*accepted),
                }
                .into()
            } else {
                v1_6::RemoteStartTransactionResponse {
                    status: start_stop(*accepted),
                }
                .into()
            }
        }
        Reply::Reset { accepted } => v1_6::ResetResponse {
            status: if *accepted {
                v1_6::ResetStatus::Accepted
            } else {
                v1_6::ResetStatus::Rejected
            },
        }
        .into(),
        Reply::Trigger {
            accepted,
            implemented,
        } => v1_6::TriggerMessageResponse {
            status: match (implemented, accepted) {
                (false, _) => v1_6::TriggerMessageStatus::NotImplemented,
                (true, true) => v1_6::TriggerMessageStatus::Accepted,
                (true, false) => v1_6::TriggerMessageStatus::Rejected,
            },
        }
        .into(),
        Reply::ChangeConfiguration(status) => v1_6::ChangeConfigurationResponse {
            status: match status {
                SetStatus::Accepted => v1_6::ConfigurationStatus::Accepted,
                SetStatus::Rejected => v1_6::ConfigurationStatus::Rejected,
                SetStatus::Unknown => v1_6::ConfigurationStatus::NotSupported,
            },
        }
        .into(),
        Reply::GetConfiguration { known, unknown } => v1_6::GetConfigurationResponse {
            configuration_key: Some(
                known
                    .iter()
                    .map(|(key, value, readonly)| v1_6::KeyValue {
                        key: key.clone(),
                        readonly: *readonly,
                        value: Some(value.clone()),
                    })
                    .collect(),
            ),
            unknown_key: (!unknown.is_empty()).then(|| unknown.clone()),
        }
        .into(),
        Reply::DataTransfer => v1_6::DataTransferResponse {
            status: v1_6::DataTransferStatus::Accepted,
            data: None,
        }
        .into(),
        Reply::SetVariables(_) | Reply::GetVariables(_) => {
            return Err(PayloadError(
                "Set/GetVariables do not exist in OCPP 1.6".into(),
            ))
        }
    })
}

fn response_v2(reply: &Reply) -> Value {
    let accepted = |yes: bool| if yes { "Accepted" } else { "Rejected" };
    let component_variable = |c: &str, v: &str| (json!({ "name": c }), json!({ "name": v }));
    match reply {
        Reply::StartStop {
            accepted: yes,
            transaction_id,
        } => {
            let mut json = json!({ "status": accepted(*yes) });
            if let Some(id) = transaction_id {
                json["transactionId"] = json!(id);
            }
            json
        }
        Reply::Reset { accepted: yes } => json!({ "status": accepted(*yes) }),
        Reply::Trigger {
            accepted: yes,
            implemented,
        } => json!({
            "status": if *implemented { accepted(*yes) } else { "NotImplemented" },
        }),
        Reply::SetVariables(results) => json!({
            "setVariableResult": results.iter().map(|(c, v, status)| {
                let (component, variable) = component_variable(c, v);
                json!({
                    "attributeStatus": match status {
                        SetStatus::Accepted => "Accepted",
                        SetStatus::Rejected => "Rejected",
                        SetStatus::Unknown => "UnknownVariable",
                    },
                    "component": component,
                    "variable": variable,
                })
            }).collect::<Vec<_>>(),
        }),
        Reply::GetVariables(results) => json!({
            "getVariableResult": results.iter().map(|(c, v, value)| {
                let (component, variable) = component_variable(c, v);
                let mut result = json!({
                    "attributeStatus": if value.is_some() { "Accepted" } else { "UnknownVariable" },
                    "component": component,
                    "variable": variable,
                });
                if let Some(value) = value {
                    result["attributeValue"] = json!(value);
                }
                result
            }).collect::<Vec<_>>(),
        }),
        Reply::DataTransfer => json!({ "status": "Accepted" }),
        Reply::ChangeConfiguration(_) | Reply::GetConfiguration { .. } => json!({}),
    }
}

#[cfg(test)]
mod tests {
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
        let reading = Reading {
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
                state: ConnectorState::Charging,
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
                reason: StopReason::Reset { hard: true },
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
            (
                "RequestStartTransaction",
                Reply::StartStop {
                    accepted: true,
                    transaction_id: Some("t".into()),
                },
            ),
            (
                "RequestStopTransaction",
                Reply::StartStop {
                    accepted: false,
                    transaction_id: None,
                },
            ),
            ("Reset", Reply::Reset { accepted: true }),
            (
                "TriggerMessage",
                Reply::Trigger {
                    accepted: true,
                    implemented: false,
                },
            ),
            (
                "SetVariables",
                Reply::SetVariables(vec![(
                    "OCPPCommCtrlr".into(),
                    "X".into(),
                    SetStatus::Unknown,
                )]),
            ),
            (
                "GetVariables",
                Reply::GetVariables(vec![(
                    "OCPPCommCtrlr".into(),
                    "HeartbeatInterval".into(),
                    Some("10".into()),
                )]),
            ),
            ("DataTransfer", Reply::DataTransfer),
        ];
        for version in [OcppVersion::V2_0_1, OcppVersion::V2_1] {
            for (action, reply) in &cases_v2 {
                let response = response(version, action, reply).unwrap();
                assert_eq!(response.action(), *action);
            }
        }
        let stop = Reply::StartStop {
            accepted: true,
            transaction_id: None,
        };
        let r = response(OcppVersion::V1_6, "RemoteStopTransaction", &stop).unwrap();
        assert_eq!(r.action(), "RemoteStopTransaction");
        let get = Reply::GetConfiguration {
            known: vec![("HeartbeatInterval".into(), "10".into(), false)],
            unknown: vec![],
        };
        assert_eq!(
            response(OcppVersion::V1_6, "GetConfiguration", &get)
                .unwrap()
                .action(),
            "GetConfiguration"
        );
    }

    #[test]
    fn commands_read_in_both_families() {
        let request = Request::from(
            v2_0_1::decode_call(
                "RequestStartTransaction",
                r#"{"idToken":{"idToken":"ABC","type":"ISO14443"},"remoteStartId":9,"evseId":1}"#,
            )
            .unwrap(),
        );
        assert_eq!(
            read_command(&request),
            Command::RemoteStart {
                id_tag: "ABC".into(),
                connector: Some(1),
                remote_start_id: Some(9)
            }
        );
        let request = Request::from(v1_6::Request::from(v1_6::DataTransferRequest {
            vendor_id: "bench".into(),
            message_id: Some("ts".into()),
            data: Some("1:2".into()),
        }));
        assert!(
            matches!(read_command(&request), Command::DataTransfer { data: Some(d), .. } if d == "1:2")
        );
        let request = Request::from(
            v2_1::decode_call(
                "DataTransfer",
                r#"{"vendorId":"bench","messageId":"ts","data":"5:6"}"#,
            )
            .unwrap(),
        );
        assert!(
            matches!(read_command(&request), Command::DataTransfer { data: Some(d), .. } if d == "5:6")
        );
    }
}
