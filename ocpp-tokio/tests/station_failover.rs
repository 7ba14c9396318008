//! Several central systems (issue 34): a station with two in-process `Server`s on 127.0.0.1
//! boots on the first, fails over to the second after the configured attempts when the first
//! stops, and comes back to the first as the policy says: 1.6 with a URL list (back after the
//! configured time), 2.0.1 with profiles and a priority (it stays on the second while that
//! works, B10, and starts from the first once that connection is lost, B10.FR.03); a
//! SetNetworkProfile accepted into a slot is used on the next failover. Every wait is bounded.

mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::WAIT;
use ocpp_tokio::station::{
    NetworkProfile, NetworkProfileError, NetworkProfiles, ProfileRejected, RetryBackOff, Station,
    StationBuilder, Status,
};
use ocpp_tokio::{v1_6, v2_0_1, ConnectionConfig, DateTime, OcppVersion, Router, Server};
use serde_json::json;
use tokio::sync::oneshot;

fn time() -> DateTime {
    DateTime::from_unix_timestamp(1_780_000_000).unwrap()
}

/// A short back-off.
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

/// A central system on 127.0.0.1 that accepts every boot and counts them.
struct Csms {
    addr: SocketAddr,
    boots: Arc<AtomicUsize>,
    charge_points: ocpp_tokio::ChargePoints,
    stop: Option<oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<()>,
}

impl Csms {
    /// On a new port.
    async fn start() -> Csms {
        Self::start_at("127.0.0.1:0".parse().unwrap()).await
    }

    /// On `addr` (again, after a stop).
    async fn start_at(addr: SocketAddr) -> Csms {
        let boots = Arc::new(AtomicUsize::new(0));
        let (b16, b201) = (boots.clone(), boots.clone());
        let router = Router::<()>::default()
            .on(move |_, _: v1_6::BootNotificationRequest| {
                b16.fetch_add(1, Ordering::SeqCst);
                async {
                    Ok(v1_6::BootNotificationResponse::new(
                        v1_6::RegistrationStatus::Accepted,
                        time(),
                        300,
                    ))
                }
            })
            .on(move |_, _: v2_0_1::BootNotificationRequest| {
                b201.fetch_add(1, Ordering::SeqCst);
                async {
                    Ok(v2_0_1::BootNotificationResponse::new(
                        time(),
                        300,
                        v2_0_1::RegistrationStatusEnum::Accepted,
                    ))
                }
            });
        let config = ConnectionConfig::default()
            .versions(vec![OcppVersion::V2_0_1, OcppVersion::V1_6])
            .handshake_timeout(Duration::from_secs(5))
            .close_timeout(Duration::from_secs(1));
        let server = Server::builder()
            .config(config)
            .handler(router)
            .bind(addr)
            .await
            .unwrap();
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
            boots,
            charge_points,
            stop: Some(stop),
            done,
        }
    }

    /// The central system's URL without the identity.
    fn base(&self) -> String {
        format!("ws://{}/ocpp", self.addr)
    }

    fn boots(&self) -> usize {
        self.boots.load(Ordering::SeqCst)
    }

    /// Stops it (its connections close with 1001); the port it had.
    async fn stop(mut self) -> SocketAddr {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if tokio::time::timeout(WAIT, &mut self.done).await.is_err() {
            self.done.abort();
        }
        self.addr
    }
}

/// Waits until the station is Accepted on the central system in `slot`.
async fn accepted_on(station: &Station, slot: i32) {
    let mut profiles = station.watch_network_profiles();
    let mut status = station.watch_status();
    bounded(&format!("accepted on slot {slot}"), async {
        loop {
            let on = {
                let profiles = profiles.borrow_and_update();
                profiles
                    .current()
                    .map(|p| p.slot)
                    .filter(|_| profiles.is_connected())
            };
            if on == Some(slot) && matches!(*status.borrow_and_update(), Status::Accepted { .. }) {
                return;
            }
            tokio::select! {
                _ = profiles.changed() => {}
                _ = status.changed() => {}
            }
        }
    })
    .await;
}

