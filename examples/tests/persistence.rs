//! The CSMS's state survives `kill -9` (issue "The reference central system as a product"):
//! on SQLite and on PostgreSQL (a real server started by the test on loopback), on both
//! servers. Before the kill: a 1.6 transaction started (its StartTransaction answered, so
//! committed), a 2.0.1 transaction Started, a token, a boot policy, a security profile and a
//! password and a tariff set through the admin API. After a restart on the same database every one of
//! them is as it was: the transactions are open, the 1.6 one ends with a StopTransaction and
//! the next 1.6 transaction gets a new id, the token decides Authorize, the boot policy the
//! BootNotification, the password the upgrade. And two nodes on one PostgreSQL show the same
//! transaction from either admin API.

mod common;
#[macro_use]
mod octt;

use common::postgres_server::PostgresServer;
use common::*;
use octt::*;
use serde_json::json;

const V16: &str = "ocpp1.6";
const V201: &str = "ocpp2.0.1";

/// A server on `database` with Basic auth (CP-P16 and CS-P201 have passwords).
fn start(binary: &str, database: &str, passwords: &TempFile) -> ServerProcess {
    ServerProcess::start(
        binary,
        &["--database", database, "--basic-auth", &passwords.path()],
    )
}

fn open(server: &ServerProcess, identity: &str, protocol: &str, password: &str) -> Upgrade {
    upgrade(
        server.ocpp,
        identity,
        Some(protocol),
        Some((identity, password.as_bytes())),
    )
}

fn boot_1_6(ws: &mut Ws) -> Value {
    ws.result(
        "BootNotification",
        json!({"chargePointVendor": "ACME", "chargePointModel": "Fast-50"}),
    )
}

fn boot_2_0_1(ws: &mut Ws) -> Value {
    let station = json!({"vendorName": "ACME", "model": "AC-22"});
    ws.result(
        "BootNotification",
        json!({"reason": "PowerUp", "chargingStation": station}),
    )
}

fn transaction_event(event: &str, seq_no: i64, id: &str, wh: f64) -> Value {
    json!({
        "eventType": event, "timestamp": T0, "triggerReason": "Authorized", "seqNo": seq_no,
        "transactionInfo": {"transactionId": id},
        "evse": {"id": 1, "connectorId": 1},
        "meterValue": [{"timestamp": T0, "sampledValue": [{"value": wh}]}],
    })
}

