//! A small CSMS on `ocpp-tokio`'s typed [`Router`] and the version-neutral model
//! ([`ocpp_tokio::model`]): OCPP 1.6 and 2.0.1 charge points on one port, one handler per
//! concept of the protocol (not one per action and version), and an HTTP API over what they
//! reported.
//!
//! What it does with a charge point's CALLs:
//!
//! - Booted: Accepted, heartbeat interval 300 s; Heartbeat: the time;
//! - StatusChanged: keeps each connector's status as sent (1.6 `connectorId`, 2.0.1
//!   `evseId/connectorId`);
//! - meter readings (in or outside a transaction): keeps the last energy register reading
//!   (`Energy.Active.Import.Register`, the measurand a sampled value without one has), exactly
//!   as written, per EVSE (a 1.6 connector);
//! - AuthorizationRequested, and every transaction message with a token: checks it against a
//!   fixed list (`TAG-OK` is accepted, anything else is `Invalid`);
//! - transactions: started (a 1.6 start gets its id from the application's
//!   [`InMemoryLedger`], a resend the same one), ended.
//!
//! What a charge point reported is its connection's state (the router's per-connection state),
//! gone with the connection. The HTTP API:
//!
//! - `GET /chargepoints`: the connected charge points, with their version, connector statuses,
//!   energy readings and open transactions (transactionId: EVSE), as JSON;
//! - `POST /chargepoints/{id}/remote-start` (body `{"idTag": ".."}`, optional: the first token
//!   of the list): sends RemoteStartTransaction (1.6) or RequestStartTransaction (2.0.1) and
//!   answers the charge point's status (`{"status": "Accepted"}`); 404 when it is not
//!   connected; otherwise the call's failure with a status read from its delivery (502 a
//!   CALLERROR, 503 not sent, 504 it may have run) and `{"error", "outcome", "delivery"}`.
//!
//! ```text
//! router-csms [--listen ADDR (127.0.0.1:9000)] [--http ADDR (127.0.0.1:9001)]
//! ```
//!
//! The first line it prints is `listening on OCPP_ADDR http HTTP_ADDR` (the bound addresses).

