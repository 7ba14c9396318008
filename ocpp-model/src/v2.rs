//! OCPP 2.0.1 and 2.1: their messages read as events, answers and commands made into their
//! messages. One text for both versions (a macro instantiated per version), since 2.1 keeps
//! 2.0.1's shapes; where they differ (2.1's free-text id token type, its optional signing
//! method and public key, its optional period limit, unsigned ids), a small function per
//! version passed in says how.

use crate::ModelError;

/// A signed meter value's optional text: 2.0.1 requires the field (a `String`, empty when left
/// out), 2.1 makes it optional; both read as `None` when empty.
trait OptionalText {
    fn text(&self) -> Option<String>;
}

impl OptionalText for String {
    fn text(&self) -> Option<String> {
        (!self.is_empty()).then(|| self.clone())
    }
}

impl OptionalText for Option<String> {
    fn text(&self) -> Option<String> {
        self.as_ref().and_then(OptionalText::text)
    }
}

fn convert<T, U: TryFrom<T>>(
    value: T,
    field: &'static str,
    version: ocpp_messages::OcppVersion,
) -> Result<U, ModelError> {
    U::try_from(value).map_err(|_| ModelError::OutOfRange { field, version })
}

macro_rules! v2 {
    (
        $version:ident,
        $v:expr,
        id_token_type: $id_token_type:expr,
        period: $period:expr $(,)?
    ) => {
        pub(crate) mod $version {
            use ocpp_messages::$version as m;
            use ocpp_messages::{OcppVersion, Request, Response};

            use super::{convert, OptionalText};
            use crate::command::{outcome_of, CommandOutcome};
            use crate::meter::{
                DEFAULT_CONTEXT, DEFAULT_LOCATION, DEFAULT_MEASURAND, DEFAULT_UNIT,
            };
            use crate::{
                Authorization, AuthorizationRequested, BootReason, Booted, ChargingLimit, Command,
                ConnectorStatus, EventAnswer, FirmwareStatus, IdToken, IdTokenType, LogStatus,
                MeterReading, MeterReadings, ModelError, ResetKind, SecurityEvent,
                SignedMeterValue, StationEvent, StatusChanged, StopReason, TransactionEnded,
                TransactionId, TransactionStarted, TransactionUpdated, TriggerReason,
            };

            const V: OcppVersion = $v;

            fn not_expressible(command: &'static str) -> ModelError {
                ModelError::NotExpressible {
                    command,
                    version: V,
                }
            }

            fn id_token(token: &m::IdToken) -> IdToken {
                IdToken::new(
                    token.id_token.as_str(),
                    IdTokenType::from_wire(token.r#type.as_str()),
                )
            }

            fn id_token_out(token: &IdToken) -> m::IdToken {
                m::IdToken::new(token.value.as_str(), ($id_token_type)(token.kind.as_str()))
            }

            fn readings(values: &[m::MeterValue]) -> Option<Vec<MeterReading>> {
                let mut readings = Vec::new();
                for value in values {
                    for sample in &value.sampled_value {
                        let unit = sample.unit_of_measure.as_ref();
                        readings.push(MeterReading {
                            timestamp: value.timestamp.clone(),
                            measurand: sample
                                .measurand
                                .as_ref()
                                .map_or(DEFAULT_MEASURAND, |v| v.as_str())
                                .to_owned(),
                            phase: sample.phase.as_ref().map(|v| v.as_str().to_owned()),
                            location: sample
                                .location
                                .as_ref()
                                .map_or(DEFAULT_LOCATION, |v| v.as_str())
                                .to_owned(),
                            unit: unit
                                .and_then(|u| u.unit.as_deref())
                                .unwrap_or(DEFAULT_UNIT)
                                .to_owned(),
                            multiplier: unit.and_then(|u| u.multiplier).unwrap_or(0),
                            context: sample
                                .context
                                .as_ref()
                                .map_or(DEFAULT_CONTEXT, |v| v.as_str())
                                .to_owned(),
                            value: Some(sample.value),
                            signed: sample
                                .signed_meter_value
                                .as_ref()
                                .map(|s| SignedMeterValue {
                                    signed_meter_data: s.signed_meter_data.clone(),
                                    signing_method: s.signing_method.text(),
                                    encoding_method: s.encoding_method.text(),
                                    public_key: s.public_key.text(),
                                }),
                        });
                    }
                }
                Some(readings)
            }

            fn transaction_event(event: &m::TransactionEventRequest) -> Option<StationEvent> {
                let id = TransactionId::Text(event.transaction_info.transaction_id.clone());
                let evse = match &event.evse {
                    Some(evse) => Some(u32::try_from(evse.id).ok()?),
                    None => None,
                };
                let connector = match event.evse.as_ref().and_then(|e| e.connector_id) {
                    Some(connector) => Some(u32::try_from(connector).ok()?),
                    None => None,
                };
                let token = event.id_token.as_ref().map(id_token);
                let raw_trigger = Some(event.trigger_reason.as_str().to_owned());
                let trigger = Some(
                    TriggerReason::from_wire(event.trigger_reason.as_str())
                        .unwrap_or(TriggerReason::Unlisted),
                );
                let seq_no = Some(u32::try_from(event.seq_no).ok()?);
                let offline = event.offline.unwrap_or(false);
                let timestamp = event.timestamp.clone();
                let readings = readings(event.meter_value.as_deref().unwrap_or_default())?;
                let charging_state = event
                    .transaction_info
                    .charging_state
                    .as_ref()
                    .map(|state| state.as_str().to_owned());
                Some(match event.event_type {
                    m::TransactionEventEnum::Started => {
                        StationEvent::TransactionStarted(TransactionStarted {
                            id: Some(id),
                            evse,
                            connector,
                            token,
                            trigger,
                            raw_trigger,
                            seq_no,
                            offline,
                            timestamp,
                            readings,
                            reservation: match event.reservation_id {
                                Some(r) => Some(i32::try_from(r).ok()?),
                                None => None,
                            },
                            remote_start_id: event.transaction_info.remote_start_id,
                            charging_state,
                        })
                    }
                    m::TransactionEventEnum::Updated => {
                        StationEvent::TransactionUpdated(TransactionUpdated {
                            id,
                            evse,
                            connector,
                            token,
                            trigger,
                            raw_trigger,
                            seq_no,
                            offline,
                            timestamp,
                            readings,
                            charging_state,
                        })
                    }
                    m::TransactionEventEnum::Ended => {
                        let raw_reason = event
                            .transaction_info
                            .stopped_reason
                            .as_ref()
                            .map(|r| r.as_str().to_owned());
                        StationEvent::TransactionEnded(TransactionEnded {
                            id,
                            evse,
                            connector,
                            token,
                            trigger,
                            raw_trigger,
                            reason: raw_reason.as_deref().map_or(StopReason::Local, |r| {
                                StopReason::from_wire(r).unwrap_or(StopReason::Unlisted)
                            }),
                            raw_reason,
                            seq_no,
                            offline,
                            timestamp,
                            readings,
                            charging_state,
                        })
                    }
                    _ => return None,
                })
            }

            /// The event of a request of this version; `None`: [`StationEvent::Other`].
            pub(crate) fn event(request: &m::Request) -> Option<StationEvent> {
                Some(match request {
                    m::Request::BootNotification(boot) => StationEvent::Booted(Booted {
                        vendor: boot.charging_station.vendor_name.clone(),
                        model: boot.charging_station.model.clone(),
                        serial: boot.charging_station.serial_number.clone(),
                        firmware: boot.charging_station.firmware_version.clone(),
                        reason: BootReason::from_wire(boot.reason.as_str())
                            .unwrap_or(BootReason::Unknown),
                        raw_reason: Some(boot.reason.as_str().to_owned()),
                    }),
                    m::Request::StatusNotification(status) => {
                        StationEvent::StatusChanged(StatusChanged {
                            evse: u32::try_from(status.evse_id).ok()?,
                            connector: Some(u32::try_from(status.connector_id).ok()?),
                            status: ConnectorStatus::from_wire(status.connector_status.as_str())?,
                            raw_status: status.connector_status.as_str().to_owned(),
                            error_code: None,
                            timestamp: Some(status.timestamp.clone()),
                        })
                    }
                    m::Request::Authorize(authorize) => {
                        StationEvent::AuthorizationRequested(AuthorizationRequested {
                            token: id_token(&authorize.id_token),
                        })
                    }
                    m::Request::TransactionEvent(event) => transaction_event(event)?,
                    m::Request::MeterValues(values) => StationEvent::MeterReadings(MeterReadings {
                        evse: u32::try_from(values.evse_id).ok()?,
                        readings: readings(&values.meter_value)?,
                    }),
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
                            request_id: status.request_id,
                            signed_update: false,
                        })
                    }
                    m::Request::LogStatusNotification(status) => {
                        StationEvent::LogStatus(LogStatus {
                            status: status.status.as_str().to_owned(),
                            request_id: status.request_id,
                        })
                    }
                    _ => return None,
                })
            }

            fn id_token_info(authorization: &Authorization) -> m::IdTokenInfo {
                let mut info = m::IdTokenInfo::new(m::AuthorizationStatusEnum::from_wire(
                    authorization.status.as_str(),
                ));
                if let Some(expiry) = &authorization.expiry {
                    info = info.with_cache_expiry_date_time(expiry.clone());
                }
                if let Some(group) = &authorization.group {
                    info = info.with_group_id_token(id_token_out(group));
                }
                info
            }

            /// The response of this version answering `event` with `answer`.
            pub(crate) fn respond(
                event: &StationEvent,
                answer: &EventAnswer,
            ) -> Result<Response, ModelError> {
                Ok(match (event, answer) {
                    (StationEvent::Booted(_), EventAnswer::Boot(boot)) => {
                        m::BootNotificationResponse::new(
                            boot.current_time.clone(),
                            convert(boot.interval_s, "interval", V)?,
                            m::RegistrationStatusEnum::from_wire(boot.status.as_str()),
                        )
                        .into()
                    }
                    (StationEvent::Heartbeat(_), EventAnswer::Heartbeat { current_time }) => {
                        m::HeartbeatResponse::new(current_time.clone()).into()
                    }
                    (
                        StationEvent::AuthorizationRequested(_),
                        EventAnswer::Authorization(authorization),
                    ) => m::AuthorizeResponse::new(id_token_info(authorization)).into(),
                    (
                        StationEvent::TransactionStarted(_)
                        | StationEvent::TransactionUpdated(_)
                        | StationEvent::TransactionEnded(_),
                        EventAnswer::Transaction {
                            authorization,
                            total_cost,
                            ..
                        },
                    ) => {
                        let mut response = m::TransactionEventResponse::default();
                        if let Some(authorization) = authorization {
                            response = response.with_id_token_info(id_token_info(authorization));
                        }
                        if let Some(cost) = total_cost {
                            response = response.with_total_cost(*cost);
                        }
                        response.into()
                    }
                    (
                        StationEvent::TransactionStarted(_)
                        | StationEvent::TransactionUpdated(_)
                        | StationEvent::TransactionEnded(_),
                        EventAnswer::Received,
                    ) => m::TransactionEventResponse::default().into(),
                    (StationEvent::MeterReadings(_), EventAnswer::Received) => {
                        m::MeterValuesResponse::default().into()
                    }
                    (StationEvent::StatusChanged(_), EventAnswer::Received) => {
                        m::StatusNotificationResponse::default().into()
                    }
                    (StationEvent::SecurityEvent(_), EventAnswer::Received) => {
                        m::SecurityEventNotificationResponse::default().into()
                    }
                    (StationEvent::FirmwareStatus(_), EventAnswer::Received) => {
                        m::FirmwareStatusNotificationResponse::default().into()
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

            fn evse(id: u32, connector: Option<u32>) -> Result<m::EVSE, ModelError> {
                let mut evse = m::EVSE::new(convert(id, "evse", V)?);
                if let Some(connector) = connector {
                    evse = evse.with_connector_id(convert(connector, "connectorId", V)?);
                }
                Ok(evse)
            }

            fn charging_profile(limit: &ChargingLimit) -> Result<m::ChargingProfile, ModelError> {
                let mut periods = Vec::with_capacity(limit.periods.len());
                for period in &limit.periods {
                    let mut p = ($period)(convert(period.start_s, "startPeriod", V)?, period.limit);
                    if let Some(phases) = period.phases {
                        p = p.with_number_phases(convert(phases, "numberPhases", V)?);
                    }
                    periods.push(p);
                }
                let mut schedule = m::ChargingSchedule::new(
                    limit.id,
                    m::ChargingRateUnitEnum::from_wire(limit.unit.as_str()),
                    periods,
                );
                let kind = match &limit.starts {
                    Some(starts) => {
                        schedule = schedule.with_start_schedule(starts.clone());
                        m::ChargingProfileKindEnum::Absolute
                    }
                    None => m::ChargingProfileKindEnum::Relative,
                };
                let mut profile = m::ChargingProfile::new(
                    limit.id,
                    convert(limit.stack_level, "stackLevel", V)?,
                    m::ChargingProfilePurposeEnum::from_wire(limit.purpose.as_str()),
                    kind,
                    vec![schedule],
                );
                match &limit.transaction {
                    Some(TransactionId::Text(id)) => {
                        profile = profile.with_transaction_id(id.as_str())
                    }
                    Some(TransactionId::Number(_)) => {
                        return Err(not_expressible(
                            "SetChargingProfile for a 1.6 transaction id",
                        ))
                    }
                    None => {}
                }
                Ok(profile)
            }

            /// The request of this version saying `command`.
            pub(crate) fn command(command: &Command) -> Result<Request, ModelError> {
                Ok(match command {
                    Command::RemoteStart {
                        evse,
                        token,
                        remote_start_id,
                        limit,
                    } => {
                        let mut request = m::RequestStartTransactionRequest::new(
                            id_token_out(token),
                            *remote_start_id,
                        );
                        if let Some(evse) = evse {
                            request = request.with_evse_id(convert(*evse, "evseId", V)?);
                        }
                        if let Some(limit) = limit {
                            request = request.with_charging_profile(charging_profile(limit)?);
                        }
                        request.into()
                    }
                    Command::RemoteStop { transaction } => match transaction {
                        TransactionId::Text(id) => {
                            m::RequestStopTransactionRequest::new(id.as_str()).into()
                        }
                        TransactionId::Number(_) => {
                            return Err(not_expressible("RemoteStop of a 1.6 transaction id"))
                        }
                    },
                    Command::Reset { kind, evse } => {
                        let kind = match kind {
                            ResetKind::Immediate => m::ResetEnum::Immediate,
                            ResetKind::OnIdle => m::ResetEnum::OnIdle,
                            ResetKind::Soft => return Err(not_expressible("Reset Soft")),
                            ResetKind::ImmediateAndResume => {
                                match m::ResetEnum::from_wire("ImmediateAndResume") {
                                    kind if kind.is_recognized() => kind,
                                    _ => return Err(not_expressible("Reset ImmediateAndResume")),
                                }
                            }
                        };
                        let mut request = m::ResetRequest::new(kind);
                        if let Some(evse) = evse {
                            request = request.with_evse_id(convert(*evse, "evseId", V)?);
                        }
                        request.into()
                    }
                    Command::UnlockConnector { evse, connector } => m::UnlockConnectorRequest::new(
                        convert(*evse, "evseId", V)?,
                        convert(connector.unwrap_or(1), "connectorId", V)?,
                    )
                    .into(),
                    Command::ChangeAvailability {
                        evse: target,
                        connector,
                        operative,
                    } => {
                        let status = if *operative {
                            m::OperationalStatusEnum::Operative
                        } else {
                            m::OperationalStatusEnum::Inoperative
                        };
                        let mut request = m::ChangeAvailabilityRequest::new(status);
                        match (target, connector) {
                            (Some(id), connector) => {
                                request = request.with_evse(evse(*id, *connector)?)
                            }
                            (None, Some(_)) => {
                                return Err(not_expressible(
                                    "ChangeAvailability of a connector without its EVSE",
                                ))
                            }
                            (None, None) => {}
                        }
                        request.into()
                    }
                    Command::TriggerMessage {
                        message,
                        evse: target,
                    } => {
                        let requested = m::MessageTriggerEnum::from_wire(message.as_str());
                        if !requested.is_recognized() {
                            return Err(not_expressible(
                                "TriggerMessage DiagnosticsStatusNotification",
                            ));
                        }
                        let mut request = m::TriggerMessageRequest::new(requested);
                        if let Some(id) = target {
                            request = request.with_evse(evse(*id, None)?);
                        }
                        request.into()
                    }
                    Command::SetChargingProfile(limit) => m::SetChargingProfileRequest::new(
                        convert(limit.evse, "evseId", V)?,
                        charging_profile(limit)?,
                    )
                    .into(),
                    Command::Configure { setting, value } => {
                        let (component, variable) = setting.component_variable();
                        m::SetVariablesRequest::new(vec![m::SetVariableData::new(
                            value.as_str(),
                            m::Component::new(component),
                            m::Variable::new(variable),
                        )])
                        .into()
                    }
                })
            }

            /// The command a request of this version says; `None`: another action, or one
            /// carrying what [`Command`] does not hold (a remote start's charging profile or
            /// group token, a trigger for one connector, several variables or one that is
            /// not a [`Setting`](crate::Setting), an attribute other than `Actual`).
            pub(crate) fn read_command(request: &m::Request) -> Option<Command> {
                fn id<T: TryInto<u32>>(value: T) -> Option<u32> {
                    value.try_into().ok()
                }
                // `None` when there is one and it does not fit.
                fn optional<T: TryInto<u32>>(value: Option<T>) -> Option<Option<u32>> {
                    match value {
                        Some(value) => id(value).map(Some),
                        None => Some(None),
                    }
                }
                Some(match request {
                    m::Request::RequestStartTransaction(r)
                        if r.charging_profile.is_none() && r.group_id_token.is_none() =>
                    {
                        Command::RemoteStart {
                            evse: optional(r.evse_id)?,
                            token: id_token(&r.id_token),
                            remote_start_id: r.remote_start_id,
                            limit: None,
                        }
                    }
                    m::Request::RequestStopTransaction(r) => Command::RemoteStop {
                        transaction: TransactionId::Text(r.transaction_id.clone()),
                    },
                    m::Request::Reset(r) => Command::Reset {
                        kind: ResetKind::from_wire(r.r#type.as_str())?,
                        evse: optional(r.evse_id)?,
                    },
                    m::Request::UnlockConnector(r) => Command::UnlockConnector {
                        evse: id(r.evse_id)?,
                        connector: Some(id(r.connector_id)?),
                    },
                    m::Request::ChangeAvailability(r) => {
                        let (evse, connector) = match &r.evse {
                            Some(target) => (Some(id(target.id)?), optional(target.connector_id)?),
                            None => (None, None),
                        };
                        Command::ChangeAvailability {
                            evse,
                            connector,
                            operative: match r.operational_status.as_str() {
                                "Operative" => true,
                                "Inoperative" => false,
                                _ => return None,
                            },
                        }
                    }
                    m::Request::TriggerMessage(r) => Command::TriggerMessage {
                        message: crate::MessageTrigger::from_wire(r.requested_message.as_str())?,
                        evse: match &r.evse {
                            Some(target) if target.connector_id.is_none() => Some(id(target.id)?),
                            Some(_) => return None,
                            None => None,
                        },
                    },
                    m::Request::SetVariables(r) => {
                        let [data] = r.set_variable_data.as_slice() else {
                            return None;
                        };
                        let actual = data
                            .attribute_type
                            .as_ref()
                            .map_or(true, |kind| kind.as_str() == "Actual");
                        let plain = data.component.evse.is_none()
                            && data.component.instance.is_none()
                            && data.variable.instance.is_none();
                        if !actual || !plain {
                            return None;
                        }
                        Command::Configure {
                            setting: crate::Setting::from_component_variable(
                                &data.component.name,
                                &data.variable.name,
                            )?,
                            value: data.attribute_value.clone(),
                        }
                    }
                    _ => return None,
                })
            }

            /// The outcome of a response of this version to `command`; `None`: it does not
            /// answer it.
            pub(crate) fn outcome(
                command: &Command,
                response: &m::Response,
            ) -> Option<CommandOutcome> {
                let status = match (command, response) {
                    (Command::RemoteStart { .. }, m::Response::RequestStartTransaction(r)) => {
                        let mut outcome =
                            CommandOutcome::of(outcome_of(r.status.as_str()), r.status.as_str());
                        outcome.transaction = r.transaction_id.clone().map(TransactionId::Text);
                        return Some(outcome);
                    }
                    (Command::RemoteStop { .. }, m::Response::RequestStopTransaction(r)) => {
                        r.status.as_str()
                    }
                    (Command::Reset { .. }, m::Response::Reset(r)) => r.status.as_str(),
                    (Command::UnlockConnector { .. }, m::Response::UnlockConnector(r)) => {
                        r.status.as_str()
                    }
                    (Command::ChangeAvailability { .. }, m::Response::ChangeAvailability(r)) => {
                        r.status.as_str()
                    }
                    (Command::TriggerMessage { .. }, m::Response::TriggerMessage(r)) => {
                        r.status.as_str()
                    }
                    (Command::SetChargingProfile(_), m::Response::SetChargingProfile(r)) => {
                        r.status.as_str()
                    }
                    (Command::Configure { setting, .. }, m::Response::SetVariables(r)) => {
                        let (component, variable) = setting.component_variable();
                        let result = r.set_variable_result.iter().find(|result| {
                            result.component.name == component && result.variable.name == variable
                        })?;
                        result.attribute_status.as_str()
                    }
                    _ => return None,
                };
                Some(CommandOutcome::of(outcome_of(status), status))
            }
        }
    };
}

v2!(
    v2_0_1,
    OcppVersion::V2_0_1,
    id_token_type: ocpp_messages::v2_0_1::IdTokenEnum::from_wire,
    period: ocpp_messages::v2_0_1::ChargingSchedulePeriod::new,
);

v2!(
    v2_1,
    OcppVersion::V2_1,
    id_token_type: str::to_owned,
    period: |start, limit| ocpp_messages::v2_1::ChargingSchedulePeriod::new(start).with_limit(limit),
);
