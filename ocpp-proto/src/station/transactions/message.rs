//! The messages, per version: 1.6 StartTransaction, MeterValues and StopTransaction; 2.x
//! TransactionEvent.

use core::str::FromStr;

use ocpp_messages::{DateTime, OcppVersion, Request};

#[cfg(feature = "v1_6")]
use ocpp_messages::v1_6;

use super::*;

const ENERGY: &str = ENERGY_REGISTER;

/// `value` checked against the version's list: the strict `FromStr` of a generated enumeration
/// takes only the values it lists.
#[allow(dead_code)]
fn known<T: FromStr>(value: &str, what: &'static str) -> Result<T, TransactionError> {
    value
        .parse()
        .map_err(|_| TransactionError::UnknownValue(what, value.to_owned()))
}

/// An optional value checked as [`known`] does.
#[allow(dead_code)]
fn known_if_any<T: FromStr>(
    value: Option<&str>,
    what: &'static str,
) -> Result<Option<T>, TransactionError> {
    value.map(|value| known(value, what)).transpose()
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
            .with_measurand(known(&s.measurand, "measurand")?)
            .with_context(v1_6::ReadingContext::from_wire(context))
            .with_unit(known(&s.unit, "unit")?);
        value.phase = known_if_any(s.phase.as_deref(), "phase")?;
        value.location = known_if_any(s.location.as_deref(), "location")?;
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
                open.id_token.value.clone(),
                wh_i32(start.meter_wh)?,
                start.timestamp.clone(),
            );
            request.reservation_id = start.reservation_id;
            Ok(request.into())
        }
        #[cfg(feature = "v2_0_1")]
        OcppVersion::V2_0_1 => Ok(v2_0_1::started(open, start)?.into()),
        #[cfg(feature = "v2_1")]
        OcppVersion::V2_1 => Ok(v2_1::started(open, start)?.into()),
        #[allow(unreachable_patterns)]
        other => Err(disabled(other)),
    }
}

