//! The admin HTTP interface, minus the sockets: parse a request from bytes, route it, and
//! build the response bytes. The I/O loop owns the socket and, for a command, sends the CALL
//! to the charge point's connection and later turns its outcome into a response with
//! [`call_response`].
//!
//! | request | answer |
//! | --- | --- |
//! | `GET /chargepoints` | 200, JSON list of connected charge points; on a cluster node, every node's, each with its `node` (those of other nodes from the presence records: [`cluster_list_response`]; with Redis down, this node's in `{"complete": false, "chargepoints", "unknown"}`) |
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
//! ([`Tariff::cost_of`]). `GET /chargepoints/{identity}` also has `tariff` (its own) and
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

use std::time::{Duration, Instant};

use ocpp_cluster::{ClusterError, Located};
use ocpp_messages::version::OcppVersion;
use ocpp_messages::{v1_6, v2_0_1, v2_1, DecodeError};
use ocpp_server_core::{
    CallFailure, CallOutcome, ChargePointIdentity, Delivery, RefusalReason, Request, Response,
};
use serde_json::{json, Value};

use super::admin_auth::Authorization;
use super::store::TransactionQuery;
use super::{
    date_time, BootPolicy, ChangeError, ChargePoint, Csms, Currency, Price, SecurityProfile,
    SiteLimit, SplitCall, Tariff, TokenEntry, TokenStatus, TokenStore, Transaction,
    TransactionStatusCheck, UnixTime,
};

/// The largest request head (request line and headers).
pub const MAX_HEAD: usize = 8 * 1024;
/// The largest request body (a CALL payload).
pub const MAX_BODY: usize = 64 * 1024;

/// A parsed HTTP request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminRequest {
    /// `GET`, `POST`...
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The body (`Content-Length` bytes).
    pub body: Vec<u8>,
    /// The `Authorization` header, for [`AdminAuth::check`](super::admin_auth::AdminAuth::check).
    pub authorization: Option<Authorization>,
    /// The caller's deadline ([`DEADLINE_HEADER`]): how long it still waits for a command's
    /// answer, from the server's reading of the request; `None` without the header.
    pub caller_timeout: Option<Duration>,
}

/// The header that carries the caller's deadline: the milliseconds it still waits.
pub const DEADLINE_HEADER: &str = "x-deadline-ms";

/// The value of [`DEADLINE_HEADER`], read: ASCII digits, milliseconds; 400 otherwise.
///
/// ```
/// use std::time::Duration;
/// use ocpp_reference_csms::admin::caller_timeout;
/// assert_eq!(caller_timeout(b" 1500").unwrap(), Duration::from_millis(1500));
/// assert_eq!(caller_timeout(b"soon").unwrap_err().status, 400);
/// ```
pub fn caller_timeout(value: &[u8]) -> Result<Duration, HttpResponse> {
    std::str::from_utf8(value)
        .ok()
        .map(str::trim)
        .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|v| v.parse::<u64>().ok())
        .map(Duration::from_millis)
        .ok_or_else(|| {
            HttpResponse::error(
                400,
                "X-Deadline-Ms: the milliseconds the caller still waits (digits)",
            )
        })
}

impl AdminRequest {
    /// Parses a request from the bytes read so far: `Ok(None)` needs more bytes;
    /// `Ok(Some((request, consumed)))`; `Err(response)` for a request to refuse (400, 413, 431).
    pub fn parse(buf: &[u8]) -> Result<Option<(AdminRequest, usize)>, HttpResponse> {
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut request = httparse::Request::new(&mut headers);
        let head_len = match request.parse(buf) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD => {
                return Err(HttpResponse::text(431, "request head too large"))
            }
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(httparse::Error::TooManyHeaders) => {
                return Err(HttpResponse::text(431, "too many headers"))
            }
            Err(e) => return Err(HttpResponse::text(400, &format!("bad request: {e}"))),
        };
        let mut content_length = 0usize;
        let mut authorization = None;
        let mut caller = None;
        for header in request.headers.iter() {
            if header.name.eq_ignore_ascii_case("authorization") {
                authorization = Some(Authorization::new(header.value));
            } else if header.name.eq_ignore_ascii_case(DEADLINE_HEADER) {
                caller = Some(caller_timeout(header.value)?);
            } else if header.name.eq_ignore_ascii_case("content-length") {
                content_length = std::str::from_utf8(header.value)
                    .ok()
                    .and_then(|v| v.trim().parse().ok())
                    .ok_or_else(|| HttpResponse::text(400, "bad Content-Length"))?;
            } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
                return Err(HttpResponse::text(411, "send a Content-Length"));
            }
        }
        if content_length > MAX_BODY {
            return Err(HttpResponse::text(413, "body too large"));
        }
        let total = head_len + content_length;
        if buf.len() < total {
            return Ok(None);
        }
        let target = request.path.unwrap_or("/");
        let path = target.split('?').next().unwrap_or("/");
        Ok(Some((
            AdminRequest {
                method: request.method.unwrap_or("GET").to_owned(),
                path: path.to_owned(),
                body: buf[head_len..total].to_vec(),
                authorization,
                caller_timeout: caller,
            },
            total,
        )))
    }

    /// A command's timeout: the server's own (`server`), or the caller's deadline when that is
    /// shorter.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ocpp_reference_csms::admin::AdminRequest;
    /// let raw = b"POST /chargepoints/CP-1/call/Reset HTTP/1.1\r\nX-Deadline-Ms: 200\r\n\r\n";
    /// let (request, _) = AdminRequest::parse(raw).unwrap().unwrap();
    /// assert_eq!(request.call_timeout(Duration::from_secs(30)), Duration::from_millis(200));
    /// ```
    pub fn call_timeout(&self, server: Duration) -> Duration {
        self.caller_timeout
            .map_or(server, |caller| caller.min(server))
    }

    /// A command's deadline from `now`: `server` (the server's own deadline for it), or the
    /// caller's when that comes first.
    pub fn deadline(&self, now: Instant, server: Instant) -> Instant {
        match self
            .caller_timeout
            .and_then(|caller| now.checked_add(caller))
        {
            Some(caller) => server.min(caller),
            None => server,
        }
    }
}

