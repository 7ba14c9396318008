//! Nothing acknowledged is lost, nothing refused is kept (issue "Nothing acknowledged is
//! lost"), on both servers, on SQLite and on PostgreSQL (a real server the test starts on
//! loopback). The durability rule is `ocpp-reference-csms/src/ledger.rs`; these tests break the
//! database on purpose:
//!
//! - while it cannot commit (PostgreSQL killed; SQLite's write lock held by another
//!   connection, as another process would), a start or a stop gets CALLERROR
//!   `InternalError` within the database wait, and so does every resend of it (never a
//!   CALLRESULT); answers that need no commit (MeterValues, TransactionEvent `Updated`,
//!   Heartbeat) are not held; an operator's token change gets 503;
//! - once it is back, then after a `kill -9` and a restart, nothing refused is in it (not
//!   the refused starts, not the token) and every acknowledged start and stop is;
//! - a stop sent again after a restart (its answer lost) leaves the finished row as it was,
//!   a StartTransaction sent again gets the id it was given, a stop for a transaction the
//!   server never held and a `Started` without `meterValue` commit on PostgreSQL too.

mod common;
#[macro_use]
mod octt;

use std::time::{Duration, Instant};

use common::postgres_server::PostgresServer;
use common::*;
use octt::*;
use serde_json::json;

const V16: &str = "ocpp1.6";
const V201: &str = "ocpp2.0.1";

/// How long a refused commit may take to be reported: the database wait (3 s), and a margin
/// for a loaded test machine. (mio-server once took 9.5 s: its jobs waited for a worker.)
const REPORTED_WITHIN: Duration = Duration::from_secs(6);

/// How long an answer that needs no commit may take while the database is away: nothing
/// waits for it (it once took 6.5-10 s on mio-server).
const NOT_HELD: Duration = Duration::from_millis(1500);

/// A database the test can take away and give back.
enum Database {
    Sqlite {
        dir: std::path::PathBuf,
        url: String,
        /// Holds the write lock while the database is "down".
        lock: Option<SqliteLock>,
    },
    Postgres(PostgresServer),
}

/// A second connection holding SQLite's write lock (`BEGIN IMMEDIATE`), as another process
/// would: every commit of the server waits for it, then fails.
struct SqliteLock {
    runtime: tokio::runtime::Runtime,
    connection: sqlx::SqliteConnection,
}

impl Database {
    fn sqlite(name: &str) -> Database {
        let dir = sqlite_dir(&format!("durability-{name}"));
        let url = format!("sqlite://{}", dir.join("csms.sqlite3").display());
        Database::Sqlite {
            dir,
            url,
            lock: None,
        }
    }

    fn postgres() -> Database {
        Database::Postgres(PostgresServer::start())
    }

    fn url(&self) -> &str {
        match self {
            Database::Sqlite { url, .. } => url,
            Database::Postgres(postgres) => postgres.url(),
        }
    }

    fn take_away(&mut self) {
        match self {
            Database::Sqlite { url, lock, .. } => {
                use sqlx::Connection;
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                let connection = runtime.block_on(async {
                    let mut connection = sqlx::SqliteConnection::connect(url).await.unwrap();
                    sqlx::query("BEGIN IMMEDIATE")
                        .execute(&mut connection)
                        .await
                        .unwrap();
                    connection
                });
                *lock = Some(SqliteLock {
                    runtime,
                    connection,
                });
            }
            Database::Postgres(postgres) => postgres.kill(),
        }
    }

