//! Where a station stands with its central system, and why it waits or stopped: what a
//! driver publishes to the application, and the one place that says what a connection's end
//! means for the station ([`Cause::of`], [`PermanentFailure::of`]).

use std::time::Duration;

use crate::{CloseCode, CloseReason, OcppVersion};

use super::RegistrationStatus;

/// Where the station stands with the central system.
///
/// A driver publishes every change once (`ocpp_tokio`'s `Station::watch_status`): a status is
/// never reported twice in a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Status {
    /// Connecting: TCP, TLS and the WebSocket upgrade (`attempt` counts from 1 since the last
    /// established connection: one whose BootNotification was accepted and that lasted
    /// [`MIN_ESTABLISHED_LIFETIME`](super::MIN_ESTABLISHED_LIFETIME) by default).
    Connecting {
        /// The attempt.
        attempt: u32,
    },
    /// Connected; the BootNotification is not answered Accepted (yet): `registration` is the
    /// last answer (`None` before the first), `boot_failures` how many BootNotifications of
    /// this connection failed in a row (no answer in time, a CALLERROR). After the
    /// driver's bound of failures ([`DEFAULT_BOOT_ATTEMPTS`](super::DEFAULT_BOOT_ATTEMPTS) by default) the station gives the connection up and waits
    /// ([`Status::Waiting`] with [`Cause::BootUnanswered`]).
    Registering {
        /// The negotiated version.
        version: OcppVersion,
        /// The last BootNotification answer.
        registration: Option<RegistrationStatus>,
        /// BootNotifications of this connection that failed in a row.
        boot_failures: u32,
    },
    /// Connected and Accepted: everything may be sent.
    Accepted {
        /// The negotiated version.
        version: OcppVersion,
    },
    /// Not connected: the next attempt after the back-off, `wait` from when it was chosen;
    /// `cause` says why the last attempt or connection ended.
    Waiting {
        /// The back-off chosen.
        wait: Duration,
        /// Why the station is not connected.
        cause: Cause,
    },
    /// The station stopped (the application closed it, or a [`PermanentFailure`]).
    Stopped,
}

/// Why an attempt failed or a connection ended ([`Status::Waiting`]).
///
/// ```
/// use ocpp_proto::station::{Cause, Status};
///
/// fn explain(status: Status) -> String {
///     match status {
///         Status::Waiting { wait, cause: Cause::UpgradeRefused { status: Some(404) } } => {
///             format!("unknown to the central system; again in {wait:?}")
///         }
///         Status::Waiting { wait, cause } => format!("{cause}; again in {wait:?}"),
///         other => format!("{other:?}"),
///     }
/// }
/// # let _ = explain;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Cause {
    /// TCP or TLS failed, or did not finish in time (`TimedOut`).
    #[error("connect failed: {0}")]
    Connect(std::io::ErrorKind),
    /// The TLS handshake failed (certificate, protocol).
    #[error("the TLS handshake failed")]
    Tls,
    /// The central system refused the upgrade (or answered it wrongly): its HTTP status, if
    /// any.
    #[error("the upgrade was refused (HTTP {status:?})")]
    UpgradeRefused {
        /// The HTTP status other than 101, when there was one.
        status: Option<u16>,
    },
    /// The WebSocket handshake did not finish in time.
    #[error("the WebSocket handshake timed out")]
    HandshakeTimeout,
    /// The central system speaks none of the versions offered.
    #[error("no OCPP version in common")]
    NoCommonVersion,
    /// The central system closed the connection, with this close code (`None`: no code).
    #[error("the central system closed the connection ({code:?})")]
    PeerClosed {
        /// The code of its close frame.
        code: Option<CloseCode>,
    },
    /// The station closed the connection with this code (e.g. the application, through
    /// its handle on the connection).
    #[error("the station closed the connection ({code:?})")]
    LocalClose {
        /// The code sent.
        code: CloseCode,
    },
    /// The stream ended without a closing handshake (reset, 1006).
    #[error("the connection was lost")]
    ConnectionLost,
    /// No pong, or nothing at all, arrived in time.
    #[error("the central system stopped answering (keep-alive)")]
    KeepAliveTimeout,
    /// The central system broke RFC 6455 or OCPP-J.
    #[error("the central system broke the protocol")]
    ProtocolViolation,
    /// The central system stopped reading.
    #[error("the central system stopped reading")]
    SlowPeer,
    /// The BootNotification failed this many times in a row (no answer in time, CALLERROR):
    /// the station gave the connection up.
    #[error("BootNotification failed {attempts} times in a row")]
    BootUnanswered {
        /// The BootNotifications sent on that connection.
        attempts: u32,
    },
    /// Anything else (e.g. the upgrade request could not be built).
    #[error("the connection failed")]
    Other,
}

