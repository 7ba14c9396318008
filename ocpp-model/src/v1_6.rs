//! OCPP 1.6: its messages read as events, answers and commands made into its messages.
//!
//! 1.6 differs from 2.x where the model says so: three transaction actions, the CSMS's integer
//! transaction ids, idTags without a type, signed meter values as samples of their own.

use ocpp_messages::v1_6 as m;
use ocpp_messages::{DateTime, OcppVersion, Request, Response};

use crate::command::{outcome_of, CommandOutcome};
use crate::meter::{DEFAULT_CONTEXT, DEFAULT_LOCATION, DEFAULT_MEASURAND, DEFAULT_UNIT};
use crate::{
    number, Authorization, AuthorizationRequested, BootReason, Booted, ChargingLimit,
    ChargingProfilePurpose, Command, ConnectorStatus, EventAnswer, FirmwareStatus, IdToken,
    LogStatus, MessageTrigger, MeterReading, MeterReadings, ModelError, ResetKind, SecurityEvent,
    SignedMeterValue, StationEvent, StatusChanged, StopReason, TransactionEnded, TransactionId,
    TransactionStarted, TransactionUpdated,
};

const V: OcppVersion = OcppVersion::V1_6;

fn out_of_range(field: &'static str) -> ModelError {
    ModelError::OutOfRange { field, version: V }
}

fn not_expressible(command: &'static str) -> ModelError {
    ModelError::NotExpressible {
        command,
        version: V,
    }
}

/// One 1.6 sample, of either of its two generated shapes (MeterValues' `SampledValue` and
/// StopTransaction's `TransactionDataSampledValue`, which differ only in their unit's type).
struct Sample<'a> {
    value: &'a str,
    context: Option<&'a str>,
    signed: bool,
    measurand: Option<&'a str>,
    phase: Option<&'a str>,
    location: Option<&'a str>,
    unit: Option<&'a str>,
}

macro_rules! sample {
    ($s:expr) => {
        Sample {
            value: &$s.value,
            context: $s.context.as_ref().map(|v| v.as_str()),
            signed: matches!($s.format, Some(m::ValueFormat::SignedData)),
            measurand: $s.measurand.as_ref().map(|v| v.as_str()),
            phase: $s.phase.as_ref().map(|v| v.as_str()),
            location: $s.location.as_ref().map(|v| v.as_str()),
            unit: $s.unit.as_ref().map(|v| v.as_str()),
        }
    };
}

/// The readings of one 1.6 `MeterValue`: plain samples in order, each `SignedData` sample
/// folded into the plain sample of the same reading (measurand, phase, location, context) as
/// its [`SignedMeterValue`]; a signed sample with no such partner is a reading of its own with
/// no value.
fn readings_of(timestamp: &DateTime, samples: &[Sample<'_>], into: &mut Vec<MeterReading>) {
    let first = into.len();
    let reading = |s: &Sample<'_>| MeterReading {
        timestamp: timestamp.clone(),
        measurand: s.measurand.unwrap_or(DEFAULT_MEASURAND).to_owned(),
        phase: s.phase.map(str::to_owned),
        location: s.location.unwrap_or(DEFAULT_LOCATION).to_owned(),
        unit: s.unit.unwrap_or(DEFAULT_UNIT).to_owned(),
        multiplier: 0,
        context: s.context.unwrap_or(DEFAULT_CONTEXT).to_owned(),
        value: None,
        signed: None,
    };
    for sample in samples.iter().filter(|s| !s.signed) {
        let mut plain = reading(sample);
        plain.value = sample.value.parse().ok();
        into.push(plain);
    }
    for sample in samples.iter().filter(|s| s.signed) {
        let mut signed = reading(sample);
        let partner = into[first..]
            .iter_mut()
            .find(|r| r.signed.is_none() && r.same_reading(&signed));
        let value = SignedMeterValue::new(sample.value);
        match partner {
            Some(partner) => partner.signed = Some(value),
            None => {
                signed.signed = Some(value);
                into.push(signed);
            }
        }
    }
}

fn register(timestamp: &DateTime, wh: i32, context: &str) -> MeterReading {
    let mut reading = MeterReading::new(timestamp.clone(), DEFAULT_MEASURAND, number::from_i32(wh));
    reading.context = context.to_owned();
    reading
}

