//! [`SqlLedger`]: `ocpp_model`'s [`TransactionLedger`] on the reference CSMS's SQLite or
//! PostgreSQL database, for an application on `ocpp-tokio`'s router (or any loop) that wants
//! its transactions to outlive the process and be shared by the nodes of a cluster.
//!
//! It keeps the transactions in the same table as the CSMS ([`super::store`]) and follows the
//! trait's contract: each call is one atomic step, durable when it returns `Ok`, nothing kept
//! when it returns `Err`. A call waits for the database until [`DATABASE_WAIT`] after it
//! began (a `COMMIT` under way, [`COMMIT_WAIT`] more). Its write is claimed as the CSMS's
//! are ([`Store::commit_by`]): still queued behind other jobs at that deadline, it is
//! withdrawn and never runs; taken, it runs in a database transaction of its own, rolled
//! back if its statements outlast the deadline. The one outcome no database client can
//! know, a `COMMIT` sent and never answered ([`StoreError::Commit`]), is an error too: the
//! message sent again is then recognised ([`Recorded::Repeated`]). A 1.6 StartTransaction
//! sent again is recognised by its [`StartKey`] (kept in `start_key`); 1.6 ids come from the
//! database's counter ([`Store::reserve_transaction_ids`], shared by every node), never from
//! this process's memory.
//!
//! [`COMMIT_WAIT`]: crate::store::COMMIT_WAIT
//! [`Store::commit_by`]: crate::store::Store::commit_by
//! [`Store::reserve_transaction_ids`]: crate::store::Store::reserve_transaction_ids
//!
//! What it reads back: times to the second, in UTC (the table keeps milliseconds since the
//! epoch); a token's type when this ledger wrote it (a row the CSMS's own path wrote keeps the
//! value only, read back as `ISO14443`); whether an id is a 1.6 number or a 2.x text when
//! this ledger wrote it (a row of the CSMS's own path: 1.6 when it has a start key).
//!
//! ```no_run
//! use ocpp_reference_csms::SqlLedger;
//! use ocpp_model::TransactionLedger;
//!
//! let ledger = SqlLedger::open("sqlite:///var/lib/csms/ledger.sqlite3")?;
//! let id = ledger.next_transaction_id()?;
//! assert!(id > 0);
//! # Ok::<(), ocpp_reference_csms::StoreError>(())
//! ```

use std::sync::Arc;
use std::time::Instant;

use ocpp_messages::DateTime;
use ocpp_model::{
    IdToken, IdTokenType, LedgerTransaction, Recorded, StartKey, StopReason, TransactionEnded,
    TransactionId, TransactionLedger, TransactionStarted, TransactionUpdated,
};
use sqlx::any::AnyRow;
use sqlx::{AnyPool, Row};

use super::store::{SqlStore, StoreError, DATABASE_WAIT};

/// [`TransactionLedger`] on a [`SqlStore`] (see the [module](self)).
#[derive(Debug, Clone)]
pub struct SqlLedger {
    store: Arc<SqlStore>,
}

/// The columns a [`LedgerTransaction`] is read from, in [`ledger_transaction`]'s order.
const COLUMNS: &str = "id, connector, id_tag, id_token_type, started_ms, ended_ms, stop_reason, \
                       last_seq_no, start_key, id_is_text";

impl SqlLedger {
    /// Opens the database at `url` (`sqlite://FILE`, `postgres://...`) as [`SqlStore::open`]
    /// does (the migrations applied).
    ///
    /// # Errors
    /// As [`SqlStore::open`].
    pub fn open(url: &str) -> Result<SqlLedger, StoreError> {
        Ok(SqlLedger::new(Arc::new(SqlStore::open(url)?)))
    }

    /// The ledger on an open store (shared with a CSMS, say).
    pub fn new(store: Arc<SqlStore>) -> SqlLedger {
        SqlLedger { store }
    }

    /// The row that `sql` selects from `charge_point`'s transactions (`$1`) by one more
    /// value (`$2`), if there is one (waited for until `deadline`).
    fn select_row(
        &self,
        sql: &'static str,
        charge_point: &str,
        value: String,
        deadline: Instant,
    ) -> Result<Option<AnyRow>, StoreError> {
        let charge_point = charge_point.to_owned();
        self.store.run_by(deadline, move |pool| async move {
            let query = sqlx::query(sql).bind(charge_point).bind(value);
            Ok(query.fetch_optional(&pool).await?)
        })
    }

