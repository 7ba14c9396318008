//! The charging-station client against a real `Server` on loopback sockets: boot until
//! Accepted (and what is refused or held meanwhile), the reconnect back-off, refusals that stop
//! the station, the offline queue across a lost connection (1.6 and 2.0.1), the file store
//! across a killed process (the test re-executes itself as the station), and security profiles
//! 2 and 3. Every wait is bounded.

mod common;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{client_tls, eventually, pki, server_tls, Killed, Pki, PASSWORD, WAIT};
use ocpp_proto::NoCommonVersion;
use ocpp_tokio::ocpp::CloseCode;
use ocpp_tokio::station::{
    FileStore, PermanentFailure, RegistrationStatus, RetryBackOff, Station, StationBuilder,
    StationInfo, Status, Stopped,
};
use ocpp_tokio::{
    v1_6, v2_0_1, CallFailure, ConnectionConfig, DateTime, ErrorAnswer, ErrorCode, OcppVersion,
    Rejection, Router, Server, Session,
};
use serde_json::json;
use tokio::sync::{mpsc, oneshot};

/// A typed payload from JSON.
fn j<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).unwrap()
}

fn time() -> DateTime {
    DateTime::from_unix_timestamp(1_780_000_000).unwrap()
}

/// A short back-off, for the tests that reconnect.
fn quick() -> RetryBackOff {
    RetryBackOff {
        wait_minimum: Duration::from_millis(50),
        random_range: Duration::from_millis(50),
        repeat_times: 1,
    }
}

async fn bounded<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    match tokio::time::timeout(WAIT, future).await {
        Ok(value) => value,
        Err(_) => panic!("not within {WAIT:?}: {what}"),
    }
}

/// Waits until the station's status satisfies `condition`; that status.
async fn status_where(station: &Station, condition: impl Fn(&Status) -> bool) -> Status {
    let mut status = station.watch_status();
    bounded("a status", async {
        loop {
            let now = *status.borrow_and_update();
            if condition(&now) {
                return now;
            }
            status.changed().await.expect("the status channel is open");
        }
    })
    .await
}

/// A station at `url` speaking `version`, with the quick back-off.
fn station_at(url: &str, version: OcppVersion) -> StationBuilder {
    Station::builder(url)
        .unwrap()
        .versions([version])
        .back_off(quick())
}

/// Station `identity` of `csms` speaking `version`, with the quick back-off.
fn station(csms: &Csms, identity: &str, version: OcppVersion) -> StationBuilder {
    station_at(&csms.url(identity), version)
}

/// Waits until the station's boot was answered Pending; that status.
async fn until_pending(station: &Station) -> Status {
    status_where(station, |s| {
        matches!(
            s,
            Status::Registering {
                registration: Some(RegistrationStatus::Pending),
                ..
            }
        )
    })
    .await
}

/// Waits until the station is offline, waiting to reconnect.
async fn until_waiting(station: &Station) {
    status_where(station, |s| matches!(s, Status::Waiting { .. })).await;
}

/// How the station stopped.
async fn stopped(station: &Station) -> Result<(), PermanentFailure> {
    bounded("stopped", station.stopped()).await
}

/// Closes the station; it stops without a failure.
async fn close(station: &Station) {
    station.close();
    assert_eq!(stopped(station).await, Ok(()));
}

/// Waits until the station went back to Waiting (a failed attempt, the back-off chosen) at
/// least `times` times; panics if it stops instead. (A watcher may miss a short-lived status,
/// so this counts wake-ups that find it Waiting: each Waiting lasts the back-off.)
async fn keeps_retrying(station: &Station, times: usize) {
    let mut status = station.watch_status();
    bounded("retries", async {
        let mut waits = 0;
        while waits < times {
            status.changed().await.expect("the status channel is open");
            match *status.borrow_and_update() {
                Status::Waiting { .. } => waits += 1,
                Status::Stopped => panic!("the station stopped instead of retrying"),
                _ => {}
            }
        }
    })
    .await;
    assert_ne!(station.status(), Status::Stopped);
}

/// A central system on 127.0.0.1: a `Server` running until `stop`.
struct Csms {
    addr: SocketAddr,
    charge_points: ocpp_tokio::ChargePoints,
    stop: Option<oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<()>,
}

