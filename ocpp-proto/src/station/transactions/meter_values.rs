//! What a transaction message reports of the meter: the energy register and the other sampled
//! values.

use ocpp_messages::Decimal;
use serde::{Deserialize, Serialize};

/// `measurand` of the energy register every transaction message carries.
pub const ENERGY_REGISTER: &str = "Energy.Active.Import.Register";

/// One sampled value a transaction message carries besides the energy register (power,
/// current, voltage, state of charge...): an exact [`Decimal`], never a float, with the
/// protocol's names for what was measured and its unit (OCPP 1.6 §7.31 `Measurand`, §7.45
/// `UnitOfMeasure`; 2.x `MeasurandEnumType`, Part 2 appendix "Standardized Units of
/// Measurements"), which 1.6 and 2.x spell alike.
///
/// ```
/// use ocpp_proto::station::SampledValue;
/// let power = SampledValue::power_w(11_000);
/// assert_eq!((power.measurand.as_str(), power.unit.as_str()), ("Power.Active.Import", "W"));
/// let soc = SampledValue::soc_percent(80);
/// let current = SampledValue::current_a("15.9".parse::<ocpp_proto::Decimal>().unwrap()).with_phase("L1");
/// assert_eq!(current.value.to_string(), "15.9");
/// # let _ = soc;
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SampledValue {
    /// What was measured (`Power.Active.Import`, `Current.Import`, `SoC`...).
    pub measurand: String,
    /// The value, exact.
    pub value: Decimal,
    /// Its unit (`W`, `A`, `V`, `Percent`...).
    pub unit: String,
    /// The phase (`L1`, `L1-N`...), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Where it was measured (`Outlet`, `EV`...), if not the default (`Outlet`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
}

impl SampledValue {
    /// `value` of `measurand` in `unit`.
    ///
    /// ```
    /// use ocpp_proto::station::SampledValue;
    /// let voltage = SampledValue::new("Voltage", 230, "V");
    /// assert_eq!(voltage.value, 230.into());
    /// ```
    pub fn new(
        measurand: impl Into<String>,
        value: impl Into<Decimal>,
        unit: impl Into<String>,
    ) -> Self {
        SampledValue {
            measurand: measurand.into(),
            value: value.into(),
            unit: unit.into(),
            phase: None,
            location: None,
        }
    }

    /// The active power imported, in W (`Power.Active.Import`).
    pub fn power_w(value: impl Into<Decimal>) -> Self {
        SampledValue::new("Power.Active.Import", value, "W")
    }

    /// The current imported, in A (`Current.Import`).
    pub fn current_a(value: impl Into<Decimal>) -> Self {
        SampledValue::new("Current.Import", value, "A")
    }

    /// The voltage, in V (`Voltage`).
    pub fn voltage_v(value: impl Into<Decimal>) -> Self {
        SampledValue::new("Voltage", value, "V")
    }

    /// The EV's state of charge, in percent (`SoC`, measured at the EV).
    pub fn soc_percent(value: impl Into<Decimal>) -> Self {
        SampledValue::new("SoC", value, "Percent").with_location("EV")
    }

    /// On `phase` (`L1`, `L2`, `L3`, `N`, `L1-N`...).
    #[must_use]
    pub fn with_phase(mut self, phase: impl Into<String>) -> Self {
        self.phase = Some(phase.into());
        self
    }

    /// Measured at `location` (`Body`, `Cable`, `EV`, `Inlet`, `Outlet`).
    #[must_use]
    pub fn with_location(mut self, location: impl Into<String>) -> Self {
        self.location = Some(location.into());
        self
    }
}

/// A meter reading of a transaction: the energy register (`Energy.Active.Import.Register`,
/// Wh, an integer: what is billed) and any other [`SampledValue`]s, sent in one meter value;
/// `triggered` when the central system asked for it (TriggerMessage: 2.x trigger `Trigger`,
/// context `Trigger` in both versions) rather than periodic.
///
/// ```
/// use ocpp_proto::station::{Reading, SampledValue};
/// let reading = Reading::new(12_345)
///     .with_sampled_value(SampledValue::power_w(11_000))
///     .with_sampled_value(SampledValue::soc_percent(64));
/// assert_eq!(reading.sampled.len(), 2);
/// let plain: Reading = 12_345.into();
/// assert!(plain.sampled.is_empty() && !plain.triggered);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Reading {
    /// The energy register, Wh.
    pub energy_wh: i64,
    /// The other values, in the order sent (after the energy register).
    pub sampled: Vec<SampledValue>,
    /// Asked for by the central system (TriggerMessage), not periodic.
    pub triggered: bool,
}

impl Reading {
    /// The energy register at `energy_wh`, nothing else.
    #[must_use]
    pub fn new(energy_wh: i64) -> Self {
        Reading {
            energy_wh,
            sampled: Vec::new(),
            triggered: false,
        }
    }

    /// With one more sampled value.
    #[must_use]
    pub fn with_sampled_value(mut self, value: SampledValue) -> Self {
        self.sampled.push(value);
        self
    }

    /// Asked for by a TriggerMessage.
    #[must_use]
    pub fn triggered(mut self) -> Self {
        self.triggered = true;
        self
    }
}

impl From<i64> for Reading {
    fn from(energy_wh: i64) -> Self {
        Reading::new(energy_wh)
    }
}
