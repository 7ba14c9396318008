//! The CSMS's state in a database: what must survive a crash (open transactions, the token
//! store, and what an operator set per station: boot policy, security profile, Basic
//! password) is written to a [`Store`], and read back at start ([`Store::load`]).
//!
//! - **Backends**: one [`SqlStore`] for SQLite (`sqlite://FILE`, embedded, nothing to
//!   install) and PostgreSQL (`postgres://...`, shared by the nodes of a cluster), through
//!   sqlx's `Any` driver: one schema ([`MIGRATIONS`], in `examples/migrations/`, applied at
//!   start), one set of queries. sqlx because it is the well-kept Rust crate that speaks both
//!   (and migrations) with one API; its async runtime runs on the store's own thread, so that
//!   neither the mio loops nor the tokio workers run database I/O.
//! - **What waits for the disk**: [`Durability::Committed`] returns once the write is
//!   committed (SQLite: `synchronous=FULL`; PostgreSQL: its commit). The CSMS uses it for what
//!   matters for money and authorisation before it acknowledges it: a transaction's start
//!   and end (with the meter values that end it), and every operator change (tokens, boot
//!   policies, security profiles, passwords) before the admin API answers 200.
//!   [`Durability::Later`] queues the write and returns at once: meter values during a
//!   transaction, a password the station accepted. Heartbeat, StatusNotification and pushes
//!   write nothing.
//! - **Group commit**: the store's thread takes every write queued by the time it is free and
//!   commits them in one database transaction, so that many charge points starting
//!   transactions at once share one disk flush.
//! - **A refused write is never written** ([`Store::commit_by`], and each write of a
//!   [`SqlLedger`](crate::SqlLedger)): a caller that gets an error may tell its charge
//!   point or operator "not saved"; nothing of what it asked is kept, then or later
//!   (`store/claim.rs`). A write waits in the queue until the store's thread *claims* it; a
//!   caller whose deadline passes first withdraws it (a compare-and-set on the claim), so
//!   the thread skips it. Once claimed, the write's statements are bounded by the earliest
//!   deadline of its group and the caller waits for the commit's own outcome. The one
//!   outcome no client of any database can know, a `COMMIT` sent whose answer never comes
//!   ([`COMMIT_WAIT`]), is reported as an error too: the CSMS's writes are idempotent, so
//!   the resend that follows changes nothing twice.
//! - **A finished transaction is never rewritten**: the upsert of a transaction leaves a row
//!   whose `ended_ms` is set as it is, and keeps the start it has (time, connector, idTag,
//!   meter start) against a record that does not know it (a StopTransaction sent again after
//!   a restart, for a transaction this process did not hold).
//!
//! ```no_run
//! use ocpp_reference_csms::store::{Durability, Record, SqlStore, Store};
//! let store = SqlStore::open("sqlite://ocpp-csms.sqlite3").unwrap();
//! let saved = store.load().unwrap();
//! println!("{} open transactions", saved.transactions.len());
//! store.save(vec![Record::TokensEnabled], Durability::Committed).unwrap();
//! ```

use std::fmt;
use std::ops::Range;
use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant};

use sqlx::any::AnyPoolOptions;
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::AnyPool;
use tokio::sync::mpsc;

use super::{BootPolicy, SecurityProfile, Tariff, TokenEntry, Transaction, UnixTime};

mod claim;
mod read;
mod write;

use claim::Claim;
use read::{load, settings, transactions};
use write::{in_transaction, reserve_ids, save_all};

/// The schema's migrations, in order: (version, description, SQL). Applied at start by
/// [`SqlStore::open`] (sqlx's `_sqlx_migrations` table remembers which ran).
pub const MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "state", include_str!("../migrations/0001_state.sql")),
    (
        2,
        "start key",
        include_str!("../migrations/0002_start_key.sql"),
    ),
    (
        3,
        "exact meter",
        include_str!("../migrations/0003_exact_meter.sql"),
    ),
    (
        4,
        "counters",
        include_str!("../migrations/0004_counters.sql"),
    ),
];

/// `stations.boot_policy` of a station whose policy was cleared (NULL: never set).
const BOOT_POLICY_CLEARED: &str = "Default";
/// `stations.security_profile` of a station whose profile was cleared (NULL: never set).
const PROFILE_CLEARED: i64 = 0;

/// How long a write or read may wait for the database before it fails. A commit takes
/// milliseconds; this bounds how long a caller (on mio-server, its whole event loop) waits
/// while the database is unreachable before the CALL gets InternalError.
pub const DATABASE_WAIT: Duration = Duration::from_secs(3);

