//! The unit tests of the offline stores.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;

use super::file::encode;
use super::*;
use crate::durable::tmp_path;
use proptest::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};

/// A directory under the system's temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("ocpp-store-test-{}-{name}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn journal(&self) -> PathBuf {
        self.0.join("queue.jsonl")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn message(seq: u64, version: OcppVersion, action: &str, payload: &str) -> StoredMessage {
    StoredMessage {
        seq,
        version,
        action: action.into(),
        payload: payload.into(),
        transaction_of: None,
    }
}

/// The journal in `dir`, opened, with `messages` pushed in order.
fn journal_with(dir: &TempDir, messages: impl IntoIterator<Item = StoredMessage>) -> FileStore {
    let mut store = FileStore::open(dir.journal()).unwrap();
    for message in messages {
        store.push(&message).unwrap();
    }
    store
}

fn file_len(path: &Path) -> u64 {
    fs::metadata(path).unwrap().len()
}

fn lines(path: &Path) -> usize {
    fs::read_to_string(path).unwrap().lines().count()
}

fn round_trip(store: &mut dyn OfflineStore) {
    assert_eq!(store.load().unwrap(), vec![]);
    let start = message(
        1,
        OcppVersion::V1_6,
        "StartTransaction",
        r#"{"connectorId":1,"idTag":"A\"B\n","meterStart":0,"timestamp":"2025-01-01T00:00:00Z"}"#,
    );
    let mut meter = message(
        2,
        OcppVersion::V1_6,
        "MeterValues",
        r#"{"connectorId":1,"transactionId":0,"meterValue":[]}"#,
    );
    meter.transaction_of = Some(1);
    let event = message(
        3,
        OcppVersion::V2_0_1,
        "TransactionEvent",
        r#"{"eventType":"Started","seqNo":0,"ünï":"☃"}"#,
    );
    for m in [&start, &meter, &event] {
        store.push(m).unwrap();
    }
    assert_eq!(
        store.load().unwrap(),
        vec![start.clone(), meter.clone(), event.clone()]
    );

    let filled = StoredMessage {
        payload: r#"{"connectorId":1,"transactionId":42,"meterValue":[]}"#.into(),
        transaction_of: None,
        ..meter.clone()
    };
    store.replace(&filled).unwrap();
    store.remove(1).unwrap();
    assert_eq!(store.load().unwrap(), vec![filled.clone(), event.clone()]);

    // Refusals change nothing.
    assert!(matches!(
        store.push(&message(3, OcppVersion::V2_1, "TransactionEvent", "{}")),
        Err(OfflineStoreError::OutOfOrder { seq: 3, last: 3 })
    ));
    assert!(matches!(
        store.replace(&start),
        Err(OfflineStoreError::NotQueued { seq: 1 })
    ));
    assert!(matches!(
        store.remove(9),
        Err(OfflineStoreError::NotQueued { seq: 9 })
    ));
    assert_eq!(store.load().unwrap(), vec![filled, event]);

    store.remove(3).unwrap();
    store.remove(2).unwrap();
    assert_eq!(store.load().unwrap(), vec![]);
    let later = message(10, OcppVersion::V2_1, "TransactionEvent", "{}");
    store.push(&later).unwrap();
    assert_eq!(store.load().unwrap(), vec![later]);
}

#[test]
fn round_trip_memory_store() {
    let mut store = MemoryStore::new();
    round_trip(&mut store);
    assert_eq!(store.len(), 1);
    assert!(!store.is_empty());
}

#[test]
fn round_trip_file_store() {
    let dir = TempDir::new("round-trip");
    let mut store = FileStore::open(dir.journal()).unwrap();
    assert_eq!(store.path(), dir.journal());
    round_trip(&mut store);
    drop(store);
    let mut store = FileStore::open(dir.journal()).unwrap();
    assert_eq!(
        store.load().unwrap(),
        vec![message(10, OcppVersion::V2_1, "TransactionEvent", "{}")]
    );
}

