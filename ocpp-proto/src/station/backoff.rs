//! The reconnect back-off: how long a station waits before it opens its connection again.
//!
//! OCPP 2.0.1 Part 4 §5.3 and OCPP 2.1 Part 4 §5.4 shape it with three `OCPPCommCtrlr`
//! variables. The first attempt after a loss waits `RetryBackOffWaitMinimum` plus a random part
//! of at most `RetryBackOffRandomRange`; after each further failure the fixed part doubles, at
//! most `RetryBackOffRepeatTimes` times, and then stays there; every attempt draws a new random
//! part. Only an *established* connection resets the schedule: one whose BootNotification was
//! accepted and that then lasted at least [`MIN_ESTABLISHED_LIFETIME`] (or the minimum the driver
//! sets). A connection that opens and closes at once (a central system that accepts the
//! WebSocket and hangs up, or never accepts the boot) counts as one more failure, so the waits
//! keep growing instead of hammering the central system at the shortest wait.
//!
//! OCPP 1.6 has no such configuration keys; a 1.6 station here follows the same schedule with
//! the [`RetryBackOff::default`] values (or whatever its driver configures). A refused upgrade
//! (HTTP 401, 404) counts as a failed attempt on every version: the OCPP-J 1.6 errata (§3.3) ask a
//! station to back off after it, so that a station the CSMS does not know does not hammer it.

use std::time::{Duration, Instant};

/// How long a connection must last after its BootNotification was accepted to count as
/// established ([`Reconnect::on_lost`]): a shorter one does not reset the back-off.
pub const MIN_ESTABLISHED_LIFETIME: Duration = Duration::from_secs(10);

/// The three settings of the reconnect back-off (the `OCPPCommCtrlr` variables of 2.x).
///
/// ```
/// use std::time::Duration;
/// use ocpp_proto::station::RetryBackOff;
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

/// The back-off schedule of one station across its connection attempts, in the Sans-IO shape
/// (`now` and the random draw come from the caller).
///
/// A driver calls [`begin_attempt`](Self::begin_attempt) before every attempt (the number to
/// report), [`on_accepted`](Self::on_accepted) when the BootNotification of the connection is
/// accepted, and [`on_lost`](Self::on_lost) when the attempt failed or its connection ended: the
/// wait before the next attempt. The failures (and so the waits) only start again from the
/// beginning after an established connection: accepted, then open for at least
/// [`min_lifetime`](Self::min_lifetime).
///
/// ```
/// use std::time::{Duration, Instant};
/// use ocpp_proto::station::{Reconnect, RetryBackOff};
///
/// let t0 = Instant::now();
/// let mut reconnect = Reconnect::new(RetryBackOff::default());
/// assert_eq!(reconnect.begin_attempt(), 1);
/// // TCP refused: wait, then try again (the draws come from the caller's RNG).
/// assert_eq!(reconnect.on_lost(t0, 0.0), Duration::from_secs(3));
/// assert_eq!(reconnect.begin_attempt(), 2);
/// // This one opened, but the central system hung up at once: the fixed part doubles.
/// assert_eq!(reconnect.on_lost(t0, 0.0), Duration::from_secs(6));
/// // The third is accepted and lasts: a later loss starts from the beginning.
/// assert_eq!(reconnect.begin_attempt(), 3);
/// reconnect.on_accepted(t0);
/// let later = t0 + Duration::from_secs(3600);
/// assert_eq!(reconnect.on_lost(later, 0.0), Duration::from_secs(3));
/// assert_eq!(reconnect.begin_attempt(), 1);
/// ```
#[derive(Debug, Clone)]
pub struct Reconnect {
    policy: RetryBackOff,
    /// Failed attempts (and losses) since the last established connection.
    failures: u32,
    /// Attempts begun since the last established connection.
    attempts: u32,
    /// When the current connection's BootNotification was accepted.
    accepted_at: Option<Instant>,
    /// How long an accepted connection must last to count as established.
    min_lifetime: Duration,
}

impl Reconnect {
    /// A schedule with this policy, no failure yet, and [`MIN_ESTABLISHED_LIFETIME`].
    pub fn new(policy: RetryBackOff) -> Self {
        Reconnect {
            policy,
            failures: 0,
            attempts: 0,
            accepted_at: None,
            min_lifetime: MIN_ESTABLISHED_LIFETIME,
        }
    }

    // Getters.

    /// The policy in force.
    pub fn policy(&self) -> RetryBackOff {
        self.policy
    }

    /// Failed attempts (and losses) since the last established connection.
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// How long an accepted connection must last to count as established.
    pub fn min_lifetime(&self) -> Duration {
        self.min_lifetime
    }

    // Mutators.

    /// Replaces the policy (the CSMS changed a `RetryBackOff*` variable); the failures counted
    /// so far are kept.
    pub fn set_policy(&mut self, policy: RetryBackOff) {
        self.policy = policy;
    }

    /// Sets how long an accepted connection must last to count as established (zero: any
    /// accepted connection does).
    pub fn set_min_lifetime(&mut self, min_lifetime: Duration) {
        self.min_lifetime = min_lifetime;
    }

    /// An attempt begins: its number since the last established connection, from 1.
    pub fn begin_attempt(&mut self) -> u32 {
        self.accepted_at = None;
        self.attempts = self.attempts.saturating_add(1);
        self.attempts
    }

