//! The station's local authorization, kept: [`LocalAuthStore`] holds the Sans-IO
//! [`LocalAuthorization`] of [`ocpp_model::local_auth`] (the local authorization list, its
//! version and the authorization cache), answers the central system's SendLocalList,
//! GetLocalListVersion and ClearCache (1.6, 2.0.1 and 2.1; ocpp-tokio's
//! `station::LocalAuthExt` serves them on a station's router), keeps list and cache in a file
//! of a state directory, and decides on a presented token without the central system
//! ([`LocalAuthStore::authorize_locally`]).
//!
//! A change is acknowledged (SendLocalList `Accepted`, ClearCache `Accepted`) only once it is
//! durable: written to `<dir>/local_auth.json.tmp`, synced, renamed over `local_auth.json`, and
//! the directory synced ([`replace_durably`]). When that fails the change is refused (`Failed`,
//! `Rejected`) and leaves no trace, in the file or in memory. The methods that change the list
//! or the cache write the file before they return (they block: call them off an async
//! runtime's threads).
//!
//! The settings (list enabled, limits, cache, offline flags) are the device model's when the
//! store follows a [`DeviceModelStore`] ([`LocalAuthStore::follow_device_model`]), otherwise
//! those given to [`LocalAuthStore::open`].
//!
//! ```
//! use ocpp_model::device_model::{catalogue::Layout, Configuration, DeviceModel};
//! use ocpp_model::local_auth::{ListUpdate, UpdateKind, UpdateStatus};
//! use ocpp_model::{Authorization, AuthorizationStatus, IdToken};
//! use ocpp_proto::OcppVersion;
//! use ocpp_station_store::{DeviceModelStore, LocalAuthStore};
//!
//! let dir = std::env::temp_dir().join(format!("ocpp-local-auth-doc-{}", std::process::id()));
//! let device_model = DeviceModelStore::open(
//!     &dir,
//!     DeviceModel::standard(Layout::new(&[1])),
//!     Configuration::standard(1),
//! )?;
//! let local_auth = LocalAuthStore::open(&dir, Default::default())?;
//! local_auth.follow_device_model(&device_model, OcppVersion::V1_6);
//! // The central system sends a list.
//! let accepted = Authorization::new(AuthorizationStatus::Accepted);
//! let list = ListUpdate::new(1, UpdateKind::Full).with(IdToken::from_id_tag("04A2B3C4"), Some(accepted));
//! assert_eq!(local_auth.send_local_list(&list), UpdateStatus::Accepted);
//! // A card is presented while the station is offline.
//! let decision = local_auth.authorize_locally(&IdToken::from_id_tag("04A2B3C4"), false);
//! assert!(decision.may_charge());
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::durable::replace_durably;
use crate::lock;
use crate::DeviceModelStore;
use ocpp_model::device_model::{catalogue, AttributeType, Change};
use ocpp_model::local_auth::{
    AuthorizationCache, CacheEntry, ClearCacheStatus, Decision, ListUpdate, LocalAuthList,
    LocalAuthorization, Settings, UpdateStatus,
};
use ocpp_model::{Authorization, AuthorizationStatus, IdToken, IdTokenType};
use ocpp_proto::{v1_6, v2_0_1, v2_1, DateTime, OcppVersion};
use serde::{Deserialize, Serialize};

/// The file in the state directory.
const FILE: &str = "local_auth.json";

/// Why [`LocalAuthStore`] could not open or keep its file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LocalAuthError {
    /// The state directory or its file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What failed.
        source: io::Error,
    },
    /// The file is not one this store wrote.
    #[error("{path}: not a local authorization file: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// A token as kept.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct SavedToken {
    #[serde(rename = "idToken")]
    value: String,
    #[serde(rename = "type")]
    kind: String,
}

/// An entry as kept: the token and the central system's word on it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct SavedEntry {
    token: SavedToken,
    status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expiry: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    group: Option<SavedToken>,
    /// Cache entries only: when learnt (seconds since 1970).
    #[serde(default, rename = "learntAt", skip_serializing_if = "Option::is_none")]
    learnt_at: Option<i64>,
}

