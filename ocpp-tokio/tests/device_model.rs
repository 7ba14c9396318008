//! The device model (`station::DeviceModelStore`) of a [`Station`] against a central system it was
//! not written with: the PyPI `ocpp` library (2.1.0, `tests/interop/python_device_model_csms.py`),
//! which checks every payload against the official schemas. OCPP 1.6: GetConfiguration (all
//! keys, some keys and an unknown one) and ChangeConfiguration (read-only, invalid, unknown,
//! a list, HeartbeatInterval). OCPP 2.0.1 and 2.1: GetVariables and SetVariables with every status,
//! GetBaseReport (full, configuration, summary) and GetReport followed by NotifyReports split by
//! `ItemsPerMessage`. In both, the HeartbeatInterval the central system sets changes the
//! heartbeats it sees, also after the station is stopped and started again on the same state
//! directory.
//!
//! Needs python3 with `ocpp` and `websockets` (`bash scripts/interop-ocpp.sh --deps-only`):
//! skipped with a printed reason when missing, failed when `OCPP_INTEROP_REQUIRED=1`.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{free_port, python, python_ocpp_present, Killed};
use ocpp_tokio::model::device_model::{catalogue::Layout, Change, Configuration, DeviceModel};
use ocpp_tokio::station::{DeviceModelExt, DeviceModelStore, RetryBackOff, Station};
use ocpp_tokio::{OcppVersion, Router};
use serde_json::Value;
use tokio::sync::mpsc;

const CSMS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/interop/python_device_model_csms.py"
);
/// How long the script of the central system may take.
const SCRIPT: Duration = Duration::from_secs(30);

/// The Python central system and its JSON events, each with the time it was read.
struct Csms {
    _child: Killed,
    events: mpsc::UnboundedReceiver<(Instant, Value)>,
    seen: Vec<(Instant, Value)>,
}

impl Csms {
    async fn start(port: u16, version: &str) -> Csms {
        let mut child = Command::new(python())
            .args([CSMS, "--port", &port.to_string(), "--version", version])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python runs");
        let stdout = child.stdout.take().unwrap();
        let (tx, events) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                println!("[python-csms] {line}");
                if let Ok(event) = serde_json::from_str::<Value>(&line) {
                    if tx.send((Instant::now(), event)).is_err() {
                        break;
                    }
                }
            }
        });
        let mut csms = Csms {
            _child: Killed(child),
            events,
            seen: Vec::new(),
        };
        csms.next("listening", Duration::from_secs(10)).await;
        csms
    }

    /// The next event named `name`, within `timeout` (a `script_failed` fails the test).
    async fn next(&mut self, name: &str, timeout: Duration) -> (Instant, Value) {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            match tokio::time::timeout_at(deadline, self.events.recv()).await {
                Ok(Some((at, event))) => {
                    self.seen.push((at, event.clone()));
                    assert_ne!(event["event"], "script_failed", "{event}");
                    if event["event"] == name {
                        return (at, event);
                    }
                }
                _ => panic!("no {name} within {timeout:?}; seen: {:#?}", self.seen),
            }
        }
    }
}

