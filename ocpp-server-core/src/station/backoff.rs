//! The reconnect back-off: how long a station waits before it opens its connection again.
//!
//! OCPP 2.0.1 Part 4 §5.3 and OCPP 2.1 Part 4 §5.4 shape it with three `OCPPCommCtrlr`
//! variables. The first attempt after a loss waits `RetryBackOffWaitMinimum` plus a random part
//! of at most `RetryBackOffRandomRange`; after each further failure the fixed part doubles, at
//! most `RetryBackOffRepeatTimes` times, and then stays there; every attempt draws a new random
//! part. A connection that opens resets the schedule.
//!
//! OCPP 1.6 has no such configuration keys; a 1.6 station here follows the same schedule with
//! the [`RetryBackOff::default`] values (or whatever its driver configures). A refused upgrade
//! (HTTP 401, 404) counts as a failed attempt on every version: the OCPP-J 1.6 errata (§3.3) ask a
//! station to back off after it, so that a station the CSMS does not know does not hammer it.

use std::time::Duration;

/// The three settings of the reconnect back-off (the `OCPPCommCtrlr` variables of 2.x).
///
/// ```
/// use std::time::Duration;
/// use ocpp_server_core::station::RetryBackOff;
///
/// let policy = RetryBackOff::default();
/// // The fixed part doubles after each failure: 3 s, 6 s, 12 s, ... up to 96 s.
/// assert_eq!(policy.fixed_part(0), Duration::from_secs(3));
/// assert_eq!(policy.fixed_part(9), Duration::from_secs(96));
/// // `unit` is the caller's uniform draw from [0, 1]: half of the 10 s random range.
/// assert_eq!(policy.delay(1, 0.5), Duration::from_secs(11));
/// assert_eq!(policy.bounds(1), (Duration::from_secs(6), Duration::from_secs(16)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryBackOff {
    /// `RetryBackOffWaitMinimum`: the fixed part of the first wait.
    pub wait_minimum: Duration,
    /// `RetryBackOffRandomRange`: the random part of every wait lies in `[0, random_range]`.
    pub random_range: Duration,
    /// `RetryBackOffRepeatTimes`: how many times the fixed part doubles.
    pub repeat_times: u32,
}

impl Default for RetryBackOff {
    /// 3 s minimum, 10 s random range, 5 doublings: the longest wait is 96 s plus at most 10 s.
    fn default() -> Self {
        RetryBackOff {
            wait_minimum: Duration::from_secs(3),
            random_range: Duration::from_secs(10),
            repeat_times: 5,
        }
    }
}

impl RetryBackOff {
    /// The fixed part of the wait after `failures` earlier failed attempts (or losses of an open
    /// connection): `wait_minimum * 2^min(failures, repeat_times)`, saturating at
    /// [`Duration::MAX`].
    pub fn fixed_part(&self, failures: u32) -> Duration {
        // Past 2^31 the product saturates for any non-zero minimum anyway.
        let doublings = failures.min(self.repeat_times).min(31);
        self.wait_minimum.saturating_mul(1u32 << doublings)
    }

    /// The whole wait: the fixed part plus `unit` times the random range. `unit` is the caller's
    /// draw, uniform in `[0, 1]`; a value outside (or NaN) is clamped into it.
    pub fn delay(&self, failures: u32, unit: f64) -> Duration {
        let unit = if unit.is_nan() {
            0.0
        } else {
            unit.clamp(0.0, 1.0)
        };
        let random = Duration::try_from_secs_f64(self.random_range.as_secs_f64() * unit)
            .map_or(self.random_range, |random| random.min(self.random_range));
        self.fixed_part(failures).saturating_add(random)
    }

    /// The least and the greatest [`delay`](Self::delay) after `failures` failures (`unit` 0 and
    /// 1).
    pub fn bounds(&self, failures: u32) -> (Duration, Duration) {
        let fixed = self.fixed_part(failures);
        (fixed, fixed.saturating_add(self.random_range))
    }
}

/// The back-off schedule of one station across its connection attempts.
///
/// ```
/// use std::time::Duration;
/// use ocpp_server_core::station::{Reconnect, RetryBackOff};
///
/// let mut reconnect = Reconnect::new(RetryBackOff::default());
/// // The connection was lost: wait, then try again (the draws come from the caller's RNG).
/// assert_eq!(reconnect.next_delay(0.0), Duration::from_secs(3));
/// // That attempt failed too: the fixed part doubles.
/// assert_eq!(reconnect.next_delay(0.0), Duration::from_secs(6));
/// // The next attempt opened: a later loss starts from the beginning.
/// reconnect.reset();
/// assert_eq!(reconnect.failures(), 0);
/// ```
#[derive(Debug, Clone)]
pub struct Reconnect {
    policy: RetryBackOff,
    /// Failed attempts (and losses) since the last connection that opened.
    failures: u32,
}

