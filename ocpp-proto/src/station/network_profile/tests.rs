//! The network profiles' tests: attempts per profile, the fallback, `set_profile`'s checks, no
//! security downgrade, returning to a higher priority.

use super::*;
use proptest::prelude::*;

fn three() -> NetworkProfiles {
    NetworkProfiles::new([
        NetworkProfile::new(0, "ws://a/ocpp"),
        NetworkProfile::new(1, "ws://b/ocpp"),
        NetworkProfile::new(2, "ws://c/ocpp"),
    ])
}

/// `n` failed attempts: the slots tried.
fn fail(profiles: &mut NetworkProfiles, n: usize, now: Instant) -> Vec<i32> {
    (0..n)
        .map(|_| {
            let slot = profiles.begin_attempt().map_or(-1, |a| a.profile.slot);
            profiles.on_lost(now);
            slot
        })
        .collect()
}

#[test]
fn attempts_per_profile_then_next_then_wrap() {
    let now = Instant::now();
    let mut profiles = three().with_attempts(2);
    assert_eq!(fail(&mut profiles, 8, now), [0, 0, 1, 1, 2, 2, 0, 0]);
    // Zero attempts means one.
    let mut profiles = three().with_attempts(0);
    assert_eq!(fail(&mut profiles, 4, now), [0, 1, 2, 0]);
    assert_eq!(NetworkProfiles::new([]).begin_attempt(), None);
}

#[test]
fn a_lost_connection_starts_from_the_top_a_failed_attempt_does_not() {
    let now = Instant::now();
    let mut profiles = three().with_attempts(1);
    assert_eq!(fail(&mut profiles, 2, now), [0, 1]);
    let attempt = profiles.begin_attempt().unwrap();
    assert_eq!((attempt.profile.slot, attempt.attempt), (2, 1));
    assert_eq!(profiles.attempt(), 1);
    profiles.on_accepted(now);
    assert!(profiles.is_connected());
    assert_eq!(profiles.current().unwrap().slot, 2);
    assert_eq!(profiles.last_connected(), Some(2));
    profiles.on_lost(now);
    assert_eq!(fail(&mut profiles, 3, now), [0, 1, 2]);
    // A reboot goes back to the first entry.
    assert_eq!(fail(&mut profiles, 1, now), [0]);
    profiles.on_restart();
    assert_eq!(fail(&mut profiles, 1, now), [0]);
}

#[test]
fn fallback_to_the_last_successful_profile_after_a_cycle() {
    let now = Instant::now();
    let mut profiles = three().with_attempts(1);
    profiles.begin_attempt();
    profiles.on_accepted(now);
    profiles.on_lost(now);
    // The CSMS moves the station to slots 1 and 2 (B10): slot 0 becomes the fallback.
    profiles.set_priority(&[1, 2]).unwrap();
    profiles.on_restart();
    let attempts: Vec<(i32, bool)> = (0..4)
        .map(|_| {
            let a = profiles.begin_attempt().unwrap();
            profiles.on_lost(now);
            (a.profile.slot, a.fallback)
        })
        .collect();
    assert_eq!(attempts, [(1, false), (2, false), (0, true), (1, false)]);
}

