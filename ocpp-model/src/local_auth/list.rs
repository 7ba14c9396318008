//! The local authorization list (OCPP 1.6 §3.5.2, §5.15; 2.0.1 D01): entries the central
//! system sent, and the version it gave them.

use std::collections::BTreeMap;

use super::{key, Key, Settings};
use crate::{Authorization, IdToken};

wire_names! {
    /// How a SendLocalList changes the list: 1.6 `UpdateType`, 2.x `UpdateEnumType`.
    UpdateKind {
        /// The list is replaced by the entries sent.
        Full => "Full",
        /// The entries sent are added, changed, or (sent without information) removed.
        Differential => "Differential",
    }
}

wire_names! {
    /// The answer to a SendLocalList: 1.6 `UpdateStatus`; 2.x `SendLocalListStatusEnumType`
    /// has all but `NotSupported` (see [`UpdateStatus::for_2_x`]).
    UpdateStatus {
        /// The list was updated (and, through the store, kept).
        Accepted => "Accepted",
        /// The update was not applied: too many entries, a duplicate, a version that means
        /// something else, or it could not be kept.
        Failed => "Failed",
        /// 1.6: the station has no local list, or it is disabled (`LocalAuthListEnabled`).
        NotSupported => "NotSupported",
        /// A differential update whose version is not greater than the list's (1.6
        /// `UpdateStatus`, 2.0.1 D01).
        VersionMismatch => "VersionMismatch",
    }
}

impl UpdateStatus {
    /// The status sent to a 2.x station: `NotSupported`, which 2.x lacks, becomes `Failed`.
    ///
    /// ```
    /// use ocpp_model::local_auth::UpdateStatus;
    /// assert_eq!(UpdateStatus::NotSupported.for_2_x(), UpdateStatus::Failed);
    /// ```
    pub fn for_2_x(self) -> UpdateStatus {
        match self {
            UpdateStatus::NotSupported => UpdateStatus::Failed,
            other => other,
        }
    }
}

/// A SendLocalList in the words of every version: the version the list has after it, how
/// it changes the list, and the entries (without [`Authorization`]: to be removed).
///
/// ```
/// use ocpp_model::local_auth::{ListUpdate, UpdateKind};
/// use ocpp_model::{Authorization, AuthorizationStatus, IdToken};
/// let update = ListUpdate::new(2, UpdateKind::Differential)
///     .with(IdToken::from_id_tag("A"), Some(Authorization::new(AuthorizationStatus::Accepted)))
///     .with(IdToken::from_id_tag("B"), None);
/// assert_eq!(update.entries.len(), 2);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ListUpdate {
    /// 1.6 `listVersion`, 2.x `versionNumber`.
    pub version: i32,
    /// 1.6 `updateType`, 2.x `updateType`.
    pub kind: UpdateKind,
    /// 1.6 `localAuthorizationList` (`idTag`, `idTagInfo`), 2.x `localAuthorizationList`
    /// (`idToken`, `idTokenInfo`).
    pub entries: Vec<(IdToken, Option<Authorization>)>,
}

impl ListUpdate {
    /// An update of `kind` to `version`, without entries.
    pub fn new(version: i32, kind: UpdateKind) -> Self {
        ListUpdate {
            version,
            kind,
            entries: Vec::new(),
        }
    }

    /// This update with one more entry.
    #[must_use]
    pub fn with(mut self, token: IdToken, authorization: Option<Authorization>) -> Self {
        self.entries.push((token, authorization));
        self
    }
}

/// The local authorization list: entries by token, and its version.
///
/// ```
/// use ocpp_model::local_auth::{ListUpdate, LocalAuthList, Settings, UpdateKind, UpdateStatus};
/// use ocpp_model::{Authorization, AuthorizationStatus, IdToken};
/// let mut list = LocalAuthList::default();
/// let accepted = Some(Authorization::new(AuthorizationStatus::Accepted));
/// let full = ListUpdate::new(3, UpdateKind::Full).with(IdToken::from_id_tag("A"), accepted);
/// assert_eq!(list.send_local_list(&full, &Settings::default()), UpdateStatus::Accepted);
/// let old = ListUpdate::new(3, UpdateKind::Differential).with(IdToken::from_id_tag("A"), None);
/// assert_eq!(list.send_local_list(&old, &Settings::default()), UpdateStatus::VersionMismatch);
/// assert_eq!(list.len(), 1);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LocalAuthList {
    version: i32,
    entries: BTreeMap<Key, (IdToken, Authorization)>,
}