/// An HTTP response to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// The `Content-Type`.
    pub content_type: &'static str,
    /// The body.
    pub body: Vec<u8>,
    /// The `WWW-Authenticate` challenge of a 401 ([`super::admin_auth`]).
    pub www_authenticate: Option<&'static str>,
}

impl HttpResponse {
    /// A JSON response.
    pub fn json(status: u16, value: &Value) -> Self {
        HttpResponse {
            status,
            content_type: "application/json",
            body: value.to_string().into_bytes(),
            www_authenticate: None,
        }
    }

    /// A JSON `{"error": message}` response.
    pub fn error(status: u16, message: &str) -> Self {
        Self::json(status, &json!({ "error": message }))
    }

    /// A plain-text response.
    pub fn text(status: u16, text: &str) -> Self {
        HttpResponse {
            status,
            content_type: "text/plain; charset=utf-8",
            body: format!("{text}\n").into_bytes(),
            www_authenticate: None,
        }
    }

    /// 404 (`not_connected`, not sent): the charge point has no open connection.
    pub fn not_connected(identity: &ChargePointIdentity) -> Self {
        failure_only(
            &CallFailure::NotConnected,
            format!("charge point {identity} is not connected: the CALL was not sent"),
        )
    }

    /// 504 (`timeout`): no answer in time; the CALL may have reached the charge point.
    pub fn timeout() -> Self {
        failure_only(
            &CallFailure::Timeout,
            failure_message(&CallFailure::Timeout),
        )
    }

    /// 504 (`disconnected`): the server stops before the command's CALL has an outcome; it may
    /// have reached the charge point. Never the retryable 503, which would make a client send
    /// it again.
    pub fn shut_down_before_answer() -> Self {
        let failure = CallFailure::Disconnected;
        let message = format!(
            "the server shut down before the answer: {}",
            failure_message(&failure)
        );
        failure_only(&failure, message)
    }

    /// The response as bytes on the wire (HTTP/1.1, `Connection: close`).
    pub fn to_bytes(&self) -> Vec<u8> {
        let challenge = match self.www_authenticate {
            Some(challenge) => format!("WWW-Authenticate: {challenge}\r\n"),
            None => String::new(),
        };
        let mut out = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{challenge}Connection: close\r\n\r\n",
            self.status,
            reason_phrase(self.status),
            self.content_type,
            self.body.len()
        )
        .into_bytes();
        out.extend_from_slice(&self.body);
        out
    }
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Payload Too Large",
        431 => "Request Header Fields Too Large",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

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

