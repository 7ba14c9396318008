//! The decision on a presented token without the central system (OCPP 1.6 §3.5; 2.0.1 C12
//! Start Transaction - Cached Id, C13 Offline Authorization through Local Authorization
//! List, C14 Online Authorization through Local Authorization List, C15 Offline Authorization
//! of unknown Id).

use ocpp_messages::DateTime;

use super::{status_at, LocalAuthorization};
use crate::{Authorization, AuthorizationStatus, IdToken};

/// Where an entry was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// The local authorization list.
    LocalList,
    /// The authorization cache.
    Cache,
}

/// Why the station must ask the central system (send an Authorize).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Ask {
    /// Online and `LocalPreAuthorize` is off: every token is asked.
    Online,
    /// Online, `LocalPreAuthorize` on, but the token is neither listed nor cached.
    Unknown,
    /// Online, `LocalPreAuthorize` on, but the entry found is not (or no longer) `Accepted`:
    /// only the central system may overrule it (2.0.1 C12, C14).
    NotAccepted {
        /// Where it was found.
        source: Source,
        /// Its status now (`Expired` once its expiry passed).
        status: AuthorizationStatus,
    },
}

/// Why a token may not charge, offline.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Refusal {
    /// Its entry is not (or no longer) `Accepted`.
    NotAccepted {
        /// Where it was found.
        source: Source,
        /// Its status now (`Expired` once its expiry passed).
        status: AuthorizationStatus,
    },
    /// Neither listed nor cached (or, with `LocalAuthorizeOffline` off, not to be used), and
    /// unknown tokens may not charge offline (`AllowOfflineTxForUnknownId`,
    /// `OfflineTxForUnknownIdEnabled` off).
    UnknownOffline,
}

/// What the station does with a presented token, and why.
///
/// ```
/// use ocpp_messages::DateTime;
/// use ocpp_model::local_auth::{Ask, Decision, LocalAuthorization};
/// use ocpp_model::IdToken;
/// let local = LocalAuthorization::default();
/// let now = DateTime::parse("2026-01-01T00:00:00Z").unwrap();
/// let token = IdToken::from_id_tag("A");
/// assert_eq!(local.authorize_locally(&token, &now, true), Decision::AskCentralSystem(Ask::Online));
/// assert!(!local.authorize_locally(&token, &now, false).may_charge());
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Decision {
    /// Accepted by its entry: it may charge now (offline with `LocalAuthorizeOffline`, 1.6
    /// §3.5, 2.0.1 C13; online with `LocalPreAuthorize`, 2.0.1 C12, C14).
    Accepted {
        /// Where the entry was found.
        source: Source,
        /// The entry (its group, its expiry).
        authorization: Authorization,
    },
    /// Offline, unknown, and unknown tokens may charge offline (1.6 §3.5.4
    /// `AllowOfflineTxForUnknownId`, 2.0.1 C15 `OfflineTxForUnknownIdEnabled`): the
    /// transaction's messages go later, and the central system may stop it then.
    UnknownAllowedOffline,
    /// It may not charge.
    Refused(Refusal),
    /// The station must send an Authorize and follow the answer (then
    /// [`LocalAuthorization::learn`] it).
    AskCentralSystem(Ask),
}

impl Decision {
    /// Whether the token may charge now.
    pub fn may_charge(&self) -> bool {
        matches!(
            self,
            Decision::Accepted { .. } | Decision::UnknownAllowedOffline
        )
    }
}

/// The rules, in order:
/// - online without `LocalPreAuthorize`: ask;
/// - the list's entry first (when enabled), then the cache's (when enabled), 1.6 §3.5.3;
/// - online: an `Accepted` entry, unexpired, is accepted; any other entry, or none, is asked;
/// - offline: an entry not `Accepted` (or expired) is refused, whatever the flags (a blocked
///   card never charges); an `Accepted` one is accepted with `LocalAuthorizeOffline` and
///   otherwise counts as unknown; unknown tokens charge only with
///   `AllowOfflineTxForUnknownId` / `OfflineTxForUnknownIdEnabled`.
pub(super) fn decide(
    local: &LocalAuthorization,
    token: &IdToken,
    now: &DateTime,
    online: bool,
) -> Decision {
    let settings = local.settings();
    if online && !settings.local_pre_authorize {
        return Decision::AskCentralSystem(Ask::Online);
    }
    let found = local
        .lookup(token)
        .map(|(source, authorization)| (source, authorization, status_at(authorization, now)));
    match (online, found) {
        (_, Some((source, authorization, AuthorizationStatus::Accepted)))
            if online || settings.local_authorize_offline =>
        {
            Decision::Accepted {
                source,
                authorization: authorization.clone(),
            }
        }
        (true, Some((source, _, status))) => {
            Decision::AskCentralSystem(Ask::NotAccepted { source, status })
        }
        (true, None) => Decision::AskCentralSystem(Ask::Unknown),
        (false, Some((source, _, status))) if status != AuthorizationStatus::Accepted => {
            Decision::Refused(Refusal::NotAccepted { source, status })
        }
        (false, _) if settings.offline_tx_for_unknown_id => Decision::UnknownAllowedOffline,
        (false, _) => Decision::Refused(Refusal::UnknownOffline),
    }
}
