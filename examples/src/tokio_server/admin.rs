//! The admin HTTP interface on hyper (HTTP/1, one request per connection, within the
//! [`AdminLimits`]) and axum's router: hyper reads and writes HTTP, axum routes by the table
//! [`admin::ROUTES`] (one axum route per pattern, each method its entry: [`router`]), and the
//! answers are [`ocpp_reference_csms::admin`]'s (the same as the mio server's); a command to a
//! charge point is a `ChargePoint::call_raw` on its handle in [`ChargePoints`]; on a cluster
//! node, a command for a charge point not connected here goes to the registry's
//! [`ChargePoints::call_json`] with the body as it came (the holder decodes it for its
//! connection's version), answered as mio-server answers it.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, MethodRouter};
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use ocpp_cluster::Cluster;
use ocpp_proto::accept::{after_accept_error, AcceptRetry};
use ocpp_proto::{CallOutcome, ChargePointIdentity};
use ocpp_tokio::ChargePoints;
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};
use tower_service::Service;

use super::handler::App;
use crate::server_config::AdminLimits;
use ocpp_reference_csms::admin::{
    self, AdminRequest, AdminRoute, ClusterRead, HttpResponse, Route, MAX_BODY,
};
use ocpp_reference_csms::admin_auth::{
    AdminAuth, AdminGuard, AdminRefused, AdminSlots, AuthorizationHeader, FetchHeaders,
};

/// What the admin handlers share.
#[derive(Debug, Clone)]
pub(super) struct Admin {
    pub(super) app: Arc<App>,
    pub(super) charge_points: ChargePoints,
    /// The cluster node's handle, on a cluster node: its presence records.
    pub(super) cluster: Option<Cluster>,
    /// Becomes true when the server shuts down: commands still waiting answer 503.
    pub(super) stop: watch::Receiver<bool>,
    /// How long a command routed through the cluster may take (the connections' call
    /// timeout).
    pub(super) call_timeout: Duration,
    /// Who may use the interface: checked first, for every route.
    pub(super) auth: AdminAuth,
    /// What browsers may not send (checked on the head, before the token).
    pub(super) guard: AdminGuard,
    /// How many connections, how long each may take.
    pub(super) limits: AdminLimits,
}

/// A request's connection: its slot ([`Open`]), for [`handle`] (a request extension).
#[derive(Debug, Clone)]
struct Conn {
    open: Arc<Mutex<Open>>,
    id: u64,
}

/// The admin routes as axum's: one route per pattern of [`admin::ROUTES`], each method
/// its entry (handed to [`admin::route_matched`]). Another method on a known path (405,
/// `Allow`) and an unknown path (404) go the same way, through [`handle`]'s checks first, by
/// the fallbacks.
fn router(admin: Admin) -> Router {
    let mut router = Router::new();
    let mut patterns: Vec<&'static str> = Vec::new();
    for entry in admin::ROUTES {
        if !patterns.contains(&entry.path) {
            patterns.push(entry.path);
        }
    }
    for pattern in patterns {
        let mut methods = MethodRouter::new();
        for entry in admin::ROUTES.iter().filter(|entry| entry.path == pattern) {
            let Some(filter) = Method::from_bytes(entry.method.as_bytes())
                .ok()
                .and_then(|method| MethodFilter::try_from(method).ok())
            else {
                continue;
            };
            methods = methods.on(
                filter,
                move |State(admin): State<Admin>,
                      Extension(conn): Extension<Conn>,
                      request: Request<Body>| {
                    handle(admin, conn, Some(entry), request)
                },
            );
        }
        router = router.route(pattern, methods.fallback(unrouted));
    }
    router.fallback(unrouted).with_state(admin)
}

/// A request no route of the table took (404, 405: [`admin::route`] says which).
async fn unrouted(
    State(admin): State<Admin>,
    Extension(conn): Extension<Conn>,
    request: Request<Body>,
) -> Result<Response, Infallible> {
    handle(admin, conn, None, request).await
}

/// The admin connections open: their slots ([`AdminSlots`]) and how to close each one.
#[derive(Debug, Default)]
struct Open {
    slots: Option<AdminSlots<u64>>,
    closers: HashMap<u64, Arc<Notify>>,
}

