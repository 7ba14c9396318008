//! The admin API's route table: each route a method, a path pattern (`{name}` matches one
//! segment, axum's syntax) and one function. [`route`](super::route) matches a request
//! against [`ROUTES`] (mio-server's admin socket); tokio-server registers the same table as
//! axum routes and hands the matched entry to [`route_matched`](super::route_matched).

use ocpp_proto::{ChargePointIdentity, Request};
use serde_json::{json, Value};

use super::json::{
    body_json, changed, notifications_json, parse_identity, stored_transactions, tariff_json,
    tariff_of, token_entry, token_json, with_charge_point,
};
use super::{charge_point_json, failure_response, AdminRequest, HttpResponse, Route};
use crate::{BootPolicy, Csms, SecurityProfile, SiteLimit, SplitCall, TokenStore};
use ocpp_proto::command_request;

/// A route's function: the CSMS, the request, and the segments its pattern's `{name}`s
/// matched, in order (raw, as in the path).
pub type AdminHandler = fn(&Csms, &AdminRequest, &[&str]) -> Route;

/// One route of the admin API.
#[derive(Debug, Clone, Copy)]
pub struct AdminRoute {
    /// `GET`, `PUT`, `POST` or `DELETE`.
    pub method: &'static str,
    /// The path pattern: literal segments and `{name}`s, each one segment
    /// (`/chargepoints/{identity}/call/{action}`).
    pub path: &'static str,
    /// What answers it.
    pub handler: AdminHandler,
}

/// Two routes are the same when their method and pattern are (the table has each pair once).
impl PartialEq for AdminRoute {
    fn eq(&self, other: &Self) -> bool {
        (self.method, self.path) == (other.method, other.path)
    }
}

impl Eq for AdminRoute {}

impl AdminRoute {
    /// The segments `path` gives this route's `{name}`s, in order, if its pattern matches
    /// (whatever the method). Leading and trailing slashes do not count.
    ///
    /// ```
    /// use ocpp_reference_csms::admin::ROUTES;
    /// let call = ROUTES.iter().find(|r| r.path == "/chargepoints/{identity}/call/{action}").unwrap();
    /// assert_eq!(call.params("/chargepoints/CP1/call/Reset"), Some(vec!["CP1", "Reset"]));
    /// assert_eq!(call.params("/chargepoints/CP1"), None);
    /// ```
    pub fn params<'p>(&self, path: &'p str) -> Option<Vec<&'p str>> {
        let mut params = Vec::new();
        let mut pattern = self.path.trim_matches('/').split('/');
        let mut segments = path.trim_matches('/').split('/');
        loop {
            match (pattern.next(), segments.next()) {
                (None, None) => return Some(params),
                (Some(p), Some(s)) if p.starts_with('{') && p.ends_with('}') => params.push(s),
                (Some(p), Some(s)) if p == s => {}
                _ => return None,
            }
        }
    }
}

/// Every route of the admin API (the table in [`super`]'s documentation says what each
/// answers).
pub const ROUTES: &[AdminRoute] = &[
    r("GET", "/chargepoints", list_charge_points),
    // This node's own, never read from the cluster (`cluster_read` does not take this path).
    r("GET", "/node/chargepoints", list_charge_points),
    r("GET", "/chargepoints/{identity}", get_charge_point),
    r("POST", "/chargepoints/{identity}/call/{action}", call),
    r(
        "GET",
        "/chargepoints/{identity}/notifications",
        notifications,
    ),
    r(
        "GET",
        "/chargepoints/{identity}/notifications/{action}",
        notifications_of,
    ),
    r("GET", "/chargepoints/{identity}/boot", get_boot),
    r("PUT", "/chargepoints/{identity}/boot", put_boot),
    r("DELETE", "/chargepoints/{identity}/boot", delete_boot),
    r("GET", "/chargepoints/{identity}/security", get_security),
    r("PUT", "/chargepoints/{identity}/security", put_security),
    r(
        "DELETE",
        "/chargepoints/{identity}/security",
        delete_security,
    ),
    r("PUT", "/chargepoints/{identity}/password", put_password),
    r(
        "DELETE",
        "/chargepoints/{identity}/password",
        delete_password,
    ),
    r("GET", "/tariff", get_default_tariff),
    r("GET", "/chargepoints/{identity}/tariff", get_tariff),
    r("PUT", "/chargepoints/{identity}/tariff", put_tariff),
    r("DELETE", "/chargepoints/{identity}/tariff", delete_tariff),
    r(
        "GET",
        "/chargepoints/{identity}/charging-profiles",
        charging_profiles,
    ),
    r("GET", "/chargepoints/{identity}/site-limit", get_site_limit),
    r("PUT", "/chargepoints/{identity}/site-limit", put_site_limit),
    r(
        "DELETE",
        "/chargepoints/{identity}/site-limit",
        delete_site_limit,
    ),
    r("POST", "/chargepoints/{identity}/renegotiate", renegotiate),
    r("GET", "/tokens", list_tokens),
    r("GET", "/tokens/{token}", get_token),
    r("PUT", "/tokens/{token}", put_token),
    r("DELETE", "/tokens/{token}", delete_token),
    r("GET", "/transactions", open_transactions),
    r("GET", "/chargepoints/{identity}/transactions", transactions),
    r("GET", "/metrics", metrics),
];

