//! The charge point's own CALLs, per version (1.6 typed, 2.0.1 and 2.1 as schema-checked JSON),
//! and what the answers to them say.

use ocpp_messages::v1_6;
use ocpp_messages::version::OcppVersion;
use ocpp_messages::DateTime;
use ocpp_proto::{DecodeOptions, Request, Response};
use serde_json::{json, Value};

use super::{ConnectorStage, MeterSnapshot, Outgoing, PayloadError, TxRef};

/// The request for `message` in `version`.
pub fn request(version: OcppVersion, message: &Outgoing) -> Result<Request, PayloadError> {
    match version {
        OcppVersion::V1_6 => Ok(Request::from(request_v16(message))),
        OcppVersion::V2_0_1 | OcppVersion::V2_1 => {
            // Built as JSON, then checked against the version's schema.
            let (action, payload) = request_v2(message);
            Request::decode(
                version,
                action,
                &payload.to_string(),
                &DecodeOptions::strict(),
            )
            .map_err(|e| PayloadError(format!("{action}: {e}")))
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
                ConnectorStage::Available => v1_6::ChargePointStatus::Available,
                ConnectorStage::Preparing => v1_6::ChargePointStatus::Preparing,
                ConnectorStage::Charging => v1_6::ChargePointStatus::Charging,
                ConnectorStage::Finishing => v1_6::ChargePointStatus::Finishing,
            },
            timestamp: Some(DateTime::now()),
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
            timestamp: DateTime::now(),
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
            timestamp: DateTime::now(),
            transaction_id: tx.csms_id.unwrap_or(0),
            reason: Some(v1_6::Reason::from_wire(reason.as_str_in(OcppVersion::V1_6))),
            transaction_data: None,
        }
        .into(),
    }
}

fn meter_value_v16(reading: &MeterSnapshot, context: v1_6::ReadingContext) -> v1_6::MeterValue {
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
        timestamp: DateTime::now(),
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
    let now = DateTime::now();
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
                "reason": reason.as_str(),
            }),
        ),
        Outgoing::Heartbeat => ("Heartbeat", json!({})),
        Outgoing::Status { connector, state } => (
            "StatusNotification",
            json!({
                "timestamp": now,
                "connectorStatus": match state {
                    ConnectorStage::Available => "Available",
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
            // The same in 2.0.1 and 2.1.
            let (trigger, stopped) = (
                reason.trigger_reason(),
                reason.as_str_in(OcppVersion::V2_0_1),
            );
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
    reading: &MeterSnapshot,
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
        "timestamp": DateTime::now(),
        "triggerReason": trigger,
        "seqNo": tx.seq_no,
        "transactionInfo": info,
        "meterValue": [meter_value_v2(reading, context)],
    })
}

fn meter_value_v2(reading: &MeterSnapshot, context: &str) -> Value {
    json!({
        "timestamp": DateTime::now(),
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

/// What the answer to a CALL of ours says, as far as the charge point cares.
#[derive(Debug, Clone, PartialEq)]
pub enum CallAnswer {
    /// BootNotification: (accepted, pending, interval in seconds).
    Boot {
        /// Accepted (rather than Pending or Rejected).
        accepted: bool,
        /// Pending: the CSMS wants the BootNotification again after `interval_s` (boot
        /// admission, say).
        pending: bool,
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
pub fn read_answer(response: &Response) -> CallAnswer {
    match response {
        Response::V1_6(r) => match r.as_ref() {
            v1_6::Response::BootNotification(b) => CallAnswer::Boot {
                accepted: b.status == v1_6::RegistrationStatus::Accepted,
                pending: b.status == v1_6::RegistrationStatus::Pending,
                interval_s: i64::from(b.interval),
            },
            v1_6::Response::Authorize(a) => CallAnswer::IdTag {
                accepted: Some(a.id_tag_info.status == v1_6::AuthorizationStatus::Accepted),
                transaction_id: None,
            },
            v1_6::Response::StartTransaction(s) => CallAnswer::IdTag {
                accepted: Some(s.id_tag_info.status == v1_6::AuthorizationStatus::Accepted),
                transaction_id: Some(s.transaction_id),
            },
            _ => CallAnswer::Other,
        },
        other => {
            let json = serde_json::to_value(other).unwrap_or_default();
            match other.action() {
                "BootNotification" => CallAnswer::Boot {
                    accepted: json["status"] == "Accepted",
                    pending: json["status"] == "Pending",
                    interval_s: json["interval"].as_i64().unwrap_or(0),
                },
                "Authorize" | "TransactionEvent" => CallAnswer::IdTag {
                    accepted: json["idTokenInfo"]["status"]
                        .as_str()
                        .map(|s| s == "Accepted"),
                    transaction_id: None,
                },
                _ => CallAnswer::Other,
            }
        }
    }
}
