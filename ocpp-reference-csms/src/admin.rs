//! The admin HTTP interface, minus the sockets: parse a request from bytes, route it, and
//! build the response bytes. The I/O loop owns the socket and, for a command, sends the CALL
//! to the charge point's connection and later turns its outcome into a response with
//! [`call_response`].
//!
//! | request | answer |
//! | --- | --- |
//! | `GET /chargepoints` | 200, JSON list of connected charge points; on a cluster node, every node's, each with its `node` (those of other nodes from the presence records: [`cluster_list_response`]; with Redis down, this node's in `{"complete": false, "chargepoints", "unknown"}`) |
//! | `GET /node/chargepoints` | 200, JSON list of the charge points connected to this node: on a cluster node its own only, never read from the presence records (a node's share at any size, with Redis down too); elsewhere as `GET /chargepoints` |
//! | `GET /chargepoints/{identity}` | 200, one charge point (connected or not; with its notification counts, last status per kind, boot policy, seqNo gaps, `items_per_message` (its DeviceDataCtrlr.ItemsPerMessage GetVariables / SetVariables, null unknown) and its last SignCertificate: `certificate` with our answer, the serial signed and its answer to CertificateSigned), 404 unknown |
//! | `GET /chargepoints/{identity}/notifications` | 200, the notifications kept, by action (`{"NotifyEvent":[{"at","payload"}...]...}`) |
//! | `GET /chargepoints/{identity}/notifications/{Action}` | 200, the notifications of one action, oldest first |
//! | `GET /chargepoints/{identity}/boot` | 200, `{"policy","default","answered"}`: its own policy (or null), the CSMS default, its last BootNotification's answer |
//! | `PUT /chargepoints/{identity}/boot` + `{"status":"Accepted"\|"Pending"\|"Rejected"}` | 200; the next BootNotification gets it (known or not yet seen) |
//! | `DELETE /chargepoints/{identity}/boot` | 200; back to the default policy |
//! | `GET /chargepoints/{identity}/security` | 200, `{"identity","profile","default","password"}`: its own security profile (1, 2, 3 or null), the server's, whether it has a Basic password |
//! | `PUT /chargepoints/{identity}/security` + `{"profile":1\|2\|3}` | 200; counts from its next connection ([`super::credentials`]); 409 without a credentials store (`--basic-auth` or `--security-profiles`) |
//! | `DELETE /chargepoints/{identity}/security` | 200; back to the server's profile |
//! | `PUT /chargepoints/{identity}/password` + `{"password":"..."}` | 200 `{"identity","password":true}` (never the password); the station's Basic password from its next connection on (a change asked of the station and not answered yet is dropped); 400 for an empty one, one longer than 64 characters or with control characters; 409 without a credentials store |
//! | `DELETE /chargepoints/{identity}/password` | 200; the station has no password (Basic authentication refuses it) |
//! | `POST /chargepoints/{identity}/call/{Action}` + JSON body | [`Route::Call`]: 200 with the CALLRESULT, 502 CALLERROR, 504 timeout; 404 not connected, 400 invalid payload; a SetChargingProfile / ClearChargingProfile is kept with the station's smart-charging state (GetCompositeSchedule, GetChargingProfiles go this way too); a SetVariables `SecurityCtrlr.BasicAuthPassword` / ChangeConfiguration `AuthorizationKey` changes the Basic password once accepted ([`Csms::on_command`]); a GetVariables / SetVariables with more entries than the station's ItemsPerMessage is [`Route::Calls`]: several CALLs, one answer ([`super::items_per_message`]) |
//! | `GET /chargepoints/{identity}/charging-profiles` | 200, its smart-charging state ([`super::smart_charging`]): `{"identity","site_limit","default_site_limit","charging_needs","charging_profiles"}`, each profile sent (ours and the operator's SetChargingProfile) with the station's answer and whether an Accepted ClearChargingProfile removed it |
//! | `GET /chargepoints/{identity}/site-limit` | 200, `{"identity","site_limit","default"}` (`{"amps","watts"}` or null) |
//! | `PUT /chargepoints/{identity}/site-limit` + `{"amps":A}` and/or `{"watts":W}` | the station's own site limit (in memory), then a SetChargingProfile for each EVSE with an active transaction (K16): one is a [`Route::Call`] (answered as `POST .../call/SetChargingProfile`), several a [`Route::Calls`] sequence (one answer, `result.results` in order); none: 200 `{"identity","site_limit","default","renegotiated":0}`; 400 for a limit that is not a number above 0 |
//! | `DELETE /chargepoints/{identity}/site-limit` | back to the default limit, then the same renegotiation |
//! | `POST /chargepoints/{identity}/renegotiate` | the same renegotiation, the limit unchanged |
//! | `GET /chargepoints/{identity}/transactions` | 200, its transactions from the store (`--database`: every node's on a shared database; the last ones ended included), the latest started first |
//! | `GET /transactions` | 200, every open transaction (`identity` in each) from the store, the latest started first, at most [`TRANSACTIONS_LIMIT`] |
//!
//! A transaction's JSON (in these lists and in `GET /chargepoints/{identity}`) has its `cost`
//! (so far, or final once ended) and `currency` when a tariff applies to its station, null
//! otherwise: derived from what is stored with the tariff that applies now
//! ([`Tariff::cost_of`](crate::Tariff::cost_of)). `GET /chargepoints/{identity}` also has `tariff` (its own) and
//! `cost_updates` (the CostUpdated sent: `transaction`, `total_cost`, `at`, `answer`).
//!
//! | request | answer |
//! | --- | --- |
//! | `GET /tariff` | 200, `{"default","cost_updated_interval_s"}`: the default tariff (`{"price_per_kwh","price_per_hour","currency"}`, prices as decimal strings) or null ([`super::tariff`]) |
//! | `GET /chargepoints/{identity}/tariff` | 200, `{"identity","tariff","default","applies"}`: its own tariff, the default, the one that applies (each null when none) |
//! | `PUT /chargepoints/{identity}/tariff` + `{"price_per_kwh"?, "price_per_hour"?, "currency"?}` | 200; its own tariff (committed to the store first), for its transactions from its next TransactionEvent on; prices as decimal strings or numbers, at least one (the other 0), at most 4 digits after the point; currency ISO 4217, default the default tariff's, else EUR; 400 otherwise |
//! | `DELETE /chargepoints/{identity}/tariff` | 200; back to the default tariff (or none: no cost) |
//! | `GET /tokens` | 200, `{"enabled","master_pass","tokens":{ID:{"status","group","expiry"}}}` |
//! | `GET /tokens/{idToken}` | 200, one token, 404 unknown |
//! | `PUT /tokens/{idToken}` + `{"status", "group"?, "expiry"?}` | 200; the first edit turns the store on (unknown tokens are refused from then on) |
//!
//! Every change an operator makes (tokens, boot policy, security profile, password) is
//! committed to the store first, when there is one ([`super::persistence`]): 503 if it
//! could not be, and then nothing changed.
//!
//! | request | answer |
//! | --- | --- |
//! | `DELETE /tokens/{idToken}` | 200, 404 unknown |
//! | `GET /metrics` | 200, Prometheus text |
//!
//! Before any route, both servers ask [`AdminAuth::check`](super::admin_auth::AdminAuth::check):
//! with admin tokens configured, a request without a right `Authorization: Bearer` gets 401.
//!
//! One request per connection (`Connection: close`): simple, and admin traffic is light.
//!
//! A command (`POST /chargepoints/{identity}/call/{Action}`, and one routed through the
//! cluster) takes the caller's deadline: `X-Deadline-Ms: <ms>`, how long the caller still
//! waits, from the server's reading of the request. The command's timeout is the shorter of it
//! and the server's own call timeout ([`AdminRequest::call_timeout`]); the CALL is not written
//! once it passed (503 `deadline_passed`, not sent), also when routed to another node, which
//! gets it with the command. A value that is not a number of milliseconds is refused (400).
//!
//! ```
//! use ocpp_reference_csms::admin::{self, AdminRequest, Route};
//! use ocpp_reference_csms::{Csms, CsmsConfig};
//! let csms = Csms::new(CsmsConfig::default());
//! let (request, _) = AdminRequest::parse(b"GET /chargepoints HTTP/1.1\r\n\r\n").unwrap().unwrap();
//! let Route::Respond(response) = admin::route(&csms, &request) else { panic!() };
//! assert_eq!(response.status, 200);
//! assert_eq!(response.body, b"[]");
//! ```

