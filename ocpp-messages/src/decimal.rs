//! [`Decimal`]: an exact decimal number, for the schemas' `"type": "number"` fields (meter
//! registers, energy, prices, limits), where a binary float would change the digits.
//!
//! A `Decimal` is an `i64` mantissa and a scale (the number of digits after the point):
//! `2935.600` is `2935600 × 10⁻³`. The mantissa covers 18 significant digits and more, the scale
//! goes up to [`Decimal::MAX_SCALE`]; a number beyond either is an error when parsed
//! ([`DecimalError::OutOfRange`]), never rounded. That is far more than OCPP needs (its JSON
//! numbers are registers and prices of a few digits), and it keeps every comparison, sum and
//! product exact in `i128` arithmetic without overflow.
//!
//! # Through serde_json, exactly
//!
//! serde_json reads a JSON number into an `f64` before a visitor sees it, unless it is asked
//! for the text: `Decimal`'s `Deserialize` asks for the number as a
//! [`serde_json::value::RawValue`] (serde_json's documented feature `raw_value`, which this
//! crate already uses for payloads) and parses the digits itself; its `Serialize` writes them
//! back the same way. No `arbitrary_precision` feature is needed, so `serde_json::Value`
//! stays as it is for the rest of the dependency graph. The consequences:
//!
//! - From JSON text (`serde_json::from_str`, `from_slice`, `from_reader`, and this crate's
//!   decoders) and to JSON text (`serde_json::to_string`, `to_writer`, `to_vec`), the digits
//!   are kept: `2935.600` stays `2935.600`.
//! - Through a `serde_json::Value` (`to_value`, `from_value`), the number is the `Value`'s
//!   `f64`: the value is kept as long as it has at most 15 significant digits, but trailing
//!   zeros are not (`2935.600` comes back as `2935.6`, which is equal as a `Decimal`).
//! - A JSON string holding a number (`"2935.6"`) is refused: the schemas say number, and the
//!   schema check refuses it before anyway.
//! - Other serde formats than JSON are not supported (the raw-value protocol is serde_json's).

use alloc::boxed::Box;
use alloc::string::{String, ToString};
use core::cmp::Ordering;
use core::fmt;
use core::hash::{Hash, Hasher};
use core::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// An exact decimal number: an `i64` mantissa and a scale (digits after the point), as read
/// from and written to JSON, digit for digit.
///
/// Equality, ordering and hashing are by numeric value (`2935.6 == 2935.600`), while
/// [`Display`](fmt::Display) and serialization keep the digits as they were written.
/// Arithmetic is checked and exact (`checked_add`, `checked_sub`, `checked_mul`); the scale of
/// a sum is the larger scale, the scale of a product the sum of the scales.
///
/// ```
/// use ocpp_messages::Decimal;
///
/// let start: Decimal = "2935.600".parse()?;
/// let stop: Decimal = "2941.15".parse()?;
/// assert_eq!(start.to_string(), "2935.600");
/// assert_eq!(start, Decimal::new(29356, 1)); // by value
/// let energy = stop.checked_sub(start).unwrap();
/// assert_eq!(energy.to_string(), "5.550"); // not 5.550000000000182
/// let price = Decimal::new(35, 2); // 0.35 per kWh
/// assert_eq!(energy.checked_mul(price).unwrap().round_dp(2).to_string(), "1.94");
/// assert!(energy > Decimal::from(5));
///
/// // JSON numbers, digit for digit:
/// let read: Decimal = serde_json::from_str("-0.250")?;
/// assert_eq!(serde_json::to_string(&read)?, "-0.250");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy)]
pub struct Decimal {
    mantissa: i64,
    scale: u8,
}

/// Why a text or float is not a [`Decimal`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecimalError {
    /// Not a JSON number (`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`).
    #[error("not a JSON number")]
    Syntax,
    /// A number that needs more digits than an `i64` mantissa holds, or more than
    /// [`Decimal::MAX_SCALE`] digits after the point: refused rather than rounded.
    #[error("number out of the range of Decimal (an i64 mantissa, at most 18 decimal places)")]
    OutOfRange,
    /// `NaN` or an infinity, which no decimal (and no JSON number) is.
    #[error("not a finite number")]
    NotFinite,
}

/// 10^0 ..= 10^38, every power of ten an `i128` holds.
const POW10: [i128; 39] = {
    let mut table = [1i128; 39];
    let mut i = 1;
    while i < table.len() {
        table[i] = table[i - 1] * 10;
        i += 1;
    }
    table
};

