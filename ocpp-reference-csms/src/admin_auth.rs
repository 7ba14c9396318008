//! Who may use the admin interface: bearer tokens (RFC 6750 §2.1, `Authorization: Bearer
//! TOKEN`). The admin API starts charging sessions, resets stations and changes passwords,
//! so a server that listens for it beyond loopback must hold at least one token
//! (the servers' command line, `ocpp-examples`' `server_cli`, refuses to start otherwise).
//!
//! - Without tokens ([`AdminAuth::open`], the default on a loopback address) every request is
//!   let in.
//! - With tokens every request must carry one of them, `/metrics` included unless
//!   [`AdminAuth::metrics_public`]; others get 401 with `WWW-Authenticate: Bearer` (plus
//!   `error="invalid_token"` when a token was given and is wrong).
//! - A token is kept only as its SHA-256 digest and compared digest to digest in constant
//!   time, against every token (no early exit): the time taken tells neither how much of a
//!   token matched nor its length. Tokens are never logged: [`AuthorizationHeader`]'s `Debug`
//!   prints no value and [`AdminAuth`]'s only a count.
//!
//! ```
//! use ocpp_reference_csms::admin::AdminRequest;
//! use ocpp_reference_csms::admin_auth::AdminAuth;
//! let auth = AdminAuth::from_tokens(["s3cret-token-0123"]).unwrap();
//! let ask = |head: &str| AdminRequest::parse(head.as_bytes()).unwrap().unwrap().0;
//! let refused = auth.check(&ask("GET /chargepoints HTTP/1.1\r\n\r\n")).unwrap_err();
//! assert_eq!(refused.status, 401);
//! assert_eq!(refused.www_authenticate, Some("Bearer realm=\"ocpp-admin\""));
//! let request = ask("GET /chargepoints HTTP/1.1\r\nAuthorization: Bearer s3cret-token-0123\r\n\r\n");
//! assert!(auth.check(&request).is_ok());
//! ```

use std::collections::VecDeque;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use ring::digest::{digest, SHA256};
use subtle::{Choice, ConstantTimeEq};

use super::admin::{AdminRequest, HttpResponse};
use super::metrics::Metrics;

/// The `WWW-Authenticate` challenge of a request without a token.
const CHALLENGE: &str = "Bearer realm=\"ocpp-admin\"";
/// The challenge of a request whose token is not one of ours (RFC 6750 §3.1).
const CHALLENGE_INVALID: &str = "Bearer realm=\"ocpp-admin\", error=\"invalid_token\"";

/// The value of a request's `Authorization` header. Its `Debug` never shows the value.
#[derive(Clone, PartialEq, Eq)]
pub struct AuthorizationHeader(Vec<u8>);

impl AuthorizationHeader {
    /// The header's value as received.
    pub fn new(value: impl Into<Vec<u8>>) -> Self {
        AuthorizationHeader(value.into())
    }

    /// The token of `Bearer TOKEN` (the scheme is case-insensitive, RFC 9110 §11.1); `None`
    /// for another scheme or no token.
    fn bearer(&self) -> Option<&[u8]> {
        let value = self.0.trim_ascii();
        let scheme = value.get(..6)?;
        let rest = value.get(6..)?;
        if !scheme.eq_ignore_ascii_case(b"bearer") || !rest.first()?.is_ascii_whitespace() {
            return None;
        }
        let token = rest.trim_ascii();
        (!token.is_empty()).then_some(token)
    }
}

impl fmt::Debug for AuthorizationHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AuthorizationHeader(..)")
    }
}

/// Why the admin tokens could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdminAuthError {
    /// The token file could not be read.
    #[error("{}: cannot read the admin tokens: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The file system's error.
        error: std::io::Error,
    },
    /// A token is not usable: it must be 16 to 4096 visible ASCII characters (RFC 6750's
    /// b64token, long enough not to be guessed).
    #[error("{source_name}: the admin token on line {line} {reason}")]
    BadToken {
        /// The file, or the environment variable.
        source_name: String,
        /// Its line (1-based).
        line: usize,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// No token at all: an empty file would lock everyone out (or, read as "no tokens",
    /// let everyone in).
    #[error("{0}: no admin token in it (one per line)")]
    Empty(String),
}

