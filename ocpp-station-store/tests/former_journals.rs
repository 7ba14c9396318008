//! Journals the station wrote before its `IdToken` was `ocpp-model`'s (`tests/journals/`) read
//! with the same transactions and queued messages, and the transaction goes on as before: its
//! token is written back in the same form (`{"id": ..., "kind": ...}`).

use std::fs;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use ocpp_messages::{DateTime, OcppVersion};
use ocpp_model::{IdToken, IdTokenType};
use ocpp_proto::station::{Reading, StationStopReason, Transactions};
use ocpp_station_store::offline::{FileStore, OfflineQueue, TransactionOp};

/// A copy of the journal `name` in a directory of its own, removed on drop.
struct Copy(PathBuf);

impl Copy {
    fn of(name: &str) -> Copy {
        let dir =
            std::env::temp_dir().join(format!("ocpp-store-former-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let from = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/journals")
            .join(name);
        fs::copy(from, dir.join(name)).unwrap();
        Copy(dir.join(name))
    }
}

impl Drop for Copy {
    fn drop(&mut self) {
        if let Some(dir) = self.0.parent() {
            let _ = fs::remove_dir_all(dir);
        }
    }
}

#[test]
fn former_journals_read_with_the_same_token_and_go_on_alike() {
    let cases = [
        (
            "v1_6.jsonl",
            OcppVersion::V1_6,
            IdTokenType::Other(String::new()),
        ),
        ("v2_0_1.jsonl", OcppVersion::V2_0_1, IdTokenType::Iso14443),
        (
            "v2_1.jsonl",
            OcppVersion::V2_1,
            IdTokenType::Other("DirectPayment".into()),
        ),
    ];
    for (name, version, kind) in cases {
        let journal = Copy::of(name);
        let before = fs::read_to_string(&journal.0).unwrap();
        let line: serde_json::Value = serde_json::from_str(before.trim_end()).unwrap();
        let store = FileStore::open(&journal.0).unwrap();
        let fresh = || Transactions::new(version, "unused-");
        let (mut queue, restart) =
            OfflineQueue::<()>::open(Box::new(store), 3, Duration::from_secs(10), fresh).unwrap();

        // The open transaction, with the token it started with.
        let [open] = restart.open.as_slice() else {
            panic!("{name}: {:?}", restart.open)
        };
        let token = IdToken::new("04A1B2C3", kind.clone());
        assert_eq!(open.id_token, token, "{name}");
        assert_eq!(open.version, version);
        // The queued message is the one in the journal.
        assert_eq!(queue.len(), 1);
        let (seq, request) = queue.next(Instant::now(), version).unwrap();
        assert_eq!(seq, 1);
        let payload = serde_json::to_string(&request).unwrap();
        assert_eq!(payload, line["push"]["payload"].as_str().unwrap(), "{name}");
        let sent: serde_json::Value = serde_json::from_str(&payload).unwrap();
        match version {
            OcppVersion::V1_6 => assert_eq!(sent["idTag"], "04A1B2C3"),
            _ => {
                assert_eq!(sent["idToken"]["idToken"], "04A1B2C3");
                assert_eq!(sent["idToken"]["type"], kind.as_str());
            }
        }

        // The transaction goes on; the state it writes holds the token as before.
        let at = DateTime::from_unix_timestamp(1_780_000_060).unwrap();
        let stop = TransactionOp::Stop {
            evse: 1,
            reading: Reading::new(1_500),
            reason: StationStopReason::Local,
        };
        queue
            .transaction(stop, at, ())
            .map_err(|r| r.error)
            .unwrap();
        drop(queue);
        let after = fs::read_to_string(&journal.0).unwrap();
        let last: serde_json::Value = serde_json::from_str(after.lines().last().unwrap()).unwrap();
        let state: serde_json::Value =
            serde_json::from_str(last["state"].as_str().unwrap()).unwrap();
        let ended = &state["ended"][0]["id_token"];
        assert_eq!(
            ended,
            &serde_json::json!({"id": "04A1B2C3", "kind": kind.as_str()}),
            "{name}"
        );
    }
}
