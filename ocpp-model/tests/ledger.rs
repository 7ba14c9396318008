//! The ledger's rule, checked over random interleavings of sends and resends (answers lost) of
//! 1.6 and 2.x transaction messages from several charge points, against a model of what must
//! hold: a resent start gets the id of the first, ids are never given twice, an end of an ended
//! transaction changes nothing, the open set and the seqNo are as sent.

use std::collections::{HashMap, HashSet};

use ocpp_messages::{v1_6, v2_0_1, DateTime, Request};
use ocpp_model::{
    InMemoryLedger, Recorded, StationEvent, TransactionEnded, TransactionId, TransactionLedger,
    TransactionStarted, TransactionUpdated,
};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    /// A 1.6 StartTransaction (connector, tag, minute, meterStart).
    Start16 {
        cp: u8,
        connector: u8,
        tag: u8,
        minute: u8,
        meter: u8,
    },
    /// A 1.6 StopTransaction of the n-th start answered to this charge point.
    Stop16 {
        cp: u8,
        nth: u8,
    },
    /// 2.x: Started, Updated (seqNo), Ended of transaction `tx`.
    Started2 {
        cp: u8,
        tx: u8,
    },
    Updated2 {
        cp: u8,
        tx: u8,
        seq: u8,
    },
    Ended2 {
        cp: u8,
        tx: u8,
    },
    /// The last message sent again (its answer was lost).
    Resend,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..2u8, 1..3u8, 0..2u8, 0..3u8, 0..2u8).prop_map(|(cp, connector, tag, minute, meter)| {
            Op::Start16 {
                cp,
                connector,
                tag,
                minute,
                meter,
            }
        }),
        (0..2u8, 0..4u8).prop_map(|(cp, nth)| Op::Stop16 { cp, nth }),
        (0..2u8, 0..3u8).prop_map(|(cp, tx)| Op::Started2 { cp, tx }),
        (0..2u8, 0..3u8, 1..5u8).prop_map(|(cp, tx, seq)| Op::Updated2 { cp, tx, seq }),
        (0..2u8, 0..3u8).prop_map(|(cp, tx)| Op::Ended2 { cp, tx }),
        Just(Op::Resend),
    ]
}

fn time(minute: u8) -> DateTime {
    DateTime::from_unix_timestamp(1_735_787_045 + 60 * i64::from(minute)).unwrap()
}

#[derive(Debug, Clone)]
enum Message {
    Start(String, TransactionStarted),
    Update(String, TransactionUpdated),
    End(String, TransactionEnded),
}

fn read(request: Request) -> StationEvent {
    StationEvent::from_request(&request)
}

