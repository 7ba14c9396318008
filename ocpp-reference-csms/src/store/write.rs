//! Writing the records: one commit for the saves queued together, a write of its own in a
//! database transaction ([`in_transaction`]), and the 1.6 transaction ids reserved from the
//! database's counter.

use std::ops::Range;
use std::time::Instant;

use ocpp_messages::Decimal;
use sqlx::{AnyPool, Row};

use super::read::highest_transaction_id;
use super::{
    hex, millis, AnyTransaction, Record, StoreError, BOOT_POLICY_CLEARED, COMMIT_WAIT,
    PROFILE_CLEARED, TARIFF_CLEARED, TARIFF_PREFIX,
};
use crate::{BootPolicy, Tariff};

/// The counter of 1.6 transaction ids ([`Store::reserve_transaction_ids`]).
pub(super) const TRANSACTION_ID: &str = "transaction_id";

/// Reserves `count` ids: the counter moves by `count` in one statement (`UPDATE ...
/// RETURNING`: a row lock in PostgreSQL, the one writer in SQLite), so two nodes never get
/// the same block. The counter starts, once, after the highest id the table holds (a
/// database from before migration 4).
pub(super) async fn reserve_ids(pool: &AnyPool, count: u32) -> Result<Range<i32>, StoreError> {
    let take = || {
        sqlx::query("UPDATE counters SET value = value + $1 WHERE name = $2 RETURNING value")
            .bind(i64::from(count))
            .bind(TRANSACTION_ID)
            .fetch_optional(pool)
    };
    let last: i64 = match take().await? {
        Some(row) => row.try_get(0)?,
        None => {
            let highest = highest_transaction_id(pool).await?;
            // Should another node start it first, its start stands.
            sqlx::query(
                "INSERT INTO counters (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
            )
            .bind(TRANSACTION_ID)
            .bind(highest)
            .execute(pool)
            .await?;
            let row = take().await?;
            row.ok_or_else(|| StoreError::BadRow("no transaction id counter".into()))?
                .try_get(0)?
        }
    };
    let exhausted =
        || StoreError::BadRow(format!("every 1.6 transaction id was given out ({last})"));
    let end = i32::try_from(last.saturating_add(1)).map_err(|_| exhausted())?;
    let count = i32::try_from(count).map_err(|_| exhausted())?;
    let start = end.checked_sub(count).ok_or_else(exhausted)?;
    Ok(start..end)
}

/// Writes `records` in one database transaction: its statements end by `deadline` (else it
/// is rolled back), its `COMMIT` within [`COMMIT_WAIT`].
pub(super) async fn save_all<'a>(
    pool: &AnyPool,
    records: impl Iterator<Item = &'a Record>,
    deadline: Option<Instant>,
) -> Result<(), StoreError> {
    let statements = write_all(pool, records);
    let tx = match deadline {
        Some(deadline) => tokio::time::timeout_at(deadline.into(), statements)
            .await
            .map_err(|_| StoreError::Unavailable)??,
        // Only queued writes: the pool's own timeouts bound them.
        None => statements.await?,
    };
    commit(tx).await
}

/// Runs `work`'s statements in a database transaction, by `deadline` (else it is rolled
/// back), then commits it ([`commit`]).
pub(super) async fn in_transaction<T, F, Fut>(
    pool: &AnyPool,
    deadline: Instant,
    work: F,
) -> Result<T, StoreError>
where
    F: FnOnce(AnyTransaction) -> Fut,
    Fut: std::future::Future<Output = Result<(T, AnyTransaction), StoreError>>,
{
    let statements = async { work(pool.begin().await?).await };
    let (found, tx) = tokio::time::timeout_at(deadline.into(), statements)
        .await
        .map_err(|_| StoreError::Unavailable)??;
    commit(tx).await?;
    Ok(found)
}