/// Everything done before the kill; returns the 1.6 transaction's id.
fn before_the_crash(server: &ServerProcess) -> i64 {
    let mut cp = open(server, "CP-P16", V16, "password-p16-0000").opened(V16);
    boot_1_6(&mut cp);
    let started = cp.result(
        "StartTransaction",
        json!({"connectorId": 1, "idTag": "TAG-P", "meterStart": 1000, "timestamp": T0}),
    );
    let transaction_id = started["transactionId"].as_i64().expect("a transactionId");
    let meter = json!({"connectorId": 1, "transactionId": transaction_id,
        "meterValue": [{"timestamp": T0, "sampledValue": [{"value": "1500"}]}]});
    cp.result("MeterValues", meter);

    let mut cs = open(server, "CS-P201", V201, "password-p201-000").opened(V201);
    boot_2_0_1(&mut cs);
    cs.result(
        "TransactionEvent",
        transaction_event("Started", 0, "TX-201", 2000.0),
    );

    for (method, path, body) in [
        ("PUT", "/tokens/TAG-BLOCKED", r#"{"status":"Blocked"}"#),
        ("PUT", "/tokens/TAG-P", r#"{"status":"Accepted"}"#),
        (
            "PUT",
            "/chargepoints/CP-LATER/boot",
            r#"{"status":"Pending"}"#,
        ),
        ("PUT", "/chargepoints/CS-P201/security", r#"{"profile":1}"#),
        (
            "PUT",
            "/chargepoints/CS-P201/tariff",
            r#"{"price_per_kwh":"0.5","currency":"CHF"}"#,
        ),
        (
            "PUT",
            "/chargepoints/CP-P16/password",
            r#"{"password":"changed-p16-1111"}"#,
        ),
    ] {
        let (status, body) = admin(server, method, path, body);
        assert_eq!(status, 200, "{method} {path}: {body}");
    }
    transaction_id
}

/// After the restart: everything as it was.
fn after_the_restart(server: &ServerProcess, transaction_id: i64) {
    let (status, open_transactions) = admin(server, "GET", "/transactions", "");
    assert_eq!(status, 200, "{open_transactions}");
    let list = open_transactions.as_array().expect("a list");
    let find = |identity: &str| {
        list.iter()
            .find(|t| t["identity"] == identity)
            .unwrap_or_else(|| panic!("{identity}'s transaction missing: {list:?}"))
            .clone()
    };
    let p16 = find("CP-P16");
    assert_eq!(p16["id"], transaction_id.to_string());
    assert_eq!(p16["id_tag"], "TAG-P");
    assert_eq!(p16["meter_start_wh"], 1000.0);
    assert_eq!(
        p16["meter_last_wh"], 1500.0,
        "the queued MeterValues was kept too"
    );
    let p201 = find("CS-P201");
    assert_eq!(p201["id"], "TX-201");
    // Priced with the station's tariff, kept too (no energy yet: 0).
    assert_eq!(
        (&p201["cost"], &p201["currency"]),
        (&json!(0.0), &json!("CHF"))
    );

    // The password set by the operator opens, the old one does not.
    assert_eq!(open(server, "CP-P16", V16, "password-p16-0000").status, 401);
    let mut cp = open(server, "CP-P16", V16, "changed-p16-1111").opened(V16);
    boot_1_6(&mut cp);
    // The token store: TAG-BLOCKED is Blocked, an unknown tag is refused (the store is on).
    let blocked = cp.result("Authorize", json!({"idTag": "TAG-BLOCKED"}));
    assert_eq!(blocked["idTagInfo"]["status"], "Blocked");
    let unknown = cp.result("Authorize", json!({"idTag": "TAG-NOBODY"}));
    assert_eq!(unknown["idTagInfo"]["status"], "Invalid");
    // The transaction started before the crash ends now, with its meter value.
    let stop = json!({"transactionId": transaction_id, "meterStop": 2500, "timestamp": T0,
                      "reason": "Local"});
    cp.result("StopTransaction", stop);
    let (_, transactions) = admin(server, "GET", "/chargepoints/CP-P16/transactions", "");
    let ended = &transactions[0];
    assert_eq!(ended["id"], transaction_id.to_string(), "{transactions}");
    assert_eq!(ended["meter_last_wh"], 2500.0, "{transactions}");
    assert!(ended["ended"].is_string(), "{transactions}");
    // A new 1.6 transaction never reuses an id given before the crash.
    let next = cp.result(
        "StartTransaction",
        json!({"connectorId": 1, "idTag": "TAG-P", "meterStart": 2500, "timestamp": T0}),
    );
    assert!(
        next["transactionId"].as_i64().unwrap() > transaction_id,
        "{next}"
    );
    cp.close();

    // The boot policy of a station not seen yet, and the security profile.
    let (_, boot) = admin(server, "GET", "/chargepoints/CP-LATER/boot", "");
    assert_eq!(boot["policy"], "Pending", "{boot}");
    let (_, security) = admin(server, "GET", "/chargepoints/CS-P201/security", "");
    assert_eq!(security["profile"], 1, "{security}");
    let (_, tariff) = admin(server, "GET", "/chargepoints/CS-P201/tariff", "");
    let expected = json!({"price_per_kwh": "0.5", "price_per_hour": "0", "currency": "CHF"});
    assert_eq!(tariff["tariff"], expected, "{tariff}");
}

fn survives_kill_9(binary: &str, database: &str) {
    let passwords = TempFile::new(
        "persistence-passwords",
        "CP-P16:password-p16-0000\nCS-P201:password-p201-000\n",
    );
    let mut server = start(binary, database, &passwords);
    let transaction_id = before_the_crash(&server);
    // SIGKILL: no shutdown, nothing flushed on the way out.
    server.child.kill().expect("kill -9");
    let _ = server.child.wait();
    let server = start(binary, database, &passwords);
    after_the_restart(&server, transaction_id);
}

fn sqlite_survives_kill_9(binary: &str) {
    let dir = sqlite_dir(&format!(
        "persistence-{}",
        binary.rsplit('/').next().unwrap_or("server")
    ));
    let database = format!("sqlite://{}", dir.join("csms.sqlite3").display());
    survives_kill_9(binary, &database);
    let _ = std::fs::remove_dir_all(&dir);
}

fn postgres_survives_kill_9(binary: &str) {
    let postgres = PostgresServer::start();
    survives_kill_9(binary, postgres.url());
}

/// Two nodes (one mio, one tokio) on one PostgreSQL: a transaction reported to one is shown by
/// the other's admin API, a token an operator blocks through one is refused by the other, and
/// the 1.6 transaction ids they give out never meet.
fn two_nodes_show_the_same_transaction(binary: &str) {
    let postgres = PostgresServer::start();
    let other = if binary == octt::MIO {
        octt::TOKIO
    } else {
        octt::MIO
    };
    let a = ServerProcess::start(binary, &["--database", postgres.url()]);
    let b = ServerProcess::start(other, &["--database", postgres.url()]);
    let mut cs = connect(&a, "CS-SHARED", V201);
    boot_2_0_1(&mut cs);
    cs.result(
        "TransactionEvent",
        transaction_event("Started", 0, "TX-SHARED", 10.0),
    );
    for node in [&a, &b] {
        let (status, list) = admin(node, "GET", "/transactions", "");
        assert_eq!(status, 200, "{list}");
        let shared = list
            .as_array()
            .and_then(|l| l.iter().find(|t| t["id"] == "TX-SHARED"))
            .unwrap_or_else(|| panic!("TX-SHARED missing: {list}"));
        assert_eq!(shared["identity"], "CS-SHARED");
    }
    cs.close();

    // An operator's change through one node reaches the other within its settings refresh
    // (2 s): a token blocked through a is refused by b.
    let (status, _) = admin(&a, "PUT", "/tokens/TAG-SHARED", r#"{"status":"Blocked"}"#);
    assert_eq!(status, 200);
    let deadline = Instant::now() + Duration::from_secs(6);
    loop {
        let (status, token) = admin(&b, "GET", "/tokens/TAG-SHARED", "");
        if status == 200 {
            assert_eq!(token["status"], "Blocked", "{token}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "b did not follow a's token change"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut cp = connect(&b, "CP-SHARED", V16);
    boot_1_6(&mut cp);
    let answer = cp.result("Authorize", json!({"idTag": "TAG-SHARED"}));
    assert_eq!(answer["idTagInfo"]["status"], "Blocked", "{answer}");
    cp.close();

    // OCPP 1.6 transaction ids come from one counter in the database: the two nodes never
    // give out the same id, and a charge point that moves from one node to the other never
    // gets an id it had (each node reserves its ids in blocks).
    let mut given = std::collections::HashSet::new();
    for round in 0..3 {
        for (n, node) in [&a, &b].into_iter().enumerate() {
            let mut cp = connect(node, &format!("CP-IDS-{}", (round + n) % 2), V16);
            boot_1_6(&mut cp);
            let start = json!({
                "connectorId": 1, "idTag": "TAG-OK", "meterStart": round * 10 + n,
                "timestamp": "2025-01-02T03:04:05Z",
            });
            let answer = cp.result("StartTransaction", start);
            let id = answer["transactionId"].as_i64().unwrap();
            assert!(given.insert(id), "id {id} given twice: {given:?}");
            cp.close();
        }
    }
}

/// While the database is down nothing is acknowledged that was not kept: a StartTransaction
/// gets CALLERROR InternalError (the charge point sends it again), an operator's change 503
/// and changes nothing; Heartbeat goes on (it writes nothing), and no charge point waits for
/// another one's commit: while the StartTransaction waits for the database, another charge
/// point's Heartbeat is answered. Once the database is back, the same StartTransaction is
/// answered.
fn a_database_down_acknowledges_nothing_it_did_not_keep(binary: &str) {
    let mut postgres = PostgresServer::start();
    let server = ServerProcess::start(binary, &["--database", postgres.url(), "--threads", "1"]);
    let mut cp = connect(&server, "CP-DOWN", V16);
    boot_1_6(&mut cp);
    let mut other = connect(&server, "CP-UP", V16);
    boot_1_6(&mut other);
    postgres.kill();
    let start = json!({"connectorId": 1, "idTag": "TAG-D", "meterStart": 0, "timestamp": T0});
    cp.send_text(&json!([2, "start-1", "StartTransaction", start]).to_string());
    // The commit waits up to 3 s for the database; the loop serves CP-UP meanwhile.
    assert!(other.result("Heartbeat", json!({}))["currentTime"].is_string());
    assert!(
        !cp.has_pending_input(),
        "the StartTransaction was answered before another charge point's Heartbeat"
    );
    let answer = cp.recv_json();
    assert_eq!(
        (answer[0].as_u64(), &answer[2]),
        (Some(4), &json!("InternalError")),
        "{answer}"
    );
    assert!(cp.result("Heartbeat", json!({}))["currentTime"].is_string());
    let (status, body) = admin(&server, "PUT", "/tokens/TAG-D", r#"{"status":"Blocked"}"#);
    assert_eq!(status, 503, "{body}");
    let (_, tokens) = admin(&server, "GET", "/tokens", "");
    assert!(
        tokens["tokens"].get("TAG-D").is_none(),
        "changed anyway: {tokens}"
    );
    postgres.restart();
    let started = cp.result("StartTransaction", start);
    assert!(started["transactionId"].is_i64(), "{started}");
    cp.close();
}

on_both_servers!(
    a_database_down_acknowledges_nothing_it_did_not_keep,
    sqlite_survives_kill_9,
    postgres_survives_kill_9,
    two_nodes_show_the_same_transaction,
);
