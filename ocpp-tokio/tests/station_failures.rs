//! The station against central systems that fail it (issue 34): one that accepts the
//! WebSocket and closes at once, one that never answers BootNotification, one that never
//! answers a transaction message. Real `Server`s on 127.0.0.1; every wait is bounded, and the
//! assertions are on counts, order and the waits the station chose, not on measured speed.

mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::WAIT;
use ocpp_tokio::ocpp::CloseCode;
use ocpp_tokio::station::{Cause, RetryBackOff, Station, Status};
use ocpp_tokio::{v1_6, CallFailure, ConnectionConfig, DateTime, OcppVersion, Router, Server};
use tokio::sync::oneshot;

fn time() -> DateTime {
    DateTime::from_unix_timestamp(1_780_000_000).unwrap()
}

async fn bounded<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    match tokio::time::timeout(WAIT * 3, future).await {
        Ok(value) => value,
        Err(_) => panic!("not within {:?}: {what}", WAIT * 3),
    }
}

/// A central system on 127.0.0.1: a `Server` running until `stop`.
struct Csms {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<()>,
}

impl Csms {
    async fn start<S: Send + Sync + 'static>(router: Router<S>) -> Csms {
        let config = ConnectionConfig::default()
            .versions(vec![OcppVersion::V2_0_1, OcppVersion::V1_6])
            .handshake_timeout(Duration::from_secs(5))
            .close_timeout(Duration::from_secs(1));
        let server = Server::builder()
            .config(config)
            .handler(router)
            .bind("127.0.0.1:0")
            .await
            .unwrap();
        let addr = server.local_addr().unwrap();
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
            stop: Some(stop),
            done,
        }
    }

    fn url(&self, identity: &str) -> String {
        format!("ws://{}/ocpp/{identity}", self.addr)
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

/// Every status the station goes through, in order, until it stops (a task; its result).
fn record_statuses(station: &Station) -> tokio::task::JoinHandle<Vec<Status>> {
    let mut watch = station.watch_status();
    tokio::spawn(async move {
        let mut seen = vec![*watch.borrow_and_update()];
        while watch.changed().await.is_ok() {
            let now = *watch.borrow_and_update();
            seen.push(now);
            if now == Status::Stopped {
                break;
            }
        }
        seen
    })
}

/// Closes the station and waits until it stopped.
async fn close(station: &Station) {
    station.close();
    assert_eq!(bounded("stopped", station.stopped()).await, Ok(()));
}

// ---------------------------------------------------------------------------------------------
// Defects 1 and 5: accepted, then closed at once.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backoff_grows_when_the_central_system_closes_right_after_the_upgrade() {
    // The upgrade is answered after 150 ms (so that every Connecting lasts long enough to be
    // watched), then the central system closes at once: the connection opens but never gets
    // established. The back-off must grow on every such failure.
    let upgrades = Arc::new(AtomicUsize::new(0));
    let counted = upgrades.clone();
    let router = Router::new_async(move |_| {
        let counted = counted.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(150)).await;
            counted.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    })
    .on_connect(|session| async move {
        session.charge_point().close(CloseCode::NORMAL, "go away");
    });
    let csms = Csms::start(router).await;
    let policy = RetryBackOff {
        wait_minimum: Duration::from_millis(100),
        random_range: Duration::ZERO,
        repeat_times: 3,
    };
    let station = Station::builder(&csms.url("SHORT-LIVED"))
        .unwrap()
        .versions([OcppVersion::V1_6])
        .back_off(policy)
        .connect()
        .unwrap();
    let statuses = record_statuses(&station);
    let mut watch = station.watch_status();
    bounded("five waits", async {
        let mut waits = 0;
        while waits < 5 {
            watch.changed().await.unwrap();
            if matches!(*watch.borrow_and_update(), Status::Waiting { .. }) {
                waits += 1;
            }
        }
    })
    .await;
    close(&station).await;
    let statuses = bounded("the statuses", statuses).await.unwrap();
    assert!(upgrades.load(Ordering::SeqCst) >= 5, "{statuses:?}");

    // The waits the station chose: the fixed part doubles after every failure (100, 200,
    // 400, 800 ms, then stays), as no connection ever got established.
    let waits: Vec<Duration> = statuses
        .iter()
        .filter_map(|s| match s {
            Status::Waiting { wait, .. } => Some(*wait),
            _ => None,
        })
        .collect();
    let expected: Vec<Duration> = (0..waits.len() as u32)
        .map(|k| policy.fixed_part(k))
        .collect();
    assert_eq!(waits, expected, "{statuses:?}");

    // Defect 5: no status is reported twice in a row, and every attempt is reported with its
    // true number (the attempt after k failures is attempt k + 1).
    for pair in statuses.windows(2) {
        assert_ne!(pair[0], pair[1], "reported twice: {statuses:?}");
    }
    let mut failures = 0;
    let mut attempts = Vec::new();
    for status in &statuses {
        match status {
            Status::Connecting { attempt } => {
                assert_eq!(*attempt, failures + 1, "{statuses:?}");
                attempts.push(*attempt);
            }
            Status::Waiting { .. } => failures += 1,
            _ => {}
        }
    }
    // Each Connecting lasts 150 ms at least: the watcher saw most of them.
    assert!(attempts.len() >= 3, "{statuses:?}");
    // Defect 4: every wait says why: the central system closed (1000).
    for status in &statuses {
        if let Status::Waiting { cause, .. } = status {
            let closed = Cause::PeerClosed {
                code: Some(CloseCode::NORMAL),
            };
            assert_eq!(*cause, closed, "{statuses:?}");
        }
    }
    csms.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_established_connection_starts_the_attempts_and_waits_again() {
    // The central system accepts the boot and closes 400 ms after the connection opened; the
    // station counts a connection accepted for 100 ms as established. So every loss starts
    // again: the shortest wait, and the reconnect is attempt 1 (not 2).
    let router = Router::new_async(|_| async {
        tokio::time::sleep(Duration::from_millis(150)).await;
        Ok(())
    })
    .on(|_, _: v1_6::BootNotificationRequest| async {
        Ok(v1_6::BootNotificationResponse::new(
            v1_6::RegistrationStatus::Accepted,
            time(),
            300,
        ))
    })
    .on_connect(|session| async move {
        tokio::time::sleep(Duration::from_millis(400)).await;
        session.charge_point().close(CloseCode::NORMAL, "bye");
    });
    let csms = Csms::start(router).await;
    let policy = RetryBackOff {
        wait_minimum: Duration::from_millis(100),
        random_range: Duration::ZERO,
        repeat_times: 3,
    };
    let station = Station::builder(&csms.url("ESTABLISHED"))
        .unwrap()
        .versions([OcppVersion::V1_6])
        .back_off(policy)
        .established_after(Duration::from_millis(100))
        .connect()
        .unwrap();
    let statuses = record_statuses(&station);
    let mut watch = station.watch_status();
    bounded("three waits", async {
        let mut waits = 0;
        while waits < 3 {
            watch.changed().await.unwrap();
            if matches!(*watch.borrow_and_update(), Status::Waiting { .. }) {
                waits += 1;
            }
        }
    })
    .await;
    close(&station).await;
    let statuses = bounded("the statuses", statuses).await.unwrap();
    let mut accepted = 0;
    for status in &statuses {
        match status {
            Status::Connecting { attempt } => assert_eq!(*attempt, 1, "{statuses:?}"),
            Status::Waiting { wait, cause } => {
                assert_eq!(*wait, policy.fixed_part(0), "{statuses:?}");
                let closed = Cause::PeerClosed {
                    code: Some(CloseCode::NORMAL),
                };
                assert_eq!(*cause, closed, "{statuses:?}");
            }
            Status::Accepted { .. } => accepted += 1,
            _ => {}
        }
    }
    assert!(accepted >= 3, "{statuses:?}");
    for pair in statuses.windows(2) {
        assert_ne!(pair[0], pair[1], "reported twice: {statuses:?}");
    }
    csms.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_tcp_connection_is_the_cause() {
    // Nobody listens on the port: the wait says the TCP connection was refused.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let station = Station::builder(&format!("ws://{addr}/ocpp/NOBODY"))
        .unwrap()
        .versions([OcppVersion::V1_6])
        .back_off(RetryBackOff {
            wait_minimum: Duration::from_secs(5),
            random_range: Duration::ZERO,
            repeat_times: 0,
        })
        .connect()
        .unwrap();
    let mut watch = station.watch_status();
    let cause = bounded("a wait", async {
        loop {
            if let Status::Waiting { cause, .. } = *watch.borrow_and_update() {
                return cause;
            }
            watch.changed().await.unwrap();
        }
    })
    .await;
    assert_eq!(cause, Cause::Connect(std::io::ErrorKind::ConnectionRefused));
    assert_eq!(cause.to_string(), "connect failed: connection refused");
    close(&station).await;
}

// ---------------------------------------------------------------------------------------------
// Defect 2: BootNotification never answered.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_boot_is_retried_then_the_station_reconnects() {
    // The central system answers BootNotification only after the station's call timeout
    // (300 ms): for the station it never answers. (It answers late rather than never because a
    // central system handles one CALL at a time: one that never answered would not even see
    // the station's next boots.) The boot must be sent again, a bounded number of times, and
    // then the station must say why in its status: it gives the connection up and waits to
    // reconnect.
    let boots = Arc::new(AtomicUsize::new(0));
    let counted = boots.clone();
    let router = Router::<()>::default().on(move |_, _: v1_6::BootNotificationRequest| {
        counted.fetch_add(1, Ordering::SeqCst);
        async move {
            tokio::time::sleep(Duration::from_millis(400)).await;
            Ok(v1_6::BootNotificationResponse::new(
                v1_6::RegistrationStatus::Accepted,
                time(),
                300,
            ))
        }
    });
    let csms = Csms::start(router).await;
    let config = ConnectionConfig::default().call_timeout(Duration::from_millis(300));
    let station = Station::builder(&csms.url("SILENT"))
        .unwrap()
        .versions([OcppVersion::V1_6])
        .back_off(RetryBackOff {
            wait_minimum: Duration::from_secs(2),
            random_range: Duration::ZERO,
            repeat_times: 2,
        })
        .boot_retries(3, Duration::from_millis(300))
        .config(config)
        .connect()
        .unwrap();
    let statuses = record_statuses(&station);
    // The station leaves Registering on its own, with the cause.
    let mut watch = station.watch_status();
    let cause = bounded("a wait after unanswered boots", async {
        loop {
            watch.changed().await.unwrap();
            if let Status::Waiting { cause, .. } = *watch.borrow_and_update() {
                return cause;
            }
        }
    })
    .await;
    assert_eq!(cause, Cause::BootUnanswered { attempts: 3 });
    assert_eq!(boots.load(Ordering::SeqCst), 3);
    close(&station).await;
    let statuses = bounded("the statuses", statuses).await.unwrap();
    // Meanwhile the status counted the unanswered boots.
    let failures: Vec<u32> = statuses
        .iter()
        .filter_map(|s| match s {
            Status::Registering { boot_failures, .. } => Some(*boot_failures),
            _ => None,
        })
        .collect();
    assert_eq!(failures, [0, 1, 2, 3], "{statuses:?}");
    csms.stop().await;
}

