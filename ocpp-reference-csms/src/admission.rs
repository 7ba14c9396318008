//! Boot admission: after an outage every charge point reconnects and boots at once, and a
//! central system that accepts them all at once spends its database and CPU on the storm while
//! the charge points already connected wait. With a boot rate ([`CsmsConfig::boot_rate`]), the
//! CSMS accepts BootNotifications at that rate and answers the others `Pending` with the
//! `interval` after which a slot is kept for them (OCPP 1.6 §4.2 and 2.x B02: a Pending station
//! sends nothing but BootNotification, again after `interval`). The storm is spread over time
//! in the order the charge points came, and nobody is refused.
//!
//! The rule is a generic cell rate algorithm with reservations: each admission takes the next
//! slot of `1 / rate` seconds; up to `burst` slots may be taken at once; a boot that finds no
//! slot free now reserves the next free one and learns when it is, and its identity keeps that
//! slot until it boots again (a second early or any time later). A charge point that never comes
//! back loses its slot after [`FORGET_AFTER`] past it. Boots the operator holds Pending or
//! Rejected (the boot policy) take no slot.
//!
//! [`CsmsConfig::boot_rate`]: crate::CsmsConfig::boot_rate

use std::collections::HashMap;
use std::time::Duration;

use crate::UnixTime;

/// How long past its slot a charge point that was answered Pending keeps it.
pub const FORGET_AFTER: Duration = Duration::from_secs(600);

/// How early (before its slot) a charge point that was answered Pending is admitted: the
/// `interval` is in whole seconds and clocks drift.
const EARLY: u64 = 1_000;

/// The rate of BootNotifications the CSMS accepts (see the module docs).
///
/// ```
/// use ocpp_reference_csms::{BootRate, CsmsConfig};
///
/// // 200 boots a second, 50 at once: 10,000 charge points back after an outage are all
/// // Accepted within about 50 s, in the order they came.
/// let config = CsmsConfig::default().boot_rate(BootRate::new(200, 50));
/// assert_eq!(config.get_boot_rate(), Some(BootRate::new(200, 50)));
/// ```
pub type BootRate = ocpp_proto::Rate;

/// Milliseconds between two slots of `rate`, rounded up (never faster than the rate).
fn slot_ms(rate: BootRate) -> u64 {
    u64::try_from(rate.interval().as_nanos().div_ceil(1_000_000))
        .unwrap_or(u64::MAX)
        .max(1)
}

/// What [`Admission::admit`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admitted {
    /// Accept the boot now.
    Now,
    /// Answer Pending: the charge point's slot comes after this many seconds (at least 1).
    After(u32),
}

/// The admission state: the next free slot and the slots promised to charge points.
#[derive(Debug)]
pub(crate) struct Admission {
    rate: BootRate,
    /// Milliseconds since the epoch at which the next slot is free (the theoretical arrival
    /// time of the generic cell rate algorithm).
    next_slot: u64,
    /// The slots promised to charge points answered Pending, by identity.
    promised: HashMap<String, u64>,
}

impl Admission {
    pub(crate) fn new(rate: BootRate) -> Self {
        Admission {
            rate,
            next_slot: 0,
            promised: HashMap::new(),
        }
    }

    /// A BootNotification of `identity` at `now` that the boot policy would accept: admitted
    /// now, or told when to come back.
    pub(crate) fn admit(&mut self, identity: &str, now: UnixTime) -> Admitted {
        let now = now.millis();
        if let Some(&slot) = self.promised.get(identity) {
            if now + EARLY >= slot {
                self.promised.remove(identity);
                return Admitted::Now;
            }
            // Back too early: the same slot, still.
            return Admitted::After(seconds_until(now, slot));
        }
        let slot_ms = slot_ms(self.rate);
        let slot = self.next_slot.max(now);
        self.next_slot = slot + slot_ms;
        // Up to `burst` slots ahead of now may be taken at once.
        let tolerance = slot_ms * u64::from(self.rate.burst() - 1);
        if slot <= now + tolerance {
            return Admitted::Now;
        }
        let admissible = slot - tolerance;
        if self.promised.len() >= 1024 && self.promised.len().is_power_of_two() {
            self.forget(now);
        }
        self.promised.insert(identity.to_owned(), admissible);
        Admitted::After(seconds_until(now, admissible))
    }

    /// Drops the promises of charge points that did not come back.
    fn forget(&mut self, now: u64) {
        let forget_after = FORGET_AFTER.as_millis() as u64;
        self.promised
            .retain(|_, slot| slot.saturating_add(forget_after) >= now);
    }

    /// How many charge points were answered Pending and have not booted again.
    pub(crate) fn waiting(&self) -> usize {
        self.promised.len()
    }
}