impl Csms {
    async fn start<S: Send + Sync + 'static>(router: Router<S>) -> Csms {
        Self::start_with(Server::builder().config(server_config()).handler(router)).await
    }

    async fn start_with<S: Send + Sync + 'static>(
        builder: ocpp_tokio::ServerBuilder<Router<S>>,
    ) -> Csms {
        let server = builder.bind("127.0.0.1:0").await.unwrap();
        let addr = server.local_addr().unwrap();
        let charge_points = server.charge_points();
        let (stop, stopped) = oneshot::channel::<()>();
        let done = tokio::spawn(async move {
            let _ = server
                .run_until(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Csms {
            addr,
            charge_points,
            stop: Some(stop),
            done,
        }
    }

    fn url(&self, identity: &str) -> String {
        format!("ws://{}/ocpp/{identity}", self.addr)
    }

    /// The URL over TLS (the server certificate names localhost).
    fn tls_url(&self, identity: &str) -> String {
        format!("wss://localhost:{}/ocpp/{identity}", self.addr.port())
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if tokio::time::timeout(WAIT, &mut self.done).await.is_err() {
            self.done.abort();
        }
    }
}

fn server_config() -> ConnectionConfig {
    ConnectionConfig::default()
        .versions(vec![OcppVersion::V2_0_1, OcppVersion::V1_6])
        .handshake_timeout(Duration::from_secs(5))
        .close_timeout(Duration::from_secs(1))
}

// ---------------------------------------------------------------------------------------------
// The central system's answers.

fn boot16(status: v1_6::RegistrationStatus, interval: i32) -> v1_6::BootNotificationResponse {
    v1_6::BootNotificationResponse::new(status, time(), interval)
}

fn boot201(
    status: v2_0_1::RegistrationStatusEnum,
    interval: i32,
) -> v2_0_1::BootNotificationResponse {
    v2_0_1::BootNotificationResponse::new(time(), interval, status)
}

/// `handler` of a router, given a clone of `shared` each time it is called.
fn with<T, R, Fut>(
    shared: &T,
    handler: impl Fn(T, Session<()>, R) -> Fut + Send + Sync + 'static,
) -> impl Fn(Session<()>, R) -> Fut + Send + Sync + 'static
where
    T: Clone + Send + Sync + 'static,
{
    let shared = shared.clone();
    move |session, request| handler(shared.clone(), session, request)
}

/// A router that accepts every boot (300 s heartbeat) and answers heartbeats, 1.6 and 2.0.1.
fn accepting<S: Default + Send + Sync + 'static>(router: Router<S>) -> Router<S> {
    router
        .on(|_, _: v1_6::BootNotificationRequest| async {
            Ok(boot16(v1_6::RegistrationStatus::Accepted, 300))
        })
        .on(|_, _: v2_0_1::BootNotificationRequest| async {
            Ok(boot201(v2_0_1::RegistrationStatusEnum::Accepted, 300))
        })
        .on(|_, _: v1_6::HeartbeatRequest| async { Ok(v1_6::HeartbeatResponse::new(time())) })
        .on(|_, _: v2_0_1::HeartbeatRequest| async { Ok(v2_0_1::HeartbeatResponse::new(time())) })
}

/// A 2.0.1 TransactionEvent of transaction `TX1` with `seq_no`; the same content for the same
/// number.
fn transaction_event(seq_no: i32) -> v2_0_1::TransactionEventRequest {
    let event_type = if seq_no == 0 { "Started" } else { "Updated" };
    j(json!({
        "eventType": event_type,
        "timestamp": format!("2026-05-01T10:{:02}:{:02}Z", seq_no / 60, seq_no % 60),
        "triggerReason": "MeterValuePeriodic",
        "seqNo": seq_no,
        "transactionInfo": {"transactionId": "TX1"},
        "meterValue": [{"timestamp": "2026-05-01T10:00:00Z",
                        "sampledValue": [{"value": f64::from(seq_no) * 10.0}]}]
    }))
}

fn transaction_event_answer() -> v2_0_1::TransactionEventResponse {
    j(json!({}))
}

/// The seqNos in the order they arrived.
fn seq_nos(seen: &[(i32, String)]) -> Vec<i32> {
    seen.iter().map(|(seq, _)| *seq).collect()
}

/// Every repeated seqNo carries the same payload as the first time.
fn assert_repeats_identical(seen: &[(i32, String)]) {
    for (i, (seq, payload)) in seen.iter().enumerate() {
        for (other_seq, other) in &seen[..i] {
            if other_seq == seq {
                assert_eq!(payload, other, "seqNo {seq} repeated with other content");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Boot.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boots_until_accepted_after_pending() {
    let boots: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let heartbeats: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let router = Router::<()>::default()
        .on(with(
            &boots,
            |boots, _, _: v1_6::BootNotificationRequest| async move {
                let mut boots = boots.lock().unwrap();
                boots.push(Instant::now());
                Ok(if boots.len() == 1 {
                    boot16(v1_6::RegistrationStatus::Pending, 1)
                } else {
                    boot16(v1_6::RegistrationStatus::Accepted, 1)
                })
            },
        ))
        .on(with(
            &heartbeats,
            |heartbeats, _, _: v1_6::HeartbeatRequest| async move {
                heartbeats.lock().unwrap().push(Instant::now());
                Ok(v1_6::HeartbeatResponse::new(time()))
            },
        ));
    let csms = Csms::start(router).await;

    // The station's router answers GetConfiguration (and would accept remote starts).
    let station_router = Router::<()>::default()
        .on(|_, _: v1_6::GetConfigurationRequest| async {
            let answer: v1_6::GetConfigurationResponse = j(json!({
                "configurationKey": [{"key": "HeartbeatInterval", "readonly": false, "value": "1"}]
            }));
            Ok(answer)
        })
        .on(|_, _: v1_6::RemoteStartTransactionRequest| async {
            Ok(v1_6::RemoteStartTransactionResponse::new(
                v1_6::RemoteStartStopStatus::Accepted,
            ))
        });
    let station = station(&csms, "CP16", OcppVersion::V1_6)
        .info(StationInfo::new("ACME", "Pending"))
        .router(station_router)
        .connect()
        .unwrap();
    let pending = until_pending(&station).await;
    assert!(matches!(
        pending,
        Status::Registering {
            version: OcppVersion::V1_6,
            ..
        }
    ));

    // While Pending: a remote start is refused by the station itself, configuration is served.
    let cp = csms.charge_points.get("CP16").expect("registered");
    let refused = bounded("RemoteStartTransaction", async {
        cp.call(v1_6::RemoteStartTransactionRequest::new("TAG"))
            .await
    })
    .await;
    match refused {
        Err(CallFailure::ErrorResponse { code, .. }) => assert_eq!(code, ErrorCode::SecurityError),
        other => panic!("RemoteStartTransaction while Pending: {other:?}"),
    }
    let configuration = bounded("GetConfiguration", async {
        cp.call(j::<v1_6::GetConfigurationRequest>(json!({}))).await
    })
    .await
    .expect("GetConfiguration answered while Pending");
    let keys = configuration.configuration_key.expect("keys");
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0].key, "HeartbeatInterval");
    assert_eq!(
        boots.lock().unwrap().len(),
        1,
        "both calls were made while Pending"
    );

    let version = bounded("accepted", station.accepted()).await.unwrap();
    assert_eq!(version, OcppVersion::V1_6);
    let accepted_at = Instant::now();
    let (first, second) = {
        let boots = boots.lock().unwrap();
        assert_eq!(boots.len(), 2);
        (boots[0], boots[1])
    };
    let gap = second - first;
    assert!(
        gap >= Duration::from_millis(950),
        "the second boot {gap:?} after the first, before the 1 s interval"
    );
    assert!(gap < Duration::from_secs(4), "{gap:?}");
    // The 1 s heartbeat follows the Accepted boot.
    eventually("a heartbeat", || !heartbeats.lock().unwrap().is_empty()).await;
    let beat = heartbeats.lock().unwrap()[0];
    assert!(beat > second);
    assert!(beat + Duration::from_millis(50) >= second + Duration::from_secs(1));
    assert!(beat < accepted_at + Duration::from_secs(4));
    assert_eq!(station.status(), Status::Accepted { version });
    // The interval in force is the Accepted boot's, until the central system changes it.
    assert_eq!(station.heartbeat_interval(), Duration::from_secs(1));
    station.set_heartbeat_interval(Duration::from_secs(7));
    eventually("the new interval", || {
        station.heartbeat_interval() == Duration::from_secs(7)
    })
    .await;

    close(&station).await;
    assert_eq!(station.status(), Status::Stopped);
    csms.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_made_while_pending_waits_for_accepted_on_2_0_1() {
    let log: Arc<Mutex<Vec<(&'static str, Instant)>>> = Arc::default();
    let router = Router::<()>::default()
        .on(with(
            &log,
            |log, _, request: v2_0_1::BootNotificationRequest| async move {
                assert_eq!(
                    request.reason,
                    v2_0_1::BootReasonEnum::PowerUp,
                    "the first connection boots with PowerUp"
                );
                let mut log = log.lock().unwrap();
                let first = !log.iter().any(|(what, _)| *what == "Pending");
                let status = if first {
                    log.push(("Pending", Instant::now()));
                    v2_0_1::RegistrationStatusEnum::Pending
                } else {
                    log.push(("Accepted", Instant::now()));
                    v2_0_1::RegistrationStatusEnum::Accepted
                };
                Ok(boot201(status, 1))
            },
        ))
        .on(with(
            &log,
            |log, _, _: v2_0_1::StatusNotificationRequest| async move {
                log.lock()
                    .unwrap()
                    .push(("StatusNotification", Instant::now()));
                Ok(v2_0_1::StatusNotificationResponse::default())
            },
        ));
    let csms = Csms::start(router).await;
    let station = station(&csms, "CP201", OcppVersion::V2_0_1)
        .connect()
        .unwrap();
    until_pending(&station).await;
    // A RequestStartTransaction of the CSMS is refused while Pending.
    let cp = csms.charge_points.get("CP201").expect("registered");
    let request: v2_0_1::RequestStartTransactionRequest = j(json!({
        "idToken": {"idToken": "TAG", "type": "ISO14443"}, "remoteStartId": 1
    }));
    match bounded("RequestStartTransaction", cp.call(request)).await {
        Err(CallFailure::ErrorResponse { code, .. }) => assert_eq!(code, ErrorCode::SecurityError),
        other => panic!("RequestStartTransaction while Pending: {other:?}"),
    }
    // A station call made while Pending is held until Accepted.
    let status = v2_0_1::StatusNotificationRequest::new(
        time(),
        v2_0_1::ConnectorStatusEnum::Available,
        1,
        1,
    );
    let call = tokio::spawn({
        let station = station.clone();
        async move { station.call(status).await }
    });
    bounded("the held call", call)
        .await
        .unwrap()
        .expect("StatusNotification answered");
    let log = log.lock().unwrap().clone();
    let order: Vec<&str> = log.iter().map(|(what, _)| *what).collect();
    assert_eq!(order, ["Pending", "Accepted", "StatusNotification"]);
    assert!(log[1].1 - log[0].1 >= Duration::from_millis(950), "{log:?}");
    assert!(matches!(station.status(), Status::Accepted { .. }));
    close(&station).await;
    csms.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_held_past_its_call_timeout_ends_unsent() {
    // The CSMS keeps the station Pending (next boot in 60 s); the station's call timeout is
    // 500 ms: its StatusNotification ends DeadlinePassed (safe to retry) and never goes out.
    let log: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let router = Router::<()>::default()
        .on(with(
            &log,
            |log, _, _: v2_0_1::BootNotificationRequest| async move {
                log.lock().unwrap().push("BootNotification");
                Ok(boot201(v2_0_1::RegistrationStatusEnum::Pending, 60))
            },
        ))
        .on(with(
            &log,
            |log, _, _: v2_0_1::StatusNotificationRequest| async move {
                log.lock().unwrap().push("StatusNotification");
                Ok(v2_0_1::StatusNotificationResponse::default())
            },
        ));
    let csms = Csms::start(router).await;
    let config = ConnectionConfig::default().call_timeout(Duration::from_millis(500));
    let station = station(&csms, "CP-HELD", OcppVersion::V2_0_1)
        .config(config)
        .connect()
        .unwrap();
    until_pending(&station).await;
    let status = v2_0_1::StatusNotificationRequest::new(
        time(),
        v2_0_1::ConnectorStatusEnum::Available,
        1,
        1,
    );
    let asked = Instant::now();
    let outcome = bounded("the held call", station.call(status)).await;
    assert_eq!(outcome.unwrap_err(), CallFailure::DeadlinePassed);
    assert!(asked.elapsed() >= Duration::from_millis(450));
    assert!(!CallFailure::DeadlinePassed.may_have_reached_peer());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(*log.lock().unwrap(), ["BootNotification"]);
    close(&station).await;
    csms.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_triggered_message_goes_out_while_pending() {
    let log: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let router = Router::<()>::default()
        .on(with(
            &log,
            |log, _, _: v1_6::BootNotificationRequest| async move {
                let mut log = log.lock().unwrap();
                let first = !log.contains(&"Pending");
                log.push(if first { "Pending" } else { "Accepted" });
                Ok(if first {
                    boot16(v1_6::RegistrationStatus::Pending, 2)
                } else {
                    boot16(v1_6::RegistrationStatus::Accepted, 300)
                })
            },
        ))
        .on(with(
            &log,
            |log, _, _: v1_6::StatusNotificationRequest| async move {
                log.lock().unwrap().push("StatusNotification");
                Ok(v1_6::StatusNotificationResponse::default())
            },
        ))
        .on(with(&log, |log, _, _: v1_6::AuthorizeRequest| async move {
            log.lock().unwrap().push("Authorize");
            let answer: v1_6::AuthorizeResponse = j(json!({"idTagInfo": {"status": "Accepted"}}));
            Ok(answer)
        }));
    let csms = Csms::start(router).await;
    // The station answers a StatusNotification trigger and sends it from a task of its own.
    let station_router =
        Router::<()>::default().on(|session: Session<()>, _: v1_6::TriggerMessageRequest| {
            let cp = session.charge_point().clone();
            async move {
                tokio::spawn(async move {
                    let status: v1_6::StatusNotificationRequest = j(json!({
                        "connectorId": 1, "errorCode": "NoError", "status": "Available"
                    }));
                    cp.call(status).await
                });
                Ok(j::<v1_6::TriggerMessageResponse>(
                    json!({"status": "Accepted"}),
                ))
            }
        });
    let station = station(&csms, "TRIGGER", OcppVersion::V1_6)
        .router(station_router)
        .connect()
        .unwrap();
    until_pending(&station).await;
    // An Authorize of the station's own is held while Pending.
    let authorize = tokio::spawn({
        let station = station.clone();
        async move { station.call(v1_6::AuthorizeRequest::new("TAG")).await }
    });
    let cp = csms.charge_points.get("TRIGGER").unwrap();
    let trigger: v1_6::TriggerMessageRequest = j(json!({"requestedMessage": "StatusNotification"}));
    let answer = bounded("TriggerMessage", cp.call(trigger)).await.unwrap();
    assert_eq!(answer.status, j(json!("Accepted")));
    eventually("the triggered StatusNotification", || {
        log.lock().unwrap().contains(&"StatusNotification")
    })
    .await;
    bounded("Authorize", authorize).await.unwrap().unwrap();
    assert_eq!(
        *log.lock().unwrap(),
        ["Pending", "StatusNotification", "Accepted", "Authorize"]
    );
    close(&station).await;
    csms.stop().await;
}

// ---------------------------------------------------------------------------------------------
// 2. Back-off.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backoff_waits_within_the_configured_bounds() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (accepted_tx, mut accepted) = mpsc::unbounded_channel::<Instant>();
    let acceptor = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let _ = accepted_tx.send(Instant::now());
            drop(stream);
        }
    });
    let policy = RetryBackOff {
        wait_minimum: Duration::from_millis(200),
        random_range: Duration::from_millis(100),
        repeat_times: 2,
    };
    let station = station_at(&format!("ws://{addr}/ocpp/BACKOFF"), OcppVersion::V1_6)
        .back_off(policy)
        .connect()
        .unwrap();
    // Every status, as it changes (each lasts at least the shortest wait, 200 ms).
    let mut watch = station.watch_status();
    let statuses = tokio::spawn(async move {
        let mut seen = vec![*watch.borrow_and_update()];
        while watch.changed().await.is_ok() {
            let now = *watch.borrow_and_update();
            seen.push(now);
            if now == Status::Stopped {
                break;
            }
        }
        seen
    });
    let mut instants = Vec::new();
    for _ in 0..5 {
        instants.push(bounded("an attempt", accepted.recv()).await.unwrap());
    }
    close(&station).await;
    acceptor.abort();
    let statuses = bounded("the statuses", statuses).await.unwrap();

    let slack = Duration::from_millis(400);
    for (k, pair) in instants.windows(2).enumerate() {
        let gap = pair[1] - pair[0];
        let fixed = policy.fixed_part(k as u32);
        assert_eq!(
            fixed,
            Duration::from_millis(200) * 2u32.pow((k as u32).min(2))
        );
        assert!(
            gap + Duration::from_millis(20) >= fixed,
            "gap {k}: {gap:?} < {fixed:?}"
        );
        assert!(
            gap <= fixed + policy.random_range + slack,
            "gap {k}: {gap:?} > {fixed:?} + 100 ms + slack"
        );
    }
    // The k-th Waiting (from 0) comes after k failures: its wait lies in `bounds(k)`. (Each
    // Waiting lasts at least 200 ms, so the watcher sees every one; a Connecting lasts
    // milliseconds and may be missed, but when seen it is attempt k + 1.)
    let mut connecting = None;
    let mut waits = 0u32;
    for status in &statuses {
        match *status {
            Status::Connecting { attempt } => connecting = Some(attempt),
            Status::Waiting { wait, .. } => {
                if let Some(attempt) = connecting.take() {
                    assert_eq!(attempt, waits + 1, "{statuses:?}");
                }
                let (low, high) = policy.bounds(waits);
                assert!(
                    low <= wait && wait <= high,
                    "after {waits} failures: {wait:?} not in [{low:?}, {high:?}]"
                );
                waits += 1;
            }
            Status::Stopped => {}
            other => panic!("never connected, yet {other:?}"),
        }
    }
    assert!(waits >= 4, "{statuses:?}");
}

// ---------------------------------------------------------------------------------------------
// 3. Refusals.

/// A 1.6 station of `csms`, "REFUSED".
fn refused_station(csms: &Csms) -> StationBuilder {
    station(csms, "REFUSED", OcppVersion::V1_6)
}

/// A router that counts the upgrades it answers with `answer`; the count.
fn counting(answer: Result<(), Rejection>) -> (Router<()>, Arc<AtomicUsize>) {
    let attempts = Arc::new(AtomicUsize::new(0));
    let counted = attempts.clone();
    let router = Router::<()>::new(move |_| {
        counted.fetch_add(1, Ordering::SeqCst);
        answer
    });
    (router, attempts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_stops_the_station() {
    for (rejection, failure) in [
        (Rejection::UNAUTHORIZED, PermanentFailure::Unauthorized),
        (Rejection::FORBIDDEN, PermanentFailure::Forbidden),
    ] {
        let (router, attempts) = counting(Err(rejection));
        let csms = Csms::start(router).await;
        let station = refused_station(&csms).connect().unwrap();
        assert_eq!(stopped(&station).await, Err(failure.clone()));
        assert_eq!(
            bounded("accepted", station.accepted()).await,
            Err(Stopped {
                failure: Some(failure.clone())
            })
        );
        assert_eq!(station.status(), Status::Stopped);
        assert_eq!(attempts.load(Ordering::SeqCst), 1, "{failure:?}: no retry");
        // A stopped station refuses calls and queueing.
        let beat = v1_6::HeartbeatRequest::default();
        assert_eq!(station.call(beat).await, Err(CallFailure::NotConnected));
        assert!(station.queue(start_transaction()).await.is_err());
        csms.stop().await;
    }

    // With retry_refusals, a 401 is retried with the back-off.
    let (router, attempts) = counting(Err(Rejection::UNAUTHORIZED));
    let csms = Csms::start(router).await;
    let station = refused_station(&csms)
        .retry_refusals(true)
        .connect()
        .unwrap();
    eventually("three attempts", || attempts.load(Ordering::SeqCst) >= 3).await;
    assert_ne!(station.status(), Status::Stopped);
    close(&station).await;
    assert_eq!(
        bounded("accepted", station.accepted()).await,
        Err(Stopped { failure: None })
    );
    csms.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_version_in_common_stops_the_station() {
    // The server's default: complete the handshake without a subprotocol, then close (1002).
    let (router, _) = counting(Ok(()));
    let config = server_config().versions(vec![OcppVersion::V2_0_1]);
    let csms = Csms::start_with(Server::builder().config(config).handler(router)).await;
    let station = refused_station(&csms).connect().unwrap();
    assert_eq!(
        stopped(&station).await,
        Err(PermanentFailure::NoCommonVersion)
    );
    assert_eq!(
        bounded("accepted", station.accepted()).await,
        Err(Stopped {
            failure: Some(PermanentFailure::NoCommonVersion)
        })
    );
    csms.stop().await;

    // A server configured to answer 400 instead: the station cannot tell a 400 from any other
    // bad request, so it keeps retrying with the back-off (it does not stop).
    let (router, _) = counting(Ok(()));
    let config = server_config()
        .versions(vec![OcppVersion::V2_0_1])
        .no_common_version(NoCommonVersion::Reject400);
    let csms = Csms::start_with(Server::builder().config(config).handler(router)).await;
    let station = refused_station(&csms).connect().unwrap();
    keeps_retrying(&station, 3).await;
    close(&station).await;
    csms.stop().await;
}

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

fn start_transaction() -> v1_6::StartTransactionRequest {
    j(json!({
        "connectorId": 1, "idTag": "TAG", "meterStart": 1000, "timestamp": "2026-05-01T10:00:00Z"
    }))
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

// ---------------------------------------------------------------------------------------------
// 5. The file store across a killed station process.

const CHILD_URL: &str = "OCPP_STATION_CHILD_URL";
const CHILD_JOURNAL: &str = "OCPP_STATION_CHILD_JOURNAL";
const CHILD_FIRST: &str = "OCPP_STATION_CHILD_FIRST";
const CHILD_COUNT: &str = "OCPP_STATION_CHILD_COUNT";

/// The station process of `the_file_store_survives_a_killed_station_process`: run only as its
/// child (the environment says what to do). Queues TransactionEvents with seqNo `FIRST..`,
/// printing `queued N` after each, then runs until its stdin closes.
#[test]
#[ignore = "the child process of the_file_store_survives_a_killed_station_process"]
fn child_station() {
    let (Ok(url), Ok(journal), Ok(first), Ok(count)) = (
        std::env::var(CHILD_URL),
        std::env::var(CHILD_JOURNAL),
        std::env::var(CHILD_FIRST),
        std::env::var(CHILD_COUNT),
    ) else {
        return;
    };
    let first: i32 = first.parse().unwrap();
    let count: i32 = count.parse().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let station = station_at(&url, OcppVersion::V2_0_1)
            .store(FileStore::open(&journal).unwrap())
            .connect()
            .unwrap();
        for seq_no in first..first + count {
            station.queue(transaction_event(seq_no)).await.unwrap();
            println!("queued {seq_no}");
        }
        println!("ready");
        // Until the parent closes stdin (or kills this process).
        let (closed_tx, closed) = oneshot::channel::<()>();
        std::thread::spawn(move || {
            let mut sink = String::new();
            while std::io::stdin().read_line(&mut sink).is_ok_and(|n| n > 0) {}
            let _ = closed_tx.send(());
        });
        let _ = closed.await;
        station.close();
        station.stopped().await.unwrap();
        println!("closed");
    });
}

/// A child station process and its stdout lines.
struct ChildStation {
    process: Killed,
    lines: mpsc::UnboundedReceiver<String>,
}

impl ChildStation {
    fn spawn(url: &str, journal: &std::path::Path, first: i32, count: i32) -> ChildStation {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "child_station", "--nocapture", "--ignored"])
            .env(CHILD_URL, url)
            .env(CHILD_JOURNAL, journal)
            .env(CHILD_FIRST, first.to_string())
            .env(CHILD_COUNT, count.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        ChildStation {
            process: Killed(child),
            lines,
        }
    }

    /// Waits for a line that ends with `expected`.
    async fn expect_line(&mut self, expected: &str) {
        bounded(expected, async {
            loop {
                match self.lines.recv().await {
                    // (libtest may print `test child_station ... ` before the first line.)
                    Some(line) if line.trim_end().ends_with(expected) => return,
                    Some(_) => {}
                    None => panic!("the child ended before printing {expected:?}"),
                }
            }
        })
        .await;
    }

    fn kill(mut self) {
        self.process.0.kill().unwrap();
        self.process.0.wait().unwrap();
    }
}

fn journal_path() -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    std::env::temp_dir().join(format!(
        "ocpp-station-journal-{}-{nanos}.jsonl",
        std::process::id()
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_file_store_survives_a_killed_station_process() {
    let journal = journal_path();
    let seen: Arc<Mutex<Vec<(i32, String)>>> = Arc::default();

    // Round 1: nobody listens; 5 messages queued, then SIGKILL.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_addr = dead.local_addr().unwrap();
    drop(dead);
    let mut child = ChildStation::spawn(&format!("ws://{dead_addr}/ocpp/FILE"), &journal, 1, 5);
    child.expect_line("queued 5").await;
    child.kill();
    assert!(std::fs::metadata(&journal).unwrap().len() > 0);

    // Round 2: a CSMS that answers seqNo 1..=5 and never the 6th; 3 more queued (6..=8); the
    // process is killed once the CSMS has the 6th.
    let recording = |answer_from_6: bool| {
        accepting(Router::<()>::default()).on(with(
            &seen,
            move |seen, _, request: v2_0_1::TransactionEventRequest| async move {
                let json = serde_json::to_string(&request).unwrap();
                seen.lock().unwrap().push((request.seq_no, json));
                if request.seq_no >= 6 && !answer_from_6 {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                }
                Ok(transaction_event_answer())
            },
        ))
    };
    let csms = Csms::start(recording(false)).await;
    let mut child = ChildStation::spawn(&csms.url("FILE"), &journal, 6, 3);
    child.expect_line("queued 8").await;
    eventually("the CSMS has the 6th", || {
        seen.lock().unwrap().iter().any(|(seq, _)| *seq == 6)
    })
    .await;
    child.kill();
    assert_eq!(seq_nos(&seen.lock().unwrap()), [1, 2, 3, 4, 5, 6]);
    csms.stop().await;

    // Round 3: a normal CSMS; nothing new queued; everything left is delivered.
    let csms = Csms::start(recording(true)).await;
    let mut child = ChildStation::spawn(&csms.url("FILE"), &journal, 9, 0);
    child.expect_line("ready").await;
    eventually("all 8 seqNos", || {
        seen.lock().unwrap().iter().any(|(seq, _)| *seq == 8)
    })
    .await;
    eventually("the journal is empty", || {
        std::fs::metadata(&journal).is_ok_and(|m| m.len() == 0)
    })
    .await;
    // Close the child's stdin: it closes its station and exits.
    drop(child.process.0.stdin.take());
    child.expect_line("closed").await;
    let status = bounded("the child's exit", async {
        loop {
            if let Some(status) = child.process.0.try_wait().unwrap() {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(status.success(), "{status:?}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seq_nos(&seen), [1, 2, 3, 4, 5, 6, 6, 7, 8]);
    assert_repeats_identical(&seen);
    assert_eq!(std::fs::metadata(&journal).unwrap().len(), 0);
    csms.stop().await;
    let _ = std::fs::remove_file(&journal);
}

// ---------------------------------------------------------------------------------------------
// 6. Security profiles 2 and 3.

/// Profile 2: the password must match; profile 3: the certificate's CN is the identity.
fn tls_router() -> Router<()> {
    accepting(Router::<()>::new(|connecting| {
        let identity = connecting.identity().as_str();
        match connecting.certificate() {
            Some(certificate) if certificate.common_name() == Some(identity) => Ok(()),
            Some(_) => Err(Rejection::FORBIDDEN),
            None => {
                let ok = connecting
                    .credentials()
                    .is_some_and(|c| c.user() == Some(identity) && c.password() == PASSWORD);
                if ok {
                    Ok(())
                } else {
                    Err(Rejection::UNAUTHORIZED)
                }
            }
        }
    }))
}

/// A central system over TLS with [`tls_router`]: profile 2 without `mutual`, 3 with.
async fn tls_csms(pki: &Pki, mutual: bool) -> Csms {
    let builder = Server::builder()
        .config(server_config())
        .tls(server_tls(pki, mutual))
        .handler(tls_router());
    Csms::start_with(builder).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn security_profile_2_and_3_over_tls() {
    let pki = pki();

    // Profile 2: TLS and Basic credentials.
    let csms = tls_csms(&pki, false).await;
    let profile_2 = |password: &[u8], trusted| {
        station_at(&csms.tls_url("CP002"), OcppVersion::V2_0_1)
            .password(password)
            .tls(client_tls(trusted, None))
            .connect()
            .unwrap()
    };
    let station = profile_2(PASSWORD, &pki.ca);
    assert_eq!(
        bounded("accepted over TLS", station.accepted()).await,
        Ok(OcppVersion::V2_0_1)
    );
    close(&station).await;
    // The wrong password: 401 stops it.
    let station = profile_2(b"wrong-password-16", &pki.ca);
    assert_eq!(stopped(&station).await, Err(PermanentFailure::Unauthorized));
    // A station that does not trust the server's CA keeps retrying.
    let station = profile_2(PASSWORD, &pki.rogue_ca);
    keeps_retrying(&station, 3).await;
    close(&station).await;
    csms.stop().await;

    // Profile 3: mutual TLS; the certificate names the identity.
    let csms = tls_csms(&pki, true).await;
    let with_cp001 = |identity: &str| {
        station_at(&csms.tls_url(identity), OcppVersion::V1_6)
            .tls(client_tls(&pki.ca, Some(&pki.cp001)))
            .connect()
            .unwrap()
    };
    let station = with_cp001("CP001");
    assert_eq!(
        bounded("accepted over mutual TLS", station.accepted()).await,
        Ok(OcppVersion::V1_6)
    );
    assert!(csms.charge_points.get("CP001").is_some());
    close(&station).await;
    // CP001's certificate for identity CP003: 403 stops it.
    let station = with_cp001("CP003");
    assert_eq!(stopped(&station).await, Err(PermanentFailure::Forbidden));
    csms.stop().await;
}

// ---------------------------------------------------------------------------------------------
// The station's transactions across restarts (in one process: a station closed, another
// started on the same journal).

/// Every transaction message a central system got, as JSON, in order.
type Seen = Arc<Mutex<Vec<serde_json::Value>>>;

fn recording_transactions(seen: &Seen) -> Router<()> {
    fn keep(seen: &Seen, action: &str, request: &impl serde::Serialize) {
        let mut value = serde_json::to_value(request).unwrap();
        value["action"] = json!(action);
        seen.lock().unwrap().push(value);
    }
    accepting(Router::<()>::default())
        .on(with(
            seen,
            |seen, _, r: v1_6::StartTransactionRequest| async move {
                keep(&seen, "StartTransaction", &r);
                Ok(j::<v1_6::StartTransactionResponse>(
                    json!({"idTagInfo": {"status": "Accepted"}, "transactionId": 4711}),
                ))
            },
        ))
        .on(with(
            seen,
            |seen, _, r: v1_6::MeterValuesRequest| async move {
                keep(&seen, "MeterValues", &r);
                Ok(v1_6::MeterValuesResponse::default())
            },
        ))
        .on(with(
            seen,
            |seen, _, r: v1_6::StopTransactionRequest| async move {
                keep(&seen, "StopTransaction", &r);
                Ok(j::<v1_6::StopTransactionResponse>(json!({})))
            },
        ))
        .on(with(
            seen,
            |seen, _, r: v2_0_1::TransactionEventRequest| async move {
                keep(&seen, "TransactionEvent", &r);
                Ok(transaction_event_answer())
            },
        ))
        .on(|_, _: ocpp_tokio::v2_1::BootNotificationRequest| async {
            Ok(j::<ocpp_tokio::v2_1::BootNotificationResponse>(json!({
                "currentTime": "2026-05-01T10:00:00Z", "interval": 300, "status": "Accepted"
            })))
        })
        .on(with(
            seen,
            |seen, _, r: ocpp_tokio::v2_1::TransactionEventRequest| async move {
                keep(&seen, "TransactionEvent", &r);
                Ok(j::<ocpp_tokio::v2_1::TransactionEventResponse>(json!({})))
            },
        ))
}

/// Runs `station` until accepted, does `work`, closes it.
async fn one_run<F: std::future::Future<Output = ()>>(
    builder: StationBuilder,
    work: impl FnOnce(Station) -> F,
) {
    let station = builder.connect().unwrap();
    bounded("accepted", station.accepted()).await.unwrap();
    work(station.clone()).await;
    close(&station).await;
}

async fn seen_where(seen: &Seen, what: &str, done: impl Fn(&[serde_json::Value]) -> bool) {
    bounded(what, async {
        while !done(&seen.lock().unwrap()) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}

async fn a_transaction_resumed_then_ended_after_power_loss(version: OcppVersion) {
    use ocpp_tokio::station::{Evse, IdToken};
    let seen = Seen::default();
    let config = server_config().versions(vec![version]);
    let csms = Csms::start_with(
        Server::builder()
            .config(config)
            .handler(recording_transactions(&seen)),
    )
    .await;
    let journal = journal_path();
    let builder = || station(&csms, "CP-TX", version).store(FileStore::open(&journal).unwrap());
    let id = if version == OcppVersion::V1_6 {
        None
    } else {
        Some("CP-TX")
    };

    // Run 1: started, one reading; the 1.6 id reaches the application.
    one_run(builder(), |station| async move {
        let token = IdToken::new("TAG", "ISO14443");
        let started = station
            .start_transaction(Evse::new(1), token, 100)
            .await
            .unwrap();
        started.outcome().await.unwrap();
        let mut transactions = station.watch_transactions();
        let known = bounded("the transaction id", async {
            loop {
                if let Some(id) = transactions.borrow_and_update().transaction_id(1) {
                    return id;
                }
                transactions.changed().await.unwrap();
            }
        })
        .await;
        match id {
            None => assert_eq!(known, "4711"),
            Some(prefix) => assert!(known.starts_with(prefix), "{known}"),
        }
        station
            .meter(1, 150)
            .await
            .unwrap()
            .outcome()
            .await
            .unwrap();
    })
    .await;

    // Run 2: the application goes on with it; the id is known before any answer.
    one_run(
        builder().resume_transactions(|_| true),
        |station| async move {
            assert_eq!(station.restarted_transactions().len(), 1);
            let known = station.transaction_id(1).unwrap();
            if id.is_none() {
                assert_eq!(known, "4711");
            }
            station
                .meter(1, 200)
                .await
                .unwrap()
                .outcome()
                .await
                .unwrap();
        },
    )
    .await;

    // Run 3: by default, ended as after a power loss with the last reading.
    let watched = seen.clone();
    one_run(builder(), |station| async move {
        assert_eq!(station.restarted_transactions().len(), 1);
        assert!(station.transactions().open().next().is_none());
        let ended = |seen: &[serde_json::Value]| {
            seen.iter()
                .any(|m| m["action"] == "StopTransaction" || m["eventType"] == "Ended")
        };
        seen_where(&watched, "the end", ended).await;
    })
    .await;
    // Run 4: nothing open any more.
    one_run(builder(), |station| async move {
        assert!(station.restarted_transactions().is_empty());
    })
    .await;

    let seen = seen.lock().unwrap().clone();
    if version == OcppVersion::V1_6 {
        let actions: Vec<_> = seen.iter().map(|m| m["action"].as_str().unwrap()).collect();
        assert_eq!(
            actions,
            [
                "StartTransaction",
                "MeterValues",
                "MeterValues",
                "StopTransaction"
            ]
        );
        for m in &seen[1..] {
            assert_eq!(m["transactionId"], 4711, "{m}");
        }
        assert_eq!(seen[3]["reason"], "PowerLoss");
        assert_eq!(seen[3]["meterStop"], 200);
    } else {
        let seq_nos: Vec<_> = seen.iter().map(|m| m["seqNo"].as_i64().unwrap()).collect();
        assert_eq!(seq_nos, [0, 1, 2, 3]);
        let ids: Vec<_> = seen
            .iter()
            .map(|m| m["transactionInfo"]["transactionId"].clone())
            .collect();
        assert!(ids.iter().all(|i| *i == ids[0]), "{ids:?}");
        assert_eq!(seen[3]["eventType"], "Ended");
        assert_eq!(seen[3]["triggerReason"], "AbnormalCondition");
        assert_eq!(seen[3]["transactionInfo"]["stoppedReason"], "PowerLoss");
        assert_eq!(seen[3]["meterValue"][0]["sampledValue"][0]["value"], 200);
    }
    csms.stop().await;
    let _ = std::fs::remove_file(&journal);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_1_6_transaction_resumed_then_ended_after_power_loss() {
    a_transaction_resumed_then_ended_after_power_loss(OcppVersion::V1_6).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2_0_1_transaction_resumed_then_ended_after_power_loss() {
    a_transaction_resumed_then_ended_after_power_loss(OcppVersion::V2_0_1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2_1_transaction_resumed_then_ended_after_power_loss() {
    a_transaction_resumed_then_ended_after_power_loss(OcppVersion::V2_1).await;
}

/// 1.6: a transaction started offline, the station restarted before any answer: it ends with
/// PowerLoss, and the id the StartTransaction's answer then gives reaches the application.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_1_6_id_given_after_a_restart_reaches_the_application() {
    use ocpp_tokio::station::{Evse, IdToken, TransactionRef};
    let seen = Seen::default();
    let csms = Csms::start(recording_transactions(&seen)).await;
    let journal = journal_path();

    // Run 1: nobody listens; the transaction is started all the same (in the journal).
    let offline = station_at("ws://127.0.0.1:1/ocpp/CP-TX", OcppVersion::V1_6)
        .store(FileStore::open(&journal).unwrap())
        .connect()
        .unwrap();
    let token = IdToken::new("TAG", "ISO14443");
    bounded("start", offline.start_transaction(Evse::new(1), token, 100))
        .await
        .unwrap();
    bounded("meter", offline.meter(1, 120)).await.unwrap();
    close(&offline).await;

    // Run 2: ended at start; the answer's id is kept with the ended transaction.
    let station = station(&csms, "CP-TX", OcppVersion::V1_6)
        .store(FileStore::open(&journal).unwrap())
        .connect()
        .unwrap();
    assert_eq!(station.restarted_transactions().len(), 1);
    assert_eq!(station.transaction_id(1), None);
    let mut transactions = station.watch_transactions();
    bounded("the id of the ended transaction", async {
        loop {
            let given = transactions
                .borrow_and_update()
                .ended()
                .any(|t| t.id == TransactionRef::Given(4711));
            if given {
                return;
            }
            transactions.changed().await.unwrap();
        }
    })
    .await;
    let ended = |seen: &[serde_json::Value]| seen.iter().any(|m| m["action"] == "StopTransaction");
    seen_where(&seen, "the StopTransaction", ended).await;
    close(&station).await;
    let seen = seen.lock().unwrap().clone();
    let actions: Vec<_> = seen.iter().map(|m| m["action"].as_str().unwrap()).collect();
    assert_eq!(
        actions,
        ["StartTransaction", "MeterValues", "StopTransaction"]
    );
    assert_eq!(seen[1]["transactionId"], 4711);
    assert_eq!(seen[2]["transactionId"], 4711);
    assert_eq!(seen[2]["reason"], "PowerLoss");
    assert_eq!(seen[2]["meterStop"], 120);
    csms.stop().await;
    let _ = std::fs::remove_file(&journal);
}

/// The station's own heartbeat interval, set before it connects (a `HeartbeatInterval` kept
/// in its settings), holds when the central system's boot answer says 0 ("the station
/// chooses"), and over a reconnection too; before, every new connection went back to 60 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stations_heartbeat_interval_holds_over_a_reconnection_when_the_boot_says_0() {
    let heartbeats: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let router = Router::<()>::default()
        .on(|_, _: v2_0_1::BootNotificationRequest| async {
            Ok(boot201(v2_0_1::RegistrationStatusEnum::Accepted, 0))
        })
        .on(with(
            &heartbeats,
            |heartbeats, _, _: v2_0_1::HeartbeatRequest| async move {
                heartbeats.lock().unwrap().push(Instant::now());
                Ok(v2_0_1::HeartbeatResponse::new(time()))
            },
        ));
    let csms = Csms::start(router).await;
    let station = station(&csms, "CP-HB0", OcppVersion::V2_0_1)
        .connect()
        .unwrap();
    station.set_heartbeat_interval(Duration::from_secs(1));
    for connection in 0..2 {
        bounded("accepted", station.accepted()).await.unwrap();
        if connection == 0 {
            // The setting is a command to the station's task, which may take it after the
            // first boot was accepted (a loaded machine): it holds from then on.
            eventually("the station's own interval", || {
                station.heartbeat_interval() == Duration::from_secs(1)
            })
            .await;
        } else {
            assert_eq!(station.heartbeat_interval(), Duration::from_secs(1));
        }
        let seen = heartbeats.lock().unwrap().len();
        eventually("two heartbeats", || {
            heartbeats.lock().unwrap().len() >= seen + 2
        })
        .await;
        if connection == 0 {
            // The central system drops the connection; the station reconnects and boots.
            let cp = csms.charge_points.get("CP-HB0").expect("connected");
            cp.close(CloseCode::GOING_AWAY, "bye");
            until_waiting(&station).await;
        }
    }
    close(&station).await;
    csms.stop().await;
}

/// The central system's SENDs reach the station's `on_send` one after the other, in the order
/// they came, as a server's do (`Router::on_send`); before, the station spawned a task per
/// SEND, and a slow first handler let the second run beside it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stations_sends_are_handled_one_after_the_other_in_order() {
    let router =
        Router::<()>::default().on(|_, _: ocpp_tokio::v2_1::BootNotificationRequest| async {
            Ok(j::<ocpp_tokio::v2_1::BootNotificationResponse>(json!({
                "currentTime": "2026-05-01T10:00:00Z", "interval": 300, "status": "Accepted"
            })))
        });
    let config = server_config().versions(vec![OcppVersion::V2_1]);
    let csms = Csms::start_with(Server::builder().config(config).handler(router)).await;
    // Each handler notes when it starts and ends; the first takes a while.
    let spans: Arc<Mutex<Vec<(u32, Instant, Instant)>>> = Arc::default();
    let recorded = Arc::clone(&spans);
    let station_router = Router::<()>::for_station().on_send(move |_, send| {
        let spans = Arc::clone(&recorded);
        async move {
            let started = Instant::now();
            let ocpp_tokio::ocpp::Request::V2_1(request) = send.request() else {
                return;
            };
            let ocpp_tokio::v2_1::Request::NotifyPeriodicEventStream(stream) = &**request else {
                return;
            };
            let seq = stream.id;
            if seq == 1 {
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            spans.lock().unwrap().push((seq, started, Instant::now()));
        }
    });
    let station = station(&csms, "CP-SENDS", OcppVersion::V2_1)
        .router(station_router)
        .connect()
        .unwrap();
    bounded("accepted", station.accepted()).await.unwrap();
    let cp = csms.charge_points.get("CP-SENDS").expect("connected");
    for id in [1, 2] {
        let element =
            ocpp_tokio::v2_1::StreamDataElement::new(ocpp_tokio::Decimal::new(0, 1), "1.5");
        let stream =
            ocpp_tokio::v2_1::NotifyPeriodicEventStreamRequest::new(vec![element], id, 0, time());
        cp.send(ocpp_tokio::v2_1::Request::from(stream))
            .await
            .expect("written");
    }
    eventually("both SENDs handled", || spans.lock().unwrap().len() == 2).await;
    let spans = spans.lock().unwrap().clone();
    let [(1, _, first_end), (2, second_start, _)] = spans.as_slice() else {
        panic!("out of order: {spans:?}");
    };
    assert!(
        second_start >= first_end,
        "the second SEND's handler ran beside the first"
    );
    close(&station).await;
    csms.stop().await;
}
