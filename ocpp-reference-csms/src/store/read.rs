//! Reading the state back at start: settings, tokens, tariffs and transactions, and the
//! transactions an admin query asks for.

use ocpp_messages::{DateTime, Decimal};
use ocpp_model::AuthorizationStatus;
use sqlx::any::AnyRow;
use sqlx::{AnyPool, Row};

use super::{
    unhex, unix_time, OperatorSettings, Saved, StoreError, TransactionQuery, BOOT_POLICY_CLEARED,
    PROFILE_CLEARED, TARIFF_CLEARED, TARIFF_PREFIX,
};
use crate::{BootPolicy, SecurityProfile, Tariff, TokenEntry, Transaction};

pub(super) async fn load(pool: &AnyPool) -> Result<Saved, StoreError> {
    let mut saved = Saved {
        transactions: transactions(
            pool,
            &TransactionQuery {
                identity: None,
                open_only: true,
                limit: usize::MAX,
            },
        )
        .await?,
        settings: settings(pool).await?,
        ..Saved::default()
    };
    // 1.6 transaction ids are ours, numbers: the next one follows the highest ever given.
    saved.highest_transaction_id = highest_transaction_id(pool).await?;
    Ok(saved)
}

/// The highest number among the transaction ids (1.6 ids are ours, numbers; 2.x ids that
/// happen to be numbers count too: a gap, never a repeat).
pub(super) async fn highest_transaction_id(pool: &AnyPool) -> Result<i64, StoreError> {
    let mut highest = 0i64;
    for row in sqlx::query("SELECT id FROM transactions")
        .fetch_all(pool)
        .await?
    {
        let id: String = row.try_get(0)?;
        if let Ok(n) = id.parse::<i64>() {
            highest = highest.max(n);
        }
    }
    Ok(highest)
}

pub(super) async fn settings(pool: &AnyPool) -> Result<OperatorSettings, StoreError> {
    let mut settings = OperatorSettings::default();
    for row in sqlx::query("SELECT id_token, status, group_id, expiry FROM tokens")
        .fetch_all(pool)
        .await?
    {
        let id: String = row.try_get(0)?;
        let status: String = row.try_get(1)?;
        let status = AuthorizationStatus::from_wire(&status)
            .ok_or_else(|| StoreError::BadRow(format!("token {id}: status {status}")))?;
        let mut entry = TokenEntry::new(status);
        if let Some(group) = row.try_get::<Option<String>, _>(2)? {
            entry = entry.with_group(group);
        }
        if let Some(expiry) = row.try_get::<Option<String>, _>(3)? {
            let expiry = DateTime::parse(&expiry)
                .map_err(|_| StoreError::BadRow(format!("token {id}: expiry {expiry}")))?;
            entry = entry.with_expiry(expiry);
        }
        settings.tokens.push((id, entry));
    }
    settings.tokens_enabled =
        sqlx::query("SELECT value FROM settings WHERE name = 'tokens_enabled'")
            .fetch_optional(pool)
            .await?
            .is_some();
    let rows = sqlx::query(
        "SELECT identity, boot_policy, security_profile, password_sha256, password_removed \
         FROM stations",
    )
    .fetch_all(pool)
    .await?;
    for row in rows {
        let identity: String = row.try_get(0)?;
        match row.try_get::<Option<String>, _>(1)? {
            Some(policy) if policy == BOOT_POLICY_CLEARED => {
                settings.boot_policies.push((identity.clone(), None));
            }
            Some(policy) => {
                let parsed = BootPolicy::parse(&policy).ok_or_else(|| {
                    StoreError::BadRow(format!("{identity}: boot policy {policy}"))
                })?;
                settings
                    .boot_policies
                    .push((identity.clone(), Some(parsed)));
            }
            None => {}
        }
        match row.try_get::<Option<i64>, _>(2)? {
            Some(PROFILE_CLEARED) => settings.security_profiles.push((identity.clone(), None)),
            Some(profile) => {
                let parsed = u64::try_from(profile)
                    .ok()
                    .and_then(SecurityProfile::from_number)
                    .ok_or_else(|| StoreError::BadRow(format!("{identity}: profile {profile}")))?;
                settings
                    .security_profiles
                    .push((identity.clone(), Some(parsed)));
            }
            None => {}
        }
        let digest = row.try_get::<Option<String>, _>(3)?;
        let removed: i64 = row.try_get(4)?;
        match digest {
            Some(digest) => {
                let digest = unhex(&digest)
                    .ok_or_else(|| StoreError::BadRow(format!("{identity}: password digest")))?;
                settings.passwords.push((identity, Some(digest)));
            }
            None if removed != 0 => settings.passwords.push((identity, None)),
            None => {}
        }
    }
    let rows = sqlx::query("SELECT name, value FROM settings WHERE name LIKE 'tariff/%'")
        .fetch_all(pool)
        .await?;
    for row in rows {
        let name: String = row.try_get(0)?;
        let value: String = row.try_get(1)?;
        if let Some(identity) = name.strip_prefix(TARIFF_PREFIX) {
            let tariff = parse_tariff(identity, &value)?;
            settings.tariffs.push((identity.to_owned(), tariff));
        }
    }
    Ok(settings)
}

