//! The opening handshake, both sides: upgrade, identity, credentials, OCPP version.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use ocpp_frame::handshake::{
    Accept, BuildError, ClientHandshake, ClientRequest, Progress, RejectionResponse,
    SecWebSocketKey,
};
use ocpp_frame::CloseCode;
use ocpp_messages::version::OcppVersion;

use super::{Connection, PendingUpgrade, Side, State};
use crate::config::{DeflatePolicy, NoCommonVersion, VersionPolicy};
use crate::timer::Timer;
use crate::{ChargePointIdentity, CloseReason, ConnectionConfig, Event, IdentityError};

/// A mutator was called in a state where it means nothing (e.g. `accept` twice).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the connection is not in a state where this is possible")]
pub struct WrongState;

/// Where a charge point connects: everything its upgrade request carries. `Debug` never shows
/// the password.
#[derive(Clone)]
#[non_exhaustive]
pub struct ConnectTarget {
    /// The host (and `:port`) for the `Host` header.
    pub host: String,
    /// The endpoint's path, without the identity (e.g. `/ocpp`).
    pub endpoint: String,
    /// The charge point's identity; percent-encoded into the last path segment.
    pub identity: ChargePointIdentity,
    /// The password for `Authorization: Basic` (security profiles 1 and 2), if any.
    pub password: Option<Vec<u8>>,
}

impl ConnectTarget {
    /// A target with no credentials.
    pub fn new(host: &str, endpoint: &str, identity: ChargePointIdentity) -> Self {
        ConnectTarget {
            host: host.into(),
            endpoint: endpoint.into(),
            identity,
            password: None,
        }
    }

    /// Sends `Authorization: Basic base64(identity:password)`.
    pub fn with_password(mut self, password: &[u8]) -> Self {
        self.password = Some(password.to_vec());
        self
    }
}

impl std::fmt::Debug for ConnectTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectTarget")
            .field("host", &self.host)
            .field("endpoint", &self.endpoint)
            .field("identity", &self.identity)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// Splits `host[:port]` (`name:80`, `10.0.0.1:80`, `[::1]:80`, or without a port; a bare IPv6
/// literal has several colons and no port) for the `Host` header.
fn split_host_port(authority: &str) -> Result<(&str, Option<u16>), BuildError> {
    let port = |text: &str| text.parse::<u16>().map_err(|_| BuildError::InvalidHost);
    if let Some(rest) = authority.strip_prefix('[') {
        let end = rest.find(']').ok_or(BuildError::InvalidHost)?;
        let host = &authority[..end + 2];
        return match &rest[end + 1..] {
            "" => Ok((host, None)),
            tail => Ok((
                host,
                Some(port(
                    tail.strip_prefix(':').ok_or(BuildError::InvalidHost)?,
                )?),
            )),
        };
    }
    match authority.split_once(':') {
        Some((host, tail)) if !tail.contains(':') => Ok((host, Some(port(tail)?))),
        _ => Ok((authority, None)),
    }
}

impl<C> Connection<C> {
    /// A charge-point-side connection: writes the upgrade request for `target`, offering the
    /// configured versions in order. `key` is the `Sec-WebSocket-Key` and `seed` seeds the
    /// masking keys; take both from your RNG (RFC 6455 §4.1, §5.3). Its CALLs each carry
    /// their caller (`C`: [`Connection::call_for`]); [`Connection::connect`] for none.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Instant;
    /// use ocpp_proto::{ChargePointIdentity, ConnectTarget, Connection, ConnectionConfig};
    ///
    /// let identity = ChargePointIdentity::new("CP001".into(), true).unwrap();
    /// let target = ConnectTarget::new("csms.example", "/ocpp", identity);
    /// let config = Arc::new(ConnectionConfig::default());
    /// let station: Connection<u64> =
    ///     Connection::connect_with_callers(Instant::now(), config, &target, [1; 16], 7).unwrap();
    /// assert!(station.pending_transmit().starts_with(b"GET /ocpp/CP001 HTTP/1.1\r\n"));
    /// ```
    ///
    /// # Errors
    /// [`BuildError`] when the target's host or identity cannot go in a request.
    pub fn connect_with_callers(
        now: Instant,
        config: Arc<ConnectionConfig>,
        target: &ConnectTarget,
        key: [u8; 16],
        seed: u64,
    ) -> Result<Self, BuildError> {
        let path = format!(
            "{}/{}",
            target.endpoint.trim_end_matches('/'),
            percent_encode(target.identity.as_str())
        );
        let (host, port) = split_host_port(&target.host)?;
        let mut request = ClientRequest::new(host, &path, SecWebSocketKey::from_bytes(key))?;
        if let Some(port) = port {
            request = request.with_port(port);
        }
        for version in &config.versions {
            request = request.with_subprotocol(version.subprotocol())?;
        }
        if let Some(password) = &target.password {
            request = request.with_basic_auth(target.identity.as_str().as_bytes(), password)?;
        }
        if let DeflatePolicy::Offer(deflate) = &config.deflate {
            request =
                request.with_header("Sec-WebSocket-Extensions", deflate.offer().as_bytes())?;
        }
        let handshake = ClientHandshake::with_config(&request, config.handshake);
        let mut connection = Connection::new(
            now,
            Side::ChargePoint,
            config,
            State::ClientHandshake(Box::new(handshake)),
            seed,
        );
        request.write(connection.exchange.out());
        let deadline = now + connection.config.handshake_timeout;
        connection.timers.set(Timer::Handshake, deadline);
        Ok(connection)
    }