impl Cause {
    /// The cause of a connection's end, by the core's [`CloseReason`].
    ///
    /// ```
    /// use ocpp_proto::station::Cause;
    /// use ocpp_proto::CloseReason;
    /// assert_eq!(Cause::of(&CloseReason::Eof), Cause::ConnectionLost);
    /// ```
    pub fn of(reason: &CloseReason) -> Cause {
        match reason {
            CloseReason::UpgradeRefused { status, .. } => Cause::UpgradeRefused { status: *status },
            CloseReason::HandshakeTimeout => Cause::HandshakeTimeout,
            CloseReason::NoCommonVersion => Cause::NoCommonVersion,
            CloseReason::PeerClosed { code, .. } => Cause::PeerClosed { code: *code },
            CloseReason::LocalClose { code } => Cause::LocalClose { code: *code },
            CloseReason::ProtocolError(_) | CloseReason::OcppViolation { .. } => {
                Cause::ProtocolViolation
            }
            CloseReason::PongTimeout | CloseReason::IdleTimeout => Cause::KeepAliveTimeout,
            CloseReason::Eof => Cause::ConnectionLost,
            CloseReason::SlowPeer => Cause::SlowPeer,
            _ => Cause::Other,
        }
    }
}

/// A refusal that retrying cannot cure: the station stops instead of reconnecting forever.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PermanentFailure {
    /// HTTP 401: the password (security profile 1 or 2) is wrong, or missing.
    #[error("the central system refused the credentials (HTTP 401)")]
    Unauthorized,
    /// HTTP 403: the station is not allowed (e.g. its certificate, security profile 3).
    #[error("the central system refused the station (HTTP 403)")]
    Forbidden,
    /// The central system speaks none of the versions offered.
    #[error("the central system speaks none of the OCPP versions offered")]
    NoCommonVersion,
}

impl PermanentFailure {
    /// The refusal in a connection's end that retrying cannot cure (HTTP 401 or 403 to the
    /// upgrade, no version in common), if it is one.
    ///
    /// ```
    /// use ocpp_proto::station::PermanentFailure;
    /// use ocpp_proto::CloseReason;
    /// assert_eq!(PermanentFailure::of(&CloseReason::NoCommonVersion), Some(PermanentFailure::NoCommonVersion));
    /// assert_eq!(PermanentFailure::of(&CloseReason::Eof), None);
    /// ```
    pub fn of(reason: &CloseReason) -> Option<PermanentFailure> {
        match reason {
            CloseReason::UpgradeRefused {
                status: Some(401), ..
            } => Some(PermanentFailure::Unauthorized),
            CloseReason::UpgradeRefused {
                status: Some(403), ..
            } => Some(PermanentFailure::Forbidden),
            CloseReason::NoCommonVersion => Some(PermanentFailure::NoCommonVersion),
            _ => None,
        }
    }
}

/// What a wait for acceptance ends with when the station stopped first (`ocpp_tokio`'s
/// `Station::accepted`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the station stopped{}", .failure.as_ref().map(|f| format!(": {f}")).unwrap_or_default())]
pub struct Stopped {
    /// Why, unless the application closed it.
    pub failure: Option<PermanentFailure>,
}
