//! The configuration keys of OCPP 1.6 (§9 "Standard Configuration Key Names & Values"): the
//! standard ones, typed, and the application's own; GetConfiguration (§5.8) and
//! ChangeConfiguration (§5.3) answered from them.

use ocpp_messages::v1_6 as m;

use super::variable::members;
use super::Change;

/// The measurands of 1.6 §7.31 (`Measurand`) and 2.0.1 `MeasurandEnumType`: what the
/// `MeterValues*Data` keys and the `SampledDataCtrlr` measurand lists may name.
pub const MEASURANDS: &[&str] = &[
    "Current.Export",
    "Current.Import",
    "Current.Offered",
    "Energy.Active.Export.Register",
    "Energy.Active.Import.Register",
    "Energy.Reactive.Export.Register",
    "Energy.Reactive.Import.Register",
    "Energy.Active.Export.Interval",
    "Energy.Active.Import.Interval",
    "Energy.Active.Net",
    "Energy.Reactive.Export.Interval",
    "Energy.Reactive.Import.Interval",
    "Energy.Reactive.Net",
    "Energy.Apparent.Net",
    "Energy.Apparent.Import",
    "Energy.Apparent.Export",
    "Frequency",
    "Power.Active.Export",
    "Power.Active.Import",
    "Power.Factor",
    "Power.Offered",
    "Power.Reactive.Export",
    "Power.Reactive.Import",
    "RPM",
    "SoC",
    "Temperature",
    "Voltage",
];

/// The feature profiles of 1.6 §3 (`SupportedFeatureProfiles`).
const PROFILES: &[&str] = &[
    "Core",
    "FirmwareManagement",
    "LocalAuthListManagement",
    "Reservation",
    "SmartCharging",
    "RemoteTrigger",
];

/// The phase rotations of 1.6 §9.1.7 (`ConnectorPhaseRotation`, as `connector.rotation`).
const ROTATIONS: &[&str] = &[
    "NotApplicable",
    "Unknown",
    "RST",
    "RTS",
    "SRT",
    "STR",
    "TRS",
    "TSR",
];

/// The type of a key's value (1.6 §9: "Type").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyType {
    /// A whole number, at least zero.
    Integer,
    /// `true` or `false`.
    Boolean,
    /// A comma-separated list (CSL) of allowed members.
    Csl,
    /// Any text (at most 500 characters: the length of `KeyValue.value`).
    String,
}

/// One configuration key: its name, whether the central system may change it, its type and
/// value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigurationKey {
    /// The key (at most 50 characters).
    pub key: String,
    /// Read-only: ChangeConfiguration answers Rejected.
    pub readonly: bool,
    /// The type.
    pub kind: KeyType,
    /// The value (`None`: not set).
    pub value: Option<String>,
    /// The members a CSL may hold (empty: any) and, for `ConnectorPhaseRotation`, the rotations.
    pub members: Vec<String>,
    /// The most members of a CSL (its `...MaxLength` key).
    pub max_members: Option<usize>,
    /// A change takes effect after a reboot: ChangeConfiguration answers RebootRequired.
    pub reboot_required: bool,
}

impl ConfigurationKey {
    /// A key of `kind` with `value`; read-write unless `readonly`.
    pub fn new(key: &str, kind: KeyType, readonly: bool, value: &str) -> Self {
        ConfigurationKey {
            key: key.to_owned(),
            readonly,
            kind,
            value: Some(value.to_owned()),
            members: Vec::new(),
            max_members: None,
            reboot_required: false,
        }
    }