fn message(op: &Op, answered: &HashMap<String, Vec<i32>>) -> Option<Message> {
    let name = |cp: u8| format!("CP{cp}");
    let tx = |tx: u8| format!("tx-{tx}");
    Some(match *op {
        Op::Start16 {
            cp,
            connector,
            tag,
            minute,
            meter,
        } => {
            let request = v1_6::StartTransactionRequest::new(
                i32::from(connector),
                format!("TAG{tag}"),
                i32::from(meter),
                time(minute),
            );
            let StationEvent::TransactionStarted(s) = read(request.into()) else {
                unreachable!()
            };
            Message::Start(name(cp), s)
        }
        Op::Stop16 { cp, nth } => {
            let ids = answered.get(&name(cp))?;
            let id = ids[usize::from(nth) % ids.len()];
            let request = v1_6::StopTransactionRequest::new(100, time(9), id);
            let StationEvent::TransactionEnded(e) = read(request.into()) else {
                unreachable!()
            };
            Message::End(name(cp), e)
        }
        Op::Started2 { cp, tx: t } => {
            let request = v2_0_1::TransactionEventRequest::new(
                v2_0_1::TransactionEventEnum::Started,
                time(1),
                v2_0_1::TriggerReasonEnum::Authorized,
                0,
                v2_0_1::Transaction::new(tx(t)),
            );
            let StationEvent::TransactionStarted(s) = read(request.into()) else {
                unreachable!()
            };
            Message::Start(name(cp), s)
        }
        Op::Updated2 { cp, tx: t, seq } => {
            let request = v2_0_1::TransactionEventRequest::new(
                v2_0_1::TransactionEventEnum::Updated,
                time(2),
                v2_0_1::TriggerReasonEnum::MeterValuePeriodic,
                i32::from(seq),
                v2_0_1::Transaction::new(tx(t)),
            );
            let StationEvent::TransactionUpdated(u) = read(request.into()) else {
                unreachable!()
            };
            Message::Update(name(cp), u)
        }
        Op::Ended2 { cp, tx: t } => {
            let request = v2_0_1::TransactionEventRequest::new(
                v2_0_1::TransactionEventEnum::Ended,
                time(3),
                v2_0_1::TriggerReasonEnum::EVDeparted,
                9,
                v2_0_1::Transaction::new(tx(t)),
            );
            let StationEvent::TransactionEnded(e) = read(request.into()) else {
                unreachable!()
            };
            Message::End(name(cp), e)
        }
        Op::Resend => return None,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn sends_and_resends(ops in proptest::collection::vec(op(), 1..40)) {
        let ledger = InMemoryLedger::new();
        // The model.
        let mut answered: HashMap<String, Vec<i32>> = HashMap::new();
        let mut id_of_key: HashMap<(String, String), i32> = HashMap::new();
        let mut ids_given: HashSet<i32> = HashSet::new();
        let mut open: HashSet<(String, TransactionId)> = HashSet::new();
        let mut ended: HashMap<(String, TransactionId), DateTime> = HashMap::new();
        let mut last_seq: HashMap<(String, TransactionId), u32> = HashMap::new();
        let mut last: Option<Message> = None;

        for op in &ops {
            let message = match message(op, &answered) {
                Some(m) => m,
                None => match (&last, op) {
                    (Some(m), Op::Resend) => m.clone(),
                    _ => continue,
                },
            };
            match &message {
                Message::Start(cp, start) => {
                    let recorded = ledger.record_start(cp, start).unwrap();
                    let id = recorded.id().unwrap().clone();
                    match &id {
                        TransactionId::Number(n) => {
                            let key = (cp.clone(), format!("{:?}", ocpp_model::StartKey::of(start)));
                            match id_of_key.get(&key) {
                                // Sent before: the same id, nothing recorded again.
                                Some(first) => {
                                    prop_assert_eq!(*first, *n);
                                    prop_assert_eq!(&recorded, &Recorded::Repeated(id.clone()));
                                }
                                None => {
                                    prop_assert!(ids_given.insert(*n), "id {} given twice", n);
                                    prop_assert_eq!(&recorded, &Recorded::New(id.clone()));
                                    id_of_key.insert(key, *n);
                                    answered.entry(cp.clone()).or_default().push(*n);
                                    open.insert((cp.clone(), id.clone()));
                                }
                            }
                        }
                        TransactionId::Text(_) => {
                            let k = (cp.clone(), id.clone());
                            let known = open.contains(&k) || ended.contains_key(&k);
                            prop_assert_eq!(matches!(recorded, Recorded::Repeated(_)), known);
                            if !known {
                                open.insert(k.clone());
                                last_seq.insert(k, 0);
                            }
                        }
                    }
                }
                Message::Update(cp, update) => {
                    let recorded = ledger.record_update(cp, update).unwrap();
                    let k = (cp.clone(), update.id.clone());
                    let seq = update.seq_no.unwrap();
                    let repeated = ended.contains_key(&k)
                        || last_seq.get(&k).is_some_and(|l| seq <= *l);
                    prop_assert_eq!(matches!(recorded, Recorded::Repeated(_)), repeated);
                    if !repeated {
                        open.insert(k.clone());
                        last_seq.insert(k, seq);
                    }
                }
                Message::End(cp, end) => {
                    let before = ledger.transaction(cp, &end.id).unwrap();
                    let recorded = ledger.record_end(cp, end).unwrap();
                    let k = (cp.clone(), end.id.clone());
                    if let Some(at) = ended.get(&k) {
                        // An end of an ended transaction changes nothing.
                        prop_assert_eq!(&recorded, &Recorded::Repeated(end.id.clone()));
                        prop_assert_eq!(ledger.transaction(cp, &end.id).unwrap(), before);
                        prop_assert_eq!(&ledger.transaction(cp, &end.id).unwrap().unwrap().ended.unwrap().0, at);
                    } else {
                        prop_assert_eq!(&recorded, &Recorded::New(end.id.clone()));
                        open.remove(&k);
                        ended.insert(k, end.timestamp.clone());
                    }
                }
            }
            last = Some(message);

            // The open set is the model's.
            for cp in ["CP0", "CP1"] {
                let mut actual: Vec<_> = ledger.open_transactions(cp).unwrap().into_iter().map(|t| t.id).collect();
                let mut expected: Vec<_> = open.iter().filter(|(c, _)| c == cp).map(|(_, id)| id.clone()).collect();
                actual.sort();
                expected.sort();
                prop_assert_eq!(actual, expected);
            }
        }
        // Ids given out later are new.
        let next = ledger.next_transaction_id().unwrap();
        prop_assert!(!ids_given.contains(&next));
    }
}

#[test]
fn an_unknown_1_6_id_is_not_recorded() {
    let ledger = InMemoryLedger::new();
    let stop = v1_6::StopTransactionRequest::new(1, time(0), 99);
    let StationEvent::TransactionEnded(end) = read(stop.into()) else {
        unreachable!()
    };
    assert_eq!(ledger.record_end("CP", &end).unwrap(), Recorded::Unknown);
    assert_eq!(ledger.transaction("CP", &end.id).unwrap(), None);
}

#[test]
fn ids_run_out_as_an_error() {
    let ledger = InMemoryLedger::starting_at(i32::MAX);
    assert!(ledger.next_transaction_id().is_err());
}

proptest::proptest! {
    /// A start key's text reads back as the same key, whatever its idTag holds (`|` too).
    #[test]
    fn a_start_key_reads_back_from_its_text(
        connector in proptest::option::of(0u32..10),
        id_tag in proptest::option::of("[ -~]{1,20}"),
        meter in proptest::option::of((any::<i64>(), 0u32..=18)),
        reservation in proptest::option::of(any::<i32>()),
    ) {
        let key = ocpp_model::StartKey {
            connector,
            id_tag,
            timestamp: "2025-01-02T03:04:05.123Z".into(),
            meter_start: meter.map(|(m, s)| ocpp_model::Decimal::new(m, s)),
            reservation,
        };
        let text = key.to_string();
        proptest::prop_assert_eq!(text.parse::<ocpp_model::StartKey>(), Ok(key), "{}", text);
    }
}