fn id(value: i32) -> Option<u32> {
    u32::try_from(value).ok()
}

/// The event of a 1.6 request; `None`: [`StationEvent::Other`].
pub(crate) fn event(request: &m::Request) -> Option<StationEvent> {
    Some(match request {
        m::Request::BootNotification(boot) => StationEvent::Booted(Booted {
            vendor: boot.charge_point_vendor.clone(),
            model: boot.charge_point_model.clone(),
            serial: boot
                .charge_point_serial_number
                .clone()
                .or_else(|| boot.charge_box_serial_number.clone()),
            firmware: boot.firmware_version.clone(),
            reason: BootReason::Unknown,
            raw_reason: None,
        }),
        m::Request::StatusNotification(status) => StationEvent::StatusChanged(StatusChanged {
            evse: id(status.connector_id)?,
            connector: None,
            status: ConnectorStatus::from_1_6(status.status.as_str())?,
            raw_status: status.status.as_str().to_owned(),
            error_code: Some(status.error_code.as_str().to_owned()),
            timestamp: status.timestamp.clone(),
        }),
        m::Request::Authorize(authorize) => {
            StationEvent::AuthorizationRequested(AuthorizationRequested {
                token: IdToken::from_id_tag(authorize.id_tag.as_str()),
            })
        }
        m::Request::StartTransaction(start) => {
            StationEvent::TransactionStarted(TransactionStarted {
                id: None,
                evse: Some(id(start.connector_id)?),
                connector: None,
                token: Some(IdToken::from_id_tag(start.id_tag.as_str())),
                trigger: None,
                raw_trigger: None,
                seq_no: None,
                offline: false,
                timestamp: start.timestamp.clone(),
                readings: vec![register(
                    &start.timestamp,
                    start.meter_start,
                    "Transaction.Begin",
                )],
                reservation: start.reservation_id,
                remote_start_id: None,
                charging_state: None,
            })
        }
        m::Request::MeterValues(values) => {
            let mut readings = Vec::new();
            for value in &values.meter_value {
                let samples: Vec<_> = value.sampled_value.iter().map(|s| sample!(s)).collect();
                readings_of(&value.timestamp, &samples, &mut readings);
            }
            let evse = id(values.connector_id)?;
            match values.transaction_id {
                Some(transaction) => StationEvent::TransactionUpdated(TransactionUpdated {
                    id: TransactionId::Number(transaction),
                    evse: Some(evse),
                    connector: None,
                    token: None,
                    trigger: None,
                    raw_trigger: None,
                    seq_no: None,
                    offline: false,
                    timestamp: values.meter_value.last()?.timestamp.clone(),
                    readings,
                    charging_state: None,
                }),
                None => StationEvent::MeterReadings(MeterReadings { evse, readings }),
            }
        }
        m::Request::StopTransaction(stop) => {
            let mut readings = Vec::new();
            for value in stop.transaction_data.iter().flatten() {
                let samples: Vec<_> = value.sampled_value.iter().map(|s| sample!(s)).collect();
                readings_of(&value.timestamp, &samples, &mut readings);
            }
            readings.push(register(
                &stop.timestamp,
                stop.meter_stop,
                "Transaction.End",
            ));
            let raw_reason = stop.reason.as_ref().map(|r| r.as_str().to_owned());
            StationEvent::TransactionEnded(TransactionEnded {
                id: TransactionId::Number(stop.transaction_id),
                evse: None,
                connector: None,
                token: stop.id_tag.as_deref().map(IdToken::from_id_tag),
                trigger: None,
                raw_trigger: None,
                reason: raw_reason
                    .as_deref()
                    .map_or(StopReason::Local, StopReason::from_1_6),
                raw_reason,
                seq_no: None,
                offline: false,
                timestamp: stop.timestamp.clone(),
                readings,
                charging_state: None,
            })
        }
        m::Request::Heartbeat(_) => StationEvent::Heartbeat(crate::Heartbeat),
        m::Request::SecurityEventNotification(event) => {
            StationEvent::SecurityEvent(SecurityEvent {
                kind: event.r#type.clone(),
                timestamp: event.timestamp.clone(),
                tech_info: event.tech_info.clone(),
            })
        }
        m::Request::FirmwareStatusNotification(status) => {
            StationEvent::FirmwareStatus(FirmwareStatus {
                status: status.status.as_str().to_owned(),
                request_id: None,
                signed_update: false,
            })
        }
        m::Request::SignedFirmwareStatusNotification(status) => {
            StationEvent::FirmwareStatus(FirmwareStatus {
                status: status.status.as_str().to_owned(),
                request_id: status.request_id,
                signed_update: true,
            })
        }
        m::Request::LogStatusNotification(status) => StationEvent::LogStatus(LogStatus {
            status: status.status.as_str().to_owned(),
            request_id: status.request_id,
        }),
        _ => return None,
    })
}

