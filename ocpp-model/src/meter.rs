//! Meter readings ([`MeterReading`]): 1.6 `SampledValue`, 2.x `SampledValueType`, with the
//! signed meter value kept verbatim in both of its places ([`SignedMeterValue`]), and
//! [`MeterReadings`] (MeterValues outside a transaction).

use ocpp_messages::DateTime;

use crate::Decimal;

/// `measurand` when a sample names none (1.6 and 2.x).
pub const DEFAULT_MEASURAND: &str = "Energy.Active.Import.Register";
/// `context` when a sample names none (1.6 and 2.x).
pub const DEFAULT_CONTEXT: &str = "Sample.Periodic";
/// `location` when a sample names none (1.6 and 2.x).
pub const DEFAULT_LOCATION: &str = "Outlet";
/// `unit` when a sample names none (1.6 and 2.x).
pub const DEFAULT_UNIT: &str = "Wh";

/// One sampled value, with the defaults of the specifications filled in (so that a 1.6 and a
/// 2.x sample of the same reading are equal).
///
/// The names are the protocol's (`Energy.Active.Import.Register`, `L1-N`, `Outlet`, `Wh`,
/// `Transaction.Begin`), which 1.6 and 2.x spell alike.
///
/// ```
/// use ocpp_messages::{v1_6, DateTime, Request};
/// use ocpp_model::{Decimal, StationEvent};
///
/// let time: DateTime = "2025-01-02T03:04:05Z".parse().unwrap();
/// let request: Request = v1_6::MeterValuesRequest::new(
///     1,
///     vec![v1_6::MeterValue::new(time, vec![v1_6::SampledValue::new("2935.600")])],
/// )
/// .into();
/// let event = StationEvent::from_request(&request);
/// let StationEvent::MeterReadings(readings) = event else { panic!() };
/// let reading = &readings.readings[0];
/// assert_eq!(reading.measurand, "Energy.Active.Import.Register");
/// assert_eq!(reading.value.map(|v| v.to_string()), Some("2935.600".into()));
/// assert_eq!(reading.value, Some(Decimal::new(29356, 1)));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct MeterReading {
    /// When it was sampled (its `MeterValue`'s timestamp).
    pub timestamp: DateTime,
    /// What was measured.
    pub measurand: String,
    /// The phase, if any (`L1`, `L1-N`...).
    pub phase: Option<String>,
    /// Where it was measured.
    pub location: String,
    /// The unit (1.6 `unit`, 2.x `unitOfMeasure.unit`).
    pub unit: String,
    /// 2.x `unitOfMeasure.multiplier` (a power of ten); 0 from 1.6.
    pub multiplier: i32,
    /// Why it was sampled (`Sample.Periodic`, `Transaction.Begin`...).
    pub context: String,
    /// The value, exact. `None` only for a 1.6 signed sample that no plain sample of the same
    /// reading came with (its value is the signed blob, in `signed`).
    pub value: Option<Decimal>,
    /// The signed meter value, verbatim.
    pub signed: Option<SignedMeterValue>,
}

impl MeterReading {
    /// A reading of `measurand` with the defaults of the specifications and no signature.
    ///
    /// ```
    /// use ocpp_messages::DateTime;
    /// use ocpp_model::{meter, Decimal, MeterReading};
    /// let time = DateTime::from_unix_timestamp(0).unwrap();
    /// let reading = MeterReading::new(time, meter::DEFAULT_MEASURAND, Decimal::from(12));
    /// assert_eq!(reading.unit, "Wh");
    /// ```
    pub fn new(timestamp: DateTime, measurand: impl Into<String>, value: Decimal) -> Self {
        MeterReading {
            timestamp,
            measurand: measurand.into(),
            phase: None,
            location: DEFAULT_LOCATION.to_owned(),
            unit: DEFAULT_UNIT.to_owned(),
            multiplier: 0,
            context: DEFAULT_CONTEXT.to_owned(),
            value: Some(value),
            signed: None,
        }
    }

