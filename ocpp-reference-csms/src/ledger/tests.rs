//! A model test of the rule: two stations (1.6 and 2.0.1) play their transactions against a
//! CSMS on a real SQLite store, through every interleaving proptest picks of commits that
//! fail (nothing written), commits written whose answer is lost (written, reported failed),
//! CALLRESULTs lost on the way (the station sends again), and kills (a new CSMS on the same
//! database). Whatever happens: every acknowledged start and stop is in the database at
//! once, a refused CALL changes nothing in it, a resend is answered as the first one was
//! (the same 1.6 id), no 1.6 id is given twice, and once the stations are done the database
//! holds exactly their transactions, ended, with the meter start they sent.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use ocpp_messages::version::OcppVersion;
use ocpp_proto::{Answer, ChargePointIdentity};
use proptest::prelude::*;
use serde_json::Value;

use crate::store::{
    Durability, OperatorSettings, Record, Saved, SqlStore, Store, StoreError, TransactionQuery,
    DATABASE_WAIT,
};
use crate::{Csms, CsmsConfig, SessionId, Transaction};

/// What befalls the next commit (and the answer).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    None,
    /// The commit fails: nothing written.
    Refused,
    /// The commit is written, but its caller is told it failed (a lost COMMIT answer).
    CommitAnswerLost,
    /// The CALLRESULT is lost on its way to the station.
    AnswerLost,
}

#[derive(Debug, Clone)]
enum Step {
    Send { station: usize, fault: Fault },
    Kill,
}

/// A store that fails on demand around a real one; with a gate, each commit waits until
/// the test opens it once.
#[derive(Debug)]
struct Faulty {
    inner: SqlStore,
    next: Mutex<Fault>,
    gate: Option<Mutex<std::sync::mpsc::Receiver<()>>>,
}

impl Faulty {
    /// Around a SQLite database in `file`, failing nothing until told; with `gate`, each
    /// commit waits for one message on it.
    fn open(file: &std::path::Path, gate: Option<std::sync::mpsc::Receiver<()>>) -> Arc<Faulty> {
        let url = format!("sqlite://{}", file.display());
        Arc::new(Faulty {
            inner: SqlStore::open(&url).unwrap(),
            next: Mutex::new(Fault::None),
            gate: gate.map(Mutex::new),
        })
    }
}

impl Store for Faulty {
    fn load(&self) -> Result<Saved, StoreError> {
        self.inner.load()
    }
    fn settings(&self) -> Result<OperatorSettings, StoreError> {
        self.inner.settings()
    }
    fn save(&self, records: Vec<Record>, durability: Durability) -> Result<(), StoreError> {
        match durability {
            Durability::Later => self.inner.save(records, durability),
            Durability::Committed => self.commit_by(records, Instant::now() + DATABASE_WAIT),
        }
    }
    fn commit_by(&self, records: Vec<Record>, deadline: Instant) -> Result<(), StoreError> {
        if let Some(gate) = &self.gate {
            let _ = gate.lock().unwrap().recv();
        }
        let fault = std::mem::replace(&mut *self.next.lock().unwrap(), Fault::None);
        match fault {
            Fault::Refused => Err(StoreError::Unavailable),
            Fault::CommitAnswerLost => {
                self.inner.commit_by(records, deadline)?;
                Err(StoreError::Commit("the answer was lost".into()))
            }
            Fault::None | Fault::AnswerLost => self.inner.commit_by(records, deadline),
        }
    }
    fn transactions(
        &self,
        query: TransactionQuery,
    ) -> Result<Vec<(String, Transaction)>, StoreError> {
        self.inner.transactions(query)
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn flush(&self) {
        self.inner.flush()
    }
}

const TRANSACTIONS: usize = 3;

/// One station playing [`TRANSACTIONS`] transactions: start, meter values, stop.
struct Station {
    identity: ChargePointIdentity,
    version: OcppVersion,
    session: SessionId,
    /// The next message: transaction `k`, part `part` (0 start, 1 meter, 2 stop).
    k: usize,
    part: usize,
    /// 1.6: the id each acknowledged start got.
    ids: Vec<i64>,
    /// The answers each message got, by (k, part): a resend's must be the same.
    answers: BTreeMap<(usize, usize), Value>,
}

impl Station {
    fn done(&self) -> bool {
        self.k == TRANSACTIONS
    }

