//! [`DateTime`]: an RFC 3339 date-time (`"format": "date-time"` in the schemas) that keeps the
//! exact text it was read from, so decoding and re-encoding gives the same string.

use alloc::string::String;
use core::fmt;
use core::str::FromStr;

/// An RFC 3339 date-time such as `2025-01-02T03:04:05.123+01:00`, validated, with its fields
/// parsed and its original text kept (no_std; no time zone database needed).
///
/// ```
/// use ocpp_messages::DateTime;
///
/// let t: DateTime = "2025-01-02T03:04:05.5+01:00".parse().unwrap();
/// assert_eq!(t.as_str(), "2025-01-02T03:04:05.5+01:00");
/// assert_eq!((t.year(), t.month(), t.day()), (2025, 1, 2));
/// assert_eq!(t.offset_minutes(), 60);
/// assert_eq!(t.unix_timestamp(), 1_735_783_445);
/// assert_eq!(DateTime::from_unix_timestamp(0).unwrap().as_str(), "1970-01-01T00:00:00Z");
/// assert!(DateTime::parse("2025-02-30T00:00:00Z").is_err());
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct DateTime {
    text: String,
    year: u16,
    month: u8,
    day: u8,
    hour: u8,
    minute: u8,
    second: u8,
    nanosecond: u32,
    offset_minutes: i16,
}

/// Why a string is not an RFC 3339 date-time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DateTimeError {
    /// The text does not follow `YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)`.
    #[error("expected YYYY-MM-DDTHH:MM:SS[.fraction] followed by Z or an offset")]
    Syntax,
    /// A field is out of range (month 13, February 30, hour 24, ...).
    #[error("a date or time field is out of range")]
    Range,
}

fn digits(bytes: &[u8], at: usize, n: usize) -> Result<u32, DateTimeError> {
    let slice = bytes.get(at..at + n).ok_or(DateTimeError::Syntax)?;
    let mut value = 0u32;
    for &b in slice {
        if !b.is_ascii_digit() {
            return Err(DateTimeError::Syntax);
        }
        value = value * 10 + u32::from(b - b'0');
    }
    Ok(value)
}

