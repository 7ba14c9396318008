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
//! - **A refused write is never written** ([`Store::commit_by`]): a caller that gets an error
//!   may tell its charge point or operator "not saved"; nothing of what it asked is kept,
//!   then or later. A write waits in the queue until the store's thread *claims* it; a
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
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc as std_mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ocpp_messages::{DateTime, Decimal};
use sqlx::any::{AnyPoolOptions, AnyRow};
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::{AnyPool, Row};
use tokio::sync::mpsc;

use super::{BootPolicy, SecurityProfile, Tariff, TokenEntry, TokenStatus, Transaction, UnixTime};

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
    pub settings: Settings,
}

/// What operators set, as the store has it ([`Store::settings`]: read again while running,
/// so that the nodes sharing a database follow each other's changes).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Settings {
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
    /// The commit of a group of writes failed (the database's error; nothing of them kept).
    #[error("the commit failed: {0}")]
    Commit(String),
    /// The store's thread is gone, or did not answer in time.
    #[error("the database did not answer within {DATABASE_WAIT:?}")]
    Unavailable,
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
    fn settings(&self) -> Result<Settings, StoreError>;

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
    Settings(std_mpsc::SyncSender<Result<Settings, StoreError>>),
    Transactions(
        TransactionQuery,
        std_mpsc::SyncSender<Result<Vec<(String, Transaction)>, StoreError>>,
    ),
    /// Answered once every job sent before it is done (jobs run in order).
    Flush(std_mpsc::SyncSender<()>),
    /// [`Store::reserve_transaction_ids`].
    ReserveIds(u32, std_mpsc::SyncSender<Result<Range<i32>, StoreError>>),
    /// Any work on the pool ([`SqlStore::run`]); it answers its caller itself.
    Run(Box<dyn FnOnce(AnyPool) -> BoxFuture + Send>),
}

/// A job's work on the store's thread.
type BoxFuture = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// A caller waiting for its write's commit: the claim it and the store's thread race for.
struct Waiter {
    done: std_mpsc::SyncSender<Result<(), StoreError>>,
    claim: Arc<AtomicU8>,
    deadline: Instant,
}

/// [`Waiter::claim`]: queued, neither taken nor withdrawn yet.
const QUEUED: u8 = 0;
/// The store's thread took the write: its outcome is the commit's.
const TAKEN: u8 = 1;
/// The caller gave up first: the write is skipped, never written.
const WITHDRAWN: u8 = 2;

impl Waiter {
    /// The store's thread takes the write, unless its caller withdrew it or its deadline
    /// passed (then the caller is told so, and it is never written).
    fn take(&self) -> bool {
        if Instant::now() >= self.deadline {
            return false;
        }
        self.claim
            .compare_exchange(QUEUED, TAKEN, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }
}

/// [`Store`] on SQLite or PostgreSQL (see the [module](self)).
pub struct SqlStore {
    jobs: mpsc::UnboundedSender<Job>,
    described: String,
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
        match started.recv_timeout(DATABASE_WAIT * 3) {
            Ok(Ok(())) => Ok(SqlStore { jobs, described }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(StoreError::Unavailable),
        }
    }

    /// Runs `work` on the store's thread (in order with the other jobs) and waits for its
    /// outcome, at most the database wait.
    ///
    /// # Errors
    /// What `work` returns, or [`StoreError::Unavailable`] when it did not answer in time.
    pub(crate) fn run<T, F, Fut>(&self, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(AnyPool) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        let (reply, answer) = std_mpsc::sync_channel(1);
        let job = Job::Run(Box::new(move |pool| {
            Box::pin(async move {
                let _ = reply.send(work(pool).await);
            })
        }));
        self.ask(job, answer)
    }

    fn ask<T>(
        &self,
        job: Job,
        answer: std_mpsc::Receiver<Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        self.jobs.send(job).map_err(|_| StoreError::Unavailable)?;
        wait(|| answer.recv_timeout(DATABASE_WAIT)).map_err(|_| StoreError::Unavailable)?
    }
}

impl Store for SqlStore {
    fn load(&self) -> Result<Saved, StoreError> {
        let (reply, answer) = std_mpsc::sync_channel(1);
        self.ask(Job::Load(reply), answer)
    }

    fn settings(&self) -> Result<Settings, StoreError> {
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
                .map_err(|_| StoreError::Unavailable),
            Durability::Committed => self.commit_by(records, Instant::now() + DATABASE_WAIT),
        }
    }

