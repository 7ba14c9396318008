//! A station's offline queue in a journal file, across a restart.
use ocpp_messages::OcppVersion;
use ocpp_station_store::{FileStore, OfflineStore, StoredMessage};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("ocpp-station-store-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let journal = dir.join("offline-queue.jsonl");

    // Offline: a transaction message waits for the central system.
    let mut store = FileStore::open(&journal)?;
    store.push(&StoredMessage {
        seq: 1,
        version: OcppVersion::V2_0_1,
        action: "TransactionEvent".into(),
        payload: r#"{"eventType":"Started","seqNo":0}"#.into(),
        transaction_of: None,
    })?;
    drop(store); // the process is killed

    // After the restart the message is still there, and goes once it is answered.
    let mut store = FileStore::open(&journal)?;
    let queued = store.load()?;
    println!(
        "{} message(s) to deliver: {}",
        queued.len(),
        queued[0].action
    );
    store.remove(queued[0].seq)?;
    assert!(store.load()?.is_empty());
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
