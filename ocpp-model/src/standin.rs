//! A temporary stand-in for `ocpp_messages::Decimal` (being written on branch `decimal`), with
//! the part of its API this crate uses; removed when that branch is merged.

use core::cmp::Ordering;
use core::fmt;
use core::str::FromStr;

/// An exact decimal number: `mantissa * 10^-scale` (`2935.600` is `(2935600, 3)` and stays so).
///
/// ```
/// use ocpp_model::Decimal;
/// let value: Decimal = "2935.600".parse().unwrap();
/// assert_eq!(value.to_string(), "2935.600");
/// assert_eq!(value, Decimal::new(29356, 1));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Decimal {
    mantissa: i64,
    scale: u32,
}

/// The error of parsing or converting a [`Decimal`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not a decimal number in range")]
pub struct DecimalError;

const MAX_SCALE: u32 = 18;

impl Decimal {
    /// `mantissa * 10^-scale`.
    pub fn new(mantissa: i64, scale: u32) -> Self {
        Decimal { mantissa, scale }
    }

    /// The digits, as an integer.
    pub fn mantissa(&self) -> i64 {
        self.mantissa
    }

    /// How many of the digits are after the point.
    pub fn scale(&self) -> u32 {
        self.scale
    }

    /// The nearest float.
    pub fn to_f64(&self) -> f64 {
        self.to_string().parse().unwrap_or(f64::NAN)
    }

    fn widened(&self, scale: u32) -> Option<i128> {
        let factor = 10i128.checked_pow(scale.checked_sub(self.scale)?)?;
        i128::from(self.mantissa).checked_mul(factor)
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
        match (self.widened(scale), other.widened(scale)) {
            (Some(a), Some(b)) => a.cmp(&b),
            _ => self.to_f64().total_cmp(&other.to_f64()),
        }
    }
}

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let digits = self.mantissa.unsigned_abs().to_string();
        let sign = if self.mantissa < 0 { "-" } else { "" };
        let scale = self.scale as usize;
        if scale == 0 {
            return write!(f, "{sign}{digits}");
        }
        let padded = format!("{digits:0>width$}", width = scale + 1);
        let (int, frac) = padded.split_at(padded.len() - scale);
        write!(f, "{sign}{int}.{frac}")
    }
}

impl FromStr for Decimal {
    type Err = DecimalError;

    fn from_str(text: &str) -> Result<Self, DecimalError> {
        let (negative, unsigned) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (int, frac) = unsigned.split_once('.').unwrap_or((unsigned, ""));
        let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if int.is_empty() || !all_digits(int) || !all_digits(frac) || (unsigned.ends_with('.')) {
            return Err(DecimalError);
        }
        let scale = u32::try_from(frac.len()).map_err(|_| DecimalError)?;
        if scale > MAX_SCALE {
            return Err(DecimalError);
        }
        let mut mantissa: i64 = 0;
        for b in int.bytes().chain(frac.bytes()) {
            mantissa = mantissa
                .checked_mul(10)
                .and_then(|m| m.checked_add(i64::from(b - b'0')))
                .ok_or(DecimalError)?;
        }
        Ok(Decimal::new(
            if negative { -mantissa } else { mantissa },
            scale,
        ))
    }
}

impl From<i32> for Decimal {
    fn from(value: i32) -> Self {
        Decimal::new(i64::from(value), 0)
    }
}

impl From<i64> for Decimal {
    fn from(value: i64) -> Self {
        Decimal::new(value, 0)
    }
}

impl From<u32> for Decimal {
    fn from(value: u32) -> Self {
        Decimal::new(i64::from(value), 0)
    }
}

impl TryFrom<f64> for Decimal {
    type Error = DecimalError;

    /// The shortest decimal that reads back as `value`.
    fn try_from(value: f64) -> Result<Self, DecimalError> {
        if !value.is_finite() {
            return Err(DecimalError);
        }
        value.to_string().parse()
    }
}