impl LocalAuthList {
    /// A list kept earlier: `version` and its entries (a later duplicate of a token wins).
    pub fn from_entries(
        version: i32,
        entries: impl IntoIterator<Item = (IdToken, Authorization)>,
    ) -> Self {
        LocalAuthList {
            version,
            entries: entries
                .into_iter()
                .map(|(token, authorization)| (key(&token), (token, authorization)))
                .collect(),
        }
    }

    /// The version: 0 when the list is empty (1.6 §5.10, 2.0.1 D02: "0 indicates that the
    /// list is empty"), whatever the update that emptied it said.
    pub fn version(&self) -> i32 {
        match self.entries.is_empty() {
            true => 0,
            false => self.version,
        }
    }

    /// The number of entries (2.0.1 `LocalAuthListCtrlr.Entries`).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the list has no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry of `token` (case insensitive).
    pub fn get(&self, token: &IdToken) -> Option<&Authorization> {
        self.entries.get(&key(token)).map(|(_, a)| a)
    }

    /// Every entry, in a stable order.
    pub fn entries(&self) -> impl Iterator<Item = (&IdToken, &Authorization)> {
        self.entries.values().map(|(t, a)| (t, a))
    }

    /// Applies a SendLocalList under `settings`; the list changes only when the answer is
    /// `Accepted`. In order:
    /// 1. no list (`list_available`) or a disabled one (`list_enabled`): `NotSupported`
    ///    (1.6 `UpdateStatus`; 2.x has no such status: [`UpdateStatus::for_2_x`], `Failed`);
    /// 2. a version below 1: `Failed` (0 and -1 mean "empty" and "no list" in a
    ///    GetLocalListVersion answer, 1.6 §5.10 and 2.0.1 D02, so no list sent may carry them);
    /// 3. a differential update whose version is not greater than the list's:
    ///    `VersionMismatch` (1.6 `UpdateStatus`, 2.0.1 D01);
    /// 4. more entries than `items_per_message` (1.6 `SendLocalListMaxLength`, 2.0.1
    ///    `LocalAuthListCtrlr.ItemsPerMessage`), or a token twice ("all idTags MUST be
    ///    unique", 1.6 §5.15): `Failed`;
    /// 5. a list longer than `list_max_entries` after the update (1.6
    ///    `LocalAuthListMaxLength`): `Failed`.
    ///
    /// A full update replaces the list with the entries that carry information (an entry
    /// without is ignored); a differential one adds or replaces those, and removes the
    /// tokens sent without (1.6 §5.15, 2.0.1 D01). An empty full update empties the
    /// list; an empty differential one only changes the version.
    pub fn send_local_list(&mut self, update: &ListUpdate, settings: &Settings) -> UpdateStatus {
        if !settings.list_available || !settings.list_enabled {
            return UpdateStatus::NotSupported;
        }
        if update.version < 1 {
            return UpdateStatus::Failed;
        }
        if update.kind == UpdateKind::Differential && update.version <= self.version() {
            return UpdateStatus::VersionMismatch;
        }
        if update.entries.len() > settings.items_per_message {
            return UpdateStatus::Failed;
        }
        let mut seen = std::collections::BTreeSet::new();
        if !update.entries.iter().all(|(t, _)| seen.insert(key(t))) {
            return UpdateStatus::Failed;
        }
        let mut next = match update.kind {
            UpdateKind::Full => BTreeMap::new(),
            UpdateKind::Differential => self.entries.clone(),
        };
        for (token, authorization) in &update.entries {
            match authorization {
                Some(authorization) => {
                    next.insert(key(token), (token.clone(), authorization.clone()));
                }
                None => {
                    next.remove(&key(token));
                }
            }
        }
        if next.len() > settings.list_max_entries {
            return UpdateStatus::Failed;
        }
        self.entries = next;
        self.version = update.version;
        UpdateStatus::Accepted
    }
}
