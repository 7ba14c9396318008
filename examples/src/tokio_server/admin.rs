//! The admin HTTP interface on axum: axum (hyper) reads and writes HTTP, the routes and
//! answers are [`crate::csms::admin`]'s (the same as the mio server's), and a command to a
//! charge point is a `ChargePoint::call_raw` on its handle in [`ChargePoints`]; on a cluster
//! node, a command for a charge point not connected here goes to the registry's
//! [`Cluster::call`](ocpp_cluster::Cluster::call) with the body as it came (the holder decodes
//! it for its connection's version), answered as mio-server answers it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use ocpp_server_core::{CallOutcome, ChargePointIdentity};
use ocpp_tokio::ChargePoints;
use serde_json::Value;
use tokio::sync::watch;

use super::handler::{call_ended, App};
use crate::csms::admin::{self, AdminRequest, ClusterRead, HttpResponse, Route, MAX_BODY};
use crate::csms::admin_auth::{AdminAuth, Authorization};

/// What the admin handlers share.
#[derive(Debug, Clone)]
pub(super) struct Admin {
    pub(super) app: Arc<App>,
    pub(super) charge_points: ChargePoints,
    /// Becomes true when the server shuts down: commands still waiting answer 503.
    pub(super) stop: watch::Receiver<bool>,
    /// How long a command routed through the cluster may take (the connections' call
    /// timeout).
    pub(super) call_timeout: Duration,
    /// Who may use the interface: checked first, for every route.
    pub(super) auth: AdminAuth,
}

/// The router: every path goes to [`admin::route`]; bodies past [`MAX_BODY`] get 413.
pub(super) fn router(admin: Admin) -> Router {
    Router::new()
        .fallback(serve)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(admin)
}

async fn serve(
    State(admin): State<Admin>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request = AdminRequest {
        method: method.as_str().to_owned(),
        path: uri.path().to_owned(),
        body: body.to_vec(),
        authorization: headers
            .get(header::AUTHORIZATION)
            .map(|value| Authorization::new(value.as_bytes())),
    };
    if let Err(response) = admin.auth.check(&request) {
        return into_response(response);
    }
    if let Some(response) = cluster_read(&admin, &request).await {
        return into_response(response);
    }
    if let Some(response) = remote_command(&admin, &request).await {
        return into_response(response);
    }
    let response = match admin::route(&admin.app.csms, &request) {
        Route::Respond(response) => response,
        Route::Call { identity, request } => match admin.charge_points.get(identity.as_str()) {
            None => HttpResponse::not_connected(&identity),
            Some(cp) => {
                let version = cp.version();
                let action = request.action();
                let deadline = Instant::now() + admin.call_timeout;
                let response = match call(&admin, &identity, cp, request, deadline).await {
                    Ok(outcome) => without_id(admin::call_response(version, "", action, &outcome)),
                    Err(response) => response,
                };
                tracing::info!(%identity, action, status = response.status, "admin CALL ended");
                response
            }
        },
        Route::Calls {
            identity,
            mut split,
        } => {
            // One CALL in flight at a time (OCPP-J): each chunk once the previous one is
            // answered; the split gives the one answer. Every chunk carries the command's
            // deadline (as on mio-server): none is written after it.
            let action = split.action();
            let deadline = split.deadline(Instant::now(), admin.call_timeout);
            let response = loop {
                let Some(request) = split.next_request() else {
                    break HttpResponse::error(500, "no chunk left to send");
                };
                let Some(cp) = admin.charge_points.get(identity.as_str()) else {
                    break split.fail(HttpResponse::not_connected(&identity));
                };
                match call(&admin, &identity, cp, request, deadline).await {
                    Ok(outcome) => {
                        if let Some(response) = split.complete(&outcome) {
                            break response;
                        }
                    }
                    Err(response) => break split.fail(response),
                }
            };
            tracing::info!(%identity, action, chunks = split.chunks(), status = response.status, "admin CALLs ended");
            response
        }
    };
    into_response(response)
}

/// Sends one CALL of an admin command and waits for its outcome; `Err` is the answer when
/// the server shuts down first. Not written after the command's `deadline` (the core's
/// rule): the admin caller has its answer by then, and a CALL still queued behind another
/// never goes out later.
async fn call(
    admin: &Admin,
    identity: &ChargePointIdentity,
    cp: ocpp_tokio::ChargePoint,
    request: ocpp_server_core::Request,
    deadline: Instant,
) -> Result<CallOutcome, HttpResponse> {
    let action = request.action();
    tracing::info!(%identity, action, "admin CALL");
    // In a task of its own, so that the CSMS hears of the outcome even if the HTTP client
    // goes away.
    let csms = Arc::clone(&admin.app.csms);
    let call = tokio::spawn(async move {
        let outcome = cp.call_raw_with_deadline(request, deadline).await;
        call_ended(&csms, &cp, action, &outcome);
        outcome
    });
    let outcome = until_stopped(&admin.stop, call).await?;
    outcome.map_err(|_| HttpResponse::error(500, "the CALL's task failed"))
}

