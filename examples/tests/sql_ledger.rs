//! `SqlLedger` (the reference CSMS's database as `ocpp_model`'s `TransactionLedger`) against
//! the library's `InMemoryLedger`: the same transaction messages of 1.6 and 2.0.1 charge
//! points, sent and sent again in any order, give the same outcomes and the same open
//! transactions, on SQLite (a property test) and on a real PostgreSQL; what it recorded
//! survives a reopen, and two ledgers on one database (two nodes) never give out the same 1.6
//! id.

mod common;

use std::collections::HashMap;

use common::postgres_server::PostgresServer;
use ocpp_messages::{v1_6, v2_0_1, DateTime, Request};
use ocpp_model::{
    InMemoryLedger, LedgerTransaction, Recorded, StationEvent, TransactionEnded, TransactionLedger,
    TransactionStarted, TransactionUpdated,
};
use ocpp_reference_csms::SqlLedger;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Start16 { cp: u8, connector: u8, meter: u8 },
    Update16 { cp: u8, nth: u8 },
    Stop16 { cp: u8, nth: u8 },
    Event2 { cp: u8, tx: u8, kind: u8, seq: u8 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..2u8, 1..3u8, 0..3u8).prop_map(|(cp, connector, meter)| Op::Start16 {
            cp,
            connector,
            meter
        }),
        (0..2u8, any::<u8>()).prop_map(|(cp, nth)| Op::Update16 { cp, nth }),
        (0..2u8, any::<u8>()).prop_map(|(cp, nth)| Op::Stop16 { cp, nth }),
        (0..2u8, 0..3u8, 0..3u8, 0..5u8).prop_map(|(cp, tx, kind, seq)| Op::Event2 {
            cp,
            tx,
            kind,
            seq
        }),
    ]
}

enum Message {
    Start(String, TransactionStarted),
    Update(String, TransactionUpdated),
    End(String, TransactionEnded),
}

fn time(minute: u8) -> DateTime {
    DateTime::from_unix_timestamp(1_735_787_040 + 60 * i64::from(minute)).unwrap()
}

fn read(request: impl Into<Request>) -> StationEvent {
    StationEvent::from_request(&request.into())
}

/// The message of `op`; `ids`: the 1.6 ids given so far, per charge point (an update or a
/// stop names one of them, or one never given when there is none).
fn message(op: &Op, ids: &HashMap<String, Vec<i32>>) -> Message {
    let name = |cp: u8| format!("CP{cp}");
    let pick = |cp: u8, nth: u8| {
        let given = ids.get(&name(cp)).map(Vec::as_slice).unwrap_or_default();
        given
            .get(usize::from(nth) % given.len().max(1))
            .copied()
            .unwrap_or(999)
    };
    match *op {
        Op::Start16 {
            cp,
            connector,
            meter,
        } => {
            let start = v1_6::StartTransactionRequest::new(
                i32::from(connector),
                "TAG1",
                i32::from(meter) * 1000,
                time(meter),
            );
            let StationEvent::TransactionStarted(s) = read(start) else {
                unreachable!()
            };
            Message::Start(name(cp), s)
        }
        Op::Update16 { cp, nth } => {
            let sample = v1_6::SampledValue::new("1500");
            let value = v1_6::MeterValue::new(time(5), vec![sample]);
            let values =
                v1_6::MeterValuesRequest::new(1, vec![value]).with_transaction_id(pick(cp, nth));
            let StationEvent::TransactionUpdated(u) = read(values) else {
                unreachable!()
            };
            Message::Update(name(cp), u)
        }
        Op::Stop16 { cp, nth } => {
            let stop = v1_6::StopTransactionRequest::new(2000, time(9), pick(cp, nth));
            let StationEvent::TransactionEnded(e) = read(stop) else {
                unreachable!()
            };
            Message::End(name(cp), e)
        }
        Op::Event2 { cp, tx, kind, seq } => {
            let kind = match kind {
                0 => v2_0_1::TransactionEventEnum::Started,
                1 => v2_0_1::TransactionEventEnum::Updated,
                _ => v2_0_1::TransactionEventEnum::Ended,
            };
            let event = v2_0_1::TransactionEventRequest::new(
                kind,
                time(seq),
                v2_0_1::TriggerReasonEnum::Authorized,
                i32::from(seq),
                v2_0_1::Transaction::new(format!("TX-{tx}")),
            )
            .with_evse(v2_0_1::EVSE::new(1).with_connector_id(2));
            match read(event) {
                StationEvent::TransactionStarted(s) => Message::Start(name(cp), s),
                StationEvent::TransactionUpdated(u) => Message::Update(name(cp), u),
                StationEvent::TransactionEnded(e) => Message::End(name(cp), e),
                other => unreachable!("{other:?}"),
            }
        }
    }
}

fn record(ledger: &impl TransactionLedger, message: &Message) -> Recorded {
    let recorded = match message {
        Message::Start(cp, s) => ledger.record_start(cp, s),
        Message::Update(cp, u) => ledger.record_update(cp, u),
        Message::End(cp, e) => ledger.record_end(cp, e),
    };
    recorded.unwrap_or_else(|e| panic!("{e}"))
}

