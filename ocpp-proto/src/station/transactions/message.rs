//! The messages, per version: 1.6 StartTransaction, MeterValues and StopTransaction; 2.x
//! TransactionEvent.

use ocpp_messages::{DateTime, OcppVersion, Request};

#[cfg(any(feature = "v2_0_1", feature = "v2_1"))]
use ocpp_messages::Decimal;

#[cfg(feature = "v1_6")]
use ocpp_messages::v1_6;
#[cfg(feature = "v2_0_1")]
use ocpp_messages::v2_0_1;
#[cfg(feature = "v2_1")]
use ocpp_messages::v2_1;

use super::*;

const ENERGY: &str = ENERGY_REGISTER;

/// `value` checked against the version's list (`from_wire` keeps what it does not know).
#[allow(dead_code)]
fn known<T>(
    value: &str,
    what: &'static str,
    from_wire: impl Fn(&str) -> T,
    recognized: impl Fn(&T) -> bool,
) -> Result<T, TransactionError> {
    let parsed = from_wire(value);
    if recognized(&parsed) {
        Ok(parsed)
    } else {
        Err(TransactionError::UnknownValue(what, value.to_owned()))
    }
}

/// The context of a periodic or triggered reading.
fn update_context(reading: &Reading) -> (&'static str, &'static str) {
    if reading.triggered {
        ("Trigger", "Trigger")
    } else {
        ("MeterValuePeriodic", "Sample.Periodic")
    }
}

#[cfg(feature = "v1_6")]
fn wh_i32(wh: i64) -> Result<i32, TransactionError> {
    i32::try_from(wh).map_err(|_| TransactionError::OutOfRange("meter value (Wh)"))
}

#[allow(dead_code)]
fn disabled(version: OcppVersion) -> TransactionError {
    TransactionError::VersionDisabled(version.as_str())
}

/// 1.6: the id, or a provisional 0 and the StartTransaction it waits for.
#[cfg(feature = "v1_6")]
fn id_1_6(open: &OpenTransaction) -> (i32, Option<u64>) {
    match open.id {
        TransactionRef::Given(id) => (id, None),
        TransactionRef::Pending(seq) => (0, Some(seq)),
        TransactionRef::Id(_) => (0, None),
    }
}

#[cfg(feature = "v1_6")]
fn sampled_1_6(
    wh: i64,
    sampled: &[SampledValue],
    context: &str,
    timestamp: DateTime,
) -> Result<v1_6::MeterValue, TransactionError> {
    let energy = v1_6::SampledValue::new(wh.to_string())
        .with_measurand(v1_6::Measurand::from_wire(ENERGY))
        .with_context(v1_6::ReadingContext::from_wire(context))
        .with_unit(v1_6::UnitOfMeasure::from_wire("Wh"));
    let mut values = vec![energy];
    for s in sampled {
        let mut value = v1_6::SampledValue::new(s.value.to_string())
            .with_measurand(known(
                &s.measurand,
                "measurand",
                v1_6::Measurand::from_wire,
                v1_6::Measurand::is_recognized,
            )?)
            .with_context(v1_6::ReadingContext::from_wire(context))
            .with_unit(known(
                &s.unit,
                "unit",
                v1_6::UnitOfMeasure::from_wire,
                v1_6::UnitOfMeasure::is_recognized,
            )?);
        if let Some(phase) = &s.phase {
            value = value.with_phase(known(
                phase,
                "phase",
                v1_6::Phase::from_wire,
                v1_6::Phase::is_recognized,
            )?);
        }
        if let Some(location) = &s.location {
            value = value.with_location(known(
                location,
                "location",
                v1_6::Location::from_wire,
                v1_6::Location::is_recognized,
            )?);
        }
        values.push(value);
    }
    Ok(v1_6::MeterValue::new(timestamp, values))
}

