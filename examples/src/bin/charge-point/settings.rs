//! The charge point's configuration keys (1.6) / variables (2.x) that a CSMS can read and set.

use std::time::Duration;

use ocpp_examples::charge_point_payload::SettingStatus;
use ocpp_tokio::station::RetryBackOff;

/// One setting, under its 1.6 key and its 2.x component and variable names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    HeartbeatInterval,
    MeterInterval,
    RetryWaitMinimum,
    RetryRandomRange,
    RetryRepeatTimes,
    NumberOfConnectors,
}

/// (key, 1.6 name, 2.x component, 2.x variable, read-only).
const KEYS: [(Key, &str, &str, &str, bool); 6] = [
    (
        Key::HeartbeatInterval,
        "HeartbeatInterval",
        "OCPPCommCtrlr",
        "HeartbeatInterval",
        false,
    ),
    (
        Key::MeterInterval,
        "MeterValueSampleInterval",
        "SampledDataCtrlr",
        "TxUpdatedInterval",
        false,
    ),
    (
        Key::RetryWaitMinimum,
        "RetryBackOffWaitMinimum",
        "OCPPCommCtrlr",
        "RetryBackOffWaitMinimum",
        false,
    ),
    (
        Key::RetryRandomRange,
        "RetryBackOffRandomRange",
        "OCPPCommCtrlr",
        "RetryBackOffRandomRange",
        false,
    ),
    (
        Key::RetryRepeatTimes,
        "RetryBackOffRepeatTimes",
        "OCPPCommCtrlr",
        "RetryBackOffRepeatTimes",
        false,
    ),
    (
        Key::NumberOfConnectors,
        "NumberOfConnectors",
        "EVSE",
        "Count",
        true,
    ),
];

/// The settings' values.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// Heartbeat interval (the CSMS's BootNotification answer sets it too).
    pub(crate) heartbeat_interval: Duration,
    /// MeterValues / TransactionEvent(Updated) interval during a transaction.
    pub(crate) meter_interval: Duration,
    /// The reconnect back-off.
    pub(crate) back_off: RetryBackOff,
    /// Connectors (1.6) / EVSEs (2.x).
    pub(crate) connectors: u32,
}

/// Which settings changed, so that running timers follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Changed {
    pub(crate) heartbeat: bool,
    pub(crate) meter: bool,
}

impl Settings {
    /// Every 1.6 key with its value and whether it is read-only.
    pub(crate) fn all_v16(&self) -> Vec<(String, String, bool)> {
        KEYS.iter()
            .map(|(key, name, _, _, ro)| (name.to_string(), self.value(*key), *ro))
            .collect()
    }

    /// The value of a 1.6 key, with its read-only flag.
    pub(crate) fn get_v16(&self, name: &str) -> Option<(String, bool)> {
        let (key, _, _, _, ro) = KEYS.iter().find(|k| k.1 == name)?;
        Some((self.value(*key), *ro))
    }

    /// The value of a 2.x variable.
    pub(crate) fn get_v2(&self, component: &str, variable: &str) -> Option<String> {
        let (key, ..) = KEYS.iter().find(|k| k.2 == component && k.3 == variable)?;
        Some(self.value(*key))
    }

    /// Sets a 1.6 key.
    pub(crate) fn set_v16(
        &mut self,
        name: &str,
        value: &str,
        changed: &mut Changed,
    ) -> SettingStatus {
        match KEYS.iter().find(|k| k.1 == name) {
            Some((key, _, _, _, false)) => self.set(*key, value, changed),
            Some(_) => SettingStatus::Rejected,
            None => SettingStatus::Unknown,
        }
    }

    /// Sets a 2.x variable.
    pub(crate) fn set_v2(
        &mut self,
        component: &str,
        variable: &str,
        value: &str,
        changed: &mut Changed,
    ) -> SettingStatus {
        match KEYS.iter().find(|k| k.2 == component && k.3 == variable) {
            Some((key, _, _, _, false)) => self.set(*key, value, changed),
            Some(_) => SettingStatus::Rejected,
            None => SettingStatus::Unknown,
        }
    }

    fn value(&self, key: Key) -> String {
        match key {
            Key::HeartbeatInterval => seconds(self.heartbeat_interval),
            Key::MeterInterval => seconds(self.meter_interval),
            Key::RetryWaitMinimum => seconds(self.back_off.wait_minimum),
            Key::RetryRandomRange => seconds(self.back_off.random_range),
            Key::RetryRepeatTimes => self.back_off.repeat_times.to_string(),
            Key::NumberOfConnectors => self.connectors.to_string(),
        }
    }

    fn set(&mut self, key: Key, value: &str, changed: &mut Changed) -> SettingStatus {
        let secs = value
            .trim()
            .parse::<f64>()
            .ok()
            .and_then(|s| Duration::try_from_secs_f64(s).ok());
        match (key, secs) {
            (Key::HeartbeatInterval, Some(d)) if !d.is_zero() => {
                self.heartbeat_interval = d;
                changed.heartbeat = true;
            }
            (Key::MeterInterval, Some(d)) if !d.is_zero() => {
                self.meter_interval = d;
                changed.meter = true;
            }
            (Key::RetryWaitMinimum, Some(d)) => self.back_off.wait_minimum = d,
            (Key::RetryRandomRange, Some(d)) => self.back_off.random_range = d,
            (Key::RetryRepeatTimes, _) => match value.trim().parse::<u32>() {
                Ok(n) if n <= 31 => self.back_off.repeat_times = n,
                _ => return SettingStatus::Rejected,
            },
            _ => return SettingStatus::Rejected,
        }
        SettingStatus::Accepted
    }
}

/// Whole seconds as an integer (what the specifications use), fractions as a decimal.
fn seconds(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        d.as_secs().to_string()
    } else {
        format!("{}", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings {
            heartbeat_interval: Duration::from_secs(60),
            meter_interval: Duration::from_millis(500),
            back_off: RetryBackOff::default(),
            connectors: 2,
        }
    }

    #[test]
    fn get_and_set_by_either_name() {
        let mut s = settings();
        let mut changed = Changed::default();
        assert_eq!(s.get_v16("HeartbeatInterval"), Some(("60".into(), false)));
        assert_eq!(
            s.get_v2("SampledDataCtrlr", "TxUpdatedInterval"),
            Some("0.5".into())
        );
        assert_eq!(
            s.set_v16("HeartbeatInterval", "30", &mut changed),
            SettingStatus::Accepted
        );
        assert!(changed.heartbeat && !changed.meter);
        assert_eq!(
            s.set_v2(
                "OCPPCommCtrlr",
                "RetryBackOffRepeatTimes",
                "2",
                &mut changed
            ),
            SettingStatus::Accepted
        );
        assert_eq!(s.back_off.repeat_times, 2);
        for (name, value, status) in [
            ("HeartbeatInterval", "soon", SettingStatus::Rejected),
            ("HeartbeatInterval", "0", SettingStatus::Rejected),
            ("NumberOfConnectors", "4", SettingStatus::Rejected),
            ("NoSuchKey", "4", SettingStatus::Unknown),
        ] {
            let set = s.set_v16(name, value, &mut changed);
            assert_eq!(set, status, "{name} = {value}");
        }
        assert_eq!(
            s.set_v2("X", "HeartbeatInterval", "4", &mut changed),
            SettingStatus::Unknown
        );
        assert_eq!(s.heartbeat_interval, Duration::from_secs(30));
        assert_eq!(s.all_v16().len(), KEYS.len());
    }
}