/// What both ledgers must agree on about a transaction (times are kept to the second by the
/// database; the order of a listing is each ledger's own).
fn seen(t: &LedgerTransaction) -> String {
    format!(
        "{} evse={:?} token={:?} key={:?} ended={:?} seq={:?}",
        t.id,
        t.evse,
        t.token.as_ref().map(|t| &t.value),
        t.start_key,
        t.ended.as_ref().map(|(_, reason)| reason),
        t.last_seq_no,
    )
}

fn open(ledger: &impl TransactionLedger, cp: &str) -> Vec<String> {
    let mut open: Vec<String> = ledger
        .open_transactions(cp)
        .unwrap()
        .iter()
        .map(seen)
        .collect();
    open.sort();
    open
}

/// Runs `ops` on both ledgers, each op sent twice (a resend after a lost answer), comparing
/// every outcome and, at the end, every charge point's open transactions.
fn same_as_in_memory(sql: &SqlLedger, ops: &[Op]) -> Result<(), TestCaseError> {
    let memory = InMemoryLedger::new();
    let mut ids: HashMap<String, Vec<i32>> = HashMap::new();
    for op in ops {
        let message = message(op, &ids);
        for _ in 0..2 {
            let expected = record(&memory, &message);
            let got = record(sql, &message);
            prop_assert_eq!(&got, &expected, "{:?}", op);
            if let (Message::Start(cp, _), Recorded::New(_)) = (&message, &got) {
                ids.entry(cp.clone()).or_default().extend(got.number());
            }
        }
    }
    for cp in ["CP0", "CP1"] {
        prop_assert_eq!(open(sql, cp), open(&memory, cp), "{}", cp);
        for id in memory.open_transactions(cp).unwrap().iter().map(|t| &t.id) {
            let found = sql.transaction(cp, id).unwrap().map(|t| seen(&t));
            let expected = memory.transaction(cp, id).unwrap().map(|t| seen(&t));
            prop_assert_eq!(found, expected);
        }
    }
    Ok(())
}

/// A fresh SQLite database (see `common::sqlite_dir`).
fn sqlite(name: &str) -> (std::path::PathBuf, String) {
    let dir = common::sqlite_dir(&format!("sql-ledger-{name}"));
    let url = format!("sqlite://{}", dir.join("ledger.sqlite3").display());
    (dir, url)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn on_sqlite_it_records_what_the_in_memory_ledger_records(
        ops in proptest::collection::vec(op(), 1..30),
    ) {
        let (dir, url) = sqlite("property");
        let ledger = SqlLedger::open(&url).unwrap();
        same_as_in_memory(&ledger, &ops)?;
        drop(ledger);
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// A session of each version, a reopen in the middle, and a second node on the same database.
fn survives_a_reopen_and_shares_ids(url: &str) {
    let ids = HashMap::new();
    let start = message(
        &Op::Start16 {
            cp: 0,
            connector: 1,
            meter: 1,
        },
        &ids,
    );
    let started = message(
        &Op::Event2 {
            cp: 1,
            tx: 0,
            kind: 0,
            seq: 0,
        },
        &ids,
    );
    let first = SqlLedger::open(url).unwrap();
    let Recorded::New(id) = record(&first, &start) else {
        panic!()
    };
    assert_eq!(
        record(&first, &started),
        Recorded::New("TX-0".to_owned().into_id())
    );
    drop(first);
    // After a restart: the same messages again are recognised, with the same id.
    let again = SqlLedger::open(url).unwrap();
    assert_eq!(record(&again, &start), Recorded::Repeated(id.clone()));
    assert_eq!(
        record(&again, &started),
        Recorded::Repeated("TX-0".to_owned().into_id())
    );
    assert_eq!(again.open_transactions("CP0").unwrap().len(), 1);
    // A second node on the same database: ids never meet.
    let other = SqlLedger::open(url).unwrap();
    let mut given = vec![id.to_string()];
    for n in 0..10 {
        let ledger = if n % 2 == 0 { &again } else { &other };
        given.push(ledger.next_transaction_id().unwrap().to_string());
    }
    let mut unique = given.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), given.len(), "{given:?}");
}

trait IntoId {
    fn into_id(self) -> ocpp_model::TransactionId;
}

impl IntoId for String {
    fn into_id(self) -> ocpp_model::TransactionId {
        ocpp_model::TransactionId::Text(self)
    }
}

#[test]
fn on_sqlite_it_survives_a_reopen_and_two_nodes_share_its_ids() {
    let (dir, url) = sqlite("reopen");
    survives_a_reopen_and_shares_ids(&url);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn on_postgresql_it_records_what_the_in_memory_ledger_records() {
    let postgres = PostgresServer::start();
    let ledger = SqlLedger::open(postgres.url()).unwrap();
    let ops: Vec<Op> = (0..40u8)
        .map(|n| match n % 5 {
            0 => Op::Start16 {
                cp: n % 2,
                connector: 1 + n % 2,
                meter: n % 3,
            },
            1 => Op::Event2 {
                cp: n % 2,
                tx: n % 3,
                kind: n % 3,
                seq: n % 5,
            },
            2 => Op::Update16 { cp: n % 2, nth: n },
            3 => Op::Stop16 { cp: n % 2, nth: n },
            _ => Op::Event2 {
                cp: (n + 1) % 2,
                tx: (n + 1) % 3,
                kind: (n + 2) % 3,
                seq: n % 4,
            },
        })
        .collect();
    same_as_in_memory(&ledger, &ops).unwrap();
    drop(ledger);
    let fresh = PostgresServer::start();
    survives_a_reopen_and_shares_ids(fresh.url());
}
