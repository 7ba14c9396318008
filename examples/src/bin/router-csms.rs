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
//! What a charge point reported is kept by identity, across reconnections. The HTTP API:
//!
//! - `GET /chargepoints`: every charge point known (connected or not), with its version when
//!   connected, its connector statuses, energy readings and open transactions, as JSON;
//! - `POST /chargepoints/{id}/remote-start` (body `{"idTag": ".."}`, optional: the first token
//!   of the list): sends RemoteStartTransaction (1.6) or RequestStartTransaction (2.0.1) and
//!   answers the charge point's status (`{"status": "Accepted"}`); 404 when it is not
//!   connected, 502 when the call failed, saying whether it may have reached the charge point.
//!
//! ```text
//! router-csms [--listen ADDR (127.0.0.1:9000)] [--http ADDR (127.0.0.1:9001)]
//! ```
//!
//! The first line it prints is `listening on OCPP_ADDR http HTTP_ADDR` (the bound addresses).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::error::Error;
use std::sync::atomic::{AtomicI32, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use ocpp_tokio::ocpp::ChargePointIdentity;
use ocpp_tokio::{v1_6, v2_0_1, CallFailure, ChargePoints, Connecting, ConnectionConfig};
use ocpp_tokio::{DateTime, OcppVersion, Reply, Router, Server, Session};
use serde_json::{json, Value};

// --- OCPP handling: begin ---
/// What the CSMS knows, shared by every connection and the HTTP API.
#[derive(Debug, Default)]
struct App {
    /// The tokens (1.6 idTag, 2.0.1 idToken) allowed to charge.
    tokens: HashSet<String>,
    /// What each charge point reported, by identity.
    stations: Mutex<HashMap<ChargePointIdentity, Station>>,
    /// The last 1.6 transactionId given out.
    last_transaction: AtomicI32,
}

/// What a charge point reported.
#[derive(Debug, Default)]
struct Station {
    /// Connector statuses, by connectorId (1.6) or "evseId/connectorId" (2.0.1).
    statuses: BTreeMap<String, String>,
    /// The last energy reading, by connectorId (1.6) or evseId (2.0.1).
    energy: BTreeMap<String, f64>,
    /// The open transactions, by transactionId.
    transactions: BTreeMap<String, Transaction>,
}

/// An open transaction.
#[derive(Debug, Default)]
struct Transaction {
    /// The connector (1.6) or EVSE (2.0.1) it runs on.
    connector: Option<String>,
    /// The token that started it.
    token: Option<String>,
}

/// What every handler gets: the connection, and the app as its state.
type Cx = Session<Arc<App>>;

/// Whether `token` may charge: the check of every version.
fn authorize(app: &App, token: &str) -> bool {
    app.tokens.contains(token)
}

/// Updates what the session's charge point reported.
fn station<T>(s: &Cx, update: impl FnOnce(&mut Station) -> T) -> T {
    let mut stations = s.stations.lock().unwrap();
    update(stations.entry(s.identity().clone()).or_default())
}

/// The 1.6 answer for an idTag.
fn id_tag_info(app: &App, id_tag: &str) -> v1_6::IdTagInfo {
    match authorize(app, id_tag) {
        true => v1_6::IdTagInfo::new(v1_6::AuthorizationStatus::Accepted),
        false => v1_6::IdTagInfo::new(v1_6::AuthorizationStatus::Invalid),
    }
}

/// The 2.0.1 answer for an idToken.
fn id_token_info(app: &App, token: &v2_0_1::IdToken) -> v2_0_1::IdTokenInfo {
    match authorize(app, &token.id_token) {
        true => v2_0_1::IdTokenInfo::new(v2_0_1::AuthorizationStatusEnum::Accepted),
        false => v2_0_1::IdTokenInfo::new(v2_0_1::AuthorizationStatusEnum::Invalid),
    }
}

/// One typed handler per action and version.
fn router(app: Arc<App>) -> Router<Arc<App>> {
    Router::new(move |_: Connecting| {
        let app = Arc::clone(&app);
        async move { Ok(app) }
    })
    // OCPP 1.6
    .on(|_: Cx, _: v1_6::BootNotificationRequest| async {
        let accepted = v1_6::RegistrationStatus::Accepted;
        Ok(v1_6::BootNotificationResponse::new(
            accepted,
            DateTime::now(),
            300,
        ))
    })
    .on(|_: Cx, _: v1_6::HeartbeatRequest| async {
        Ok(v1_6::HeartbeatResponse::new(DateTime::now()))
    })
    .on(|s: Cx, req: v1_6::StatusNotificationRequest| async move {
        let connector = req.connector_id.to_string();
        station(&s, |st| {
            st.statuses.insert(connector, req.status.to_string())
        });
        Ok(v1_6::StatusNotificationResponse {})
    })
    .on(|s: Cx, req: v1_6::MeterValuesRequest| async move {
        let energy = Some(v1_6::Measurand::EnergyActiveImportRegister);
        let samples = req.meter_value.iter().flat_map(|m| &m.sampled_value);
        let reading = samples
            .filter(|v| v.measurand.is_none() || v.measurand == energy)
            .last();
        if let Some(value) = reading.and_then(|v| v.value.parse().ok()) {
            station(&s, |st| {
                st.energy.insert(req.connector_id.to_string(), value)
            });
        }
        Ok(v1_6::MeterValuesResponse {})
    })
    .on(|s: Cx, req: v1_6::AuthorizeRequest| async move {
        Ok(v1_6::AuthorizeResponse::new(id_tag_info(&s, &req.id_tag)))
    })
    .on(|s: Cx, req: v1_6::StartTransactionRequest| async move {
        let id = s.last_transaction.fetch_add(1, Relaxed) + 1;
        let connector = Some(req.connector_id.to_string());
        let transaction = Transaction {
            connector,
            token: Some(req.id_tag.clone()),
        };
        station(&s, |st| st.transactions.insert(id.to_string(), transaction));
        Ok(v1_6::StartTransactionResponse::new(
            id_tag_info(&s, &req.id_tag),
            id,
        ))
    })
    .on(|s: Cx, req: v1_6::StopTransactionRequest| async move {
        station(&s, |st| {
            st.transactions.remove(&req.transaction_id.to_string())
        });
        Ok(v1_6::StopTransactionResponse::default())
    })
    // OCPP 2.0.1
    .on(|_: Cx, _: v2_0_1::BootNotificationRequest| async {
        let accepted = v2_0_1::RegistrationStatusEnum::Accepted;
        Ok(v2_0_1::BootNotificationResponse::new(
            DateTime::now(),
            300,
            accepted,
        ))
    })
    .on(|_: Cx, _: v2_0_1::HeartbeatRequest| async {
        Ok(v2_0_1::HeartbeatResponse::new(DateTime::now()))
    })
    .on(|s: Cx, req: v2_0_1::StatusNotificationRequest| async move {
        let connector = format!("{}/{}", req.evse_id, req.connector_id);
        station(&s, |st| {
            st.statuses
                .insert(connector, req.connector_status.to_string())
        });
        Ok(v2_0_1::StatusNotificationResponse::default())
    })
    .on(|s: Cx, req: v2_0_1::MeterValuesRequest| async move {
        let energy = Some(v2_0_1::MeasurandEnum::EnergyActiveImportRegister);
        let samples = req.meter_value.iter().flat_map(|m| &m.sampled_value);
        let reading = samples
            .filter(|v| v.measurand.is_none() || v.measurand == energy)
            .last();
        if let Some(reading) = reading {
            station(&s, |st| {
                st.energy.insert(req.evse_id.to_string(), reading.value)
            });
        }
        Ok(v2_0_1::MeterValuesResponse::default())
    })
    .on(|s: Cx, req: v2_0_1::AuthorizeRequest| async move {
        Ok(v2_0_1::AuthorizeResponse::new(id_token_info(
            &s,
            &req.id_token,
        )))
    })
    .on(|s: Cx, req: v2_0_1::TransactionEventRequest| async move {
        let id = req.transaction_info.transaction_id.clone();
        station(&s, |st| match req.event_type {
            v2_0_1::TransactionEventEnum::Ended => drop(st.transactions.remove(&id)),
            _ => {
                let transaction = st.transactions.entry(id).or_default();
                if let Some(evse) = &req.evse {
                    transaction.connector = Some(evse.id.to_string());
                }
                if let Some(token) = &req.id_token {
                    transaction.token = Some(token.id_token.clone());
                }
            }
        });
        let mut response = v2_0_1::TransactionEventResponse::default();
        if let Some(token) = &req.id_token {
            response = response.with_id_token_info(id_token_info(&s, token));
        }
        Ok(response)
    })
}
// --- OCPP handling: end ---

/// What the HTTP handlers share.
#[derive(Debug, Clone)]
struct Api {
    app: Arc<App>,
    charge_points: ChargePoints,
    /// The last 2.0.1 remoteStartId given out.
    last_remote_start: Arc<AtomicI32>,
}

fn http_api(app: Arc<App>, charge_points: ChargePoints) -> axum::Router {
    let api = Api {
        app,
        charge_points,
        last_remote_start: Arc::default(),
    };
    axum::Router::new()
        .route("/chargepoints", get(list_charge_points))
        .route("/chargepoints/{id}/remote-start", post(remote_start))
        .with_state(api)
}

fn json_response(status: StatusCode, body: Value) -> Response {
    let content_type = [(header::CONTENT_TYPE, "application/json")];
    (status, content_type, body.to_string()).into_response()
}

/// `GET /chargepoints`: the charge points known (connected or not), by identity.
async fn list_charge_points(State(api): State<Api>) -> Response {
    let stations = api.app.stations.lock().unwrap();
    let mut identities: BTreeSet<ChargePointIdentity> = stations.keys().cloned().collect();
    identities.extend(api.charge_points.identities());
    let list: Vec<Value> = identities
        .iter()
        .map(|identity| {
            let connected = api.charge_points.get(identity.as_str());
            let station = stations.get(identity);
            let transactions: Vec<Value> = station
                .iter()
                .flat_map(|station| &station.transactions)
                .map(|(id, transaction)| {
                    json!({
                        "transactionId": id,
                        "connector": transaction.connector,
                        "idTag": transaction.token,
                    })
                })
                .collect();
            json!({
                "identity": identity.as_str(),
                "connected": connected.is_some(),
                "version": connected.map(|cp| cp.version().as_str()),
                "statuses": station.map(|station| &station.statuses),
                "energy": station.map(|station| &station.energy),
                "transactions": transactions,
            })
        })
        .collect();
    json_response(StatusCode::OK, Value::Array(list))
}

/// `POST /chargepoints/{id}/remote-start`: a remote start typed for the charge point's
/// version; answers its status.
async fn remote_start(
    State(api): State<Api>,
    Path(identity): Path<String>,
    body: Bytes,
) -> Response {
    let id_tag = match serde_json::from_slice::<Value>(&body) {
        _ if body.is_empty() => None,
        Ok(Value::Object(body)) => body.get("idTag").and_then(Value::as_str).map(str::to_owned),
        _ => {
            let error = json!({ "error": "the body is not {\"idTag\": \"..\"}" });
            return json_response(StatusCode::BAD_REQUEST, error);
        }
    };
    let Some(id_tag) = id_tag.or_else(|| api.app.tokens.iter().next().cloned()) else {
        let error = json!({ "error": "no idTag given and no token known" });
        return json_response(StatusCode::BAD_REQUEST, error);
    };
    let Some(cp) = api.charge_points.get(&identity) else {
        return json_response(StatusCode::NOT_FOUND, json!({ "error": "not connected" }));
    };
    let status = match cp.version() {
        OcppVersion::V1_6 => {
            let request = v1_6::RemoteStartTransactionRequest::new(id_tag);
            cp.call(request)
                .await
                .map(|answer| answer.status.to_string())
        }
        OcppVersion::V2_0_1 => {
            let remote_start_id = api.last_remote_start.fetch_add(1, Relaxed) + 1;
            let token = v2_0_1::IdToken::new(id_tag, v2_0_1::IdTokenEnum::Central);
            let request = v2_0_1::RequestStartTransactionRequest::new(token, remote_start_id);
            cp.call(request)
                .await
                .map(|answer| answer.status.to_string())
        }
        other => {
            let error = json!({ "error": format!("OCPP {} is not served", other.as_str()) });
            return json_response(StatusCode::NOT_IMPLEMENTED, error);
        }
    };
    match status {
        Ok(status) => json_response(StatusCode::OK, json!({ "status": status })),
        Err(CallFailure::NotConnected) => {
            json_response(StatusCode::NOT_FOUND, json!({ "error": "not connected" }))
        }
        Err(failure) => {
            let body = json!({
                "error": failure.to_string(),
                "mayHaveReachedChargePoint": failure.may_have_reached_peer(),
            });
            json_response(StatusCode::BAD_GATEWAY, body)
        }
    }
}

const USAGE: &str =
    "usage: router-csms [--listen ADDR (127.0.0.1:9000)] [--http ADDR (127.0.0.1:9001)]";

/// `--listen ADDR` and `--http ADDR`.
fn options() -> Result<(String, String), String> {
    let mut listen = "127.0.0.1:9000".to_owned();
    let mut http = "127.0.0.1:9001".to_owned();
    let mut args = std::env::args().skip(1);
    while let Some(option) = args.next() {
        let target = match option.as_str() {
            "--listen" => &mut listen,
            "--http" => &mut http,
            _ => return Err(format!("unknown option {option}\n{USAGE}")),
        };
        *target = args
            .next()
            .ok_or(format!("{option} needs an address\n{USAGE}"))?;
    }
    Ok((listen, http))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let (listen, http) = match options() {
        Ok(addresses) => addresses,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    let app = Arc::new(App {
        tokens: HashSet::from(["TAG-OK".to_owned()]),
        ..App::default()
    });
    let config = ConnectionConfig::default().versions(vec![OcppVersion::V1_6, OcppVersion::V2_0_1]);
    let server = Server::builder()
        .config(config)
        .handler(router(Arc::clone(&app)))
        .bind(listen)
        .await?;
    let http_listener = tokio::net::TcpListener::bind(http).await?;
    println!(
        "listening on {} http {}",
        server.local_addr()?,
        http_listener.local_addr()?
    );
    let api = http_api(app, server.charge_points());
    tokio::spawn(async move {
        if let Err(e) = axum::serve(http_listener, api).await {
            eprintln!("http: {e}");
        }
    });
    server.run().await?;
    Ok(())
}