/// How long a `COMMIT` already sent may take before its caller is told it failed (its
/// outcome is then unknown: see the [module](self)).
pub const COMMIT_WAIT: Duration = Duration::from_secs(5);

/// One change to keep.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Record {
    /// A transaction as it is now (inserted or replaced by `(identity, id)`).
    Transaction {
        /// The charge point.
        identity: String,
        /// The transaction.
        transaction: Transaction,
    },
    /// A token set (`Some`) or removed.
    Token {
        /// The idToken.
        id: String,
        /// Its entry.
        entry: Option<TokenEntry>,
    },
    /// The token store is on (unknown tokens are refused), even when empty.
    TokensEnabled,
    /// A station's boot policy set or cleared.
    BootPolicy {
        /// The station.
        identity: String,
        /// Its own policy; `None`: the default.
        policy: Option<BootPolicy>,
    },
    /// A station's security profile set or cleared.
    SecurityProfile {
        /// The station.
        identity: String,
        /// Its own profile; `None`: the server's.
        profile: Option<SecurityProfile>,
    },
    /// A station's Basic password set (its SHA-256 digest) or removed.
    Password {
        /// The station.
        identity: String,
        /// The digest; `None`: removed (overrides the `--basic-auth` file).
        sha256: Option<[u8; 32]>,
    },
    /// A station's own tariff set or cleared (kept in the `settings` table as
    /// `tariff/<identity>`: no schema change).
    Tariff {
        /// The station.
        identity: String,
        /// Its own tariff; `None`: the default.
        tariff: Option<Tariff>,
    },
}

/// Whether [`Store::save`] waits for the commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Returns once committed: the caller may acknowledge what it wrote
    /// ([`Store::commit_by`] with [`DATABASE_WAIT`] from now).
    Committed,
    /// Queued; committed soon (an error is logged).
    Later,
}

/// What the store holds, read at start.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Saved {
    /// Every transaction not ended, with its charge point.
    pub transactions: Vec<(String, Transaction)>,
    /// The highest numeric transaction id ever given (1.6 ids are ours: never reused).
    pub highest_transaction_id: i64,
    /// What operators set.
    pub settings: OperatorSettings,
}

/// What operators set, as the store has it ([`Store::settings`]: read again while running,
/// so that the nodes sharing a database follow each other's changes).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct OperatorSettings {
    /// The token store's entries.
    pub tokens: Vec<(String, TokenEntry)>,
    /// Whether the token store is on.
    pub tokens_enabled: bool,
    /// Boot policies set (`Some`) or cleared back to the default (`None`) per station.
    pub boot_policies: Vec<(String, Option<BootPolicy>)>,
    /// Security profiles set (`Some`) or cleared back to the server's (`None`) per station.
    pub security_profiles: Vec<(String, Option<SecurityProfile>)>,
    /// Basic passwords set per station (`None`: removed).
    pub passwords: Vec<(String, Option<[u8; 32]>)>,
    /// Tariffs set (`Some`) or cleared back to the default (`None`) per station.
    pub tariffs: Vec<(String, Option<Tariff>)>,
}

/// Which transactions [`Store::transactions`] reads.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TransactionQuery {
    /// Only this charge point's.
    pub identity: Option<String>,
    /// Only those not ended.
    pub open_only: bool,
    /// At most this many, the latest started first.
    pub limit: usize,
}

/// Why the store failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database refused or failed (connection, SQL, constraint).
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    /// A migration failed at start.
    #[error("database migration: {0}")]
    Migration(#[from] sqlx::migrate::MigrateError),
    /// The URL names no backend this store speaks.
    #[error("unsupported database URL `{0}`: use sqlite://FILE or postgres://...")]
    UnsupportedUrl(String),
    /// The commit of a write (or of a group of them) failed: the database's error (nothing of
    /// them kept), or a `COMMIT` never answered (whether it was kept nobody knows; the
    /// message says so).
    #[error("the commit failed: {0}")]
    Commit(String),
    /// The database did not answer in time (the write, when there was one, was not kept or,
    /// past its `COMMIT`, see [`StoreError::Commit`]).
    #[error("the database did not answer within {DATABASE_WAIT:?}")]
    Unavailable,
    /// The store's thread has stopped (it failed at start or panicked): nothing more is kept.
    #[error("the store's thread has stopped")]
    Stopped,
    /// A stored row could not be read back (a value out of range, an unknown status).
    #[error("stored row not understood: {0}")]
    BadRow(String),
}