/// Records, in the background, every (slot, attempt on it) the station tries.
fn record_attempts(station: &Station) -> Arc<Mutex<Vec<(i32, u32)>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut profiles = station.watch_network_profiles();
    let record = seen.clone();
    tokio::spawn(async move {
        loop {
            let now = {
                let profiles = profiles.borrow_and_update();
                profiles.current().map(|p| (p.slot, profiles.attempt()))
            };
            if let Some(now) = now {
                let mut seen = record.lock().unwrap();
                if seen.last() != Some(&now) {
                    seen.push(now);
                }
            }
            if profiles.changed().await.is_err() {
                return;
            }
        }
    });
    seen
}

fn builder(first: &Csms, identity: &str, version: OcppVersion) -> StationBuilder {
    Station::builder(&format!("{}/{identity}", first.base()))
        .unwrap()
        .versions([version])
        .back_off(quick())
        .established_after(Duration::ZERO)
}

/// The attempts on slot 0 before the first on slot 1, in order.
fn before_failover(seen: &[(i32, u32)]) -> Vec<(i32, u32)> {
    let start = seen
        .iter()
        .rposition(|(slot, attempt)| *slot == 0 && *attempt == 1);
    let end = seen.iter().position(|(slot, _)| *slot == 1);
    match (start, end) {
        (Some(start), Some(end)) if start < end => seen[start..end].to_vec(),
        _ => panic!("no failover from slot 0 to slot 1 in {seen:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v16_url_list_fails_over_and_returns_after_the_configured_time() {
    let first = Csms::start().await;
    let second = Csms::start().await;
    let station = builder(&first, "CP16", OcppVersion::V1_6)
        .fallback_urls([second.base()], 2, Some(Duration::from_secs(1)))
        .connect()
        .unwrap();
    accepted_on(&station, 0).await;
    assert_eq!(station.current_csms().unwrap().csms_url, first.base());
    let seen = record_attempts(&station);

    let port = first.stop().await;
    accepted_on(&station, 1).await;
    assert_eq!(station.current_csms().unwrap().csms_url, second.base());
    assert_eq!(second.boots(), 1);
    // The first connection was lost: two attempts on the first URL, then the second.
    let tried = before_failover(&seen.lock().unwrap());
    assert_eq!(tried, [(0, 1), (0, 2)], "{:?}", seen.lock().unwrap());

    // The first comes back: after the return time the station leaves the second for it.
    let first = Csms::start_at(port).await;
    accepted_on(&station, 0).await;
    assert_eq!(first.boots(), 1);
    station.close();
    let _ = bounded("stopped", station.stopped()).await;
    first.stop().await;
    second.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v201_profiles_fail_over_stay_and_start_from_the_first_after_a_loss() {
    let first = Csms::start().await;
    let second = Csms::start().await;
    let profiles = NetworkProfiles::new([
        NetworkProfile::new(0, first.base()),
        NetworkProfile::new(1, second.base()),
    ])
    .with_attempts(3);
    let station = builder(&first, "CP201", OcppVersion::V2_0_1)
        .network_profiles(profiles)
        .connect()
        .unwrap();
    accepted_on(&station, 0).await;
    let seen = record_attempts(&station);

    let port = first.stop().await;
    accepted_on(&station, 1).await;
    assert_eq!(
        second.boots(),
        1,
        "a BootNotification on the new CSMS (B10.FR.10)"
    );
    let tried = before_failover(&seen.lock().unwrap());
    assert_eq!(tried, [(0, 1), (0, 2), (0, 3)]);

    // The first comes back: B10 keeps a working connection, the station stays.
    let first = Csms::start_at(port).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(station.current_csms().unwrap().slot, 1);
    assert!(matches!(station.status(), Status::Accepted { .. }));
    assert_eq!(first.boots(), 0);

    // The second goes away: attempts start from the first entry again (B10.FR.03).
    second.stop().await;
    accepted_on(&station, 0).await;
    assert_eq!(first.boots(), 1);
    let json = serde_json::to_value(station.network_profiles()).unwrap();
    assert_eq!(json["lastConnected"], 0);
    station.close();
    let _ = bounded("stopped", station.stopped()).await;
    first.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_network_profile_is_stored_and_used_on_the_next_failover() {
    let first = Csms::start().await;
    let second = Csms::start().await;
    // Slot 1 is in the priority but empty: only slot 0 is tried until a profile arrives.
    let mut profiles = NetworkProfiles::new([NetworkProfile::new(0, first.base())])
        .with_slot_count(2)
        .with_attempts(1);
    profiles.set_priority(&[0, 1]).unwrap();
    let kept = Arc::new(Mutex::new(Vec::<serde_json::Value>::new()));
    let keep = kept.clone();
    let station = builder(&first, "CPSET", OcppVersion::V2_0_1)
        .network_profiles(profiles)
        .on_network_profiles(move |profiles| {
            keep.lock()
                .unwrap()
                .push(serde_json::to_value(profiles).unwrap());
            Ok(())
        })
        .connect()
        .unwrap();
    accepted_on(&station, 0).await;
    let cp = first.charge_points.get("CPSET").expect("registered");

    let set_with = |slot: i32, url: &str, security: u8| -> v2_0_1::SetNetworkProfileRequest {
        serde_json::from_value(json!({
            "configurationSlot": slot,
            "connectionData": {
                "ocppVersion": "OCPP20", "ocppTransport": "JSON", "ocppCsmsUrl": url,
                "messageTimeout": 30, "securityProfile": security, "ocppInterface": "Wired0"
            }
        }))
        .unwrap()
    };
    let set = |slot: i32, url: &str| set_with(slot, url, 0);
    // Rejected: a slot that does not exist, a URL that is not one (B09.FR.02).
    // (And a wss:// profile: this station has no TLS configuration to use it with.)
    let wss = format!("wss://{}/ocpp", second.addr);
    for request in [
        set(5, &second.base()),
        set(1, "http://nowhere/ocpp"),
        set_with(1, &wss, 2),
    ] {
        let answer = bounded("SetNetworkProfile", cp.call(request))
            .await
            .unwrap();
        assert_eq!(answer.status, v2_0_1::SetNetworkProfileStatusEnum::Rejected);
        assert_eq!(
            answer.status_info.map(|info| info.reason_code),
            Some("InvalidNetworkConf".to_owned())
        );
    }
    assert!(kept.lock().unwrap().is_empty());
    // Accepted into slot 1 (B09.FR.01), and kept by the application's hook.
    let answer = bounded("SetNetworkProfile", cp.call(set(1, &second.base())))
        .await
        .unwrap();
    assert_eq!(answer.status, v2_0_1::SetNetworkProfileStatusEnum::Accepted);
    assert_eq!(kept.lock().unwrap().len(), 1);
    assert_eq!(
        kept.lock().unwrap()[0]["profiles"][1]["csmsUrl"],
        json!(second.base())
    );
    assert_eq!(
        station.network_profiles().profile(1).unwrap().csms_url,
        second.base()
    );

    // The first goes away: the station fails over to the new profile.
    first.stop().await;
    accepted_on(&station, 1).await;
    assert_eq!(second.boots(), 1);

    // The application moves slot 1 first (B10): kept by the hook; a bad list is refused.
    assert_eq!(
        station.set_network_priority(&[1, 1]).await,
        Err(NetworkProfileError::Rejected(
            ProfileRejected::InvalidPriority
        ))
    );
    station.set_network_priority(&[1, 0]).await.unwrap();
    assert_eq!(station.network_profiles().priority(), [1, 0]);
    assert_eq!(kept.lock().unwrap().len(), 2);
    assert_eq!(kept.lock().unwrap()[1]["priority"], json!([1, 0]));
    station.close();
    let _ = bounded("stopped", station.stopped()).await;
    second.stop().await;
}