/// Serves the admin interface on `listener` until `stop`: each connection is served by
/// hyper's HTTP/1 (one request, then closed), within the [`AdminLimits`]: at most
/// `max_connections` open (an idle one makes room for a new one, else 503), the head within
/// `header_timeout` (hyper's own `header_read_timeout`, and a deadline of ours that also
/// covers a client that sends nothing), the body within `body_timeout`.
pub(super) async fn serve(listener: TcpListener, admin: Admin, stop: watch::Receiver<bool>) {
    let stopped = stopped(stop);
    tokio::pin!(stopped);
    let open = Arc::new(Mutex::new(Open {
        slots: Some(AdminSlots::new(admin.limits.max_connections)),
        closers: HashMap::new(),
    }));
    let router = router(admin.clone());
    let mut next_id = 0u64;
    // The connections' tasks: once the server stops, their requests in progress get their
    // answer (a command its CALL's outcome, or 504) before this returns.
    let mut connections = tokio::task::JoinSet::new();
    loop {
        // Finished connections leave the set as they go.
        while connections.try_join_next().is_some() {}
        let socket = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((socket, _)) => socket,
                Err(e) => {
                    tracing::debug!("admin accept: {e}");
                    if let AcceptRetry::After(wait) = after_accept_error(&e) {
                        tokio::time::sleep(wait).await;
                    }
                    continue;
                }
            },
            () = &mut stopped => {
                while connections.join_next().await.is_some() {}
                return;
            }
        };
        next_id += 1;
        let id = next_id;
        let metrics = admin.app.csms.metrics();
        let opened = {
            let mut open = lock(&open);
            let opened = open.slots.as_mut().map_or(Ok(None), |slots| slots.open(id));
            if let Ok(evicted) = opened {
                if let Some(closer) = evicted.and_then(|old| open.closers.remove(&old)) {
                    closer.notify_one();
                }
                open.closers.insert(id, Arc::new(Notify::new()));
            }
            opened
        };
        match opened {
            Ok(None) => {}
            Ok(Some(_)) => {
                metrics.admin_refused(AdminRefused::Limit).inc();
                tracing::debug!("admin connection limit: the oldest idle one closed");
            }
            Err(full) => {
                metrics.admin_refused(AdminRefused::Limit).inc();
                tokio::spawn(refuse_busy(socket, full.to_string()));
                continue;
            }
        }
        let closer = lock(&open).closers.get(&id).cloned().unwrap_or_default();
        connections.spawn(connection(
            socket,
            id,
            router.clone(),
            admin.clone(),
            Arc::clone(&open),
            closer,
        ));
    }
}

/// Completes once the server stops.
async fn stopped(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|stopping| *stopping).await;
}