/// Where the CSMS keeps what must survive a crash (see the [module](self)).
pub trait Store: Send + Sync + fmt::Debug {
    /// Everything kept, for the CSMS at start.
    ///
    /// # Errors
    /// The database failed.
    fn load(&self) -> Result<Saved, StoreError>;

    /// What operators set (without the transactions).
    ///
    /// # Errors
    /// The database failed.
    fn settings(&self) -> Result<OperatorSettings, StoreError>;

    /// Keeps `records` (in order, in one database transaction).
    ///
    /// # Errors
    /// With [`Durability::Committed`]: the commit failed (nothing of `records` is kept).
    fn save(&self, records: Vec<Record>, durability: Durability) -> Result<(), StoreError>;

    /// Commits `records` (in order, in one database transaction) and returns once they are
    /// committed, or fails by about `deadline` (plus [`COMMIT_WAIT`] at most, should the
    /// database take the `COMMIT` and not answer). An error means nothing of `records` is
    /// kept, now or later: the write was never started, or rolled back.
    ///
    /// # Errors
    /// The deadline passed before the write could start or finish, or the database failed.
    fn commit_by(&self, records: Vec<Record>, deadline: Instant) -> Result<(), StoreError> {
        let _ = deadline;
        self.save(records, Durability::Committed)
    }

    /// Transactions as the database has them (every node's, on a shared database).
    ///
    /// # Errors
    /// The database failed.
    fn transactions(
        &self,
        query: TransactionQuery,
    ) -> Result<Vec<(String, Transaction)>, StoreError>;

    /// Reserves `count` OCPP 1.6 transaction ids that no other caller on this database (this
    /// process or another node) ever gets: a block the CSMS then gives out one by one.
    /// `None`: this store keeps no shared counter, and the process's own counter (from the
    /// highest id saved) is used.
    ///
    /// # Errors
    /// The database failed, or every id was given out.
    fn reserve_transaction_ids(&self, count: u32) -> Result<Option<Range<i32>>, StoreError> {
        let _ = count;
        Ok(None)
    }

    /// The database, for logs (no password).
    fn describe(&self) -> String;

    /// Waits until every write queued with [`Durability::Later`] is done (bounded by the
    /// store); the servers call it after a graceful shutdown, so that the meter values
    /// received last are kept too.
    fn flush(&self) {}
}

/// A job for the store's thread.
enum Job {
    Save {
        records: Vec<Record>,
        /// The caller waiting for the commit ([`Durability::Later`]: none).
        waiter: Option<Waiter>,
    },
    Load(std_mpsc::SyncSender<Result<Saved, StoreError>>),
    Settings(std_mpsc::SyncSender<Result<OperatorSettings, StoreError>>),
    Transactions(
        TransactionQuery,
        std_mpsc::SyncSender<Result<Vec<(String, Transaction)>, StoreError>>,
    ),
    /// Answered once every job sent before it is done (jobs run in order).
    Flush(std_mpsc::SyncSender<()>),
    /// [`Store::reserve_transaction_ids`].
    ReserveIds(u32, std_mpsc::SyncSender<Result<Range<i32>, StoreError>>),
    /// Any work on the pool ([`SqlStore::run_by`]; with a claim, a write of
    /// [`SqlStore::write_by`], run only if taken); it answers its caller itself.
    Run {
        work: Box<dyn FnOnce(AnyPool) -> BoxFuture + Send>,
        claim: Option<Claim>,
    },
}

/// A database transaction of the store's pool.
pub(crate) type AnyTransaction = sqlx::Transaction<'static, sqlx::Any>;

/// A job's work on the store's thread.
type BoxFuture = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// A caller waiting for its write's commit.
struct Waiter {
    done: std_mpsc::SyncSender<Result<(), StoreError>>,
    claim: Claim,
}

/// [`Store`] on SQLite or PostgreSQL (see the [module](self)).
pub struct SqlStore {
    jobs: mpsc::UnboundedSender<Job>,
    described: String,
}