/// Writes `value` in decimal into `out`, zero-padded to its length (the value must fit).
fn put_digits(out: &mut [u8], mut value: u32) {
    for slot in out.iter_mut().rev() {
        *slot = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

fn expect(bytes: &[u8], at: usize, allowed: &[u8]) -> Result<u8, DateTimeError> {
    match bytes.get(at) {
        Some(b) if allowed.contains(b) => Ok(*b),
        _ => Err(DateTimeError::Syntax),
    }
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Civil date of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

impl DateTime {
    /// Parses and validates an RFC 3339 date-time (`T`/`t` separator, `Z`/`z` or a numeric
    /// offset, any number of fraction digits, leap second 60 allowed).
    pub fn parse(text: &str) -> Result<Self, DateTimeError> {
        let b = text.as_bytes();
        let year = digits(b, 0, 4)?;
        expect(b, 4, b"-")?;
        let month = digits(b, 5, 2)?;
        expect(b, 7, b"-")?;
        let day = digits(b, 8, 2)?;
        expect(b, 10, b"Tt")?;
        let hour = digits(b, 11, 2)?;
        expect(b, 13, b":")?;
        let minute = digits(b, 14, 2)?;
        expect(b, 16, b":")?;
        let second = digits(b, 17, 2)?;
        let mut at = 19;
        let mut nanosecond = 0u32;
        if b.get(at) == Some(&b'.') {
            at += 1;
            let start = at;
            while b.get(at).is_some_and(u8::is_ascii_digit) {
                if at - start < 9 {
                    nanosecond = nanosecond * 10 + u32::from(b[at] - b'0');
                }
                at += 1;
            }
            let n = at - start;
            if n == 0 {
                return Err(DateTimeError::Syntax);
            }
            for _ in n..9 {
                nanosecond *= 10;
            }
        }
        let offset_minutes: i32 = match expect(b, at, b"Zz+-")? {
            b'Z' | b'z' => {
                at += 1;
                0
            }
            sign => {
                let oh = digits(b, at + 1, 2)?;
                expect(b, at + 3, b":")?;
                let om = digits(b, at + 4, 2)?;
                at += 6;
                if oh > 23 || om > 59 {
                    return Err(DateTimeError::Range);
                }
                let total = (oh * 60 + om) as i32;
                if sign == b'-' {
                    -total
                } else {
                    total
                }
            }
        };
        if at != b.len() {
            return Err(DateTimeError::Syntax);
        }
        if !(1..=12).contains(&month)
            || day == 0
            || day > days_in_month(i64::from(year), month)
            || hour > 23
            || minute > 59
            || second > 60
        {
            return Err(DateTimeError::Range);
        }
        // A leap second is only ever inserted at 23:59:60 UTC.
        let utc_minute = (hour as i32 * 60 + minute as i32 - offset_minutes).rem_euclid(1440);
        if second == 60 && utc_minute != 1439 {
            return Err(DateTimeError::Range);
        }
        Ok(DateTime {
            text: String::from(text),
            year: year as u16,
            month: month as u8,
            day: day as u8,
            hour: hour as u8,
            minute: minute as u8,
            second: second as u8,
            nanosecond,
            offset_minutes: offset_minutes as i16,
        })
    }

    /// The UTC date-time `secs` seconds after 1970-01-01T00:00:00Z, printed with `Z`;
    /// `None` outside the years 0 to 9999.
    pub fn from_unix_timestamp(secs: i64) -> Option<Self> {
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        if !(0..=9999).contains(&year) {
            return None;
        }
        // The fields are in range by construction: print them straight (no `format!` and no
        // second parse; a Heartbeat answer pays for this on every request).
        let (hour, minute, second) = (rem / 3600, rem / 60 % 60, rem % 60);
        let mut text = [0u8; 20];
        put_digits(&mut text[0..4], year as u32);
        text[4] = b'-';
        put_digits(&mut text[5..7], month);
        text[7] = b'-';
        put_digits(&mut text[8..10], day);
        text[10] = b'T';
        put_digits(&mut text[11..13], hour as u32);
        text[13] = b':';
        put_digits(&mut text[14..16], minute as u32);
        text[16] = b':';
        put_digits(&mut text[17..19], second as u32);
        text[19] = b'Z';
        Some(DateTime {
            text: String::from(core::str::from_utf8(&text).ok()?),
            year: year as u16,
            month: month as u8,
            day: day as u8,
            hour: hour as u8,
            minute: minute as u8,
            second: second as u8,
            nanosecond: 0,
            offset_minutes: 0,
        })
    }

    /// The current UTC time from the system clock ([`std::time::SystemTime`]), in whole seconds
    /// (the fraction truncated) and printed with `Z`, e.g. `2025-01-02T03:04:05Z`: the form every
    /// OCPP 1.6 and 2.x peer reads. Feature `std`.
    ///
    /// A clock set before the year 0 or after 9999 gives the nearest date-time that can be
    /// written (`0000-01-01T00:00:00Z`, `9999-12-31T23:59:59Z`).
    ///
    /// A Sans-IO state machine takes the time from its caller: call this in the I/O loop or the
    /// application, not inside protocol code.
    ///
    /// ```
    /// use ocpp_messages::DateTime;
    /// use std::time::{SystemTime, UNIX_EPOCH};
    ///
    /// let now = DateTime::now();
    /// assert!(now.as_str().ends_with('Z'));
    /// assert_eq!(now.nanosecond(), 0);
    /// let system = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64;
    /// assert!((now.unix_timestamp() - system).abs() <= 2);
    /// ```
    #[cfg(feature = "std")]
    pub fn now() -> Self {
        Self::from_system_time(std::time::SystemTime::now())
    }

    /// A system time as an OCPP date-time: UTC, whole seconds (the fraction truncated towards
    /// the past), printed with `Z`. Feature `std`.
    ///
    /// Total: a time before the year 0 or after 9999 gives the nearest date-time that can be
    /// written (`0000-01-01T00:00:00Z`, `9999-12-31T23:59:59Z`).
    ///
    /// ```
    /// use ocpp_messages::DateTime;
    /// use std::time::{Duration, SystemTime, UNIX_EPOCH};
    ///
    /// let at = UNIX_EPOCH + Duration::from_millis(1_700_000_000_999);
    /// assert_eq!(DateTime::from_system_time(at).as_str(), "2023-11-14T22:13:20Z");
    /// let before = UNIX_EPOCH - Duration::from_millis(500);
    /// assert_eq!(DateTime::from_system_time(before).as_str(), "1969-12-31T23:59:59Z");
    /// let far = UNIX_EPOCH + Duration::from_secs(1 << 40);
    /// assert_eq!(DateTime::from_system_time(far).as_str(), "9999-12-31T23:59:59Z");
    /// ```
    #[cfg(feature = "std")]
    pub fn from_system_time(time: std::time::SystemTime) -> Self {
        use std::time::UNIX_EPOCH;
        let secs = match time.duration_since(UNIX_EPOCH) {
            Ok(after) => i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
            // Before 1970: round towards the past, as for a time after it.
            Err(before) => {
                let d = before.duration();
                let whole = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
                -whole - i64::from(d.subsec_nanos() > 0)
            }
        };
        // 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z.
        const MIN: i64 = -62_167_219_200;
        const MAX: i64 = 253_402_300_799;
        Self::from_unix_timestamp(secs.clamp(MIN, MAX)).unwrap_or_else(Self::epoch)
    }

    /// 1970-01-01T00:00:00Z, built without parsing (the fallback that cannot fail).
    #[cfg(feature = "std")]
    fn epoch() -> Self {
        DateTime {
            text: String::from("1970-01-01T00:00:00Z"),
            year: 1970,
            month: 1,
            day: 1,
            hour: 0,
            minute: 0,
            second: 0,
            nanosecond: 0,
            offset_minutes: 0,
        }
    }

    /// Seconds since 1970-01-01T00:00:00Z (the fraction dropped; a leap second counts as the
    /// next second).
    pub fn unix_timestamp(&self) -> i64 {
        let days = days_from_civil(
            i64::from(self.year),
            i64::from(self.month),
            i64::from(self.day),
        );
        days * 86_400
            + i64::from(self.hour) * 3600
            + i64::from(self.minute) * 60
            + i64::from(self.second)
            - i64::from(self.offset_minutes) * 60
    }

    /// The text, exactly as read.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The year (0 to 9999).
    pub fn year(&self) -> u16 {
        self.year
    }

    /// The month (1 to 12).
    pub fn month(&self) -> u8 {
        self.month
    }

    /// The day of the month (1 to 31).
    pub fn day(&self) -> u8 {
        self.day
    }

    /// The hour (0 to 23).
    pub fn hour(&self) -> u8 {
        self.hour
    }

    /// The minute (0 to 59).
    pub fn minute(&self) -> u8 {
        self.minute
    }

    /// The second (0 to 60, 60 being a leap second).
    pub fn second(&self) -> u8 {
        self.second
    }

    /// The fraction of the second in nanoseconds (digits beyond the ninth are ignored).
    pub fn nanosecond(&self) -> u32 {
        self.nanosecond
    }

    /// The offset from UTC in minutes (0 for `Z`).
    pub fn offset_minutes(&self) -> i16 {
        self.offset_minutes
    }
}

impl fmt::Debug for DateTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DateTime({})", self.text)
    }
}

impl fmt::Display for DateTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for DateTime {
    type Err = DateTimeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl serde::Serialize for DateTime {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> serde::Deserialize<'de> for DateTime {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = DateTime;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an RFC 3339 date-time string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<DateTime, E> {
                DateTime::parse(v).map_err(E::custom)
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_bounds_of_now() {
        // The clamp bounds of `now` are the first and last writable seconds.
        let min = DateTime::from_unix_timestamp(-62_167_219_200).map(|t| t.unix_timestamp());
        let max = DateTime::from_unix_timestamp(253_402_300_799).map(|t| t.unix_timestamp());
        assert_eq!(min, Some(-62_167_219_200));
        assert_eq!(max, Some(253_402_300_799));
        assert!(DateTime::from_unix_timestamp(253_402_300_800).is_none());
        assert!(DateTime::from_unix_timestamp(-62_167_219_201).is_none());
    }

    #[test]
    fn from_unix_timestamp_agrees_with_parse() {
        // Seconds spread over the whole writable range (a prime step), plus the edges of days,
        // months and leap years: the printed text parses back to the same value and second.
        let (first, last) = (-62_167_219_200_i64, 253_402_300_799_i64);
        let mut secs: alloc::vec::Vec<i64> = (0..20_000)
            .map(|i| first + i * ((last - first) / 20_000) + (i * 7_919) % 86_400)
            .collect();
        secs.extend([
            first,
            last,
            0,
            -1,
            86_399,
            86_400,
            951_782_400,
            951_868_799,
            4_107_542_399,
        ]);
        for s in secs {
            let t = DateTime::from_unix_timestamp(s).unwrap();
            assert_eq!(DateTime::parse(t.as_str()), Ok(t.clone()), "{s}");
            assert_eq!(t.unix_timestamp(), s);
        }
    }

    #[cfg(feature = "std")]
    #[test]
    fn epoch_fallback_is_valid() {
        assert_eq!(
            DateTime::epoch(),
            DateTime::parse("1970-01-01T00:00:00Z").unwrap()
        );
    }
}