impl Decimal {
    /// The largest scale (digits after the point): 18. With an `i64` mantissa, any two values
    /// then align, add and multiply in `i128` without overflow.
    pub const MAX_SCALE: u32 = 18;

    /// Zero (`0`).
    pub const ZERO: Decimal = Decimal {
        mantissa: 0,
        scale: 0,
    };

    /// One (`1`).
    pub const ONE: Decimal = Decimal {
        mantissa: 1,
        scale: 0,
    };

    /// `mantissa × 10^-scale`: `Decimal::new(29356, 1)` is `2935.6`.
    ///
    /// # Panics
    ///
    /// If `scale` is above [`Decimal::MAX_SCALE`] (18); [`Decimal::try_new`] does not panic.
    ///
    /// ```
    /// use ocpp_messages::Decimal;
    /// assert_eq!(Decimal::new(-25, 2).to_string(), "-0.25");
    /// assert_eq!(Decimal::new(1500, 0).to_string(), "1500");
    /// ```
    #[allow(clippy::panic)]
    pub const fn new(mantissa: i64, scale: u32) -> Decimal {
        match Decimal::try_new(mantissa, scale) {
            Some(d) => d,
            None => panic!("Decimal::new: scale above Decimal::MAX_SCALE (18)"),
        }
    }

    /// `mantissa × 10^-scale`, or `None` if `scale` is above [`Decimal::MAX_SCALE`].
    ///
    /// ```
    /// use ocpp_messages::Decimal;
    /// assert_eq!(Decimal::try_new(5, 18), "0.000000000000000005".parse().ok());
    /// assert_eq!(Decimal::try_new(5, 19), None);
    /// ```
    pub const fn try_new(mantissa: i64, scale: u32) -> Option<Decimal> {
        if scale > Decimal::MAX_SCALE {
            return None;
        }
        Some(Decimal {
            mantissa,
            scale: scale as u8,
        })
    }

    /// The mantissa: `2935600` for `2935.600`.
    pub const fn mantissa(self) -> i64 {
        self.mantissa
    }

    /// The scale, the number of digits after the point: `3` for `2935.600`.
    pub const fn scale(self) -> u32 {
        self.scale as u32
    }

    /// Whether the value is zero (`0`, `0.00`, `-0`).
    pub const fn is_zero(self) -> bool {
        self.mantissa == 0
    }

    /// Whether the value is below zero (`-0` is not).
    pub const fn is_negative(self) -> bool {
        self.mantissa < 0
    }

    /// The mantissa at `scale` (at least `self.scale`), in `i128`: never overflows for scales up
    /// to [`Decimal::MAX_SCALE`].
    fn aligned(self, scale: u8) -> i128 {
        i128::from(self.mantissa) * POW10[usize::from(scale - self.scale)]
    }

    /// `mantissa × 10^-scale` if the mantissa fits an `i64` (the scale is at most
    /// [`Decimal::MAX_SCALE`] by construction).
    fn from_parts(mantissa: i128, scale: u8) -> Option<Decimal> {
        Some(Decimal {
            mantissa: i64::try_from(mantissa).ok()?,
            scale,
        })
    }

    /// The exact sum, at the larger of the two scales; `None` if it does not fit.
    ///
    /// ```
    /// use ocpp_messages::Decimal;
    /// let sum = Decimal::new(15, 1).checked_add(Decimal::new(250, 2)).unwrap();
    /// assert_eq!(sum.to_string(), "4.00");
    /// ```
    pub fn checked_add(self, rhs: Decimal) -> Option<Decimal> {
        let scale = self.scale.max(rhs.scale);
        Decimal::from_parts(self.aligned(scale) + rhs.aligned(scale), scale)
    }

    /// The exact difference, at the larger of the two scales; `None` if it does not fit.
    ///
    /// ```
    /// use ocpp_messages::Decimal;
    /// let energy = Decimal::new(2941150, 3).checked_sub(Decimal::new(29356, 1)).unwrap();
    /// assert_eq!(energy.to_string(), "5.550");
    /// ```
    pub fn checked_sub(self, rhs: Decimal) -> Option<Decimal> {
        let scale = self.scale.max(rhs.scale);
        Decimal::from_parts(self.aligned(scale) - rhs.aligned(scale), scale)
    }

