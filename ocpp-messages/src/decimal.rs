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
mod tests;