use std::collections::BTreeMap;
use std::error::Error;
use std::sync::atomic::{AtomicI32, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use clap::Parser;
use ocpp_tokio::model::AuthorizationStatus::{Accepted, Invalid};
use ocpp_tokio::model::{
    Authorization, AuthorizationRequested, BootAnswer, Booted, Command, EventAnswer, Heartbeat,
    IdToken, IdTokenType, InMemoryLedger, MeterReading, MeterReadings, StatusChanged,
    TransactionEnded, TransactionId, TransactionLedger, TransactionStarted, TransactionUpdated,
};
use ocpp_tokio::ocpp::Delivery;
use ocpp_tokio::{ChargePoints, ConnectionConfig, DateTime, Decimal, ErrorAnswer};
use ocpp_tokio::{OcppVersion, Router, Server, Session};
use serde_json::{json, Value};

// --- OCPP handling: begin ---
/// The tokens allowed to charge (1.6 idTag, 2.0.1 idToken): TAG-OK.
const TOKENS: [&str; 1] = ["TAG-OK"];

/// What a charge point reported on its connection (each connection's state; the HTTP API reads
/// it through `ChargePoint::state`): connector statuses as sent by connectorId (1.6) or
/// "evseId/connectorId" (2.0.1), the last energy register reading (Wh, exactly as written) by
/// EVSE (a 1.6 connector), and the open transactions' EVSE by transactionId.
#[derive(Debug, Default)]
struct Reported {
    statuses: BTreeMap<String, String>,
    energy: BTreeMap<String, Decimal>,
    transactions: BTreeMap<String, String>,
}

/// A connection's session: what it reported, and the application's ledger of transactions,
/// which gives out the 1.6 ids (never the same twice, whichever connection asks).
type Cp = Session<Mutex<Reported>, Arc<InMemoryLedger>>;

/// The token check behind every answer that carries one, for every version.
fn auth(token: &IdToken) -> Authorization {
    Authorization::new(if TOKENS.contains(&token.value.as_str()) { Accepted } else { Invalid })
}

/// Keeps the last energy register reading of an EVSE (named, or its transaction's).
fn meter(cp: &Cp, evse: Option<u32>, tx: Option<&TransactionId>, readings: &[MeterReading]) {
    let mut r = cp.lock().unwrap();
    let at = evse.map(|e| e.to_string()).or_else(|| r.transactions.get(&tx?.to_string()).cloned());
    let wh = readings.iter().rev().find_map(MeterReading::energy_wh);
    at.zip(wh).map(|(at, wh)| r.energy.insert(at, wh));
}

/// One handler per concept, for 1.6 and 2.0.1 alike; each connection starts with nothing
/// reported.
fn router() -> Router<Mutex<Reported>, Arc<InMemoryLedger>> {
    Router::<Mutex<Reported>>::default()
        .with_state(Arc::new(InMemoryLedger::new()))
        .on_concept(|_: Cp, _: Booted| async { Ok(BootAnswer::accepted(300, DateTime::now())) })
        .on_concept(|_: Cp, _: Heartbeat| async { Ok(EventAnswer::heartbeat(DateTime::now())) })
        .on_concept(|cp: Cp, s: StatusChanged| async move {
            let connector = s.connector.map_or(s.evse.to_string(), |c| format!("{}/{c}", s.evse));
            cp.lock().unwrap().statuses.insert(connector, s.raw_status);
            Ok(EventAnswer::Received)
        })
        .on_concept(|cp: Cp, m: MeterReadings| async move {
            meter(&cp, Some(m.evse), None, &m.readings);
            Ok(EventAnswer::Received)
        })
        .on_concept(|_: Cp, a: AuthorizationRequested| async move { Ok(auth(&a.token)) })
        .on_concept(|cp: Cp, start: TransactionStarted| async move {
            let started = cp.app().record_start(cp.identity().as_str(), &start);
            let recorded = started.map_err(ErrorAnswer::internal)?;
            if let (Some(id), Some(evse)) = (recorded.id(), start.evse) {
                cp.lock().unwrap().transactions.insert(id.to_string(), evse.to_string());
            }
            Ok(EventAnswer::transaction(recorded.number(), start.token.as_ref().map(auth)))
        })
        .on_concept(|cp: Cp, update: TransactionUpdated| async move {
            meter(&cp, update.evse, Some(&update.id), &update.readings);
            Ok(EventAnswer::transaction(None, update.token.as_ref().map(auth)))
        })
        .on_concept(|cp: Cp, end: TransactionEnded| async move {
            cp.app().record_end(cp.identity().as_str(), &end).map_err(ErrorAnswer::internal)?;
            cp.lock().unwrap().transactions.remove(&end.id.to_string());
            Ok(EventAnswer::transaction(None, end.token.as_ref().map(auth)))
        })
}

// --- OCPP handling: end ---

/// What the HTTP handlers share.
#[derive(Debug, Clone)]
struct Api {
    charge_points: ChargePoints,
    /// The last 2.0.1 remoteStartId given out.
    last_remote_start: Arc<AtomicI32>,
}

/// The HTTP API over the connected charge points and what they reported.
fn http_api(charge_points: ChargePoints) -> axum::Router {
    let api = Api { charge_points, last_remote_start: Arc::default() };
    axum::Router::new()
        .route("/chargepoints", get(list_charge_points))
        .route("/chargepoints/{id}/remote-start", post(remote_start))
        .with_state(api)
}

fn json_response(status: StatusCode, body: Value) -> Response {
    let content_type = [(header::CONTENT_TYPE, "application/json")];
    (status, content_type, body.to_string()).into_response()
}

fn json_error(status: StatusCode, error: &str) -> Response {
    json_response(status, json!({ "error": error }))
}

/// `GET /chargepoints`: the connected charge points, by identity, with what each reported on
/// its connection (its state, reached from its handle).
async fn list_charge_points(State(api): State<Api>) -> Response {
    let mut connected: Vec<_> = api.charge_points.iter().collect();
    connected.sort_by(|a, b| a.identity().cmp(b.identity()));
    let list = connected.iter().filter_map(|cp| {
        let state = cp.state::<Mutex<Reported>>()?;
        let reported = state.lock().unwrap();
        Some(json!({
            "identity": cp.identity().as_str(),
            "version": cp.version().as_str(),
            "statuses": reported.statuses,
            "energy": reported.energy,
            "transactions": reported.transactions,
        }))
    });
    json_response(StatusCode::OK, Value::Array(list.collect()))
}

/// The `idTag` of a remote-start body: none for an empty body or one without it.
fn requested_id_tag(body: &[u8]) -> Result<Option<String>, &'static str> {
    const WANTED: &str = "the body is not {\"idTag\": \"..\"}";
    if body.is_empty() {
        return Ok(None);
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(fields)) => match fields.get("idTag") {
            None => Ok(None),
            Some(Value::String(id_tag)) => Ok(Some(id_tag.clone())),
            Some(_) => Err(WANTED),
        },
        _ => Err(WANTED),
    }
}

