//! The times the CSMS keeps in its records, in 8 bytes.

use std::num::NonZeroU64;
use std::time::{Duration, SystemTime};

use ocpp_messages::DateTime;

/// A wall-clock time as milliseconds since the Unix epoch (times before it are the epoch).
///
/// A `SystemTime` is 16 bytes and an `Option` of it 16; this is 8 for both (the value is
/// kept plus one, so that `None` is the zero). The charge-point record keeps three of them
/// (the last Heartbeat, the session's start, the registration's), so it is 24 bytes smaller,
/// and the OCPP date-times made from them have whole seconds anyway.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use ocpp_reference_csms::UnixTime;
/// let time = UnixTime::from(SystemTime::UNIX_EPOCH + Duration::from_millis(1_234_567));
/// assert_eq!(time.millis(), 1_234_567);
/// assert_eq!(SystemTime::from(time), SystemTime::UNIX_EPOCH + Duration::from_millis(1_234_567));
/// assert_eq!(std::mem::size_of::<Option<UnixTime>>(), 8);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UnixTime(NonZeroU64);

impl UnixTime {
    /// The time now.
    pub fn now() -> UnixTime {
        UnixTime::from(SystemTime::now())
    }

    /// Milliseconds since the Unix epoch.
    pub fn millis(self) -> u64 {
        self.0.get() - 1
    }

    /// This time as an OCPP date-time (UTC, whole seconds:
    /// [`DateTime::from_system_time`]).
    ///
    /// ```
    /// use ocpp_reference_csms::UnixTime;
    /// let time = UnixTime::from_millis(1_700_000_000_999);
    /// assert_eq!(time.date_time().as_str(), "2023-11-14T22:13:20Z");
    /// ```
    pub fn date_time(self) -> DateTime {
        DateTime::from_system_time(self.into())
    }

    /// The time `millis` milliseconds after the Unix epoch.
    pub fn from_millis(millis: u64) -> UnixTime {
        UnixTime(NonZeroU64::MIN.saturating_add(millis.min(u64::MAX - 1)))
    }
}

impl From<SystemTime> for UnixTime {
    /// Rounded down to the millisecond.
    fn from(time: SystemTime) -> UnixTime {
        let millis = time
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |since| since.as_millis());
        let millis = u64::try_from(millis).unwrap_or(u64::MAX - 1);
        UnixTime(NonZeroU64::MIN.saturating_add(millis))
    }
}

impl From<UnixTime> for SystemTime {
    fn from(time: UnixTime) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_millis(time.millis())
    }
}