/// Routes an admin request. A command for a charge point that is not connected gets 404; a
/// body that does not decode as the action's request in the charge point's version gets 400.
pub fn route(csms: &Csms, request: &AdminRequest) -> Route {
    csms.metrics().admin_requests.inc();
    let segments: Vec<&str> = request.path.trim_matches('/').split('/').collect();
    let method = request.method.as_str();
    let response = match (method, segments.as_slice()) {
        ("GET", ["chargepoints"]) => {
            // One record's JSON tree at a time, written straight into the body: the peak is
            // the body, not a tree of every record.
            let default_tariff = csms.config().get_tariff();
            csms.with_connected(|list| {
                let mut body = Vec::with_capacity(2 + list.len() * 160);
                body.push(b'[');
                for (i, cp) in list.iter().enumerate() {
                    if i > 0 {
                        body.push(b',');
                    }
                    // Writing a `Value` into a `Vec` cannot fail (no I/O, string keys).
                    let _ =
                        serde_json::to_writer(&mut body, &charge_point_json(cp, default_tariff));
                }
                body.push(b']');
                HttpResponse {
                    status: 200,
                    content_type: "application/json",
                    body,
                    www_authenticate: None,
                }
            })
        }
        ("GET", ["chargepoints", identity]) => match parse_identity(identity) {
            Ok(identity) => match csms.charge_point(&identity) {
                Some(cp) => {
                    HttpResponse::json(200, &charge_point_json(&cp, csms.config().get_tariff()))
                }
                None => HttpResponse::error(404, &format!("unknown charge point {identity}")),
            },
            Err(response) => response,
        },
        ("POST", ["chargepoints", identity, "call", action]) => {
            let identity = match parse_identity(identity) {
                Ok(identity) => identity,
                Err(response) => return Route::Respond(response),
            };
            let Some(version) = csms.version_of(&identity) else {
                return Route::Respond(HttpResponse::not_connected(&identity));
            };
            let body = match std::str::from_utf8(&request.body) {
                Ok("") => "{}",
                Ok(body) => body,
                Err(_) => return Route::Respond(HttpResponse::error(400, "body is not UTF-8")),
            };
            match decode_command(version, action, body) {
                Ok(request) => {
                    csms.on_command(&identity, &request);
                    let limit = csms
                        .items_per_message(&identity)
                        .limit(action)
                        .or(csms.config().get_items_per_message());
                    let split = limit.map(|limit| SplitCall::plan(version, &request, limit));
                    return match split {
                        Some(Ok(Some(split))) => Route::Calls {
                            identity,
                            split: Box::new(split),
                        },
                        Some(Err(error)) => Route::Respond(HttpResponse::error(400, &error)),
                        Some(Ok(None)) | None => Route::Call { identity, request },
                    };
                }
                // As the node holding a charge point answers a routed command that does not
                // fit: not sent, 400 `invalid_request`.
                Err(error) => {
                    let failure = CallFailure::InvalidRequest {
                        description: format!("{action} for OCPP {version}: {error}"),
                    };
                    failure_response(Some(version), None, action, &failure)
                }
            }
        }
        ("GET", ["chargepoints", identity, "notifications"]) => {
            with_charge_point(csms, identity, |cp| {
                let all: serde_json::Map<String, Value> = cp
                    .extras
                    .notifications
                    .iter()
                    .map(|(kind, list)| ((*kind).to_owned(), notifications_json(list)))
                    .collect();
                Value::Object(all)
            })
        }
        ("GET", ["chargepoints", identity, "notifications", kind]) => {
            with_charge_point(csms, identity, |cp| {
                cp.extras
                    .notifications
                    .get(kind)
                    .map_or(Value::Array(Vec::new()), notifications_json)
            })
        }
        ("GET", ["chargepoints", identity, "boot"]) => with_charge_point(csms, identity, |cp| {
            json!({
                "policy": cp.boot_policy.map(BootPolicy::as_str),
                "default": csms.config().get_boot_policy().as_str(),
                "answered": cp.boot_status.map(BootPolicy::as_str),
            })
        }),
        ("PUT" | "DELETE", ["chargepoints", identity, "boot"]) => {
            let identity = match parse_identity(identity) {
                Ok(identity) => identity,
                Err(response) => return Route::Respond(response),
            };
            let policy = if method == "PUT" {
                let status = body_json(request)
                    .ok()
                    .and_then(|v| v["status"].as_str().and_then(BootPolicy::parse));
                match status {
                    Some(policy) => Some(policy),
                    None => {
                        return Route::Respond(HttpResponse::error(
                            400,
                            "expected {\"status\":\"Accepted\"|\"Pending\"|\"Rejected\"}",
                        ))
                    }
                }
            } else {
                None
            };
            changed(
                csms.set_boot_policy(&identity, policy),
                json!({ "identity": identity.as_str(), "policy": policy.map(BootPolicy::as_str) }),
            )
        }
        ("GET", ["chargepoints", identity, "security"]) => match parse_identity(identity) {
            Ok(identity) => {
                let (own, default, password) = csms.security_profile(&identity);
                HttpResponse::json(
                    200,
                    &json!({
                        "identity": identity.as_str(),
                        "profile": own.map(SecurityProfile::number),
                        "default": default.map(SecurityProfile::number),
                        "password": password,
                    }),
                )
            }
            Err(response) => response,
        },
        ("PUT" | "DELETE", ["chargepoints", identity, "security"]) => {
            let identity = match parse_identity(identity) {
                Ok(identity) => identity,
                Err(response) => return Route::Respond(response),
            };
            let profile = if method == "PUT" {
                let profile = body_json(request)
                    .ok()
                    .and_then(|v| v["profile"].as_u64().and_then(SecurityProfile::from_number));
                match profile {
                    Some(profile) => Some(profile),
                    None => {
                        return Route::Respond(HttpResponse::error(
                            400,
                            "expected {\"profile\":1|2|3}",
                        ))
                    }
                }
            } else {
                None
            };
            changed(
                csms.set_security_profile(&identity, profile),
                json!({
                    "identity": identity.as_str(),
                    "profile": profile.map(SecurityProfile::number),
                }),
            )
        }
        ("PUT" | "DELETE", ["chargepoints", identity, "password"]) => {
            let identity = match parse_identity(identity) {
                Ok(identity) => identity,
                Err(response) => return Route::Respond(response),
            };
            let password = if method == "PUT" {
                match body_json(request).ok().and_then(|v| password_of(&v)) {
                    Some(password) => Some(password),
                    None => {
                        return Route::Respond(HttpResponse::error(
                            400,
                            "expected {\"password\":\"...\"}: 1 to 64 characters, no control \
                             characters",
                        ))
                    }
                }
            } else {
                None
            };
            // The password itself is never echoed.
            changed(
                csms.set_password(&identity, password.as_deref()),
                json!({ "identity": identity.as_str(), "password": password.is_some() }),
            )
        }
        ("GET", ["tariff"]) => HttpResponse::json(
            200,
            &json!({
                "default": csms.config().get_tariff().as_ref().map(tariff_json),
                "cost_updated_interval_s": csms.config().get_cost_updated_interval().as_secs_f64(),
            }),
        ),
        ("GET", ["chargepoints", identity, "tariff"]) => match parse_identity(identity) {
            Ok(identity) => {
                let (own, default) = csms.tariff_of(&identity);
                HttpResponse::json(
                    200,
                    &json!({
                        "identity": identity.as_str(),
                        "tariff": own.as_ref().map(tariff_json),
                        "default": default.as_ref().map(tariff_json),
                        "applies": own.or(default).as_ref().map(tariff_json),
                    }),
                )
            }
            Err(response) => response,
        },
        ("PUT" | "DELETE", ["chargepoints", identity, "tariff"]) => {
            let identity = match parse_identity(identity) {
                Ok(identity) => identity,
                Err(response) => return Route::Respond(response),
            };
            let tariff = if method == "PUT" {
                let default_currency = csms.config().get_tariff().map(|t| t.currency);
                match body_json(request).and_then(|body| tariff_of(&body, default_currency)) {
                    Ok(tariff) => Some(tariff),
                    Err(error) => return Route::Respond(HttpResponse::error(400, &error)),
                }
            } else {
                None
            };
            changed(
                csms.set_tariff(&identity, tariff),
                json!({
                    "identity": identity.as_str(),
                    "tariff": tariff.as_ref().map(tariff_json),
                }),
            )
        }
        ("GET", ["chargepoints", identity, "charging-profiles"]) => {
            with_charge_point(csms, identity, |cp| {
                let default = csms.config().get_site_limit();
                let mut shown = cp.extras.smart_charging.to_json();
                shown["identity"] = json!(cp.identity.as_str());
                shown["default_site_limit"] =
                    json!((!default.is_none()).then(|| default.to_json()));
                shown
            })
        }
        ("GET", ["chargepoints", identity, "site-limit"]) => match parse_identity(identity) {
            Ok(identity) => {
                let (own, default) = csms.site_limit(&identity);
                HttpResponse::json(200, &site_limit_json(&identity, own, default))
            }
            Err(response) => response,
        },
        ("PUT" | "DELETE", ["chargepoints", identity, "site-limit"]) => {
            let identity = match parse_identity(identity) {
                Ok(identity) => identity,
                Err(response) => return Route::Respond(response),
            };
            let limit = if method == "PUT" {
                match body_json(request).map(|body| SiteLimit::from_json(&body)) {
                    Ok(Ok(limit)) => Some(limit),
                    Ok(Err(error)) => {
                        return Route::Respond(HttpResponse::error(400, &error.to_string()))
                    }
                    Err(error) => return Route::Respond(HttpResponse::error(400, &error)),
                }
            } else {
                None
            };
            let requests = csms.set_site_limit(&identity, limit);
            return renegotiation(csms, identity, requests);
        }
        ("POST", ["chargepoints", identity, "renegotiate"]) => {
            let identity = match parse_identity(identity) {
                Ok(identity) => identity,
                Err(response) => return Route::Respond(response),
            };
            let requests = csms.renegotiate(&identity);
            return renegotiation(csms, identity, requests);
        }
        ("GET", ["tokens"]) => {
            let store = csms.tokens();
            let tokens: serde_json::Map<String, Value> = store
                .iter()
                .flat_map(TokenStore::iter)
                .map(|(id, entry)| (id.to_owned(), token_json(entry)))
                .collect();
            HttpResponse::json(
                200,
                &json!({
                    "enabled": store.is_some(),
                    "master_pass": store.as_ref().and_then(TokenStore::master_pass),
                    "tokens": tokens,
                }),
            )
        }
        ("GET", ["tokens", token]) => match csms.tokens().as_ref().and_then(|s| s.get(token)) {
            Some(entry) => HttpResponse::json(200, &token_json(entry)),
            None => HttpResponse::error(404, &format!("unknown token {token}")),
        },
        ("PUT", ["tokens", token]) => match token_entry(request) {
            Ok(entry) => {
                let body = token_json(&entry);
                changed(csms.put_token(token, entry), body)
            }
            Err(error) => HttpResponse::error(400, &error),
        },
        ("DELETE", ["tokens", token]) => match csms.remove_token(token) {
            Ok(true) => HttpResponse::json(200, &json!({ "deleted": token })),
            Ok(false) => HttpResponse::error(404, &format!("unknown token {token}")),
            Err(e) => HttpResponse::error(503, &format!("not saved: {e}")),
        },
        ("GET", ["transactions"]) => stored_transactions(csms, None, true),
        ("GET", ["chargepoints", identity, "transactions"]) => match parse_identity(identity) {
            Ok(identity) => stored_transactions(csms, Some(identity.as_str()), false),
            Err(response) => response,
        },
        ("GET", ["metrics"]) => HttpResponse {
            status: 200,
            content_type: "text/plain; version=0.0.4; charset=utf-8",
            body: csms.metrics().render().into_bytes(),
            www_authenticate: None,
        },
        (_, ["chargepoints"] | ["chargepoints", _] | ["metrics"] | ["tokens"] | ["tokens", _])
        | (_, ["tariff"] | ["chargepoints", _, "tariff"])
        | (_, ["chargepoints", _, "call", _] | ["chargepoints", _, "boot"])
        | (_, ["chargepoints", _, "security"] | ["chargepoints", _, "password"])
        | (_, ["chargepoints", _, "site-limit"] | ["chargepoints", _, "renegotiate"])
        | (_, ["chargepoints", _, "charging-profiles"])
        | (_, ["transactions"] | ["chargepoints", _, "transactions"])
        | (_, ["chargepoints", _, "notifications"] | ["chargepoints", _, "notifications", _]) => {
            HttpResponse::error(405, "method not allowed")
        }
        _ => HttpResponse::error(404, "no such resource"),
    };
    Route::Respond(response)
}