    /// With the members a CSL may hold.
    #[must_use]
    pub fn members<'a>(mut self, members: impl IntoIterator<Item = &'a str>) -> Self {
        self.members = members.into_iter().map(str::to_owned).collect();
        self
    }

    /// A change takes effect after a reboot.
    #[must_use]
    pub fn needs_reboot(mut self) -> Self {
        self.reboot_required = true;
        self
    }

    /// Whether `value` fits the key's type.
    ///
    /// ```
    /// use ocpp_model::device_model::{ConfigurationKey, KeyType};
    /// let key = ConfigurationKey::new("HeartbeatInterval", KeyType::Integer, false, "60");
    /// assert!(key.accepts("300"));
    /// assert!(!key.accepts("-1"));
    /// assert!(!key.accepts("soon"));
    /// ```
    pub fn accepts(&self, value: &str) -> bool {
        match self.kind {
            KeyType::Integer => value.trim().parse::<u64>().is_ok(),
            KeyType::Boolean => matches!(value, "true" | "false"),
            KeyType::String => value.chars().count() <= 500,
            KeyType::Csl => {
                let mut seen: Vec<&str> = Vec::new();
                for member in members(value) {
                    if !self.member_allowed(member) || seen.contains(&member) {
                        return false;
                    }
                    seen.push(member);
                }
                self.max_members.is_none_or(|max| seen.len() <= max)
            }
        }
    }

    fn member_allowed(&self, member: &str) -> bool {
        if self.members.is_empty() {
            return true;
        }
        // `ConnectorPhaseRotation`: `1.RST`, a connector and a rotation.
        if let Some((connector, rotation)) = member.split_once('.') {
            if connector.parse::<u32>().is_ok() && self.members.iter().any(|m| m == rotation) {
                return true;
            }
        }
        self.members.iter().any(|m| m == member)
    }
}

/// The answer to a ChangeConfiguration (`ConfigurationStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChangeStatus {
    /// Changed.
    Accepted,
    /// Read-only, or a value that does not fit.
    Rejected,
    /// Changed; it takes effect after a reboot.
    RebootRequired,
    /// Not a key of this station.
    NotSupported,
}

impl ChangeStatus {
    /// The 1.6 wire status.
    pub fn to_v1_6(self) -> m::ConfigurationStatus {
        match self {
            ChangeStatus::Accepted => m::ConfigurationStatus::Accepted,
            ChangeStatus::Rejected => m::ConfigurationStatus::Rejected,
            ChangeStatus::RebootRequired => m::ConfigurationStatus::RebootRequired,
            ChangeStatus::NotSupported => m::ConfigurationStatus::NotSupported,
        }
    }
}

/// A GetConfiguration asked for more keys than `GetConfigurationMaxKeys` (1.6 §9.1.9): the
/// station answers CALLERROR `OccurenceConstraintViolation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{asked} keys asked, at most {max} (GetConfigurationMaxKeys)")]
pub struct TooManyKeys {
    /// How many were asked.
    pub asked: usize,
    /// `GetConfigurationMaxKeys`.
    pub max: usize,
}

/// The 1.6 configuration of a station: its keys, in order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Configuration {
    keys: Vec<ConfigurationKey>,
}

impl Configuration {
    /// No keys.
    pub fn new() -> Self {
        Configuration::default()
    }

