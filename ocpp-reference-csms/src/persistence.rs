//! What the CSMS keeps in its [`Store`]: read back at start ([`Csms::open`]), written as it
//! changes. The rules (see [`super::store`] for the backends):
//!
//! - A transaction that starts or ends is committed before the CALLRESULT that acknowledges
//!   it goes out (StartTransaction, StopTransaction with the meter values that end it,
//!   TransactionEvent Started and Ended, in every version); if the commit fails the charge
//!   point gets CALLERROR InternalError and sends it again, as OCPP-J lets it; nothing of
//!   a refused CALL is kept, and a resend is answered as the first one was (the rule and
//!   its paths: [`super::ledger`]). Other changes to a transaction (meter values, Updated
//!   events) are queued.
//! - An operator's change (token, boot policy, security profile, password, tariff) is
//!   committed before it takes effect and before the admin API answers 200; a failed commit
//!   changes nothing and answers 503.
//! - While running, what operators set is read again every [`SETTINGS_REFRESH`]
//!   ([`Csms::follow_store`]): nodes sharing a database follow each other's changes.
//! - At start: open transactions come back on their charge points (so a StopTransaction
//!   after a crash ends the transaction it started), 1.6 transaction ids go on from the
//!   highest ever given, and the store's tokens, boot policies, profiles, passwords and
//!   tariffs win over the files given at start (`--tokens` seeds the store once, when the
//!   database has none yet; `--basic-auth` and `--security-profiles` stay the defaults for
//!   stations the operator did not change). A station's tariff is a `settings` row
//!   `tariff/<identity>` (no schema change).

use std::sync::{Arc, MutexGuard};
use std::time::Duration;

use ocpp_proto::ChargePointIdentity;

use super::store::{
    Durability, OperatorSettings, Record, Saved, Store, StoreError, TransactionQuery,
};
use super::{Credentials, Csms, CsmsConfig, TokenEntry, TokenStore, Transaction};

/// How often a CSMS with a store reads what operators set again ([`Csms::follow_store`]).
pub const SETTINGS_REFRESH: Duration = Duration::from_secs(2);

impl Csms {
    /// A CSMS that starts from what its store ([`CsmsConfig::store`]) kept: the same as
    /// [`Csms::new`] without one.
    ///
    /// ```
    /// use ocpp_reference_csms::{Csms, CsmsConfig};
    /// let csms = Csms::open(CsmsConfig::default()).unwrap();
    /// assert!(csms.connected().is_empty());
    /// ```
    ///
    /// # Errors
    /// The store could not be read, or the seed tokens of `--tokens` not written.
    pub fn open(config: CsmsConfig) -> Result<Csms, StoreError> {
        let store = config.get_store().cloned();
        let csms = Csms::new(config);
        if let Some(store) = store {
            let saved = store.load()?;
            csms.restore(&*store, saved)?;
        }
        Ok(csms)
    }

    fn restore(&self, store: &dyn Store, saved: Saved) -> Result<(), StoreError> {
        let open = saved.transactions.len();
        {
            let mut fleet = self.lock();
            for (identity, transaction) in saved.transactions {
                match ChargePointIdentity::new(identity.clone(), false) {
                    Ok(identity) => fleet.entry(&identity).transactions.push(transaction),
                    Err(e) => tracing::warn!(identity, "stored transaction skipped: {e}"),
                }
            }
        }
        let highest = i32::try_from(saved.highest_transaction_id).unwrap_or(i32::MAX);
        self.transaction_ids.after(highest);
        self.transaction_ids.share(store);
        if !saved.settings.tokens_enabled {
            if let Some(seed) = self.tokens() {
                // The first start on this database: the --tokens file becomes the store's.
                let mut records: Vec<Record> = seed
                    .iter()
                    .map(|(id, entry)| Record::Token {
                        id: id.to_owned(),
                        entry: Some(entry.clone()),
                    })
                    .collect();
                records.push(Record::TokensEnabled);
                store.save(records, Durability::Committed)?;
            }
        }
        let credentials_ignored = self.apply_settings(saved.settings);
        if credentials_ignored {
            tracing::warn!(
                "the database holds security profiles or passwords, but this server runs \
                 without --basic-auth or --security-profiles: they are not used"
            );
        }
        tracing::info!(
            database = store.describe(),
            open_transactions = open,
            "state restored"
        );
        Ok(())
    }