#[test]
fn set_profile_validates_and_fills_an_empty_slot_of_the_priority() {
    let now = Instant::now();
    let mut profiles = NetworkProfiles::new([NetworkProfile::new(0, "ws://a/ocpp")])
        .with_attempts(1)
        .with_slot_count(2);
    profiles.set_priority(&[0, 1]).unwrap();
    assert_eq!(fail(&mut profiles, 2, now), [0, 0]);
    assert_eq!(
        profiles.set_profile(NetworkProfile::new(2, "ws://b/ocpp")),
        Err(ProfileRejected::SlotOutOfRange(2))
    );
    assert_eq!(
        profiles.set_profile(NetworkProfile::new(1, "http://b/ocpp")),
        Err(ProfileRejected::InvalidUrl)
    );
    assert_eq!(
        profiles.set_profile(NetworkProfile::new(1, "ws:///ocpp")),
        Err(ProfileRejected::InvalidUrl)
    );
    assert_eq!(
        profiles.set_profile(NetworkProfile::new(1, "wss://b/ocpp").with_security_profile(7)),
        Err(ProfileRejected::InvalidSecurityProfile)
    );
    profiles
        .set_profile(NetworkProfile::new(1, "ws://b/ocpp"))
        .unwrap();
    assert_eq!(fail(&mut profiles, 3, now), [1, 0, 1]);
    assert_eq!(
        profiles.set_priority(&[0, 0]),
        Err(ProfileRejected::InvalidPriority)
    );
    assert_eq!(
        profiles.set_priority(&[]),
        Err(ProfileRejected::InvalidPriority)
    );
}

#[test]
fn no_security_downgrade() {
    let now = Instant::now();
    let mut profiles = NetworkProfiles::new([
        NetworkProfile::new(0, "wss://a/ocpp").with_security_profile(2),
        NetworkProfile::new(1, "ws://b/ocpp").with_security_profile(1),
    ]);
    profiles.set_priority(&[0]).unwrap();
    profiles.begin_attempt();
    profiles.on_accepted(now);
    assert_eq!(profiles.active_security_profile(), 2);
    let downgrade = ProfileRejected::SecurityDowngrade {
        offered: 1,
        active: 2,
    };
    assert_eq!(
        profiles.set_profile(NetworkProfile::new(2, "ws://c/ocpp").with_security_profile(1)),
        Err(downgrade)
    );
    assert_eq!(profiles.set_priority(&[0, 1]), Err(downgrade));
    assert_eq!(downgrade.reason_code(), "NoSecurityDowngrade");
}

#[test]
fn return_after_leaves_a_lower_priority_connection() {
    let t0 = Instant::now();
    let mut profiles = NetworkProfiles::from_urls(["ws://a/ocpp", "ws://b/ocpp"])
        .with_attempts(1)
        .with_return_after(Duration::from_secs(60));
    assert_eq!(profiles.poll_timeout(), None);
    profiles.begin_attempt();
    profiles.on_accepted(t0);
    assert_eq!(profiles.poll_timeout(), None, "on the first: stays");
    profiles.on_lost(t0);
    assert_eq!(fail(&mut profiles, 1, t0), [0]);
    profiles.begin_attempt();
    profiles.on_accepted(t0);
    assert_eq!(profiles.poll_timeout(), Some(t0 + Duration::from_secs(60)));
    assert!(!profiles.handle_timeout(t0 + Duration::from_secs(59)));
    assert!(profiles.handle_timeout(t0 + Duration::from_secs(60)));
    profiles.on_restart();
    assert_eq!(profiles.poll_timeout(), None);
    assert_eq!(fail(&mut profiles, 1, t0), [0]);
}

#[test]
fn json_round_trip_keeps_the_place_in_the_cycle() {
    let now = Instant::now();
    let mut profiles = three()
        .with_attempts(2)
        .with_return_after(Duration::from_secs(600));
    fail(&mut profiles, 3, now);
    let json = serde_json::to_value(&profiles).unwrap();
    assert_eq!(json["priority"], serde_json::json!([0, 1, 2]));
    assert_eq!(json["profiles"][1]["csmsUrl"], "ws://b/ocpp");
    let mut again: NetworkProfiles = serde_json::from_value(json).unwrap();
    assert_eq!(fail(&mut again, 3, now), fail(&mut profiles, 3, now));
}

/// One step of a station's life, for the property test.
#[derive(Debug, Clone)]
enum Step {
    Fail,
    Accept,
    Restart,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => Just(Step::Fail),
        1 => Just(Step::Accept),
        1 => Just(Step::Restart),
    ]
}