    /// The next message as (action, payload).
    fn message(&self) -> (&'static str, String) {
        let k = self.k;
        let at = format!("2026-12-01T12:0{k}:0{}Z", self.part);
        if self.version == OcppVersion::V1_6 {
            let id = self.ids.get(k).copied().unwrap_or_default();
            match self.part {
                0 => (
                    "StartTransaction",
                    format!(
                        r#"{{"connectorId":1,"idTag":"TAG","meterStart":{},"timestamp":"{at}"}}"#,
                        1000 * k
                    ),
                ),
                1 => (
                    "MeterValues",
                    format!(
                        r#"{{"connectorId":1,"transactionId":{id},"meterValue":[{{"timestamp":"{at}","sampledValue":[{{"value":"{}"}}]}}]}}"#,
                        1000 * k + 500
                    ),
                ),
                _ => (
                    "StopTransaction",
                    format!(
                        r#"{{"transactionId":{id},"meterStop":{},"timestamp":"{at}","reason":"Local"}}"#,
                        1000 * k + 900
                    ),
                ),
            }
        } else {
            let event = ["Started", "Updated", "Ended"][self.part];
            // Every other Started carries no meterValue (it is optional).
            let meter = if self.part == 0 && k % 2 == 1 {
                String::new()
            } else {
                format!(
                    r#","meterValue":[{{"timestamp":"{at}","sampledValue":[{{"value":{}}}]}}]"#,
                    1000 * k + 300 * self.part
                )
            };
            (
                "TransactionEvent",
                format!(
                    r#"{{"eventType":"{event}","timestamp":"{at}","triggerReason":"Authorized","seqNo":{},"transactionInfo":{{"transactionId":"TX-{k}"}},"evse":{{"id":1,"connectorId":1}}{meter}}}"#,
                    self.part
                ),
            )
        }
    }
}

struct World {
    store: Arc<Faulty>,
    csms: Csms,
    stations: Vec<Station>,
    _dir: TempDir,
}

struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn open(store: &Arc<Faulty>) -> Csms {
    let store: Arc<dyn Store> = Arc::clone(store) as Arc<dyn Store>;
    Csms::open(CsmsConfig::default().store(Some(store))).unwrap()
}

fn connect(csms: &Csms, station: &mut Station) {
    station.session = csms.on_connected(&station.identity, station.version);
    let boot = if station.version == OcppVersion::V1_6 {
        r#"{"chargePointVendor":"ACME","chargePointModel":"M"}"#
    } else {
        r#"{"reason":"PowerUp","chargingStation":{"vendorName":"ACME","model":"M"}}"#
    };
    let request =
        crate::command::decode_command(station.version, "BootNotification", boot).unwrap();
    let answer = csms
        .on_call(station.session, &station.identity, &request)
        .wait(csms);
    assert!(answer.is_result(), "{answer:?}");
}

impl World {
    fn new() -> World {
        static CASE: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "ledger-model-{}-{}",
            std::process::id(),
            CASE.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let store = Faulty::open(&dir.join("csms.sqlite3"), None);
        let csms = open(&store);
        let mut stations = Vec::new();
        for (name, version) in [("CP16", OcppVersion::V1_6), ("CS201", OcppVersion::V2_0_1)] {
            let identity = ChargePointIdentity::new(name.into(), false).unwrap();
            let mut station = Station {
                session: csms.on_connected(&identity, version),
                identity,
                version,
                k: 0,
                part: 0,
                ids: Vec::new(),
                answers: BTreeMap::new(),
            };
            connect(&csms, &mut station);
            stations.push(station);
        }
        World {
            store,
            csms,
            stations,
            _dir: TempDir(dir),
        }
    }

    /// Every row of the database, by (identity, id).
    fn rows(&self) -> BTreeMap<(String, String), Transaction> {
        self.store.flush();
        let query = TransactionQuery {
            identity: None,
            open_only: false,
            limit: usize::MAX,
        };
        self.store
            .transactions(query)
            .unwrap()
            .into_iter()
            .map(|(identity, t)| ((identity, t.id.clone()), t))
            .collect()
    }

    fn kill(&mut self) {
        self.csms = open(&self.store);
        for station in &mut self.stations {
            connect(&self.csms, station);
        }
    }