/// A fresh state directory under target/.
fn state_dir(name: &str) -> PathBuf {
    let dir = common::target_dir()
        .join("device-model-tests")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The store on `dir` with the standard catalogue and keys; the changes it reports.
fn open_store(dir: &Path) -> (DeviceModelStore, Arc<Mutex<Vec<Change>>>) {
    let store = DeviceModelStore::open(
        dir,
        DeviceModel::standard(Layout::new(&[2])),
        Configuration::standard(2),
    )
    .unwrap();
    assert!(store.skipped().is_empty(), "{:?}", store.skipped());
    let changes = Arc::new(Mutex::new(Vec::new()));
    let seen = changes.clone();
    store.on_change(move |change| seen.lock().unwrap().push(change.clone()));
    (store, changes)
}

/// What the application writes: the store's routes in its router, the transaction retries of
/// the model, and the heartbeat and back-off following the model (the back-off here starts
/// short, for the test).
fn start_station(url: &str, version: OcppVersion, store: &DeviceModelStore) -> Station {
    let router = store.routes(Router::<()>::for_station());
    let (attempts, interval) = store.transaction_retries(version).unwrap();
    let station = Station::builder(url)
        .unwrap()
        .versions([version])
        .transaction_retries(attempts, interval)
        .back_off(RetryBackOff {
            wait_minimum: Duration::from_millis(200),
            random_range: Duration::from_millis(100),
            repeat_times: 3,
        })
        .handler(router, ())
        .connect()
        .unwrap();
    store.follow_heartbeat(&station);
    store.follow_back_off(&station);
    station
}

/// Two heartbeats in a row at most `within` apart, seen within `timeout`.
async fn heartbeats_every(csms: &mut Csms, within: Duration, timeout: Duration) {
    let (first, _) = csms.next("heartbeat", timeout).await;
    let (second, _) = csms.next("heartbeat", timeout).await;
    let gap = second - first;
    assert!(
        gap <= within,
        "heartbeats {gap:?} apart, expected at most {within:?}"
    );
}

async fn stop(station: Station) {
    station.close();
    tokio::time::timeout(Duration::from_secs(10), station.stopped())
        .await
        .expect("the station stops")
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configuration_1_6_against_python_ocpp() {
    if !python_ocpp_present() {
        return;
    }
    let port = free_port();
    let mut csms = Csms::start(port, "1.6").await;
    let dir = state_dir("1_6");
    let url = format!("ws://127.0.0.1:{port}/ocpp/DM16");
    let (store, changes) = open_store(&dir);
    let station = start_station(&url, OcppVersion::V1_6, &store);
    csms.next("boot", SCRIPT).await;

    let (_, all) = csms.next("get_configuration_all", SCRIPT).await;
    let keys = all["keys"].as_object().unwrap();
    assert_eq!(keys.len(), Configuration::standard(2).keys().len());
    assert_eq!(keys["NumberOfConnectors"]["value"], "2");
    assert_eq!(keys["NumberOfConnectors"]["readonly"], true);
    assert_eq!(keys["HeartbeatInterval"]["readonly"], false);
    assert_eq!(keys["HeartbeatInterval"]["value"], "60");
    let (_, some) = csms.next("get_configuration", SCRIPT).await;
    assert_eq!(some["known"]["HeartbeatInterval"], "60");
    assert_eq!(some["unknown"], serde_json::json!(["AcmeUnknown"]));
    let mut statuses = Vec::new();
    for _ in 0..6 {
        let (_, change) = csms.next("change_configuration", SCRIPT).await;
        statuses.push(change["status"].as_str().unwrap().to_owned());
    }
    assert_eq!(
        statuses,
        [
            "Rejected",
            "Rejected",
            "NotSupported",
            "Accepted",
            "Rejected",
            "Accepted"
        ]
    );
    csms.next("script_done", SCRIPT).await;
    assert_eq!(changes.lock().unwrap().len(), 2);
    // Before the change: 60 s, the station's default; now every second.
    heartbeats_every(
        &mut csms,
        Duration::from_millis(2500),
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(station.heartbeat_interval(), Duration::from_secs(1));
    let saved = std::fs::read_to_string(dir.join("device_model.json")).unwrap();
    assert!(saved.contains("\"HeartbeatInterval\": \"1\""), "{saved}");

    // Stopped and started again on the same state directory.
    stop(station).await;
    drop(store);
    let (store, _) = open_store(&dir);
    assert_eq!(
        store
            .configuration()
            .value("MeterValuesSampledData")
            .as_deref(),
        Some("Voltage,Energy.Active.Import.Register")
    );
    let station = start_station(&url, OcppVersion::V1_6, &store);
    let (_, boot) = csms.next("boot", SCRIPT).await;
    assert_eq!(boot["count"], 2);
    let (_, read) = csms.next("heartbeat_interval", SCRIPT).await;
    assert_eq!(read["value"], "1");
    heartbeats_every(
        &mut csms,
        Duration::from_millis(2500),
        Duration::from_secs(5),
    )
    .await;
    stop(station).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn device_model_2_0_1_against_python_ocpp() {
    device_model_against_python_ocpp(OcppVersion::V2_0_1, "2.0.1").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn device_model_2_1_against_python_ocpp() {
    device_model_against_python_ocpp(OcppVersion::V2_1, "2.1").await;
}

async fn device_model_against_python_ocpp(version: OcppVersion, name: &str) {
    if !python_ocpp_present() {
        return;
    }
    let port = free_port();
    let mut csms = Csms::start(port, name).await;
    let dir = state_dir(&name.replace('.', "_"));
    let url = format!("ws://127.0.0.1:{port}/ocpp/DM{}", name.replace('.', ""));
    let (store, changes) = open_store(&dir);
    let station = start_station(&url, version, &store);
    csms.next("boot", SCRIPT).await;

    let (_, get) = csms.next("get_variables", SCRIPT).await;
    assert_eq!(
        get["results"],
        serde_json::json!([
            ["Accepted", "60"],
            ["Accepted", "1"],
            ["UnknownComponent", null],
            ["UnknownVariable", null],
            ["NotSupportedAttributeType", null],
            ["Accepted", "20"],
            ["Rejected", null],
        ])
    );
    let (_, set) = csms.next("set_variables", SCRIPT).await;
    assert_eq!(
        set["results"],
        serde_json::json!([
            "Accepted",
            "Rejected",
            "Rejected",
            "UnknownComponent",
            "UnknownVariable",
            "NotSupportedAttributeType",
            "Accepted",
        ])
    );
    let model = store.device_model();
    let variables: usize = model.components().iter().map(|c| c.variables.len()).sum();
    for (request_id, expected) in [(1, variables), (2, 0), (3, 0), (4, 0), (5, 0)] {
        let (_, report) = csms.next("report", SCRIPT).await;
        assert_eq!(report["request_id"], request_id);
        let items = report["items"].as_array().unwrap();
        let status = report["status"].as_str().unwrap();
        if request_id == 5 {
            assert_eq!(status, "EmptyResultSet");
            continue;
        }
        assert_eq!(status, "Accepted", "{report}");
        if expected > 0 {
            assert_eq!(items.len(), expected);
        }
        // Split by ItemsPerMessage (20), numbered from 0, tbc on all but the last.
        let messages = items.len().div_ceil(20).max(1);
        let seq: Vec<usize> = (0..messages).collect();
        assert_eq!(report["seq_nos"], serde_json::json!(seq), "{report}");
        let tbc: Vec<bool> = (0..messages).map(|i| i + 1 < messages).collect();
        assert_eq!(report["tbc"], serde_json::json!(tbc), "{report}");
        match request_id {
            1 => {
                let heartbeat = items
                    .iter()
                    .find(|i| i[0] == "OCPPCommCtrlr" && i[1] == "HeartbeatInterval")
                    .unwrap();
                assert_eq!(heartbeat[2], "integer");
                assert_eq!(heartbeat[3], serde_json::json!(["ReadWrite"]));
            }
            2 => assert!(items.iter().all(|i| i[3]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m != "ReadOnly"))),
            3 => assert!(items
                .iter()
                .all(|i| i[1] == "AvailabilityState" || i[1] == "Available")),
            4 => assert!(items.iter().all(|i| i[0] == "OCPPCommCtrlr")),
            _ => {}
        }
    }
    csms.next("script_done", SCRIPT).await;
    assert_eq!(changes.lock().unwrap().len(), 2);
    heartbeats_every(
        &mut csms,
        Duration::from_millis(2500),
        Duration::from_secs(5),
    )
    .await;

    stop(station).await;
    drop(store);
    let (store, _) = open_store(&dir);
    assert_eq!(
        store.heartbeat_interval(version),
        Some(Duration::from_secs(1))
    );
    assert_eq!(
        store
            .device_model()
            .value("TxCtrlr", "TxStopPoint")
            .as_deref(),
        Some("EVConnected,Authorized,PowerPathClosed")
    );
    let station = start_station(&url, version, &store);
    let (_, boot) = csms.next("boot", SCRIPT).await;
    assert_eq!(boot["count"], 2);
    let (_, read) = csms.next("heartbeat_interval", SCRIPT).await;
    assert_eq!(read["value"], "1");
    heartbeats_every(
        &mut csms,
        Duration::from_millis(2500),
        Duration::from_secs(5),
    )
    .await;
    stop(station).await;
    let _ = std::fs::remove_dir_all(&dir);
}