    /// The standard keys of 1.6 §9.1 (Core profile) and §9.2 (Local Auth List Management) for a
    /// station with `connectors` connectors, with typical values.
    ///
    /// ```
    /// use ocpp_model::device_model::Configuration;
    /// let config = Configuration::standard(2);
    /// assert_eq!(config.value("NumberOfConnectors").as_deref(), Some("2"));
    /// assert!(config.key("NumberOfConnectors").unwrap().readonly);
    /// assert!(!config.key("HeartbeatInterval").unwrap().readonly);
    /// ```
    pub fn standard(connectors: u32) -> Self {
        use KeyType::{Boolean as B, Csl, Integer as I};
        let rw = |key: &str, kind, value: &str| ConfigurationKey::new(key, kind, false, value);
        let ro = |key: &str, kind, value: &str| ConfigurationKey::new(key, kind, true, value);
        let measurands = |key: &str, value: &str| {
            let mut k = rw(key, Csl, value).members(MEASURANDS.iter().copied());
            k.max_members = Some(MEASURANDS.len());
            k
        };
        let rotation = (0..=connectors)
            .map(|c| format!("{c}.Unknown"))
            .collect::<Vec<_>>()
            .join(",");
        let mut phase =
            rw("ConnectorPhaseRotation", Csl, &rotation).members(ROTATIONS.iter().copied());
        phase.max_members = Some(connectors as usize + 1);
        let without_max_lengths = [
            rw("AllowOfflineTxForUnknownId", B, "false"),
            rw("AuthorizationCacheEnabled", B, "true"),
            rw("AuthorizeRemoteTxRequests", B, "true"),
            rw("ClockAlignedDataInterval", I, "0"),
            rw("ConnectionTimeOut", I, "60"),
            phase,
            ro("GetConfigurationMaxKeys", I, "50"),
            rw("HeartbeatInterval", I, "60"),
            rw("LocalAuthorizeOffline", B, "true"),
            rw("LocalPreAuthorize", B, "false"),
            measurands("MeterValuesAlignedData", "Energy.Active.Import.Register"),
            measurands("MeterValuesSampledData", "Energy.Active.Import.Register"),
            rw("MeterValueSampleInterval", I, "60"),
            ro("NumberOfConnectors", I, &connectors.to_string()),
            rw("ResetRetries", I, "2"),
            rw("StopTransactionOnEVSideDisconnect", B, "true"),
            rw("StopTransactionOnInvalidId", B, "true"),
            measurands("StopTxnAlignedData", ""),
            measurands("StopTxnSampledData", ""),
            ro(
                "SupportedFeatureProfiles",
                Csl,
                "Core,LocalAuthListManagement",
            )
            .members(PROFILES.iter().copied()),
            rw("TransactionMessageAttempts", I, "3"),
            rw("TransactionMessageRetryInterval", I, "10"),
            rw("UnlockConnectorOnEVSideDisconnect", B, "true"),
            rw("WebSocketPingInterval", I, "30"),
            rw("LocalAuthListEnabled", B, "true"),
            ro("LocalAuthListMaxLength", I, "1000"),
            ro("SendLocalListMaxLength", I, "100"),
        ];
        // Each list is followed by its read-only `...MaxLength` key, the most members it holds.
        let mut keys = Vec::with_capacity(without_max_lengths.len() + 5);
        for key in without_max_lengths {
            let max_length = key
                .max_members
                .map(|max| ro(&format!("{}MaxLength", key.key), I, &max.to_string()));
            keys.push(key);
            keys.extend(max_length);
        }
        Configuration { keys }
    }

    /// Adds a key (the application's own, or a standard one given another type or value); one
    /// of the same name is replaced.
    ///
    /// ```
    /// use ocpp_model::device_model::{Configuration, ConfigurationKey, KeyType};
    /// let mut config = Configuration::standard(1);
    /// config.insert(ConfigurationKey::new("AcmeFanSpeed", KeyType::Integer, false, "50"));
    /// assert_eq!(config.value("AcmeFanSpeed").as_deref(), Some("50"));
    /// ```
    pub fn insert(&mut self, key: ConfigurationKey) {
        match self.keys.iter_mut().find(|k| k.key == key.key) {
            Some(slot) => *slot = key,
            None => self.keys.push(key),
        }
    }

    /// Every key, in order.
    pub fn keys(&self) -> &[ConfigurationKey] {
        &self.keys
    }

    /// The key named `key`.
    pub fn key(&self, key: &str) -> Option<&ConfigurationKey> {
        self.keys.iter().find(|k| k.key == key)
    }

    /// The value of `key`.
    pub fn value(&self, key: &str) -> Option<String> {
        self.key(key).and_then(|k| k.value.clone())
    }

    /// Sets a value the station itself knows (a read-only one included), without checks or a
    /// [`Change`]; `false` when there is no such key.
    pub fn update(&mut self, key: &str, value: &str) -> bool {
        match self.keys.iter_mut().find(|k| k.key == key) {
            Some(slot) => {
                slot.value = Some(value.to_owned());
                true
            }
            None => false,
        }
    }

    /// `GetConfigurationMaxKeys`, when set.
    pub fn max_keys(&self) -> Option<usize> {
        self.value("GetConfigurationMaxKeys")?.parse().ok()
    }