/// The file's content.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Saved {
    /// The list's version (0: empty).
    version: i32,
    list: Vec<SavedEntry>,
    cache: Vec<SavedEntry>,
}

fn save_token(token: &IdToken) -> SavedToken {
    SavedToken {
        value: token.value.clone(),
        kind: token.kind.as_str().to_owned(),
    }
}

fn load_token(token: &SavedToken) -> IdToken {
    IdToken::new(token.value.as_str(), IdTokenType::from_wire(&token.kind))
}

fn save_entry(
    token: &IdToken,
    authorization: &Authorization,
    learnt_at: Option<i64>,
) -> SavedEntry {
    SavedEntry {
        token: save_token(token),
        status: authorization.status.as_str().to_owned(),
        expiry: authorization.expiry.as_ref().map(|e| e.as_str().to_owned()),
        group: authorization.group.as_ref().map(save_token),
        learnt_at,
    }
}

fn load_entry(entry: &SavedEntry) -> Result<(IdToken, Authorization), String> {
    let status = AuthorizationStatus::from_wire(&entry.status)
        .ok_or_else(|| format!("unknown status {:?}", entry.status))?;
    let expiry = entry
        .expiry
        .as_deref()
        .map(DateTime::parse)
        .transpose()
        .map_err(|e| format!("expiry of {:?}: {e}", entry.token.value))?;
    Ok((
        load_token(&entry.token),
        Authorization {
            status,
            expiry,
            group: entry.group.as_ref().map(load_token),
        },
    ))
}

impl Saved {
    fn of(local: &LocalAuthorization) -> Saved {
        Saved {
            version: local.list().version(),
            list: local
                .list()
                .entries()
                .map(|(t, a)| save_entry(t, a, None))
                .collect(),
            cache: local
                .cache()
                .entries()
                .map(|e| save_entry(&e.token, &e.authorization, Some(e.learnt_at)))
                .collect(),
        }
    }

    fn load(&self, settings: Settings) -> Result<LocalAuthorization, String> {
        let list = self
            .list
            .iter()
            .map(load_entry)
            .collect::<Result<Vec<_>, _>>()?;
        let cache = self
            .cache
            .iter()
            .map(|e| {
                load_entry(e).map(|(token, authorization)| CacheEntry {
                    token,
                    authorization,
                    learnt_at: e.learnt_at.unwrap_or(0),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(LocalAuthorization::restore(
            LocalAuthList::from_entries(self.version, list),
            AuthorizationCache::from_entries(cache),
            settings,
        ))
    }
}

struct Inner {
    local: Mutex<LocalAuthorization>,
    file: Option<PathBuf>,
    /// One change at a time: applied to a copy, made durable, then swapped in.
    writer: Mutex<()>,
    /// The device model told of the list's size (`LocalAuthListCtrlr.Entries`).
    device_model: Mutex<Option<DeviceModelStore>>,
}

/// A station's local authorization list and authorization cache, served to the central
/// system and kept in a state directory: cheap to clone (every clone is the same store).
#[derive(Clone)]
pub struct LocalAuthStore {
    inner: Arc<Inner>,
}

impl fmt::Debug for LocalAuthStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalAuthStore")
            .field("file", &self.inner.file)
            .finish_non_exhaustive()
    }
}

impl LocalAuthStore {
    /// A store that keeps nothing across restarts (tests, simulations).
    ///
    /// ```
    /// use ocpp_model::local_auth::Settings;
    /// use ocpp_station_store::LocalAuthStore;
    /// let store = LocalAuthStore::in_memory(Settings::default());
    /// assert_eq!(store.local_list_version(), 0);
    /// ```
    pub fn in_memory(settings: Settings) -> Self {
        LocalAuthStore::with(LocalAuthorization::new(settings), None)
    }

    /// A store kept in `dir` (created if missing): the list, its version and the cache saved
    /// there by an earlier run are put back, under `settings` (until
    /// [`follow_device_model`](LocalAuthStore::follow_device_model) replaces them).
    ///
    /// ```no_run
    /// use ocpp_station_store::LocalAuthStore;
    /// let store = LocalAuthStore::open("/var/lib/charger", Default::default())?;
    /// # Ok::<(), ocpp_station_store::LocalAuthError>(())
    /// ```
    ///
    /// # Errors
    /// [`LocalAuthError`]: the directory or file cannot be read, or the file is not one this
    /// store wrote.
    pub fn open(dir: impl AsRef<Path>, settings: Settings) -> Result<Self, LocalAuthError> {
        let dir = dir.as_ref();
        fs::create_dir_all(dir).map_err(|source| LocalAuthError::Io {
            path: dir.to_owned(),
            source,
        })?;
        let path = dir.join(FILE);
        let saved: Saved = match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| LocalAuthError::Corrupt {
                path: path.clone(),
                reason: e.to_string(),
            })?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Saved::default(),
            Err(source) => return Err(LocalAuthError::Io { path, source }),
        };
        let local = saved
            .load(settings)
            .map_err(|reason| LocalAuthError::Corrupt {
                path: path.clone(),
                reason,
            })?;
        Ok(LocalAuthStore::with(local, Some(path)))
    }