pub(super) async fn transactions(
    pool: &AnyPool,
    query: &TransactionQuery,
) -> Result<Vec<(String, Transaction)>, StoreError> {
    let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
    let open = if query.open_only {
        " AND ended_ms IS NULL"
    } else {
        ""
    };
    let columns = "identity, id, connector, id_tag, started_ms, ended_ms, stop_reason, \
                   charging_state, meter_start_wh, meter_last_wh, samples, last_seq_no, start_key, \
                   meter_start, meter_last";
    let rows = match &query.identity {
        Some(identity) => {
            sqlx::query(&format!(
                "SELECT {columns} FROM transactions WHERE identity = $1{open} \
                 ORDER BY started_ms DESC LIMIT $2"
            ))
            .bind(identity.as_str())
            .bind(limit)
            .fetch_all(pool)
            .await?
        }
        None => {
            sqlx::query(&format!(
                "SELECT {columns} FROM transactions WHERE 1 = 1{open} \
                 ORDER BY started_ms DESC LIMIT $1"
            ))
            .bind(limit)
            .fetch_all(pool)
            .await?
        }
    };
    rows.iter().map(transaction_of).collect()
}

pub(super) fn transaction_of(row: &AnyRow) -> Result<(String, Transaction), StoreError> {
    let identity: String = row.try_get(0)?;
    let started = unix_time(row.try_get(4)?);
    let transaction = Transaction {
        id: row.try_get(1)?,
        connector: row.try_get(2)?,
        id_tag: row.try_get(3)?,
        started,
        ended: row.try_get::<Option<i64>, _>(5)?.map(unix_time),
        stop_reason: row.try_get(6)?,
        charging_state: row.try_get(7)?,
        meter_start_wh: exact_meter(row, 13, 8)?,
        meter_last_wh: exact_meter(row, 14, 9)?,
        samples: u64::try_from(row.try_get::<i64, _>(10)?).unwrap_or(0),
        last_seq_no: row.try_get(11)?,
        start_key: row.try_get(12)?,
        signed_meter: None,
    };
    Ok((identity, transaction))
}

/// A meter column: its exact text (column `text`), else (a row written before migration 3)
/// the number (column `number`) as the shortest decimal that reads back as it.
pub(super) fn exact_meter(
    row: &AnyRow,
    text: usize,
    number: usize,
) -> Result<Option<Decimal>, StoreError> {
    if let Some(text) = row.try_get::<Option<String>, _>(text)? {
        if let Ok(exact) = text.parse() {
            return Ok(Some(exact));
        }
    }
    let number: Option<f64> = row.try_get(number)?;
    Ok(number.and_then(|n| Decimal::try_from(n).ok()))
}

/// A tariff of the `settings` table (`None`: cleared).
pub(super) fn parse_tariff(identity: &str, text: &str) -> Result<Option<Tariff>, StoreError> {
    if text == TARIFF_CLEARED {
        return Ok(None);
    }
    let bad = || StoreError::BadRow(format!("{identity}: tariff {text}"));
    let mut parts = text.split(' ');
    let (Some(per_kwh), Some(per_hour), Some(currency), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad());
    };
    Tariff::parse(per_kwh, per_hour, currency)
        .map(Some)
        .map_err(|_| bad())
}
