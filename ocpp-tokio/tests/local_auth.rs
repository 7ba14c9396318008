//! Local authorization (`station::LocalAuthStore`) of a [`Station`] against a central system it
//! was not written with: the PyPI `ocpp` library (2.1.0, `tests/interop/python_local_auth_csms.py`),
//! which checks every payload against the official schemas. On OCPP 1.6, 2.0.1 and 2.1 the
//! central system sends SendLocalList Full, then Differential (add, change, remove), then two
//! Differentials of a version not greater than the list's (VersionMismatch) and one of more
//! entries than the station takes in a message (Failed), GetLocalListVersion after each, and
//! ClearCache; the application learns an Authorize answer into the cache; the
//! station is stopped and started again on the same state directory, the list's version is read
//! back the same, and, offline, the tokens of the list and of the cache authorize locally.
//!
//! Needs python3 with `ocpp` and `websockets` (`bash scripts/interop-ocpp.sh --deps-only`):
//! skipped with a printed reason when missing, failed when `OCPP_INTEROP_REQUIRED=1`.

mod common;

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{python, python_ocpp_present, Killed};
use ocpp_tokio::model::device_model::{catalogue::Layout, Configuration, DeviceModel};
use ocpp_tokio::model::local_auth::{Decision, Refusal, Settings, Source};
use ocpp_tokio::model::{AuthorizationStatus, IdToken, IdTokenType};
use ocpp_tokio::ocpp::{v1_6, v2_0_1, v2_1};
use ocpp_tokio::station::{
    DeviceModelExt, DeviceModelStore, LocalAuthExt, LocalAuthStore, RetryBackOff, Station,
};
use ocpp_tokio::{OcppVersion, Router};
use serde_json::Value;
use tokio::sync::mpsc;

const CSMS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/interop/python_local_auth_csms.py"
);
/// How long the script of the central system may take.
const SCRIPT: Duration = Duration::from_secs(30);

/// The Python central system and its JSON events.
struct Csms {
    _child: Killed,
    events: mpsc::UnboundedReceiver<Value>,
    seen: Vec<Value>,
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
                    if tx.send(event).is_err() {
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
        csms.next("listening").await;
        csms
    }