impl SqlStore {
    /// Connects to `url` (`sqlite://FILE`, created when missing; `postgres://...`), applies
    /// the migrations and starts the store's thread.
    ///
    /// # Errors
    /// An unsupported URL, a database that cannot be reached or migrated.
    pub fn open(url: &str) -> Result<SqlStore, StoreError> {
        let sqlite = url.starts_with("sqlite:");
        if !sqlite && !url.starts_with("postgres://") && !url.starts_with("postgresql://") {
            return Err(StoreError::UnsupportedUrl(without_password(url)));
        }
        let url = if sqlite && !url.contains("mode=") {
            let separator = if url.contains('?') { '&' } else { '?' };
            format!("{url}{separator}mode=rwc")
        } else {
            url.to_owned()
        };
        let described = without_password(&url);
        let (jobs, receiver) = mpsc::unbounded_channel();
        let (ready, started) = std_mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("store".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(e) => {
                        let _ = ready.send(Err(StoreError::Database(sqlx::Error::Io(e))));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let pool = match connect(&url, sqlite).await {
                        Ok(pool) => pool,
                        Err(e) => {
                            let _ = ready.send(Err(e));
                            return;
                        }
                    };
                    let _ = ready.send(Ok(()));
                    serve(pool, receiver).await;
                });
            })
            .map_err(|e| StoreError::Database(sqlx::Error::Io(e)))?;
        answered(started.recv_timeout(DATABASE_WAIT * 3))?;
        Ok(SqlStore { jobs, described })
    }

    /// Runs `work` on the store's thread (in order with the other jobs) and waits for its
    /// outcome until `deadline` (a read: answered late, it is not waited for).
    ///
    /// # Errors
    /// What `work` returns, [`StoreError::Unavailable`] when it did not answer in time, or
    /// [`StoreError::Stopped`].
    pub(crate) fn run_by<T, F, Fut>(&self, deadline: Instant, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(AnyPool) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        let (reply, answer) = std_mpsc::sync_channel(1);
        let job = Job::Run {
            work: Box::new(move |pool| {
                Box::pin(async move {
                    let _ = reply.send(work(pool).await);
                })
            }),
            claim: None,
        };
        self.ask_by(job, answer, deadline)
    }

    /// [`SqlStore::run_by`] with the database wait from now.
    ///
    /// # Errors
    /// As [`SqlStore::run_by`].
    pub(crate) fn run<T, F, Fut>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(AnyPool) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        self.run_by(Instant::now() + DATABASE_WAIT, work)
    }

    /// [`Store::reserve_transaction_ids`], waited for until `deadline` (a block reserved
    /// after it is spent, unused: ids may have gaps, never repeats).
    ///
    /// # Errors
    /// As [`SqlStore::run_by`].
    pub(crate) fn reserve_by(
        &self,
        count: u32,
        deadline: Instant,
    ) -> Result<Range<i32>, StoreError> {
        let (reply, answer) = std_mpsc::sync_channel(1);
        self.ask_by(Job::ReserveIds(count, reply), answer, deadline)
    }

    /// Runs `work` as one write, in a database transaction of its own, under the rule of
    /// [`Store::commit_by`]: not taken by `deadline`, it is never run
    /// ([`StoreError::Unavailable`]); taken, its statements end by `deadline` (else it is
    /// rolled back) and its `COMMIT` within [`COMMIT_WAIT`]. `work` runs its statements on
    /// the transaction it is given and hands it back, with what it found, to be committed.
    ///
    /// # Errors
    /// As [`Store::commit_by`], or what `work` returns (nothing of it kept).
    pub(crate) fn write_by<T, F, Fut>(&self, deadline: Instant, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(AnyTransaction) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<(T, AnyTransaction), StoreError>> + Send + 'static,
    {
        self.claimed(deadline, |claim, reply| Job::Run {
            work: Box::new(move |pool| {
                Box::pin(async move {
                    let _ = reply.send(in_transaction(&pool, deadline, work).await);
                })
            }),
            claim: Some(claim),
        })
    }

    /// Sends the write that `job` makes of its claim and reply channel, and waits for its
    /// outcome under the claim's rule ([`Claim::outcome`]): the one path of
    /// [`Store::commit_by`] and [`SqlStore::write_by`].
    fn claimed<T>(
        &self,
        deadline: Instant,
        job: impl FnOnce(Claim, std_mpsc::SyncSender<Result<T, StoreError>>) -> Job,
    ) -> Result<T, StoreError> {
        if Instant::now() >= deadline {
            return Err(StoreError::Unavailable);
        }
        let claim = Claim::new(deadline);
        let (reply, answer) = std_mpsc::sync_channel(1);
        self.jobs
            .send(job(claim.clone(), reply))
            .map_err(|_| StoreError::Stopped)?;
        wait(|| claim.outcome(&answer))
    }

    fn ask<T>(
        &self,
        job: Job,
        answer: std_mpsc::Receiver<Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        self.ask_by(job, answer, Instant::now() + DATABASE_WAIT)
    }

    fn ask_by<T>(
        &self,
        job: Job,
        answer: std_mpsc::Receiver<Result<T, StoreError>>,
        deadline: Instant,
    ) -> Result<T, StoreError> {
        self.jobs.send(job).map_err(|_| StoreError::Stopped)?;
        let left = deadline.saturating_duration_since(Instant::now());
        answered(wait(|| answer.recv_timeout(left)))
    }
}