    /// The charge point's transaction with this id, as the table has it.
    fn find(
        &self,
        charge_point: &str,
        id: &TransactionId,
        deadline: Instant,
    ) -> Result<Option<Found>, StoreError> {
        let sql = "SELECT ended_ms, last_seq_no FROM transactions WHERE identity = $1 AND id = $2";
        let row = self.select_row(sql, charge_point, id.to_string(), deadline)?;
        row.map(|row| {
            Ok(Found {
                ended: row.try_get::<Option<i64>, _>(0)?.is_some(),
                last_seq_no: row.try_get(1)?,
            })
        })
        .transpose()
    }

    /// Inserts a transaction first seen now (nothing when the row exists): whether it was.
    fn insert(&self, new: NewRow, deadline: Instant) -> Result<bool, StoreError> {
        self.store.write_by(deadline, move |mut tx| async move {
            let done = sqlx::query(
                "INSERT INTO transactions (identity, id, connector, id_tag, id_token_type, \
                 started_ms, ended_ms, stop_reason, samples, last_seq_no, start_key, id_is_text) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0, $9, $10, $11) \
                 ON CONFLICT (identity, id) DO NOTHING",
            )
            .bind(new.charge_point)
            .bind(new.id.to_string())
            .bind(new.connector)
            .bind(new.token.as_ref().map(|t| t.value.clone()))
            .bind(new.token.map(|t| t.kind.as_str().to_owned()))
            .bind(new.started_ms)
            .bind(new.ended.as_ref().map(|(ms, _)| *ms))
            .bind(new.ended.map(|(_, reason)| reason))
            .bind(new.last_seq_no)
            .bind(new.start_key)
            .bind(i64::from(matches!(new.id, TransactionId::Text(_))))
            .execute(&mut *tx)
            .await?;
            Ok((done.rows_affected() == 1, tx))
        })
    }

    /// A transaction first seen in an update or an end: a 2.x one (the station named it) is
    /// recorded; a 1.6 id this ledger never gave out is [`Recorded::Unknown`].
    fn first_seen(&self, new: NewRow, deadline: Instant) -> Result<Recorded, StoreError> {
        let id = new.id.clone();
        if matches!(id, TransactionId::Number(_)) {
            return Ok(Recorded::Unknown);
        }
        self.insert(new, deadline)?;
        Ok(Recorded::New(id))
    }

    /// Updates an open transaction: its last seqNo, and its end when `ended` is given.
    fn update(
        &self,
        charge_point: &str,
        id: &TransactionId,
        last_seq_no: Option<i64>,
        ended: Option<(i64, String)>,
        deadline: Instant,
    ) -> Result<(), StoreError> {
        let (charge_point, id) = (charge_point.to_owned(), id.to_string());
        self.store.write_by(deadline, move |mut tx| async move {
            sqlx::query(
                "UPDATE transactions SET last_seq_no = $1, \
                 ended_ms = COALESCE($2, ended_ms), stop_reason = COALESCE($3, stop_reason) \
                 WHERE identity = $4 AND id = $5 AND ended_ms IS NULL",
            )
            .bind(last_seq_no)
            .bind(ended.as_ref().map(|(ms, _)| *ms))
            .bind(ended.map(|(_, reason)| reason))
            .bind(charge_point)
            .bind(id)
            .execute(&mut *tx)
            .await?;
            Ok(((), tx))
        })
    }

    fn select(
        &self,
        charge_point: &str,
        filter: &'static str,
        id: Option<String>,
    ) -> Result<Vec<LedgerTransaction>, StoreError> {
        let charge_point = charge_point.to_owned();
        self.store.run(move |pool: AnyPool| async move {
            let sql = format!(
                "SELECT {COLUMNS} FROM transactions WHERE identity = $1 AND {filter} \
                 ORDER BY started_ms, id"
            );
            let query = sqlx::query(&sql).bind(charge_point);
            let query = match id {
                Some(id) => query.bind(id),
                None => query,
            };
            let rows = query.fetch_all(&pool).await?;
            rows.iter().map(ledger_transaction).collect()
        })
    }
}

