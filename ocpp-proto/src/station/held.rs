//! The station's own CALLs that wait for its registration to allow them: before the CSMS
//! accepts the station only BootNotification may go (and, while Pending, what a TriggerMessage
//! asked for), so the application's other CALLs wait here, in the order they were made, each
//! until its deadline (OCPP 1.6 §4.2; 2.0.1 and 2.1 B02, B03).
//!
//! The rule of when a held CALL is done: past its deadline it ends never sent (the deadline
//! also covers it queued in the connection and in flight); once the registration allows its
//! action it goes, and the registration hears that it was sent; otherwise it stays, in order.

use std::collections::VecDeque;
use std::time::Instant;

use ocpp_messages::Request;

use super::Registration;

/// One held CALL: the request, who waits for its outcome, and its deadline.
#[derive(Debug)]
pub struct HeldCall<C> {
    /// The CALL.
    pub request: Request,
    /// Who waits for its outcome (the driver's own type).
    pub caller: C,
    /// Not sent after this, and answered by then.
    pub deadline: Instant,
}

/// What [`HeldCalls::next_release`] hands the driver, one CALL at a time, in order.
#[derive(Debug)]
pub enum Release<C> {
    /// Its deadline passed while held: it was never sent (its caller learns
    /// [`CallFailure::DeadlinePassed`](crate::CallFailure::DeadlinePassed)).
    Expired(HeldCall<C>),
    /// The registration allows it: put it on the connection, with its deadline (and, once
    /// taken, tell the registration).
    Send(HeldCall<C>),
}

/// The station's CALLs that wait for the registration, in the order they were made.
///
/// ```
/// use std::time::{Duration, Instant};
/// use ocpp_proto::station::{HeldCalls, Registration, Release};
/// use ocpp_proto::{v1_6, OcppVersion};
///
/// let t0 = Instant::now();
/// let registration = &Registration::new(t0, OcppVersion::V1_6);
/// let mut held = HeldCalls::new();
/// held.push(v1_6::HeartbeatRequest {}.into(), "caller", t0 + Duration::from_secs(30));
/// // Not accepted yet: the Heartbeat waits.
/// assert!(held.next_release(t0, registration).is_none());
/// assert_eq!(held.poll_timeout(), Some(t0 + Duration::from_secs(30)));
/// // Past its deadline: never sent.
/// let later = t0 + Duration::from_secs(30);
/// assert!(matches!(held.next_release(later, registration), Some(Release::Expired(_))));
/// assert!(held.is_empty());
/// ```
#[derive(Debug)]
pub struct HeldCalls<C> {
    calls: VecDeque<HeldCall<C>>,
}

impl<C> Default for HeldCalls<C> {
    fn default() -> Self {
        HeldCalls::new()
    }
}

impl<C> HeldCalls<C> {
    /// None held.
    pub fn new() -> Self {
        HeldCalls {
            calls: VecDeque::new(),
        }
    }

    /// How many CALLs wait.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// Whether none waits.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// Holds a CALL until the registration allows it, or `deadline`.
    pub fn push(&mut self, request: Request, caller: C, deadline: Instant) {
        self.calls.push_back(HeldCall {
            request,
            caller,
            deadline,
        });
    }