pub(super) fn updated(
    open: &OpenTransaction,
    reading: &Reading,
    timestamp: DateTime,
) -> Result<TransactionMessage, TransactionError> {
    let (request, transaction_of): (Request, _) = match open.version {
        #[cfg(feature = "v1_6")]
        OcppVersion::V1_6 => {
            let (_, context) = update_context(reading);
            let (id, transaction_of) = id_1_6(open);
            let meter = sampled_1_6(reading.energy_wh, &reading.sampled, context, timestamp)?;
            let request =
                v1_6::MeterValuesRequest::new(open.evse.id, vec![meter]).with_transaction_id(id);
            (request.into(), transaction_of)
        }
        #[cfg(feature = "v2_0_1")]
        OcppVersion::V2_0_1 => (v2_0_1::updated(open, reading, timestamp)?.into(), None),
        #[cfg(feature = "v2_1")]
        OcppVersion::V2_1 => (v2_1::updated(open, reading, timestamp)?.into(), None),
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
    reason: StationStopReason,
) -> Result<TransactionMessage, TransactionError> {
    let (request, transaction_of): (Request, _) = match open.version {
        #[cfg(feature = "v1_6")]
        OcppVersion::V1_6 => {
            let (meter_wh, sampled) = (reading.energy_wh, reading.sampled.as_slice());
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
        OcppVersion::V2_0_1 => (
            v2_0_1::ended(open, reading, timestamp, reason)?.into(),
            None,
        ),
        #[cfg(feature = "v2_1")]
        OcppVersion::V2_1 => (v2_1::ended(open, reading, timestamp, reason)?.into(), None),
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

/// A number in the version's type: 2.0.1 types ids and `seqNo` as `integer` (`i32`), 2.1 as
/// unsigned (`u32`).
#[cfg(any(feature = "v2_0_1", feature = "v2_1"))]
fn number<S, T: TryFrom<S>>(value: S, what: &'static str) -> Result<T, TransactionError> {
    T::try_from(value).map_err(|_| TransactionError::OutOfRange(what))
}

/// 2.x `Started`'s trigger: a remote start's, or an authorization's.
#[cfg(any(feature = "v2_0_1", feature = "v2_1"))]
fn start_trigger(start: &Start) -> &'static str {
    if start.remote_start_id.is_some() {
        "RemoteStart"
    } else {
        "Authorized"
    }
}

/// The TransactionEvent of 2.0.1 and of 2.1, one text for both versions (a macro instantiated
/// per version, as `ocpp-model`'s `v2` module is): 2.1 keeps 2.0.1's shapes. Where they differ,
/// [`number`] converts the ids and `seqNo` (unsigned in 2.1) and `id_token_type` reads the id
/// token's type (an enumeration in 2.0.1, free text in 2.1).
#[cfg(any(feature = "v2_0_1", feature = "v2_1"))]
macro_rules! transaction_event {
    ($version:ident, $v:expr, id_token_type: $id_token_type:expr $(,)?) => {
        mod $version {
            use ocpp_messages::$version as m;
            use ocpp_messages::{DateTime, Decimal, OcppVersion};

            use super::{
                known, known_if_any, number, start_trigger, transaction_id, update_context,
                OpenTransaction, Reading, SampledValue, Start, StationStopReason, TransactionError,
                ENERGY, MAX_UNIT,
            };

            pub(super) fn started(
                open: &OpenTransaction,
                start: &Start,
            ) -> Result<m::TransactionEventRequest, TransactionError> {
                let mut event = event(
                    open,
                    "Started",
                    start_trigger(start),
                    start.timestamp.clone(),
                    start.meter_wh,
                    &start.sampled,
                    "Transaction.Begin",
                )?
                .with_id_token(m::IdToken::new(
                    open.id_token.value.clone(),
                    ($id_token_type)(open.id_token.kind.as_str()),
                ));
                event.reservation_id = start
                    .reservation_id
                    .map(|id| number(id, "reservationId"))
                    .transpose()?;
                Ok(event)
            }

            pub(super) fn updated(
                open: &OpenTransaction,
                reading: &Reading,
                timestamp: DateTime,
            ) -> Result<m::TransactionEventRequest, TransactionError> {
                let (trigger, context) = update_context(reading);
                event(
                    open,
                    "Updated",
                    trigger,
                    timestamp,
                    reading.energy_wh,
                    &reading.sampled,
                    context,
                )
            }

            pub(super) fn ended(
                open: &OpenTransaction,
                reading: &Reading,
                timestamp: DateTime,
                reason: StationStopReason,
            ) -> Result<m::TransactionEventRequest, TransactionError> {
                let mut event = event(
                    open,
                    "Ended",
                    reason.trigger_reason(),
                    timestamp,
                    reading.energy_wh,
                    &reading.sampled,
                    "Transaction.End",
                )?;
                event.transaction_info = event
                    .transaction_info
                    .with_stopped_reason(m::ReasonEnum::from_wire(reason.as_str_in($v)));
                Ok(event)
            }

            fn event(
                open: &OpenTransaction,
                kind: &str,
                trigger: &str,
                timestamp: DateTime,
                meter_wh: i64,
                sampled: &[SampledValue],
                context: &str,
            ) -> Result<m::TransactionEventRequest, TransactionError> {
                let mut info = m::Transaction::new(transaction_id(open));
                if let (Some(id), "Started") = (open.remote_start_id, kind) {
                    info = info.with_remote_start_id(id);
                }
                let mut evse = m::EVSE::new(number(open.evse.id, "evseId")?);
                if let Some(connector) = open.evse.connector {
                    evse = evse.with_connector_id(number(connector, "connectorId")?);
                }
                let energy = m::SampledValue::new(Decimal::from(meter_wh))
                    .with_measurand(m::MeasurandEnum::from_wire(ENERGY))
                    .with_context(m::ReadingContextEnum::from_wire(context));
                let mut values = vec![energy];
                for s in sampled {
                    if s.unit.len() > MAX_UNIT {
                        return Err(TransactionError::UnknownValue("unit", s.unit.clone()));
                    }
                    let mut value = m::SampledValue::new(s.value)
                        .with_measurand(known(&s.measurand, "measurand")?)
                        .with_context(m::ReadingContextEnum::from_wire(context))
                        .with_unit_of_measure(
                            m::UnitOfMeasure::default().with_unit(s.unit.clone()),
                        );
                    value.phase = known_if_any(s.phase.as_deref(), "phase")?;
                    value.location = known_if_any(s.location.as_deref(), "location")?;
                    values.push(value);
                }
                Ok(m::TransactionEventRequest::new(
                    m::TransactionEventEnum::from_wire(kind),
                    timestamp.clone(),
                    m::TriggerReasonEnum::from_wire(trigger),
                    number(open.next_seq_no, "seqNo")?,
                    info,
                )
                .with_evse(evse)
                .with_meter_value(vec![m::MeterValue::new(values, timestamp)]))
            }
        }
    };
}

#[cfg(feature = "v2_0_1")]
transaction_event!(
    v2_0_1,
    OcppVersion::V2_0_1,
    id_token_type: ocpp_messages::v2_0_1::IdTokenEnum::from_wire,
);
#[cfg(feature = "v2_1")]
transaction_event!(v2_1, OcppVersion::V2_1, id_token_type: String::from);