    /// The exact product, at the sum of the scales (trailing zeros dropped only where that sum
    /// is above [`Decimal::MAX_SCALE`]); `None` if it does not fit.
    ///
    /// ```
    /// use ocpp_messages::Decimal;
    /// let cost = Decimal::new(555, 2).checked_mul(Decimal::new(35, 2)).unwrap();
    /// assert_eq!(cost.to_string(), "1.9425");
    /// ```
    pub fn checked_mul(self, rhs: Decimal) -> Option<Decimal> {
        let mut mantissa = i128::from(self.mantissa) * i128::from(rhs.mantissa);
        let mut scale = u32::from(self.scale) + u32::from(rhs.scale);
        while scale > Decimal::MAX_SCALE {
            if mantissa % 10 != 0 {
                return None;
            }
            mantissa /= 10;
            scale -= 1;
        }
        Decimal::from_parts(mantissa, scale as u8)
    }

    /// The negated value; `None` for the one mantissa whose negation does not fit (`i64::MIN`).
    pub fn checked_neg(self) -> Option<Decimal> {
        Some(Decimal {
            mantissa: self.mantissa.checked_neg()?,
            scale: self.scale,
        })
    }

    /// The same value at exactly `scale` digits after the point, if that is exact: more digits
    /// add zeros, fewer drop only zeros. `None` if digits would be lost, the mantissa would not
    /// fit, or `scale` is above [`Decimal::MAX_SCALE`].
    ///
    /// ```
    /// use ocpp_messages::Decimal;
    /// assert_eq!(Decimal::new(156, 1).rescale(3).unwrap().to_string(), "15.600");
    /// assert_eq!(Decimal::new(15600, 3).rescale(1).unwrap().to_string(), "15.6");
    /// assert_eq!(Decimal::new(156, 1).rescale(0), None);
    /// ```
    pub fn rescale(self, scale: u32) -> Option<Decimal> {
        if scale > Decimal::MAX_SCALE {
            return None;
        }
        let scale = scale as u8;
        if scale >= self.scale {
            return Decimal::from_parts(self.aligned(scale), scale);
        }
        let divisor = POW10[usize::from(self.scale - scale)];
        let mantissa = i128::from(self.mantissa);
        (mantissa % divisor == 0).then(|| Decimal {
            mantissa: (mantissa / divisor) as i64,
            scale,
        })
    }

    /// Rounded to at most `dp` digits after the point, halves away from zero (`2.345` to 2
    /// places is `2.35`, `-2.345` is `-2.35`); a value with fewer digits is returned as it is.
    ///
    /// ```
    /// use ocpp_messages::Decimal;
    /// assert_eq!(Decimal::new(19425, 4).round_dp(2).to_string(), "1.94");
    /// assert_eq!(Decimal::new(-2345, 3).round_dp(2).to_string(), "-2.35");
    /// assert_eq!(Decimal::new(15, 1).round_dp(3).to_string(), "1.5");
    /// ```
    pub fn round_dp(self, dp: u32) -> Decimal {
        if dp >= u32::from(self.scale) {
            return self;
        }
        let divisor = POW10[usize::from(self.scale) - dp as usize];
        let mantissa = i128::from(self.mantissa);
        let mut quotient = mantissa / divisor;
        let remainder = (mantissa % divisor).abs();
        if remainder * 2 >= divisor {
            quotient += mantissa.signum();
        }
        // |quotient| <= |mantissa| / 10 + 1: it fits.
        Decimal {
            mantissa: quotient as i64,
            scale: dp as u8,
        }
    }

    /// The nearest `f64` (correctly rounded): for display or statistics, never for money.
    ///
    /// ```
    /// use ocpp_messages::Decimal;
    /// assert_eq!(Decimal::new(-25, 2).to_f64(), -0.25);
    /// ```
    pub fn to_f64(self) -> f64 {
        let mut buf = StackText::default();
        // A Decimal is at most 1 + 19 + 1 + 18 characters, and the parse is of a valid number.
        if fmt::write(&mut buf, format_args!("{self}")).is_err() {
            return f64::NAN;
        }
        buf.as_str().parse().unwrap_or(f64::NAN)
    }

    /// The value with trailing zeros after the point dropped: the one form per value that
    /// hashing uses.
    fn normalized(self) -> Decimal {
        let mut d = self;
        while d.scale > 0 && d.mantissa % 10 == 0 {
            d.mantissa /= 10;
            d.scale -= 1;
        }
        d
    }
}