    /// The earliest deadline of a held CALL: by then [`next_release`](Self::next_release) ends
    /// it.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.calls.iter().map(|call| call.deadline).min()
    }

    /// The next held CALL that is done at `now`, in order: [`Release::Expired`] past its
    /// deadline, [`Release::Send`] when `registration` allows its action now (once the
    /// connection took it, the registration hears it was sent,
    /// [`Registration::on_call_sent`], before the next is asked for: a trigger's credit is
    /// spent once). The others stay held, in order.
    pub fn next_release(
        &mut self,
        now: Instant,
        registration: &Registration,
    ) -> Option<Release<C>> {
        let done = |call: &HeldCall<C>| {
            call.deadline <= now || registration.may_send(call.request.action())
        };
        let at = self.calls.iter().position(done)?;
        let call = self.calls.remove(at)?;
        Some(if call.deadline <= now {
            Release::Expired(call)
        } else {
            Release::Send(call)
        })
    }

    /// The connection ended: every CALL still held, in order (none was sent).
    pub fn drain(&mut self) -> impl Iterator<Item = HeldCall<C>> + '_ {
        self.calls.drain(..)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use ocpp_messages::{v1_6, DateTime, OcppVersion};

    use super::*;
    use crate::station::{BootAnswer, Due, RegistrationStatus};

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    fn heartbeat() -> Request {
        v1_6::HeartbeatRequest {}.into()
    }

    fn status_notification() -> Request {
        v1_6::StatusNotificationRequest::new(
            1,
            v1_6::ChargePointErrorCode::NoError,
            v1_6::ChargePointStatus::Available,
        )
        .into()
    }

    fn answer(status: RegistrationStatus) -> BootAnswer {
        BootAnswer {
            status,
            interval_s: 10,
            current_time: DateTime::from_unix_timestamp(1_780_000_000).unwrap(),
        }
    }

    fn registration(t0: Instant, status: RegistrationStatus) -> Registration {
        let mut registration = Registration::new(t0, OcppVersion::V1_6);
        assert_eq!(registration.handle_timeout(t0), Some(Due::Boot));
        registration.on_boot_answer(t0, &answer(status));
        registration
    }

    /// Calls held in this order, callers 1, 2..., each with its deadline in seconds after
    /// `t0`.
    fn holding<const N: usize>(t0: Instant, calls: [(Request, u64); N]) -> HeldCalls<u32> {
        let mut held = HeldCalls::new();
        for (caller, (request, deadline)) in (1..).zip(calls) {
            held.push(request, caller, t0 + secs(deadline));
        }
        held
    }

    /// What `next_release` handed out until `None`, as (caller, sent), every Send `taken`
    /// by the connection or not.
    fn release(
        held: &mut HeldCalls<u32>,
        now: Instant,
        registration: &mut Registration,
        taken: bool,
    ) -> Vec<(u32, &'static str)> {
        let mut out = Vec::new();
        while let Some(release) = held.next_release(now, registration) {
            match release {
                Release::Expired(call) => out.push((call.caller, "expired")),
                Release::Send(call) => {
                    out.push((call.caller, "send"));
                    if taken {
                        registration.on_call_sent(now, call.request.action());
                    }
                }
            }
        }
        out
    }

    #[test]
    fn held_until_accepted_then_sent_in_order() {
        let t0 = Instant::now();
        let mut pending = registration(t0, RegistrationStatus::Pending);
        let mut held = holding(t0, [(heartbeat(), 30), (status_notification(), 20)]);
        assert_eq!(release(&mut held, t0, &mut pending, true), []);
        assert_eq!(held.len(), 2);
        assert_eq!(held.poll_timeout(), Some(t0 + secs(20)));
        let mut accepted = registration(t0, RegistrationStatus::Accepted);
        let out = release(&mut held, t0 + secs(1), &mut accepted, true);
        assert_eq!(out, [(1, "send"), (2, "send")]);
        assert!(held.is_empty());
        assert_eq!(held.poll_timeout(), None);
    }

    #[test]
    fn a_call_past_its_deadline_expires_unsent_and_the_others_keep_their_order() {
        let t0 = Instant::now();
        let mut pending = registration(t0, RegistrationStatus::Pending);
        let mut held = holding(
            t0,
            [
                (heartbeat(), 30),
                (status_notification(), 10),
                (heartbeat(), 40),
            ],
        );
        assert_eq!(
            release(&mut held, t0 + secs(10), &mut pending, true),
            [(2, "expired")]
        );
        let rest: Vec<u32> = held.drain().map(|call| call.caller).collect();
        assert_eq!(rest, [1, 3]);
    }

    /// A trigger's credit lets one CALL of its action out while Pending: the next waits.
    #[test]
    fn a_trigger_credit_releases_one_call() {
        let t0 = Instant::now();
        let mut pending = registration(t0, RegistrationStatus::Pending);
        pending.on_trigger_accepted(t0, "StatusNotification");
        let mut held = holding(
            t0,
            [(status_notification(), 30), (status_notification(), 30)],
        );
        assert_eq!(release(&mut held, t0, &mut pending, true), [(1, "send")]);
        assert_eq!(held.len(), 1);
    }

    /// A CALL the connection refused is not counted as sent: the credit stays.
    #[test]
    fn a_refused_call_keeps_the_credit() {
        let t0 = Instant::now();
        let mut pending = registration(t0, RegistrationStatus::Pending);
        pending.on_trigger_accepted(t0, "StatusNotification");
        let mut held = holding(t0, [(status_notification(), 30)]);
        assert_eq!(release(&mut held, t0, &mut pending, false), [(1, "send")]);
        assert!(held.is_empty());
        assert!(pending.may_send("StatusNotification"));
    }
}