/// What [`SqlLedger::find`] reads of a row.
struct Found {
    ended: bool,
    last_seq_no: Option<i64>,
}

/// A row to insert.
struct NewRow {
    charge_point: String,
    id: TransactionId,
    connector: String,
    token: Option<IdToken>,
    started_ms: i64,
    ended: Option<(i64, String)>,
    last_seq_no: Option<i64>,
    start_key: Option<String>,
}

impl NewRow {
    /// The row of transaction `id` of `charge_point` as a message with these fields says it:
    /// where, who, and when it started (the message's time); not ended, no seqNo, no start
    /// key, until the caller says more.
    fn new(
        charge_point: &str,
        id: &TransactionId,
        (evse, connector): (Option<u32>, Option<u32>),
        token: &Option<IdToken>,
        started: &DateTime,
    ) -> NewRow {
        NewRow {
            charge_point: charge_point.to_owned(),
            id: id.clone(),
            connector: label(id, evse, connector),
            token: token.clone(),
            started_ms: millis(started),
            ended: None,
            last_seq_no: None,
            start_key: None,
        }
    }
}

impl TransactionLedger for SqlLedger {
    type Error = StoreError;

    fn next_transaction_id(&self) -> Result<i32, StoreError> {
        let block = self.store.reserve_by(1, Instant::now() + DATABASE_WAIT)?;
        Ok(block.start)
    }

    fn record_start(
        &self,
        charge_point: &str,
        start: &TransactionStarted,
    ) -> Result<Recorded, StoreError> {
        let deadline = Instant::now() + DATABASE_WAIT;
        let key = StartKey::of(start).map(|key| key.to_string());
        let id = match (&start.id, &key) {
            (Some(id), _) => id.clone(),
            (None, Some(key)) => {
                let sql = "SELECT id FROM transactions WHERE identity = $1 AND start_key = $2";
                let row = self.select_row(sql, charge_point, key.clone(), deadline)?;
                let given: Option<String> = row.map(|row| row.try_get(0)).transpose()?;
                if let Some(id) = given.and_then(|id| id.parse().ok()) {
                    return Ok(Recorded::Repeated(TransactionId::Number(id)));
                }
                TransactionId::Number(self.store.reserve_by(1, deadline)?.start)
            }
            (None, None) => return Ok(Recorded::Unknown),
        };
        let place = (start.evse, start.connector);
        let row = NewRow {
            last_seq_no: start.seq_no.map(i64::from),
            start_key: key,
            ..NewRow::new(charge_point, &id, place, &start.token, &start.timestamp)
        };
        let inserted = self.insert(row, deadline)?;
        Ok(if inserted {
            Recorded::New(id)
        } else {
            Recorded::Repeated(id)
        })
    }

    fn record_update(
        &self,
        charge_point: &str,
        update: &TransactionUpdated,
    ) -> Result<Recorded, StoreError> {
        let deadline = Instant::now() + DATABASE_WAIT;
        let seq_no = update.seq_no.map(i64::from);
        match self.find(charge_point, &update.id, deadline)? {
            Some(row) if row.ended || seen(seq_no, row.last_seq_no) => {
                Ok(Recorded::Repeated(update.id.clone()))
            }
            Some(row) => {
                let last = seq_no.or(row.last_seq_no);
                self.update(charge_point, &update.id, last, None, deadline)?;
                Ok(Recorded::New(update.id.clone()))
            }
            None => {
                let place = (update.evse, update.connector);
                let row = NewRow::new(
                    charge_point,
                    &update.id,
                    place,
                    &update.token,
                    &update.timestamp,
                );
                let row = NewRow {
                    last_seq_no: seq_no,
                    ..row
                };
                self.first_seen(row, deadline)
            }
        }
    }