/// A buffer on the stack for [`Decimal::to_f64`] (no allocation, `no_std`).
struct StackText {
    bytes: [u8; 48],
    len: usize,
}

impl Default for StackText {
    fn default() -> Self {
        StackText {
            bytes: [0; 48],
            len: 0,
        }
    }
}

impl StackText {
    fn as_str(&self) -> &str {
        core::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }
}

impl fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        let slot = self.bytes.get_mut(self.len..end).ok_or(fmt::Error)?;
        slot.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

impl Default for Decimal {
    /// [`Decimal::ZERO`].
    fn default() -> Self {
        Decimal::ZERO
    }
}

impl PartialEq for Decimal {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Decimal {}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Decimal {
    fn cmp(&self, other: &Self) -> Ordering {
        let scale = self.scale.max(other.scale);
        self.aligned(scale).cmp(&other.aligned(scale))
    }
}

impl Hash for Decimal {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let d = self.normalized();
        d.mantissa.hash(state);
        d.scale.hash(state);
    }
}

impl fmt::Debug for Decimal {
    /// The number as written (`2935.600`), like [`Display`](fmt::Display).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Decimal {
    /// The digits as parsed, in plain notation: `2935.600` stays `2935.600`, `-0.25` stays
    /// `-0.25`; an exponent is written out (`1.5e3` prints `1500`, `1.5e-3` prints `0.0015`) and
    /// a negative zero prints without its sign. Always valid JSON number text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut itoa = itoa::Buffer::new();
        let digits = itoa.format(self.mantissa.unsigned_abs());
        if self.mantissa < 0 {
            f.write_str("-")?;
        }
        let scale = usize::from(self.scale);
        if scale == 0 {
            return f.write_str(digits);
        }
        if digits.len() > scale {
            let (int, frac) = digits.split_at(digits.len() - scale);
            f.write_str(int)?;
            f.write_str(".")?;
            f.write_str(frac)
        } else {
            f.write_str("0.")?;
            for _ in digits.len()..scale {
                f.write_str("0")?;
            }
            f.write_str(digits)
        }
    }
}

impl FromStr for Decimal {
    type Err = DecimalError;

    /// Reads a JSON number (RFC 8259 §6): `2935.600`, `-0.25`, `1.5e3`. No leading `+`, no
    /// leading zeros, no bare `.5` or `5.`, no surrounding whitespace.
    ///
    /// The digits are kept as written (the scale is the number of digits after the point,
    /// less the exponent, and never below 0): `1.50` has scale 2, `1.5e3` is `1500` (scale 0),
    /// `15e-4` is `0.0015`. A value that needs more than [`Decimal::MAX_SCALE`] places or more
    /// digits than an `i64` holds is [`DecimalError::OutOfRange`]; trailing zeros after the
    /// point are dropped first where that makes it fit (the value is kept, not rounded).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        parse(text.as_bytes())
    }
}