    /// The station sends its next message (again, if it was not acknowledged).
    fn send(&mut self, index: usize, fault: Fault) -> Result<(), TestCaseError> {
        if self.stations[index].done() {
            return Ok(());
        }
        let before = self.rows();
        *self.store.next.lock().unwrap() = fault;
        let station = &self.stations[index];
        let (action, payload) = station.message();
        let request = crate::command::decode_command(station.version, action, &payload).unwrap();
        let answer = self
            .csms
            .on_call(station.session, &station.identity, &request)
            .wait(&self.csms);
        *self.store.next.lock().unwrap() = Fault::None;
        let after = self.rows();
        let station = &mut self.stations[index];
        let Answer::Result(response) = answer else {
            // Refused: nothing of it may be kept (a commit written whose answer was
            // lost is the one exception, and its resend must be recognised).
            if fault != Fault::CommitAnswerLost {
                prop_assert_eq!(&before, &after, "{} refused but kept", action);
            }
            return Ok(());
        };
        let result = serde_json::to_value(&response).unwrap();
        let key = (station.k, station.part);
        if let Some(first) = station.answers.get(&key) {
            prop_assert_eq!(first, &result, "a resend of {} answered otherwise", action);
        }
        station.answers.insert(key, result.clone());
        // Acknowledged: in the database now.
        let identity = station.identity.as_str().to_owned();
        let id = if station.version == OcppVersion::V1_6 {
            if station.part == 0 {
                result["transactionId"].as_i64().unwrap().to_string()
            } else {
                station.ids[station.k].to_string()
            }
        } else {
            format!("TX-{}", station.k)
        };
        let row = after.get(&(identity, id.clone()));
        prop_assert!(
            row.is_some(),
            "{} acknowledged, {} not in the database",
            action,
            id
        );
        if station.part == 2 {
            prop_assert!(
                row.unwrap().ended.is_some(),
                "{} acknowledged, not ended",
                action
            );
        }
        if fault == Fault::AnswerLost {
            return Ok(()); // the station did not get it: it sends it again
        }
        if station.version == OcppVersion::V1_6 && station.part == 0 {
            let id: i64 = id.parse().unwrap();
            prop_assert!(!station.ids.contains(&id), "id {} given twice", id);
            station.ids.push(id);
        }
        station.part += 1;
        if station.part == 3 {
            station.part = 0;
            station.k += 1;
        }
        Ok(())
    }
}

/// A CALL refused because its commit failed makes no CALL either: an `Ended` whose seqNo
/// jumps (a gap, which the CSMS follows with GetTransactionStatus) sends nothing while its
/// commit fails; its resend, committed, sends the GetTransactionStatus once.
#[test]
fn a_refused_call_sends_no_follow_up_and_its_committed_resend_does() {
    let dir = std::env::temp_dir().join(format!("ledger-follow-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let store = Faulty::open(&dir.join("state.sqlite3"), None);
    let config = CsmsConfig::default().store(Some(Arc::clone(&store) as Arc<dyn Store>));
    let csms = Csms::open(config).unwrap();
    let identity = ChargePointIdentity::new("CS-GAP".into(), false).unwrap();
    let session = csms.on_connected(&identity, OcppVersion::V2_0_1);
    let event = |kind: &str, seq_no: u32| {
        let payload = serde_json::json!({
            "eventType": kind, "timestamp": "2025-01-02T03:04:05Z",
            "triggerReason": "Authorized", "seqNo": seq_no,
            "transactionInfo": {"transactionId": "TX-GAP"},
            "evse": {"id": 1, "connectorId": 1},
        });
        crate::command::decode_command(
            OcppVersion::V2_0_1,
            "TransactionEvent",
            &payload.to_string(),
        )
        .unwrap()
    };
    let call = |request| csms.on_call(session, &identity, &request).wait(&csms);
    assert!(call(event("Started", 0)).is_result());
    // seqNo 5 after 0: a gap. The commit fails: InternalError, and nothing follows.
    *store.next.lock().unwrap() = Fault::Refused;
    let refused = call(event("Ended", 5));
    assert!(!refused.is_result(), "{refused:?}");
    assert_eq!(csms.take_follow_up(&identity), None);
    // The resend commits: answered, and the GetTransactionStatus follows, once.
    assert!(call(event("Ended", 5)).is_result());
    let follow_up = csms
        .take_follow_up(&identity)
        .expect("GetTransactionStatus");
    assert_eq!(follow_up.action(), "GetTransactionStatus");
    assert_eq!(csms.take_follow_up(&identity), None);
    let _ = std::fs::remove_dir_all(dir);
}

/// The charge point reconnects while its StartTransaction is being committed and sends
/// it again: the resend waits for the commit under way (it is not handled against a
/// state without it), then gets the same id; one row.
#[test]
fn a_resend_during_the_commit_waits_for_it_and_gets_the_same_id() {
    let world = World::new();
    let (open_gate, gate) = std::sync::mpsc::channel();
    let store = Faulty::open(&world._dir.0.join("gated.sqlite3"), Some(gate));
    let csms = Arc::new(
        Csms::open(CsmsConfig::default().store(Some(Arc::clone(&store) as Arc<dyn Store>)))
            .unwrap(),
    );
    let mut station = world.stations.into_iter().next().unwrap();
    connect(&csms, &mut station);
    let (action, payload) = station.message();
    let request = crate::command::decode_command(station.version, action, &payload).unwrap();
    let identity = station.identity.clone();
    let call = |csms: &Arc<Csms>, session| {
        let (csms, request) = (Arc::clone(csms), request.clone());
        let identity = identity.clone();
        std::thread::spawn(move || csms.on_call(session, &identity, &request).wait(&csms))
    };
    let first = call(&csms, station.session);
    // The first one's commit waits at the gate; the charge point's newer connection
    // sends the StartTransaction again.
    std::thread::sleep(std::time::Duration::from_millis(100));
    connect(&csms, &mut station);
    let resend = call(&csms, station.session);
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(
        !resend.is_finished(),
        "the resend did not wait for the commit"
    );
    open_gate.send(()).unwrap();
    open_gate.send(()).unwrap(); // should the resend commit too (it must not)
    let id = |answer: Answer| match answer {
        Answer::Result(response) => {
            serde_json::to_value(&response).unwrap()["transactionId"].clone()
        }
        other => panic!("{other:?}"),
    };
    let (first, resend) = (id(first.join().unwrap()), id(resend.join().unwrap()));
    assert_eq!(first, resend);
    store.inner.flush();
    let rows = store
        .transactions(TransactionQuery {
            identity: None,
            open_only: false,
            limit: 10,
        })
        .unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
}

fn step() -> impl Strategy<Value = Step> {
    let fault = prop_oneof![
        3 => Just(Fault::None),
        2 => Just(Fault::Refused),
        1 => Just(Fault::CommitAnswerLost),
        1 => Just(Fault::AnswerLost),
    ];
    prop_oneof![
        8 => (0..2usize, fault).prop_map(|(station, fault)| Step::Send { station, fault }),
        1 => Just(Step::Kill),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(32),
        ..ProptestConfig::default()
    })]
    #[test]
    fn nothing_acknowledged_is_lost_nothing_refused_is_kept(
        steps in proptest::collection::vec(step(), 0..40)
    ) {
        let mut world = World::new();
        for step in steps {
            match step {
                Step::Send { station, fault } => world.send(station, fault)?,
                Step::Kill => world.kill(),
            }
        }
        // The stations finish, the database answering.
        for _ in 0..(6 * TRANSACTIONS) {
            for station in 0..world.stations.len() {
                world.send(station, Fault::None)?;
            }
        }
        prop_assert!(world.stations.iter().all(Station::done));
        let rows = world.rows();
        let cp = &world.stations[0];
        let mut expected: Vec<(String, String)> = cp
            .ids
            .iter()
            .map(|id| ("CP16".to_owned(), id.to_string()))
            .chain((0..TRANSACTIONS).map(|k| ("CS201".to_owned(), format!("TX-{k}"))))
            .collect();
        expected.sort();
        let held: Vec<(String, String)> = rows.keys().cloned().collect();
        prop_assert_eq!(held, expected, "the database holds other transactions");
        for (k, id) in cp.ids.iter().enumerate() {
            let row = &rows[&("CP16".to_owned(), id.to_string())];
            prop_assert!(row.ended.is_some());
            prop_assert_eq!(row.meter_start_wh, Some(ocpp_messages::Decimal::from(1000 * k as i64)));
            prop_assert_eq!(row.meter_last_wh, Some(ocpp_messages::Decimal::from(1000 * k as i64 + 900)));
        }
        for k in 0..TRANSACTIONS {
            let id = ("CS201".to_owned(), format!("TX-{}", k));
            prop_assert!(rows[&id].ended.is_some(), "TX-{} not ended", k);
        }
    }
}