impl Store for SqlStore {
    fn load(&self) -> Result<Saved, StoreError> {
        let (reply, answer) = std_mpsc::sync_channel(1);
        self.ask(Job::Load(reply), answer)
    }

    fn settings(&self) -> Result<OperatorSettings, StoreError> {
        let (reply, answer) = std_mpsc::sync_channel(1);
        self.ask(Job::Settings(reply), answer)
    }

    /// Waits (at most twice the database wait, 6 s) until the jobs sent before are done.
    fn flush(&self) {
        let (reply, done) = std_mpsc::sync_channel(1);
        if self.jobs.send(Job::Flush(reply)).is_ok() {
            let _ = done.recv_timeout(DATABASE_WAIT * 2);
        }
    }

    fn save(&self, records: Vec<Record>, durability: Durability) -> Result<(), StoreError> {
        if records.is_empty() {
            return Ok(());
        }
        match durability {
            Durability::Later => self
                .jobs
                .send(Job::Save {
                    records,
                    waiter: None,
                })
                .map_err(|_| StoreError::Stopped),
            Durability::Committed => self.commit_by(records, Instant::now() + DATABASE_WAIT),
        }
    }

    fn commit_by(&self, records: Vec<Record>, deadline: Instant) -> Result<(), StoreError> {
        if records.is_empty() {
            return Ok(());
        }
        self.claimed(deadline, |claim, done| Job::Save {
            records,
            waiter: Some(Waiter { done, claim }),
        })
    }

    fn transactions(
        &self,
        query: TransactionQuery,
    ) -> Result<Vec<(String, Transaction)>, StoreError> {
        let (reply, answer) = std_mpsc::sync_channel(1);
        self.ask(Job::Transactions(query, reply), answer)
    }

    fn reserve_transaction_ids(&self, count: u32) -> Result<Option<Range<i32>>, StoreError> {
        self.reserve_by(count, Instant::now() + DATABASE_WAIT)
            .map(Some)
    }

    fn describe(&self) -> String {
        self.described.clone()
    }
}

impl Drop for SqlStore {
    /// Waits (at most twice the database wait, 6 s) until the writes queued with
    /// [`Durability::Later`] are done, so that what was saved is on the disk when the store
    /// is gone (a graceful shutdown, a store opened again on the same database).
    fn drop(&mut self) {
        Store::flush(self);
    }
}

impl fmt::Debug for SqlStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqlStore")
            .field("database", &self.described)
            .finish()
    }
}

/// The outcome the store's thread sent, or why none came.
fn answered<T>(
    answer: Result<Result<T, StoreError>, std_mpsc::RecvTimeoutError>,
) -> Result<T, StoreError> {
    match answer {
        Ok(outcome) => outcome,
        Err(std_mpsc::RecvTimeoutError::Timeout) => Err(StoreError::Unavailable),
        Err(std_mpsc::RecvTimeoutError::Disconnected) => Err(StoreError::Stopped),
    }
}

/// Runs `blocking` on this thread; inside a multi-thread tokio runtime (tokio-server), tells
/// tokio first so that its other tasks move to other workers meanwhile.
fn wait<T>(blocking: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(blocking)
        }
        _ => blocking(),
    }
}