/// How long a command waits for its CALL's outcome once the server stops: closing the
/// connections ends a local CALL at once (not sent, or sent and unanswered).
const STOP_GRACE: Duration = Duration::from_secs(1);

/// `work`'s output; once the server stops, for [`STOP_GRACE`] more at most, then 504 (the CALL
/// may have run): never the retryable 503 for a CALL whose fate is not known.
async fn until_stopped<T>(
    stop: &watch::Receiver<bool>,
    work: impl std::future::Future<Output = T>,
) -> Result<T, HttpResponse> {
    tokio::pin!(work);
    let mut stop = stop.clone();
    tokio::select! {
        done = &mut work => return Ok(done),
        _ = stop.wait_for(|stopping| *stopping) => {}
    }
    tokio::time::timeout(STOP_GRACE, work)
        .await
        .map_err(|_| HttpResponse::shut_down_before_answer())
}

/// On a cluster node, a read answered from the cluster's presence records too (`None`: not
/// one, or not a cluster node): `GET /chargepoints`, and `GET /chargepoints/ID` for a charge
/// point connected elsewhere.
async fn cluster_read(admin: &Admin, request: &AdminRequest) -> Option<HttpResponse> {
    let cluster = admin.charge_points.cluster()?;
    let csms = &admin.app.csms;
    let read = admin::cluster_read(csms, &request.method, &request.path)?;
    Some(match read {
        ClusterRead::List => {
            csms.metrics().admin_requests.inc();
            let located = cluster.list(admin::CLUSTER_LIST_LIMIT).await;
            admin::cluster_list_response(csms, cluster.node_id(), &located)
        }
        ClusterRead::One(identity) => {
            let located = cluster.locate(identity.as_str()).await;
            let local = match admin::route(csms, request) {
                Route::Respond(response) => response,
                _ => HttpResponse::error(500, "a read routed as a command"),
            };
            admin::cluster_one_response(local, &located)
        }
    })
}

/// A command for a charge point not connected here, on a cluster node: sent through the
/// cluster (`None`: not one, or local).
async fn remote_command(admin: &Admin, request: &AdminRequest) -> Option<HttpResponse> {
    let cluster = admin.charge_points.cluster()?;
    let (identity, action) = admin::command_target(&request.method, &request.path)?;
    if admin.charge_points.get(identity.as_str()).is_some() {
        return None; // local: as without a cluster
    }
    admin.app.csms.metrics().admin_requests.inc();
    let body = match admin::command_body(&request.body) {
        Ok(body) => body.to_owned(),
        Err(response) => return Some(response),
    };
    tracing::info!(%identity, action, "admin CALL routed through the cluster");
    // In a task of its own, like a local command: the CALL's fate does not depend on the
    // HTTP client staying.
    let call = {
        let (cluster, identity, action) = (cluster.clone(), identity.clone(), action.clone());
        let timeout = admin.call_timeout;
        tokio::spawn(async move {
            cluster
                .call(identity.as_str(), &action, &body, timeout)
                .await
        })
    };
    let response = match until_stopped(&admin.stop, call).await {
        Ok(Ok(result)) => admin::remote_call_response(&action, &result),
        Ok(Err(_)) => HttpResponse::error(500, "the cluster call failed"),
        Err(response) => response,
    };
    tracing::info!(%identity, action, status = response.status, "cluster CALL completed");
    Some(response)
}

/// `ChargePoint::call_raw` does not tell the CALL's message id: the answer shows `"id": null`
/// rather than a made-up one.
fn without_id(mut response: HttpResponse) -> HttpResponse {
    if let Ok(mut value) = serde_json::from_slice::<Value>(&response.body) {
        if let Some(id) = value.get_mut("id") {
            *id = Value::Null;
            response.body = value.to_string().into_bytes();
        }
    }
    response
}

/// The CSMS's answer as axum's; `Connection: close` as before (one request per connection).
fn into_response(response: HttpResponse) -> Response {
    let status = StatusCode::from_u16(response.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut answer = (
        status,
        [
            (header::CONTENT_TYPE, response.content_type),
            (header::CONNECTION, "close"),
        ],
        Body::from(response.body),
    )
        .into_response();
    if let Some(challenge) = response.www_authenticate {
        answer.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(challenge),
        );
    }
    answer
}