    /// Takes what operators set as the store has it (at start, and every
    /// [`SETTINGS_REFRESH`] while running: another node sharing the database may have changed
    /// it). Returns whether profiles or passwords were there without a credentials store to
    /// take them.
    fn apply_settings(&self, settings: OperatorSettings) -> bool {
        if settings.tokens_enabled {
            let mut tokens = self.tokens.write().unwrap_or_else(|p| p.into_inner());
            let master_pass = tokens
                .as_ref()
                .and_then(|t| t.master_pass().map(str::to_owned));
            let mut store = TokenStore::default().with_master_pass(master_pass);
            for (id, entry) in settings.tokens {
                if let Err(e) = store.insert(&id, entry) {
                    tracing::warn!("stored token skipped: {e}");
                }
            }
            *tokens = Some(store);
        }
        {
            let mut fleet = self.lock();
            for (identity, policy) in &settings.boot_policies {
                let Ok(identity) = ChargePointIdentity::new(identity.clone(), false) else {
                    continue;
                };
                match policy {
                    Some(policy) => fleet.entry(&identity).boot_policy = Some(*policy),
                    None => {
                        if let Some(cp) = fleet.get_mut(identity.as_str()) {
                            cp.boot_policy = None;
                        }
                    }
                }
            }
        }
        if !settings.tariffs.is_empty() {
            let mut fleet = self.lock();
            for (identity, tariff) in &settings.tariffs {
                let Ok(identity) = ChargePointIdentity::new(identity.clone(), false) else {
                    continue;
                };
                match tariff {
                    Some(tariff) => fleet.entry(&identity).extras.get_mut().tariff = Some(*tariff),
                    None => {
                        if let Some(cp) = fleet.get_mut(identity.as_str()) {
                            if cp.extras.tariff.is_some() {
                                cp.extras.get_mut().tariff = None;
                            }
                        }
                    }
                }
            }
        }
        let mut credentials = self.credentials.write().unwrap_or_else(|p| p.into_inner());
        match credentials.as_mut() {
            Some(credentials) => {
                for (identity, profile) in &settings.security_profiles {
                    credentials.set_profile(identity, *profile);
                }
                for (identity, digest) in &settings.passwords {
                    credentials.set_password_digest(identity, *digest);
                }
                false
            }
            None => !settings.security_profiles.is_empty() || !settings.passwords.is_empty(),
        }
    }

    /// Follows the store while `csms` lives: every [`SETTINGS_REFRESH`], what operators set
    /// is read again (a thread of its own; nothing to do without a store). The nodes that
    /// share a database so see each other's token, boot policy, profile and password changes
    /// within that time.
    pub fn follow_store(csms: &Arc<Csms>) {
        if !csms.has_store() {
            return;
        }
        let weak = Arc::downgrade(csms);
        let spawned = std::thread::Builder::new()
            .name("store-follow".into())
            .spawn(move || loop {
                std::thread::sleep(SETTINGS_REFRESH);
                let Some(csms) = weak.upgrade() else {
                    return;
                };
                if let Err(e) = csms.refresh_settings() {
                    tracing::warn!("settings not refreshed from the database: {e}");
                }
            });
        if let Err(e) = spawned {
            tracing::error!("cannot follow the database's settings: {e}");
        }
    }

    /// Reads what operators set from the store and takes it (see [`Csms::follow_store`]).
    ///
    /// # Errors
    /// The store failed; nothing changed.
    pub fn refresh_settings(&self) -> Result<(), StoreError> {
        let Some(store) = self.config.get_store() else {
            return Ok(());
        };
        // A change of this node's own is made whole (committed, then applied) or not at all
        // while the settings are read and applied: a read from before it cannot undo it.
        let _changes = self.settings_changes();
        let settings = store.settings()?;
        self.apply_settings(settings);
        Ok(())
    }