    /// Whether `other` is the same reading (time, measurand, phase, location, context): a 1.6
    /// signed sample is folded into the plain sample it signs.
    /// The imported active energy register in Wh, exact: the value of an
    /// `Energy.Active.Import.Register` reading in `Wh` or `kWh`, its multiplier applied (`1.5`
    /// kWh is `1500.0` Wh, the digits kept); `None` for another measurand or unit, for a signed
    /// reading without a plain value, or a value too large for a [`Decimal`].
    ///
    /// ```
    /// use ocpp_messages::DateTime;
    /// use ocpp_model::{Decimal, MeterReading};
    ///
    /// let at = DateTime::from_unix_timestamp(0).unwrap();
    /// let mut reading = MeterReading::new(at, "Energy.Active.Import.Register", "2.9356".parse().unwrap());
    /// reading.unit = "kWh".into();
    /// assert_eq!(reading.energy_wh().unwrap().to_string(), "2935.6");
    /// reading.measurand = "Power.Active.Import".into();
    /// assert_eq!(reading.energy_wh(), None);
    /// ```
    pub fn energy_wh(&self) -> Option<Decimal> {
        if self.measurand != DEFAULT_MEASURAND {
            return None;
        }
        let thousands = match self.unit.as_str() {
            "Wh" => 0,
            "kWh" => 3,
            _ => return None,
        };
        times_power_of_ten(self.value?, self.multiplier.checked_add(thousands)?)
    }

    pub(crate) fn same_reading(&self, other: &MeterReading) -> bool {
        self.timestamp == other.timestamp
            && self.measurand == other.measurand
            && self.phase == other.phase
            && self.location == other.location
            && self.context == other.context
    }
}

/// A signed meter value, kept verbatim.
///
/// - 1.6 (the OCA signed meter values application note, and the security whitepaper): a
///   `SampledValue` with `format` `SignedData`, whose `value` is the signed blob: it is
///   `signed_meter_data`, the other fields `None` (the blob carries them).
/// - 2.x: `signedMeterValue` (`signedMeterData`, `signingMethod`, `encodingMethod`,
///   `publicKey`); 2.0.1 requires all four, 2.1 only data and encoding. An empty string (2.0.1's
///   way of leaving one out, e.g. the public key when `PublicKeyWithSignedMeterValue` is
///   `Never`) reads as `None`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedMeterValue {
    /// The signed data (e.g. an OCMF string), verbatim.
    pub signed_meter_data: String,
    /// How it was signed.
    pub signing_method: Option<String>,
    /// How it is encoded (e.g. `OCMF`).
    pub encoding_method: Option<String>,
    /// The meter's public key.
    pub public_key: Option<String>,
}

impl SignedMeterValue {
    /// Signed data alone (as 1.6 carries it).
    ///
    /// ```
    /// use ocpp_model::SignedMeterValue;
    /// let signed = SignedMeterValue::new("OCMF|{}|{}");
    /// assert_eq!(signed.encoding_method, None);
    /// ```
    pub fn new(signed_meter_data: impl Into<String>) -> Self {
        SignedMeterValue {
            signed_meter_data: signed_meter_data.into(),
            signing_method: None,
            encoding_method: None,
            public_key: None,
        }
    }
}

/// Meter readings outside a transaction (1.6 `MeterValues` without `transactionId`, 2.x
/// `MeterValues`).
#[derive(Debug, Clone, PartialEq)]
pub struct MeterReadings {
    /// The EVSE (1.6: the connectorId; 0: the main meter).
    pub evse: u32,
    /// The readings, in the order sent.
    pub readings: Vec<MeterReading>,
}

/// `value × 10^exponent`, exact, or `None` when it does not fit a [`Decimal`].
fn times_power_of_ten(value: Decimal, exponent: i32) -> Option<Decimal> {
    let scale = i64::from(value.scale()) - i64::from(exponent);
    if scale >= 0 {
        Decimal::try_new(value.mantissa(), u32::try_from(scale).ok()?)
    } else {
        let factor = 10i64.checked_pow(u32::try_from(-scale).ok()?)?;
        Some(Decimal::new(value.mantissa().checked_mul(factor)?, 0))
    }
}