use ocpp_messages::version::OcppVersion;
use ocpp_proto::{CallFailure, CallOutcome, ChargePointIdentity, Delivery, RefusalReason, Request};
use serde_json::{json, Value};

mod cluster_reads;
mod http;
mod json;
mod routes;

pub use cluster_reads::{
    cluster_list_response, cluster_one_response, cluster_read, located_json, ClusterRead,
    CLUSTER_LIST_LIMIT,
};
pub use http::{
    caller_timeout, http_status, AdminRequest, HttpResponse, DEADLINE_HEADER, MAX_BODY, MAX_HEAD,
};
pub use json::{charge_point_json, TRANSACTIONS_LIMIT};
use json::{parse_identity, response_json};
pub use routes::{find, AdminHandler, AdminRoute, Matched, ROUTES};

pub use crate::command::decode_command;
use crate::{Csms, SplitCall, SplitEnd};

/// What to do with an admin request.
#[derive(Debug, Clone, PartialEq)]
pub enum Route {
    /// Answer at once.
    Respond(HttpResponse),
    /// Send this CALL to the charge point; answer with [`call_response`] when it completes.
    Call {
        /// The charge point.
        identity: ChargePointIdentity,
        /// The typed request, decoded and schema-checked for the charge point's version.
        request: Request,
    },
    /// Send these CALLs to the charge point one after another (a GetVariables or
    /// SetVariables longer than its ItemsPerMessage, [`super::items_per_message`]): each
    /// [`SplitCall::next_request`] once the previous one is answered, each outcome to
    /// [`SplitCall::complete`], which gives the one answer.
    Calls {
        /// The charge point.
        identity: ChargePointIdentity,
        /// The chunks and the results so far.
        split: Box<SplitCall>,
    },
}