/// The shortest token accepted: 16 characters.
pub const MIN_TOKEN_LEN: usize = 16;
/// The longest token accepted.
pub const MAX_TOKEN_LEN: usize = 4096;

/// Who may use the admin interface (see the [module](self)).
#[derive(Clone, Default)]
pub struct AdminAuth {
    /// The SHA-256 digests of the tokens; empty: the interface is open.
    tokens: Vec<[u8; 32]>,
    metrics_public: bool,
}

impl fmt::Debug for AdminAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AdminAuth")
            .field("tokens", &self.tokens.len())
            .field("metrics_public", &self.metrics_public)
            .finish()
    }
}

impl AdminAuth {
    /// No tokens: every request is let in (for an interface on a loopback address).
    pub fn open() -> Self {
        AdminAuth::default()
    }

    /// These tokens, each checked as a line of a token file would be.
    ///
    /// # Errors
    /// A token shorter than [`MIN_TOKEN_LEN`], longer than [`MAX_TOKEN_LEN`] or with
    /// characters other than visible ASCII; no token at all.
    pub fn from_tokens<T: AsRef<str>>(
        tokens: impl IntoIterator<Item = T>,
    ) -> Result<Self, AdminAuthError> {
        let mut auth = AdminAuth::open();
        for (index, token) in tokens.into_iter().enumerate() {
            auth.add("the admin tokens", index + 1, token.as_ref())?;
        }
        auth.not_empty("the admin tokens")
    }

    /// The tokens of `path`, one per line; blank lines and lines starting with `#` are
    /// skipped, surrounding whitespace is trimmed.
    ///
    /// # Errors
    /// The file cannot be read, holds a bad token ([`AdminAuth::from_tokens`]) or none.
    pub fn load(path: &Path) -> Result<Self, AdminAuthError> {
        let text = std::fs::read_to_string(path).map_err(|error| AdminAuthError::Read {
            path: path.to_owned(),
            error,
        })?;
        let name = path.display().to_string();
        let mut auth = AdminAuth::open();
        auth.add_lines(&name, &text)?;
        auth.not_empty(&name)
    }

    /// Adds the tokens of `text` (lines, as in a token file) read from `source_name` (an
    /// environment variable's name, for the errors).
    ///
    /// # Errors
    /// As [`AdminAuth::load`], for a bad token.
    pub fn add_lines(&mut self, source_name: &str, text: &str) -> Result<(), AdminAuthError> {
        for (index, line) in text.lines().enumerate() {
            let token = line.trim();
            if token.is_empty() || token.starts_with('#') {
                continue;
            }
            self.add(source_name, index + 1, token)?;
        }
        Ok(())
    }

    /// Whether `/metrics` answers without a token (for a Prometheus that scrapes without
    /// one); every other route still needs one.
    pub fn metrics_public(mut self, public: bool) -> Self {
        self.metrics_public = public;
        self
    }

    /// Whether every request is let in (no token).
    pub fn is_open(&self) -> bool {
        self.tokens.is_empty()
    }

    /// How many tokens are accepted.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether no token is accepted (the same as [`AdminAuth::is_open`]).
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// Lets `request` in, or gives the 401 to answer.
    ///
    /// # Errors
    /// The 401 response: no `Authorization: Bearer` token, or not one of ours.
    pub fn check(&self, request: &AdminRequest) -> Result<(), HttpResponse> {
        if self.is_open()
            || (self.metrics_public && request.method == "GET" && request.path == "/metrics")
        {
            return Ok(());
        }
        let Some(token) = request
            .authorization
            .as_ref()
            .and_then(AuthorizationHeader::bearer)
        else {
            return Err(unauthorized(
                CHALLENGE,
                "this admin interface needs `Authorization: Bearer TOKEN`",
            ));
        };
        let presented = sha256(token);
        let known = self.tokens.iter().fold(Choice::from(0), |known, token| {
            known | token.ct_eq(&presented)
        });
        if bool::from(known) {
            Ok(())
        } else {
            Err(unauthorized(
                CHALLENGE_INVALID,
                "the admin token is not valid",
            ))
        }
    }