fn id_tag(token: &IdToken, field: &'static str) -> Result<String, ModelError> {
    if token.value.chars().count() > 20 {
        return Err(out_of_range(field));
    }
    Ok(token.value.clone())
}

fn id_tag_info(authorization: &Authorization) -> Result<m::IdTagInfo, ModelError> {
    let mut info = m::IdTagInfo::new(m::AuthorizationStatus::from_wire(
        authorization.status.for_1_6().as_str(),
    ));
    if let Some(expiry) = &authorization.expiry {
        info = info.with_expiry_date(expiry.clone());
    }
    if let Some(group) = &authorization.group {
        info = info.with_parent_id_tag(id_tag(group, "parentIdTag")?);
    }
    Ok(info)
}

/// The 1.6 response answering `event` with `answer`.
pub(crate) fn respond(event: &StationEvent, answer: &EventAnswer) -> Result<Response, ModelError> {
    let missing = |field| ModelError::Missing {
        event: event.name(),
        field,
        version: V,
    };
    Ok(match (event, answer) {
        (StationEvent::Booted(_), EventAnswer::Boot(boot)) => m::BootNotificationResponse::new(
            m::RegistrationStatus::from_wire(boot.status.as_str()),
            boot.current_time.clone(),
            i32::try_from(boot.interval_s).map_err(|_| out_of_range("interval"))?,
        )
        .into(),
        (StationEvent::Heartbeat(_), EventAnswer::Heartbeat { current_time }) => {
            m::HeartbeatResponse::new(current_time.clone()).into()
        }
        (StationEvent::AuthorizationRequested(_), EventAnswer::Authorization(authorization)) => {
            m::AuthorizeResponse::new(id_tag_info(authorization)?).into()
        }
        (
            StationEvent::TransactionStarted(_),
            EventAnswer::Transaction {
                transaction_id,
                authorization,
                ..
            },
        ) => {
            let id = transaction_id.ok_or_else(|| missing("transaction_id"))?;
            let authorization = authorization
                .as_ref()
                .ok_or_else(|| missing("authorization"))?;
            m::StartTransactionResponse::new(id_tag_info(authorization)?, id).into()
        }
        (StationEvent::TransactionEnded(_), EventAnswer::Transaction { authorization, .. }) => {
            let mut response = m::StopTransactionResponse::default();
            if let Some(authorization) = authorization {
                response = response.with_id_tag_info(id_tag_info(authorization)?);
            }
            response.into()
        }
        (StationEvent::TransactionEnded(_), EventAnswer::Received) => {
            m::StopTransactionResponse::default().into()
        }
        (
            StationEvent::TransactionUpdated(_) | StationEvent::MeterReadings(_),
            EventAnswer::Received | EventAnswer::Transaction { .. },
        ) => m::MeterValuesResponse::default().into(),
        (StationEvent::StatusChanged(_), EventAnswer::Received) => {
            m::StatusNotificationResponse::default().into()
        }
        (StationEvent::SecurityEvent(_), EventAnswer::Received) => {
            m::SecurityEventNotificationResponse::default().into()
        }
        (StationEvent::FirmwareStatus(status), EventAnswer::Received) => {
            if status.signed_update {
                m::SignedFirmwareStatusNotificationResponse::default().into()
            } else {
                m::FirmwareStatusNotificationResponse::default().into()
            }
        }
        (StationEvent::LogStatus(_), EventAnswer::Received) => {
            m::LogStatusNotificationResponse::default().into()
        }
        (StationEvent::Other(request), _) => {
            return Err(ModelError::NotModelled {
                action: request.action(),
            })
        }
        (event, answer) => return Err(answer.mismatch(event)),
    })
}

