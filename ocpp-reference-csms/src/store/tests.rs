use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use ocpp_messages::{DateTime, Decimal};

use super::*;
use ocpp_model::AuthorizationStatus;

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

pub(crate) fn temp_database(name: &str) -> (std::path::PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("store-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite://{}", dir.join("state.sqlite3").display());
    (dir, url)
}

/// Two stores on one database (two nodes) reserve 1.6 transaction ids from one counter:
/// blocks that never meet, after the highest id already saved, across a reopen too.
/// A station's settings (identity, setting), sorted by identity.
fn by_identity<T: Clone>(settings: &[(String, T)]) -> Vec<(String, T)> {
    let mut sorted = settings.to_vec();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    sorted
}

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
                TokenEntry::new(AuthorizationStatus::Blocked)
                    .with_group("G")
                    .with_expiry(expiry),
            ),
        },
        Record::Token {
            id: "T2".into(),
            entry: Some(TokenEntry::new(AuthorizationStatus::Accepted)),
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
    assert_eq!(
        (id.as_str(), entry.status),
        ("T1", AuthorizationStatus::Blocked)
    );
    assert_eq!(entry.group.as_deref(), Some("G"));
    assert_eq!(
        entry
            .expiry
            .as_ref()
            .map(|e| e.as_str().to_owned())
            .as_deref(),
        Some("2030-01-01T00:00:00Z")
    );
    assert_eq!(
        by_identity(&settings.boot_policies),
        vec![
            ("CP1".to_owned(), Some(BootPolicy::Pending)),
            ("CP4".to_owned(), None)
        ]
    );
    assert_eq!(
        by_identity(&settings.security_profiles),
        vec![
            (
                "CP1".to_owned(),
                Some(SecurityProfile::TlsClientCertificate)
            ),
            ("CP4".to_owned(), None)
        ]
    );
    assert_eq!(
        by_identity(&settings.tariffs),
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

/// A store whose thread has died says so on every later call (a `Stopped`, not the
/// `Unavailable` of a database that did not answer in time).
#[test]
fn a_store_whose_thread_died_says_it_stopped() {
    let (dir, url) = temp_database("stopped");
    let store = SqlStore::open(&url).unwrap();
    let died = store.run(|_pool| async {
        panic!("a job that panics takes the store's thread with it");
        #[allow(unreachable_code)]
        Ok(())
    });
    assert!(matches!(died, Err(StoreError::Stopped)), "{died:?}");
    assert!(matches!(store.load(), Err(StoreError::Stopped)));
    let saved = store.save(
        vec![Record::Transaction {
            identity: "CP1".into(),
            transaction: transaction("1", None),
        }],
        Durability::Committed,
    );
    assert!(matches!(saved, Err(StoreError::Stopped)), "{saved:?}");
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The store's thread kept busy by a job that waits until [`Busy::release`] (at most
/// [`WAIT`]), so that what is queued meanwhile waits behind it, however slow the machine.
pub(crate) struct Busy {
    release: tokio::sync::oneshot::Sender<()>,
    caller: std::thread::JoinHandle<()>,
}

/// The longest [`Busy`] keeps the thread.
const WAIT: Duration = Duration::from_secs(30);

impl Busy {
    /// Sends the waiting job from another thread; returns once the store's thread runs it.
    pub(crate) fn start(store: &Arc<SqlStore>) -> Busy {
        let (started, running) = std_mpsc::sync_channel(1);
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        let store = Arc::clone(store);
        // Its caller stops waiting after the database wait; the job goes on until released.
        let caller = std::thread::spawn(move || {
            let _ = store.run(move |_pool| async move {
                let _ = started.send(());
                let _ = tokio::time::timeout(WAIT, released).await;
                Ok(())
            });
        });
        running
            .recv_timeout(WAIT)
            .expect("the store's thread took the job");
        Busy { release, caller }
    }

    /// Lets the job end (what was queued behind it runs then, or is skipped).
    pub(crate) fn release(self) {
        let _ = self.release.send(());
        self.caller.join().unwrap();
    }
}

/// A write still queued when its caller's deadline passes is withdrawn: the caller hears
/// `Unavailable`, and the store's thread, free again, never runs it.
#[test]
fn a_write_still_queued_at_its_deadline_is_never_written() {
    let (dir, url) = temp_database("withdrawn");
    let store = Arc::new(SqlStore::open(&url).unwrap());
    let busy = Busy::start(&store);
    let deadline = Instant::now() + Duration::from_millis(200);
    let saved = Record::Transaction {
        identity: "CP1".into(),
        transaction: transaction("41", None),
    };
    let committed = store.commit_by(vec![saved], deadline);
    assert!(
        matches!(committed, Err(StoreError::Unavailable)),
        "{committed:?}"
    );
    let ran = Arc::new(AtomicBool::new(false));
    let written = {
        let ran = Arc::clone(&ran);
        store.write_by(Instant::now() + Duration::from_millis(200), move |tx| {
            ran.store(true, Ordering::SeqCst);
            async move { Ok(((), tx)) }
        })
    };
    assert!(
        matches!(written, Err(StoreError::Unavailable)),
        "{written:?}"
    );
    busy.release();
    store.flush();
    assert!(!ran.load(Ordering::SeqCst));
    assert_eq!(store.load().unwrap().transactions, vec![]);
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A write taken whose statements outlast its deadline is rolled back: `Unavailable`, and
/// nothing of it kept.
#[test]
fn a_write_past_its_deadline_is_rolled_back() {
    let (dir, url) = temp_database("rolled-back");
    let store = SqlStore::open(&url).unwrap();
    let deadline = Instant::now() + Duration::from_millis(300);
    let written = store.write_by(deadline, |mut tx| async move {
        sqlx::query("INSERT INTO settings (name, value) VALUES ('late', 'yes')")
            .execute(&mut *tx)
            .await?;
        tokio::time::sleep(Duration::from_millis(600)).await;
        Ok(((), tx))
    });
    assert!(
        matches!(written, Err(StoreError::Unavailable)),
        "{written:?}"
    );
    let kept: i64 = store
        .run(|pool| async move {
            let row = sqlx::query("SELECT COUNT(*) FROM settings WHERE name = 'late'")
                .fetch_one(&pool)
                .await?;
            Ok(sqlx::Row::try_get(&row, 0)?)
        })
        .unwrap();
    assert_eq!(kept, 0);
    // In time, the same write is kept.
    let written = store.write_by(Instant::now() + DATABASE_WAIT, |mut tx| async move {
        let done = sqlx::query("INSERT INTO settings (name, value) VALUES ('late', 'yes')")
            .execute(&mut *tx)
            .await?;
        Ok((done.rows_affected(), tx))
    });
    assert_eq!(written.unwrap(), 1);
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}
