//! A rate with a burst: so many a second, up to so many at once. One type for every rate a
//! server keeps under a storm: an accept loop's connections ([`accept::AcceptRate`]) and a
//! central system's BootNotifications (the reference CSMS's `BootRate`).
//!
//! [`accept::AcceptRate`]: crate::accept::AcceptRate

use std::time::Duration;

/// `per_second` a second, up to `burst` at once; each at least 1.
///
/// ```
/// use std::time::Duration;
/// use ocpp_proto::Rate;
///
/// let rate = Rate::new(3, 10);
/// assert_eq!((rate.per_second(), rate.burst()), (3, 10));
/// // One slot every third of a second, rounded up: never faster than the rate.
/// assert_eq!(rate.interval(), Duration::from_nanos(333_333_334));
/// assert_eq!(Rate::new(0, 0), Rate::new(1, 1));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rate {
    per_second: u32,
    burst: u32,
}

impl Rate {
    /// `per_second` a second (at least 1), up to `burst` at once (at least 1).
    pub fn new(per_second: u32, burst: u32) -> Self {
        Rate {
            per_second: per_second.max(1),
            burst: burst.max(1),
        }
    }

    /// How many a second.
    pub fn per_second(self) -> u32 {
        self.per_second
    }

    /// How many at once.
    pub fn burst(self) -> u32 {
        self.burst
    }

    /// The time between two slots, `1 / per_second`, rounded up to the nanosecond.
    pub fn interval(self) -> Duration {
        self.interval_of(1)
    }

    /// The time between two slots of one of `shares` that split the rate between them (each
    /// `per_second / shares`), rounded up to the nanosecond.
    pub(crate) fn interval_of(self, shares: u32) -> Duration {
        let nanos =
            (1_000_000_000u64 * u64::from(shares.max(1))).div_ceil(u64::from(self.per_second));
        Duration::from_nanos(nanos)
    }
}