/// Commits `tx`, within [`COMMIT_WAIT`]: a `COMMIT` not answered by then is an error whose
/// outcome nobody knows.
async fn commit(tx: AnyTransaction) -> Result<(), StoreError> {
    match tokio::time::timeout(COMMIT_WAIT, tx.commit()).await {
        Ok(committed) => Ok(committed?),
        Err(_) => Err(StoreError::Commit(format!(
            "the COMMIT was not answered within {COMMIT_WAIT:?}"
        ))),
    }
}

/// The statements of `records`, in an open database transaction (dropped: rolled back).
pub(super) async fn write_all<'a>(
    pool: &AnyPool,
    records: impl Iterator<Item = &'a Record>,
) -> Result<sqlx::Transaction<'static, sqlx::Any>, sqlx::Error> {
    let mut tx = pool.begin().await?;
    for record in records {
        match record {
            Record::Transaction {
                identity,
                transaction: t,
            } => {
                // A row already ended is left as it is (`WHERE`); a row's start (time,
                // connector, idTag, meter start, start key) is kept against a record that
                // does not know it. A meter value is bound as a flag and a number, never as
                // a NULL float: sqlx 0.8.6's `Any` driver sends a NULL `f64` typed FLOAT4
                // (sqlx-core src/any/arguments.rs maps `Double` to `Option::<f32>`), and
                // PostgreSQL's cached statement then refuses every later 8-byte value
                // ("incorrect binary data format in bind parameter").
                // The exact text is what is read back; the number serves SQL arithmetic.
                let (start_known, meter_start) = flagged(t.meter_start_wh.map(Decimal::to_f64));
                let (last_known, meter_last) = flagged(t.meter_last_wh.map(Decimal::to_f64));
                sqlx::query(
                    "INSERT INTO transactions (identity, id, connector, id_tag, started_ms, \
                     ended_ms, stop_reason, charging_state, meter_start_wh, meter_last_wh, \
                     samples, last_seq_no, start_key, meter_start, meter_last) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, \
                     CASE WHEN $9 = 1 THEN $10 ELSE NULL END, \
                     CASE WHEN $11 = 1 THEN $12 ELSE NULL END, $13, $14, $15, $16, $17) \
                     ON CONFLICT (identity, id) DO UPDATE SET \
                     connector = CASE WHEN excluded.connector = '' \
                         THEN transactions.connector ELSE excluded.connector END, \
                     id_tag = COALESCE(transactions.id_tag, excluded.id_tag), \
                     started_ms = CASE WHEN transactions.started_ms < excluded.started_ms \
                         THEN transactions.started_ms ELSE excluded.started_ms END, \
                     ended_ms = excluded.ended_ms, stop_reason = excluded.stop_reason, \
                     charging_state = excluded.charging_state, \
                     meter_start_wh = COALESCE(transactions.meter_start_wh, \
                         excluded.meter_start_wh), \
                     meter_last_wh = excluded.meter_last_wh, samples = excluded.samples, \
                     meter_start = CASE WHEN transactions.meter_start_wh IS NULL \
                         THEN excluded.meter_start ELSE transactions.meter_start END, \
                     meter_last = excluded.meter_last, \
                     last_seq_no = excluded.last_seq_no, \
                     start_key = COALESCE(transactions.start_key, excluded.start_key) \
                     WHERE transactions.ended_ms IS NULL",
                )
                .bind(identity.as_str())
                .bind(t.id.as_str())
                .bind(t.connector.as_str())
                .bind(t.id_tag.as_deref())
                .bind(millis(t.started))
                .bind(t.ended.map(millis))
                .bind(t.stop_reason.as_deref())
                .bind(t.charging_state.as_deref())
                .bind(start_known)
                .bind(meter_start)
                .bind(last_known)
                .bind(meter_last)
                .bind(i64::try_from(t.samples).unwrap_or(i64::MAX))
                .bind(t.last_seq_no)
                .bind(t.start_key.as_deref())
                .bind(t.meter_start_wh.map(|m| m.to_string()))
                .bind(t.meter_last_wh.map(|m| m.to_string()))
                .execute(&mut *tx)
                .await?;
            }
            Record::Token {
                id,
                entry: Some(entry),
            } => {
                sqlx::query(
                    "INSERT INTO tokens (id_token, status, group_id, expiry) VALUES ($1, $2, $3, \
                     $4) ON CONFLICT (id_token) DO UPDATE SET status = excluded.status, \
                     group_id = excluded.group_id, expiry = excluded.expiry",
                )
                .bind(id.as_str())
                .bind(entry.status.as_str())
                .bind(entry.group.as_deref())
                .bind(entry.expiry.as_ref().map(|e| e.as_str().to_owned()))
                .execute(&mut *tx)
                .await?;
                set_tokens_enabled(&mut tx).await?;
            }
            Record::Token { id, entry: None } => {
                sqlx::query("DELETE FROM tokens WHERE id_token = $1")
                    .bind(id.as_str())
                    .execute(&mut *tx)
                    .await?;
                set_tokens_enabled(&mut tx).await?;
            }
            Record::TokensEnabled => set_tokens_enabled(&mut tx).await?,
            Record::BootPolicy { identity, policy } => {
                sqlx::query(
                    "INSERT INTO stations (identity, boot_policy) VALUES ($1, $2) \
                     ON CONFLICT (identity) DO UPDATE SET boot_policy = excluded.boot_policy",
                )
                .bind(identity.as_str())
                .bind(policy.map_or(BOOT_POLICY_CLEARED, BootPolicy::as_str))
                .execute(&mut *tx)
                .await?;
            }
            Record::SecurityProfile { identity, profile } => {
                sqlx::query(
                    "INSERT INTO stations (identity, security_profile) VALUES ($1, $2) \
                     ON CONFLICT (identity) DO UPDATE SET \
                     security_profile = excluded.security_profile",
                )
                .bind(identity.as_str())
                .bind(profile.map_or(PROFILE_CLEARED, |p| i64::from(p.number())))
                .execute(&mut *tx)
                .await?;
            }
            Record::Password { identity, sha256 } => {
                sqlx::query(
                    "INSERT INTO stations (identity, password_sha256, password_removed) \
                     VALUES ($1, $2, $3) ON CONFLICT (identity) DO UPDATE SET \
                     password_sha256 = excluded.password_sha256, \
                     password_removed = excluded.password_removed",
                )
                .bind(identity.as_str())
                .bind(sha256.map(|digest| hex(&digest)))
                .bind(i64::from(sha256.is_none()))
                .execute(&mut *tx)
                .await?;
            }
            Record::Tariff { identity, tariff } => {
                sqlx::query(
                    "INSERT INTO settings (name, value) VALUES ($1, $2) \
                     ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                )
                .bind(format!("{TARIFF_PREFIX}{identity}"))
                .bind(tariff.map_or(TARIFF_CLEARED.to_owned(), |t| tariff_text(&t)))
                .execute(&mut *tx)
                .await?;
            }
        }
    }
    Ok(tx)
}

/// An optional number as a flag (1: present) and a value (0 when absent), for
/// `CASE WHEN flag = 1 THEN value ELSE NULL END` (see the transaction's upsert).
pub(super) fn flagged(value: Option<f64>) -> (i64, f64) {
    (i64::from(value.is_some()), value.unwrap_or(0.0))
}

/// A tariff as the `settings` table keeps it: `<per kWh> <per hour> <currency>`.
pub(super) fn tariff_text(tariff: &Tariff) -> String {
    format!("{} {} {}", tariff.per_kwh, tariff.per_hour, tariff.currency)
}

pub(super) async fn set_tokens_enabled(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO settings (name, value) VALUES ('tokens_enabled', 'true') \
         ON CONFLICT (name) DO NOTHING",
    )
    .execute(&mut **tx)
    .await
    .map(|_| ())
}
