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
use ocpp_messages::{v1_6, v2_0_1, v2_1, DecodeError};
use ocpp_proto::{CallFailure, CallOutcome, ChargePointIdentity, Delivery, RefusalReason, Request};
use serde_json::{json, Value};

mod cluster_reads;
mod http;
mod json;

pub use cluster_reads::{
    cluster_list_response, cluster_one_response, cluster_read, located_json, ClusterRead,
    CLUSTER_LIST_LIMIT,
};
pub use http::{
    caller_timeout, http_status, AdminRequest, HttpResponse, DEADLINE_HEADER, MAX_BODY, MAX_HEAD,
};
use json::{
    body_json, changed, notifications_json, parse_identity, response_json, stored_transactions,
    tariff_json, tariff_of, token_entry, token_json, with_charge_point,
};
pub use json::{charge_point_json, TRANSACTIONS_LIMIT};

use crate::{BootPolicy, Csms, SecurityProfile, SiteLimit, SplitCall, TokenStore};

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