    /// [`AdminAuth::check`], counting a refusal in `ocpp_admin_refused_total{reason="token"}`.
    ///
    /// # Errors
    /// As [`AdminAuth::check`].
    pub fn admit(&self, request: &AdminRequest, metrics: &Metrics) -> Result<(), HttpResponse> {
        self.check(request).inspect_err(|_| {
            metrics.admin_refused(AdminRefused::Token).inc();
        })
    }

    fn add(&mut self, source_name: &str, line: usize, token: &str) -> Result<(), AdminAuthError> {
        let reason = if token.len() < MIN_TOKEN_LEN {
            Some("is shorter than 16 characters")
        } else if token.len() > MAX_TOKEN_LEN {
            Some("is longer than 4096 characters")
        } else if !token.bytes().all(|b| b.is_ascii_graphic()) {
            Some("has characters other than visible ASCII")
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(AdminAuthError::BadToken {
                source_name: source_name.to_owned(),
                line,
                reason,
            });
        }
        self.tokens.push(sha256(token.as_bytes()));
        Ok(())
    }

    fn not_empty(self, source_name: &str) -> Result<Self, AdminAuthError> {
        if self.is_open() {
            return Err(AdminAuthError::Empty(source_name.to_owned()));
        }
        Ok(self)
    }
}

/// The headers a browser sets that tell where a request comes from, and whether it has a
/// body: what [`AdminGuard::check`] decides on. Both servers fill it from the request head,
/// before the body is read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FetchHeaders<'a> {
    /// `Host` (RFC 9110 §7.2).
    pub host: Option<&'a [u8]>,
    /// `Origin` (RFC 6454 §7).
    pub origin: Option<&'a [u8]>,
    /// `Sec-Fetch-Site` (Fetch Metadata Request Headers §2.4).
    pub sec_fetch_site: Option<&'a [u8]>,
    /// `Content-Type` (RFC 9110 §8.3).
    pub content_type: Option<&'a [u8]>,
    /// Whether a body follows (`Content-Length` above 0, or `Transfer-Encoding`).
    pub has_body: bool,
}

impl<'a> FetchHeaders<'a> {
    /// The headers of a head parsed by `httparse` (mio-server).
    pub fn from_httparse(headers: &[httparse::Header<'a>]) -> Self {
        let mut fetch = FetchHeaders::default();
        for header in headers {
            let name = header.name;
            let value = Some(header.value);
            if name.eq_ignore_ascii_case("host") {
                fetch.host = value;
            } else if name.eq_ignore_ascii_case("origin") {
                fetch.origin = value;
            } else if name.eq_ignore_ascii_case("sec-fetch-site") {
                fetch.sec_fetch_site = value;
            } else if name.eq_ignore_ascii_case("content-type") {
                fetch.content_type = value;
            } else if name.eq_ignore_ascii_case("content-length") {
                fetch.has_body |= header.value.trim_ascii() != b"0";
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                fetch.has_body = true;
            }
        }
        fetch
    }
}

/// Why [`AdminGuard::check`] refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AdminRefusal {
    /// No `Host` header: the request cannot be told from a DNS-rebound one (400; RFC 9112
    /// §3.2 asks 400 of an HTTP/1.1 request without one).
    #[error("the request has no Host header")]
    NoHost,
    /// `Host` names another server: a DNS-rebinding page, or a misdirected request (403).
    #[error("the Host header does not name this admin interface")]
    ForeignHost,
    /// `Origin` is another site's (or `null`): a cross-origin page (403).
    #[error("the Origin header is not this admin interface's own origin")]
    ForeignOrigin,
    /// `Sec-Fetch-Site` is `cross-site` or `same-site` (403).
    #[error("Sec-Fetch-Site says the request comes from another site")]
    CrossSite,
    /// A body that is not `Content-Type: application/json` (415): the only body a page
    /// cannot send across origins without a CORS preflight, which we never answer.
    #[error("a request body must be Content-Type: application/json")]
    ContentType,
}