    /// Answers a GetConfiguration (1.6 §5.8): no key asked, every key; otherwise the known ones
    /// and the others as `unknownKey`.
    ///
    /// ```
    /// use ocpp_model::device_model::Configuration;
    /// use ocpp_messages::v1_6::GetConfigurationRequest;
    /// let config = Configuration::standard(1);
    /// let asked = GetConfigurationRequest::default()
    ///     .with_key(vec!["HeartbeatInterval".into(), "Acme".into()]);
    /// let answer = config.get_configuration(&asked).unwrap();
    /// assert_eq!(answer.configuration_key.unwrap()[0].value.as_deref(), Some("60"));
    /// assert_eq!(answer.unknown_key.unwrap(), vec!["Acme".to_owned()]);
    /// ```
    ///
    /// # Errors
    /// [`TooManyKeys`]: more keys asked than `GetConfigurationMaxKeys`.
    pub fn get_configuration(
        &self,
        request: &m::GetConfigurationRequest,
    ) -> Result<m::GetConfigurationResponse, TooManyKeys> {
        let asked = request.key.as_deref().unwrap_or_default();
        if let Some(max) = self.max_keys() {
            if asked.len() > max {
                return Err(TooManyKeys {
                    asked: asked.len(),
                    max,
                });
            }
        }
        let wire = |k: &ConfigurationKey| {
            let mut out = m::KeyValue::new(k.key.clone(), k.readonly);
            out.value = k.value.clone();
            out
        };
        let mut response = m::GetConfigurationResponse::default();
        if asked.is_empty() {
            return Ok(response.with_configuration_key(self.keys.iter().map(wire).collect()));
        }
        let (known, unknown): (Vec<_>, Vec<_>) =
            asked.iter().partition(|name| self.key(name).is_some());
        let known: Vec<_> = known.iter().filter_map(|n| self.key(n)).map(wire).collect();
        if !known.is_empty() {
            response = response.with_configuration_key(known);
        }
        if !unknown.is_empty() {
            response = response.with_unknown_key(unknown.into_iter().cloned().collect());
        }
        Ok(response)
    }

    /// Changes a key as ChangeConfiguration does (1.6 §5.3): unknown: NotSupported; read-only
    /// or a value that does not fit: Rejected, nothing changes; otherwise changed (Accepted, or
    /// RebootRequired) with the [`Change`].
    ///
    /// ```
    /// use ocpp_model::device_model::{ChangeStatus, Configuration};
    /// let mut config = Configuration::standard(1);
    /// assert_eq!(config.change("HeartbeatInterval", "300").0, ChangeStatus::Accepted);
    /// assert_eq!(config.change("HeartbeatInterval", "often").0, ChangeStatus::Rejected);
    /// assert_eq!(config.change("NumberOfConnectors", "2").0, ChangeStatus::Rejected);
    /// assert_eq!(config.change("Acme", "1").0, ChangeStatus::NotSupported);
    /// ```
    pub fn change(&mut self, key: &str, value: &str) -> (ChangeStatus, Option<Change>) {
        let Some(slot) = self.keys.iter_mut().find(|k| k.key == key) else {
            return (ChangeStatus::NotSupported, None);
        };
        if slot.readonly || !slot.accepts(value) {
            return (ChangeStatus::Rejected, None);
        }
        slot.value = Some(value.to_owned());
        let status = match slot.reboot_required {
            true => ChangeStatus::RebootRequired,
            false => ChangeStatus::Accepted,
        };
        let change = Change::Key {
            key: key.to_owned(),
            value: value.to_owned(),
        };
        (status, Some(change))
    }

    /// Answers a ChangeConfiguration ([`Configuration::change`]).
    pub fn change_configuration(
        &mut self,
        request: &m::ChangeConfigurationRequest,
    ) -> (m::ChangeConfigurationResponse, Option<Change>) {
        let (status, change) = self.change(&request.key, &request.value);
        (
            m::ChangeConfigurationResponse::new(status.to_v1_6()),
            change,
        )
    }

    /// The values that survive a reboot: those of every read-write key.
    pub fn persistent_values(&self) -> Vec<(String, String)> {
        self.keys
            .iter()
            .filter(|k| !k.readonly)
            .filter_map(|k| Some((k.key.clone(), k.value.clone()?)))
            .collect()
    }

    /// Restores a value [`Configuration::persistent_values`] gave; `false` (nothing changes)
    /// when the key is gone, read-only, or the value no longer fits.
    pub fn restore(&mut self, key: &str, value: &str) -> bool {
        match self.keys.iter_mut().find(|k| k.key == key) {
            Some(slot) if !slot.readonly && slot.accepts(value) => {
                slot.value = Some(value.to_owned());
                true
            }
            _ => false,
        }
    }
}