fn parse(bytes: &[u8]) -> Result<Decimal, DecimalError> {
    let mut at = 0;
    let negative = bytes.first() == Some(&b'-');
    if negative {
        at += 1;
    }
    // Significant digits so far (leading zeros skipped), with the zeros seen since the last
    // non-zero digit held back in `zeros` so that trailing zeros never overflow on their own.
    let mut mantissa: u64 = 0;
    let mut zeros: u32 = 0;
    let mut overflow = false;
    let mut push = |digit: u8| {
        if digit == 0 {
            if mantissa != 0 {
                zeros = zeros.saturating_add(1);
            }
            return;
        }
        let shifted = pow10_u64(zeros.saturating_add(1))
            .and_then(|p| mantissa.checked_mul(p))
            .and_then(|m| m.checked_add(u64::from(digit)));
        match shifted {
            Some(m) => mantissa = m,
            None => overflow = true,
        }
        zeros = 0;
    };
    // Integer part: 0 or [1-9][0-9]*.
    match bytes.get(at) {
        Some(b'0') => {
            at += 1;
        }
        Some(b'1'..=b'9') => {
            while let Some(&c @ b'0'..=b'9') = bytes.get(at) {
                push(c - b'0');
                at += 1;
            }
        }
        _ => return Err(DecimalError::Syntax),
    }
    // Fraction: \.[0-9]+
    let mut fraction_digits: i64 = 0;
    if bytes.get(at) == Some(&b'.') {
        at += 1;
        let start = at;
        while let Some(&c @ b'0'..=b'9') = bytes.get(at) {
            push(c - b'0');
            at += 1;
        }
        if at == start {
            return Err(DecimalError::Syntax);
        }
        fraction_digits = (at - start) as i64;
    }
    // Exponent: [eE][+-]?[0-9]+, saturated (a huge exponent is out of range anyway).
    let mut exponent: i64 = 0;
    if matches!(bytes.get(at), Some(b'e' | b'E')) {
        at += 1;
        let exponent_negative = match bytes.get(at) {
            Some(b'-') => {
                at += 1;
                true
            }
            Some(b'+') => {
                at += 1;
                false
            }
            _ => false,
        };
        let start = at;
        while let Some(&c @ b'0'..=b'9') = bytes.get(at) {
            exponent = exponent
                .saturating_mul(10)
                .saturating_add(i64::from(c - b'0'));
            at += 1;
        }
        if at == start {
            return Err(DecimalError::Syntax);
        }
        if exponent_negative {
            exponent = -exponent;
        }
    }
    if at != bytes.len() {
        return Err(DecimalError::Syntax);
    }
    if overflow {
        return Err(DecimalError::OutOfRange);
    }
    // The value is mantissa × 10^zeros × 10^-scale.
    let scale = fraction_digits.saturating_sub(exponent);
    let max = i64::from(Decimal::MAX_SCALE);
    if mantissa == 0 {
        // Zero: exact at any scale; keep the written one where it fits.
        return Ok(Decimal {
            mantissa: 0,
            scale: scale.clamp(0, max) as u8,
        });
    }
    // Written digits times 10^k: k >= zeros - scale for a scale >= 0, k <= zeros to keep
    // no more zeros than were written (unless the exponent asks for them), at most 19 (the
    // mantissa is at least 1), and the scale at most MAX_SCALE.
    let (scale, zeros) = (i128::from(scale), i128::from(zeros));
    let least = (zeros - scale).max(0);
    let most = zeros
        .max(least)
        .min(19)
        .min(i128::from(max) + zeros - scale);
    let limit = i64::MAX.unsigned_abs() + u64::from(negative); // |i64::MIN| for a negative
    let mut kept = None;
    let mut k = most;
    while k >= least {
        let m = pow10_u64(k as u32).and_then(|p| mantissa.checked_mul(p));
        if let Some(m) = m.filter(|m| *m <= limit) {
            kept = Some((m, k));
            break;
        }
        k -= 1;
    }
    let (magnitude, k) = kept.ok_or(DecimalError::OutOfRange)?;
    let signed = if negative {
        -i128::from(magnitude)
    } else {
        i128::from(magnitude)
    };
    Decimal::from_parts(signed, (scale - zeros + k) as u8).ok_or(DecimalError::OutOfRange)
}

fn pow10_u64(n: u32) -> Option<u64> {
    10u64.checked_pow(n)
}

impl From<i32> for Decimal {
    fn from(n: i32) -> Self {
        Decimal::new(i64::from(n), 0)
    }
}

impl From<u32> for Decimal {
    fn from(n: u32) -> Self {
        Decimal::new(i64::from(n), 0)
    }
}

impl From<i64> for Decimal {
    fn from(n: i64) -> Self {
        Decimal::new(n, 0)
    }
}

impl TryFrom<f64> for Decimal {
    type Error = DecimalError;

    /// The shortest decimal that reads back as the same `f64` (what `{}` prints): `0.1_f64`
    /// is `0.1`, not `0.1000000000000000055511151231257827`. `NaN` and infinities are
    /// [`DecimalError::NotFinite`]; magnitudes beyond the mantissa (`1e20`) or below
    /// [`Decimal::MAX_SCALE`] places (`1e-19`) are [`DecimalError::OutOfRange`].
    ///
    /// ```
    /// use ocpp_messages::Decimal;
    /// assert_eq!(Decimal::try_from(0.1).unwrap().to_string(), "0.1");
    /// assert!(Decimal::try_from(f64::NAN).is_err());
    /// ```
    fn try_from(x: f64) -> Result<Self, Self::Error> {
        if !x.is_finite() {
            return Err(DecimalError::NotFinite);
        }
        // `{}` never writes an exponent: tiny and huge values have many digits, and are out
        // of range. Cap the text to what could fit before formatting it.
        if x != 0.0 && !(1e-19..1e19).contains(&x.abs()) {
            return Err(DecimalError::OutOfRange);
        }
        let mut buf = StackText::default();
        fmt::write(&mut buf, format_args!("{x}")).map_err(|_| DecimalError::OutOfRange)?;
        buf.as_str().parse()
    }
}