/// 1.6 knows one connector per EVSE: only `None` or 1 can be said.
fn single_connector(connector: Option<u32>, command: &'static str) -> Result<(), ModelError> {
    match connector {
        None | Some(1) => Ok(()),
        Some(_) => Err(not_expressible(command)),
    }
}

fn int(value: u32, field: &'static str) -> Result<i32, ModelError> {
    i32::try_from(value).map_err(|_| out_of_range(field))
}

fn charging_profile(limit: &ChargingLimit) -> Result<m::ChargingProfile, ModelError> {
    let mut periods = Vec::with_capacity(limit.periods.len());
    for period in &limit.periods {
        let mut p =
            m::ChargingSchedulePeriod::new(int(period.start_s, "startPeriod")?, period.limit);
        if let Some(phases) = period.phases {
            p = p.with_number_phases(int(phases, "numberPhases")?);
        }
        periods.push(p);
    }
    let unit = match limit.unit {
        crate::RateUnit::Amps => m::ChargingRateUnitType::A,
        crate::RateUnit::Watts => m::ChargingRateUnitType::W,
    };
    let mut schedule = m::ChargingSchedule::new(unit, periods);
    let kind = match &limit.starts {
        Some(starts) => {
            schedule = schedule.with_start_schedule(starts.clone());
            m::ChargingProfileKindType::Absolute
        }
        None => m::ChargingProfileKindType::Relative,
    };
    let purpose = match limit.purpose {
        ChargingProfilePurpose::StationMax => m::ChargingProfilePurposeType::ChargePointMaxProfile,
        ChargingProfilePurpose::TxDefault => m::ChargingProfilePurposeType::TxDefaultProfile,
        ChargingProfilePurpose::Tx => m::ChargingProfilePurposeType::TxProfile,
    };
    let mut profile = m::ChargingProfile::new(
        limit.id,
        int(limit.stack_level, "stackLevel")?,
        purpose,
        kind,
        schedule,
    );
    match &limit.transaction {
        Some(TransactionId::Number(id)) => profile = profile.with_transaction_id(*id),
        Some(TransactionId::Text(_)) => {
            return Err(not_expressible(
                "SetChargingProfile for a 2.x transaction id",
            ))
        }
        None => {}
    }
    Ok(profile)
}

/// The 1.6 request of `command`.
pub(crate) fn command(command: &Command) -> Result<Request, ModelError> {
    Ok(match command {
        Command::RemoteStart {
            evse, token, limit, ..
        } => {
            let mut request = m::RemoteStartTransactionRequest::new(id_tag(token, "idTag")?);
            if let Some(evse) = evse {
                request = request.with_connector_id(int(*evse, "connectorId")?);
            }
            if let Some(limit) = limit {
                request = request.with_charging_profile(charging_profile(limit)?);
            }
            request.into()
        }
        Command::RemoteStop { transaction } => match transaction {
            TransactionId::Number(id) => m::RemoteStopTransactionRequest::new(*id).into(),
            TransactionId::Text(_) => {
                return Err(not_expressible("RemoteStop of a 2.x transaction id"))
            }
        },
        Command::Reset { kind, evse } => {
            if evse.is_some() {
                return Err(not_expressible("Reset of one EVSE"));
            }
            let kind = match kind {
                ResetKind::Immediate => m::ResetType::Hard,
                ResetKind::Soft => m::ResetType::Soft,
                ResetKind::OnIdle => return Err(not_expressible("Reset OnIdle")),
                ResetKind::ImmediateAndResume => {
                    return Err(not_expressible("Reset ImmediateAndResume"))
                }
            };
            m::ResetRequest::new(kind).into()
        }
        Command::UnlockConnector { evse, connector } => {
            single_connector(*connector, "UnlockConnector of a connector other than 1")?;
            m::UnlockConnectorRequest::new(int(*evse, "connectorId")?).into()
        }
        Command::ChangeAvailability {
            evse,
            connector,
            operative,
        } => {
            single_connector(*connector, "ChangeAvailability of a connector other than 1")?;
            let kind = if *operative {
                m::AvailabilityType::Operative
            } else {
                m::AvailabilityType::Inoperative
            };
            m::ChangeAvailabilityRequest::new(int(evse.unwrap_or(0), "connectorId")?, kind).into()
        }
        Command::TriggerMessage { message, evse } => {
            let requested = match message {
                MessageTrigger::LogStatusNotification => {
                    return Err(not_expressible("TriggerMessage LogStatusNotification"))
                }
                MessageTrigger::TransactionEvent => {
                    return Err(not_expressible("TriggerMessage TransactionEvent"))
                }
                other => m::MessageTrigger::from_wire(other.as_str()),
            };
            let mut request = m::TriggerMessageRequest::new(requested);
            if let Some(evse) = evse {
                request = request.with_connector_id(int(*evse, "connectorId")?);
            }
            request.into()
        }
        Command::SetChargingProfile(limit) => m::SetChargingProfileRequest::new(
            int(limit.evse, "connectorId")?,
            charging_profile(limit)?,
        )
        .into(),
        Command::Configure { setting, value } => {
            m::ChangeConfigurationRequest::new(setting.key_1_6(), value.as_str()).into()
        }
    })
}