    fn record_end(
        &self,
        charge_point: &str,
        end: &TransactionEnded,
    ) -> Result<Recorded, StoreError> {
        let deadline = Instant::now() + DATABASE_WAIT;
        // When and why it ended, as the row keeps it.
        let reason = end
            .raw_reason
            .clone()
            .unwrap_or_else(|| end.reason.as_str().to_owned());
        let ended = Some((millis(&end.timestamp), reason));
        let seq_no = end.seq_no.map(i64::from);
        match self.find(charge_point, &end.id, deadline)? {
            Some(row) if row.ended => Ok(Recorded::Repeated(end.id.clone())),
            Some(row) => {
                let last = seq_no.max(row.last_seq_no);
                self.update(charge_point, &end.id, last, ended, deadline)?;
                Ok(Recorded::New(end.id.clone()))
            }
            None => {
                let place = (end.evse, end.connector);
                let row = NewRow::new(charge_point, &end.id, place, &end.token, &end.timestamp);
                let row = NewRow {
                    ended,
                    last_seq_no: seq_no,
                    ..row
                };
                self.first_seen(row, deadline)
            }
        }
    }

    fn open_transactions(&self, charge_point: &str) -> Result<Vec<LedgerTransaction>, StoreError> {
        self.select(charge_point, "ended_ms IS NULL", None)
    }

    fn transaction(
        &self,
        charge_point: &str,
        id: &TransactionId,
    ) -> Result<Option<LedgerTransaction>, StoreError> {
        let found = self.select(charge_point, "id = $2", Some(id.to_string()))?;
        Ok(found.into_iter().next())
    }
}

/// A seqNo already seen (or lower): the message again.
fn seen(seq_no: Option<i64>, last: Option<i64>) -> bool {
    matches!((seq_no, last), (Some(s), Some(l)) if s <= l)
}

/// The connector's label as the CSMS's table has it: 1.6 (a number id) `"2"`, 2.x `"1/2"`.
fn label(id: &TransactionId, evse: Option<u32>, connector: Option<u32>) -> String {
    match (id, evse) {
        (_, None) => String::new(),
        (TransactionId::Number(_), Some(evse)) => evse.to_string(),
        (TransactionId::Text(_), Some(evse)) => format!("{evse}/{}", connector.unwrap_or(1)),
    }
}

/// A time as the table keeps it: milliseconds since the epoch.
fn millis(time: &DateTime) -> i64 {
    let nanos = i64::from(time.nanosecond());
    time.unix_timestamp()
        .saturating_mul(1_000)
        .saturating_add(nanos / 1_000_000)
}

/// A row as a [`LedgerTransaction`] ([`COLUMNS`]).
fn ledger_transaction(row: &AnyRow) -> Result<LedgerTransaction, StoreError> {
    let id: String = row.try_get(0)?;
    let connector: String = row.try_get(1)?;
    let id_tag: Option<String> = row.try_get(2)?;
    let kind: Option<String> = row.try_get(3)?;
    let time = |ms: i64| DateTime::from_unix_timestamp(ms.div_euclid(1_000));
    let ended_ms: Option<i64> = row.try_get(5)?;
    let stop_reason: Option<String> = row.try_get(6)?;
    let start_key: Option<String> = row.try_get(8)?;
    let start_key = start_key.and_then(|key| key.parse::<StartKey>().ok());
    // As this ledger wrote it; a row of the CSMS's own path: 1.6 if it has a start key.
    let text = row.try_get::<Option<i64>, _>(9)?.map(|t| t == 1);
    let id = match (text.unwrap_or(start_key.is_none()), id.parse()) {
        (false, Ok(number)) => TransactionId::Number(number),
        _ => TransactionId::Text(id),
    };
    let bad = |what: &str| StoreError::BadRow(format!("transaction {id}: {what}"));
    Ok(LedgerTransaction {
        evse: connector
            .split('/')
            .next()
            .and_then(|evse| evse.parse().ok()),
        token: id_tag.map(|value| {
            let kind = kind
                .as_deref()
                .map_or(IdTokenType::Iso14443, IdTokenType::from_wire);
            IdToken::new(value, kind)
        }),
        started: Some(time(row.try_get(4)?).ok_or_else(|| bad("start time"))?),
        start_key,
        ended: match ended_ms {
            Some(ms) => Some((
                time(ms).ok_or_else(|| bad("end time"))?,
                stop_reason
                    .as_deref()
                    .map_or(StopReason::Local, StopReason::from_1_6),
            )),
            None => None,
        },
        last_seq_no: row
            .try_get::<Option<i64>, _>(7)?
            .and_then(|n| u32::try_from(n).ok()),
        id,
    })
}

#[cfg(test)]
mod tests;
