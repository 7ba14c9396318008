//! Local authorization: the local authorization list the central system sends
//! ([`LocalAuthList`], OCPP 1.6 §3.5.2, §5.10 GetLocalListVersion, §5.15 SendLocalList; 2.0.1 D01
//! Send Local List, D02 Get Local List Version), the authorization cache the station learns
//! from the central system's answers ([`AuthorizationCache`], 1.6 §3.5.1, §5.4 ClearCache;
//! 2.0.1 C10, C11), and the decision taken on a presented token from both, online or offline
//! ([`LocalAuthorization::authorize_locally`], 1.6 §3.5.3-§3.5.4; 2.0.1 C12-C15).
//!
//! Sans-IO: no clock (the time is passed in), no file. A 1.6 idTag and a 2.x idToken are one
//! [`IdToken`] (a 1.6 idTag has type `ISO14443`, see [`crate::id_token`]), a 1.6 `IdTagInfo`
//! and a 2.x `IdTokenInfo` one [`Authorization`]; tokens are compared without regard to case
//! (1.6 `CiString20Type`, 2.0.1 `IdTokenType.idToken`: "case insensitive").
//!
//! ```
//! use ocpp_messages::{v1_6, DateTime};
//! use ocpp_model::local_auth::{Decision, ListUpdate, LocalAuthorization, UpdateStatus};
//! use ocpp_model::IdToken;
//!
//! let mut local = LocalAuthorization::default();
//! let request = v1_6::SendLocalListRequest::new(1, v1_6::UpdateType::Full)
//!     .with_local_authorization_list(vec![v1_6::AuthorizationData::new("04A2B3C4")
//!         .with_id_tag_info(v1_6::IdTagInfo::new(v1_6::AuthorizationStatus::Accepted))]);
//! let update = ListUpdate::from_v1_6(&request);
//! assert_eq!(local.send_local_list(&update), UpdateStatus::Accepted);
//! assert_eq!(local.list().version(), 1);
//! let now = DateTime::parse("2026-01-01T00:00:00Z").unwrap();
//! let decision = local.authorize_locally(&IdToken::from_id_tag("04a2b3c4"), &now, false);
//! assert!(decision.may_charge());
//! ```

mod cache;
mod decision;
mod list;
mod settings;
#[cfg(test)]
mod tests;
mod wire;

pub use cache::{AuthorizationCache, CacheEntry, ClearCacheStatus};
pub use decision::{Ask, Decision, Refusal, Source};
pub use list::{ListUpdate, LocalAuthList, UpdateKind, UpdateStatus};
pub use settings::{Settings, DEFAULT_CACHE_MAX_ENTRIES, DEFAULT_LIST_MAX_ENTRIES};

use ocpp_messages::DateTime;

use crate::{Authorization, AuthorizationStatus, IdToken};

/// How a token is looked up: its type and its value in capitals (tokens are case insensitive).
pub(crate) type Key = (String, String);

/// The lookup key of `token`.
pub(crate) fn key(token: &IdToken) -> Key {
    (
        token.kind.as_str().to_owned(),
        token.value.to_ascii_uppercase(),
    )
}

/// The status `authorization` has at `now`: its own, or `Expired` once its expiry has passed
/// (1.6 §7.24 `expiryDate`; 2.0.1 `cacheExpiryDateTime`).
pub fn status_at(authorization: &Authorization, now: &DateTime) -> AuthorizationStatus {
    match &authorization.expiry {
        Some(expiry) if expiry.unix_timestamp() <= now.unix_timestamp() => {
            AuthorizationStatus::Expired
        }
        _ => authorization.status,
    }
}

/// A station's local authorization: its local list, its cache, and the settings that govern
/// both (read from the device model by the caller, [`Settings::from_configuration`],
/// [`Settings::from_device_model`]).
///
/// ```
/// use ocpp_model::local_auth::{LocalAuthorization, Settings};
/// let local = LocalAuthorization::new(Settings::default());
/// assert_eq!(local.list().version(), 0);
/// assert!(local.cache().is_empty());
/// ```
#[derive(Debug, Clone, Default)]
pub struct LocalAuthorization {
    list: LocalAuthList,
    cache: AuthorizationCache,
    settings: Settings,
}

impl LocalAuthorization {
    /// An empty list and cache under `settings`.
    pub fn new(settings: Settings) -> Self {
        LocalAuthorization {
            list: LocalAuthList::default(),
            cache: AuthorizationCache::default(),
            settings,
        }
    }

    /// A list and cache kept earlier (a restart), under `settings`.
    pub fn restore(list: LocalAuthList, cache: AuthorizationCache, settings: Settings) -> Self {
        LocalAuthorization {
            list,
            cache,
            settings,
        }
    }