    fn with(local: LocalAuthorization, file: Option<PathBuf>) -> Self {
        LocalAuthStore {
            inner: Arc::new(Inner {
                local: Mutex::new(local),
                file,
                writer: Mutex::new(()),
                device_model: Mutex::new(None),
            }),
        }
    }

    /// The list, cache and settings now.
    pub fn snapshot(&self) -> LocalAuthorization {
        lock(&self.inner.local).clone()
    }

    /// The settings in force.
    pub fn settings(&self) -> Settings {
        lock(&self.inner.local).settings().clone()
    }

    /// Puts `settings` in force.
    pub fn set_settings(&self, settings: Settings) {
        lock(&self.inner.local).set_settings(settings);
    }

    /// Takes the settings from `device_model` (1.6 configuration keys for
    /// [`OcppVersion::V1_6`], the 2.x variables otherwise), now and after every change the
    /// central system makes there, and keeps its `LocalAuthListCtrlr.Entries` on the list's
    /// size (2.0.1 D01).
    ///
    /// ```
    /// use ocpp_model::device_model::{catalogue::Layout, Configuration, DeviceModel};
    /// use ocpp_station_store::{DeviceModelStore, LocalAuthStore};
    /// use ocpp_proto::OcppVersion;
    /// let mut configuration = Configuration::standard(1);
    /// configuration.update("AllowOfflineTxForUnknownId", "true");
    /// let device_model = DeviceModelStore::in_memory(
    ///     DeviceModel::standard(Layout::new(&[1])),
    ///     configuration,
    /// );
    /// let store = LocalAuthStore::in_memory(Default::default());
    /// store.follow_device_model(&device_model, OcppVersion::V1_6);
    /// assert!(store.settings().offline_tx_for_unknown_id);
    /// ```
    pub fn follow_device_model(&self, device_model: &DeviceModelStore, version: OcppVersion) {
        let read = move |store: &DeviceModelStore| match version {
            OcppVersion::V1_6 => Settings::from_configuration(&store.configuration()),
            _ => Settings::from_device_model(&store.device_model()),
        };
        self.set_settings(read(device_model));
        *lock(&self.inner.device_model) = Some(device_model.clone());
        self.tell_entries();
        // Weak both ways: the device model's listener must not keep this store (which keeps
        // the device model) alive.
        let this = Arc::downgrade(&self.inner);
        let source = device_model.clone();
        device_model.on_change(move |_: &Change| {
            if let Some(inner) = this.upgrade() {
                lock(&inner.local).set_settings(read(&source));
            }
        });
    }

    fn tell_entries(&self) {
        let entries = lock(&self.inner.local).list().len().to_string();
        if let Some(device_model) = lock(&self.inner.device_model).as_ref() {
            device_model.update(|model, _| {
                let id = catalogue::id(catalogue::LOCAL_AUTH_LIST_CTRLR);
                model.update(&id, "Entries", AttributeType::Actual, &entries);
            });
        }
    }