pub(super) fn started(open: &OpenTransaction, start: &Start) -> Result<Request, TransactionError> {
    match open.version {
        #[cfg(feature = "v1_6")]
        OcppVersion::V1_6 => {
            let mut request = v1_6::StartTransactionRequest::new(
                open.evse.id,
                open.id_token.id.clone(),
                wh_i32(start.meter_wh)?,
                start.timestamp.clone(),
            );
            request.reservation_id = start.reservation_id;
            Ok(request.into())
        }
        #[cfg(feature = "v2_0_1")]
        OcppVersion::V2_0_1 => {
            let trigger = if start.remote_start_id.is_some() {
                "RemoteStart"
            } else {
                "Authorized"
            };
            let mut event = v2_0_1_event(
                open,
                "Started",
                trigger,
                start.timestamp.clone(),
                start.meter_wh,
                &start.sampled,
                "Transaction.Begin",
            )?
            .with_id_token(v2_0_1::IdToken::new(
                open.id_token.id.clone(),
                v2_0_1::IdTokenEnum::from_wire(&open.id_token.kind),
            ));
            event.reservation_id = start.reservation_id;
            Ok(event.into())
        }
        #[cfg(feature = "v2_1")]
        OcppVersion::V2_1 => {
            let trigger = if start.remote_start_id.is_some() {
                "RemoteStart"
            } else {
                "Authorized"
            };
            let mut event = v2_1_event(
                open,
                "Started",
                trigger,
                start.timestamp.clone(),
                start.meter_wh,
                &start.sampled,
                "Transaction.Begin",
            )?
            .with_id_token(v2_1::IdToken::new(
                open.id_token.id.clone(),
                open.id_token.kind.clone(),
            ));
            if let Some(id) = start.reservation_id {
                let id =
                    u32::try_from(id).map_err(|_| TransactionError::OutOfRange("reservationId"))?;
                event = event.with_reservation_id(id);
            }
            Ok(event.into())
        }
        #[allow(unreachable_patterns)]
        other => Err(disabled(other)),
    }
}

pub(super) fn updated(
    open: &OpenTransaction,
    reading: &Reading,
    timestamp: DateTime,
) -> Result<TransactionMessage, TransactionError> {
    #[allow(unused_variables)] // 1.6 has no trigger
    let (trigger, context) = update_context(reading);
    let (meter_wh, sampled) = (reading.energy_wh, reading.sampled.as_slice());
    let (request, transaction_of): (Request, _) = match open.version {
        #[cfg(feature = "v1_6")]
        OcppVersion::V1_6 => {
            let (id, transaction_of) = id_1_6(open);
            let meter = sampled_1_6(meter_wh, sampled, context, timestamp)?;
            let request =
                v1_6::MeterValuesRequest::new(open.evse.id, vec![meter]).with_transaction_id(id);
            (request.into(), transaction_of)
        }
        #[cfg(feature = "v2_0_1")]
        OcppVersion::V2_0_1 => {
            let event = v2_0_1_event(
                open, "Updated", trigger, timestamp, meter_wh, sampled, context,
            )?;
            (event.into(), None)
        }
        #[cfg(feature = "v2_1")]
        OcppVersion::V2_1 => {
            let event = v2_1_event(
                open, "Updated", trigger, timestamp, meter_wh, sampled, context,
            )?;
            (event.into(), None)
        }
        #[allow(unreachable_patterns)]
        other => return Err(disabled(other)),
    };
    Ok(TransactionMessage {
        request,
        transaction_of,
    })
}

