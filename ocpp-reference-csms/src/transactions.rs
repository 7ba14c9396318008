//! Transactions, written once for every version: started, updated, ended, and the meter
//! readings outside them ([`ocpp_model`]'s `TransactionStarted`, `TransactionUpdated`,
//! `TransactionEnded`, `MeterReadings`), recorded in the [`ChargePointRecord`] state. What must be
//! committed before the answer (a start, an end) is then committed by [`super::ledger`],
//! which calls these under its rule.
//!
//! Where the versions really differ, the code says so:
//! - **Who names the transaction.** In 1.6 the CSMS does, in the StartTransaction's answer (a
//!   number, never given twice: a resend gets the id it was given, recognised by the
//!   StartTransaction's own words); in 2.x the station does, and its messages are numbered
//!   (`seqNo`, whose gaps are counted).
//! - **A message about a transaction the CSMS does not hold.** 2.x: the station named it, so
//!   it is one the CSMS missed (started before a restart, say) and it is recorded; 1.6: a
//!   MeterValues for an id the CSMS never gave out is ignored.
//! - **meterStart / meterStop** are 1.6 fields, not sampled values: they set the start and
//!   last register of the transaction and are not counted as samples (the model gives them
//!   as the start's only reading and the end's last one).
//! - **Cost** (I02/I03): 2.x only; 1.6 has no cost message in its core profile.

use ocpp_messages::error_code::ErrorCode;
use ocpp_messages::version::OcppVersion;
use ocpp_model::{
    Authorization, EventAnswer, IdToken, MeterReading, MeterReadings, StartKey, TransactionEnded,
    TransactionStarted, TransactionUpdated,
};
use ocpp_proto::ErrorAnswer;

use super::events::authorization;
use super::{ChargePointRecord, Context, Transaction};

/// The label of a connector in this CSMS's records: 1.6 numbers connectors (`"2"`), 2.x
/// numbers them within their EVSE (`"1/2"`, the connector 1 when not said).
pub(super) fn connector_label(
    version: OcppVersion,
    evse: Option<u32>,
    connector: Option<u32>,
) -> Option<String> {
    let evse = evse?;
    Some(match version {
        OcppVersion::V1_6 => evse.to_string(),
        _ => format!("{evse}/{}", connector.unwrap_or(1)),
    })
}

/// 1.6 StartTransaction (§4.8), 2.x TransactionEvent `Started` (E01-E03).
pub(super) fn started(
    context: &Context<'_>,
    cp: &mut ChargePointRecord,
    start: &TransactionStarted,
    version: OcppVersion,
) -> Result<EventAnswer, ErrorAnswer> {
    let token = start.token.as_ref();
    let authorization = token_authorization(context, token, version);
    let Some(id) = &start.id else {
        // 1.6: the CSMS gives out the id, even for an idTag it refuses (the charge point then
        // stops the transaction, §5.x StopTransactionOnInvalidId).
        let id = given_id(context, cp, start, version).ok_or_else(no_id)?;
        return Ok(EventAnswer::transaction(Some(id), authorization));
    };
    let id = id.to_string();
    let label = connector_label(version, start.evse, start.connector).unwrap_or_default();
    let id_tag = token.map(|t| t.value.clone());
    let seq_no = start.seq_no.map(i64::from);
    note_seq_no(context, cp, &id, seq_no);
    let transaction = cp.start_transaction(id, label, id_tag.clone(), None, context.now);
    went_on(transaction, id_tag, seq_no, start.charging_state.as_deref());
    ChargePointRecord::record_meter(transaction, &start.readings);
    Ok(EventAnswer::transaction(None, authorization))
}

/// The authorization of the token a transaction's message names, if it names one (its
/// answer's `idTagInfo` / `idTokenInfo`).
fn token_authorization(
    context: &Context<'_>,
    token: Option<&IdToken>,
    version: OcppVersion,
) -> Option<Authorization> {
    token.map(|t| authorization(context, t, version))
}