    /// CSMS side: accepts the upgrade announced by [`Event::UpgradeRequested`].
    ///
    /// With a version in common, answers 101 with it and the connection opens
    /// ([`Event::Connected`]). Without one, answers 101 without a subprotocol and closes with
    /// 1002, as OCPP-J asks.
    pub fn accept(&mut self, now: Instant) -> Result<(), WrongState> {
        let State::AwaitingDecision(_) = &self.state else {
            return Err(WrongState);
        };
        let State::AwaitingDecision(pending) = std::mem::replace(&mut self.state, State::Open)
        else {
            return Err(WrongState);
        };
        let PendingUpgrade {
            request,
            version,
            trailing,
            deflate,
        } = *pending;
        let extension;
        let headers: &[(&str, &[u8])] = match (&deflate, version) {
            (Some(accepted), Some(_)) => {
                extension = [("Sec-WebSocket-Extensions", accepted.response.as_bytes())];
                &extension
            }
            _ => &[],
        };
        let accept = match version {
            Some(version) => Accept::new().with_subprotocol(version.subprotocol()),
            None => Accept::new(),
        }
        .with_headers(headers);
        if request.accept(&accept, self.exchange.out()).is_err() {
            // Unreachable: the subprotocol was among those offered and no extra header is set.
            self.finish(CloseReason::HandshakeFailed {
                status: 500,
                description: "could not build the 101 response".into(),
            });
            return Ok(());
        }
        self.start_open_timers(now);
        match version {
            Some(version) => {
                if let Some(accepted) = deflate {
                    self.start_deflate(accepted.params);
                }
                self.version = version;
                self.push_event(Event::Connected { version });
                if !trailing.is_empty() {
                    self.handle_frames(now, &trailing);
                }
            }
            None => self.start_close(
                now,
                CloseCode::PROTOCOL_ERROR,
                "no OCPP subprotocol in common",
                CloseReason::NoCommonVersion,
            ),
        }
        Ok(())
    }

    /// CSMS side: [`accept`](Self::accept) with `version` instead of the one the configured
    /// policy chose, e.g. the version the central system chose for a relayed connection
    /// (a Local Controller answers its station with the subprotocol the CSMS agreed to).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Instant;
    /// use ocpp_proto::{Connection, ConnectionConfig, Event, OcppVersion};
    ///
    /// let now = Instant::now();
    /// let mut csms = Connection::accept_incoming(now, Arc::new(ConnectionConfig::default()));
    /// csms.handle_data(now, b"GET /ocpp/CP001 HTTP/1.1\r\nHost: csms\r\nUpgrade: websocket\r\n\
    ///     Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
    ///     Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: ocpp2.0.1, ocpp1.6\r\n\r\n");
    /// let Some(Event::UpgradeRequested(_)) = csms.poll_event() else { panic!() };
    /// csms.accept_version(now, OcppVersion::V1_6).unwrap();
    /// assert_eq!(csms.poll_event(), Some(Event::Connected { version: OcppVersion::V1_6 }));
    /// ```
    ///
    /// # Errors
    /// [`WrongState`] when no upgrade awaits a decision, or the charge point did not offer
    /// `version` (nothing changes then).
    pub fn accept_version(&mut self, now: Instant, version: OcppVersion) -> Result<(), WrongState> {
        let State::AwaitingDecision(pending) = &mut self.state else {
            return Err(WrongState);
        };
        if !pending
            .request
            .subprotocols()
            .any(|offered| offered == version.subprotocol())
        {
            return Err(WrongState);
        }
        pending.version = Some(version);
        self.accept(now)
    }