    fn give_back(&mut self) {
        match self {
            Database::Sqlite { lock, .. } => {
                if let Some(SqliteLock {
                    runtime,
                    mut connection,
                }) = lock.take()
                {
                    runtime.block_on(async {
                        sqlx::query("ROLLBACK")
                            .execute(&mut connection)
                            .await
                            .unwrap();
                    });
                }
            }
            Database::Postgres(postgres) => postgres.restart(),
        }
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        if let Database::Sqlite { dir, lock, .. } = self {
            drop(lock.take());
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn start(binary: &str, database: &Database) -> ServerProcess {
    ServerProcess::start(binary, &["--database", database.url()])
}

/// SIGKILL, then the same server on the same database.
fn kill_and_restart(binary: &str, server: ServerProcess, database: &Database) -> ServerProcess {
    let mut server = server;
    server.child.kill().expect("kill -9");
    let _ = server.child.wait();
    start(binary, database)
}

fn boot_1_6(ws: &mut Ws) {
    ws.result(
        "BootNotification",
        json!({"chargePointVendor": "ACME", "chargePointModel": "Fast-50"}),
    );
}

fn boot_2_0_1(ws: &mut Ws) {
    let station = json!({"vendorName": "ACME", "model": "AC-22"});
    ws.result(
        "BootNotification",
        json!({"reason": "PowerUp", "chargingStation": station}),
    );
}

fn event(event: &str, seq_no: i64, id: &str, wh: Option<f64>) -> serde_json::Value {
    let mut payload = json!({
        "eventType": event, "timestamp": T0, "triggerReason": "Authorized", "seqNo": seq_no,
        "transactionInfo": {"transactionId": id},
        "evse": {"id": 1, "connectorId": 1},
    });
    if let Some(wh) = wh {
        payload["meterValue"] = json!([{"timestamp": T0, "sampledValue": [{"value": wh}]}]);
    }
    payload
}

fn start_1_6(meter_start: i64) -> serde_json::Value {
    json!({"connectorId": 1, "idTag": "TAG-D", "meterStart": meter_start, "timestamp": T0})
}

fn stop_1_6(transaction_id: i64, meter_stop: i64) -> serde_json::Value {
    json!({"transactionId": transaction_id, "meterStop": meter_stop, "timestamp": T0,
           "reason": "Local"})
}

/// Sends one CALL on each of `sends` at once, then reads every answer: the CALLs wait for the
/// database side by side. Returns each answer with how long it took.
fn call_each(
    sends: &mut [(&mut Ws, &str, serde_json::Value)],
) -> Vec<(serde_json::Value, Duration)> {
    let sent = Instant::now();
    for (n, (ws, action, payload)) in sends.iter_mut().enumerate() {
        ws.send_text(&json!([2, format!("m{n}"), action, payload]).to_string());
    }
    sends
        .iter_mut()
        .map(|(ws, _, _)| {
            let answer = ws.recv_json();
            (answer, sent.elapsed())
        })
        .collect()
}

fn assert_internal_error(answer: &serde_json::Value, took: Duration, what: &str) {
    assert_eq!(
        (answer[0].as_u64(), answer[2].as_str()),
        (Some(4), Some("InternalError")),
        "{what} acknowledged while the database could not commit: {answer}"
    );
    assert!(
        took < REPORTED_WITHIN,
        "{what}: the failing commit was reported after {took:?}"
    );
}

/// The transactions the store holds for `identity`, by id.
fn stored(server: &ServerProcess, identity: &str) -> Vec<serde_json::Value> {
    let path = format!("/chargepoints/{identity}/transactions");
    let (status, list) = admin(server, "GET", &path, "");
    assert_eq!(status, 200, "{list}");
    list.as_array().cloned().unwrap_or_default()
}

fn find<'a>(list: &'a [serde_json::Value], id: &str) -> Option<&'a serde_json::Value> {
    list.iter().find(|t| t["id"] == id)
}

/// While the database cannot commit: starts, stops and every resend of them are refused,
/// within the database wait; what needs no commit is answered at once; a token change gets
/// 503. After the database is back and a `kill -9`: nothing refused is kept, and the resends
/// that then succeed are.
fn refused_while_down_then_kept_once_acknowledged(binary: &str, mut database: Database) {
    let server = start(binary, &database);
    let mut stopper = connect(&server, "CP-STOP", V16);
    boot_1_6(&mut stopper);
    let open_id = stopper.result("StartTransaction", start_1_6(100))["transactionId"]
        .as_i64()
        .expect("a transactionId");
    let mut starter = connect(&server, "CP-START", V16);
    boot_1_6(&mut starter);
    let mut station = connect(&server, "CS-END", V201);
    boot_2_0_1(&mut station);
    station.result(
        "TransactionEvent",
        event("Started", 0, "TX-OPEN", Some(10.0)),
    );
    let mut fresh = connect(&server, "CS-NEW", V201);
    boot_2_0_1(&mut fresh);

    database.take_away();
    // The first try and two resends of each: every one refused.
    for round in 0..3 {
        let answers = call_each(&mut [
            (&mut stopper, "StopTransaction", stop_1_6(open_id, 900)),
            (&mut starter, "StartTransaction", start_1_6(5)),
            (
                &mut station,
                "TransactionEvent",
                event("Ended", 1, "TX-OPEN", Some(20.0)),
            ),
            (
                &mut fresh,
                "TransactionEvent",
                event("Started", 0, "TX-REFUSED", None),
            ),
        ]);
        for ((answer, took), what) in answers.iter().zip([
            "StopTransaction",
            "StartTransaction",
            "TransactionEvent Ended",
            "TransactionEvent Started",
        ]) {
            assert_internal_error(answer, *took, &format!("{what} (send {})", round + 1));
        }
    }
    // What needs no commit is not held behind the database.
    let meter = json!({"connectorId": 1, "transactionId": open_id,
        "meterValue": [{"timestamp": T0, "sampledValue": [{"value": "500"}]}]});
    for (ws, action, payload) in [
        (&mut stopper, "MeterValues", meter),
        (
            &mut station,
            "TransactionEvent",
            event("Updated", 1, "TX-OPEN", Some(15.0)),
        ),
        (&mut starter, "Heartbeat", json!({})),
    ] {
        let asked = Instant::now();
        ws.result(action, payload);
        let took = asked.elapsed();
        assert!(
            took < NOT_HELD,
            "{action} was held {took:?} by the database"
        );
    }
    let (status, body) = admin(
        &server,
        "PUT",
        "/tokens/TAG-REFUSED",
        r#"{"status":"Blocked"}"#,
    );
    assert_eq!(status, 503, "{body}");
    database.give_back();
    // Anything the server would still write of what it refused, it writes within this.
    std::thread::sleep(Duration::from_secs(4));
    drop((stopper, starter, station, fresh));
    let server = kill_and_restart(binary, server, &database);

    let stops = stored(&server, "CP-STOP");
    let open = find(&stops, &open_id.to_string()).expect("the acknowledged start");
    assert!(open["ended"].is_null(), "a refused stop was kept: {open}");
    assert!(
        stored(&server, "CP-START").is_empty(),
        "a refused start was kept: {:?}",
        stored(&server, "CP-START")
    );
    let ends = stored(&server, "CS-END");
    assert!(find(&ends, "TX-OPEN").expect("TX-OPEN")["ended"].is_null());
    assert!(
        stored(&server, "CS-NEW").is_empty(),
        "a refused Started was kept"
    );
    let (status, tokens) = admin(&server, "GET", "/tokens/TAG-REFUSED", "");
    assert_eq!(status, 404, "a refused token change took effect: {tokens}");

    // The charge points send them again, and now they are acknowledged and kept.
    let mut stopper = connect(&server, "CP-STOP", V16);
    boot_1_6(&mut stopper);
    stopper.result("StopTransaction", stop_1_6(open_id, 900));
    let mut starter = connect(&server, "CP-START", V16);
    boot_1_6(&mut starter);
    let started = starter.result("StartTransaction", start_1_6(5))["transactionId"]
        .as_i64()
        .expect("a transactionId");
    let mut station = connect(&server, "CS-END", V201);
    boot_2_0_1(&mut station);
    station.result("TransactionEvent", event("Ended", 2, "TX-OPEN", Some(20.0)));
    let mut fresh = connect(&server, "CS-NEW", V201);
    boot_2_0_1(&mut fresh);
    fresh.result("TransactionEvent", event("Started", 0, "TX-REFUSED", None));
    drop((stopper, starter, station, fresh));
    let server = kill_and_restart(binary, server, &database);

    let stops = stored(&server, "CP-STOP");
    let ended = find(&stops, &open_id.to_string()).expect("the acknowledged stop");
    assert!(
        ended["ended"].is_string(),
        "an acknowledged stop was lost: {ended}"
    );
    assert_eq!(ended["meter_start_wh"], 100.0, "{ended}");
    assert_eq!(ended["meter_last_wh"], 900.0, "{ended}");
    let starts = stored(&server, "CP-START");
    assert_eq!(starts.len(), 1, "{starts:?}");
    assert_eq!(starts[0]["id"], started.to_string());
    assert!(find(&stored(&server, "CS-END"), "TX-OPEN").unwrap()["ended"].is_string());
    assert!(find(&stored(&server, "CS-NEW"), "TX-REFUSED").is_some());
}

/// An answer lost after the commit (the server killed right after it): the resends change
/// nothing. A StartTransaction sent again gets the same id; a stop sent again leaves the
/// finished row as it was; a stop for a transaction never held, and a `Started` without
/// `meterValue` between two with one, commit (PostgreSQL once refused every float after a
/// NULL one).
fn resends_after_a_restart_change_nothing(binary: &str, database: Database) {
    let server = start(binary, &database);
    let mut cp = connect(&server, "CP-AGAIN", V16);
    boot_1_6(&mut cp);
    let id = cp.result("StartTransaction", start_1_6(1000))["transactionId"]
        .as_i64()
        .unwrap();
    let mut cs = connect(&server, "CS-AGAIN", V201);
    boot_2_0_1(&mut cs);
    cs.result("TransactionEvent", event("Started", 0, "TX-A", Some(1.0)));
    cs.result("TransactionEvent", event("Started", 0, "TX-B", None));
    cs.result("TransactionEvent", event("Started", 0, "TX-C", Some(3.0)));
    cs.result("TransactionEvent", event("Ended", 1, "TX-B", None));
    drop((cp, cs));
    let server = kill_and_restart(binary, server, &database);

    // The StartTransaction's answer was lost: sent again, the same id.
    let mut cp = connect(&server, "CP-AGAIN", V16);
    boot_1_6(&mut cp);
    let again = cp.result("StartTransaction", start_1_6(1000))["transactionId"].as_i64();
    assert_eq!(again, Some(id), "a resent StartTransaction got another id");
    cp.result("StopTransaction", stop_1_6(id, 4000));
    let before = find(&stored(&server, "CP-AGAIN"), &id.to_string())
        .cloned()
        .expect("the stopped transaction");
    assert!(before["ended"].is_string(), "{before}");
    // A stop for a transaction this server never held: acknowledged and kept.
    cp.result("StopTransaction", stop_1_6(987_654, 10));
    drop(cp);
    let server = kill_and_restart(binary, server, &database);

    // The stop's answer was lost: sent again after the restart (the server no longer holds
    // the finished transaction), the row stays as it was.
    std::thread::sleep(Duration::from_millis(1100)); // a later "now" would show
    let mut cp = connect(&server, "CP-AGAIN", V16);
    boot_1_6(&mut cp);
    cp.result("StopTransaction", stop_1_6(id, 4000));
    let list = stored(&server, "CP-AGAIN");
    let after = find(&list, &id.to_string()).expect("the stopped transaction");
    assert_eq!(*after, before, "a resent stop rewrote the finished row");
    assert!(find(&list, "987654").expect("the unknown stop")["ended"].is_string());
    let list = stored(&server, "CS-AGAIN");
    for id in ["TX-A", "TX-B", "TX-C"] {
        assert!(find(&list, id).is_some(), "{id} missing: {list:?}");
    }
    assert!(find(&list, "TX-B").unwrap()["ended"].is_string());
    assert_eq!(find(&list, "TX-C").unwrap()["meter_start_wh"], 3.0);
    cp.close();
}

fn sqlite_refused_while_down_then_kept_once_acknowledged(binary: &str) {
    let name = format!("down-{}", binary.rsplit('/').next().unwrap_or("server"));
    refused_while_down_then_kept_once_acknowledged(binary, Database::sqlite(&name));
}

fn postgres_refused_while_down_then_kept_once_acknowledged(binary: &str) {
    refused_while_down_then_kept_once_acknowledged(binary, Database::postgres());
}

fn sqlite_resends_after_a_restart_change_nothing(binary: &str) {
    let name = format!("again-{}", binary.rsplit('/').next().unwrap_or("server"));
    resends_after_a_restart_change_nothing(binary, Database::sqlite(&name));
}

fn postgres_resends_after_a_restart_change_nothing(binary: &str) {
    resends_after_a_restart_change_nothing(binary, Database::postgres());
}

on_both_servers!(
    sqlite_refused_while_down_then_kept_once_acknowledged,
    postgres_refused_while_down_then_kept_once_acknowledged,
    sqlite_resends_after_a_restart_change_nothing,
    postgres_resends_after_a_restart_change_nothing,
);