/// A 1.6 start for which no id was reserved (the database is away): nothing is kept, and the
/// charge point sends it again.
fn no_id() -> ErrorAnswer {
    ErrorAnswer::new(
        ErrorCode::InternalError,
        "no transaction id could be reserved: send it again",
    )
}

/// The id of a 1.6 StartTransaction. The same StartTransaction sent again (its answer lost,
/// or refused while the database was away and then committed after all) is the same
/// transaction: it gets the id it was given, recognised by the charge point's own words.
fn given_id(
    context: &Context<'_>,
    cp: &mut ChargePointRecord,
    start: &TransactionStarted,
    version: OcppVersion,
) -> Option<i32> {
    let meter_start = start.readings.first();
    // The model's key, as the store keeps it (`ocpp_model::StartKey`'s text).
    let key = StartKey::of(start)?.to_string();
    let same = |t: &&Transaction| t.start_key.as_deref() == Some(key.as_str());
    let given = cp.transactions.iter().find(same);
    // Not committed yet (its commit failed, perhaps after writing it): the same id again,
    // and the same commit.
    let tried = context.unconfirmed.iter().find(same);
    match given.or(tried).and_then(|t| t.id.parse::<i32>().ok()) {
        Some(id) if given.is_some() => Some(id),
        tried => {
            let id = match tried {
                Some(id) => id,
                None => context.next_transaction_id()?,
            };
            let label = connector_label(version, start.evse, None).unwrap_or_default();
            let id_tag = start.token.as_ref().map(|t| t.value.clone());
            let meter_start_wh = meter_start.and_then(MeterReading::energy_wh);
            cp.start_transaction(id.to_string(), label, id_tag, meter_start_wh, context.now)
                .start_key = Some(key);
            Some(id)
        }
    }
}

/// 1.6 MeterValues with a `transactionId` (§4.7), 2.x TransactionEvent `Updated` (E02, with
/// the running cost of I02 when a tariff applies).
pub(super) fn updated(
    context: &Context<'_>,
    cp: &mut ChargePointRecord,
    update: &TransactionUpdated,
    version: OcppVersion,
) -> EventAnswer {
    let id = update.id.to_string();
    let authorization = token_authorization(context, update.token.as_ref(), version);
    if version == OcppVersion::V1_6 {
        if let Some(transaction) = cp.transaction_mut(&id) {
            ChargePointRecord::record_meter(transaction, &update.readings);
        }
        return EventAnswer::transaction(None, authorization);
    }
    let seq_no = update.seq_no.map(i64::from);
    note_seq_no(context, cp, &id, seq_no);
    let label = connector_label(version, update.evse, update.connector).unwrap_or_default();
    let id_tag = update.token.as_ref().map(|t| t.value.clone());
    let tariff = context.tariff(cp);
    let transaction = cp.start_transaction(id.clone(), label, id_tag.clone(), None, context.now);
    went_on(
        transaction,
        id_tag,
        seq_no,
        update.charging_state.as_deref(),
    );
    ChargePointRecord::record_meter(transaction, &update.readings);
    let mut answer = EventAnswer::transaction(None, authorization);
    // I02: the running cost of an Updated that brings meter values goes in a CostUpdated
    // (2.1: in the answer too, where its schema allows it).
    if let Some(tariff) = tariff.filter(|_| !update.readings.is_empty()) {
        let cost = tariff.cost_of(transaction, context.now);
        if version == OcppVersion::V2_1 {
            answer = answer.with_total_cost(cost.total_cost());
        }
        context.cost_updated(cp, version, &id, cost);
    }
    answer
}