    /// The version a GetLocalListVersion answers: -1 without a list, 0 when empty.
    pub fn local_list_version(&self) -> i32 {
        lock(&self.inner.local).local_list_version()
    }

    /// Whether `token` may charge now without the central system, and why
    /// ([`LocalAuthorization::authorize_locally`]); `online`: the station is connected and
    /// accepted.
    ///
    /// ```
    /// use ocpp_model::local_auth::{Ask, Decision, Settings};
    /// use ocpp_model::IdToken;
    /// use ocpp_station_store::LocalAuthStore;
    /// let store = LocalAuthStore::in_memory(Settings::default());
    /// let decision = store.authorize_locally(&IdToken::from_id_tag("A"), true);
    /// assert_eq!(decision, Decision::AskCentralSystem(Ask::Online));
    /// ```
    pub fn authorize_locally(&self, token: &IdToken, online: bool) -> Decision {
        self.authorize_locally_at(token, &DateTime::now(), online)
    }

    /// [`authorize_locally`](LocalAuthStore::authorize_locally) at `now`.
    pub fn authorize_locally_at(&self, token: &IdToken, now: &DateTime, online: bool) -> Decision {
        lock(&self.inner.local).authorize_locally(token, now, online)
    }

    /// Applies `change` to a copy; when it says so, makes the copy durable and puts it in
    /// force (the settings in force kept). `Err` when it could not be written: nothing changed.
    fn apply<T>(
        &self,
        change: impl FnOnce(&mut LocalAuthorization) -> (T, bool),
    ) -> Result<T, io::Error> {
        let _one_at_a_time = lock(&self.inner.writer);
        let mut next = lock(&self.inner.local).clone();
        let (answer, changed) = change(&mut next);
        if !changed {
            return Ok(answer);
        }
        if let Some(path) = &self.inner.file {
            let saved = Saved::of(&next);
            write_atomically(path, &saved)?;
        }
        {
            let mut live = lock(&self.inner.local);
            next.set_settings(live.settings().clone());
            *live = next;
        }
        Ok(answer)
    }

    /// Applies a SendLocalList (1.6 §5.15, 2.0.1 D01): `Accepted` only once the new list is
    /// durable; a list that could not be written is `Failed` and leaves the list as it was.
    ///
    /// ```
    /// use ocpp_model::local_auth::{ListUpdate, Settings, UpdateKind, UpdateStatus};
    /// use ocpp_station_store::LocalAuthStore;
    /// let store = LocalAuthStore::in_memory(Settings::default());
    /// let update = ListUpdate::new(1, UpdateKind::Full);
    /// assert_eq!(store.send_local_list(&update), UpdateStatus::Accepted);
    /// ```
    pub fn send_local_list(&self, update: &ListUpdate) -> UpdateStatus {
        let applied = self.apply(|local| {
            let status = local.send_local_list(update);
            (status, status == UpdateStatus::Accepted)
        });
        match applied {
            Ok(status) => {
                if status == UpdateStatus::Accepted {
                    self.tell_entries();
                }
                status
            }
            Err(e) => {
                tracing::warn!(error = %e, "local list not written: SendLocalList Failed");
                UpdateStatus::Failed
            }
        }
    }

