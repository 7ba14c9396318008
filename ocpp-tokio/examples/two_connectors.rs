//! A station with two EVSEs (one connector each), OCPP 2.0.1 or 1.6: what a station developer
//! writes on `ocpp_tokio::station`. `two_connectors URL [JOURNAL [VERSION]]`, e.g.
//! `cargo run -p ocpp-tokio --example two_connectors -- ws://127.0.0.1:9000/ocpp/CP002 /tmp/cp002.journal`.
//!
//! The library connects, boots, reconnects, and keeps the transactions (ids, seqNos, readings)
//! with their messages in the journal, if given: killed during a transaction, the station ends
//! it at its next start with `PowerLoss`, under the same id. This file is the station's own
//! behaviour: which EVSE is free, remote start and stop, and the energy meter, read every
//! `METER_INTERVAL_MS` (default 10 000).
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ocpp_tokio::station::{Evse, FileStore, IdToken, MemoryStore, OfflineStore, Start};
use ocpp_tokio::station::{Station, StationInfo, StationStopReason, Status, TransactionRef};
use ocpp_tokio::{v1_6, v2_0_1 as v, DateTime, OcppVersion, Reply, Router, Session};

/// The station: a handle to it once connected (the transactions are the library's).
#[derive(Default)]
struct Charger {
    station: OnceLock<Station>,
}

/// The energy register of `evse` in Wh: a meter that never goes back, even across restarts.
fn meter_wh(evse: i32) -> i64 {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    (secs as i64 - 1_700_000_000) * 3 + i64::from(evse)
}

/// Starts a transaction on the free EVSE `wanted` (or the first free one); its EVSE.
async fn start_on(
    s: &Charger,
    wanted: Option<i32>,
    token: IdToken,
    remote: Option<i32>,
) -> Option<i32> {
    let station = s.station.get()?;
    let open = station.transactions();
    let evse = (1..=2).find(|&e| open.get(e).is_none() && wanted.is_none_or(|w| w == e))?;
    let mut start =
        Start::new(Evse::new(evse).with_connector(1), token, meter_wh(evse), DateTime::now());
    start.remote_start_id = remote;
    station.start_transaction_with(start).await.ok()?;
    println!("started on EVSE {evse}");
    Some(evse)
}

/// Stops the transaction `matches` picks; whether there was one.
async fn stop_where(s: &Charger, matches: impl Fn(&TransactionRef) -> bool) -> bool {
    let Some(station) = s.station.get() else { return false };
    let open = station.transactions();
    let Some(evse) = open.open().find(|t| matches(&t.id)).map(|t| t.evse.id) else { return false };
    station.stop_transaction(evse, meter_wh(evse), StationStopReason::Remote).await.is_ok()
}

async fn request_start(
    s: Session<Charger>,
    r: v::RequestStartTransactionRequest,
) -> Reply<v::RequestStartTransactionResponse> {
    let token = IdToken::from_v2_0_1(&r.id_token);
    match start_on(&s, r.evse_id, token, Some(r.remote_start_id)).await {
        Some(evse) => {
            let mut answer =
                v::RequestStartTransactionResponse::new(v::RequestStartStopStatusEnum::Accepted);
            answer.transaction_id = s.station.get().and_then(|st| st.transaction_id(evse));
            Ok(answer)
        }
        None => {
            Ok(v::RequestStartTransactionResponse::new(v::RequestStartStopStatusEnum::Rejected))
        }
    }
}

async fn request_stop(
    s: Session<Charger>,
    r: v::RequestStopTransactionRequest,
) -> Reply<v::RequestStopTransactionResponse> {
    let stopped = stop_where(&s, |id| *id == TransactionRef::Id(r.transaction_id.clone())).await;
    let status = if stopped {
        v::RequestStartStopStatusEnum::Accepted
    } else {
        v::RequestStartStopStatusEnum::Rejected
    };
    Ok(v::RequestStopTransactionResponse::new(status))
}

