//! A station that survives being killed: `survives_restart URL JOURNAL VERSION`, e.g.
//! `cargo run -p ocpp-tokio --example survives_restart -- ws://127.0.0.1:9000/ocpp/CP003 /tmp/cp003.jsonl 2.0.1`.
//! Its transaction (id, seqNo, readings) is journaled with the offline queue, each message with
//! the state that made it in one record: kill it (SIGKILL, power loss) and start it again on the
//! same journal, and the transaction left open ends with `PowerLoss` and its last reading.
use std::time::Duration;

use ocpp_tokio::station::{Evse, FileStore, IdToken, Station, StationInfo, StopReason};
use ocpp_tokio::OcppVersion;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(url), Some(journal), Some(version)) = (args.next(), args.next(), args.next()) else {
        return Err("usage: survives_restart URL JOURNAL 1.6|2.0.1|2.1".into());
    };
    let version: OcppVersion = version.parse()?;
    let station = Station::builder(&url)?
        .versions([version])
        .info(StationInfo::new("ACME", "Phoenix"))
        .store(FileStore::open(journal)?)
        .connect()?;
    // What the last run left open was ended with PowerLoss when the station started.
    for open in station.restarted_transactions() {
        println!("ended after a restart: EVSE {} at {} Wh", open.evse.id, open.meter_wh);
    }
    // The transaction ids as they become known (1.6: the central system's answer gives it).
    let mut transactions = station.watch_transactions();
    tokio::spawn(async move {
        while transactions.changed().await.is_ok() {
            println!(
                "EVSE 1: transaction {:?}",
                transactions.borrow_and_update().transaction_id(1)
            );
        }
    });
    // A session: each call returns once its message and the new state are on disk, online or
    // not; the central system gets them in order once it accepts the station.
    let mut meter_wh = 10_000;
    let token = IdToken::new("04A1B2C3", "ISO14443");
    station.start_transaction(Evse::new(1).with_connector(1), token, meter_wh).await?;
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        meter_wh += 250;
        station.meter(1, meter_wh).await?;
    }
    let ended = station.stop_transaction(1, meter_wh, StopReason::Local).await?;
    println!("stopped: {:?}", ended.outcome().await.map(|_| "delivered"));
    station.close();
    Ok(station.stopped().await?)
}