/// The command a 1.6 request of the central system says; `None`: another action, or one
/// carrying what [`Command`] does not hold (a remote start's charging profile, a key that is
/// not a [`Setting`](crate::Setting)).
pub(crate) fn read_command(request: &m::Request) -> Option<Command> {
    let id = |value: i32| u32::try_from(value).ok();
    // `None` when there is one and it does not fit.
    let optional = |value: Option<i32>| match value {
        Some(value) => id(value).map(Some),
        None => Some(None),
    };
    Some(match request {
        m::Request::RemoteStartTransaction(r) if r.charging_profile.is_none() => {
            Command::RemoteStart {
                evse: optional(r.connector_id)?,
                token: IdToken::from_id_tag(r.id_tag.as_str()),
                // 1.6 has none: the station's transaction is not tied to the request.
                remote_start_id: 0,
                limit: None,
            }
        }
        m::Request::RemoteStopTransaction(r) => Command::RemoteStop {
            transaction: TransactionId::Number(r.transaction_id),
        },
        m::Request::Reset(r) => Command::Reset {
            kind: match r.r#type.as_str() {
                "Hard" => ResetKind::Immediate,
                "Soft" => ResetKind::Soft,
                _ => return None,
            },
            evse: None,
        },
        m::Request::UnlockConnector(r) => Command::UnlockConnector {
            evse: id(r.connector_id)?,
            connector: None,
        },
        m::Request::ChangeAvailability(r) => Command::ChangeAvailability {
            evse: match r.connector_id {
                0 => None,
                connector => Some(id(connector)?),
            },
            connector: None,
            operative: match r.r#type.as_str() {
                "Operative" => true,
                "Inoperative" => false,
                _ => return None,
            },
        },
        m::Request::TriggerMessage(r) => Command::TriggerMessage {
            message: MessageTrigger::from_wire(r.requested_message.as_str())?,
            evse: optional(r.connector_id)?,
        },
        m::Request::ChangeConfiguration(r) => Command::Configure {
            setting: crate::Setting::from_wire(&r.key)?,
            value: r.value.clone(),
        },
        _ => return None,
    })
}

/// The outcome of a 1.6 response to `command`; `None`: it does not answer it.
pub(crate) fn outcome(command: &Command, response: &m::Response) -> Option<CommandOutcome> {
    let status = match (command, response) {
        (Command::RemoteStart { .. }, m::Response::RemoteStartTransaction(r)) => r.status.as_str(),
        (Command::RemoteStop { .. }, m::Response::RemoteStopTransaction(r)) => r.status.as_str(),
        (Command::Reset { .. }, m::Response::Reset(r)) => r.status.as_str(),
        (Command::UnlockConnector { .. }, m::Response::UnlockConnector(r)) => r.status.as_str(),
        (Command::ChangeAvailability { .. }, m::Response::ChangeAvailability(r)) => {
            r.status.as_str()
        }
        (Command::TriggerMessage { .. }, m::Response::TriggerMessage(r)) => r.status.as_str(),
        (Command::SetChargingProfile(_), m::Response::SetChargingProfile(r)) => r.status.as_str(),
        (Command::Configure { .. }, m::Response::ChangeConfiguration(r)) => r.status.as_str(),
        _ => return None,
    };
    Some(CommandOutcome::of(outcome_of(status), status))
}