impl Reconnect {
    /// A schedule with this policy and no failure yet.
    pub fn new(policy: RetryBackOff) -> Self {
        Reconnect {
            policy,
            failures: 0,
        }
    }

    /// The policy in force.
    pub fn policy(&self) -> RetryBackOff {
        self.policy
    }

    /// Replaces the policy (the CSMS changed a `RetryBackOff*` variable); the failures counted
    /// so far are kept.
    pub fn set_policy(&mut self, policy: RetryBackOff) {
        self.policy = policy;
    }

    /// Failed attempts (and losses) since the last connection that opened.
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// A connection opened: the next loss starts the schedule from the beginning.
    pub fn reset(&mut self) {
        self.failures = 0;
    }

    /// An attempt failed (including a refused upgrade) or an open connection was lost: how long
    /// to wait before the next attempt. `unit` is the caller's draw, uniform in `[0, 1]`.
    pub fn next_delay(&mut self, unit: f64) -> Duration {
        let delay = self.policy.delay(self.failures, unit);
        self.failures = self.failures.saturating_add(1);
        delay
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn fixed_part_doubles_then_stays() {
        let policy = RetryBackOff::default();
        let fixed: Vec<u64> = (0..9).map(|n| policy.fixed_part(n).as_secs()).collect();
        assert_eq!(fixed, [3, 6, 12, 24, 48, 96, 96, 96, 96]);
    }

    #[test]
    fn random_part_scales_with_unit_and_is_clamped() {
        let policy = RetryBackOff::default();
        assert_eq!(policy.delay(0, 0.0), secs(3));
        assert_eq!(policy.delay(0, 1.0), secs(13));
        assert_eq!(policy.delay(0, 0.5), secs(8));
        assert_eq!(policy.delay(2, 1.0), secs(22));
        assert_eq!(policy.delay(0, 7.0), secs(13));
        assert_eq!(policy.delay(0, -1.0), secs(3));
        assert_eq!(policy.delay(0, f64::NAN), secs(3));
        assert_eq!(policy.delay(0, f64::INFINITY), secs(13));
        assert_eq!(policy.bounds(2), (secs(12), secs(22)));
    }

    #[test]
    fn schedule_counts_failures_and_resets() {
        let policy = RetryBackOff {
            wait_minimum: Duration::from_millis(100),
            random_range: Duration::ZERO,
            repeat_times: 2,
        };
        let mut reconnect = Reconnect::new(policy);
        let waits: Vec<u128> = (0..5)
            .map(|_| reconnect.next_delay(0.3).as_millis())
            .collect();
        assert_eq!(waits, [100, 200, 400, 400, 400]);
        assert_eq!(reconnect.failures(), 5);
        reconnect.reset();
        assert_eq!(reconnect.next_delay(0.0), Duration::from_millis(100));
    }

    #[test]
    fn set_policy_keeps_the_failure_count() {
        let mut reconnect = Reconnect::new(RetryBackOff::default());
        reconnect.next_delay(0.0);
        reconnect.next_delay(0.0);
        let faster = RetryBackOff {
            wait_minimum: secs(1),
            random_range: Duration::ZERO,
            repeat_times: 10,
        };
        reconnect.set_policy(faster);
        assert_eq!(reconnect.policy(), faster);
        assert_eq!(reconnect.next_delay(0.9), secs(4));
    }

    #[test]
    fn zero_repeat_times_never_doubles_and_huge_values_saturate() {
        let policy = RetryBackOff {
            wait_minimum: secs(5),
            random_range: secs(1),
            repeat_times: 0,
        };
        assert_eq!(policy.fixed_part(10), secs(5));
        let huge = RetryBackOff {
            wait_minimum: Duration::MAX,
            random_range: Duration::MAX,
            repeat_times: 100,
        };
        assert_eq!(huge.delay(100, 1.0), Duration::MAX);
        assert_eq!(huge.bounds(u32::MAX), (Duration::MAX, Duration::MAX));
        let mut reconnect = Reconnect {
            policy: huge,
            failures: u32::MAX,
        };
        assert_eq!(reconnect.next_delay(0.5), Duration::MAX);
        assert_eq!(reconnect.failures(), u32::MAX);
    }

    proptest! {
        #[test]
        fn delay_is_within_bounds(
            minimum_ms in 0u64..10_000_000,
            range_ms in 0u64..10_000_000,
            repeat_times in 0u32..64,
            failures in any::<u32>(),
            unit in any::<f64>(),
        ) {
            let policy = RetryBackOff {
                wait_minimum: Duration::from_millis(minimum_ms),
                random_range: Duration::from_millis(range_ms),
                repeat_times,
            };
            let (low, high) = policy.bounds(failures);
            let delay = policy.delay(failures, unit);
            prop_assert!(low <= delay && delay <= high, "{low:?} <= {delay:?} <= {high:?}");
        }
    }
}
