//! The charging-station client against a real `Server` on loopback sockets: boot until
//! Accepted (and what is refused or held meanwhile), the reconnect back-off, refusals that stop
//! the station, the offline queue across a lost connection (1.6 and 2.0.1), the file store
//! across a killed process (the test re-executes itself as the station), security profiles
//! 2 and 3, and one handler for the central system's commands of every version. Every wait is
//! bounded.

mod boot;
mod commands;
#[path = "../common/mod.rs"]
mod common;
mod killed;
mod offline_queue;
mod reconnect;
mod tls;
mod transactions;

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

/// A 1.6 StartTransaction of connector 1 (the queue and reconnect tests).
fn start_transaction() -> v1_6::StartTransactionRequest {
    j(json!({
        "connectorId": 1, "idTag": "TAG", "meterStart": 1000, "timestamp": "2026-05-01T10:00:00Z"
    }))
}

/// A fresh journal file under the system's temporary directory.
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

/// The station's handle on its connection reports the connection's own keep-alive and
/// timeouts (the station's `ConnectionConfig`), not the library's defaults.
#[tokio::test]
async fn a_stations_handle_reports_its_connections_settings() {
    let csms = Csms::start(accepting(Router::<()>::default())).await;
    let (seen, mut settings) = mpsc::unbounded_channel();
    let station_router =
        Router::<()>::default().on(move |session: Session<()>, _: v1_6::ClearCacheRequest| {
            let _ = seen.send(session.charge_point().settings());
            async {
                Ok(v1_6::ClearCacheResponse::new(
                    v1_6::ClearCacheStatus::Accepted,
                ))
            }
        });
    let config = ConnectionConfig::default()
        .ping_interval(Some(Duration::from_secs(7)))
        .call_timeout(Duration::from_secs(11));
    let station = station(&csms, "CP-SETTINGS", OcppVersion::V1_6)
        .config(config)
        .router(station_router)
        .connect()
        .unwrap();
    bounded("accepted", station.accepted()).await.unwrap();
    let cp = csms.charge_points.get("CP-SETTINGS").expect("registered");
    bounded("ClearCache", cp.call(v1_6::ClearCacheRequest {}))
        .await
        .expect("answered");
    let settings = bounded("the settings", settings.recv()).await.unwrap();
    assert_eq!(settings.get_ping_interval(), Some(Duration::from_secs(7)));
    assert_eq!(settings.get_call_timeout(), Duration::from_secs(11));
    close(&station).await;
    csms.stop().await;
}
