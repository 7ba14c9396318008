//! The reconnect back-off of OCPP 2.0.1 Part 4 §5.3 and OCPP 2.1 Part 4 §5.4.
//!
//! The first reconnection attempt waits `RetryBackOffWaitMinimum` plus a random part of at most
//! `RetryBackOffRandomRange`. After each failed attempt the fixed part doubles, for at most
//! `RetryBackOffRepeatTimes` doublings, and then stays there; every attempt draws a new random
//! part. A refused upgrade (401, 404) counts as a failed attempt too (OCPP-J 1.6 errata §3.3).
//! A connection that opens resets the schedule.

use std::time::Duration;

/// The three `OCPPCommCtrlr` variables that shape the reconnect back-off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RetryBackOff {
    /// `RetryBackOffWaitMinimum`: the fixed part of the first wait.
    pub(crate) wait_minimum: Duration,
    /// `RetryBackOffRandomRange`: the random part of every wait is drawn from `[0, range]`.
    pub(crate) random_range: Duration,
    /// `RetryBackOffRepeatTimes`: how many times the fixed part doubles.
    pub(crate) repeat_times: u32,
}

impl Default for RetryBackOff {
    /// 3 s minimum, 10 s random range, 5 doublings (so at most 96 s plus the random part).
    fn default() -> Self {
        RetryBackOff {
            wait_minimum: Duration::from_secs(3),
            random_range: Duration::from_secs(10),
            repeat_times: 5,
        }
    }
}

impl RetryBackOff {
    /// The fixed part of the wait before reconnection attempt `failures + 1`, where `failures`
    /// attempts (or losses of an open connection) came before it: `minimum * 2^min(failures,
    /// repeat_times)`.
    pub(crate) fn fixed_part(&self, failures: u32) -> Duration {
        let doublings = failures.min(self.repeat_times).min(31);
        self.wait_minimum.saturating_mul(1 << doublings)
    }

    /// The whole wait: the fixed part plus `unit` (drawn uniformly from `[0, 1]`) times the
    /// random range.
    pub(crate) fn delay(&self, failures: u32, unit: f64) -> Duration {
        let unit = unit.clamp(0.0, 1.0);
        let random = Duration::try_from_secs_f64(self.random_range.as_secs_f64() * unit)
            .map_or(self.random_range, |d| d.min(self.random_range));
        self.fixed_part(failures).saturating_add(random)
    }
}

/// The state of the schedule across attempts of one charge point.
#[derive(Debug, Clone)]
pub(crate) struct Reconnect {
    /// The schedule's settings (a CSMS may change them through SetVariables).
    pub(crate) policy: RetryBackOff,
    /// Failed attempts since the last connection that opened.
    failures: u32,
}

impl Reconnect {
    pub(crate) fn new(policy: RetryBackOff) -> Self {
        Reconnect {
            policy,
            failures: 0,
        }
    }

    /// A connection opened: the next loss starts the schedule from the beginning.
    pub(crate) fn reset(&mut self) {
        self.failures = 0;
    }

    /// An attempt failed or an open connection was lost: how long to wait before the next
    /// attempt (`unit` uniform in `[0, 1]`, from the caller's RNG).
    pub(crate) fn next_delay(&mut self, unit: f64) -> Duration {
        let delay = self.policy.delay(self.failures, unit);
        self.failures = self.failures.saturating_add(1);
        delay
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn doubles_then_keeps_the_fixed_part() {
        let policy = RetryBackOff::default();
        let fixed: Vec<u64> = (0..9).map(|n| policy.fixed_part(n).as_secs()).collect();
        assert_eq!(fixed, vec![3, 6, 12, 24, 48, 96, 96, 96, 96]);
    }

    #[test]
    fn random_part_stays_within_the_range() {
        let policy = RetryBackOff::default();
        assert_eq!(policy.delay(0, 0.0), secs(3));
        assert_eq!(policy.delay(0, 1.0), secs(13));
        assert_eq!(policy.delay(0, 0.5), secs(8));
        assert_eq!(policy.delay(2, 1.0), secs(22));
        // Out-of-range draws are clamped.
        assert_eq!(policy.delay(0, 7.0), secs(13));
        assert_eq!(policy.delay(0, -1.0), secs(3));
        let mut rng = fastrand::Rng::with_seed(7);
        for failures in 0..20 {
            let d = policy.delay(failures, rng.f64());
            let fixed = policy.fixed_part(failures);
            assert!(d >= fixed && d <= fixed + policy.random_range, "{d:?}");
        }
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
        assert_eq!(waits, vec![100, 200, 400, 400, 400]);
        reconnect.reset();
        assert_eq!(reconnect.next_delay(0.0), Duration::from_millis(100));
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
    }
}