    /// The local list.
    pub fn list(&self) -> &LocalAuthList {
        &self.list
    }

    /// The cache.
    pub fn cache(&self) -> &AuthorizationCache {
        &self.cache
    }

    /// The settings in force.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Puts `settings` in force (the central system changed a variable or key).
    pub fn set_settings(&mut self, settings: Settings) {
        self.settings = settings;
    }

    /// Applies a SendLocalList (1.6 §5.15, 2.0.1 D01): the list changes only when the answer is
    /// [`UpdateStatus::Accepted`]. See [`LocalAuthList::send_local_list`].
    pub fn send_local_list(&mut self, update: &ListUpdate) -> UpdateStatus {
        self.list.send_local_list(update, &self.settings)
    }

    /// The version a GetLocalListVersion answers (1.6 §5.10, 2.0.1 D02): `-1` when the station
    /// has no local list (not available), `0` when it is empty, its version otherwise.
    ///
    /// ```
    /// use ocpp_model::local_auth::{LocalAuthorization, Settings};
    /// let mut settings = Settings::default();
    /// assert_eq!(LocalAuthorization::new(settings.clone()).local_list_version(), 0);
    /// settings.list_available = false;
    /// assert_eq!(LocalAuthorization::new(settings).local_list_version(), -1);
    /// ```
    pub fn local_list_version(&self) -> i32 {
        match self.settings.list_available {
            true => self.list.version(),
            false => -1,
        }
    }

    /// Learns the central system's answer on `token` (an Authorize, StartTransaction,
    /// StopTransaction or TransactionEvent answer) into the cache (1.6 §3.5.1, 2.0.1 C10), when
    /// the cache is enabled; `false` when nothing was learnt. A token of the local list is not
    /// cached: the list speaks for it (1.6 §3.5.3).
    ///
    /// ```
    /// use ocpp_messages::DateTime;
    /// use ocpp_model::local_auth::LocalAuthorization;
    /// use ocpp_model::{Authorization, AuthorizationStatus, IdToken};
    /// let mut local = LocalAuthorization::default();
    /// let now = DateTime::parse("2026-01-01T00:00:00Z").unwrap();
    /// let blocked = Authorization::new(AuthorizationStatus::Blocked);
    /// assert!(local.learn(&IdToken::from_id_tag("A"), &blocked, &now));
    /// assert!(!local.authorize_locally(&IdToken::from_id_tag("A"), &now, false).may_charge());
    /// ```
    pub fn learn(
        &mut self,
        token: &IdToken,
        authorization: &Authorization,
        now: &DateTime,
    ) -> bool {
        let listed = self.settings.list_available
            && self.settings.list_enabled
            && self.list.get(token).is_some();
        !listed && self.cache.learn(token, authorization, now, &self.settings)
    }

    /// Answers a ClearCache (1.6 §5.4, 2.0.1 C11): `Rejected` when the cache is disabled
    /// (2.0.1 C11: the cache is off), otherwise every entry goes.
    ///
    /// ```
    /// use ocpp_model::local_auth::{ClearCacheStatus, LocalAuthorization, Settings};
    /// let mut settings = Settings::default();
    /// assert_eq!(LocalAuthorization::new(settings.clone()).clear_cache(), ClearCacheStatus::Accepted);
    /// settings.cache_enabled = false;
    /// assert_eq!(LocalAuthorization::new(settings).clear_cache(), ClearCacheStatus::Rejected);
    /// ```
    pub fn clear_cache(&mut self) -> ClearCacheStatus {
        if !self.settings.cache_enabled {
            return ClearCacheStatus::Rejected;
        }
        self.cache.clear();
        ClearCacheStatus::Accepted
    }

    /// Whether `token` may charge without asking the central system, and why; see
    /// [`Decision`] for the rules (1.6 §3.5; 2.0.1 C12 Start Transaction - Cached Id, C13/C14
    /// Offline/Online Authorization through Local Authorization List, C15 Offline Authorization
    /// of unknown Id).
    pub fn authorize_locally(&self, token: &IdToken, now: &DateTime, online: bool) -> Decision {
        decision::decide(self, token, now, online)
    }

    /// The entry of `token` that decides: the list's first (when enabled), then the cache's
    /// (when enabled): the list has priority (1.6 §3.5.3).
    pub fn lookup(&self, token: &IdToken) -> Option<(Source, &Authorization)> {
        let settings = &self.settings;
        let listed = (settings.list_available && settings.list_enabled)
            .then(|| self.list.get(token))
            .flatten()
            .map(|a| (Source::LocalList, a));
        listed.or_else(|| {
            settings
                .cache_enabled
                .then(|| self.cache.get(token))
                .flatten()
                .map(|e| (Source::Cache, &e.authorization))
        })
    }
}