/// `{"identity","site_limit","default"}`: a station's own site limit (null: the default)
/// and the CSMS default (null: none).
fn site_limit_json(
    identity: &ChargePointIdentity,
    own: Option<SiteLimit>,
    default: SiteLimit,
) -> Value {
    json!({
        "identity": identity.as_str(),
        "site_limit": own.map(|l| l.to_json()),
        "default": (!default.is_none()).then(|| default.to_json()),
    })
}

/// The route of a renegotiation (K16): the SetChargingProfile CALLs the site limit gives
/// the station's EVSEs with an active transaction: one is a [`Route::Call`] (answered with
/// its CALLRESULT), several a [`Route::Calls`] sequence (`result.results`, in order), none
/// 200 with the limit and `"renegotiated":0`.
fn renegotiation(csms: &Csms, identity: ChargePointIdentity, mut requests: Vec<Request>) -> Route {
    let version = csms.version_of(&identity);
    match (requests.len(), version) {
        (1, Some(_)) => match requests.pop() {
            Some(request) => Route::Call { identity, request },
            None => Route::Respond(HttpResponse::error(500, "no CALL to send")),
        },
        (2.., Some(version)) => match SplitCall::sequence(version, requests) {
            Some(split) => Route::Calls {
                identity,
                split: Box::new(split),
            },
            None => Route::Respond(HttpResponse::error(500, "no CALL to send")),
        },
        _ => {
            let (own, default) = csms.site_limit(&identity);
            let mut body = site_limit_json(&identity, own, default);
            body["renegotiated"] = json!(0);
            Route::Respond(HttpResponse::json(200, &body))
        }
    }
}

/// The `password` of a `PUT /chargepoints/ID/password` body: 1 to 64 characters, none a
/// control character (a Basic password is a line of text: RFC 7617 excludes controls).
fn password_of(body: &Value) -> Option<String> {
    let password = body["password"].as_str()?;
    let length = password.chars().count();
    let fits = (1..=64).contains(&length) && !password.chars().any(char::is_control);
    fits.then(|| password.to_owned())
}

/// Decodes a command body as the request of `action` in `version` (strict schema check).
pub fn decode_command(
    version: OcppVersion,
    action: &str,
    body: &str,
) -> Result<Request, DecodeError> {
    Ok(match version {
        OcppVersion::V1_6 => v1_6::decode_call(action, body)?.into(),
        OcppVersion::V2_0_1 => v2_0_1::decode_call(action, body)?.into(),
        OcppVersion::V2_1 => v2_1::decode_call(action, body)?.into(),
    })
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
/// [`CallFailure::http_status`] (404 connected nowhere; 400 or 409 the request does not fit
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
    HttpResponse::json(failure.http_status(), &body)
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
    HttpResponse::json(failure.http_status(), &body)
}