const fn r(method: &'static str, path: &'static str, handler: AdminHandler) -> AdminRoute {
    AdminRoute {
        method,
        path,
        handler,
    }
}

/// What [`find`] made of a request's method and path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Matched<'p> {
    /// This route, with its `{name}` segments.
    Route(&'static AdminRoute, Vec<&'p str>),
    /// A known path, another method: these are allowed (405, `Allow`).
    MethodNotAllowed(Vec<&'static str>),
    /// No route has this path (404).
    NotFound,
}

/// The route of `method` and `path` in [`ROUTES`].
///
/// ```
/// use ocpp_reference_csms::admin::{find, Matched};
/// assert!(matches!(find("GET", "/chargepoints/CP1"), Matched::Route(r, p) if r.method == "GET" && p == ["CP1"]));
/// assert_eq!(find("PATCH", "/chargepoints/CP1/boot"), Matched::MethodNotAllowed(vec!["GET", "PUT", "DELETE"]));
/// assert_eq!(find("GET", "/nothing"), Matched::NotFound);
/// ```
pub fn find<'p>(method: &str, path: &'p str) -> Matched<'p> {
    let mut allowed = Vec::new();
    for route in ROUTES {
        if let Some(params) = route.params(path) {
            if route.method == method {
                return Matched::Route(route, params);
            }
            allowed.push(route.method);
        }
    }
    if allowed.is_empty() {
        Matched::NotFound
    } else {
        Matched::MethodNotAllowed(allowed)
    }
}

/// An identity segment, or the answer to stop with.
fn identity_of(segment: &str) -> Result<ChargePointIdentity, Route> {
    parse_identity(segment).map_err(Route::Respond)
}

/// `handle` with the charge point of the first segment, or the answer why it names none.
fn with_identity(params: &[&str], handle: impl FnOnce(ChargePointIdentity) -> Route) -> Route {
    match identity_of(first(params)) {
        Ok(identity) => handle(identity),
        Err(route) => route,
    }
}

/// Every handler's first segment: the charge point or token.
fn first<'a>(params: &[&'a str]) -> &'a str {
    params.first().copied().unwrap_or_default()
}

fn respond(response: HttpResponse) -> Route {
    Route::Respond(response)
}

fn list_charge_points(csms: &Csms, _: &AdminRequest, _: &[&str]) -> Route {
    // One record's JSON tree at a time, written straight into the body: the peak is the
    // body, not a tree of every record.
    let default_tariff = csms.config().get_tariff();
    respond(csms.with_connected(|list| {
        let mut body = Vec::with_capacity(2 + list.len() * 160);
        body.push(b'[');
        for (i, cp) in list.iter().enumerate() {
            if i > 0 {
                body.push(b',');
            }
            // Writing a `Value` into a `Vec` cannot fail (no I/O, string keys).
            let _ = serde_json::to_writer(&mut body, &charge_point_json(cp, default_tariff));
        }
        body.push(b']');
        HttpResponse {
            status: 200,
            content_type: "application/json",
            body,
            www_authenticate: None,
            allow: None,
        }
    }))
}

fn get_charge_point(csms: &Csms, _: &AdminRequest, params: &[&str]) -> Route {
    respond(with_charge_point(csms, first(params), |cp| {
        charge_point_json(cp, csms.config().get_tariff())
    }))
}