pub(super) fn ended(
    open: &OpenTransaction,
    reading: &Reading,
    timestamp: DateTime,
    reason: StopReason,
) -> Result<TransactionMessage, TransactionError> {
    let (meter_wh, sampled) = (reading.energy_wh, reading.sampled.as_slice());
    let (request, transaction_of): (Request, _) = match open.version {
        #[cfg(feature = "v1_6")]
        OcppVersion::V1_6 => {
            let (id, transaction_of) = id_1_6(open);
            let data = (!sampled.is_empty())
                .then(|| sampled_1_6(meter_wh, sampled, "Transaction.End", timestamp.clone()))
                .transpose()?;
            let mut request = v1_6::StopTransactionRequest::new(wh_i32(meter_wh)?, timestamp, id);
            request.reason = Some(v1_6::Reason::from_wire(reason.as_str_in(OcppVersion::V1_6)));
            if let Some(data) = data {
                // The same JSON shape under another generated name.
                let data = serde_json::to_value(data)
                    .and_then(serde_json::from_value::<v1_6::TransactionData>)
                    .map_err(|_| TransactionError::OutOfRange("transactionData"))?;
                request.transaction_data = Some(vec![data]);
            }
            (request.into(), transaction_of)
        }
        #[cfg(feature = "v2_0_1")]
        OcppVersion::V2_0_1 => {
            let mut event = v2_0_1_event(
                open,
                "Ended",
                reason.trigger_reason(),
                timestamp,
                meter_wh,
                sampled,
                "Transaction.End",
            )?;
            event.transaction_info =
                event
                    .transaction_info
                    .with_stopped_reason(v2_0_1::ReasonEnum::from_wire(
                        reason.as_str_in(OcppVersion::V2_0_1),
                    ));
            (event.into(), None)
        }
        #[cfg(feature = "v2_1")]
        OcppVersion::V2_1 => {
            let mut event = v2_1_event(
                open,
                "Ended",
                reason.trigger_reason(),
                timestamp,
                meter_wh,
                sampled,
                "Transaction.End",
            )?;
            event.transaction_info =
                event
                    .transaction_info
                    .with_stopped_reason(v2_1::ReasonEnum::from_wire(
                        reason.as_str_in(OcppVersion::V2_1),
                    ));
            (event.into(), None)
        }
        #[allow(unreachable_patterns)]
        other => return Err(disabled(other)),
    };
    Ok(TransactionMessage {
        request,
        transaction_of,
    })
}

/// The longest 2.x `unitOfMeasure.unit` (`string[0..20]`).
#[cfg(any(feature = "v2_0_1", feature = "v2_1"))]
const MAX_UNIT: usize = 20;

#[cfg(any(feature = "v2_0_1", feature = "v2_1"))]
fn transaction_id(open: &OpenTransaction) -> String {
    match &open.id {
        TransactionRef::Id(id) => id.clone(),
        TransactionRef::Given(id) => id.to_string(),
        TransactionRef::Pending(seq) => seq.to_string(),
    }
}

#[cfg(feature = "v2_0_1")]
fn v2_0_1_event(
    open: &OpenTransaction,
    kind: &str,
    trigger: &str,
    timestamp: DateTime,
    meter_wh: i64,
    sampled: &[SampledValue],
    context: &str,
) -> Result<v2_0_1::TransactionEventRequest, TransactionError> {
    let seq_no =
        i32::try_from(open.next_seq_no).map_err(|_| TransactionError::OutOfRange("seqNo"))?;
    let mut info = v2_0_1::Transaction::new(transaction_id(open));
    if let (Some(id), "Started") = (open.remote_start_id, kind) {
        info = info.with_remote_start_id(id);
    }
    let mut evse = v2_0_1::EVSE::new(open.evse.id);
    if let Some(connector) = open.evse.connector {
        evse = evse.with_connector_id(connector);
    }
    let energy = v2_0_1::SampledValue::new(Decimal::from(meter_wh))
        .with_measurand(v2_0_1::MeasurandEnum::from_wire(ENERGY))
        .with_context(v2_0_1::ReadingContextEnum::from_wire(context));
    let mut values = vec![energy];
    for s in sampled {
        if s.unit.len() > MAX_UNIT {
            return Err(TransactionError::UnknownValue("unit", s.unit.clone()));
        }
        let mut value = v2_0_1::SampledValue::new(s.value)
            .with_measurand(known(
                &s.measurand,
                "measurand",
                v2_0_1::MeasurandEnum::from_wire,
                v2_0_1::MeasurandEnum::is_recognized,
            )?)
            .with_context(v2_0_1::ReadingContextEnum::from_wire(context))
            .with_unit_of_measure(v2_0_1::UnitOfMeasure::default().with_unit(s.unit.clone()));
        if let Some(phase) = &s.phase {
            value = value.with_phase(known(
                phase,
                "phase",
                v2_0_1::PhaseEnum::from_wire,
                v2_0_1::PhaseEnum::is_recognized,
            )?);
        }
        if let Some(location) = &s.location {
            value = value.with_location(known(
                location,
                "location",
                v2_0_1::LocationEnum::from_wire,
                v2_0_1::LocationEnum::is_recognized,
            )?);
        }
        values.push(value);
    }
    Ok(v2_0_1::TransactionEventRequest::new(
        v2_0_1::TransactionEventEnum::from_wire(kind),
        timestamp.clone(),
        v2_0_1::TriggerReasonEnum::from_wire(trigger),
        seq_no,
        info,
    )
    .with_evse(evse)
    .with_meter_value(vec![v2_0_1::MeterValue::new(values, timestamp)]))
}

