//! The offline queue's rules, step by step, without a connection: the driver's part is
//! played by the test (it asks for the head, hands back outcomes and the time).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use ocpp_messages::{DecodeOptions, Response};
use ocpp_proto::station::{Evse, IdToken};

use super::*;
use crate::offline::MemoryStore;

const V16: OcppVersion = OcppVersion::V1_6;

/// A memory store that refuses every write while `refuse` is set.
struct Refusing {
    store: MemoryStore,
    refuse: Arc<AtomicBool>,
}

impl Refusing {
    fn check(&self) -> Result<(), OfflineStoreError> {
        if self.refuse.load(Ordering::Relaxed) {
            return Err(OfflineStoreError::State("refused by the test".into()));
        }
        Ok(())
    }
}

impl OfflineStore for Refusing {
    fn load(&mut self) -> Result<Vec<StoredMessage>, OfflineStoreError> {
        self.store.load()
    }
    fn push(&mut self, message: &StoredMessage) -> Result<(), OfflineStoreError> {
        self.check()?;
        self.store.push(message)
    }
    fn replace(&mut self, message: &StoredMessage) -> Result<(), OfflineStoreError> {
        self.check()?;
        self.store.replace(message)
    }
    fn remove(&mut self, seq: u64) -> Result<(), OfflineStoreError> {
        self.check()?;
        self.store.remove(seq)
    }
    fn push_with_state(
        &mut self,
        message: &StoredMessage,
        state: &str,
    ) -> Result<(), OfflineStoreError> {
        self.check()?;
        self.store.push_with_state(message, state)
    }
    fn save_state(&mut self, state: &str) -> Result<(), OfflineStoreError> {
        self.check()?;
        self.store.save_state(state)
    }
    fn load_state(&mut self) -> Result<Option<String>, OfflineStoreError> {
        self.store.load_state()
    }
}

fn queue_on(store: impl OfflineStore, version: OcppVersion) -> OfflineQueue<u32> {
    let fresh = || Transactions::new(version, "CP");
    let (queue, restart) =
        OfflineQueue::open(Box::new(store), 3, Duration::from_secs(10), fresh).unwrap();
    assert!(restart.open.is_empty());
    queue
}

fn start(evse: i32) -> TransactionOp {
    let token = IdToken::new("TAG", "Central");
    TransactionOp::Start(Start::new(Evse::new(evse), token, 0, DateTime::now()))
}

fn stop(evse: i32) -> TransactionOp {
    TransactionOp::Stop {
        evse,
        reading: Reading::new(1_000),
        reason: StationStopReason::Local,
    }
}

fn answer(action: &str, json: &str) -> CallOutcome {
    Ok(Response::decode(V16, action, json, &DecodeOptions::lenient()).unwrap())
}

fn delivered(queue: &mut OfflineQueue<u32>) -> Vec<(u32, bool)> {
    std::iter::from_fn(|| queue.poll_delivered())
        .map(|(waiter, outcome)| (waiter, outcome.is_ok()))
        .collect()
}

#[test]
fn one_message_in_flight_in_order_and_an_answer_delivers_it() {
    let mut queue = queue_on(MemoryStore::new(), V16);
    let now = Instant::now();
    let first = queue.transaction(start(1), DateTime::now(), 1).unwrap();
    let second = queue.transaction(stop(1), DateTime::now(), 2).unwrap();
    assert_eq!(queue.len(), 2);
    let (seq, request) = queue.next(now, V16).unwrap();
    assert_eq!((seq, request.action()), (first, "StartTransaction"));
    assert!(queue.next(now, V16).is_none(), "only the head is in flight");
    queue.on_outcome(now, second, answer("StopTransaction", "{}"));
    assert!(
        delivered(&mut queue).is_empty(),
        "not the one in flight: ignored"
    );
    let started = r#"{"idTagInfo":{"status":"Accepted"},"transactionId":42}"#;
    queue.on_outcome(now, first, answer("StartTransaction", started));
    assert_eq!(delivered(&mut queue), [(1, true)]);
    // 1.6: the StopTransaction queued behind it takes the id the answer gave.
    let (seq, request) = queue.next(now, V16).unwrap();
    assert_eq!(seq, second);
    let json = serde_json::to_value(&request).unwrap();
    assert_eq!(json["transactionId"], 42, "{json}");
}