    fn commit_by(&self, records: Vec<Record>, deadline: Instant) -> Result<(), StoreError> {
        if records.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(StoreError::Unavailable);
        }
        let claim = Arc::new(AtomicU8::new(QUEUED));
        let (done, answer) = std_mpsc::sync_channel(1);
        let waiter = Waiter {
            done,
            claim: Arc::clone(&claim),
            deadline,
        };
        let job = Job::Save {
            records,
            waiter: Some(waiter),
        };
        self.jobs.send(job).map_err(|_| StoreError::Unavailable)?;
        wait(|| {
            let left = deadline.saturating_duration_since(Instant::now());
            match answer.recv_timeout(left) {
                Ok(outcome) => return outcome,
                Err(std_mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(StoreError::Unavailable)
                }
                Err(std_mpsc::RecvTimeoutError::Timeout) => {}
            }
            let withdrawn = claim
                .compare_exchange(QUEUED, WITHDRAWN, Ordering::AcqRel, Ordering::Acquire)
                .is_ok();
            if withdrawn {
                return Err(StoreError::Unavailable);
            }
            // Taken: its statements end by the deadline and its COMMIT within COMMIT_WAIT;
            // the outcome is the commit's (a second more for the thread to send it).
            answer
                .recv_timeout(COMMIT_WAIT + Duration::from_secs(1))
                .unwrap_or_else(|_| Err(StoreError::Commit("no answer from the commit".into())))
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
        let (reply, answer) = std_mpsc::sync_channel(1);
        self.ask(Job::ReserveIds(count, reply), answer).map(Some)
    }

    fn describe(&self) -> String {
        self.described.clone()
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
                // Claimed now or never: a write whose caller gave up is dropped unwritten.
                batch.retain(|(_, waiter)| {
                    let Some(waiter) = waiter else {
                        return true;
                    };
                    let taken = waiter.take();
                    if !taken {
                        let _ = waiter.done.send(Err(StoreError::Unavailable));
                    }
                    taken
                });
                let deadline = batch
                    .iter()
                    .filter_map(|(_, waiter)| waiter.as_ref().map(|w| w.deadline))
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
        Job::Run(work) => work(pool.clone()).await,
    }
}

/// The counter of 1.6 transaction ids ([`Store::reserve_transaction_ids`]).
const TRANSACTION_ID: &str = "transaction_id";

/// Reserves `count` ids: the counter moves by `count` in one statement (`UPDATE ...
/// RETURNING`: a row lock in PostgreSQL, the one writer in SQLite), so two nodes never get
/// the same block. The counter starts, once, after the highest id the table holds (a
/// database from before migration 4).
async fn reserve_ids(pool: &AnyPool, count: u32) -> Result<Range<i32>, StoreError> {
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
async fn save_all<'a>(
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
    match tokio::time::timeout(COMMIT_WAIT, tx.commit()).await {
        Ok(committed) => Ok(committed?),
        Err(_) => Err(StoreError::Commit(format!(
            "the COMMIT was not answered within {COMMIT_WAIT:?}"
        ))),
    }
}

/// The statements of `records`, in an open database transaction (dropped: rolled back).
async fn write_all<'a>(
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
fn flagged(value: Option<f64>) -> (i64, f64) {
    (i64::from(value.is_some()), value.unwrap_or(0.0))
}

/// The `settings` names of per-station tariffs: this, then the identity.
const TARIFF_PREFIX: &str = "tariff/";
/// The value of a tariff cleared back to the default.
const TARIFF_CLEARED: &str = "default";

/// A tariff as the `settings` table keeps it: `<per kWh> <per hour> <currency>`.
fn tariff_text(tariff: &Tariff) -> String {
    format!("{} {} {}", tariff.per_kwh, tariff.per_hour, tariff.currency)
}

/// A tariff of the `settings` table (`None`: cleared).
fn parse_tariff(identity: &str, text: &str) -> Result<Option<Tariff>, StoreError> {
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

async fn set_tokens_enabled(tx: &mut sqlx::Transaction<'_, sqlx::Any>) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO settings (name, value) VALUES ('tokens_enabled', 'true') \
         ON CONFLICT (name) DO NOTHING",
    )
    .execute(&mut **tx)
    .await
    .map(|_| ())
}

async fn load(pool: &AnyPool) -> Result<Saved, StoreError> {
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
async fn highest_transaction_id(pool: &AnyPool) -> Result<i64, StoreError> {
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

async fn settings(pool: &AnyPool) -> Result<Settings, StoreError> {
    let mut settings = Settings::default();
    for row in sqlx::query("SELECT id_token, status, group_id, expiry FROM tokens")
        .fetch_all(pool)
        .await?
    {
        let id: String = row.try_get(0)?;
        let status: String = row.try_get(1)?;
        let status = TokenStatus::parse(&status)
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

async fn transactions(
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

fn transaction_of(row: &AnyRow) -> Result<(String, Transaction), StoreError> {
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
fn exact_meter(row: &AnyRow, text: usize, number: usize) -> Result<Option<Decimal>, StoreError> {
    if let Some(text) = row.try_get::<Option<String>, _>(text)? {
        if let Ok(exact) = text.parse() {
            return Ok(Some(exact));
        }
    }
    let number: Option<f64> = row.try_get(number)?;
    Ok(number.and_then(|n| Decimal::try_from(n).ok()))
}

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
mod tests {
    use super::*;

    fn transaction(id: &str, ended: Option<u64>) -> Transaction {
        Transaction {
            id: id.into(),
            connector: "1".into(),
            id_tag: Some("TAG".into()),
            started: UnixTime::from_millis(1_000),
            ended: ended.map(UnixTime::from_millis),
            stop_reason: ended.map(|_| "Local".into()),
            charging_state: None,
            meter_start_wh: Some(Decimal::new(105, 1)),
            meter_last_wh: Some("20.250".parse().unwrap()),
            samples: 3,
            last_seq_no: Some(7),
            start_key: None,
            signed_meter: None,
        }
    }

    fn temp_database(name: &str) -> (std::path::PathBuf, String) {
        let dir = std::env::temp_dir().join(format!("store-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let url = format!("sqlite://{}", dir.join("state.sqlite3").display());
        (dir, url)
    }

    /// Two stores on one database (two nodes) reserve 1.6 transaction ids from one counter:
    /// blocks that never meet, after the highest id already saved, across a reopen too.
    #[test]
    fn transaction_ids_come_in_blocks_no_two_stores_share() {
        let (dir, url) = temp_database("ids");
        let first = SqlStore::open(&url).unwrap();
        let saved = Record::Transaction {
            identity: "CP1".into(),
            transaction: transaction("41", None),
        };
        first.save(vec![saved], Durability::Committed).unwrap();
        let second = SqlStore::open(&url).unwrap();
        assert_eq!(first.reserve_transaction_ids(10).unwrap(), Some(42..52));
        assert_eq!(second.reserve_transaction_ids(5).unwrap(), Some(52..57));
        assert_eq!(first.reserve_transaction_ids(1).unwrap(), Some(57..58));
        drop((first, second));
        let reopened = SqlStore::open(&url).unwrap();
        assert_eq!(reopened.reserve_transaction_ids(2).unwrap(), Some(58..60));
        // From two threads at once: every id once.
        let reopened = Arc::new(reopened);
        let other = Arc::new(SqlStore::open(&url).unwrap());
        let blocks: Vec<_> = [Arc::clone(&reopened), other]
            .into_iter()
            .map(|store| {
                std::thread::spawn(move || {
                    (0..20)
                        .map(|_| store.reserve_transaction_ids(3).unwrap().unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut ids: Vec<i32> = blocks
            .into_iter()
            .flat_map(|b| b.join().unwrap())
            .flatten()
            .collect();
        ids.sort_unstable();
        assert_eq!(ids, (60..180).collect::<Vec<_>>());
        drop(reopened);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn every_record_comes_back_after_a_reopen() {
        let (dir, url) = temp_database("round-trip");
        let store = SqlStore::open(&url).unwrap();
        assert_eq!(store.load().unwrap(), Saved::default());
        let expiry = DateTime::parse("2030-01-01T00:00:00Z").unwrap();
        let records = vec![
            Record::Transaction {
                identity: "CP1".into(),
                transaction: transaction("41", None),
            },
            Record::Transaction {
                identity: "CP1".into(),
                transaction: transaction("40", Some(2_000)),
            },
            Record::Transaction {
                identity: "CS2".into(),
                transaction: transaction("uuid-1", None),
            },
            Record::Token {
                id: "T1".into(),
                entry: Some(
                    TokenEntry::new(TokenStatus::Blocked)
                        .with_group("G")
                        .with_expiry(expiry),
                ),
            },
            Record::Token {
                id: "T2".into(),
                entry: Some(TokenEntry::new(TokenStatus::Accepted)),
            },
            Record::Token {
                id: "T2".into(),
                entry: None,
            },
            Record::BootPolicy {
                identity: "CP1".into(),
                policy: Some(BootPolicy::Pending),
            },
            Record::SecurityProfile {
                identity: "CP1".into(),
                profile: Some(SecurityProfile::TlsClientCertificate),
            },
            Record::Password {
                identity: "CP1".into(),
                sha256: Some([7; 32]),
            },
            Record::Password {
                identity: "CP3".into(),
                sha256: None,
            },
            Record::BootPolicy {
                identity: "CP4".into(),
                policy: None,
            },
            Record::SecurityProfile {
                identity: "CP4".into(),
                profile: None,
            },
            Record::Tariff {
                identity: "CP1".into(),
                tariff: Some(Tariff::parse("0.2575", "1.5", "CHF").unwrap()),
            },
            Record::Tariff {
                identity: "CP4".into(),
                tariff: Some(Tariff::parse("1", "0", "EUR").unwrap()),
            },
            Record::Tariff {
                identity: "CP4".into(),
                tariff: None,
            },
        ];
        store.save(records, Durability::Committed).unwrap();
        // Queued, then read after: the store's thread keeps the order.
        let mut updated = transaction("41", None);
        updated.meter_last_wh = Some(Decimal::from(99));
        let later = Record::Transaction {
            identity: "CP1".into(),
            transaction: updated.clone(),
        };
        store.save(vec![later], Durability::Later).unwrap();
        drop(store);

        let store = SqlStore::open(&url).unwrap();
        let saved = store.load().unwrap();
        let mut open = saved.transactions.clone();
        open.sort_by(|a, b| a.1.id.cmp(&b.1.id));
        assert_eq!(
            open,
            vec![
                ("CP1".to_owned(), updated),
                ("CS2".to_owned(), transaction("uuid-1", None))
            ]
        );
        assert_eq!(saved.highest_transaction_id, 41);
        let settings = &saved.settings;
        assert_eq!(store.settings().unwrap(), *settings);
        assert!(settings.tokens_enabled);
        assert_eq!(settings.tokens.len(), 1);
        let (id, entry) = &settings.tokens[0];
        assert_eq!((id.as_str(), entry.status), ("T1", TokenStatus::Blocked));
        assert_eq!(entry.group.as_deref(), Some("G"));
        assert_eq!(
            entry
                .expiry
                .as_ref()
                .map(|e| e.as_str().to_owned())
                .as_deref(),
            Some("2030-01-01T00:00:00Z")
        );
        let mut policies = settings.boot_policies.clone();
        policies.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            policies,
            vec![
                ("CP1".to_owned(), Some(BootPolicy::Pending)),
                ("CP4".to_owned(), None)
            ]
        );
        let mut profiles = settings.security_profiles.clone();
        profiles.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            profiles,
            vec![
                (
                    "CP1".to_owned(),
                    Some(SecurityProfile::TlsClientCertificate)
                ),
                ("CP4".to_owned(), None)
            ]
        );
        let mut tariffs = settings.tariffs.clone();
        tariffs.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            tariffs,
            vec![
                (
                    "CP1".to_owned(),
                    Some(Tariff::parse("0.2575", "1.5", "CHF").unwrap())
                ),
                ("CP4".to_owned(), None)
            ]
        );
        let mut passwords = settings.passwords.clone();
        passwords.sort();
        assert_eq!(
            passwords,
            vec![("CP1".to_owned(), Some([7; 32])), ("CP3".to_owned(), None)]
        );

        let all = store
            .transactions(TransactionQuery {
                identity: Some("CP1".into()),
                open_only: false,
                limit: 10,
            })
            .unwrap();
        assert_eq!(all.len(), 2);
        let one = store
            .transactions(TransactionQuery {
                identity: None,
                open_only: true,
                limit: 1,
            })
            .unwrap();
        assert_eq!(one.len(), 1);
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn bad_urls_and_unreachable_databases_are_errors() {
        let error = SqlStore::open("mysql://h/db").unwrap_err();
        assert!(matches!(error, StoreError::UnsupportedUrl(_)), "{error}");
        let error = SqlStore::open("postgres://u:secret@127.0.0.1:1/db").unwrap_err();
        assert!(!error.to_string().contains("secret"), "{error}");
        let error = SqlStore::open("sqlite:///nonexistent-dir/x/state.sqlite3").unwrap_err();
        assert!(matches!(error, StoreError::Database(_)), "{error}");
    }

    #[test]
    fn passwords_are_kept_out_of_the_logs() {
        assert_eq!(
            without_password("postgres://u:pw@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(without_password("sqlite://state.db"), "sqlite://state.db");
        assert_eq!(unhex(&hex(&[0xab; 32])), Some([0xab; 32]));
        assert_eq!(unhex("zz"), None);
    }
}
