//! The offline queue across a lost connection: order, retries, a 1.6 transaction queued offline.

use super::*;

// ---------------------------------------------------------------------------------------------
// 4. The offline queue across a lost connection.

/// What a central system of the queue tests records, and how it misbehaves.
#[derive(Default)]
struct Recorder {
    /// 2.0.1: TransactionEvent seqNos with their payload as JSON.
    seen: Mutex<Vec<(i32, String)>>,
    /// 1.6: the actions, in order, with their transactionId.
    actions: Mutex<Vec<(&'static str, Option<i32>, String)>>,
    /// Upgrades refused with 503 while set (the station is offline).
    refuse: AtomicBool,
    /// The answer of this message (1-based count) is lost: the connection is closed instead.
    lose_at: AtomicUsize,
    lost: AtomicBool,
}

impl Recorder {
    fn router(self: &Arc<Self>) -> Router<()> {
        let this = self.clone();
        let router = Router::<()>::new(move |_| {
            if this.refuse.load(Ordering::SeqCst) {
                Err(Rejection::new(503, "offline"))
            } else {
                Ok(())
            }
        });
        accepting(router)
    }

    /// Whether the message just recorded (the `count`th) has its answer lost: the connection
    /// is closed and upgrades refused until the test lets the station back.
    async fn maybe_lose(&self, session: &Session<()>, count: usize) {
        if count == self.lose_at.load(Ordering::SeqCst) && !self.lost.swap(true, Ordering::SeqCst) {
            self.refuse.store(true, Ordering::SeqCst);
            session
                .charge_point()
                .close(CloseCode::GOING_AWAY, "losing an answer");
            // The answer comes after the close: it cannot go out.
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_messages_survive_a_lost_connection_in_order() {
    let recorder = Arc::new(Recorder::default());
    recorder.lose_at.store(3, Ordering::SeqCst);
    let reasons: Arc<Mutex<Vec<v2_0_1::BootReasonEnum>>> = Arc::default();
    let router = recorder.router().on(with(
        &reasons,
        |reasons, _, request: v2_0_1::BootNotificationRequest| async move {
            reasons.lock().unwrap().push(request.reason);
            Ok(boot201(v2_0_1::RegistrationStatusEnum::Accepted, 300))
        },
    ));
    let router = router.on(with(
        &recorder,
        |recorder, session: Session<()>, request: v2_0_1::TransactionEventRequest| async move {
            let count = {
                let mut seen = recorder.seen.lock().unwrap();
                seen.push((request.seq_no, serde_json::to_string(&request).unwrap()));
                seen.len()
            };
            recorder.maybe_lose(&session, count).await;
            Ok(transaction_event_answer())
        },
    ));
    let csms = Csms::start(router).await;
    let station = station(&csms, "TX201", OcppVersion::V2_0_1)
        .connect()
        .unwrap();
    bounded("accepted", station.accepted()).await.unwrap();

    // Online: 0..=4; the answer of the 3rd (seqNo 2) is lost with the connection.
    let mut queued = Vec::new();
    for seq_no in 0..=4 {
        queued.push(station.queue(transaction_event(seq_no)).await.unwrap());
    }
    until_waiting(&station).await;
    // Offline (upgrades refused): 5..=7, and a non-transaction call fails at once.
    for seq_no in 5..=7 {
        queued.push(station.queue(transaction_event(seq_no)).await.unwrap());
    }
    until_waiting(&station).await;
    let beat = v2_0_1::HeartbeatRequest::default();
    assert_eq!(station.call(beat).await, Err(CallFailure::NotConnected));
    // The seqs the queue gave are in order.
    let seqs: Vec<u64> = queued.iter().map(|q| q.seq()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    assert!(recorder.seen.lock().unwrap().len() <= 3);

    recorder.refuse.store(false, Ordering::SeqCst);
    for queued in queued {
        let outcome = bounded("an outcome", queued.outcome()).await;
        assert!(outcome.is_ok(), "{outcome:?}");
    }
    let seen = recorder.seen.lock().unwrap().clone();
    assert_eq!(seq_nos(&seen), [0, 1, 2, 2, 3, 4, 5, 6, 7]);
    assert_repeats_identical(&seen);
    assert_eq!(seen[2].1, seen[3].1);
    // PowerUp on the first connection, Unknown (a reconnection, not a restart) after.
    assert_eq!(
        *reasons.lock().unwrap(),
        [
            v2_0_1::BootReasonEnum::PowerUp,
            v2_0_1::BootReasonEnum::Unknown
        ]
    );
    // A TransactionEvent through `call` goes through the queue too.
    let answer = bounded("a call", station.call(transaction_event(8))).await;
    assert!(answer.is_ok(), "{answer:?}");
    assert_eq!(recorder.seen.lock().unwrap().last().unwrap().0, 8);
    close(&station).await;
    csms.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callerror_is_retried_after_the_interval_then_given_up() {
    // seqNo 0: CALLERROR twice, then answered; seqNo 1: CALLERROR always; seqNo 2: answered.
    let seen: Arc<Mutex<Vec<(i32, Instant)>>> = Arc::default();
    let router = accepting(Router::<()>::default()).on(with(
        &seen,
        |seen, _, request: v2_0_1::TransactionEventRequest| async move {
            let tries = {
                let mut seen = seen.lock().unwrap();
                seen.push((request.seq_no, Instant::now()));
                seen.iter().filter(|(s, _)| *s == request.seq_no).count()
            };
            match (request.seq_no, tries) {
                (0, 1 | 2) | (1, _) => Err(ErrorAnswer::new(ErrorCode::InternalError, "not now")),
                _ => Ok(transaction_event_answer()),
            }
        },
    ));
    let csms = Csms::start(router).await;
    let interval = Duration::from_millis(100);
    let station = station(&csms, "RETRY", OcppVersion::V2_0_1)
        .transaction_retries(3, interval)
        .connect()
        .unwrap();
    bounded("accepted", station.accepted()).await.unwrap();
    let mut queued = Vec::new();
    for seq_no in 0..=2 {
        queued.push(station.queue(transaction_event(seq_no)).await.unwrap());
    }
    let mut outcomes = Vec::new();
    for queued in queued {
        outcomes.push(bounded("an outcome", queued.outcome()).await);
    }
    assert!(outcomes[0].is_ok(), "{outcomes:?}");
    match &outcomes[1] {
        Err(CallFailure::ErrorResponse { code, .. }) => assert_eq!(*code, ErrorCode::InternalError),
        other => panic!("seqNo 1: {other:?}"),
    }
    assert!(outcomes[2].is_ok(), "{outcomes:?}");
    let seen = seen.lock().unwrap().clone();
    let order: Vec<i32> = seen.iter().map(|(s, _)| *s).collect();
    assert_eq!(order, [0, 0, 0, 1, 1, 1, 2]);
    // The wait before a retry is the interval times the tries so far.
    for (i, expected) in [
        (1, interval),
        (2, interval * 2),
        (4, interval),
        (5, interval * 2),
    ] {
        let gap = seen[i].1 - seen[i - 1].1;
        assert!(
            gap + Duration::from_millis(5) >= expected,
            "try {i}: {gap:?}"
        );
        assert!(
            gap < expected + Duration::from_millis(500),
            "try {i}: {gap:?}"
        );
    }
    // The connection stayed up throughout.
    assert!(matches!(station.status(), Status::Accepted { .. }));
    close(&station).await;
    csms.stop().await;
}

fn meter_values(value: &str) -> v1_6::MeterValuesRequest {
    j(json!({
        "connectorId": 1, "transactionId": 0,
        "meterValue": [{"timestamp": "2026-05-01T10:05:00Z", "sampledValue": [{"value": value}]}]
    }))
}

fn stop_transaction() -> v1_6::StopTransactionRequest {
    j(json!({
        "transactionId": 0, "meterStop": 2000, "timestamp": "2026-05-01T10:10:00Z"
    }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_1_6_transaction_queued_offline_gets_its_transaction_id() {
    let recorder = Arc::new(Recorder::default());
    // The StartTransaction's answer (the 1st message) is lost once.
    recorder.lose_at.store(1, Ordering::SeqCst);
    recorder.refuse.store(true, Ordering::SeqCst);
    fn record(recorder: &Recorder, action: &'static str, id: Option<i32>, json: String) -> usize {
        let mut actions = recorder.actions.lock().unwrap();
        actions.push((action, id, json));
        actions.len()
    }
    let router = recorder
        .router()
        .on(with(
            &recorder,
            |recorder, session: Session<()>, request: v1_6::StartTransactionRequest| async move {
                let json = serde_json::to_string(&request).unwrap();
                let count = record(&recorder, "StartTransaction", None, json);
                recorder.maybe_lose(&session, count).await;
                let answer: v1_6::StartTransactionResponse = j(json!({
                    "idTagInfo": {"status": "Accepted"}, "transactionId": 4711
                }));
                Ok(answer)
            },
        ))
        .on(with(
            &recorder,
            |recorder, _, request: v1_6::MeterValuesRequest| async move {
                let json = serde_json::to_string(&request).unwrap();
                record(&recorder, "MeterValues", request.transaction_id, json);
                Ok(v1_6::MeterValuesResponse::default())
            },
        ))
        .on(with(
            &recorder,
            |recorder, _, request: v1_6::StopTransactionRequest| async move {
                let json = serde_json::to_string(&request).unwrap();
                record(
                    &recorder,
                    "StopTransaction",
                    Some(request.transaction_id),
                    json,
                );
                Ok(j::<v1_6::StopTransactionResponse>(json!({})))
            },
        ));
    let csms = Csms::start(router).await;
    let station = station(&csms, "TX16", OcppVersion::V1_6).connect().unwrap();
    // Offline from the start (the CSMS answers 503): the transaction is queued meanwhile.
    until_waiting(&station).await;
    let start = station.queue(start_transaction()).await.unwrap();
    let meter = station
        .queue_in(start.seq(), meter_values("1500"))
        .await
        .unwrap();
    let stop = station
        .queue_in(start.seq(), stop_transaction())
        .await
        .unwrap();
    // queue_in of something without a transaction, or of an unknown start, is refused.
    assert!(station
        .queue_in(start.seq(), v1_6::HeartbeatRequest::default())
        .await
        .is_err());
    assert!(station
        .queue_in(start.seq() + 1000, meter_values("1"))
        .await
        .is_err());
    assert!(recorder.actions.lock().unwrap().is_empty());

    // Online: the first StartTransaction's answer is lost (upgrades refused again); then the
    // station is let back.
    recorder.refuse.store(false, Ordering::SeqCst);
    eventually("the lost answer", || recorder.lost.load(Ordering::SeqCst)).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    recorder.refuse.store(false, Ordering::SeqCst);

    let start_seq = start.seq();
    let started = bounded("start", start.outcome()).await.expect("answered");
    let started = v1_6::StartTransactionResponse::try_from(started).unwrap();
    assert_eq!(started.transaction_id, 4711);
    bounded("meter", meter.outcome()).await.expect("answered");
    bounded("stop", stop.outcome()).await.expect("answered");
    let actions = recorder.actions.lock().unwrap().clone();
    let summary: Vec<(&str, Option<i32>)> = actions.iter().map(|(a, id, _)| (*a, *id)).collect();
    assert_eq!(
        summary,
        [
            ("StartTransaction", None),
            ("StartTransaction", None),
            ("MeterValues", Some(4711)),
            ("StopTransaction", Some(4711)),
        ]
    );
    assert_eq!(
        actions[0].2, actions[1].2,
        "the same StartTransaction again"
    );
    // A MeterValues queued for the transaction after its start was answered takes the id at
    // once.
    let late = station
        .queue_in(start_seq, meter_values("1900"))
        .await
        .unwrap();
    bounded("late", late.outcome()).await.expect("answered");
    let last = recorder.actions.lock().unwrap().last().cloned().unwrap();
    assert_eq!((last.0, last.1), ("MeterValues", Some(4711)));
    close(&station).await;
    csms.stop().await;
}