impl AdminRefusal {
    /// The HTTP status: 400, 403 or 415. A foreign `Host` gets 403 rather than 421
    /// Misdirected Request: 421 invites a client to retry on another connection (RFC 9110
    /// §15.5.20), while a rebinding page must be told no, for good, whatever connection it
    /// uses.
    pub fn status(self) -> u16 {
        match self {
            AdminRefusal::NoHost => 400,
            AdminRefusal::ForeignHost | AdminRefusal::ForeignOrigin | AdminRefusal::CrossSite => {
                403
            }
            AdminRefusal::ContentType => 415,
        }
    }

    /// What `ocpp_admin_refused_total` counts it as.
    pub fn counted_as(self) -> AdminRefused {
        match self {
            AdminRefusal::NoHost | AdminRefusal::ForeignHost => AdminRefused::Host,
            AdminRefusal::ForeignOrigin => AdminRefused::Origin,
            AdminRefusal::CrossSite => AdminRefused::FetchSite,
            AdminRefusal::ContentType => AdminRefused::ContentType,
        }
    }

    /// The answer: the status and a JSON `{"error": why}`.
    pub fn response(self) -> HttpResponse {
        HttpResponse::error(self.status(), &self.to_string())
    }
}

/// Refuses what a web page could send to the admin interface, whether or not it needs a
/// token: a cross-site request (CSRF: a `text/plain` POST needs no CORS preflight, so a page
/// anywhere could reset a station) and a DNS-rebound one (a page whose name now resolves to
/// 127.0.0.1 is "same-origin" to the browser and could read everything).
///
/// - `Host` must name this interface: the listener's IP (and, on loopback or a wildcard
///   address, `localhost`, `127.0.0.1` and `[::1]`), or a name given with `--admin-host`; a
///   port, if given, must be the listener's. A rebinding page's requests carry its own name.
/// - `Origin`, when sent, must be `http://` or `https://` and such a host (never `null`).
/// - `Sec-Fetch-Site`, when sent, must be `same-origin` or `none` (typed by the user).
/// - A body must be `Content-Type: application/json` (415 otherwise).
///
/// Clients that are not browsers (curl, scripts) send none of `Origin` and `Sec-Fetch-Site`
/// and a `Host` naming the address they connect to, and pass.
///
/// ```
/// use ocpp_reference_csms::admin_auth::{AdminGuard, AdminRefusal, FetchHeaders};
/// let guard = AdminGuard::new("127.0.0.1:9001".parse().unwrap(), &[]);
/// fn ask<'a>(host: &'a str, origin: Option<&'a str>) -> FetchHeaders<'a> {
///     FetchHeaders {
///         host: Some(host.as_bytes()),
///         origin: origin.map(str::as_bytes),
///         ..FetchHeaders::default()
///     }
/// }
/// assert_eq!(guard.check(&ask("127.0.0.1:9001", None)), Ok(()));
/// assert_eq!(guard.check(&ask("localhost:9001", Some("http://localhost:9001"))), Ok(()));
/// assert_eq!(guard.check(&ask("evil.example:9001", None)), Err(AdminRefusal::ForeignHost));
/// let from_a_page = ask("127.0.0.1:9001", Some("https://evil.example"));
/// assert_eq!(guard.check(&from_a_page), Err(AdminRefusal::ForeignOrigin));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminGuard {
    /// The host names accepted, lowercase (IPv6 addresses in brackets).
    names: Vec<String>,
    /// The listener's port.
    port: u16,
}