proptest! {
    /// The back-off and the choice of profile side by side, as a driver asks them: moving
    /// to the next profile does not reset the back-off (only an established connection
    /// does), so every wait after a failed attempt is the schedule's for the failures so
    /// far, whichever profile comes next.
    #[test]
    fn back_off_still_applies_across_profiles(
        count in 1usize..4,
        attempts in 1u32..4,
        failures in 1usize..20,
        unit in 0.0f64..=1.0,
    ) {
        use super::super::{Reconnect, RetryBackOff};
        let policy = RetryBackOff {
            wait_minimum: Duration::from_secs(1),
            random_range: Duration::from_secs(2),
            repeat_times: 3,
        };
        let now = Instant::now();
        let mut reconnect = Reconnect::new(policy);
        let mut profiles = NetworkProfiles::new(
            (0..count as i32).map(|slot| NetworkProfile::new(slot, format!("ws://h{slot}/ocpp"))),
        )
        .with_attempts(attempts);
        let mut slots = Vec::new();
        for failed in 0..failures {
            reconnect.begin_attempt();
            slots.push(profiles.begin_attempt().unwrap().profile.slot);
            profiles.on_lost(now);
            let wait = reconnect.on_lost(now, unit);
            let (low, high) = policy.bounds(failed as u32);
            prop_assert!(low <= wait && wait <= high);
        }
        // Each slot in turn, `attempts` times, wrapping around.
        let expected: Vec<i32> = (0..failures)
            .map(|i| ((i / attempts as usize) % count) as i32)
            .collect();
        prop_assert_eq!(slots, expected);
    }

    /// Whatever happened before, from any starting point: runs of failed attempts go
    /// through the priority list in order, `attempts` on each entry, never skipping one,
    /// wrapping around; an accepted connection or a restart starts again from the first.
    #[test]
    fn failures_go_round_the_priority_list(
        count in 1usize..5,
        attempts in 1u32..4,
        steps in proptest::collection::vec(step(), 0..60),
    ) {
        let now = Instant::now();
        let mut profiles = NetworkProfiles::new(
            (0..count as i32).map(|slot| NetworkProfile::new(slot, format!("ws://h{slot}/ocpp"))),
        )
        .with_attempts(attempts);
        // The expected next slot and attempt on it.
        let (mut entry, mut made) = (0usize, 0u32);
        for step in steps {
            match step {
                Step::Fail => {
                    if made == attempts {
                        entry = (entry + 1) % count;
                        made = 0;
                    }
                    made += 1;
                    let attempt = profiles.begin_attempt().unwrap();
                    prop_assert_eq!(attempt.profile.slot, entry as i32);
                    prop_assert_eq!(attempt.attempt, made);
                    prop_assert!(!attempt.fallback);
                    profiles.on_lost(now);
                }
                Step::Accept => {
                    let attempt = profiles.begin_attempt().unwrap();
                    if made == attempts {
                        entry = (entry + 1) % count;
                    }
                    prop_assert_eq!(attempt.profile.slot, entry as i32);
                    profiles.on_accepted(now);
                    prop_assert_eq!(profiles.current().map(|p| p.slot), Some(entry as i32));
                    profiles.on_lost(now);
                    (entry, made) = (0, 0);
                }
                Step::Restart => {
                    profiles.on_restart();
                    (entry, made) = (0, 0);
                }
            }
        }
        // And a persisted copy goes on exactly as the original.
        let json = serde_json::to_string(&profiles).unwrap();
        let mut again: NetworkProfiles = serde_json::from_str(&json).unwrap();
        for _ in 0..(count * attempts as usize + 1) {
            let a = again.begin_attempt().map(|a| (a.profile.slot, a.attempt));
            let b = profiles.begin_attempt().map(|a| (a.profile.slot, a.attempt));
            prop_assert_eq!(a, b);
            again.on_lost(now);
            profiles.on_lost(now);
        }
    }
}