    /// The current connection's BootNotification was accepted at `now` (the first acceptance
    /// counts; a later one, e.g. of a triggered boot, does not move it).
    pub fn on_accepted(&mut self, now: Instant) {
        self.accepted_at.get_or_insert(now);
    }

    /// The attempt failed, or its connection ended, at `now`: how long to wait before the next
    /// attempt. A connection that was established (accepted at least
    /// [`min_lifetime`](Self::min_lifetime) before `now`) starts the schedule again; any other
    /// ending is one more failure. `unit` is the caller's draw, uniform in `[0, 1]`.
    pub fn on_lost(&mut self, now: Instant, unit: f64) -> Duration {
        if self.was_established(now) {
            self.reset();
        }
        self.next_delay(unit)
    }

    /// The station itself ended its connection at `now` to connect again at once (a reboot):
    /// no wait and no failure; after an established connection the next attempt is number 1.
    pub fn on_restart(&mut self, now: Instant) {
        if self.was_established(now) {
            self.reset();
        }
    }

    /// Whether the current connection was established by `now` (and forget it).
    fn was_established(&mut self, now: Instant) -> bool {
        self.accepted_at
            .take()
            .is_some_and(|at| now.saturating_duration_since(at) >= self.min_lifetime)
    }

    /// An established connection: the next loss starts the schedule from the beginning, and
    /// the next attempt is number 1.
    pub fn reset(&mut self) {
        self.failures = 0;
        self.attempts = 0;
        self.accepted_at = None;
    }

    /// One more failure, whatever happened before: how long to wait before the next attempt.
    /// ([`on_lost`](Self::on_lost) is this after an established connection resets the
    /// schedule.) `unit` is the caller's draw, uniform in `[0, 1]`.
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
        let mut reconnect = Reconnect::new(huge);
        reconnect.failures = u32::MAX;
        assert_eq!(reconnect.next_delay(0.5), Duration::MAX);
        assert_eq!(reconnect.failures(), u32::MAX);
    }

    /// Issue 34: a central system that accepts the WebSocket and closes at once, again and
    /// again. No connection gets established, so every loss is one more failure and the waits
    /// grow to the bound; the attempts are numbered 1, 2, 3...
    #[test]
    fn short_lived_connections_do_not_reset_the_schedule() {
        let policy = RetryBackOff {
            wait_minimum: secs(3),
            random_range: Duration::ZERO,
            repeat_times: 3,
        };
        let mut reconnect = Reconnect::new(policy);
        let mut now = Instant::now();
        let mut waits = Vec::new();
        let mut attempts = Vec::new();
        for _ in 0..6 {
            attempts.push(reconnect.begin_attempt());
            // Open, then closed 10 ms later, never accepted.
            now += Duration::from_millis(10);
            let wait = reconnect.on_lost(now, 0.5);
            waits.push(wait.as_secs());
            now += wait;
        }
        assert_eq!(attempts, [1, 2, 3, 4, 5, 6]);
        assert_eq!(waits, [3, 6, 12, 24, 24, 24]);
    }

    #[test]
    fn an_accepted_connection_resets_only_after_the_minimum_lifetime() {
        let policy = RetryBackOff {
            wait_minimum: secs(1),
            random_range: Duration::ZERO,
            repeat_times: 4,
        };
        let t0 = Instant::now();
        let mut reconnect = Reconnect::new(policy);
        assert_eq!(reconnect.min_lifetime(), MIN_ESTABLISHED_LIFETIME);
        reconnect.begin_attempt();
        assert_eq!(reconnect.on_lost(t0, 0.0), secs(1));
        // Accepted, then lost 1 s later: too short, the schedule goes on.
        assert_eq!(reconnect.begin_attempt(), 2);
        reconnect.on_accepted(t0);
        assert_eq!(reconnect.on_lost(t0 + secs(1), 0.0), secs(2));
        // Open a long time but never accepted: still a failure.
        assert_eq!(reconnect.begin_attempt(), 3);
        assert_eq!(reconnect.on_lost(t0 + secs(3600), 0.0), secs(4));
        // Accepted and lasting the minimum: established, from the beginning.
        assert_eq!(reconnect.begin_attempt(), 4);
        reconnect.on_accepted(t0 + secs(100));
        reconnect.on_accepted(t0 + secs(109)); // a later acceptance does not move it
        assert_eq!(reconnect.on_lost(t0 + secs(110), 0.0), secs(1));
        assert_eq!(reconnect.failures(), 1);
        assert_eq!(reconnect.begin_attempt(), 1);
        // A reboot after an established connection: attempt 1 again, no failure counted.
        reconnect.begin_attempt();
        reconnect.on_accepted(t0);
        reconnect.on_restart(t0 + secs(10));
        assert_eq!(reconnect.failures(), 0);
        assert_eq!(reconnect.begin_attempt(), 1);
        // A reboot before: counted on, still no failure.
        reconnect.on_restart(t0);
        assert_eq!(reconnect.begin_attempt(), 2);
        assert_eq!(reconnect.failures(), 0);
        // A zero minimum: any accepted connection is established.
        reconnect.set_min_lifetime(Duration::ZERO);
        reconnect.on_lost(t0, 0.0);
        reconnect.begin_attempt();
        reconnect.on_accepted(t0);
        assert_eq!(reconnect.on_lost(t0, 0.0), secs(1));
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