/// The answer to a command whose CALL the connection refused ([`Connection::call`]): the
/// refusal as the call's outcome, through [`call_response`] (never sent: 503, or 404 when the
/// connection is not open).
///
/// [`Connection::call`]: ocpp_server_core::Connection::call
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

/// How many charge points `GET /chargepoints` lists from a cluster's presence records at most.
pub const CLUSTER_LIST_LIMIT: usize = 100_000;

/// A read of the admin API that a cluster node answers from the cluster's presence records
/// too ([`cluster_read`]): where charge points connected to other nodes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterRead {
    /// `GET /chargepoints`: this node's, then every other node's.
    List,
    /// `GET /chargepoints/{identity}` for a charge point not connected here.
    One(ChargePointIdentity),
}

/// Whether `method` and `path` are a read a cluster node answers cluster-wide.
pub fn cluster_read(csms: &Csms, method: &str, path: &str) -> Option<ClusterRead> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    match (method, segments.as_slice()) {
        ("GET", ["chargepoints"]) => Some(ClusterRead::List),
        ("GET", ["chargepoints", identity]) => {
            let identity = parse_identity(identity).ok()?;
            // Connected here: this node's own record, as without a cluster.
            match csms.version_of(&identity) {
                Some(_) => None,
                None => Some(ClusterRead::One(identity)),
            }
        }
        _ => None,
    }
}

/// A charge point connected to another node, as the presence records say: `{"identity",
/// "node","connected","version","claimed_ms","live"}`. Its application state (status,
/// transactions) is the holding node's: ask that node.
pub fn located_json(cp: &Located) -> Value {
    json!({
        "identity": cp.identity,
        "node": cp.node,
        "connected": true,
        "version": cp.version.map(OcppVersion::as_str),
        "claimed_ms": cp.claimed_ms,
        "live": cp.live,
    })
}

/// `GET /chargepoints` on the cluster node `node`: this node's connected charge points (each
/// with `"node"`), then those of every other node ([`located_json`]), as a JSON array.
///
/// When the presence records cannot be read (Redis down or too slow) the node still answers 200
/// with what it knows, its own charge points, and says that the rest is unknown, in an object
/// rather than the array (a client that reads the array cannot take a partial list for the
/// whole cluster): `{"complete": false, "chargepoints": [this node's], "unknown": {"nodes":
/// "other", "reason": "..."}}`.
pub fn cluster_list_response(
    csms: &Csms,
    node: &str,
    located: &Result<Vec<Located>, ClusterError>,
) -> HttpResponse {
    let mut list: Vec<Value> = csms.with_connected(|local| {
        local
            .iter()
            .map(|cp| {
                let mut value = charge_point_json(cp, csms.config().get_tariff());
                value["node"] = Value::String(node.to_owned());
                value
            })
            .collect()
    });
    let located = match located {
        Ok(located) => located,
        Err(e) => {
            return HttpResponse::json(
                200,
                &json!({
                    "complete": false,
                    "chargepoints": list,
                    "unknown": {
                        "nodes": "other",
                        "reason": format!("the cluster's presence is unreadable: {e}"),
                    },
                }),
            )
        }
    };
    let here: std::collections::HashSet<String> = list
        .iter()
        .filter_map(|cp| cp["identity"].as_str().map(str::to_owned))
        .collect();
    let mut remote: Vec<&Located> = located
        .iter()
        .filter(|cp| cp.node != node && !here.contains(&cp.identity))
        .collect();
    remote.sort_by(|a, b| a.identity.cmp(&b.identity));
    list.extend(remote.into_iter().map(located_json));
    HttpResponse::json(200, &Value::Array(list))
}

/// `GET /chargepoints/{identity}` on a cluster node for a charge point not connected here:
/// where it is connected ([`located_json`]), or this node's record of it (`local`, from
/// [`route`]: a charge point seen here before, or 404); 503 when the presence records cannot be
/// read.
pub fn cluster_one_response(
    local: HttpResponse,
    located: &Result<Option<Located>, ClusterError>,
) -> HttpResponse {
    match located {
        Ok(Some(cp)) => HttpResponse::json(200, &located_json(cp)),
        Ok(None) => local,
        Err(e) => HttpResponse::error(503, &format!("the cluster's presence is unreadable: {e}")),
    }
}

fn response_json(response: &Response) -> Value {
    serde_json::to_value(response).unwrap_or(Value::Null)
}

/// 200 with `show(cp)`, 404 for a charge point never seen, 400 for a bad identity.
fn with_charge_point(
    csms: &Csms,
    identity: &str,
    show: impl FnOnce(&ChargePoint) -> Value,
) -> HttpResponse {
    match parse_identity(identity) {
        Ok(identity) => match csms.charge_point(&identity) {
            Some(cp) => HttpResponse::json(200, &show(&cp)),
            None => HttpResponse::error(404, &format!("unknown charge point {identity}")),
        },
        Err(response) => response,
    }
}

fn body_json(request: &AdminRequest) -> Result<Value, String> {
    serde_json::from_slice(&request.body).map_err(|e| format!("body is not JSON: {e}"))
}

/// A token from a PUT body `{"status", "group"?, "expiry"?}`.
fn token_entry(request: &AdminRequest) -> Result<TokenEntry, String> {
    let body = body_json(request)?;
    let status = body["status"]
        .as_str()
        .and_then(TokenStatus::parse)
        .ok_or_else(|| {
            let all: Vec<&str> = TokenStatus::ALL.iter().map(|s| s.as_str()).collect();
            format!("`status` must be one of {}", all.join(", "))
        })?;
    let mut entry = TokenEntry::new(status);
    match &body["group"] {
        Value::Null => {}
        Value::String(group) if !group.is_empty() && group.chars().count() <= 36 => {
            entry = entry.with_group(group.as_str());
        }
        _ => return Err("`group` must be a string of 1 to 36 characters".into()),
    }
    match &body["expiry"] {
        Value::Null => {}
        Value::String(expiry) => {
            let expiry = ocpp_messages::DateTime::parse(expiry)
                .map_err(|_| format!("`expiry` {expiry:?} is not an RFC 3339 date-time"))?;
            entry = entry.with_expiry(expiry);
        }
        _ => return Err("`expiry` must be an RFC 3339 date-time".into()),
    }
    Ok(entry)
}