/// Routes an admin request through [`ROUTES`] ([`find`]): a command for a charge point that
/// is not connected gets 404; a body that does not decode as the action's request in the
/// charge point's version gets 400; a path no route has 404; a known path with another method
/// 405 with `Allow`.
pub fn route(csms: &Csms, request: &AdminRequest) -> Route {
    csms.metrics().admin_requests.inc();
    dispatch(csms, request, find(&request.method, &request.path))
}

/// Routes an admin request a router already matched to `matched` (an entry of [`ROUTES`]:
/// tokio-server registers each as an axum route): as [`route`], which it falls back to when
/// `matched` is not the request's (another method, e.g. `HEAD` on a `GET` route).
pub fn route_matched(csms: &Csms, request: &AdminRequest, matched: &'static AdminRoute) -> Route {
    match matched.params(&request.path) {
        Some(params) if matched.method == request.method => {
            csms.metrics().admin_requests.inc();
            dispatch(csms, request, Matched::Route(matched, params))
        }
        _ => route(csms, request),
    }
}

fn dispatch(csms: &Csms, request: &AdminRequest, matched: Matched<'_>) -> Route {
    match matched {
        Matched::Route(route, params) => (route.handler)(csms, request, &params),
        Matched::MethodNotAllowed(allowed) => {
            let mut response = HttpResponse::error(405, "method not allowed");
            response.allow = Some(allowed.join(", "));
            Route::Respond(response)
        }
        Matched::NotFound => Route::Respond(HttpResponse::error(404, "no such resource")),
    }
}

/// The one answer to a split command ([`Route::Calls`]) once [`SplitCall::complete`] says it
/// ended: 200 `{"id":null,"action","result":{list: all results in order},"chunks"}` when
/// done; otherwise the failed chunk's answer as [`call_response`] maps its failure (502
/// CALLERROR or unreadable, 504 timeout...), through [`split_failed`].
pub fn split_response(split: &SplitCall, end: &SplitEnd) -> HttpResponse {
    match end {
        SplitEnd::Done(result) => HttpResponse::json(
            200,
            &json!({
                "id": null,
                "action": split.action(),
                "result": result,
                "chunks": split.chunks(),
            }),
        ),
        SplitEnd::Failed(failure) => split_failed(
            split,
            call_response(split.version(), "", split.action(), &Err(failure.clone())),
        ),
        SplitEnd::Unreadable(description) => {
            split_failed(split, HttpResponse::error(502, description))
        }
    }
}

/// The answer for a failure of a split command's chunk in flight (`response`, as the mapping
/// of that failure gives it: disconnected, not sent, ...), with `failed_chunk` (1-based),
/// `chunks` and the `partial_result` of the chunks that succeeded added to its JSON body (a
/// text body becomes `{"error": text}`).
pub fn split_failed(split: &SplitCall, response: HttpResponse) -> HttpResponse {
    let mut body: Value = serde_json::from_slice(&response.body).unwrap_or_else(
        |_| json!({ "error": String::from_utf8_lossy(&response.body).trim().to_owned() }),
    );
    if let Value::Object(fields) = &mut body {
        fields.insert("id".into(), Value::Null);
        fields.insert("failed_chunk".into(), json!(split.failed_chunk()));
        fields.insert("chunks".into(), json!(split.chunks()));
        fields.insert("partial_result".into(), split.partial_result());
    }
    HttpResponse::json(response.status, &body)
}

/// The answer to a command, for every outcome of its CALL: 200
/// `{"id","action","result"}` for a CALLRESULT, otherwise [`failure_response`] (the one
/// mapping every path uses: both servers, local or through the cluster).
pub fn call_response(
    version: OcppVersion,
    id: &str,
    action: &str,
    outcome: &CallOutcome,
) -> HttpResponse {
    match outcome {
        Ok(response) => HttpResponse::json(
            200,
            &json!({ "id": id, "action": action, "result": response_json(response) }),
        ),
        Err(failure) => failure_response(Some(version), Some(id), action, failure),
    }
}