impl AdminGuard {
    /// The guard of an admin interface listening on `listener` (the bound address: its port
    /// is the real one), also answering to `names` (`--admin-host`; a name, or an IP address).
    pub fn new(listener: SocketAddr, names: &[String]) -> Self {
        let mut accepted = Vec::new();
        let ip = listener.ip();
        if !ip.is_unspecified() {
            accepted.push(host_name(ip));
        }
        if ip.is_loopback() || ip.is_unspecified() {
            for name in ["localhost", "127.0.0.1", "[::1]"] {
                accepted.push(name.to_owned());
            }
        }
        for name in names {
            let name = name.trim().to_ascii_lowercase();
            let name = match name.parse::<IpAddr>() {
                Ok(ip) => host_name(ip),
                Err(_) => name,
            };
            accepted.push(name);
        }
        accepted.sort();
        accepted.dedup();
        AdminGuard {
            names: accepted,
            port: listener.port(),
        }
    }

    /// The host names accepted (lowercase; IPv6 addresses in brackets).
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Lets a request head through, or says why not (see the type's docs).
    ///
    /// # Errors
    /// The refusal: a missing or foreign `Host`, a foreign `Origin`, `Sec-Fetch-Site:
    /// cross-site` or `same-site`, a body that is not JSON.
    pub fn check(&self, headers: &FetchHeaders<'_>) -> Result<(), AdminRefusal> {
        let host = headers.host.ok_or(AdminRefusal::NoHost)?;
        if !self.is_ours(host) {
            return Err(AdminRefusal::ForeignHost);
        }
        if let Some(site) = headers.sec_fetch_site {
            let site = site.trim_ascii();
            if !site.eq_ignore_ascii_case(b"same-origin") && !site.eq_ignore_ascii_case(b"none") {
                return Err(AdminRefusal::CrossSite);
            }
        }
        if let Some(origin) = headers.origin {
            let origin = origin.trim_ascii();
            let authority = origin
                .strip_prefix(b"http://")
                .or_else(|| origin.strip_prefix(b"https://"));
            match authority {
                Some(authority) if !authority.contains(&b'/') && self.is_ours(authority) => {}
                _ => return Err(AdminRefusal::ForeignOrigin),
            }
        }
        if headers.has_body {
            let media_type = headers
                .content_type
                .and_then(|value| value.split(|&b| b == b';').next())
                .map(<[u8]>::trim_ascii);
            if !media_type.is_some_and(|t| t.eq_ignore_ascii_case(b"application/json")) {
                return Err(AdminRefusal::ContentType);
            }
        }
        Ok(())
    }

    /// [`AdminGuard::check`], counting a refusal in `ocpp_admin_refused_total` and giving
    /// the answer to send.
    ///
    /// # Errors
    /// The refusal's answer ([`AdminRefusal::response`]).
    pub fn admit(&self, headers: &FetchHeaders<'_>, metrics: &Metrics) -> Result<(), HttpResponse> {
        self.check(headers).map_err(|refusal| {
            metrics.admin_refused(refusal.counted_as()).inc();
            tracing::info!(%refusal, "admin request refused");
            refusal.response()
        })
    }

    /// Whether `authority` (`name`, `name:port`, `[v6]:port`) is this interface.
    fn is_ours(&self, authority: &[u8]) -> bool {
        let Ok(authority) = std::str::from_utf8(authority.trim_ascii()) else {
            return false;
        };
        let (name, port) = match authority.rfind(':') {
            // `[::1]` alone has colons but no port: a port follows the `]`.
            Some(colon) if !authority[colon..].contains(']') => {
                (&authority[..colon], Some(&authority[colon + 1..]))
            }
            _ => (authority, None),
        };
        if let Some(port) = port {
            if port.parse::<u16>().ok() != Some(self.port) {
                return false;
            }
        }
        let name = name.strip_suffix('.').unwrap_or(name);
        self.names.iter().any(|n| n.eq_ignore_ascii_case(name))
    }
}

/// Why the admin interface refused a request or a connection (the label of
/// `ocpp_admin_refused_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AdminRefused {
    /// A missing or foreign `Host` (DNS rebinding).
    Host,
    /// A foreign `Origin`.
    Origin,
    /// `Sec-Fetch-Site: cross-site` or `same-site`.
    FetchSite,
    /// A body that is not `application/json`.
    ContentType,
    /// No bearer token, or a wrong one.
    Token,
    /// A connection closed for the limit on admin connections (an idle one making room, or
    /// a new one when every slot serves a request).
    Limit,
    /// A connection closed because its request head or body did not come in time.
    Timeout,
}

