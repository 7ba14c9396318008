//! The settings of local authorization, as the device model holds them (1.6 configuration
//! keys §9.1, §9.2; 2.0.1 `AuthCtrlr`, `AuthCacheCtrlr`, `LocalAuthListCtrlr`).

use crate::device_model::{catalogue, Configuration, DeviceModel};

/// How many entries a list holds when the device model does not say (1.6
/// `LocalAuthListMaxLength` of the standard configuration; 2.0.1 has no variable for it:
/// `LocalAuthListCtrlr.Entries` counts the entries).
pub const DEFAULT_LIST_MAX_ENTRIES: usize = 1000;

/// How many entries the cache holds before the oldest learnt goes (2.0.1 `AuthCacheCtrlr`
/// has a `Storage` in bytes, 1.6 nothing: this is the station's choice).
pub const DEFAULT_CACHE_MAX_ENTRIES: usize = 1000;

/// What governs the list, the cache and the decision.
///
/// ```
/// use ocpp_model::device_model::Configuration;
/// use ocpp_model::local_auth::Settings;
/// let settings = Settings::from_configuration(&Configuration::standard(1));
/// assert!(settings.local_authorize_offline);
/// assert_eq!(settings.items_per_message, 100);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Settings {
    /// The station has a local list: 1.6 `LocalAuthListManagement` in
    /// `SupportedFeatureProfiles`; 2.0.1 `LocalAuthListCtrlr.Available`.
    pub list_available: bool,
    /// 1.6 `LocalAuthListEnabled`, 2.0.1 `LocalAuthListCtrlr.Enabled`.
    pub list_enabled: bool,
    /// The most entries of the list: 1.6 `LocalAuthListMaxLength`.
    pub list_max_entries: usize,
    /// The most entries of one SendLocalList: 1.6 `SendLocalListMaxLength`, 2.0.1
    /// `LocalAuthListCtrlr.ItemsPerMessage`.
    pub items_per_message: usize,
    /// 1.6 `AuthorizationCacheEnabled`, 2.0.1 `AuthCacheCtrlr.Enabled`.
    pub cache_enabled: bool,
    /// The most entries of the cache.
    pub cache_max_entries: usize,
    /// How long an answer without expiry stays in the cache, in seconds: 2.0.1
    /// `AuthCacheCtrlr.LifeTime`; `None`: until cleared (1.6).
    pub cache_lifetime_s: Option<u64>,
    /// 1.6 and 2.0.1 `LocalAuthorizeOffline`: offline, the list and cache authorize.
    pub local_authorize_offline: bool,
    /// 1.6 and 2.0.1 `LocalPreAuthorize`: online, the list and cache authorize without asking.
    pub local_pre_authorize: bool,
    /// 1.6 `AllowOfflineTxForUnknownId`, 2.0.1 `OfflineTxForUnknownIdEnabled`: offline, an
    /// unknown token may charge.
    pub offline_tx_for_unknown_id: bool,
}

impl Default for Settings {
    /// The defaults of the standard configuration and catalogue.
    fn default() -> Self {
        Settings {
            list_available: true,
            list_enabled: true,
            list_max_entries: DEFAULT_LIST_MAX_ENTRIES,
            items_per_message: 100,
            cache_enabled: true,
            cache_max_entries: DEFAULT_CACHE_MAX_ENTRIES,
            cache_lifetime_s: None,
            local_authorize_offline: true,
            local_pre_authorize: false,
            offline_tx_for_unknown_id: false,
        }
    }
}

fn flag(value: Option<String>, default: bool) -> bool {
    match value.as_deref().map(str::trim) {
        Some(v) if v.eq_ignore_ascii_case("true") => true,
        Some(v) if v.eq_ignore_ascii_case("false") => false,
        _ => default,
    }
}

fn count(value: Option<String>, default: usize) -> usize {
    value.and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

impl Settings {
    /// The settings of a 1.6 station's configuration keys; a key it lacks keeps its default.
    pub fn from_configuration(configuration: &Configuration) -> Self {
        let d = Settings::default();
        let value = |key: &str| configuration.value(key);
        let profiles = value("SupportedFeatureProfiles");
        Settings {
            list_available: profiles
                .map(|p| p.split(',').any(|p| p.trim() == "LocalAuthListManagement"))
                .unwrap_or(d.list_available),
            list_enabled: flag(value("LocalAuthListEnabled"), d.list_enabled),
            list_max_entries: count(value("LocalAuthListMaxLength"), d.list_max_entries),
            items_per_message: count(value("SendLocalListMaxLength"), d.items_per_message),
            cache_enabled: flag(value("AuthorizationCacheEnabled"), d.cache_enabled),
            cache_max_entries: d.cache_max_entries,
            cache_lifetime_s: None,
            local_authorize_offline: flag(
                value("LocalAuthorizeOffline"),
                d.local_authorize_offline,
            ),
            local_pre_authorize: flag(value("LocalPreAuthorize"), d.local_pre_authorize),
            offline_tx_for_unknown_id: flag(
                value("AllowOfflineTxForUnknownId"),
                d.offline_tx_for_unknown_id,
            ),
        }
    }

    /// The settings of a 2.x station's device model; a variable it lacks keeps its default.
    ///
    /// ```
    /// use ocpp_model::device_model::{catalogue::Layout, DeviceModel};
    /// use ocpp_model::local_auth::Settings;
    /// let settings = Settings::from_device_model(&DeviceModel::standard(Layout::new(&[1])));
    /// assert_eq!(settings.cache_lifetime_s, Some(86400));
    /// ```
    pub fn from_device_model(model: &DeviceModel) -> Self {
        let d = Settings::default();
        let list = |v: &str| model.value(catalogue::LOCAL_AUTH_LIST_CTRLR, v);
        let cache = |v: &str| model.value(catalogue::AUTH_CACHE_CTRLR, v);
        let auth = |v: &str| model.value(catalogue::AUTH_CTRLR, v);
        Settings {
            list_available: flag(list("Available"), d.list_available),
            list_enabled: flag(list("Enabled"), d.list_enabled),
            list_max_entries: d.list_max_entries,
            items_per_message: count(list("ItemsPerMessage"), d.items_per_message),
            cache_enabled: flag(cache("Available"), true) && flag(cache("Enabled"), true),
            cache_max_entries: d.cache_max_entries,
            cache_lifetime_s: cache("LifeTime").and_then(|v| v.trim().parse().ok()),
            local_authorize_offline: flag(auth("LocalAuthorizeOffline"), d.local_authorize_offline),
            local_pre_authorize: flag(auth("LocalPreAuthorize"), d.local_pre_authorize),
            offline_tx_for_unknown_id: flag(
                auth("OfflineTxForUnknownIdEnabled"),
                d.offline_tx_for_unknown_id,
            ),
        }
    }
}