    /// CSMS side: [`accept`](Self::accept) for `Ok`, [`reject`](Self::reject) with the
    /// rejection's status for `Err`: the application's decision on an upgrade, as every driver
    /// hands it over.
    ///
    /// ```
    /// use std::time::Instant;
    /// use ocpp_proto::{Connection, IncomingUpgrade, Rejection};
    ///
    /// fn on_upgrade(csms: &mut Connection, upgrade: &IncomingUpgrade) {
    ///     let known = upgrade.identity.as_str().starts_with("CP");
    ///     let decision = if known { Ok(()) } else { Err(Rejection::NOT_FOUND) };
    ///     let _ = csms.decide(Instant::now(), decision);
    /// }
    /// ```
    pub fn decide(
        &mut self,
        now: Instant,
        decision: Result<(), crate::Rejection>,
    ) -> Result<(), WrongState> {
        match decision {
            Ok(()) => self.accept(now),
            Err(rejection) => match rejection.retry_after {
                None => self.reject(now, rejection.status),
                Some(seconds) => self.reject_retry_after(rejection.status, seconds),
            },
        }
    }

    /// [`reject`](Self::reject) with `Retry-After: seconds`.
    fn reject_retry_after(&mut self, status: u16, seconds: u32) -> Result<(), WrongState> {
        self.refuse(status, Some(seconds))
    }

    /// CSMS side: refuses the upgrade with an HTTP status (401 bad credentials, 404 unknown
    /// identity, 503 overloaded...). 401 carries `WWW-Authenticate: Basic realm="OCPP"`.
    pub fn reject(&mut self, _now: Instant, status: u16) -> Result<(), WrongState> {
        self.refuse(status, None)
    }

    /// Writes the refusal (with `Retry-After` when given) and closes.
    fn refuse(&mut self, status: u16, retry_after: Option<u32>) -> Result<(), WrongState> {
        let State::AwaitingDecision(_) = &self.state else {
            return Err(WrongState);
        };
        // Statuses outside 300-599 would not refuse an upgrade: send 500 instead.
        let status = if (300..=599).contains(&status) {
            status
        } else {
            500
        };
        if let Ok(rejection) = RejectionResponse::new(status) {
            let value = retry_after.map(|seconds| seconds.to_string());
            let headers = value.as_ref().map(|v| [("Retry-After", v.as_bytes())]);
            let rejection = match &headers {
                Some(headers) => rejection.with_headers(headers).unwrap_or(rejection),
                None => rejection,
            };
            let rejection = if status == 401 {
                rejection.with_realm("OCPP").unwrap_or(rejection)
            } else {
                rejection
            };
            rejection.write(self.exchange.out());
        }
        self.finish(CloseReason::Rejected { status });
        Ok(())
    }

    pub(super) fn handle_upgrade_request(&mut self, _now: Instant, data: &[u8]) {
        let State::ServerHandshake(handshake) = &mut self.state else {
            return;
        };
        let (request, consumed) = match handshake.handle_data(data) {
            Ok(Progress::NeedMore) => return,
            Ok(Progress::Complete { value, consumed }) => (value, consumed),
            Err(error) => {
                error.write_response(self.exchange.out());
                self.finish(CloseReason::HandshakeFailed {
                    status: error.status(),
                    description: error.to_string(),
                });
                return;
            }
        };
        let offered: Vec<String> = request.subprotocols().map(String::from).collect();
        let version = self.choose_version(&offered);
        if version.is_none() && self.config.no_common_version == NoCommonVersion::Reject400 {
            self.fail_handshake(400, "no OCPP subprotocol in common");
            return;
        }
        let strict_v2 = version.is_some_and(OcppVersion::is_2x);
        let identity = match ChargePointIdentity::from_path(request.path(), strict_v2) {
            Ok(identity) => identity,
            Err(IdentityError::Missing) => {
                self.fail_handshake(404, "no charge point identity in the path");
                return;
            }
            Err(error) => {
                self.fail_handshake(400, &error.to_string());
                return;
            }
        };
        let credentials = match request.basic_credentials() {
            Ok(credentials) => credentials.cloned(),
            Err(_) => {
                self.fail_handshake(401, "malformed Basic credentials");
                return;
            }
        };
        let upgrade = crate::IncomingUpgrade {
            identity,
            version,
            offered_subprotocols: offered,
            credentials,
            path: request.path().into(),
            query: request.query().map(String::from),
        };
        self.push_event(Event::UpgradeRequested(Box::new(upgrade)));
        let deflate = self
            .config
            .deflate
            .config()
            .and_then(|config| config.accept_offer(request.extensions()));
        self.state = State::AwaitingDecision(Box::new(PendingUpgrade {
            request,
            version,
            trailing: Bytes::copy_from_slice(&data[consumed..]),
            deflate,
        }));
    }