/// What our GetTransactionStatus after a seqNo gap found: `{"asked":true}` while unanswered,
/// `{"ongoing_indicator","messages_in_queue","at"}`, or `{"failed": outcome}`.
fn transaction_status_json(check: &TransactionStatusCheck) -> Value {
    match check {
        TransactionStatusCheck::Asked => json!({ "asked": true }),
        TransactionStatusCheck::Answered {
            ongoing,
            messages_in_queue,
            at,
        } => json!({
            "ongoing_indicator": ongoing,
            "messages_in_queue": messages_in_queue,
            "at": time_json(*at),
        }),
        TransactionStatusCheck::Failed(outcome) => json!({ "failed": outcome }),
    }
}

/// A tariff as the admin API shows it: prices as decimal strings (exact), the currency.
fn tariff_json(tariff: &Tariff) -> Value {
    json!({
        "price_per_kwh": tariff.per_kwh.to_string(),
        "price_per_hour": tariff.per_hour.to_string(),
        "currency": tariff.currency.as_str(),
    })
}

/// The tariff of a `PUT /chargepoints/ID/tariff` body `{"price_per_kwh", "price_per_hour",
/// "currency"?}`: prices as decimal strings or JSON numbers (read as their shortest
/// decimal), at least one of them (the other is 0); the currency defaults to the default
/// tariff's, else EUR.
fn tariff_of(body: &Value, default_currency: Option<Currency>) -> Result<Tariff, String> {
    let price = |name: &str| -> Result<Option<Price>, String> {
        let text = match &body[name] {
            Value::Null => return Ok(None),
            Value::String(text) => text.clone(),
            Value::Number(number) => number.to_string(),
            _ => return Err(format!("`{name}` must be a decimal such as \"0.25\"")),
        };
        text.parse()
            .map(Some)
            .map_err(|e: super::TariffError| e.to_string())
    };
    let (per_kwh, per_hour) = (price("price_per_kwh")?, price("price_per_hour")?);
    if per_kwh.is_none() && per_hour.is_none() {
        return Err(
            "expected {\"price_per_kwh\":\"0.25\",\"price_per_hour\":\"1.00\",\"currency\":\"EUR\"}"
                .into(),
        );
    }
    let currency = match &body["currency"] {
        Value::Null => default_currency.unwrap_or(Currency::EUR),
        Value::String(code) => code
            .parse()
            .map_err(|e: super::TariffError| e.to_string())?,
        _ => return Err("`currency` must be an ISO 4217 code such as \"EUR\"".into()),
    };
    Ok(Tariff::new(
        per_kwh.unwrap_or(Price::ZERO),
        per_hour.unwrap_or(Price::ZERO),
        currency,
    ))
}

/// A transaction as the admin API shows it; with a tariff, its `cost` so far (final once
/// ended) and `currency`, derived from what is stored (energy, start, end) with the
/// station's tariff as it is now ([`Tariff::cost_of`]).
fn transaction_json(t: &Transaction, tariff: Option<Tariff>, now: UnixTime) -> Value {
    let cost = tariff.map(|tariff| tariff.cost_of(t, now));
    json!({
        "id": t.id,
        "connector": t.connector,
        "id_tag": t.id_tag,
        "started": time_json(t.started),
        "ended": t.ended.map(time_json),
        "stop_reason": t.stop_reason,
        "charging_state": t.charging_state,
        "meter_start_wh": t.meter_start_wh,
        "meter_last_wh": t.meter_last_wh,
        "energy_wh": t.energy_wh(),
        "samples": t.samples,
        "last_seq_no": t.last_seq_no,
        "cost": cost.map(|c| c.total_cost()),
        "currency": tariff.map(|t| t.currency.as_str().to_owned()),
        "signed_meter": t.signed_meter.as_ref().map(|m| json!({
            "data": m.data,
            "encoding": m.encoding,
            "check": m.check,
        })),
    })
}

/// `GET /transactions` and `GET /chargepoints/ID/transactions`: from the store (every node's,
/// on a database the nodes share), the latest started first.
fn stored_transactions(csms: &Csms, identity: Option<&str>, open_only: bool) -> HttpResponse {
    let query = TransactionQuery {
        identity: identity.map(str::to_owned),
        open_only,
        limit: TRANSACTIONS_LIMIT,
    };
    match csms.stored_transactions(query) {
        Ok(found) => {
            let now = UnixTime::now();
            let mut tariffs = std::collections::HashMap::new();
            let list: Vec<Value> = found
                .iter()
                .map(|(identity, t)| {
                    let tariff = *tariffs
                        .entry(identity.as_str())
                        .or_insert_with(|| csms.tariff_for(identity));
                    let mut value = transaction_json(t, tariff, now);
                    value["identity"] = json!(identity);
                    value
                })
                .collect();
            HttpResponse::json(200, &Value::Array(list))
        }
        Err(e) => HttpResponse::error(503, &format!("the database failed: {e}")),
    }
}

/// The most transactions one `GET /transactions` lists.
pub const TRANSACTIONS_LIMIT: usize = 1000;

/// The answer to an operator's change: 200 with `body`, or the error's status.
fn changed(result: Result<(), ChangeError>, body: Value) -> HttpResponse {
    match result {
        Ok(()) => HttpResponse::json(200, &body),
        Err(e) => HttpResponse::error(e.http_status(), &e.to_string()),
    }
}

fn token_json(entry: &TokenEntry) -> Value {
    json!({
        "status": entry.status.as_str(),
        "group": entry.group,
        "expiry": entry.expiry.as_ref().map(|e| e.as_str()),
    })
}

fn notifications_json(list: &std::collections::VecDeque<super::Notification>) -> Value {
    list.iter()
        .map(|n| json!({ "at": time_json(n.at), "payload": n.payload }))
        .collect()
}

fn parse_identity(segment: &str) -> Result<ChargePointIdentity, HttpResponse> {
    ChargePointIdentity::from_path(&format!("/{segment}"), false)
        .map_err(|e| HttpResponse::error(400, &format!("bad identity: {e}")))
}