/// Whole seconds from `now` until `slot` (both in ms), at least 1.
fn seconds_until(now: u64, slot: u64) -> u32 {
    let ms = slot.saturating_sub(now);
    u32::try_from(ms.div_ceil(1_000)).unwrap_or(u32::MAX).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> UnixTime {
        UnixTime::from_millis(1_700_000_000_000 + ms)
    }

    #[test]
    fn a_storm_is_spread_at_the_rate_in_arrival_order() {
        // 2 a second, 2 at once: of 7 boots at the same moment, 2 go now and the others are
        // given slots 500 ms apart, rounded up to whole seconds.
        let mut admission = Admission::new(BootRate::new(2, 2));
        let answers: Vec<Admitted> = (0..7)
            .map(|i| admission.admit(&format!("CP{i}"), at(0)))
            .collect();
        use Admitted::{After, Now};
        assert_eq!(
            answers,
            [Now, Now, After(1), After(1), After(2), After(2), After(3)]
        );
        assert_eq!(admission.waiting(), 5);
        // Each comes back after its interval and is admitted in its slot, even though new
        // charge points keep booting in between.
        assert_eq!(admission.admit("CP2", at(1_000)), Now);
        assert_eq!(admission.admit("CP3", at(1_000)), Now);
        assert_eq!(admission.admit("late", at(1_000)), After(2));
        assert_eq!(admission.admit("CP6", at(3_000)), Now);
        assert_eq!(admission.waiting(), 3);
    }

    #[test]
    fn a_charge_point_back_too_early_keeps_its_slot() {
        let mut admission = Admission::new(BootRate::new(1, 1));
        assert_eq!(admission.admit("A", at(0)), Admitted::Now);
        assert_eq!(admission.admit("B", at(0)), Admitted::After(1));
        assert_eq!(admission.admit("C", at(0)), Admitted::After(2));
        // C comes back at once: still 2 s (its slot is not given away or moved).
        assert_eq!(admission.admit("C", at(0)), Admitted::After(2));
        assert_eq!(admission.admit("C", at(1_000)), Admitted::Now);
        assert_eq!(admission.admit("B", at(5_000)), Admitted::Now);
        assert_eq!(admission.waiting(), 0);
    }

    #[test]
    fn below_the_rate_every_boot_is_accepted() {
        let mut admission = Admission::new(BootRate::new(10, 1));
        for i in 0..100 {
            assert_eq!(
                admission.admit(&format!("CP{i}"), at(i * 100)),
                Admitted::Now
            );
        }
        assert_eq!(admission.waiting(), 0);
    }

    #[test]
    fn promises_of_charge_points_that_never_came_back_are_forgotten() {
        let mut admission = Admission::new(BootRate::new(1_000, 1));
        for i in 0..2_000 {
            let _ = admission.admit(&format!("gone{i}"), at(0));
        }
        let before = admission.waiting();
        assert!(before > 1_000);
        let later = FORGET_AFTER.as_millis() as u64 + 10_000;
        for i in 0..2_100 {
            let _ = admission.admit(&format!("new{i}"), at(later));
        }
        assert!(
            admission.promised.keys().all(|k| k.starts_with("new")),
            "{} old promises left",
            admission
                .promised
                .keys()
                .filter(|k| k.starts_with("gone"))
                .count()
        );
    }

    /// Through the CSMS: past the rate a boot is answered Pending with its slot's interval,
    /// the Pending station may send nothing but BootNotification, and booting again in its
    /// slot is Accepted.
    #[test]
    fn the_csms_answers_pending_past_the_rate_and_accepts_in_the_slot() {
        use crate::{Csms, CsmsConfig};
        use ocpp_messages::v1_6;
        use ocpp_proto::{Answer, ChargePointIdentity, OcppVersion, Request};

        let csms = Csms::new(CsmsConfig::default().boot_rate(BootRate::new(1, 1)));
        let call = |cp: &ChargePointIdentity, session, action: &str, body: &str| {
            let request: Request = v1_6::decode_call(action, body).unwrap().into();
            match csms.on_call(session, cp, &request).wait(&csms) {
                Answer::Result(response) => Ok(serde_json::to_value(&response).unwrap()),
                Answer::Error(error) => Err(error.code),
                other => panic!("{other:?}"),
            }
        };
        let boot = r#"{"chargePointVendor":"ACME","chargePointModel":"Fast-50"}"#;
        let first = ChargePointIdentity::new("CP1".into(), false).unwrap();
        let second = ChargePointIdentity::new("CP2".into(), false).unwrap();
        let one = csms.on_connected(&first, OcppVersion::V1_6);
        let two = csms.on_connected(&second, OcppVersion::V1_6);
        let answer = call(&first, one, "BootNotification", boot).unwrap();
        assert_eq!(answer["status"], "Accepted");
        let answer = call(&second, two, "BootNotification", boot).unwrap();
        assert_eq!(answer["status"], "Pending");
        assert_eq!(answer["interval"], 1);
        assert_eq!(
            call(&second, two, "Heartbeat", "{}"),
            Err(ocpp_proto::ErrorCode::SecurityError)
        );
        std::thread::sleep(Duration::from_millis(1_000));
        assert_eq!(csms.metrics().boots_waiting.get(), 1);
        let answer = call(&second, two, "BootNotification", boot).unwrap();
        assert_eq!(answer["status"], "Accepted");
        assert!(call(&second, two, "Heartbeat", "{}").is_ok());
        assert_eq!(csms.metrics().boots_deferred.get(), 1);
        assert_eq!(csms.metrics().boots_waiting.get(), 0);
        assert!(csms
            .metrics()
            .render()
            .contains("ocpp_boots_deferred_total 1\n"));
    }
}