    pub(super) fn handle_upgrade_response(&mut self, now: Instant, data: &[u8]) {
        let State::ClientHandshake(handshake) = &mut self.state else {
            return;
        };
        match handshake.handle_data(data) {
            Ok(Progress::NeedMore) => {}
            Ok(Progress::Complete { value, consumed }) => {
                // RFC 7692 §7.1: an answer we did not allow fails the connection.
                let deflate = match &self.config.deflate {
                    DeflatePolicy::Offer(config) => config.check_response(value.extensions()),
                    _ => Ok(None),
                };
                let deflate = match deflate {
                    Ok(deflate) => deflate,
                    Err(error) => {
                        self.clear_output();
                        self.finish(CloseReason::UpgradeRefused {
                            status: None,
                            description: format!("permessage-deflate: {error}"),
                        });
                        return;
                    }
                };
                if let Some(params) = deflate {
                    self.start_deflate(params);
                }
                let version = value
                    .subprotocol()
                    .and_then(OcppVersion::from_subprotocol)
                    .filter(|v| self.config.versions.contains(v));
                self.state = State::Open;
                self.start_open_timers(now);
                match version {
                    Some(version) => {
                        self.version = version;
                        self.push_event(Event::Connected { version });
                        self.handle_frames(now, &data[consumed..]);
                    }
                    None => {
                        self.start_close(
                            now,
                            CloseCode::PROTOCOL_ERROR,
                            "no OCPP subprotocol in common",
                            CloseReason::NoCommonVersion,
                        );
                        // The server's own close may follow its 101 in the same read.
                        self.handle_frames(now, &data[consumed..]);
                    }
                }
            }
            Err(error) => {
                self.clear_output();
                self.finish(CloseReason::UpgradeRefused {
                    status: error.status(),
                    description: error.to_string(),
                });
            }
        }
    }

    /// Answers the upgrade with `status` and ends the connection.
    pub(super) fn fail_handshake(&mut self, status: u16, description: &str) {
        if let Ok(rejection) = RejectionResponse::new(status) {
            // Every 401 carries its challenge (RFC 9110 §15.5.2), malformed Basic credentials
            // included.
            let rejection = if status == 401 {
                rejection.with_realm("OCPP").unwrap_or(rejection)
            } else {
                rejection
            };
            rejection.write(self.exchange.out());
        }
        self.finish(CloseReason::HandshakeFailed {
            status,
            description: description.into(),
        });
    }

    fn choose_version(&self, offered: &[String]) -> Option<OcppVersion> {
        let supported = &self.config.versions;
        match &self.config.version_policy {
            VersionPolicy::ClientPreference => offered
                .iter()
                .filter_map(|name| OcppVersion::from_subprotocol(name))
                .find(|v| supported.contains(v)),
            VersionPolicy::ServerPreference(order) => order.iter().copied().find(|v| {
                supported.contains(v) && offered.iter().any(|name| name == v.subprotocol())
            }),
        }
    }
}

/// Percent-encodes an identity for the last path segment (RFC 3986 unreserved characters stay).
fn percent_encode(identity: &str) -> String {
    let mut out = String::with_capacity(identity.len());
    for byte in identity.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_and_port() {
        assert_eq!(split_host_port("csms.example"), Ok(("csms.example", None)));
        assert_eq!(
            split_host_port("localhost:9000"),
            Ok(("localhost", Some(9000)))
        );
        assert_eq!(split_host_port("127.0.0.1:80"), Ok(("127.0.0.1", Some(80))));
        assert_eq!(split_host_port("[::1]:8443"), Ok(("[::1]", Some(8443))));
        assert_eq!(split_host_port("[::1]"), Ok(("[::1]", None)));
        assert_eq!(split_host_port("fe80::1"), Ok(("fe80::1", None)));
        assert_eq!(split_host_port("h:x"), Err(BuildError::InvalidHost));
        assert_eq!(split_host_port("[::1]x"), Err(BuildError::InvalidHost));
        assert_eq!(split_host_port("[::1"), Err(BuildError::InvalidHost));
    }

    #[test]
    fn debug_hides_the_password() {
        let identity = ChargePointIdentity::new("CP1".into(), false).unwrap();
        let target = ConnectTarget::new("h", "/ocpp", identity).with_password(b"hunter2");
        let text = format!("{target:?}");
        assert!(!text.contains("hunter2") && !text.contains("104"), "{text}");
        assert!(text.contains("<redacted>"));
        // The connection's output holds the upgrade request, Authorization included.
        let connection = Connection::connect(
            Instant::now(),
            Arc::new(ConnectionConfig::default()),
            &target,
            [7; 16],
            1,
        )
        .unwrap();
        assert!(connection.pending_transmit_len() > 0);
        let text = format!("{connection:?}");
        assert!(
            !text.contains("Q1AxOmh1bnRlcjI") && !text.contains("hunter2"),
            "{text}"
        );
    }
}