/// `POST /chargepoints/{id}/remote-start`: RemoteStartTransaction (1.6) or
/// RequestStartTransaction (2.0.1), as the charge point's version asks; answers its status.
async fn remote_start(
    State(api): State<Api>,
    Path(identity): Path<String>,
    body: Bytes,
) -> Response {
    let id_tag = match requested_id_tag(&body) {
        Ok(Some(id_tag)) => id_tag,
        Ok(None) => TOKENS[0].to_owned(),
        Err(error) => return json_error(StatusCode::BAD_REQUEST, error),
    };
    let Some(cp) = api.charge_points.get(&identity) else {
        return json_error(StatusCode::NOT_FOUND, "not connected");
    };
    // One command, said in the charge point's version: RemoteStartTransaction (1.6),
    // RequestStartTransaction (2.x).
    // (2.x numbers remote starts; 1.6 has no remoteStartId.)
    let remote_start_id = match cp.version() {
        OcppVersion::V1_6 => 0,
        _ => api.last_remote_start.fetch_add(1, Relaxed) + 1,
    };
    let token = IdToken::new(id_tag, IdTokenType::Central);
    let command = Command::RemoteStart { evse: None, token, remote_start_id, limit: None };
    let request = match command.to_request(cp.version()) {
        Ok(request) => request,
        Err(error) => return json_error(StatusCode::NOT_IMPLEMENTED, &error.to_string()),
    };
    let status = match cp.call_raw(request).await.map(|answer| command.outcome(&answer)) {
        Ok(Ok(outcome)) => Ok(outcome.raw_status),
        Ok(Err(error)) => return json_error(StatusCode::BAD_GATEWAY, &error.to_string()),
        Err(failure) => Err(failure),
    };
    match status {
        Ok(status) => json_response(StatusCode::OK, json!({ "status": status })),
        // The status says what a retry may do: 503 only when the CALL certainly was not sent,
        // 504 when it may have run, 502 when the charge point answered with a CALLERROR.
        Err(failure) => {
            let status = match failure.delivery() {
                Delivery::Answered => StatusCode::BAD_GATEWAY,
                Delivery::NotSent => StatusCode::SERVICE_UNAVAILABLE,
                _ => StatusCode::GATEWAY_TIMEOUT,
            };
            let body = json!({
                "error": failure.to_string(),
                "outcome": failure.name(),
                "delivery": failure.delivery().name(),
            });
            json_response(status, body)
        }
    }
}

/// The command line.
#[derive(Debug, Parser)]
#[command(name = "router-csms", about = "A small CSMS on ocpp-tokio's typed Router.")]
struct Options {
    /// Where charge points connect.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9000")]
    listen: String,
    /// The HTTP API.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9001")]
    http: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let Options { listen, http } = Options::parse();
    let versions = vec![OcppVersion::V1_6, OcppVersion::V2_0_1];
    let server = Server::builder()
        .config(ConnectionConfig::default().versions(versions))
        .handler(router())
        .bind(listen)
        .await?;
    let http_listener = tokio::net::TcpListener::bind(http).await?;
    println!("listening on {} http {}", server.local_addr()?, http_listener.local_addr()?);
    let api = http_api(server.charge_points());
    tokio::spawn(async move {
        if let Err(e) = axum::serve(http_listener, api).await {
            eprintln!("http: {e}");
        }
    });
    server.run().await?;
    Ok(())
}