    /// Answers a ClearCache (1.6 §5.4, 2.0.1 C11): `Accepted` once the empty cache is durable
    /// (at once when it was empty), `Rejected` when the cache is disabled or could not be
    /// written.
    pub fn clear_cache(&self) -> ClearCacheStatus {
        let applied = self.apply(|local| {
            let had_entries = !local.cache().is_empty();
            let status = local.clear_cache();
            (status, had_entries && status == ClearCacheStatus::Accepted)
        });
        applied.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "cache not written: ClearCache Rejected");
            ClearCacheStatus::Rejected
        })
    }

    /// Learns the central system's answer on `token` into the cache (1.6 §3.5.1, 2.0.1 C10),
    /// durably: `Ok(false)` when the cache is disabled or the token is on the local list.
    ///
    /// ```
    /// use ocpp_model::local_auth::Settings;
    /// use ocpp_model::{Authorization, AuthorizationStatus, IdToken};
    /// use ocpp_station_store::LocalAuthStore;
    /// let store = LocalAuthStore::in_memory(Settings::default());
    /// let answer = Authorization::new(AuthorizationStatus::Accepted);
    /// assert!(store.learn(&IdToken::from_id_tag("A"), &answer).unwrap());
    /// assert!(store.authorize_locally(&IdToken::from_id_tag("A"), false).may_charge());
    /// ```
    ///
    /// # Errors
    /// The cache could not be written: nothing was learnt.
    pub fn learn(
        &self,
        token: &IdToken,
        authorization: &Authorization,
    ) -> Result<bool, LocalAuthError> {
        let now = DateTime::now();
        let learnt = self.apply(|local| {
            let learnt = local.learn(token, authorization, &now);
            (learnt, learnt)
        });
        learnt.map_err(|source| LocalAuthError::Io {
            path: self.inner.file.clone().unwrap_or_default(),
            source,
        })
    }

    /// [`learn`](LocalAuthStore::learn) from a 1.6 answer carrying an `IdTagInfo` (Authorize,
    /// StartTransaction, StopTransaction) on `id_tag`.
    ///
    /// # Errors
    /// The cache could not be written.
    pub fn learn_v1_6(&self, id_tag: &str, info: &v1_6::IdTagInfo) -> Result<bool, LocalAuthError> {
        self.learn(
            &IdToken::from_id_tag(id_tag),
            &Authorization::from_v1_6(info),
        )
    }

    /// [`learn`](LocalAuthStore::learn) from a 2.0.1 answer carrying an `IdTokenInfo`
    /// (Authorize, TransactionEvent) on `token`.
    ///
    /// # Errors
    /// The cache could not be written.
    pub fn learn_v2_0_1(
        &self,
        token: &v2_0_1::IdToken,
        info: &v2_0_1::IdTokenInfo,
    ) -> Result<bool, LocalAuthError> {
        self.learn(
            &IdToken::from_v2_0_1(token),
            &Authorization::from_v2_0_1(info),
        )
    }

    /// [`learn`](LocalAuthStore::learn) from a 2.1 answer carrying an `IdTokenInfo`.
    ///
    /// # Errors
    /// The cache could not be written.
    pub fn learn_v2_1(
        &self,
        token: &v2_1::IdToken,
        info: &v2_1::IdTokenInfo,
    ) -> Result<bool, LocalAuthError> {
        self.learn(&IdToken::from_v2_1(token), &Authorization::from_v2_1(info))
    }
}

/// Writes `saved` to `path` durably ([`replace_durably`]: `<path>.tmp`, synced, renamed
/// over `path`, directory synced).
fn write_atomically(path: &Path, saved: &Saved) -> io::Result<()> {
    let bytes = serde_json::to_vec_pretty(saved).map_err(io::Error::other)?;
    replace_durably(path, &bytes)
}

#[cfg(test)]
mod tests {
    use ocpp_model::local_auth::{Refusal, Source, UpdateKind};

    use super::*;

