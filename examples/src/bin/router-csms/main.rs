//! A small CSMS on `ocpp-tokio`'s typed [`Router`]: OCPP 1.6 and 2.0.1 charge points on one
//! port, and an HTTP API over what they reported.
//!
//! What it does with a charge point's CALLs:
//!
//! - BootNotification: Accepted, heartbeat interval 300 s; Heartbeat: the time;
//! - StatusNotification: keeps each connector's status (1.6 `connectorId`, 2.0.1
//!   `evseId/connectorId`);
//! - MeterValues: keeps the last energy reading (`Energy.Active.Import.Register`, the measurand
//!   a sampled value without one has) per connector (1.6) or EVSE (2.0.1);
//! - Authorize, 1.6 StartTransaction and 2.0.1 TransactionEvent: checks the token against a
//!   fixed list (`TAG-OK` is accepted, anything else is `Invalid`);
//! - transactions: 1.6 StartTransaction gives a new `transactionId`, StopTransaction ends it;
//!   2.0.1 TransactionEvent Started/Updated/Ended keeps them by `transactionId`.
//!
//! What a charge point reported is its connection's state (the router's per-connection state),
//! gone with the connection. The HTTP API:
//!
//! - `GET /chargepoints`: the connected charge points, with their version, connector statuses,
//!   energy readings and open transactions (transactionId: connector or EVSE), as JSON;
//! - `POST /chargepoints/{id}/remote-start` (body `{"idTag": ".."}`, optional: the first token
//!   of the list): sends RemoteStartTransaction (1.6) or RequestStartTransaction (2.0.1) and
//!   answers the charge point's status (`{"status": "Accepted"}`); 404 when it is not
//!   connected; otherwise the call's failure with `CallFailure::http_status` (502 a CALLERROR,
//!   503 not sent, 504 it may have run) and `{"error", "outcome", "delivery"}`.
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
use ocpp_tokio::{v1_6, v2_0_1, ChargePoints, ConnectionConfig};
use ocpp_tokio::{DateTime, OcppVersion, Router, Server};
use serde_json::{json, Value};

// --- OCPP handling: begin ---
/// The tokens allowed to charge (1.6 idTag, 2.0.1 idToken): TAG-OK.
const TOKENS: [&str; 1] = ["TAG-OK"];
/// The last 1.6 transactionId given out.
static LAST_TRANSACTION: AtomicI32 = AtomicI32::new(0);

/// What a charge point reported on its connection (each connection's state; the HTTP API reads
/// it through `ChargePoint::state`): connector statuses by connectorId (1.6) or
/// "evseId/connectorId" (2.0.1), the last energy reading (Wh) by connectorId (1.6) or evseId
/// (2.0.1), and the open transactions' connector (1.6) or EVSE (2.0.1) by transactionId.
#[derive(Debug, Default)]
struct Reported {
    statuses: BTreeMap<String, String>,
    energy: BTreeMap<String, f64>,
    transactions: BTreeMap<String, String>,
}

/// The token check behind every Authorize answer, in the words of each version.
fn id_tag_info(id_tag: &str) -> v1_6::IdTagInfo {
    use v1_6::AuthorizationStatus::{Accepted, Invalid};
    v1_6::IdTagInfo::new(if TOKENS.contains(&id_tag) { Accepted } else { Invalid })
}

fn id_token_info(token: &v2_0_1::IdToken) -> v2_0_1::IdTokenInfo {
    use v2_0_1::AuthorizationStatusEnum::{Accepted, Invalid};
    let known = TOKENS.contains(&token.id_token.as_str());
    v2_0_1::IdTokenInfo::new(if known { Accepted } else { Invalid })
}

