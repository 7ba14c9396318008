//! The admin API's HTTP: a request read from bytes (bounded head and body, the caller's
//! deadline header) and a response to write.

use std::time::{Duration, Instant};

use ocpp_proto::{CallFailure, ChargePointIdentity, Delivery};
use serde_json::{json, Value};

use super::{failure_message, failure_only};
use crate::admin_auth::AuthorizationHeader;

/// The largest request head (request line and headers).
pub const MAX_HEAD: usize = 8 * 1024;

/// The largest request body (a CALL payload).
pub const MAX_BODY: usize = 64 * 1024;

/// The HTTP status the admin API answers a command with when its CALL came to `failure`: the
/// one table every path uses (local or through a cluster, on either server). A status a
/// client would retry (503) is only used when the CALL certainly was not sent; one that may
/// have reached the charge point is 504 whatever happened to it. (HTTP is the admin API's:
/// the core's [`CallFailure`] only says what happened and [`CallFailure::delivery`].)
///
/// | failure | delivery | status |
/// | --- | --- | --- |
/// | `ErrorResponse`, `InvalidResponse` (the charge point answered) | `Answered` | 502 |
/// | `NotConnected` (connected to no node) | `NotSent` | 404 |
/// | `InvalidRequest` (the request does not fit the charge point's version) | `NotSent` | 400 |
/// | `WrongVersion` (a typed request of another version) | `NotSent` | 409 |
/// | `QueueFull`, `ClosedBeforeSent`, `DeadlinePassed`, `OwnerUnreachable` | `NotSent` | 503: retry |
/// | `Timeout`, `Disconnected` (sent, no answer) | `Unknown` | 504: may have run |
///
/// A CALLRESULT is 200.
///
/// ```
/// use ocpp_proto::CallFailure;
/// use ocpp_reference_csms::admin::http_status;
///
/// assert_eq!(http_status(&CallFailure::OwnerUnreachable), 503);
/// assert_eq!(http_status(&CallFailure::Disconnected), 504);
/// ```
pub fn http_status(failure: &CallFailure) -> u16 {
    match failure {
        CallFailure::NotConnected => 404,
        CallFailure::InvalidRequest { .. } => 400,
        CallFailure::WrongVersion => 409,
        // The rest, and any failure a later core adds, by what a retry may do.
        _ => match failure.delivery() {
            Delivery::Answered => 502,
            Delivery::NotSent => 503,
            // Unknown (it may have run), and anything not known to be safe to retry.
            _ => 504,
        },
    }
}

/// A parsed HTTP request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminRequest {
    /// `GET`, `POST`...
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The body (`Content-Length` bytes).
    pub body: Vec<u8>,
    /// The `Authorization` header, for [`AdminAuth::check`](crate::admin_auth::AdminAuth::check).
    pub authorization: Option<AuthorizationHeader>,
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
                authorization = Some(AuthorizationHeader::new(header.value));
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
    /// The `WWW-Authenticate` challenge of a 401 ([`admin_auth`](crate::admin_auth)).
    pub www_authenticate: Option<&'static str>,
    /// The `Allow` header of a 405: the methods the path has.
    pub allow: Option<String>,
}

impl HttpResponse {
    /// A JSON response.
    pub fn json(status: u16, value: &Value) -> Self {
        HttpResponse {
            status,
            content_type: "application/json",
            body: value.to_string().into_bytes(),
            www_authenticate: None,
            allow: None,
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
            allow: None,
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
        let allow = match &self.allow {
            Some(methods) => format!("Allow: {methods}\r\n"),
            None => String::new(),
        };
        let mut out = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{challenge}{allow}Connection: close\r\n\r\n",
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

pub(super) fn reason_phrase(status: u16) -> &'static str {
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