impl AdminRefused {
    /// Every reason, in the order rendered.
    pub const ALL: [AdminRefused; 7] = [
        AdminRefused::Host,
        AdminRefused::Origin,
        AdminRefused::FetchSite,
        AdminRefused::ContentType,
        AdminRefused::Token,
        AdminRefused::Limit,
        AdminRefused::Timeout,
    ];

    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            AdminRefused::Host => "host",
            AdminRefused::Origin => "origin",
            AdminRefused::FetchSite => "fetch_site",
            AdminRefused::ContentType => "content_type",
            AdminRefused::Token => "token",
            AdminRefused::Limit => "limit",
            AdminRefused::Timeout => "timeout",
        }
    }

    pub(super) fn index(self) -> usize {
        self as usize
    }
}

/// An IP address as a `Host` names it: IPv6 in brackets.
fn host_name(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

/// The admin connections open, in the order they came, for the limit on them: a new one
/// beyond the limit takes the place of the oldest that has not yet sent a whole request
/// (an idle or slow socket), so that no number of idle sockets keeps an operator out; only
/// when every slot is serving a request is the new one refused (answered 503). Sans-IO:
/// both servers keep one, keyed by their own connection ids.
///
/// ```
/// use ocpp_reference_csms::admin_auth::AdminSlots;
/// let mut slots = AdminSlots::new(2);
/// assert_eq!(slots.open(1), Ok(None));
/// assert_eq!(slots.open(2), Ok(None));
/// slots.serving(1); // 1 sent its request: it keeps its slot
/// assert_eq!(slots.open(3), Ok(Some(2))); // 2 is idle: closed for 3
/// slots.serving(3);
/// assert!(slots.open(4).is_err()); // both serve requests
/// slots.close(1);
/// assert_eq!(slots.open(4), Ok(None));
/// ```
#[derive(Debug, Clone)]
pub struct AdminSlots<K> {
    limit: usize,
    /// The open connections, oldest first, and whether each is serving a request.
    open: VecDeque<(K, bool)>,
}

/// Every admin slot serves a request: the new connection is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("every admin connection serves a request")]
pub struct SlotsFull;

impl<K: Copy + PartialEq> AdminSlots<K> {
    /// At most `limit` connections (at least 1).
    pub fn new(limit: usize) -> Self {
        AdminSlots {
            limit: limit.max(1),
            open: VecDeque::new(),
        }
    }

    /// A new connection `key`: `Ok(None)` takes a free slot, `Ok(Some(old))` takes the slot
    /// of `old`, which the caller closes now.
    ///
    /// # Errors
    /// [`SlotsFull`]: every slot serves a request; close `key`.
    pub fn open(&mut self, key: K) -> Result<Option<K>, SlotsFull> {
        let mut evicted = None;
        if self.open.len() >= self.limit {
            let idle = self
                .open
                .iter()
                .position(|(_, serving)| !serving)
                .ok_or(SlotsFull)?;
            evicted = self.open.remove(idle).map(|(old, _)| old);
        }
        self.open.push_back((key, false));
        Ok(evicted)
    }

    /// `key` sent a whole request that was let in: it keeps its slot until it closes.
    pub fn serving(&mut self, key: K) {
        if let Some(entry) = self.open.iter_mut().find(|(k, _)| *k == key) {
            entry.1 = true;
        }
    }

    /// `key` closed.
    pub fn close(&mut self, key: K) {
        if let Some(index) = self.open.iter().position(|(k, _)| *k == key) {
            self.open.remove(index);
        }
    }

    /// How many are open.
    pub fn len(&self) -> usize {
        self.open.len()
    }

    /// Whether none is open.
    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    let mut out = [0; 32];
    out.copy_from_slice(digest(&SHA256, bytes).as_ref());
    out
}

fn unauthorized(challenge: &'static str, message: &str) -> HttpResponse {
    let mut response = HttpResponse::error(401, message);
    response.www_authenticate = Some(challenge);
    response
}

#[cfg(test)]
mod tests;