#[cfg(feature = "v2_1")]
fn v2_1_event(
    open: &OpenTransaction,
    kind: &str,
    trigger: &str,
    timestamp: DateTime,
    meter_wh: i64,
    sampled: &[SampledValue],
    context: &str,
) -> Result<v2_1::TransactionEventRequest, TransactionError> {
    let unsigned = |v: i32, what| u32::try_from(v).map_err(|_| TransactionError::OutOfRange(what));
    let mut info = v2_1::Transaction::new(transaction_id(open));
    if let (Some(id), "Started") = (open.remote_start_id, kind) {
        info = info.with_remote_start_id(id);
    }
    let mut evse = v2_1::EVSE::new(unsigned(open.evse.id, "evseId")?);
    if let Some(connector) = open.evse.connector {
        evse = evse.with_connector_id(unsigned(connector, "connectorId")?);
    }
    let energy = v2_1::SampledValue::new(Decimal::from(meter_wh))
        .with_measurand(v2_1::MeasurandEnum::from_wire(ENERGY))
        .with_context(v2_1::ReadingContextEnum::from_wire(context));
    let mut values = vec![energy];
    for s in sampled {
        if s.unit.len() > MAX_UNIT {
            return Err(TransactionError::UnknownValue("unit", s.unit.clone()));
        }
        let mut value = v2_1::SampledValue::new(s.value)
            .with_measurand(known(
                &s.measurand,
                "measurand",
                v2_1::MeasurandEnum::from_wire,
                v2_1::MeasurandEnum::is_recognized,
            )?)
            .with_context(v2_1::ReadingContextEnum::from_wire(context))
            .with_unit_of_measure(v2_1::UnitOfMeasure::default().with_unit(s.unit.clone()));
        if let Some(phase) = &s.phase {
            value = value.with_phase(known(
                phase,
                "phase",
                v2_1::PhaseEnum::from_wire,
                v2_1::PhaseEnum::is_recognized,
            )?);
        }
        if let Some(location) = &s.location {
            value = value.with_location(known(
                location,
                "location",
                v2_1::LocationEnum::from_wire,
                v2_1::LocationEnum::is_recognized,
            )?);
        }
        values.push(value);
    }
    Ok(v2_1::TransactionEventRequest::new(
        v2_1::TransactionEventEnum::from_wire(kind),
        timestamp.clone(),
        v2_1::TriggerReasonEnum::from_wire(trigger),
        open.next_seq_no,
        info,
    )
    .with_evse(evse)
    .with_meter_value(vec![v2_1::MeterValue::new(values, timestamp)]))
}