#[test]
fn journal_is_json_lines() {
    let dir = TempDir::new("format");
    let mut store = FileStore::open(dir.journal()).unwrap();
    let mut m = message(1, OcppVersion::V1_6, "MeterValues", r#"{"a":1}"#);
    m.transaction_of = Some(7);
    store.push(&m).unwrap();
    store
        .push(&message(2, OcppVersion::V2_0_1, "TransactionEvent", "{}"))
        .unwrap();
    m.transaction_of = None;
    store.replace(&m).unwrap();
    store.remove(1).unwrap();
    assert_eq!(
        fs::read_to_string(dir.journal()).unwrap(),
        concat!(
            r#"{"push":{"seq":1,"version":"1.6","action":"MeterValues","payload":"{\"a\":1}","transaction_of":7}}"#,
            "\n",
            r#"{"push":{"seq":2,"version":"2.0.1","action":"TransactionEvent","payload":"{}"}}"#,
            "\n",
            r#"{"replace":{"seq":1,"version":"1.6","action":"MeterValues","payload":"{\"a\":1}"}}"#,
            "\n",
            r#"{"remove":1}"#,
            "\n",
        )
    );
}

#[test]
fn reopen_gives_the_same_messages_in_order() {
    let dir = TempDir::new("reopen");
    let versions = [OcppVersion::V1_6, OcppVersion::V2_0_1, OcppVersion::V2_1];
    let mut store = journal_with(
        &dir,
        (1..=20).map(|seq| {
            let payload = format!("{{\"seqNo\":{seq}}}");
            message(
                seq,
                versions[seq as usize % 3],
                "TransactionEvent",
                &payload,
            )
        }),
    );
    for seq in [2, 5, 19] {
        store.remove(seq).unwrap();
    }
    let before = store.load().unwrap();
    assert_eq!(before.len(), 17);
    drop(store);
    let mut store = FileStore::open(dir.journal()).unwrap();
    assert_eq!(store.load().unwrap(), before);
    assert!(before.windows(2).all(|w| w[0].seq < w[1].seq));
}

#[test]
fn torn_last_record_is_dropped_and_the_file_cut_back() {
    let dir = TempDir::new("torn");
    let mut store = FileStore::open(dir.journal()).unwrap();
    let first = message(1, OcppVersion::V1_6, "StartTransaction", "{}");
    let second = message(2, OcppVersion::V1_6, "StopTransaction", "{}");
    store.push(&first).unwrap();
    store.push(&second).unwrap();
    drop(store);
    let good = file_len(&dir.journal());

    // Half a line, as a crash in the middle of the write leaves it.
    let line = encode(&Record::from(Change::Push(message(
        3,
        OcppVersion::V1_6,
        "MeterValues",
        "{}",
    ))))
    .unwrap();
    let mut file = OpenOptions::new().append(true).open(dir.journal()).unwrap();
    file.write_all(&line[..line.len() / 2]).unwrap();
    drop(file);
    assert!(file_len(&dir.journal()) > good);

    let mut store = FileStore::open(dir.journal()).unwrap();
    assert_eq!(file_len(&dir.journal()), good);
    assert_eq!(store.load().unwrap(), vec![first.clone(), second.clone()]);
    let third = message(3, OcppVersion::V1_6, "MeterValues", "{}");
    store.push(&third).unwrap();
    drop(store);
    let mut store = FileStore::open(dir.journal()).unwrap();
    assert_eq!(
        store.load().unwrap(),
        vec![first.clone(), second.clone(), third.clone()]
    );
    drop(store);

    // A complete last line of garbage (zeros from a power loss, then a newline) is dropped too.
    let good = file_len(&dir.journal());
    let mut file = OpenOptions::new().append(true).open(dir.journal()).unwrap();
    file.write_all(b"\0\0\0\0\n").unwrap();
    drop(file);
    let mut store = FileStore::open(dir.journal()).unwrap();
    assert_eq!(file_len(&dir.journal()), good);
    assert_eq!(store.load().unwrap(), vec![first, second, third]);
}

#[test]
fn corrupt_middle_line_is_an_error() {
    let dir = TempDir::new("corrupt");
    drop(journal_with(
        &dir,
        (1..=3).map(|seq| message(seq, OcppVersion::V2_0_1, "TransactionEvent", "{}")),
    ));
    let text = fs::read_to_string(dir.journal()).unwrap();
    let mut records: Vec<&str> = text.lines().collect();
    records[1] = r#"{"push":{"seq":2,"vers"#;
    fs::write(dir.journal(), records.join("\n") + "\n").unwrap();
    match FileStore::open(dir.journal()) {
        Err(OfflineStoreError::Corrupt { path, line, .. }) => {
            assert_eq!(path, dir.journal());
            assert_eq!(line, 2);
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    // The file is left as it was, for a technician to look at.
    assert_eq!(lines(&dir.journal()), 3);

    // A well-formed record that makes no sense is corrupt even as the last line.
    for (bad, line) in [
        (r#"{"remove":9}"#, 4),
        (
            r#"{"push":{"seq":4,"version":"9.9","action":"X","payload":"{}"}}"#,
            4,
        ),
        (
            r#"{"push":{"seq":1,"version":"1.6","action":"X","payload":"{}"}}"#,
            4,
        ),
        (r#"{"frobnicate":1}"#, 4),
    ] {
        fs::write(dir.journal(), text.clone() + bad + "\n").unwrap();
        match FileStore::open(dir.journal()) {
            Err(OfflineStoreError::Corrupt { line: l, .. }) => assert_eq!(l, line, "{bad}"),
            other => panic!("expected Corrupt for {bad}, got {other:?}"),
        }
    }
}

#[test]
fn emptied_queue_truncates_the_file() {
    let dir = TempDir::new("empty");
    let mut store = journal_with(
        &dir,
        (1..=3).map(|seq| message(seq, OcppVersion::V1_6, "MeterValues", "{}")),
    );
    store.remove(2).unwrap();
    store.remove(1).unwrap();
    assert!(file_len(&dir.journal()) > 0);
    store.remove(3).unwrap();
    assert_eq!(file_len(&dir.journal()), 0);
    drop(store);
    let mut store = FileStore::open(dir.journal()).unwrap();
    assert_eq!(store.load().unwrap(), vec![]);
    store
        .push(&message(4, OcppVersion::V1_6, "MeterValues", "{}"))
        .unwrap();
    assert_eq!(lines(&dir.journal()), 1);
}

#[test]
fn many_dead_records_are_compacted_on_open() {
    let dir = TempDir::new("compact");
    let mut store = journal_with(
        &dir,
        (1..=100).map(|seq| {
            let payload = format!("{{\"n\":{seq}}}");
            message(seq, OcppVersion::V2_1, "TransactionEvent", &payload)
        }),
    );
    for seq in 1..=90 {
        store.remove(seq).unwrap();
    }
    let mut filled = message(
        95,
        OcppVersion::V2_1,
        "TransactionEvent",
        "{\"filled\":true}",
    );
    filled.transaction_of = None;
    store.replace(&filled).unwrap();
    let live = store.load().unwrap();
    drop(store);
    assert_eq!(lines(&dir.journal()), 191);
    // What a compaction killed half-way leaves behind.
    fs::write(tmp_path(&dir.journal()), b"{\"push\":").unwrap();

    let mut store = FileStore::open(dir.journal()).unwrap();
    assert_eq!(lines(&dir.journal()), 10);
    assert!(!tmp_path(&dir.journal()).exists());
    assert_eq!(store.load().unwrap(), live);
    let next = message(101, OcppVersion::V2_1, "TransactionEvent", "{}");
    store.push(&next).unwrap();
    drop(store);
    let mut store = FileStore::open(dir.journal()).unwrap();
    let mut expected = live;
    expected.push(next);
    assert_eq!(store.load().unwrap(), expected);
    assert_eq!(lines(&dir.journal()), 11);
}

#[test]
fn few_dead_records_are_kept() {
    let dir = TempDir::new("no-compact");
    let mut store = journal_with(
        &dir,
        (1..=10).map(|seq| message(seq, OcppVersion::V1_6, "MeterValues", "{}")),
    );
    for seq in 1..=8 {
        store.remove(seq).unwrap();
    }
    drop(store);
    let _store = FileStore::open(dir.journal()).unwrap();
    assert_eq!(lines(&dir.journal()), 18);
}

#[test]
fn state_rides_with_the_change_of_its_line() {
    let dir = TempDir::new("state-format");
    let mut store = FileStore::open(dir.journal()).unwrap();
    assert_eq!(store.load_state().unwrap(), None);
    let m = message(1, OcppVersion::V2_0_1, "TransactionEvent", "{}");
    store.push_with_state(&m, r#"{"open":1}"#).unwrap();
    store
        .push(&message(2, OcppVersion::V2_0_1, "TransactionEvent", "{}"))
        .unwrap();
    store.save_state(r#"{"open":2}"#).unwrap();
    store.replace_with_state(&m, "s3").unwrap();
    store.remove_with_state(1, "s4").unwrap();
    assert_eq!(
        fs::read_to_string(dir.journal()).unwrap(),
        concat!(
            r#"{"push":{"seq":1,"version":"2.0.1","action":"TransactionEvent","payload":"{}"},"state":"{\"open\":1}"}"#,
            "\n",
            r#"{"push":{"seq":2,"version":"2.0.1","action":"TransactionEvent","payload":"{}"}}"#,
            "\n",
            r#"{"state":"{\"open\":2}"}"#,
            "\n",
            r#"{"replace":{"seq":1,"version":"2.0.1","action":"TransactionEvent","payload":"{}"},"state":"s3"}"#,
            "\n",
            r#"{"remove":1,"state":"s4"}"#,
            "\n",
        )
    );
    drop(store);
    let mut store = FileStore::open(dir.journal()).unwrap();
    assert_eq!(store.load_state().unwrap().as_deref(), Some("s4"));
    assert_eq!(store.load().unwrap().len(), 1);

    // A refused change leaves the state as it was.
    assert!(store.remove_with_state(9, "s5").is_err());
    assert!(store.push_with_state(&m, "s5").is_err());
    assert_eq!(store.load_state().unwrap().as_deref(), Some("s4"));

    // Two changes in one line, or none, are corrupt.
    for bad in [
        r#"{"remove":2,"push":{"seq":3,"version":"1.6","action":"X","payload":"{}"}}"#,
        "{}",
    ] {
        let text = fs::read_to_string(dir.journal()).unwrap();
        let other = TempDir::new("state-bad");
        fs::write(other.journal(), text + bad + "\n").unwrap();
        assert!(
            matches!(
                FileStore::open(other.journal()),
                Err(OfflineStoreError::Corrupt { .. })
            ),
            "{bad}"
        );
    }
}

#[test]
fn state_round_trip_memory_store() {
    let mut store = MemoryStore::new();
    assert_eq!(store.load_state().unwrap(), None);
    store
        .push_with_state(
            &message(1, OcppVersion::V1_6, "StartTransaction", "{}"),
            "a",
        )
        .unwrap();
    store.save_state("b").unwrap();
    store.remove_with_state(1, "c").unwrap();
    assert!(store.is_empty());
    assert_eq!(store.load_state().unwrap().as_deref(), Some("c"));
}

#[test]
fn an_emptied_queue_keeps_the_state() {
    let dir = TempDir::new("state-empty");
    let mut store = FileStore::open(dir.journal()).unwrap();
    store
        .push_with_state(
            &message(1, OcppVersion::V1_6, "StartTransaction", "{}"),
            "a",
        )
        .unwrap();
    store
        .push_with_state(&message(2, OcppVersion::V1_6, "StopTransaction", "{}"), "b")
        .unwrap();
    store.remove(1).unwrap();
    store.remove(2).unwrap();
    // The journal is the state's line alone.
    assert_eq!(
        fs::read_to_string(dir.journal()).unwrap(),
        "{\"state\":\"b\"}\n"
    );
    assert!(!tmp_path(&dir.journal()).exists());
    store
        .push_with_state(
            &message(3, OcppVersion::V1_6, "StartTransaction", "{}"),
            "c",
        )
        .unwrap();
    store.remove_with_state(3, "d").unwrap();
    assert_eq!(
        fs::read_to_string(dir.journal()).unwrap(),
        "{\"state\":\"d\"}\n"
    );
    drop(store);
    let mut store = FileStore::open(dir.journal()).unwrap();
    assert_eq!(store.load().unwrap(), vec![]);
    assert_eq!(store.load_state().unwrap().as_deref(), Some("d"));
    // Many state lines and nothing queued: compacted to one on open.
    for n in 0..5 {
        store.save_state(&format!("e{n}")).unwrap();
    }
    drop(store);
    let mut store = FileStore::open(dir.journal()).unwrap();
    assert_eq!(lines(&dir.journal()), 1);
    assert_eq!(store.load_state().unwrap().as_deref(), Some("e4"));
}

#[test]
fn compaction_keeps_the_state() {
    let dir = TempDir::new("state-compact");
    let mut store = FileStore::open(dir.journal()).unwrap();
    for seq in 1..=60 {
        let m = message(seq, OcppVersion::V2_1, "TransactionEvent", "{}");
        store.push_with_state(&m, &format!("s{seq}")).unwrap();
    }
    for seq in 1..=55 {
        store.remove(seq).unwrap();
    }
    let live = store.load().unwrap();
    drop(store);
    let mut store = FileStore::open(dir.journal()).unwrap();
    assert_eq!(lines(&dir.journal()), 6);
    assert_eq!(store.load().unwrap(), live);
    assert_eq!(store.load_state().unwrap().as_deref(), Some("s60"));
}

/// A kill at any byte of the write path: the journal cut at every offset opens to the
/// messages and the state of the last whole record, never a message without its state or
/// a state without its message.
#[test]
fn a_cut_at_every_offset_gives_a_message_with_its_state() {
    let dir = TempDir::new("state-cut");
    let mut store = FileStore::open(dir.journal()).unwrap();
    // After each record: the file's length, the messages and the state.
    let mut after = vec![(0u64, Vec::new(), None)];
    let snapshot = |store: &mut FileStore,
                    after: &mut Vec<(u64, Vec<StoredMessage>, Option<String>)>| {
        after.push((
            file_len(store.path()),
            store.load().unwrap(),
            store.load_state().unwrap(),
        ));
    };
    let mut seqs = Vec::new();
    for seq in 1..=6u64 {
        // Each state names the messages queued with it.
        seqs.push(seq);
        let state = format!("{seqs:?} ünï");
        let m = message(
            seq,
            OcppVersion::V2_0_1,
            "TransactionEvent",
            &format!("{{\"seqNo\":{seq}}}"),
        );
        store.push_with_state(&m, &state).unwrap();
        snapshot(&mut store, &mut after);
        if seq % 2 == 0 {
            let first = seqs.remove(0);
            store
                .remove_with_state(first, &format!("{seqs:?} ünï"))
                .unwrap();
            snapshot(&mut store, &mut after);
        }
        if seq == 3 {
            store.save_state(&format!("{seqs:?} ünï")).unwrap();
            snapshot(&mut store, &mut after);
        }
    }
    drop(store);
    let bytes = fs::read(dir.journal()).unwrap();
    for cut in 0..=bytes.len() {
        let other = TempDir::new("state-cut-at");
        fs::write(other.journal(), &bytes[..cut]).unwrap();
        let mut reopened = FileStore::open(other.journal()).unwrap();
        let (_, messages, state) = after
            .iter()
            .rev()
            .find(|(len, _, _)| *len <= cut as u64)
            .unwrap();
        let loaded = reopened.load().unwrap();
        let loaded_state = reopened.load_state().unwrap();
        assert_eq!(&loaded, messages, "cut at {cut}");
        assert_eq!(&loaded_state, state, "cut at {cut}");
        if let Some(state) = loaded_state {
            let seqs: Vec<u64> = loaded.iter().map(|m| m.seq).collect();
            assert_eq!(state, format!("{seqs:?} ünï"), "cut at {cut}");
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Push {
        version: usize,
        action: String,
        payload: String,
        transaction_of: Option<u64>,
    },
    /// A push whose `seq` is not after the last queued one.
    PushStale,
    Replace {
        pick: usize,
        payload: String,
        clear: bool,
    },
    Remove {
        pick: usize,
    },
    RemoveUnknown,
    Reopen,
    /// The next change carries this state.
    State(String),
    SaveState(String),
}

fn text() -> impl Strategy<Value = String> {
    proptest::collection::vec(any::<char>(), 0..24).prop_map(String::from_iter)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0..3usize, "[A-Za-z]{1,12}", text(), proptest::option::of(0..50u64)).prop_map(
            |(version, action, payload, transaction_of)| Op::Push {
                version,
                action,
                payload,
                transaction_of
            }
        ),
        1 => Just(Op::PushStale),
        2 => (any::<usize>(), text(), any::<bool>())
            .prop_map(|(pick, payload, clear)| Op::Replace { pick, payload, clear }),
        4 => any::<usize>().prop_map(|pick| Op::Remove { pick }),
        1 => Just(Op::RemoveUnknown),
        1 => Just(Op::Reopen),
        2 => text().prop_map(Op::State),
        1 => text().prop_map(Op::SaveState),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn file_store_loads_what_memory_store_loads(ops in proptest::collection::vec(op(), 0..120)) {
        let dir = TempDir::new("prop");
        let mut memory = MemoryStore::new();
        let mut file = FileStore::open(dir.journal()).unwrap();
        let mut next_seq = 1u64;
        let mut state: Option<String> = None;
        for op in ops {
            let live = memory.load().unwrap();
            let (a, b) = match op {
                Op::Push { version, action, payload, transaction_of } => {
                    let m = StoredMessage {
                        seq: next_seq,
                        version: OcppVersion::ALL[version],
                        action,
                        payload,
                        transaction_of,
                    };
                    next_seq += 1;
                    match state.take() {
                        Some(s) => (memory.push_with_state(&m, &s), file.push_with_state(&m, &s)),
                        None => (memory.push(&m), file.push(&m)),
                    }
                }
                Op::PushStale => {
                    let seq = live.last().map_or(0, |m| m.seq);
                    let m = message(seq, OcppVersion::V1_6, "MeterValues", "{}");
                    (memory.push(&m), file.push(&m))
                }
                Op::Replace { pick, payload, clear } => {
                    if live.is_empty() {
                        continue;
                    }
                    let mut m = live[pick % live.len()].clone();
                    m.payload = payload;
                    if clear {
                        m.transaction_of = None;
                    }
                    (memory.replace(&m), file.replace(&m))
                }
                Op::Remove { pick } => {
                    if live.is_empty() {
                        continue;
                    }
                    let seq = live[pick % live.len()].seq;
                    match state.take() {
                        Some(s) => (memory.remove_with_state(seq, &s), file.remove_with_state(seq, &s)),
                        None => (memory.remove(seq), file.remove(seq)),
                    }
                }
                Op::State(s) => {
                    state = Some(s);
                    continue;
                }
                Op::SaveState(s) => (memory.save_state(&s), file.save_state(&s)),
                Op::RemoveUnknown => (memory.remove(next_seq + 7), file.remove(next_seq + 7)),
                Op::Reopen => {
                    drop(file);
                    file = FileStore::open(dir.journal()).unwrap();
                    (Ok(()), Ok(()))
                }
            };
            prop_assert_eq!(a.is_ok(), b.is_ok(), "{:?} vs {:?}", a, b);
            prop_assert_eq!(memory.load().unwrap(), file.load().unwrap());
            prop_assert_eq!(memory.load_state().unwrap(), file.load_state().unwrap());
        }
        drop(file);
        let mut file = FileStore::open(dir.journal()).unwrap();
        prop_assert_eq!(memory.load().unwrap(), file.load().unwrap());
        prop_assert_eq!(memory.load_state().unwrap(), file.load_state().unwrap());
    }
}
