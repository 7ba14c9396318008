//! The admin HTTP interface, minus the sockets: parse a request from bytes, route it, and
//! build the response bytes. The I/O loop owns the socket and, for a command, sends the CALL
//! to the charge point's connection and later turns its outcome into a response with
//! [`call_response`].
//!
//! | request | answer |
//! | --- | --- |
//! | `GET /chargepoints` | 200, JSON list of connected charge points |
//! | `GET /chargepoints/{identity}` | 200, one charge point (connected or not), 404 unknown |
//! | `POST /chargepoints/{identity}/call/{Action}` + JSON body | [`Route::Call`]: 200 with the CALLRESULT, 502 CALLERROR, 504 timeout; 404 not connected, 400 invalid payload |
//! | `GET /metrics` | 200, Prometheus text |
//!
//! One request per connection (`Connection: close`): simple, and admin traffic is light.
//!
//! ```
//! use ocpp_examples::csms::admin::{self, AdminRequest, Route};
//! use ocpp_examples::csms::{Csms, CsmsConfig};
//! let csms = Csms::new(CsmsConfig::default());
//! let (request, _) = AdminRequest::parse(b"GET /chargepoints HTTP/1.1\r\n\r\n").unwrap().unwrap();
//! let Route::Respond(response) = admin::route(&csms, &request) else { panic!() };
//! assert_eq!(response.status, 200);
//! assert_eq!(response.body, b"[]");
//! ```

use std::time::SystemTime;

use ocpp_messages::version::OcppVersion;
use ocpp_messages::{v1_6, v2_0_1, v2_1, DecodeError};
use ocpp_server_core::{CallOutcome, ChargePointIdentity, RefusalReason, Request, Response};
use serde_json::{json, Value};

use super::{date_time, ChargePoint, Csms};

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
        for header in request.headers.iter() {
            if header.name.eq_ignore_ascii_case("content-length") {
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
            },
            total,
        )))
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
}

impl HttpResponse {
    /// A JSON response.
    pub fn json(status: u16, value: &Value) -> Self {
        HttpResponse {
            status,
            content_type: "application/json",
            body: value.to_string().into_bytes(),
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
        }
    }

    /// 404: the charge point has no open connection.
    pub fn not_connected(identity: &ChargePointIdentity) -> Self {
        Self::error(404, &format!("charge point {identity} is not connected"))
    }

    /// 504: no answer in time.
    pub fn timeout() -> Self {
        Self::error(504, "the charge point did not answer in time")
    }

    /// 503: the connection refused the CALL (output full, queue full, closing...).
    pub fn refused(reason: RefusalReason) -> Self {
        Self::error(503, &format!("the CALL was not sent: {reason}"))
    }

    /// 502: the connection ended before the answer.
    pub fn disconnected() -> Self {
        Self::error(502, "the charge point disconnected before answering")
    }

    /// 503: the server is shutting down.
    pub fn shutting_down() -> Self {
        Self::error(503, "the server is shutting down")
    }

    /// The response as bytes on the wire (HTTP/1.1, `Connection: close`).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
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
        404 => "Not Found",
        405 => "Method Not Allowed",
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
}