/// The answer to a command whose CALL got no CALLRESULT, the same on every path: the status is
/// [`http_status`] (404 connected nowhere; 400 or 409 the request does not fit
/// the charge point; 503 not sent, retry; 504 sent and not answered, it may have run; 502 the
/// charge point answered with a CALLERROR or something unreadable), and the body names the
/// outcome and whether the CALL may have reached the charge point:
/// `{"id"?,"action","outcome","delivery","error"}`, where `error` is
/// `{"code","description","details"}` for a CALLERROR (the code spelled for `version`, or as
/// OCPP 2.x does when the charge point's version is not known here) and a message otherwise.
pub fn failure_response(
    version: Option<OcppVersion>,
    id: Option<&str>,
    action: &str,
    failure: &CallFailure,
) -> HttpResponse {
    let error = match failure {
        CallFailure::ErrorResponse {
            code,
            description,
            details,
        } => {
            let details: Value = serde_json::from_str(details).unwrap_or(Value::Null);
            let code = code.as_str(version.unwrap_or(OcppVersion::V2_0_1));
            json!({ "code": code, "description": description, "details": details })
        }
        CallFailure::InvalidResponse { description } => {
            json!({ "code": "InvalidResult", "description": description })
        }
        other => Value::String(failure_message(other)),
    };
    let mut body = json!({
        "action": action,
        "outcome": failure.name(),
        "delivery": failure.delivery().name(),
        "error": error,
    });
    if let Some(id) = id {
        body["id"] = Value::String(id.to_owned());
    }
    HttpResponse::json(http_status(failure), &body)
}

/// What an admin client reads in `error`: the failure, and what it means for a retry.
fn failure_message(failure: &CallFailure) -> String {
    match failure.delivery() {
        Delivery::NotSent => format!("{failure}: the CALL was not sent"),
        Delivery::Unknown => format!("{failure}: the CALL may have reached the charge point"),
        _ => failure.to_string(),
    }
}

/// A failure's answer when no action is at hand: `{"outcome","delivery","error"}`.
fn failure_only(failure: &CallFailure, message: String) -> HttpResponse {
    let body = json!({
        "outcome": failure.name(),
        "delivery": failure.delivery().name(),
        "error": message,
    });
    HttpResponse::json(http_status(failure), &body)
}

/// The answer to a command whose CALL the connection refused ([`Connection::call`]): the
/// refusal as the call's outcome, through [`call_response`] (never sent: 503, or 404 when the
/// connection is not open).
///
/// [`Connection::call`]: ocpp_proto::Connection::call
pub fn refused(version: OcppVersion, action: &str, reason: RefusalReason) -> HttpResponse {
    call_response(version, "", action, &Err(CallFailure::from(reason)))
}

/// The charge point and action of a command (`POST /chargepoints/ID/call/ACTION`), if
/// `method` and `path` name one: a cluster node sends a command for a charge point it does
/// not hold through the cluster, before [`route`] (which knows only local ones).
pub fn command_target(method: &str, path: &str) -> Option<(ChargePointIdentity, String)> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (identity, action) = match (method, segments.as_slice()) {
        ("POST", ["chargepoints", identity, "call", action]) => (*identity, *action),
        _ => return None,
    };
    let identity = ChargePointIdentity::from_path(&format!("/{identity}"), false).ok()?;
    Some((identity, action.to_owned()))
}

/// The body of a command sent through the cluster, as JSON text (`{}` when empty; the node
/// holding the charge point decodes it for its version), or the 400 answer.
pub fn command_body(body: &[u8]) -> Result<&str, HttpResponse> {
    let invalid = |description: &str| {
        let failure = CallFailure::InvalidRequest {
            description: description.to_owned(),
        };
        failure_only(&failure, failure_message(&failure))
    };
    let body = match std::str::from_utf8(body) {
        Ok("") => "{}",
        Ok(body) => body,
        Err(_) => return Err(invalid("body is not UTF-8")),
    };
    if serde_json::from_str::<Value>(body).is_err() {
        return Err(invalid("body is not JSON"));
    }
    Ok(body)
}

/// The answer to a command routed through the cluster (`ocpp-cluster`'s one answer): 200
/// `{"action","result"}`, or [`failure_response`] as for a local CALL.
pub fn remote_call_response(action: &str, result: &Result<String, CallFailure>) -> HttpResponse {
    match result {
        Ok(payload) => {
            let result = serde_json::from_str::<Value>(payload).unwrap_or(Value::Null);
            HttpResponse::json(200, &json!({ "action": action, "result": result }))
        }
        Err(failure) => failure_response(None, None, action, failure),
    }
}

#[cfg(test)]
mod tests;
