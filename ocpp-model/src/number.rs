//! Numbers: every value OCPP types as `number` is an exact [`Decimal`], never a float.
//!
//! The generated messages carry [`Decimal`] themselves (every schema `number`), so a value
//! goes from the wire to the model and back without a float in between.

pub use ocpp_messages::Decimal;

/// The decimal of an integer field (1.6 meterStart, meterStop).
pub(crate) fn from_i32(value: i32) -> Decimal {
    Decimal::from(value)
}