    /// The next event named `name` (a `script_failed` fails the test).
    async fn next(&mut self, name: &str) -> Value {
        let deadline = tokio::time::Instant::now() + SCRIPT;
        loop {
            match tokio::time::timeout_at(deadline, self.events.recv()).await {
                Ok(Some(event)) => {
                    self.seen.push(event.clone());
                    assert_ne!(event["event"], "script_failed", "{event}");
                    if event["event"] == name {
                        return event;
                    }
                }
                _ => panic!("no {name} within {SCRIPT:?}; seen: {:#?}", self.seen),
            }
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A fresh state directory under target/.
fn state_dir(name: &str) -> PathBuf {
    let dir = common::target_dir()
        .join("local-auth-tests")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// What the application writes: the device model and local authorization stores on the state
/// directory, the local authorization following the device model's settings, both stores'
/// routes in the station's router.
fn start_station(url: &str, version: OcppVersion, dir: &Path) -> (Station, LocalAuthStore) {
    let device_model = DeviceModelStore::open(
        dir,
        DeviceModel::standard(Layout::new(&[1])),
        Configuration::standard(1),
    )
    .unwrap();
    let local_auth = LocalAuthStore::open(dir, Settings::default()).unwrap();
    local_auth.follow_device_model(&device_model, version);
    let router = local_auth.routes(device_model.routes(Router::<()>::for_station()));
    let station = Station::builder(url)
        .unwrap()
        .versions([version])
        .back_off(RetryBackOff {
            wait_minimum: Duration::from_millis(200),
            random_range: Duration::from_millis(100),
            repeat_times: 3,
        })
        .handler(router, ())
        .connect()
        .unwrap();
    (station, local_auth)
}

async fn stop(station: Station) {
    station.close();
    tokio::time::timeout(Duration::from_secs(10), station.stopped())
        .await
        .expect("the station stops")
        .unwrap();
}

/// The token of `value` as the version reads it: a 1.6 idTag, a 2.x `ISO14443` idToken.
fn token(value: &str) -> IdToken {
    IdToken::new(value, IdTokenType::Iso14443)
}

/// The application asks the central system about `value` and learns the answer.
async fn authorize_and_learn(
    version: OcppVersion,
    station: &Station,
    store: &LocalAuthStore,
    value: &str,
) {
    let learnt = match version {
        OcppVersion::V1_6 => {
            let answer = station
                .call(v1_6::AuthorizeRequest::new(value))
                .await
                .unwrap();
            store.learn_v1_6(value, &answer.id_tag_info)
        }
        OcppVersion::V2_0_1 => {
            let id = v2_0_1::IdToken::new(value, v2_0_1::IdTokenEnum::from_wire("ISO14443"));
            let answer = station
                .call(v2_0_1::AuthorizeRequest::new(id.clone()))
                .await
                .unwrap();
            store.learn_v2_0_1(&id, &answer.id_token_info)
        }
        _ => {
            let id = v2_1::IdToken::new(value, "ISO14443");
            let answer = station
                .call(v2_1::AuthorizeRequest::new(id.clone()))
                .await
                .unwrap();
            store.learn_v2_1(&id, &answer.id_token_info)
        }
    };
    assert!(learnt.unwrap(), "the answer was learnt");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_auth_1_6_against_python_ocpp() {
    local_auth_against_python_ocpp(OcppVersion::V1_6, "1.6").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_auth_2_0_1_against_python_ocpp() {
    local_auth_against_python_ocpp(OcppVersion::V2_0_1, "2.0.1").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_auth_2_1_against_python_ocpp() {
    local_auth_against_python_ocpp(OcppVersion::V2_1, "2.1").await;
}

async fn local_auth_against_python_ocpp(version: OcppVersion, name: &str) {
    if !python_ocpp_present() {
        return;
    }
    let port = free_port();
    let mut csms = Csms::start(port, name).await;
    let dir = state_dir(&name.replace('.', "_"));
    let url = format!("ws://127.0.0.1:{port}/ocpp/LA{}", name.replace('.', ""));
    let (station, store) = start_station(&url, version, &dir);
    csms.next("boot").await;

    let initial = csms.next("list_version").await;
    assert_eq!(initial["version"], 0, "{initial}");
    for (step, status, after) in [
        ("full", "Accepted", 1),
        ("differential", "Accepted", 2),
        ("same_version", "VersionMismatch", 2),
        ("old_version", "VersionMismatch", 2),
        ("too_many", "Failed", 2),
    ] {
        let sent = csms.next("send_local_list").await;
        assert_eq!(
            (sent["step"].as_str(), sent["status"].as_str()),
            (Some(step), Some(status))
        );
        let read = csms.next("list_version").await;
        assert_eq!(read["version"], after, "{read}");
    }
    let cleared = csms.next("clear_cache").await;
    assert_eq!(cleared["status"], "Accepted");
    csms.next("script_done").await;

    // The list as the central system left it: A; B removed; C now Accepted, of group G; D until
    // 2099; E never (VersionMismatch).
    let local = store.snapshot();
    assert_eq!(local.list().version(), 2);
    let listed: Vec<&str> = local
        .list()
        .entries()
        .map(|(t, _)| t.value.as_str())
        .collect();
    assert_eq!(listed, ["A", "C", "D"]);
    let c = local.list().get(&token("C")).unwrap();
    assert_eq!(c.status, AuthorizationStatus::Accepted);
    assert_eq!(c.group.as_ref().map(|g| g.value.as_str()), Some("G"));
    let d = local.list().get(&token("D")).unwrap();
    assert_eq!(d.expiry.as_ref().map(|e| e.year()), Some(2099));

    // The application learns the central system's answer on a token of no list.
    authorize_and_learn(version, &station, &store, "CACHED").await;
    csms.next("authorize").await;

    // Stopped and started again on the same state directory.
    stop(station).await;
    drop(store);
    let (station, store) = start_station(&url, version, &dir);
    let boot = csms.next("boot").await;
    assert_eq!(boot["count"], 2);
    let read = csms.next("list_version").await;
    assert_eq!(
        (read["step"].as_str(), read["version"].as_i64()),
        (Some("restarted"), Some(2))
    );
    csms.next("script_done").await;
    assert_eq!(store.local_list_version(), 2);

    // Offline: the list and the cache authorize, unknown tokens do not.
    stop(station).await;
    let offline = |value: &str| store.authorize_locally(&token(value), false);
    assert!(matches!(
        offline("a"),
        Decision::Accepted {
            source: Source::LocalList,
            ..
        }
    ));
    assert!(matches!(
        offline("D"),
        Decision::Accepted {
            source: Source::LocalList,
            ..
        }
    ));
    assert!(matches!(
        offline("CACHED"),
        Decision::Accepted {
            source: Source::Cache,
            ..
        }
    ));
    assert_eq!(offline("B"), Decision::Refused(Refusal::UnknownOffline));
    assert_eq!(offline("E"), Decision::Refused(Refusal::UnknownOffline));
    let _ = std::fs::remove_dir_all(&dir);
}