/// Routes an admin request. A command for a charge point that is not connected gets 404; a
/// body that does not decode as the action's request in the charge point's version gets 400.
pub fn route(csms: &Csms, request: &AdminRequest) -> Route {
    csms.metrics().admin_requests.inc();
    let segments: Vec<&str> = request.path.trim_matches('/').split('/').collect();
    let method = request.method.as_str();
    let response = match (method, segments.as_slice()) {
        ("GET", ["chargepoints"]) => {
            let list: Vec<Value> = csms.connected().iter().map(charge_point_json).collect();
            HttpResponse::json(200, &Value::Array(list))
        }
        ("GET", ["chargepoints", identity]) => match parse_identity(identity) {
            Ok(identity) => match csms.charge_point(&identity) {
                Some(cp) => HttpResponse::json(200, &charge_point_json(&cp)),
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
                Ok(request) => return Route::Call { identity, request },
                Err(error) => HttpResponse::error(400, &format!("{action}: {error}")),
            }
        }
        ("GET", ["metrics"]) => HttpResponse {
            status: 200,
            content_type: "text/plain; version=0.0.4; charset=utf-8",
            body: csms.metrics().render().into_bytes(),
        },
        (_, ["chargepoints"] | ["chargepoints", _] | ["metrics"])
        | (_, ["chargepoints", _, "call", _]) => HttpResponse::error(405, "method not allowed"),
        _ => HttpResponse::error(404, "no such resource"),
    };
    Route::Respond(response)
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

/// The answer to a command: 200 `{"id","action","result"}` for a CALLRESULT, 502
/// `{"id","action","error":{"code","description","details"}}` for a CALLERROR or an
/// unreadable CALLRESULT (the code spelled for `version`), 504 for a timeout.
pub fn call_response(
    version: OcppVersion,
    id: &str,
    action: &str,
    outcome: &CallOutcome,
) -> HttpResponse {
    match outcome {
        CallOutcome::Result(response) => HttpResponse::json(
            200,
            &json!({ "id": id, "action": action, "result": response_json(response) }),
        ),
        CallOutcome::Error {
            code,
            description,
            details,
        } => {
            let details: Value = serde_json::from_str(details).unwrap_or(Value::Null);
            let code = code.as_str(version);
            HttpResponse::json(
                502,
                &json!({ "id": id, "action": action, "error": {
                    "code": code, "description": description, "details": details } }),
            )
        }
        CallOutcome::Timeout => HttpResponse::timeout(),
        CallOutcome::InvalidResult { description } => HttpResponse::json(
            502,
            &json!({ "id": id, "action": action, "error": {
                "code": "InvalidResult", "description": description } }),
        ),
        _ => HttpResponse::error(502, "unexpected outcome"),
    }
}

fn response_json(response: &Response) -> Value {
    serde_json::to_value(response).unwrap_or(Value::Null)
}

fn parse_identity(segment: &str) -> Result<ChargePointIdentity, HttpResponse> {
    ChargePointIdentity::from_path(&format!("/{segment}"), false)
        .map_err(|e| HttpResponse::error(400, &format!("bad identity: {e}")))
}

fn time_json(time: SystemTime) -> Value {
    Value::String(date_time(time).as_str().to_owned())
}

/// A charge point as the admin API shows it.
pub fn charge_point_json(cp: &ChargePoint) -> Value {
    let connectors: serde_json::Map<String, Value> = cp
        .connectors
        .iter()
        .map(|(label, state)| {
            let mut value = json!({ "status": state.status, "at": time_json(state.at) });
            if let Some(code) = &state.error_code {
                value["error_code"] = json!(code);
            }
            (label.clone(), value)
        })
        .collect();
    let transactions: Vec<Value> = cp
        .transactions
        .iter()
        .map(|t| {
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
            })
        })
        .collect();
    json!({
        "identity": cp.identity.as_str(),
        "connected": cp.session.is_some(),
        "version": cp.session.as_ref().map(|s| s.version.as_str()),
        "connected_since": cp.session.as_ref().map(|s| time_json(s.since)),
        "status": cp.status(),
        "boot": cp.registration.as_ref().map(|r| json!({
            "vendor": r.vendor,
            "model": r.model,
            "serial_number": r.serial_number,
            "firmware_version": r.firmware_version,
            "reason": r.reason,
            "at": time_json(r.at),
        })),
        "last_heartbeat": cp.last_heartbeat.map(time_json),
        "connectors": connectors,
        "transactions": transactions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::csms::CsmsConfig;

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
            Route::Call { .. } => 0,
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
    fn call_outcomes() {
        let reset = v1_6::Response::from(v1_6::ResetResponse {
            status: v1_6::ResetStatus::Accepted,
        });
        let ok = call_response(
            OcppVersion::V1_6,
            "1",
            "Reset",
            &CallOutcome::Result(reset.into()),
        );
        assert_eq!(ok.status, 200);
        let body: Value = serde_json::from_slice(&ok.body).unwrap();
        assert_eq!(body["result"]["status"], "Accepted");
        assert_eq!(
            call_response(OcppVersion::V1_6, "1", "Reset", &CallOutcome::Timeout).status,
            504
        );
        let bytes = ok.to_bytes();
        assert!(bytes.starts_with(b"HTTP/1.1 200 OK\r\n"));
    }
}