async fn remote_start(
    s: Session<Charger>,
    r: v1_6::RemoteStartTransactionRequest,
) -> Reply<v1_6::RemoteStartTransactionResponse> {
    let started = start_on(&s, r.connector_id, IdToken::new(r.id_tag, "Central"), None).await;
    let status = if started.is_some() {
        v1_6::RemoteStartStopStatus::Accepted
    } else {
        v1_6::RemoteStartStopStatus::Rejected
    };
    Ok(v1_6::RemoteStartTransactionResponse::new(status))
}

async fn remote_stop(
    s: Session<Charger>,
    r: v1_6::RemoteStopTransactionRequest,
) -> Reply<v1_6::RemoteStopTransactionResponse> {
    let stopped = stop_where(&s, |id| *id == TransactionRef::Given(r.transaction_id)).await;
    let status = if stopped {
        v1_6::RemoteStartStopStatus::Accepted
    } else {
        v1_6::RemoteStartStopStatus::Rejected
    };
    Ok(v1_6::RemoteStopTransactionResponse::new(status))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args.next().ok_or("usage: two_connectors URL [JOURNAL [VERSION]]")?;
    let store: Box<dyn OfflineStore> = match args.next() {
        Some(path) => Box::new(FileStore::open(path)?),
        None => Box::new(MemoryStore::new()),
    };
    let version: OcppVersion = args.next().as_deref().unwrap_or("2.0.1").parse()?;
    let interval =
        std::env::var("METER_INTERVAL_MS").ok().and_then(|ms| ms.parse().ok()).unwrap_or(10_000);
    let charger = Arc::new(Charger::default());
    let router = Router::<Charger>::default()
        .on(request_start)
        .on(request_stop)
        .on(remote_start)
        .on(remote_stop);
    let station = Station::builder(&url)?
        .versions([version])
        .info(StationInfo::new("ACME", "Twin").with_serial_number("TWIN-0001"))
        .handler_shared(router, charger.clone())
        .store(store)
        .connect()?;
    let _ = charger.station.set(station.clone());
    for open in station.restarted_transactions() {
        println!("ended after the restart: EVSE {} {:?}", open.evse.id, open.id);
    }
    // Every interval: a meter reading of each open transaction (queued while offline).
    let metering = station.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(interval)).await;
            for evse in metering.transactions().open().map(|t| t.evse.id).collect::<Vec<_>>() {
                if metering.meter(evse, meter_wh(evse)).await.is_ok() {
                    println!("meter EVSE {evse}");
                }
            }
        }
    });
    // The transaction ids as they become known (1.6: from the StartTransaction's answer).
    let mut transactions = station.watch_transactions();
    tokio::spawn(async move {
        while transactions.changed().await.is_ok() {
            let ids: Vec<_> = transactions
                .borrow_and_update()
                .open()
                .map(|t| (t.evse.id, t.id.clone()))
                .collect();
            println!("transactions {ids:?}");
        }
    });
    // After every accepted boot: each EVSE's connector status.
    let mut status = station.watch_status();
    while status.changed().await.is_ok() {
        let now = *status.borrow_and_update();
        println!("{now:?}");
        match now {
            Status::Accepted { version: OcppVersion::V1_6 } => {
                for evse in 1..=2 {
                    let (ok, available) =
                        (v1_6::ChargePointErrorCode::NoError, v1_6::ChargePointStatus::Available);
                    station.call(v1_6::StatusNotificationRequest::new(evse, ok, available)).await?;
                }
            }
            Status::Accepted { .. } => {
                for evse in 1..=2 {
                    let available = v::ConnectorStatusEnum::Available;
                    station
                        .call(v::StatusNotificationRequest::new(
                            DateTime::now(),
                            available,
                            evse,
                            1,
                        ))
                        .await?;
                }
            }
            Status::Stopped => break,
            _ => {}
        }
    }
    Ok(station.stopped().await?)
}