async fn connect(url: &str, sqlite: bool) -> Result<AnyPool, StoreError> {
    sqlx::any::install_default_drivers();
    let pool = AnyPoolOptions::new()
        // One writer is what SQLite allows anyway; reads take the others.
        .max_connections(if sqlite { 2 } else { 4 })
        .acquire_timeout(DATABASE_WAIT)
        .after_connect(move |connection, _| {
            Box::pin(async move {
                if sqlite {
                    // A database another process (another node) holds is waited for, not
                    // failed at once (first: switching to WAL needs the lock); WAL: readers
                    // do not block the writer; FULL: a commit is on the disk when it returns.
                    for pragma in [
                        "PRAGMA busy_timeout=3000",
                        "PRAGMA journal_mode=WAL",
                        "PRAGMA synchronous=FULL",
                    ] {
                        sqlx::query(pragma).execute(&mut *connection).await?;
                    }
                }
                Ok(())
            })
        })
        .connect(url)
        .await?;
    // Two processes starting on one new database at once (two nodes on one SQLite file) both
    // try the first migration; the one that loses sees it applied when it tries again.
    let mut tries = 0;
    loop {
        match migrator().run(&pool).await {
            Ok(()) => return Ok(pool),
            Err(e) if tries < 5 => {
                tries += 1;
                tracing::debug!("migration, try {tries}: {e}");
                tokio::time::sleep(Duration::from_millis(100 * tries)).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

fn migrator() -> Migrator {
    let migrations = MIGRATIONS
        .iter()
        .map(|(version, description, sql)| {
            Migration::new(
                *version,
                (*description).into(),
                MigrationType::Simple,
                (*sql).into(),
                false,
            )
        })
        .collect::<Vec<_>>();
    Migrator {
        migrations: migrations.into(),
        ..Migrator::DEFAULT
    }
}

/// The store's thread: jobs in order; the saves queued together share one commit.
async fn serve(pool: AnyPool, mut jobs: mpsc::UnboundedReceiver<Job>) {
    while let Some(job) = jobs.recv().await {
        match job {
            Job::Save { records, waiter } => {
                let mut batch = vec![(records, waiter)];
                let mut others = Vec::new();
                while let Ok(next) = jobs.try_recv() {
                    match next {
                        Job::Save { records, waiter } => batch.push((records, waiter)),
                        other => {
                            others.push(other);
                            break;
                        }
                    }
                }
                // Claimed now or never: a write whose caller gave up (or whose deadline
                // passed) is dropped unwritten; its caller hears `Unavailable`.
                batch.retain(|(_, waiter)| waiter.as_ref().is_none_or(|w| w.claim.take()));
                let deadline = batch
                    .iter()
                    .filter_map(|(_, waiter)| waiter.as_ref().map(|w| w.claim.deadline()))
                    .min();
                let result = if batch.is_empty() {
                    Ok(())
                } else {
                    save_all(&pool, batch.iter().flat_map(|(r, _)| r), deadline).await
                };
                if let Err(e) = &result {
                    tracing::error!(
                        "database: the writes of {} callers failed: {e}",
                        batch.len()
                    );
                }
                for (_, waiter) in batch {
                    if let Some(waiter) = waiter {
                        let _ = waiter.done.send(match &result {
                            Ok(()) => Ok(()),
                            Err(e) => Err(StoreError::Commit(e.to_string())),
                        });
                    }
                }
                for other in others {
                    answer(&pool, other).await;
                }
            }
            other => answer(&pool, other).await,
        }
    }
}

async fn answer(pool: &AnyPool, job: Job) {
    match job {
        Job::Save { .. } => {}
        Job::Flush(reply) => {
            let _ = reply.send(());
        }
        Job::Load(reply) => {
            let _ = reply.send(load(pool).await);
        }
        Job::Settings(reply) => {
            let _ = reply.send(settings(pool).await);
        }
        Job::Transactions(query, reply) => {
            let _ = reply.send(transactions(pool, &query).await);
        }
        Job::ReserveIds(count, reply) => {
            let _ = reply.send(reserve_ids(pool, count).await);
        }
        Job::Run { work, claim } => {
            if claim.is_none_or(|claim| claim.take()) {
                work(pool.clone()).await;
            }
        }
    }
}

/// The `settings` names of per-station tariffs: this, then the identity.
const TARIFF_PREFIX: &str = "tariff/";
/// The value of a tariff cleared back to the default.
const TARIFF_CLEARED: &str = "default";

fn millis(time: UnixTime) -> i64 {
    i64::try_from(time.millis()).unwrap_or(i64::MAX)
}

fn unix_time(millis: i64) -> UnixTime {
    UnixTime::from_millis(u64::try_from(millis).unwrap_or(0))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    if text.len() != 64 {
        return None;
    }
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// `url` with the password of its user information replaced by `***`, to log.
///
/// ```
/// use ocpp_reference_csms::store::without_password;
/// assert_eq!(without_password("postgres://u:pw@h/db"), "postgres://u:***@h/db");
/// ```
pub fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let Some((userinfo, host)) = rest.rsplit_once('@') else {
        return url.to_owned();
    };
    let user = userinfo.split_once(':').map_or(userinfo, |(user, _)| user);
    format!("{scheme}://{user}:***@{host}")
}

#[cfg(test)]
pub(crate) mod tests;
