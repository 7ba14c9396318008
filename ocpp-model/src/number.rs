//! Numbers: every value OCPP types as `number` is an exact [`Decimal`], never a float.
//!
//! The bridges to the generated messages' `f64` fields live here and only here, so that the
//! day the generated types carry `Decimal` themselves only this file changes.

pub use ocpp_messages::Decimal;

/// A float read from a generated message, as the shortest decimal that reads back as it.
pub(crate) fn from_f64(value: f64) -> Option<Decimal> {
    Decimal::try_from(value).ok()
}

/// A decimal for a generated message's `f64` field (the nearest float).
pub(crate) fn to_f64(value: &Decimal) -> f64 {
    (*value).to_f64()
}

/// The decimal of an integer field (1.6 meterStart, meterStop).
pub(crate) fn from_i32(value: i32) -> Decimal {
    Decimal::from(value)
}