fn call(csms: &Csms, request: &AdminRequest, params: &[&str]) -> Route {
    let (identity, action) = match params {
        [identity, action] => (*identity, *action),
        _ => return respond(HttpResponse::error(404, "no such resource")),
    };
    let identity = match identity_of(identity) {
        Ok(identity) => identity,
        Err(route) => return route,
    };
    let Some(version) = csms.version_of(&identity) else {
        return respond(HttpResponse::not_connected(&identity));
    };
    let body = match std::str::from_utf8(&request.body) {
        Ok("") => "{}",
        Ok(body) => body,
        Err(_) => return respond(HttpResponse::error(400, "body is not UTF-8")),
    };
    match command_request(version, action, body) {
        Ok(request) => {
            csms.on_command(&identity, &request);
            let limit = csms
                .items_per_message(&identity)
                .limit(action)
                .or(csms.config().get_items_per_message());
            let split = limit.map(|limit| SplitCall::plan(version, &request, limit));
            match split {
                Some(Ok(Some(split))) => Route::Calls {
                    identity,
                    split: Box::new(split),
                },
                Some(Err(error)) => respond(HttpResponse::error(400, &error)),
                Some(Ok(None)) | None => Route::Call { identity, request },
            }
        }
        // As the node holding a charge point answers a routed command that does not fit (the
        // same decoding): not sent, 400 `invalid_request`.
        Err(failure) => respond(failure_response(Some(version), None, action, &failure)),
    }
}

fn notifications(csms: &Csms, _: &AdminRequest, params: &[&str]) -> Route {
    respond(with_charge_point(csms, first(params), |cp| {
        let all: serde_json::Map<String, Value> = cp
            .extras
            .notifications
            .iter()
            .map(|(kind, list)| ((*kind).to_owned(), notifications_json(list)))
            .collect();
        Value::Object(all)
    }))
}

fn notifications_of(csms: &Csms, _: &AdminRequest, params: &[&str]) -> Route {
    let kind = params.get(1).copied().unwrap_or_default();
    respond(with_charge_point(csms, first(params), |cp| {
        cp.extras
            .notifications
            .get(kind)
            .map_or(Value::Array(Vec::new()), notifications_json)
    }))
}

fn get_boot(csms: &Csms, _: &AdminRequest, params: &[&str]) -> Route {
    respond(with_charge_point(csms, first(params), |cp| {
        json!({
            "policy": cp.boot_policy.map(BootPolicy::as_str),
            "default": csms.config().get_boot_policy().as_str(),
            "answered": cp.boot_status.map(BootPolicy::as_str),
        })
    }))
}

fn put_boot(csms: &Csms, request: &AdminRequest, params: &[&str]) -> Route {
    with_identity(params, |identity| {
        let status = body_json(request)
            .ok()
            .and_then(|v| v["status"].as_str().and_then(BootPolicy::parse));
        match status {
            Some(policy) => set_boot(csms, identity, Some(policy)),
            None => respond(HttpResponse::error(
                400,
                "expected {\"status\":\"Accepted\"|\"Pending\"|\"Rejected\"}",
            )),
        }
    })
}

fn delete_boot(csms: &Csms, _: &AdminRequest, params: &[&str]) -> Route {
    with_identity(params, |identity| set_boot(csms, identity, None))
}

fn set_boot(csms: &Csms, identity: ChargePointIdentity, policy: Option<BootPolicy>) -> Route {
    respond(changed(
        csms.set_boot_policy(&identity, policy),
        json!({ "identity": identity.as_str(), "policy": policy.map(BootPolicy::as_str) }),
    ))
}

fn get_security(csms: &Csms, _: &AdminRequest, params: &[&str]) -> Route {
    with_identity(params, |identity| {
        let (own, default, password) = csms.security_profile(&identity);
        respond(HttpResponse::json(
            200,
            &json!({
                "identity": identity.as_str(),
                "profile": own.map(SecurityProfile::number),
                "default": default.map(SecurityProfile::number),
                "password": password,
            }),
        ))
    })
}