// ---------------------------------------------------------------------------------------------
// Defect 3: a 1.6 transaction message never answered.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_transaction_message_is_given_up_and_blocks_nothing() {
    // The central system accepts the boot and answers StatusNotification, but answers
    // StartTransaction only after the station's call timeout (1 s): for the station it is never
    // answered. (A central system handles one CALL at a time, so one that never answered at all
    // would hold the station's other CALLs in its own queue.) With 3 attempts 100 ms apart the
    // StartTransaction goes 3 times on the same connection, then its caller gets a typed
    // failure, and the station's other CALLs go.
    let starts = Arc::new(AtomicUsize::new(0));
    let log: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let (counted, logged, logged2) = (starts.clone(), log.clone(), log.clone());
    let router = Router::<()>::default()
        .on(|_, _: v1_6::BootNotificationRequest| async {
            Ok(v1_6::BootNotificationResponse::new(
                v1_6::RegistrationStatus::Accepted,
                time(),
                300,
            ))
        })
        .on(move |_, _: v1_6::StartTransactionRequest| {
            counted.fetch_add(1, Ordering::SeqCst);
            logged.lock().unwrap().push("StartTransaction");
            async move {
                tokio::time::sleep(Duration::from_millis(1100)).await;
                Ok(v1_6::StartTransactionResponse::new(
                    v1_6::IdTagInfo::new(v1_6::AuthorizationStatus::Accepted),
                    1,
                ))
            }
        })
        .on(move |_, _: v1_6::StatusNotificationRequest| {
            logged2.lock().unwrap().push("StatusNotification");
            async { Ok(v1_6::StatusNotificationResponse::default()) }
        });
    let csms = Csms::start(router).await;
    let config = ConnectionConfig::default().call_timeout(Duration::from_secs(1));
    let station = Station::builder(&csms.url("TX-SILENT"))
        .unwrap()
        .versions([OcppVersion::V1_6])
        .transaction_retries(3, Duration::from_millis(100))
        .config(config)
        .connect()
        .unwrap();
    bounded("accepted", station.accepted()).await.unwrap();
    let start = v1_6::StartTransactionRequest::new(1, "TAG1", 0, time());
    let queued = station.queue(start).await.unwrap();
    let outcome = bounded("the StartTransaction's outcome", queued.outcome()).await;
    assert_eq!(outcome.unwrap_err(), CallFailure::Timeout);
    assert_eq!(starts.load(Ordering::SeqCst), 3);
    // Given up: the station's other CALLs go (the central system is free again by then).
    let status = v1_6::StatusNotificationRequest::new(
        1,
        v1_6::ChargePointErrorCode::NoError,
        v1_6::ChargePointStatus::Available,
    );
    let status = bounded("the StatusNotification", station.call(status)).await;
    assert!(status.is_ok(), "{status:?}");
    // The connection stayed up: nothing else was needed to end it.
    assert!(matches!(station.status(), Status::Accepted { .. }));
    assert!(log.lock().unwrap().contains(&"StatusNotification"));
    close(&station).await;
    csms.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reboot_after_an_established_connection_is_attempt_1() {
    let router = Router::new_async(|_| async {
        tokio::time::sleep(Duration::from_millis(150)).await;
        Ok(())
    })
    .on(|_, _: v1_6::BootNotificationRequest| async {
        Ok(v1_6::BootNotificationResponse::new(
            v1_6::RegistrationStatus::Accepted,
            time(),
            300,
        ))
    });
    let csms = Csms::start(router).await;
    let station = Station::builder(&csms.url("REBOOT"))
        .unwrap()
        .versions([OcppVersion::V1_6])
        .established_after(Duration::ZERO)
        .connect()
        .unwrap();
    let statuses = record_statuses(&station);
    bounded("accepted", station.accepted()).await.unwrap();
    station.reboot(ocpp_tokio::station::BootReason::RemoteReset);
    let mut watch = station.watch_status();
    bounded("connecting again", async {
        while !matches!(*watch.borrow_and_update(), Status::Connecting { .. }) {
            watch.changed().await.unwrap();
        }
    })
    .await;
    bounded("accepted again", station.accepted()).await.unwrap();
    close(&station).await;
    let statuses = bounded("the statuses", statuses).await.unwrap();
    let attempts: Vec<u32> = statuses
        .iter()
        .filter_map(|s| match s {
            Status::Connecting { attempt } => Some(*attempt),
            _ => None,
        })
        .collect();
    assert_eq!(attempts, [1, 1], "{statuses:?}");
    assert!(
        !statuses.iter().any(|s| matches!(s, Status::Waiting { .. })),
        "{statuses:?}"
    );
    csms.stop().await;
}