fn time_json(time: UnixTime) -> Value {
    Value::String(date_time(time.into()).as_str().to_owned())
}

/// A charge point as the admin API shows it.
///
/// `default_tariff` is the CSMS's ([`super::CsmsConfig::get_tariff`]): the transactions'
/// cost uses the station's own tariff, else that one.
pub fn charge_point_json(cp: &ChargePoint, default_tariff: Option<Tariff>) -> Value {
    let connectors: serde_json::Map<String, Value> = cp
        .connectors
        .iter()
        .map(|(label, state)| {
            let mut value = json!({ "status": &*state.status, "at": time_json(state.at) });
            if let Some(code) = &state.error_code {
                value["error_code"] = json!(&**code);
            }
            (label.to_string(), value)
        })
        .collect();
    let tariff = cp.extras.tariff.or(default_tariff);
    let now = UnixTime::now();
    let transactions: Vec<Value> = cp
        .transactions
        .iter()
        .map(|t| transaction_json(t, tariff, now))
        .collect();
    // Per kind: how many arrived, when the last did, and its `status` if it has one
    // (FirmwareStatusNotification, LogStatusNotification...). The payloads are at
    // `/chargepoints/ID/notifications`.
    let notifications: serde_json::Map<String, Value> = cp
        .extras
        .notification_counts
        .iter()
        .map(|(kind, count)| {
            let last = cp
                .extras
                .notifications
                .get(kind)
                .and_then(|list| list.back());
            let value = json!({
                "count": count,
                "last_at": last.map(|n| time_json(n.at)),
                "last_status": last.and_then(|n| n.payload.get("status")).cloned(),
            });
            ((*kind).to_owned(), value)
        })
        .collect();
    json!({
        "identity": cp.identity.as_str(),
        "connected": cp.session.is_some(),
        "version": cp.session.as_ref().map(|s| s.version.as_str()),
        "connected_since": cp.session.as_ref().map(|s| time_json(s.since)),
        "status": cp.status(),
        "boot": cp.registration.as_ref().map(|r| json!({
            "vendor": &*r.vendor,
            "model": &*r.model,
            "serial_number": r.serial_number.as_deref(),
            "firmware_version": r.firmware_version.as_deref(),
            "reason": r.reason.as_deref(),
            "at": time_json(r.at),
        })),
        "last_heartbeat": cp.last_heartbeat.map(time_json),
        "connectors": connectors,
        "transactions": transactions,
        "boot_policy": cp.boot_policy.map(BootPolicy::as_str),
        "items_per_message": cp.extras.items_per_message.to_json(),
        "smart_charging": cp.extras.smart_charging.to_json(),
        "notifications": notifications,
        "certificate": cp.extras.certificate.as_ref().map(|c| json!({
            "requested_at": time_json(c.requested_at),
            "certificate_type": c.certificate_type,
            "status": c.status,
            "reason": c.reason,
            "serial": c.serial,
            "not_after": c.not_after,
            "answer": c.answer,
            "answered_at": c.answered_at.map(time_json),
        })),
        "tariff": cp.extras.tariff.as_ref().map(tariff_json),
        "cost_updates": cp.extras.cost_updates.iter().map(|u| json!({
            "transaction": u.transaction,
            "total_cost": u.total_cost.total_cost(),
            "at": time_json(u.at),
            "answer": u.answer,
        })).collect::<Vec<_>>(),
        "client_certificate": cp.extras.client_certificate.as_ref().map(|c| json!({
            "common_name": c.common_name,
        })),
        "seq_no_gaps": {
            "count": cp.extras.seq_no_gap_count,
            "recent": cp.extras.seq_no_gaps.iter().map(|g| json!({
                "transaction": g.transaction,
                "expected": g.expected,
                "received": g.received,
                "at": time_json(g.at),
                "transaction_status": g.check.as_ref().map(transaction_status_json),
            })).collect::<Vec<_>>(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Credentials, CsmsConfig};
    use ocpp_frame::handshake::BasicCredentials;

    fn parse(raw: &[u8]) -> AdminRequest {
        AdminRequest::parse(raw).unwrap().unwrap().0
    }

    #[test]
    fn parses_in_pieces_and_with_a_body() {
        let raw = b"POST /chargepoints/CP1/call/Reset?x=1 HTTP/1.1\r\nContent-Length: 15\r\n\r\n{\"type\":\"Soft\"}";
        for cut in 0..raw.len() {
            assert_eq!(AdminRequest::parse(&raw[..cut]).unwrap(), None, "{cut}");
        }
        let (request, consumed) = AdminRequest::parse(raw).unwrap().unwrap();
        assert_eq!(consumed, raw.len());
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, "/chargepoints/CP1/call/Reset");
        assert_eq!(request.body, b"{\"type\":\"Soft\"}");
        let big = format!(
            "POST / HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
            MAX_BODY + 1
        );
        assert_eq!(AdminRequest::parse(big.as_bytes()).unwrap_err().status, 413);
    }

    #[test]
    fn routes() {
        let csms = Csms::new(CsmsConfig::default());
        let status = |raw: &[u8]| match route(&csms, &parse(raw)) {
            Route::Respond(response) => response.status,
            Route::Call { .. } | Route::Calls { .. } => 0,
        };
        assert_eq!(status(b"GET /chargepoints HTTP/1.1\r\n\r\n"), 200);
        assert_eq!(status(b"GET /metrics HTTP/1.1\r\n\r\n"), 200);
        assert_eq!(status(b"GET /nothing HTTP/1.1\r\n\r\n"), 404);
        assert_eq!(status(b"DELETE /chargepoints HTTP/1.1\r\n\r\n"), 405);
        assert_eq!(
            status(b"POST /chargepoints/CP9/call/Reset HTTP/1.1\r\n\r\n"),
            404
        );
        let identity = ChargePointIdentity::new("CP1".into(), false).unwrap();
        csms.on_connected(&identity, OcppVersion::V1_6);
        assert_eq!(
            status(b"POST /chargepoints/CP1/call/Reset HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"),
            400
        );
        let raw = b"POST /chargepoints/CP1/call/Reset HTTP/1.1\r\nContent-Length: 15\r\n\r\n{\"type\":\"Soft\"}";
        let Route::Call { identity, request } = route(&csms, &parse(raw)) else {
            panic!("expected a call")
        };
        assert_eq!(identity.as_str(), "CP1");
        assert_eq!(request.action(), "Reset");
    }

    #[test]
    fn the_operator_sets_a_password() {
        let respond = |csms: &Csms, method: &str, body: &str| {
            let raw = format!(
                "{method} /chargepoints/CP1/password HTTP/1.1\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            match route(csms, &parse(raw.as_bytes())) {
                Route::Respond(response) => response,
                Route::Call { .. } | Route::Calls { .. } => panic!("not a command"),
            }
        };
        // Without a credentials store: 409, as for the security profile.
        let open = Csms::new(CsmsConfig::default());
        let refused = respond(&open, "PUT", r#"{"password":"new-password-1111"}"#);
        assert_eq!(refused.status, 409);

        let credentials = Credentials::parse("CP1:old-password-0000\n").unwrap();
        let csms = Csms::new(CsmsConfig::default().credentials(Some(credentials)));
        let cp1 = ChargePointIdentity::new("CP1".into(), false).unwrap();
        let set = respond(&csms, "PUT", r#"{"password":"new-password-1111"}"#);
        assert_eq!(set.status, 200);
        let body = String::from_utf8(set.body).unwrap();
        assert!(!body.contains("new-password"), "never echoed: {body}");
        let check = |password: &str| {
            let credentials = csms.credentials.read().unwrap();
            let sent = BasicCredentials::new(b"CP1", password.as_bytes()).unwrap();
            credentials
                .as_ref()
                .unwrap()
                .check(&cp1, Some(&sent))
                .is_ok()
        };
        assert!(check("new-password-1111") && !check("old-password-0000"));
        for bad in [
            r#"{"password":""}"#,
            r#"{"password":"line\nbreak"}"#,
            r#"{"password":42}"#,
            r#"{}"#,
            "not json",
        ] {
            assert_eq!(respond(&csms, "PUT", bad).status, 400, "{bad}");
        }
        let long = format!(r#"{{"password":"{}"}}"#, "x".repeat(65));
        assert_eq!(respond(&csms, "PUT", &long).status, 400);
        assert_eq!(respond(&csms, "GET", "").status, 405);
        assert_eq!(respond(&csms, "DELETE", "").status, 200);
        assert!(!check("new-password-1111"));
    }

    #[test]
    fn call_outcomes() {
        let reset = v1_6::Response::from(v1_6::ResetResponse {
            status: v1_6::ResetStatus::Accepted,
        });
        let ok = call_response(OcppVersion::V1_6, "1", "Reset", &Ok(reset.into()));
        assert_eq!(ok.status, 200);
        let body: Value = serde_json::from_slice(&ok.body).unwrap();
        assert_eq!(body["result"]["status"], "Accepted");
        assert_eq!(
            call_response(OcppVersion::V1_6, "1", "Reset", &Err(CallFailure::Timeout)).status,
            504
        );
        let bytes = ok.to_bytes();
        assert!(bytes.starts_with(b"HTTP/1.1 200 OK\r\n"));
        // Every failure has its status, in this one place for both servers and every path.
        for (failure, status, delivery) in [
            (CallFailure::NotConnected, 404, "not_sent"),
            (CallFailure::QueueFull, 503, "not_sent"),
            (CallFailure::ClosedBeforeSent, 503, "not_sent"),
            (CallFailure::DeadlinePassed, 503, "not_sent"),
            (CallFailure::OwnerUnreachable, 503, "not_sent"),
            (CallFailure::Disconnected, 504, "unknown"),
            (CallFailure::Timeout, 504, "unknown"),
            (
                CallFailure::InvalidResponse {
                    description: "x".into(),
                },
                502,
                "answered",
            ),
        ] {
            let local = call_response(OcppVersion::V1_6, "1", "Reset", &Err(failure.clone()));
            assert_eq!(local.status, status);
            let body: Value = serde_json::from_slice(&local.body).unwrap();
            assert_eq!(body["outcome"], failure.name());
            assert_eq!(body["delivery"], delivery);
            // Routed through the cluster: the same status and outcome.
            let routed = remote_call_response("Reset", &Err(failure.clone()));
            assert_eq!(routed.status, status);
            let routed: Value = serde_json::from_slice(&routed.body).unwrap();
            assert_eq!(routed["outcome"], body["outcome"]);
        }
        assert_eq!(HttpResponse::shut_down_before_answer().status, 504);
        assert_eq!(HttpResponse::timeout().status, 504);
    }

    #[test]
    fn commands_through_the_cluster() {
        let (identity, action) = command_target("POST", "/chargepoints/CP%201/call/Reset").unwrap();
        assert_eq!((identity.as_str(), action.as_str()), ("CP 1", "Reset"));
        assert!(command_target("GET", "/chargepoints/CP1/call/Reset").is_none());
        assert!(command_target("POST", "/chargepoints/CP1").is_none());
        assert_eq!(command_body(b"").unwrap(), "{}");
        assert_eq!(command_body(b"{").unwrap_err().status, 400);
        assert_eq!(command_body(&[0xff]).unwrap_err().status, 400);

        let ok = remote_call_response("Reset", &Ok(r#"{"status":"Accepted"}"#.into()));
        assert_eq!(ok.status, 200);
        let body: Value = serde_json::from_slice(&ok.body).unwrap();
        assert_eq!(body["result"]["status"], "Accepted");
        assert_eq!(body["action"], "Reset");
        let error = CallFailure::ErrorResponse {
            code: ocpp_messages::error_code::ErrorCode::NotSupported,
            description: "no".into(),
            details: "{}".into(),
        };
        let failed = remote_call_response("Reset", &Err(error));
        assert_eq!(failed.status, 502);
        let body: Value = serde_json::from_slice(&failed.body).unwrap();
        assert_eq!(body["error"]["code"], "NotSupported");
        assert_eq!(body["delivery"], "answered");
    }
}