fn put_security(csms: &Csms, request: &AdminRequest, params: &[&str]) -> Route {
    with_identity(params, |identity| {
        let profile = body_json(request)
            .ok()
            .and_then(|v| v["profile"].as_u64().and_then(SecurityProfile::from_number));
        match profile {
            Some(profile) => set_security(csms, identity, Some(profile)),
            None => respond(HttpResponse::error(400, "expected {\"profile\":1|2|3}")),
        }
    })
}

fn delete_security(csms: &Csms, _: &AdminRequest, params: &[&str]) -> Route {
    with_identity(params, |identity| set_security(csms, identity, None))
}

fn set_security(
    csms: &Csms,
    identity: ChargePointIdentity,
    profile: Option<SecurityProfile>,
) -> Route {
    respond(changed(
        csms.set_security_profile(&identity, profile),
        json!({
            "identity": identity.as_str(),
            "profile": profile.map(SecurityProfile::number),
        }),
    ))
}

fn put_password(csms: &Csms, request: &AdminRequest, params: &[&str]) -> Route {
    with_identity(params, |identity| {
        match body_json(request).ok().and_then(|v| password_of(&v)) {
            Some(password) => set_password(csms, identity, Some(password)),
            None => respond(HttpResponse::error(
                400,
                "expected {\"password\":\"...\"}: 1 to 64 characters, no control characters",
            )),
        }
    })
}

fn delete_password(csms: &Csms, _: &AdminRequest, params: &[&str]) -> Route {
    with_identity(params, |identity| set_password(csms, identity, None))
}

fn set_password(csms: &Csms, identity: ChargePointIdentity, password: Option<String>) -> Route {
    // The password itself is never echoed.
    respond(changed(
        csms.set_password(&identity, password.as_deref()),
        json!({ "identity": identity.as_str(), "password": password.is_some() }),
    ))
}

/// The `password` of a `PUT /chargepoints/ID/password` body: 1 to 64 characters, none a
/// control character (a Basic password is a line of text: RFC 7617 excludes controls).
fn password_of(body: &Value) -> Option<String> {
    let password = body["password"].as_str()?;
    let length = password.chars().count();
    let fits = (1..=64).contains(&length) && !password.chars().any(char::is_control);
    fits.then(|| password.to_owned())
}

fn get_default_tariff(csms: &Csms, _: &AdminRequest, _: &[&str]) -> Route {
    respond(HttpResponse::json(
        200,
        &json!({
            "default": csms.config().get_tariff().as_ref().map(tariff_json),
            "cost_updated_interval_s": csms.config().get_cost_updated_interval().as_secs_f64(),
        }),
    ))
}

fn get_tariff(csms: &Csms, _: &AdminRequest, params: &[&str]) -> Route {
    with_identity(params, |identity| {
        let (own, default) = csms.tariff_of(&identity);
        respond(HttpResponse::json(
            200,
            &json!({
                "identity": identity.as_str(),
                "tariff": own.as_ref().map(tariff_json),
                "default": default.as_ref().map(tariff_json),
                "applies": own.or(default).as_ref().map(tariff_json),
            }),
        ))
    })
}

fn put_tariff(csms: &Csms, request: &AdminRequest, params: &[&str]) -> Route {
    with_identity(params, |identity| {
        let default_currency = csms.config().get_tariff().map(|t| t.currency);
        match body_json(request).and_then(|body| tariff_of(&body, default_currency)) {
            Ok(tariff) => set_tariff(csms, identity, Some(tariff)),
            Err(error) => respond(HttpResponse::error(400, &error)),
        }
    })
}

fn delete_tariff(csms: &Csms, _: &AdminRequest, params: &[&str]) -> Route {
    with_identity(params, |identity| set_tariff(csms, identity, None))
}

fn set_tariff(csms: &Csms, identity: ChargePointIdentity, tariff: Option<crate::Tariff>) -> Route {
    respond(changed(
        csms.set_tariff(&identity, tariff),
        json!({
            "identity": identity.as_str(),
            "tariff": tariff.as_ref().map(tariff_json),
        }),
    ))
}

fn charging_profiles(csms: &Csms, _: &AdminRequest, params: &[&str]) -> Route {
    respond(with_charge_point(csms, first(params), |cp| {
        let default = csms.config().get_site_limit();
        let mut shown = cp.extras.smart_charging.to_json();
        shown["identity"] = json!(cp.identity.as_str());
        shown["default_site_limit"] = json!((!default.is_none()).then(|| default.to_json()));
        shown
    }))
}