#[test]
fn a_callerror_is_an_attempt_retried_after_the_interval_then_given_up() {
    let mut queue = queue_on(MemoryStore::new(), V16);
    let t0 = Instant::now();
    let seq = queue.transaction(start(1), DateTime::now(), 7).unwrap();
    let refused = || {
        Err(CallFailure::ErrorResponse {
            code: ocpp_proto::ErrorCode::InternalError,
            description: String::new(),
            details: "{}".into(),
        })
    };
    for attempt in 1..3u32 {
        let now = t0 + Duration::from_secs(100 * u64::from(attempt));
        assert_eq!(queue.next(now, V16).map(|(s, _)| s), Some(seq));
        queue.on_outcome(now, seq, refused());
        let wait = Duration::from_secs(10) * attempt;
        assert_eq!(queue.poll_timeout(), Some(now + wait));
        assert!(queue
            .next(now + wait - Duration::from_millis(1), V16)
            .is_none());
    }
    let now = t0 + Duration::from_secs(300);
    assert_eq!(queue.next(now, V16).map(|(s, _)| s), Some(seq));
    queue.on_outcome(now, seq, refused());
    assert_eq!(
        delivered(&mut queue),
        [(7, false)],
        "given up after 3 attempts"
    );
    assert!(queue.is_empty());
}

#[test]
fn an_answer_lost_with_the_connection_does_not_count() {
    let mut queue = queue_on(MemoryStore::new(), V16);
    let now = Instant::now();
    let seq = queue.transaction(start(1), DateTime::now(), 1).unwrap();
    for _ in 0..10 {
        assert_eq!(queue.next(now, V16).map(|(s, _)| s), Some(seq));
        queue.on_outcome(now, seq, Err(CallFailure::Disconnected));
    }
    assert!(delivered(&mut queue).is_empty());
    assert_eq!(queue.poll_timeout(), None);
    // Refused by the connection before it was written: it stays first as well.
    assert_eq!(queue.next(now, V16).map(|(s, _)| s), Some(seq));
    queue.unsent(seq);
    assert_eq!(queue.next(now, V16).map(|(s, _)| s), Some(seq));
}

#[test]
fn a_head_of_another_version_is_given_up_and_the_next_goes() {
    let mut queue = queue_on(MemoryStore::new(), V16);
    let now = Instant::now();
    let _ = queue.transaction(start(1), DateTime::now(), 1).unwrap();
    assert!(queue.next(now, OcppVersion::V2_0_1).is_none());
    let given_up: Vec<_> = std::iter::from_fn(|| queue.poll_delivered()).collect();
    assert!(matches!(
        given_up[..],
        [(1, Err(CallFailure::WrongVersion))]
    ));
}

#[test]
fn a_write_the_store_refuses_leaves_no_trace_and_hands_the_waiter_back() {
    let refuse = Arc::new(AtomicBool::new(true));
    let store = Refusing {
        store: MemoryStore::new(),
        refuse: refuse.clone(),
    };
    let mut queue = queue_on(store, V16);
    let refused = queue.transaction(start(1), DateTime::now(), 9).unwrap_err();
    assert!(
        matches!(refused.error, QueueError::Store(_)),
        "{:?}",
        refused.error
    );
    assert_eq!(refused.waiter, 9);
    assert!(queue.is_empty());
    assert_eq!(
        queue.transactions().open().count(),
        0,
        "the state did not change"
    );
    assert!(queue.poll_transactions().is_none());
    refuse.store(false, Ordering::Relaxed);
    assert!(queue.transaction(start(1), DateTime::now(), 9).is_ok());
    assert_eq!(queue.poll_transactions().map(|t| t.open().count()), Some(1));
    assert!(queue.poll_transactions().is_none(), "said once");
}

#[test]
fn what_the_store_kept_is_delivered_after_a_restart_without_a_waiter() {
    let mut store = MemoryStore::new();
    let message = StoredMessage {
        seq: 5,
        version: V16,
        action: "StopTransaction".into(),
        payload: r#"{"meterStop":10,"timestamp":"2026-12-05T10:00:00Z","transactionId":3}"#.into(),
        transaction_of: None,
    };
    store.push(&message).unwrap();
    let mut queue = queue_on(store, V16);
    let now = Instant::now();
    assert_eq!(queue.next(now, V16).map(|(s, _)| s), Some(5));
    queue.on_outcome(now, 5, answer("StopTransaction", "{}"));
    assert!(queue.is_empty());
    assert!(
        delivered(&mut queue).is_empty(),
        "nobody of this run waited"
    );
    // A new message follows the stored ones.
    let seq = queue.transaction(start(1), DateTime::now(), 1).unwrap();
    assert_eq!(seq, 6);
}

#[test]
fn a_stopping_driver_takes_the_waiters_and_the_messages_stay() {
    let mut queue = queue_on(MemoryStore::new(), V16);
    let _ = queue.transaction(start(1), DateTime::now(), 1).unwrap();
    let _ = queue.transaction(stop(1), DateTime::now(), 2).unwrap();
    assert_eq!(queue.take_waiters().collect::<Vec<_>>(), [1, 2]);
    assert_eq!(queue.len(), 2);
}
