//! The authorization cache (OCPP 1.6 §3.5.1, §5.4 ClearCache; 2.0.1 C10 Store Authorization
//! Data in the Authorization Cache, C11 Clear Authorization Data in Authorization Cache): the
//! central system's last answer on each token presented, learnt from Authorize,
//! StartTransaction, StopTransaction and TransactionEvent answers.

use std::collections::BTreeMap;

use ocpp_messages::DateTime;

use super::{key, Key, Settings};
use crate::{Authorization, IdToken};

wire_names! {
    /// The answer to a ClearCache: 1.6 `ClearCacheStatus`, 2.x `ClearCacheStatusEnumType`.
    ClearCacheStatus {
        /// The cache was emptied.
        Accepted => "Accepted",
        /// The cache is disabled (or could not be emptied durably).
        Rejected => "Rejected",
    }
}

/// What the cache holds on one token.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheEntry {
    /// The token as presented.
    pub token: IdToken,
    /// The central system's answer; its expiry is the answer's (1.6 `expiryDate`, 2.x
    /// `cacheExpiryDateTime`) or, without one, `AuthCacheCtrlr.LifeTime` after it was learnt.
    pub authorization: Authorization,
    /// When it was learnt (seconds since 1970): the oldest goes first when the cache is full.
    pub learnt_at: i64,
}

/// The authorization cache.
///
/// ```
/// use ocpp_messages::DateTime;
/// use ocpp_model::local_auth::{AuthorizationCache, Settings};
/// use ocpp_model::{Authorization, AuthorizationStatus, IdToken};
/// let mut cache = AuthorizationCache::default();
/// let now = DateTime::parse("2026-01-01T00:00:00Z").unwrap();
/// let token = IdToken::from_id_tag("A");
/// let accepted = Authorization::new(AuthorizationStatus::Accepted);
/// assert!(cache.learn(&token, &accepted, &now, &Settings::default()));
/// assert_eq!(cache.get(&token).unwrap().authorization, accepted);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuthorizationCache {
    entries: BTreeMap<Key, CacheEntry>,
}

impl AuthorizationCache {
    /// A cache kept earlier (a later duplicate of a token wins).
    pub fn from_entries(entries: impl IntoIterator<Item = CacheEntry>) -> Self {
        AuthorizationCache {
            entries: entries
                .into_iter()
                .map(|entry| (key(&entry.token), entry))
                .collect(),
        }
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the cache has no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry of `token` (case insensitive).
    pub fn get(&self, token: &IdToken) -> Option<&CacheEntry> {
        self.entries.get(&key(token))
    }

    /// Every entry, in a stable order.
    pub fn entries(&self) -> impl Iterator<Item = &CacheEntry> {
        self.entries.values()
    }

    /// Empties the cache.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Keeps the central system's answer on `token` learnt at `now` (1.6 §3.5.1, 2.0.1 C10),
    /// every status alike (a Blocked card stays blocked offline); `false` when the cache is
    /// disabled (`cache_enabled`) or holds no entry at all (`cache_max_entries` 0). An answer
    /// without expiry expires `cache_lifetime_s` after `now` (2.0.1 `AuthCacheCtrlr.LifeTime`).
    /// When the cache is full, the entry learnt longest ago goes (`AuthCacheCtrlr.Policy`
    /// LRU, with learning counted as use).
    pub fn learn(
        &mut self,
        token: &IdToken,
        authorization: &Authorization,
        now: &DateTime,
        settings: &Settings,
    ) -> bool {
        if !settings.cache_enabled || settings.cache_max_entries == 0 {
            return false;
        }
        let mut authorization = authorization.clone();
        if authorization.expiry.is_none() {
            authorization.expiry = settings.cache_lifetime_s.and_then(|lifetime| {
                let at = now
                    .unix_timestamp()
                    .saturating_add(i64::try_from(lifetime).unwrap_or(i64::MAX));
                DateTime::from_unix_timestamp(at)
            });
        }
        let key = key(token);
        if !self.entries.contains_key(&key) {
            while self.entries.len() >= settings.cache_max_entries {
                let oldest = self
                    .entries
                    .iter()
                    .min_by_key(|(_, e)| e.learnt_at)
                    .map(|(k, _)| k.clone());
                match oldest {
                    Some(oldest) => self.entries.remove(&oldest),
                    None => break,
                };
            }
        }
        self.entries.insert(
            key,
            CacheEntry {
                token: token.clone(),
                authorization,
                learnt_at: now.unix_timestamp(),
            },
        );
        true
    }
}