fn get_site_limit(csms: &Csms, _: &AdminRequest, params: &[&str]) -> Route {
    with_identity(params, |identity| {
        let (own, default) = csms.site_limit(&identity);
        respond(HttpResponse::json(
            200,
            &site_limit_json(&identity, own, default),
        ))
    })
}

fn put_site_limit(csms: &Csms, request: &AdminRequest, params: &[&str]) -> Route {
    with_identity(params, |identity| {
        let limit = match body_json(request).map(|body| SiteLimit::from_json(&body)) {
            Ok(Ok(limit)) => limit,
            Ok(Err(error)) => return respond(HttpResponse::error(400, &error.to_string())),
            Err(error) => return respond(HttpResponse::error(400, &error)),
        };
        let requests = csms.set_site_limit(&identity, Some(limit));
        renegotiation(csms, identity, requests)
    })
}

fn delete_site_limit(csms: &Csms, _: &AdminRequest, params: &[&str]) -> Route {
    with_identity(params, |identity| {
        let requests = csms.set_site_limit(&identity, None);
        renegotiation(csms, identity, requests)
    })
}

fn renegotiate(csms: &Csms, _: &AdminRequest, params: &[&str]) -> Route {
    with_identity(params, |identity| {
        let requests = csms.renegotiate(&identity);
        renegotiation(csms, identity, requests)
    })
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
            None => respond(HttpResponse::error(500, "no CALL to send")),
        },
        (2.., Some(version)) => match SplitCall::sequence(version, requests) {
            Some(split) => Route::Calls {
                identity,
                split: Box::new(split),
            },
            None => respond(HttpResponse::error(500, "no CALL to send")),
        },
        _ => {
            let (own, default) = csms.site_limit(&identity);
            let mut body = site_limit_json(&identity, own, default);
            body["renegotiated"] = json!(0);
            respond(HttpResponse::json(200, &body))
        }
    }
}

fn list_tokens(csms: &Csms, _: &AdminRequest, _: &[&str]) -> Route {
    let store = csms.tokens();
    let tokens: serde_json::Map<String, Value> = store
        .iter()
        .flat_map(TokenStore::iter)
        .map(|(id, entry)| (id.to_owned(), token_json(entry)))
        .collect();
    respond(HttpResponse::json(
        200,
        &json!({
            "enabled": store.is_some(),
            "master_pass": store.as_ref().and_then(TokenStore::master_pass),
            "tokens": tokens,
        }),
    ))
}

fn get_token(csms: &Csms, _: &AdminRequest, params: &[&str]) -> Route {
    let token = first(params);
    respond(match csms.tokens().as_ref().and_then(|s| s.get(token)) {
        Some(entry) => HttpResponse::json(200, &token_json(entry)),
        None => HttpResponse::error(404, &format!("unknown token {token}")),
    })
}

fn put_token(csms: &Csms, request: &AdminRequest, params: &[&str]) -> Route {
    respond(match token_entry(request) {
        Ok(entry) => {
            let body = token_json(&entry);
            changed(csms.put_token(first(params), entry), body)
        }
        Err(error) => HttpResponse::error(400, &error),
    })
}

fn delete_token(csms: &Csms, _: &AdminRequest, params: &[&str]) -> Route {
    let token = first(params);
    respond(match csms.remove_token(token) {
        Ok(true) => HttpResponse::json(200, &json!({ "deleted": token })),
        Ok(false) => HttpResponse::error(404, &format!("unknown token {token}")),
        Err(e) => HttpResponse::error(503, &format!("not saved: {e}")),
    })
}

fn open_transactions(csms: &Csms, _: &AdminRequest, _: &[&str]) -> Route {
    respond(stored_transactions(csms, None, true))
}

fn transactions(csms: &Csms, _: &AdminRequest, params: &[&str]) -> Route {
    with_identity(params, |identity| {
        respond(stored_transactions(csms, Some(identity.as_str()), false))
    })
}

fn metrics(csms: &Csms, _: &AdminRequest, _: &[&str]) -> Route {
    respond(HttpResponse {
        status: 200,
        content_type: "text/plain; version=0.0.4; charset=utf-8",
        body: csms.metrics().render().into_bytes(),
        www_authenticate: None,
        allow: None,
    })
}