/// 1.6 StopTransaction (§4.10), 2.x TransactionEvent `Ended` (E06, with the final cost of I03
/// when a tariff applies). Always accepted, even for a transaction the CSMS does not hold (the
/// charge point would send it again forever otherwise).
pub(super) fn ended(
    context: &Context<'_>,
    cp: &mut ChargePointRecord,
    end: &TransactionEnded,
    version: OcppVersion,
) -> EventAnswer {
    let authorization = token_authorization(context, end.token.as_ref(), version);
    let id = end.id.to_string();
    let keep = context.config.ended_transactions_kept;
    let reason = end.raw_reason.as_deref();
    let mut answer = EventAnswer::transaction(None, authorization);
    if version == OcppVersion::V1_6 {
        // The last reading is meterStop; the others are `transactionData`.
        let (meter_stop, data) = match end.readings.split_last() {
            Some((last, data)) => (last.energy_wh(), data),
            None => (None, &end.readings[..]),
        };
        if let Some(transaction) = cp.transaction_mut(&id) {
            ChargePointRecord::record_meter(transaction, data);
        }
        cp.end_transaction(&id, None, meter_stop, reason, keep, context.now);
        return answer;
    }
    let seq_no = end.seq_no.map(i64::from);
    note_seq_no(context, cp, &id, seq_no);
    // The cost of a transaction never seen before its end is not known: no totalCost (0
    // would say it was free).
    let known = cp.transaction_mut(&id).is_some();
    if let Some(transaction) = cp.transaction_mut(&id) {
        ChargePointRecord::record_meter(transaction, &end.readings);
    }
    let label = connector_label(version, end.evse, end.connector);
    cp.end_transaction(&id, label, None, reason, keep, context.now);
    let tariff = context.tariff(cp);
    if let Some(transaction) = cp.transaction_mut(&id) {
        transaction.last_seq_no = seq_no.or(transaction.last_seq_no);
        if let Some(tariff) = tariff.filter(|_| known) {
            let cost = tariff.cost_of(transaction, context.now);
            answer = answer.with_total_cost(cost.total_cost());
        }
    }
    answer
}

/// MeterValues outside a transaction (1.6 §4.7 without `transactionId`, 2.x J01): the
/// samples go to the connector's (1.6) or the EVSE's (2.x) active transaction, if any.
pub(super) fn meter_readings(
    cp: &mut ChargePointRecord,
    readings: &MeterReadings,
    version: OcppVersion,
) {
    let transaction = match version {
        OcppVersion::V1_6 => cp.active_transaction_on(&readings.evse.to_string()),
        _ => {
            let prefix = format!("{}/", readings.evse);
            cp.transactions
                .iter_mut()
                .rev()
                .find(|t| t.is_active() && t.connector.starts_with(&prefix))
        }
    };
    if let Some(transaction) = transaction {
        ChargePointRecord::record_meter(transaction, &readings.readings);
    }
}

/// 2.x: `seqNo` grows by one per event of a transaction; a jump means lost messages.
fn note_seq_no(context: &Context<'_>, cp: &mut ChargePointRecord, id: &str, seq_no: Option<i64>) {
    if let Some(seq_no) = seq_no {
        let keep = context.config.notifications_kept;
        cp.note_seq_no(id, seq_no, keep, context.now);
    }
}

/// What a 2.x Started or Updated says of a transaction it (re)names.
fn went_on(
    transaction: &mut Transaction,
    id_tag: Option<String>,
    seq_no: Option<i64>,
    charging_state: Option<&str>,
) {
    if transaction.id_tag.is_none() {
        transaction.id_tag = id_tag;
    }
    if let Some(seq_no) = seq_no {
        transaction.last_seq_no.get_or_insert(seq_no);
    }
    if let Some(state) = charging_state {
        transaction.charging_state = Some(state.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ocpp_model::TransactionId;

    #[test]
    fn connector_labels_are_the_versions_own() {
        assert_eq!(
            connector_label(OcppVersion::V1_6, Some(2), None),
            Some("2".into())
        );
        assert_eq!(
            connector_label(OcppVersion::V2_0_1, Some(1), None),
            Some("1/1".into())
        );
        assert_eq!(
            connector_label(OcppVersion::V2_1, Some(3), Some(2)),
            Some("3/2".into())
        );
        assert_eq!(connector_label(OcppVersion::V2_1, None, Some(2)), None);
    }

    #[test]
    fn transaction_ids_print_as_on_the_wire() {
        assert_eq!(TransactionId::Number(7).to_string(), "7");
        assert_eq!(TransactionId::Text("TX-1".into()).to_string(), "TX-1");
    }
}