fn lock(open: &Mutex<Open>) -> std::sync::MutexGuard<'_, Open> {
    open.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Every slot serves a request: 503 and close (bounded: a client that does not read gets
/// nothing).
async fn refuse_busy(mut socket: TcpStream, why: String) {
    let busy = HttpResponse::error(503, &why).to_bytes();
    let _ = tokio::time::timeout(Duration::from_secs(1), socket.write_all(&busy)).await;
}

/// One admin connection, in its slot until it ends: closed when its head does not come in
/// time, when a newer connection takes its slot while it is still idle, or (gracefully) when
/// the server stops.
async fn connection(
    socket: TcpStream,
    id: u64,
    router: Router,
    admin: Admin,
    open: Arc<Mutex<Open>>,
    closer: Arc<Notify>,
) {
    let _ = socket.set_nodelay(true);
    let head_in = Arc::new(AtomicBool::new(false));
    let stop = stopped(admin.stop.clone());
    tokio::pin!(stop);
    let header_timeout = admin.limits.header_timeout;
    let metrics_of = Arc::clone(&admin.app);
    let service = {
        let (head_in, open) = (Arc::clone(&head_in), Arc::clone(&open));
        hyper::service::service_fn(move |mut request: Request<Incoming>| {
            head_in.store(true, Ordering::Relaxed);
            let conn = Conn {
                open: Arc::clone(&open),
                id,
            };
            request.extensions_mut().insert(conn);
            let mut router = router.clone();
            async move {
                std::future::poll_fn(|cx| {
                    Service::<Request<Incoming>>::poll_ready(&mut router, cx)
                })
                .await?;
                router.call(request).await
            }
        })
    };
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        // A backstop only: our own deadline below closes (and counts) a head that did not
        // come in time first; at the same instant, the two timers would race for it.
        .header_read_timeout(header_timeout + HEADER_BACKSTOP)
        .keep_alive(false)
        .serve_connection(TokioIo::new(socket), service);
    tokio::pin!(conn);
    let head_deadline = tokio::time::sleep(header_timeout);
    tokio::pin!(head_deadline);
    let mut stopping = false;
    loop {
        tokio::select! {
            _ = &mut conn => break,
            _ = closer.notified() => break,
            _ = &mut head_deadline, if !head_in.load(Ordering::Relaxed) => {
                metrics_of.csms.metrics().admin_refused(AdminRefused::Timeout).inc();
                break;
            }
            () = &mut stop, if !stopping => {
                stopping = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
    let mut open = lock(&open);
    if let Some(slots) = open.slots.as_mut() {
        slots.close(id);
    }
    open.closers.remove(&id);
}

/// How long after our own head deadline hyper's `header_read_timeout` would close.
const HEADER_BACKSTOP: Duration = Duration::from_secs(1);

/// One request, `matched` by the router to an entry of [`admin::ROUTES`] (or to none): the
/// browser checks on the head, the body within its timeout, the token, then the route.
async fn handle(
    admin: Admin,
    conn: Conn,
    matched: Option<&'static AdminRoute>,
    request: Request<Body>,
) -> Result<Response, Infallible> {
    let Conn { open, id } = conn;
    let (parts, body) = request.into_parts();
    let metrics = admin.app.csms.metrics();
    let fetch = fetch_headers(&parts.headers);
    if let Err(response) = admin.guard.admit(&fetch, metrics) {
        return Ok(into_response(response));
    }
    let read = axum::body::to_bytes(body, MAX_BODY);
    let body = match tokio::time::timeout(admin.limits.body_timeout, read).await {
        Ok(Ok(body)) => body,
        Ok(Err(_)) => return Ok(into_response(HttpResponse::text(413, "body too large"))),
        Err(_) => {
            metrics.admin_refused(AdminRefused::Timeout).inc();
            let response = HttpResponse::error(408, "the request body did not come in time");
            return Ok(into_response(response));
        }
    };
    let caller_timeout = match parts.headers.get(admin::DEADLINE_HEADER) {
        Some(value) => match admin::caller_timeout(value.as_bytes()) {
            Ok(timeout) => Some(timeout),
            Err(response) => return Ok(into_response(response)),
        },
        None => None,
    };
    let request = AdminRequest {
        method: parts.method.as_str().to_owned(),
        path: parts.uri.path().to_owned(),
        body: body.to_vec(),
        authorization: parts
            .headers
            .get(header::AUTHORIZATION)
            .map(|value| AuthorizationHeader::new(value.as_bytes())),
        caller_timeout,
    };
    if let Err(response) = admin.auth.admit(&request, metrics) {
        return Ok(into_response(response));
    }
    // A request let in keeps its connection's slot until answered.
    if let Some(slots) = lock(&open).slots.as_mut() {
        slots.serving(id);
    }
    Ok(serve_request(&admin, request, matched).await)
}

/// What [`AdminGuard`] looks at, from hyper's headers.
fn fetch_headers(headers: &HeaderMap) -> FetchHeaders<'_> {
    let get = |name| headers.get(name).map(HeaderValue::as_bytes);
    FetchHeaders {
        host: get(header::HOST),
        origin: get(header::ORIGIN),
        sec_fetch_site: get(HeaderName::from_static("sec-fetch-site")),
        content_type: get(header::CONTENT_TYPE),
        has_body: headers.contains_key(header::TRANSFER_ENCODING)
            || get(header::CONTENT_LENGTH).is_some_and(|length| length.trim_ascii() != b"0"),
    }
}

async fn serve_request(
    admin: &Admin,
    request: AdminRequest,
    matched: Option<&'static AdminRoute>,
) -> Response {
    if let Some(response) = cluster_read(admin, &request).await {
        return into_response(response);
    }
    if let Some(response) = remote_command(admin, &request).await {
        return into_response(response);
    }
    // The command's deadline: the server's, or the caller's when it comes first.
    let now = Instant::now();
    let callers = |server: Instant| request.deadline(now, server);
    let routed = match matched {
        Some(matched) => admin::route_matched(&admin.app.csms, &request, matched),
        None => admin::route(&admin.app.csms, &request),
    };
    let response = match routed {
        Route::Respond(response) => response,
        Route::Call { identity, request } => match admin.charge_points.get(identity.as_str()) {
            None => HttpResponse::not_connected(&identity),
            Some(cp) => {
                let version = cp.version();
                let action = request.action();
                let deadline = callers(now + admin.call_timeout);
                let response = match call(admin, &identity, cp, request, deadline).await {
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
            let deadline = callers(split.deadline(now, admin.call_timeout));
            let response = loop {
                let Some(request) = split.next_request() else {
                    break HttpResponse::error(500, "no chunk left to send");
                };
                let Some(cp) = admin.charge_points.get(identity.as_str()) else {
                    break admin::split_failed(&split, HttpResponse::not_connected(&identity));
                };
                match call(admin, &identity, cp, request, deadline).await {
                    Ok(outcome) => {
                        if let Some(end) = split.complete(&outcome) {
                            break admin::split_response(&split, &end);
                        }
                    }
                    Err(response) => break admin::split_failed(&split, response),
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
    request: ocpp_proto::Request,
    deadline: Instant,
) -> Result<CallOutcome, HttpResponse> {
    let action = request.action();
    tracing::info!(%identity, action, "admin CALL");
    // In a task of its own, so that the CSMS hears of the outcome even if the HTTP client
    // goes away.
    let csms = Arc::clone(&admin.app.csms);
    let call = tokio::spawn(async move {
        let outcome = cp.call_raw_with_deadline(request, deadline).await;
        csms.on_call_outcome(cp.identity(), action, &outcome);
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
    let cluster = admin.cluster.as_ref()?;
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
/// cluster as JSON text ([`ChargePoints::call_json`]; `None`: not one, or local).
async fn remote_command(admin: &Admin, request: &AdminRequest) -> Option<HttpResponse> {
    admin.charge_points.remote()?;
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
        let (charge_points, identity, action) = (
            admin.charge_points.clone(),
            identity.clone(),
            action.clone(),
        );
        let timeout = request.call_timeout(admin.call_timeout);
        tokio::spawn(async move {
            charge_points
                .call_json(identity.as_str(), None, &action, &body, timeout)
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
    if let Some(allow) = response.allow.and_then(|a| HeaderValue::from_str(&a).ok()) {
        answer.headers_mut().insert(header::ALLOW, allow);
    }
    answer
}