/// One typed handler per action and version; each connection starts with nothing reported.
fn router() -> Router<Mutex<Reported>> {
    Router::<Mutex<Reported>>::default()
        .on(|_, _: v1_6::BootNotificationRequest| async {
            let accepted = v1_6::RegistrationStatus::Accepted;
            Ok(v1_6::BootNotificationResponse::new(accepted, DateTime::now(), 300))
        })
        .on(|_, _: v1_6::HeartbeatRequest| async {
            Ok(v1_6::HeartbeatResponse::new(DateTime::now()))
        })
        .on(|s, r: v1_6::StatusNotificationRequest| async move {
            s.lock().unwrap().statuses.insert(r.connector_id.to_string(), r.status.to_string());
            Ok(v1_6::StatusNotificationResponse {})
        })
        .on(|s, r: v1_6::MeterValuesRequest| async move {
            let energy = [None, Some(v1_6::Measurand::EnergyActiveImportRegister)];
            let mut samples = r.meter_value.iter().flat_map(|m| &m.sampled_value).rev();
            let found = samples.find(|v| energy.contains(&v.measurand));
            if let Some(wh) = found.and_then(|v| v.value.parse().ok()) {
                s.lock().unwrap().energy.insert(r.connector_id.to_string(), wh);
            }
            Ok(v1_6::MeterValuesResponse {})
        })
        .on(|_, r: v1_6::AuthorizeRequest| async move {
            Ok(v1_6::AuthorizeResponse::new(id_tag_info(&r.id_tag)))
        })
        .on(|s, r: v1_6::StartTransactionRequest| async move {
            let id = LAST_TRANSACTION.fetch_add(1, Relaxed) + 1;
            s.lock().unwrap().transactions.insert(id.to_string(), r.connector_id.to_string());
            Ok(v1_6::StartTransactionResponse::new(id_tag_info(&r.id_tag), id))
        })
        .on(|s, r: v1_6::StopTransactionRequest| async move {
            s.lock().unwrap().transactions.remove(&r.transaction_id.to_string());
            Ok(v1_6::StopTransactionResponse::default())
        })
        .on(|_, _: v2_0_1::BootNotificationRequest| async {
            let accepted = v2_0_1::RegistrationStatusEnum::Accepted;
            Ok(v2_0_1::BootNotificationResponse::new(DateTime::now(), 300, accepted))
        })
        .on(|_, _: v2_0_1::HeartbeatRequest| async {
            Ok(v2_0_1::HeartbeatResponse::new(DateTime::now()))
        })
        .on(|s, r: v2_0_1::StatusNotificationRequest| async move {
            let connector = format!("{}/{}", r.evse_id, r.connector_id);
            s.lock().unwrap().statuses.insert(connector, r.connector_status.to_string());
            Ok(v2_0_1::StatusNotificationResponse::default())
        })
        .on(|s, r: v2_0_1::MeterValuesRequest| async move {
            let energy = [None, Some(v2_0_1::MeasurandEnum::EnergyActiveImportRegister)];
            let mut samples = r.meter_value.iter().flat_map(|m| &m.sampled_value).rev();
            if let Some(v) = samples.find(|v| energy.contains(&v.measurand)) {
                // f64 in its JSON report (the 1.6 readings are parsed as f64 too).
                s.lock().unwrap().energy.insert(r.evse_id.to_string(), v.value.to_f64());
            }
            Ok(v2_0_1::MeterValuesResponse::default())
        })
        .on(|_, r: v2_0_1::AuthorizeRequest| async move {
            Ok(v2_0_1::AuthorizeResponse::new(id_token_info(&r.id_token)))
        })
        .on(|s, r: v2_0_1::TransactionEventRequest| async move {
            let (id, mut reported) = (r.transaction_info.transaction_id, s.lock().unwrap());
            match (r.event_type, r.evse) {
                (v2_0_1::TransactionEventEnum::Ended, _) => reported.transactions.remove(&id),
                (_, Some(evse)) => reported.transactions.insert(id, evse.id.to_string()),
                (_, None) => None, // an Updated without its EVSE: known from the Started
            };
            let id_token_info = r.id_token.as_ref().map(id_token_info);
            Ok(v2_0_1::TransactionEventResponse { id_token_info, ..Default::default() })
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
    let status = match cp.version() {
        OcppVersion::V1_6 => {
            let request = v1_6::RemoteStartTransactionRequest::new(id_tag);
            cp.call(request).await.map(|answer| answer.status.to_string())
        }
        OcppVersion::V2_0_1 => {
            let remote_start_id = api.last_remote_start.fetch_add(1, Relaxed) + 1;
            let token = v2_0_1::IdToken::new(id_tag, v2_0_1::IdTokenEnum::Central);
            let request = v2_0_1::RequestStartTransactionRequest::new(token, remote_start_id);
            cp.call(request).await.map(|answer| answer.status.to_string())
        }
        other => {
            let error = format!("OCPP {} is not served", other.as_str());
            return json_error(StatusCode::NOT_IMPLEMENTED, &error);
        }
    };
    match status {
        Ok(status) => json_response(StatusCode::OK, json!({ "status": status })),
        // The one table every path uses: 503 only when the CALL certainly was not sent, 504
        // when it may have run, 502 when the charge point answered with a CALLERROR.
        Err(failure) => {
            let status = StatusCode::from_u16(failure.http_status())
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
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