    /// Held while an operator's change is committed and applied, or while the settings are
    /// read again from the store: one at a time.
    pub(super) fn settings_changes(&self) -> MutexGuard<'_, ()> {
        self.settings_changes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps `records` in the store, if there is one (nothing to do otherwise).
    pub(super) fn keep(
        &self,
        records: Vec<Record>,
        durability: Durability,
    ) -> Result<(), StoreError> {
        match self.config.get_store() {
            Some(store) => store.save(records, durability),
            None => Ok(()),
        }
    }

    /// Commits `records` off the caller's thread, trying again (three times, a second
    /// apart) while the database fails: for what has already happened at the charge point
    /// and cannot be refused (a password it changed), so that no I/O loop waits for the
    /// database. Returns at once; the outcome is logged.
    pub(super) fn keep_in_background(&self, records: Vec<Record>, what: &'static str) {
        let Some(store) = self.config.get_store().cloned() else {
            return;
        };
        let spawned = std::thread::Builder::new()
            .name("keep".into())
            .spawn(move || {
                for attempt in 1..=3 {
                    match store.save(records.clone(), Durability::Committed) {
                        Ok(()) => return,
                        Err(e) => tracing::warn!(attempt, "{what} not saved yet: {e}"),
                    }
                    std::thread::sleep(std::time::Duration::from_secs(1));
                }
                tracing::error!("{what} not saved: the database failed three times");
            });
        if let Err(e) = spawned {
            tracing::error!("{what} not saved: no thread to save it ({e})");
        }
    }

    /// Whether a store keeps the state (else memory only).
    pub fn has_store(&self) -> bool {
        self.config.get_store().is_some()
    }

    /// Waits until the writes queued for the store are done ([`Store::flush`]); the servers'
    /// binaries call it once the server stopped.
    ///
    /// ```
    /// use ocpp_reference_csms::{Csms, CsmsConfig};
    /// Csms::new(CsmsConfig::default()).flush(); // no store: nothing to wait for
    /// ```
    pub fn flush(&self) {
        if let Some(store) = self.config.get_store() {
            store.flush();
        }
    }

    /// Transactions as the store has them: on a database the nodes of a cluster share, every
    /// node's; without a store, those this process knows (the same shape).
    ///
    /// # Errors
    /// The store failed.
    pub fn stored_transactions(
        &self,
        query: TransactionQuery,
    ) -> Result<Vec<(String, Transaction)>, StoreError> {
        if let Some(store) = self.config.get_store() {
            return store.transactions(query);
        }
        let fleet = self.lock();
        let mut found: Vec<(String, Transaction)> = fleet
            .values()
            .filter(|cp| {
                query
                    .identity
                    .as_deref()
                    .is_none_or(|id| cp.identity.as_str() == id)
            })
            .flat_map(|cp| {
                cp.transactions
                    .iter()
                    .filter(|t| !query.open_only || t.is_active())
                    .map(|t| (cp.identity.as_str().to_owned(), t.clone()))
            })
            .collect();
        found.sort_by_key(|(_, t)| std::cmp::Reverse(t.started));
        found.truncate(query.limit);
        Ok(found)
    }

    /// Sets a token through the store: committed first, then in effect.
    ///
    /// # Errors
    /// A bad token (`Err` text for 400), or the store's failure (for 503).
    pub fn put_token(&self, id: &str, entry: TokenEntry) -> Result<(), ChangeError> {
        let _changes = self.settings_changes();
        // Checked as the store would check it, before anything is written.
        TokenStore::default()
            .insert(id, entry.clone())
            .map_err(ChangeError::Invalid)?;
        let record = Record::Token {
            id: id.to_owned(),
            entry: Some(entry.clone()),
        };
        self.keep(vec![record], Durability::Committed)?;
        self.edit_tokens(|store| store.insert(id, entry))
            .map_err(ChangeError::Invalid)
    }

    /// Removes a token through the store; whether it was there.
    ///
    /// # Errors
    /// The store's failure.
    pub fn remove_token(&self, id: &str) -> Result<bool, StoreError> {
        let _changes = self.settings_changes();
        if self.tokens().is_none_or(|store| store.get(id).is_none()) {
            return Ok(false);
        }
        self.keep(
            vec![Record::Token {
                id: id.to_owned(),
                entry: None,
            }],
            Durability::Committed,
        )?;
        Ok(self.edit_tokens(|store| store.remove(id)))
    }