    fn dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "ocpp-station-store-local-auth-{name}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    fn accepted() -> Option<Authorization> {
        Some(Authorization::new(AuthorizationStatus::Accepted))
    }

    #[test]
    fn list_version_and_cache_survive_a_restart() {
        let dir = dir("restart");
        let store = LocalAuthStore::open(&dir, Settings::default()).unwrap();
        let until = DateTime::parse("2099-01-01T00:00:00Z").unwrap();
        let with_expiry = Authorization {
            expiry: Some(until.clone()),
            group: Some(IdToken::from_id_tag("G")),
            ..Authorization::new(AuthorizationStatus::Accepted)
        };
        let full = ListUpdate::new(4, UpdateKind::Full)
            .with(IdToken::from_id_tag("A"), Some(with_expiry.clone()))
            .with(IdToken::new("E1", IdTokenType::EMaid), accepted());
        assert_eq!(store.send_local_list(&full), UpdateStatus::Accepted);
        let blocked = Authorization::new(AuthorizationStatus::Blocked);
        assert!(store.learn(&IdToken::from_id_tag("C"), &blocked).unwrap());
        drop(store);

        let store = LocalAuthStore::open(&dir, Settings::default()).unwrap();
        assert_eq!(store.local_list_version(), 4);
        let local = store.snapshot();
        assert_eq!(
            local.list().get(&IdToken::from_id_tag("a")),
            Some(&with_expiry)
        );
        assert!(local
            .list()
            .get(&IdToken::new("E1", IdTokenType::EMaid))
            .is_some());
        assert_eq!(
            store.authorize_locally(&IdToken::from_id_tag("A"), false),
            Decision::Accepted {
                source: Source::LocalList,
                authorization: with_expiry
            }
        );
        assert!(matches!(
            store.authorize_locally(&IdToken::from_id_tag("C"), false),
            Decision::Refused(Refusal::NotAccepted {
                source: Source::Cache,
                ..
            })
        ));
        assert_eq!(store.clear_cache(), ClearCacheStatus::Accepted);
        drop(store);
        let store = LocalAuthStore::open(&dir, Settings::default()).unwrap();
        assert!(store.snapshot().cache().is_empty());
        assert!(!dir.join("local_auth.json.tmp").exists());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_list_that_cannot_be_kept_fails_and_leaves_no_trace() {
        let dir = dir("unwritable");
        let store = LocalAuthStore::open(&dir, Settings::default()).unwrap();
        fs::create_dir_all(dir.join("local_auth.json.tmp")).unwrap();
        let full = ListUpdate::new(1, UpdateKind::Full).with(IdToken::from_id_tag("A"), accepted());
        assert_eq!(store.send_local_list(&full), UpdateStatus::Failed);
        assert_eq!(store.local_list_version(), 0);
        assert!(store
            .learn(
                &IdToken::from_id_tag("A"),
                &Authorization::new(AuthorizationStatus::Accepted)
            )
            .is_err());
        assert!(store.snapshot().cache().is_empty());
        // Nothing to clear: nothing to write, Accepted.
        assert_eq!(store.clear_cache(), ClearCacheStatus::Accepted);
        assert!(!dir.join(FILE).exists());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_foreign_file_is_refused() {
        let dir = dir("corrupt");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(FILE), "not json").unwrap();
        let error = LocalAuthStore::open(&dir, Settings::default()).unwrap_err();
        assert!(matches!(error, LocalAuthError::Corrupt { .. }), "{error}");
        let bad = r#"{"version":1,"list":[{"token":{"idToken":"A","type":"ISO14443"},"status":"Maybe"}],"cache":[]}"#;
        fs::write(dir.join(FILE), bad).unwrap();
        let error = LocalAuthStore::open(&dir, Settings::default()).unwrap_err();
        assert!(matches!(error, LocalAuthError::Corrupt { .. }), "{error}");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn settings_follow_the_device_model() {
        use ocpp_model::device_model::{catalogue::Layout, Configuration, DeviceModel};
        let device_model = DeviceModelStore::in_memory(
            DeviceModel::standard(Layout::new(&[1])),
            Configuration::standard(1),
        );
        let store = LocalAuthStore::in_memory(Settings::default());
        store.follow_device_model(&device_model, OcppVersion::V2_0_1);
        assert!(!store.settings().offline_tx_for_unknown_id);
        let set = v2_0_1::SetVariablesRequest::new(vec![v2_0_1::SetVariableData::new(
            "true",
            v2_0_1::Component::new("AuthCtrlr"),
            v2_0_1::Variable::new("OfflineTxForUnknownIdEnabled"),
        )]);
        device_model.set_variables(&set).unwrap();
        assert!(store.settings().offline_tx_for_unknown_id);
        let full = ListUpdate::new(1, UpdateKind::Full)
            .with(IdToken::from_id_tag("A"), accepted())
            .with(IdToken::from_id_tag("B"), accepted());
        assert_eq!(store.send_local_list(&full), UpdateStatus::Accepted);
        assert_eq!(
            device_model
                .device_model()
                .value("LocalAuthListCtrlr", "Entries")
                .as_deref(),
            Some("2")
        );
    }
}