impl Serialize for Decimal {
    /// A JSON number with the digits of [`Display`](fmt::Display), written raw through
    /// [`serde_json::value::RawValue`] (an integer directly).
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.scale == 0 {
            return serializer.serialize_i64(self.mantissa);
        }
        let raw = RawValue::from_string(self.to_string()).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Decimal {
    /// A JSON number, read from its text (through [`serde_json::value::RawValue`]); anything
    /// else, a string holding a number included, is an error.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        parse(raw.get().as_bytes()).map_err(|e| {
            serde::de::Error::custom(match e {
                DecimalError::Syntax => {
                    let mut message = String::from("expected a JSON number, found ");
                    message.push_str(&raw.get().chars().take(32).collect::<String>());
                    message
                }
                other => other.to_string(),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use alloc::vec::Vec;
    use proptest::prelude::*;

    fn d(text: &str) -> Decimal {
        text.parse().unwrap()
    }

    #[test]
    fn parses_json_numbers_and_prints_their_digits() {
        for text in [
            "0",
            "-1",
            "2935.600",
            "-0.25",
            "0.000",
            "0.001",
            "-0.000000000000000001",
            "9223372036854775807",
            "-9223372036854775808",
            "922337203.6854775807",
            "1500",
            "12.0",
        ] {
            assert_eq!(d(text).to_string(), text, "{text}");
        }
        for (text, shown) in [
            ("1.5e3", "1500"),
            ("1.5E+3", "1500"),
            ("15e-4", "0.0015"),
            ("1.50e-3", "0.00150"),
            ("-0", "0"),
            ("-0.0", "0.0"),
            ("0e-999", "0.000000000000000000"),
            ("0e999999999999999999999", "0"),
            ("1.0000000000000000000000", "1.000000000000000000"),
            ("100000000000000000000e-10", "10000000000.00000000"),
            ("1e18", "1000000000000000000"),
            ("1000000000000000000.0", "1000000000000000000"),
            ("-922337203685477580.80", "-922337203685477580.8"),
        ] {
            assert_eq!(d(text).to_string(), shown, "{text}");
        }
        assert_eq!(d("2935.600"), Decimal::new(2935600, 3));
        assert_eq!(d("2935.600").mantissa(), 2935600);
        assert_eq!(d("2935.600").scale(), 3);
    }

    #[test]
    fn refuses_what_is_not_a_json_number_or_does_not_fit() {
        for text in [
            "", "-", "+1", "01", "-01", ".5", "5.", "1e", "1e+", "1.5.2", " 1", "1 ", "0x10",
            "NaN", "inf", "1_000", "\"1\"", "--1", "1e3.5",
        ] {
            assert_eq!(text.parse::<Decimal>(), Err(DecimalError::Syntax), "{text}");
        }
        for text in [
            "9223372036854775808",
            "-9223372036854775809",
            "12345678901234567890",
            "1e19",
            "0.0000000000000000001",
            "1e-19",
            "1.5e999999999999999999",
            "1e-999999999999999999",
        ] {
            assert_eq!(
                text.parse::<Decimal>(),
                Err(DecimalError::OutOfRange),
                "{text}"
            );
        }
    }

    #[test]
    fn equality_order_and_hash_are_by_value() {
        use core::hash::BuildHasher;
        let hasher = std::collections::hash_map::RandomState::new();
        assert_eq!(d("2935.6"), d("2935.600"));
        assert_eq!(hasher.hash_one(d("2935.6")), hasher.hash_one(d("2935.600")));
        assert_eq!(hasher.hash_one(d("0")), hasher.hash_one(d("-0.000")));
        assert!(d("-0.25") < d("0"));
        assert!(d("0.1") < d("0.10000000000000001"));
        assert!(d("9223372036854775807") > d("922337203.6854775807"));
        let mut sorted: Vec<Decimal> = ["3", "-1.5", "0.001", "2.99", "-1.50001"]
            .into_iter()
            .map(d)
            .collect();
        sorted.sort();
        let shown: Vec<String> = sorted.iter().map(Decimal::to_string).collect();
        assert_eq!(shown, ["-1.50001", "-1.5", "0.001", "2.99", "3"]);
    }

    #[test]
    fn arithmetic_is_exact_and_checked() {
        assert_eq!(
            d("2941.15").checked_sub(d("2935.600")).unwrap().to_string(),
            "5.550"
        );
        assert_eq!(d("0.1").checked_add(d("0.2")).unwrap().to_string(), "0.3");
        assert_eq!(
            d("1.5").checked_mul(d("-0.25")).unwrap().to_string(),
            "-0.375"
        );
        assert_eq!(
            d("0.000000001")
                .checked_mul(d("0.0000000010"))
                .unwrap()
                .to_string(),
            "0.000000000000000001"
        );
        assert_eq!(d("0.000000001").checked_mul(d("0.0000000001")), None);
        assert_eq!(d("9223372036854775807").checked_add(Decimal::ONE), None);
        assert_eq!(d("-9223372036854775808").checked_sub(Decimal::ONE), None);
        assert_eq!(d("-9223372036854775808").checked_neg(), None);
        assert_eq!(d("4294967296").checked_mul(d("4294967296")), None);
        assert_eq!(d("2.5").round_dp(0).to_string(), "3");
        assert_eq!(d("-2.5").round_dp(0).to_string(), "-3");
        assert_eq!(d("2.449").round_dp(1).to_string(), "2.4");
        assert_eq!(
            d("-9223372036854775.808").round_dp(0).to_string(),
            "-9223372036854776"
        );
        assert_eq!(d("1.5").rescale(19), None);
        assert_eq!(d("9223372036854775807").rescale(1), None);
        assert!(Decimal::ZERO.is_zero() && d("-0.00").is_zero());
        assert!(d("-0.01").is_negative() && !d("-0").is_negative());
    }

    #[test]
    fn conversions() {
        assert_eq!(Decimal::from(-7i32).to_string(), "-7");
        assert_eq!(Decimal::from(u32::MAX).to_string(), "4294967295");
        assert_eq!(Decimal::from(i64::MIN).to_string(), "-9223372036854775808");
        assert_eq!(d("2935.600").to_f64(), 2935.6);
        assert_eq!(d("-0.000000000000000001").to_f64(), -1e-18);
        assert_eq!(d("-9223372036854775808").to_f64(), i64::MIN as f64);
        for (x, shown) in [
            (0.1, "0.1"),
            (-0.0, "0"),
            (2935.6, "2935.6"),
            (1e-7, "0.0000001"),
            (1e18, "1000000000000000000"),
            (1e-18, "0.000000000000000001"),
        ] {
            assert_eq!(Decimal::try_from(x).unwrap().to_string(), shown, "{x}");
        }
        assert_eq!(Decimal::try_from(f64::NAN), Err(DecimalError::NotFinite));
        assert_eq!(
            Decimal::try_from(f64::INFINITY),
            Err(DecimalError::NotFinite)
        );
        assert_eq!(Decimal::try_from(1e20), Err(DecimalError::OutOfRange));
        assert_eq!(Decimal::try_from(1e-20), Err(DecimalError::OutOfRange));
        assert_eq!(Decimal::try_from(1.5e-18), Err(DecimalError::OutOfRange));
    }

    #[test]
    fn serde_json_keeps_the_digits() {
        let read: Vec<Decimal> =
            serde_json::from_str("[2935.600, -0.125, 1.5e3, 0, -7, 12.0]").unwrap();
        assert_eq!(
            serde_json::to_string(&read).unwrap(),
            "[2935.600,-0.125,1500,0,-7,12.0]"
        );
        // From a reader (owned raw text) too.
        let owned: Decimal = serde_json::from_reader(&b" 0.50 "[..]).unwrap();
        assert_eq!(owned.to_string(), "0.50");
        // Through a Value: the f64's digits, the same value.
        // (serde_json's `arbitrary_precision`, when another crate of the build turns it on,
        // keeps the digits in the Value too.)
        let value = serde_json::to_value(d("2935.600")).unwrap();
        assert_eq!(value.as_f64(), Some(2935.6));
        let back: Decimal = serde_json::from_value(value).unwrap();
        assert_eq!(back, d("2935.600"));
        assert!(["2935.6", "2935.600"].contains(&back.to_string().as_str()));
        for bad in ["\"1.5\"", "true", "null", "[1]", "{}", "1e400"] {
            assert!(serde_json::from_str::<Decimal>(bad).is_err(), "{bad}");
        }
    }

    /// JSON number text in plain notation as `Display` writes it: no exponent, no `-0`.
    fn plain_number() -> impl Strategy<Value = String> {
        (any::<i64>(), 0u32..=Decimal::MAX_SCALE).prop_map(|(m, scale)| {
            let digits = format!("{:0width$}", m.unsigned_abs(), width = scale as usize + 1);
            let (int, frac) = digits.split_at(digits.len() - scale as usize);
            let sign = if m < 0 { "-" } else { "" };
            if scale == 0 {
                format!("{sign}{int}")
            } else {
                format!("{sign}{int}.{frac}")
            }
        })
    }

    fn value(d: Decimal) -> (i128, u32) {
        (i128::from(d.mantissa()), d.scale())
    }

    /// `a` and `b` as integers at a common scale.
    fn common((ma, sa): (i128, u32), (mb, sb): (i128, u32)) -> (i128, i128, u32) {
        let s = sa.max(sb);
        (ma * 10i128.pow(s - sa), mb * 10i128.pow(s - sb), s)
    }

    proptest! {
        #[test]
        fn text_round_trips(text in plain_number()) {
            let parsed: Decimal = text.parse().unwrap();
            prop_assert_eq!(parsed.to_string(), text.clone());
            let json: Decimal = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(serde_json::to_string(&json).unwrap(), text);
        }

        #[test]
        fn exponent_forms_read_the_same_value(m in any::<i64>(), scale in 0u32..=18, shift in -5i32..=5) {
            let decimal = Decimal::new(m, scale);
            // m × 10^-scale written as m followed by `shift` zeros, e-(scale + shift), or as
            // mE-scale.
            let text = if shift >= 0 {
                format!("{m}{}e-{}", "0".repeat(shift as usize), scale as i32 + shift)
            } else {
                format!("{m}E-{scale}")
            };
            match text.parse::<Decimal>() {
                Ok(read) => prop_assert_eq!(read, decimal),
                Err(e) => prop_assert_eq!(e, DecimalError::OutOfRange, "{}", text),
            }
        }

        #[test]
        fn order_and_arithmetic_agree_with_i128(a in plain_number(), b in plain_number()) {
            let (da, db) = (d(&a), d(&b));
            let (ia, ib, s) = common(value(da), value(db));
            prop_assert_eq!(da.cmp(&db), ia.cmp(&ib));
            prop_assert_eq!(da == db, ia == ib);
            match da.checked_add(db) {
                Some(sum) => prop_assert_eq!(value(sum), (ia + ib, s)),
                None => prop_assert!(i64::try_from(ia + ib).is_err()),
            }
            match da.checked_sub(db) {
                Some(diff) => prop_assert_eq!(value(diff), (ia - ib, s)),
                None => prop_assert!(i64::try_from(ia - ib).is_err()),
            }
            if let Some(product) = da.checked_mul(db) {
                let (ma, sa) = value(da);
                let (mb, sb) = value(db);
                // product = ma × mb × 10^-(sa+sb), possibly with trailing zeros dropped.
                let (ps, es) = (product.scale(), sa + sb);
                prop_assert!(ps <= es);
                prop_assert_eq!(i128::from(product.mantissa()) * 10i128.pow(es - ps), ma * mb);
            }
            let f = da.to_f64();
            prop_assert_eq!(f, a.parse::<f64>().unwrap());
        }

        #[test]
        fn rounding_is_half_away_from_zero(text in plain_number(), dp in 0u32..=18) {
            let x = d(&text);
            let r = x.round_dp(dp);
            prop_assert!(r.scale() <= dp.max(x.scale()));
            // |x - r| <= half a unit in the last place kept.
            let (ix, ir, s) = common(value(x), value(r));
            let unit = 10i128.pow(s - r.scale().min(s));
            let diff = (ix - ir).abs();
            prop_assert!(diff * 2 <= unit, "{} -> {}", x, r);
            if diff * 2 == unit {
                prop_assert!(ir.abs() > ix.abs());
            }
        }

        #[test]
        fn f64_conversion_round_trips(x in proptest::num::f64::NORMAL | proptest::num::f64::ZERO) {
            if let Ok(decimal) = Decimal::try_from(x) {
                prop_assert_eq!(decimal.to_f64(), x);
            }
        }
    }
}