    /// An operator's change to the credentials store: committed first (with `record`), then
    /// `apply`; refused without a credentials store (creating one would refuse every station
    /// without a password).
    pub(super) fn change_credentials(
        &self,
        record: Record,
        apply: impl FnOnce(&mut Credentials),
    ) -> Result<(), ChangeError> {
        let _changes = self.settings_changes();
        let no_store = self
            .credentials
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_none();
        if no_store {
            return Err(ChangeError::NoCredentials);
        }
        self.keep(vec![record], Durability::Committed)?;
        let mut credentials = self.credentials.write().unwrap_or_else(|p| p.into_inner());
        let credentials = credentials.as_mut().ok_or(ChangeError::NoCredentials)?;
        apply(credentials);
        Ok(())
    }
}

/// Why an operator's change was not made (nothing changed).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChangeError {
    /// The value is not valid (the admin API answers 400).
    #[error("{0}")]
    Invalid(String),
    /// There is no credentials store to change (409): creating one would refuse every
    /// station without a password.
    #[error("no credentials store: start the server with --basic-auth or --security-profiles")]
    NoCredentials,
    /// The store could not commit it (503).
    #[error("not saved: {0}")]
    Store(#[from] StoreError),
}

impl ChangeError {
    /// The admin API's status for it.
    pub fn http_status(&self) -> u16 {
        match self {
            ChangeError::Invalid(_) => 400,
            ChangeError::NoCredentials => 409,
            ChangeError::Store(_) => 503,
        }
    }
}

/// The transactions of `after` that are new or changed against `before`, and whether one of
/// them started or ended (then the answer waits for the commit).
pub(super) fn changed_transactions(
    identity: &ChargePointIdentity,
    before: &[Transaction],
    after: &[Transaction],
) -> (Vec<Record>, Durability) {
    let mut durability = Durability::Later;
    let mut records = Vec::new();
    for transaction in after {
        let old = before.iter().find(|t| t.id == transaction.id);
        if old == Some(transaction) {
            continue;
        }
        let started = old.is_none();
        let ended = transaction.ended.is_some() && old.is_none_or(|t| t.ended.is_none());
        if started || ended {
            durability = Durability::Committed;
        }
        records.push(Record::Transaction {
            identity: identity.as_str().to_owned(),
            transaction: transaction.clone(),
        });
    }
    (records, durability)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::UnixTime;
    use ocpp_messages::Decimal;

    fn transaction(id: &str) -> Transaction {
        Transaction {
            id: id.into(),
            connector: "1".into(),
            id_tag: None,
            started: UnixTime::from_millis(1),
            ended: None,
            stop_reason: None,
            charging_state: None,
            meter_start_wh: Some(Decimal::ZERO),
            meter_last_wh: Some(Decimal::ZERO),
            samples: 0,
            last_seq_no: None,
            start_key: None,
            signed_meter: None,
        }
    }

    #[test]
    fn a_start_or_an_end_waits_for_the_commit_other_changes_do_not() {
        let identity = ChargePointIdentity::new("CP1".into(), false).unwrap();
        let (records, durability) = changed_transactions(&identity, &[], &[transaction("1")]);
        assert_eq!((records.len(), durability), (1, Durability::Committed));
        let before = vec![transaction("1")];
        let mut metered = before.clone();
        metered[0].meter_last_wh = Some(Decimal::from(5));
        let (records, durability) = changed_transactions(&identity, &before, &metered);
        assert_eq!((records.len(), durability), (1, Durability::Later));
        let mut ended = metered.clone();
        ended[0].ended = Some(UnixTime::from_millis(9));
        let (records, durability) = changed_transactions(&identity, &metered, &ended);
        assert_eq!((records.len(), durability), (1, Durability::Committed));
        let (records, _) = changed_transactions(&identity, &ended, &ended);
        assert!(records.is_empty());
    }
}
