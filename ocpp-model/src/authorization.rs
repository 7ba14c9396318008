//! Authorization: a charge point asks whether a token may charge ([`AuthorizationRequested`]),
//! the CSMS answers with an [`Authorization`] (1.6 `IdTagInfo`, 2.x `IdTokenInfo`).

use ocpp_messages::DateTime;

use crate::IdToken;

/// A charge point asks whether `token` may charge (1.6 and 2.x `Authorize`).
///
/// ```
/// use ocpp_messages::{v1_6, Request};
/// use ocpp_model::{AuthorizationRequested, IdToken, StationEvent};
///
/// let request: Request = v1_6::AuthorizeRequest::new("04A2B3C4").into();
/// assert_eq!(
///     StationEvent::from_request(&request),
///     StationEvent::AuthorizationRequested(AuthorizationRequested {
///         token: IdToken::from_id_tag("04A2B3C4"),
///     })
/// );
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct AuthorizationRequested {
    /// The token presented.
    pub token: IdToken,
}

wire_names! {
    /// Whether a token may charge: 2.x `AuthorizationStatusEnumType`, of which 1.6
    /// `AuthorizationStatus` has the first five. Sent to 1.6, the five 2.x-only values become
    /// `Invalid` (1.6's "not allowed", the nearest meaning: see [`AuthorizationStatus::for_1_6`]).
    AuthorizationStatus {
        /// Allowed.
        Accepted => "Accepted",
        /// Blocked.
        Blocked => "Blocked",
        /// Already in another transaction.
        ConcurrentTx => "ConcurrentTx",
        /// Expired.
        Expired => "Expired",
        /// Unknown or not valid.
        Invalid => "Invalid",
        /// 2.x: no credit left.
        NoCredit => "NoCredit",
        /// 2.x: not allowed on this type of EVSE.
        NotAllowedTypeEvse => "NotAllowedTypeEVSE",
        /// 2.x: not allowed at this location.
        NotAtThisLocation => "NotAtThisLocation",
        /// 2.x: not allowed at this time.
        NotAtThisTime => "NotAtThisTime",
        /// 2.x: not known.
        Unknown => "Unknown",
    }
}

impl AuthorizationStatus {
    /// The status a 1.6 charge point is sent: itself, or `Invalid` for the values 1.6 lacks.
    ///
    /// ```
    /// use ocpp_model::AuthorizationStatus;
    /// assert_eq!(AuthorizationStatus::NoCredit.for_1_6(), AuthorizationStatus::Invalid);
    /// assert_eq!(AuthorizationStatus::Blocked.for_1_6(), AuthorizationStatus::Blocked);
    /// ```
    pub fn for_1_6(self) -> AuthorizationStatus {
        match self {
            AuthorizationStatus::Accepted
            | AuthorizationStatus::Blocked
            | AuthorizationStatus::ConcurrentTx
            | AuthorizationStatus::Expired
            | AuthorizationStatus::Invalid => self,
            _ => AuthorizationStatus::Invalid,
        }
    }
}

/// The CSMS's word on a token: 1.6 `IdTagInfo` (`status`, `expiryDate`, `parentIdTag`), 2.x
/// `IdTokenInfo` (`status`, `cacheExpiryDateTime`, `groupIdToken`).
///
/// ```
/// use ocpp_model::{Authorization, AuthorizationStatus};
/// let accepted = Authorization::new(AuthorizationStatus::Accepted);
/// assert_eq!(accepted.expiry, None);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Authorization {
    /// Whether the token may charge.
    pub status: AuthorizationStatus,
    /// Until when the charge point may cache this answer.
    pub expiry: Option<DateTime>,
    /// The token's group (1.6 `parentIdTag`: its value only).
    pub group: Option<IdToken>,
}

impl Authorization {
    /// An answer of `status`, without expiry or group.
    pub fn new(status: AuthorizationStatus) -> Self {
        Authorization {
            status,
            expiry: None,
            group: None,
        }
    }
}
