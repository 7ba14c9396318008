//! [`Setting`]: one name for a configuration setting that 1.6 calls a key and 2.x a variable of
//! a component.
//!
//! Only settings the specifications map one to one are listed, each from the OCPP 2.0.1
//! Part 2 Appendix 3 ("Standardized components and variables") against the 1.6 keys of OCPP 1.6
//! edition 2 §9 and the security whitepaper; a setting not listed is set through the raw
//! messages (`ChangeConfiguration`, `SetVariables`).

wire_names! {
    /// A configuration setting, by its 1.6 key.
    Setting {
        /// Seconds between heartbeats: 1.6 `HeartbeatInterval`, 2.x `OCPPCommCtrlr.HeartbeatInterval`.
        HeartbeatInterval => "HeartbeatInterval",
        /// Seconds between meter values in a transaction: 1.6 `MeterValueSampleInterval`, 2.x
        /// `SampledDataCtrlr.TxUpdatedInterval`.
        MeterValueSampleInterval => "MeterValueSampleInterval",
        /// The measurands sampled in a transaction: 1.6 `MeterValuesSampledData`, 2.x
        /// `SampledDataCtrlr.TxUpdatedMeasurands`.
        MeterValuesSampledData => "MeterValuesSampledData",
        /// Seconds between clock-aligned meter values: 1.6 `ClockAlignedDataInterval`, 2.x
        /// `AlignedDataCtrlr.Interval`.
        ClockAlignedDataInterval => "ClockAlignedDataInterval",
        /// Seconds to wait for the EV to be connected after authorization: 1.6
        /// `ConnectionTimeOut`, 2.x `TxCtrlr.EVConnectionTimeOut`.
        ConnectionTimeOut => "ConnectionTimeOut",
        /// The Basic password (security profiles 1 and 2): 1.6 `AuthorizationKey`, 2.x
        /// `SecurityCtrlr.BasicAuthPassword`.
        AuthorizationKey => "AuthorizationKey",
        /// Seconds between WebSocket pings: 1.6 `WebSocketPingInterval`, 2.x
        /// `OCPPCommCtrlr.WebSocketPingInterval`.
        WebSocketPingInterval => "WebSocketPingInterval",
    }
}

impl Setting {
    /// The 1.6 configuration key.
    ///
    /// ```
    /// use ocpp_model::Setting;
    /// assert_eq!(Setting::ConnectionTimeOut.key_1_6(), "ConnectionTimeOut");
    /// ```
    pub fn key_1_6(self) -> &'static str {
        self.as_str()
    }

    /// The 2.x component and variable.
    ///
    /// ```
    /// use ocpp_model::Setting;
    /// assert_eq!(
    ///     Setting::MeterValueSampleInterval.component_variable(),
    ///     ("SampledDataCtrlr", "TxUpdatedInterval")
    /// );
    /// ```
    pub fn component_variable(self) -> (&'static str, &'static str) {
        match self {
            Setting::HeartbeatInterval => ("OCPPCommCtrlr", "HeartbeatInterval"),
            Setting::MeterValueSampleInterval => ("SampledDataCtrlr", "TxUpdatedInterval"),
            Setting::MeterValuesSampledData => ("SampledDataCtrlr", "TxUpdatedMeasurands"),
            Setting::ClockAlignedDataInterval => ("AlignedDataCtrlr", "Interval"),
            Setting::ConnectionTimeOut => ("TxCtrlr", "EVConnectionTimeOut"),
            Setting::AuthorizationKey => ("SecurityCtrlr", "BasicAuthPassword"),
            Setting::WebSocketPingInterval => ("OCPPCommCtrlr", "WebSocketPingInterval"),
        }
    }

    /// The setting of a 2.x component and variable, if listed.
    ///
    /// ```
    /// use ocpp_model::Setting;
    /// assert_eq!(
    ///     Setting::from_component_variable("SecurityCtrlr", "BasicAuthPassword"),
    ///     Some(Setting::AuthorizationKey)
    /// );
    /// ```
    pub fn from_component_variable(component: &str, variable: &str) -> Option<Setting> {
        Setting::ALL
            .iter()
            .copied()
            .find(|s| s.component_variable() == (component, variable))
    }
}
