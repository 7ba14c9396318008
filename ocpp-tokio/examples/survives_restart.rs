//! A station that survives being killed: `survives_restart URL 1.6|2.0.1 STATE_DIR`. Its settings
//! (the device model) and its transaction (journaled with the offline queue) live in STATE_DIR:
//! started again there after a kill, it ends the open transaction with `PowerLoss`, under its id.
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ocpp_tokio::model::device_model::{catalogue::Layout, Configuration, DeviceModel};
use ocpp_tokio::station::{
    DeviceModelExt, DeviceModelStore, Evse, FileStore, IdToken, Start, Station,
};
use ocpp_tokio::{v1_6, v2_0_1 as v, DateTime, OcppVersion, Reply, Router, Session};

type Charger = OnceLock<Station>;

/// EVSE 1's energy register in Wh: it never goes back, across restarts too.
fn meter_wh() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64 - 1_700_000_000)
}

/// Starts a transaction on EVSE 1 if it is free (its message and state durable on return).
async fn start(s: &Charger, token: IdToken, remote_start_id: Option<i32>) -> Option<()> {
    let station = s.get().filter(|st| st.transactions().get(1).is_none())?;
    let mut start = Start::new(Evse::new(1).with_connector(1), token, meter_wh(), DateTime::now());
    start.remote_start_id = remote_start_id;
    station.start_transaction_with(start).await.ok().map(drop)
}

async fn remote_start(
    s: Session<Charger>,
    r: v1_6::RemoteStartTransactionRequest,
) -> Reply<v1_6::RemoteStartTransactionResponse> {
    let status = match start(&s, IdToken::new(r.id_tag, "Central"), None).await {
        Some(()) => v1_6::RemoteStartStopStatus::Accepted,
        None => v1_6::RemoteStartStopStatus::Rejected,
    };
    Ok(v1_6::RemoteStartTransactionResponse::new(status))
}

async fn request_start(
    s: Session<Charger>,
    r: v::RequestStartTransactionRequest,
) -> Reply<v::RequestStartTransactionResponse> {
    let token = IdToken::from_v2_0_1(&r.id_token);
    let status = match start(&s, token, Some(r.remote_start_id)).await {
        Some(()) => v::RequestStartStopStatusEnum::Accepted,
        None => v::RequestStartStopStatusEnum::Rejected,
    };
    let mut answer = v::RequestStartTransactionResponse::new(status);
    answer.transaction_id = s.get().and_then(|station| station.transaction_id(1));
    Ok(answer)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(url), Some(version), Some(dir)) = (args.next(), args.next(), args.next()) else {
        return Err("usage: survives_restart URL 1.6|2.0.1 STATE_DIR".into());
    };
    let version: OcppVersion = version.parse()?;
    // GetConfiguration / ChangeConfiguration (1.6), GetVariables / SetVariables (2.x), kept.
    let model = DeviceModel::standard(Layout::new(&[1]));
    let settings = DeviceModelStore::open(&dir, model, Configuration::standard(1))?;
    let router = Router::<Charger>::default().on(remote_start).on(request_start);
    let charger = Arc::new(Charger::new());
    let station = Station::builder(&url)?
        .versions([version])
        .handler_shared(settings.routes(router), charger.clone())
        .store(FileStore::open(std::path::Path::new(&dir).join("journal.jsonl"))?)
        .connect()?;
    settings.follow_heartbeat(&station);
    let _ = charger.set(station.clone());
    for open in station.restarted_transactions() {
        println!("ended with PowerLoss: {:?} at {} Wh", open.id, open.meter_wh);
    }
    // Every 2 s, an energy reading of the open transaction (queued while offline).
    loop {
        tokio::time::sleep(Duration::from_secs(2)).await;
        if station.transactions().get(1).is_some() {
            station.meter(1, meter_wh()).await?;
        }
    }
}
