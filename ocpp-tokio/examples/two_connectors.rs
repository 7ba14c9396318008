//! A station with two EVSEs (one connector each) on OCPP 2.0.1: what a station developer
//! writes on `ocpp_tokio::station`. `two_connectors URL [JOURNAL]`, e.g.
//! `cargo run -p ocpp-tokio --example two_connectors -- ws://127.0.0.1:9000/ocpp/CP002 /tmp/cp002.journal`.
//!
//! The library connects, boots, heartbeats, reconnects and keeps the transaction messages
//! (in the journal, if given, so they survive a restart); this file is the station's own
//! behaviour: which EVSE is free, remote start and stop, and the TransactionEvents they cause.
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;

use ocpp_tokio::station::{FileStore, MemoryStore, OfflineStore, Station, StationInfo, Status};
use ocpp_tokio::v2_0_1::{self as v, RequestStartStopStatusEnum::*};
use ocpp_tokio::{DateTime, OcppVersion, Reply, Router, Session};

/// The station's state: the transaction on each EVSE (index 0 is EVSE 1), and the seqNo.
#[derive(Default)]
struct Evses {
    transactions: Mutex<[Option<String>; 2]>,
    seq_no: AtomicI32,
}

impl Evses {
    /// A TransactionEvent of this station (seqNo counts every event, as 2.0.1 E01 asks).
    fn event(
        &self,
        kind: v::TransactionEventEnum,
        why: v::TriggerReasonEnum,
        tx: &str,
        evse: i32,
    ) -> v::TransactionEventRequest {
        let seq_no = self.seq_no.fetch_add(1, Ordering::Relaxed);
        v::TransactionEventRequest::new(kind, DateTime::now(), why, seq_no, v::Transaction::new(tx))
            .with_evse(v::EVSE::new(evse))
    }
}

async fn start(
    s: Session<Evses>,
    request: v::RequestStartTransactionRequest,
) -> Reply<v::RequestStartTransactionResponse> {
    let (evse, tx) = {
        let mut transactions = s.transactions.lock().unwrap_or_else(|e| e.into_inner());
        let free = (0..2).find(|&i| {
            transactions[i].is_none() && request.evse_id.map_or(true, |e| e == i as i32 + 1)
        });
        let Some(i) = free else {
            return Ok(v::RequestStartTransactionResponse::new(Rejected));
        };
        let tx = format!("{}-{}", s.identity(), request.remote_start_id);
        transactions[i] = Some(tx.clone());
        (i as i32 + 1, tx)
    };
    // The answer goes first; the TransactionEvent follows through the offline queue.
    let mut started = s
        .event(v::TransactionEventEnum::Started, v::TriggerReasonEnum::RemoteStart, &tx, evse)
        .with_id_token(request.id_token);
    started.transaction_info =
        started.transaction_info.with_remote_start_id(request.remote_start_id);
    let cp = s.charge_point().clone();
    tokio::spawn(async move { cp.call(started).await });
    Ok(v::RequestStartTransactionResponse::new(Accepted).with_transaction_id(tx))
}

async fn stop(
    s: Session<Evses>,
    request: v::RequestStopTransactionRequest,
) -> Reply<v::RequestStopTransactionResponse> {
    let found = {
        let mut transactions = s.transactions.lock().unwrap_or_else(|e| e.into_inner());
        let at =
            transactions.iter().position(|t| t.as_deref() == Some(request.transaction_id.as_str()));
        at.map(|i| (i as i32 + 1, transactions[i].take()))
    };
    let Some((evse, Some(tx))) = found else {
        return Ok(v::RequestStopTransactionResponse::new(Rejected));
    };
    let mut ended =
        s.event(v::TransactionEventEnum::Ended, v::TriggerReasonEnum::RemoteStop, &tx, evse);
    ended.transaction_info = ended.transaction_info.with_stopped_reason(v::ReasonEnum::Remote);
    let cp = s.charge_point().clone();
    tokio::spawn(async move { cp.call(ended).await });
    Ok(v::RequestStopTransactionResponse::new(Accepted))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args.next().ok_or("usage: two_connectors URL [JOURNAL]")?;
    let store: Box<dyn OfflineStore> = match args.next() {
        Some(path) => Box::new(FileStore::open(path)?),
        None => Box::new(MemoryStore::new()),
    };
    let station = Station::builder(&url)?
        .versions([OcppVersion::V2_0_1])
        .info(StationInfo::new("ACME", "Twin").with_serial_number("TWIN-0001"))
        .router(Router::<Evses>::default().on(start).on(stop))
        .store(store)
        .connect()?;
    // After every accepted boot: each EVSE's connector status.
    let mut status = station.watch_status();
    while status.changed().await.is_ok() {
        let now = *status.borrow_and_update();
        println!("{now:?}");
        match now {
            Status::Accepted { .. } => {
                for evse in 1..=2 {
                    let available = v::ConnectorStatusEnum::Available;
                    let notification =
                        v::StatusNotificationRequest::new(DateTime::now(), available, evse, 1);
                    station.call(notification).await?;
                }
            }
            Status::Stopped => break,
            _ => {}
        }
    }
    Ok(station.stopped().await?)
}
