//! A station across its connections, in the Sans-IO shape: which central system each attempt
//! goes to, how long to wait after a failure, what each connection's registration sends and
//! in which order, what a BootNotification's answer and a connection's end mean for the
//! station and its [`Status`]. The parts are the ones this module's other files define
//! ([`Reconnect`], [`NetworkProfiles`], [`Registration`], [`HeldCalls`]); [`Lifecycle`] is the
//! one place that says how they work together, so that a driver only moves bytes and time.

use std::time::{Duration, Instant};

use ocpp_messages::Request;

use super::{
    answer_set_network_profile, boot_request, connection_boot_reason, heartbeat_request,
    requested_by_trigger, trigger_accepted, Attempt, BootAnswer, BootReason, Cause, Due, HeldCall,
    HeldCalls, NetworkProfiles, PermanentFailure, Reconnect, Registration, RetryBackOff,
    StationInfo, Status, DEFAULT_HEARTBEAT_INTERVAL,
};
use crate::{Answer, CallOutcome, CloseReason, OcppVersion};

/// What the driver puts on the connection now ([`Lifecycle::poll_transmit`]), in the order
/// the station sends: the registration's own CALL (a BootNotification, triggered or not, or a
/// Heartbeat) first, then the application's CALLs that the registration holds, in order. A
/// station's offline queue goes after these, once [`Lifecycle::may_send_queued`].
#[derive(Debug)]
pub enum Transmit<C> {
    /// The registration's own CALL: put it on the connection, then say
    /// [`on_call_sent`](Lifecycle::on_call_sent) or, refused by the connection,
    /// [`on_own_call_refused`](Lifecycle::on_own_call_refused). Nobody else waits for its
    /// outcome; it goes back to [`on_call_completed`](Lifecycle::on_call_completed).
    Own(Request),
    /// A held CALL the registration allows now: put it on the connection with its deadline,
    /// then say [`on_call_sent`](Lifecycle::on_call_sent) (refused by the connection, its
    /// caller learns why).
    Held(HeldCall<C>),
    /// A held CALL past its deadline: it was never sent (its caller learns
    /// [`CallFailure::DeadlinePassed`](crate::CallFailure::DeadlinePassed)).
    Expired(HeldCall<C>),
    /// Close the connection normally (close code 1000), for this reason: the application
    /// stops or reboots the station, the BootNotification went unanswered too often, or it is
    /// time to return to the first central system. Nothing else is transmitted after it.
    Close(&'static str),
}

/// What comes after a connection (or an attempt to open one) ended ([`Lifecycle::on_closed`],
/// [`Lifecycle::on_connect_failed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Connect again after this wait (the status is [`Status::Waiting`]).
    Reconnect(Duration),
    /// Connect again at once, to the first central system of the priority list: a reboot, or
    /// a return from a lower-priority one.
    ReconnectNow,
    /// Stop: the application stopped the station (`Ok`), or the central system refused it in
    /// a way retrying cannot cure (`Err`). The status is [`Status::Stopped`].
    Stop(Result<(), PermanentFailure>),
}

/// Why the station itself closes the current connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Leaving {
    /// The application stops the station.
    Stop,
    /// The application reboots the station.
    Reboot,
    /// Back to the first central system of the priority list.
    ReturnToFirst,
    /// The BootNotification failed too often on this connection.
    BootUnanswered { attempts: u32 },
}

impl Leaving {
    fn reason(self) -> &'static str {
        match self {
            Leaving::Stop => "station stopping",
            Leaving::Reboot => "reboot",
            Leaving::ReturnToFirst => "returning to the first central system",
            Leaving::BootUnanswered { .. } => "BootNotification unanswered",
        }
    }
}

/// One station's life across its connections, `C` being who waits for an application's
/// CALL (the driver's own type, as in [`HeldCalls`]).
///
/// A driver's loop: [`begin_attempt`](Self::begin_attempt) says which central system to
/// open; a failure to open is [`on_connect_failed`](Self::on_connect_failed). Once the
/// WebSocket is open, [`on_connected`](Self::on_connected); then, whenever something happened
/// and at [`poll_timeout`](Self::poll_timeout), [`poll_transmit`](Self::poll_transmit) until
/// `None`, then the offline queue's head if [`may_send_queued`](Self::may_send_queued); every
/// CALL the connection took is [`on_call_sent`](Self::on_call_sent), every outcome
/// [`on_call_completed`](Self::on_call_completed). The central system's CALLs go to
/// [`on_incoming`](Self::on_incoming) (the station may answer itself), the application's
/// answers to [`on_answered`](Self::on_answered). When the connection ended,
/// [`on_closed`](Self::on_closed) says what is next. [`status`](Self::status) is what to show
/// the application after each step.
///
/// ```
/// use std::time::{Duration, Instant};
/// use ocpp_proto::station::{Lifecycle, Next, RetryBackOff, StationInfo, Status, Transmit};
/// use ocpp_proto::station::NetworkProfiles;
/// use ocpp_proto::{v1_6, CloseCode, CloseReason, DateTime, OcppVersion, Response};
///
/// let t0 = Instant::now();
/// let info = StationInfo::new("ACME", "Wallbox One");
/// let profiles = NetworkProfiles::from_urls(["ws://csms.example/ocpp/CP001"]);
/// let mut station = Lifecycle::<&str>::new(info, RetryBackOff::default(), profiles);
///
/// let attempt = station.begin_attempt().expect("a central system to try");
/// assert_eq!(attempt.profile.csms_url, "ws://csms.example/ocpp/CP001");
/// assert_eq!(station.status(), Status::Connecting { attempt: 1 });
/// // ... TCP, TLS and the upgrade succeed: 1.6 is spoken.
/// station.on_connected(t0, OcppVersion::V1_6);
/// let Some(Transmit::Own(boot)) = station.poll_transmit(t0) else { panic!() };
/// assert_eq!(boot.action(), "BootNotification");
/// station.on_call_sent(t0, boot.action());
/// assert!(station.poll_transmit(t0).is_none());
///
/// // The central system accepts, with a heartbeat every 300 s.
/// let time = DateTime::from_unix_timestamp(1_780_000_000).unwrap();
/// let status = v1_6::RegistrationStatus::Accepted;
/// let answer = Response::from(v1_6::BootNotificationResponse::new(status, time, 300));
/// assert!(station.on_call_completed(t0, "BootNotification", &Ok(answer)));
/// assert_eq!(station.status(), Status::Accepted { version: OcppVersion::V1_6 });
/// assert!(station.may_send_queued());
/// assert_eq!(station.poll_timeout(), Some(t0 + Duration::from_secs(300)));
///
/// // The central system goes away: wait (3 s to 13 s by the default back-off, by the draw),
/// // then again.
/// let lost = CloseReason::Eof;
/// let Next::Reconnect(wait) = station.on_closed(t0 + Duration::from_secs(10), &lost, 0)
/// else { panic!() };
/// assert_eq!(wait, Duration::from_secs(3));
/// assert!(matches!(station.status(), Status::Waiting { .. }));
/// # let _ = CloseCode::NORMAL;
/// ```
#[derive(Debug)]
pub struct Lifecycle<C> {
    info: StationInfo,
    reconnect: Reconnect,
    profiles: NetworkProfiles,
    status: Status,
    /// The reason the next BootNotification gives, if not the default.
    boot_reason: Option<BootReason>,
    /// A BootNotification was accepted since the station started.
    booted_before: bool,
    /// How many BootNotifications may fail in a row on a connection, and the wait after one.
    boot_retries: (u32, Duration),
    /// The heartbeat interval in force (a registration's, or one set while not registered).
    heartbeat_interval: Duration,
    /// Whether a refusal that retrying cannot cure is retried all the same.
    retry_refusals: bool,
    /// The current connection's registration, once the WebSocket is open.
    registration: Option<Registration>,
    /// The application's CALLs the registration does not allow yet.
    held: HeldCalls<C>,
    /// The message a TriggerMessage being answered by the application asks for.
    answering_trigger: Option<&'static str>,
    /// Why the station closes the current connection, once it decided to.
    leaving: Option<Leaving>,
    /// Whether the close for `leaving` was handed out.
    close_sent: bool,
    /// Whether the station answers SetNetworkProfile itself, and with TLS (it can open
    /// `wss://`): [`answer_set_network_profile`](Self::answer_set_network_profile).
    answers_network_profile: Option<bool>,
}

impl<C> Lifecycle<C> {
    /// A station that has not connected yet: it boots with `info`, waits by `back_off` after a
    /// failure, and tries `profiles`' central systems in their priority order from the first
    /// (starting is a reboot, B10.FR.04).
    pub fn new(info: StationInfo, back_off: RetryBackOff, mut profiles: NetworkProfiles) -> Self {
        profiles.on_restart();
        Lifecycle {
            info,
            reconnect: Reconnect::new(back_off),
            profiles,
            status: Status::Connecting { attempt: 1 },
            boot_reason: None,
            booted_before: false,
            boot_retries: (super::DEFAULT_BOOT_ATTEMPTS, super::BOOT_RETRY_FALLBACK),
            heartbeat_interval: DEFAULT_HEARTBEAT_INTERVAL,
            retry_refusals: false,
            registration: None,
            held: HeldCalls::new(),
            answering_trigger: None,
            leaving: None,
            close_sent: false,
            answers_network_profile: None,
        }
    }

    // Settings.

    /// How many BootNotifications may fail in a row on a connection, and the wait after a
    /// failed one ([`Registration::set_boot_retries`]); from the next connection.
    pub fn set_boot_retries(&mut self, attempts: u32, interval: Duration) {
        self.boot_retries = (attempts, interval);
    }

    /// How long a connection must last after its accepted BootNotification to reset the
    /// back-off ([`Reconnect::set_min_lifetime`]).
    pub fn set_established_after(&mut self, lifetime: Duration) {
        self.reconnect.set_min_lifetime(lifetime);
    }

    /// Whether a refusal that retrying cannot cure ([`PermanentFailure`]) is retried all the
    /// same (by default it stops the station).
    pub fn set_retry_refusals(&mut self, retry: bool) {
        self.retry_refusals = retry;
    }

    /// The back-off from the next wait on.
    pub fn set_back_off(&mut self, back_off: RetryBackOff) {
        self.reconnect.set_policy(back_off);
    }

    /// The heartbeat interval (1.6 `HeartbeatInterval`, 2.x `OCPPCommCtrlr.HeartbeatInterval`)
    /// from `now`: the current registration's, or the next one's to start from. Zero
    /// disables heartbeats.
    pub fn set_heartbeat_interval(&mut self, now: Instant, interval: Duration) {
        match &mut self.registration {
            Some(registration) => {
                registration.set_heartbeat_interval(now, interval);
                self.heartbeat_interval = registration.heartbeat_interval();
            }
            None => self.heartbeat_interval = interval,
        }
    }

    /// Makes the station answer the central system's SetNetworkProfile itself (2.0.1 and
    /// 2.1, B09) by [`answer_set_network_profile`](super::answer_set_network_profile):
    /// [`on_incoming`](Self::on_incoming) validates the profile, has the driver's `keep` keep
    /// the changed profiles, and changes [`profiles`](Self::profiles) only when Accepted.
    /// `tls`: the station can open `wss://` central systems (without it, a `wss://` profile is
    /// Rejected). Without this, SetNetworkProfile is the application's to answer.
    pub fn answer_set_network_profile(&mut self, tls: bool) {
        self.answers_network_profile = Some(tls);
    }

    // Getters.

    /// Where the station stands, to show the application after each step.
    pub fn status(&self) -> Status {
        self.status
    }

    /// The heartbeat interval in force.
    pub fn heartbeat_interval(&self) -> Duration {
        self.heartbeat_interval
    }

    /// The central systems, and which one the station is connected to or tries.
    pub fn profiles(&self) -> &NetworkProfiles {
        &self.profiles
    }

    /// The central systems, to change (the application's or SetNetworkProfile's change).
    pub fn profiles_mut(&mut self) -> &mut NetworkProfiles {
        &mut self.profiles
    }

    /// The current connection's registration, once the WebSocket is open.
    pub fn registration(&self) -> Option<&Registration> {
        self.registration.as_ref()
    }

    /// Whether the application stopped the station ([`stop`](Self::stop)): its commands are
    /// not taken any more.
    pub fn is_stopping(&self) -> bool {
        self.leaving == Some(Leaving::Stop)
    }

    /// Whether the offline queue's head may go now: the registration is Accepted, and the
    /// station is not leaving the connection.
    pub fn may_send_queued(&self) -> bool {
        self.leaving.is_none() && self.registration.as_ref().is_some_and(|r| r.is_accepted())
    }

    // The central system's CALLs.

    /// The central system's CALL (the connection hands them out one at a time): what the
    /// station answers itself, refusals included ([`Registration::own_answer`]: e.g.
    /// SecurityError while not Accepted, a 2.x TriggerMessage(BootNotification) once Accepted,
    /// F06.FR.17), and, once [`answer_set_network_profile`](Self::answer_set_network_profile)
    /// was asked for, a SetNetworkProfile (the changed profiles handed to `keep` first, the
    /// application's persistence: its error answers Failed and changes nothing, B09.FR.03).
    /// `None`: the application answers it, and its answer goes to
    /// [`on_answered`](Self::on_answered).
    pub fn on_incoming(
        &mut self,
        request: &Request,
        keep: impl FnOnce(&NetworkProfiles) -> Result<(), String>,
    ) -> Option<Answer> {
        let registration = self.registration.as_ref()?;
        let answer = registration.own_answer(request).or_else(|| {
            let tls = self.answers_network_profile?;
            (request.action() == "SetNetworkProfile")
                .then(|| answer_set_network_profile(&mut self.profiles, request, tls, keep))
        });
        self.answering_trigger = match answer {
            None => requested_by_trigger(request),
            Some(_) => None,
        };
        answer
    }

    /// The application answered the CALL [`on_incoming`](Self::on_incoming) handed it, at `now`
    /// (before the answer is written). An accepted TriggerMessage is the registration's to
    /// honour: the message it asks for may go out once while Pending, and a BootNotification
    /// it asks for is due ([`Registration::on_trigger_accepted`]).
    pub fn on_answered(&mut self, now: Instant, answer: &Answer) {
        let Some(requested) = self.answering_trigger.take() else {
            return;
        };
        if let (true, Some(registration)) = (trigger_accepted(answer), &mut self.registration) {
            registration.on_trigger_accepted(now, requested);
        }
    }

    // Attempts.

    /// An attempt to connect begins: the central system to open (`None`: no profile at all,
    /// the driver keeps the address it has). The status is [`Status::Connecting`].
    pub fn begin_attempt(&mut self) -> Option<Attempt> {
        let attempt = self.reconnect.begin_attempt();
        self.status = Status::Connecting { attempt };
        self.leaving = None;
        self.close_sent = false;
        self.profiles.begin_attempt()
    }

    /// The attempt failed before the WebSocket was open (TCP, TLS, the upgrade request):
    /// wait before the next. `draw` is the caller's random number (uniform over `u64`), for
    /// the back-off's random part.
    pub fn on_connect_failed(&mut self, now: Instant, cause: Cause, draw: u64) -> Next {
        self.lost(now, cause, draw)
    }

    /// The WebSocket is open with `version`: the registration starts (a BootNotification is
    /// due now, with the heartbeat interval in force) and the status is
    /// [`Status::Registering`].
    pub fn on_connected(&mut self, now: Instant, version: OcppVersion) {
        let mut registration = Registration::new(now, version);
        let (attempts, interval) = self.boot_retries;
        registration.set_boot_retries(attempts, interval);
        // The interval in force goes on over a new connection: its boot's answer replaces it,
        // unless that says 0 (the station keeps its own).
        registration.set_heartbeat_interval(now, self.heartbeat_interval);
        self.registration = Some(registration);
        self.answering_trigger = None;
        self.status = Status::Registering {
            version,
            registration: None,
            boot_failures: 0,
        };
    }

    // The application's wishes.

    /// An application's CALL that is not a transaction message (those go through the
    /// offline queue): it waits until the registration allows it, or until `deadline`.
    pub fn hold(&mut self, request: Request, caller: C, deadline: Instant) {
        self.held.push(request, caller, deadline);
    }

    /// The application stops the station: the connection of this attempt is closed
    /// ([`Transmit::Close`]), and [`on_closed`](Self::on_closed) says [`Next::Stop`]. (With no
    /// attempt under way, the driver just stops.)
    pub fn stop(&mut self) {
        self.leave(Leaving::Stop);
    }

    /// The application reboots the station for `reason` (the next BootNotification's): the
    /// connection of this attempt is closed ([`Transmit::Close`]) and the next attempt goes at
    /// once to the first central system. Between attempts (while waiting out the back-off)
    /// only the reason is kept: [`begin_attempt`](Self::begin_attempt) starts afresh.
    pub fn reboot(&mut self, reason: BootReason) {
        self.boot_reason = Some(reason);
        self.leave(Leaving::Reboot);
    }

    // The connection.

    /// What to put on the connection now, one at a time, in order (see [`Transmit`]); `None`
    /// once nothing is due.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit<C>> {
        if let Some(leaving) = self.leaving {
            if self.close_sent {
                return None;
            }
            self.close_sent = true;
            return Some(Transmit::Close(leaving.reason()));
        }
        let registration = self.registration.as_mut()?;
        if registration.boot_given_up() {
            let attempts = registration.boot_failures();
            self.leave(Leaving::BootUnanswered { attempts });
            return self.poll_transmit(now);
        }
        let version = registration.version();
        let own = match registration.handle_timeout(now) {
            Some(Due::Boot) => {
                let reason = connection_boot_reason(self.boot_reason, self.booted_before);
                boot_request(version, &self.info, reason)
            }
            Some(Due::TriggeredBoot) => boot_request(version, &self.info, BootReason::Triggered),
            Some(Due::Heartbeat) => heartbeat_request(version),
            None => None,
        };
        if let Some(request) = own {
            return Some(Transmit::Own(request));
        }
        Some(match self.held.next_release(now, registration)? {
            super::Release::Expired(call) => Transmit::Expired(call),
            super::Release::Send(call) => Transmit::Held(call),
        })
    }

    /// The connection took a CALL of `action` at `now` (own, held or queued): the registration
    /// hears it ([`Registration::on_call_sent`]).
    pub fn on_call_sent(&mut self, now: Instant, action: &str) {
        if let Some(registration) = &mut self.registration {
            registration.on_call_sent(now, action);
        }
    }

    /// The connection refused the registration's own CALL of `action` ([`Transmit::Own`]): a
    /// BootNotification counts as failed.
    pub fn on_own_call_refused(&mut self, now: Instant, action: &str) {
        if action == "BootNotification" {
            self.on_boot_failed(now);
        }
    }

    /// One of the station's CALLs (of `action`, whoever made it) came to `outcome`: a
    /// BootNotification's answer or failure is the registration's, and moves the status. Returns
    /// whether the station became Accepted by it (the offline queue's transaction messages take
    /// the connection's version then).
    pub fn on_call_completed(&mut self, now: Instant, action: &str, outcome: &CallOutcome) -> bool {
        if action != "BootNotification" {
            return false;
        }
        let Some(registration) = &mut self.registration else {
            return false;
        };
        let Some(answer) = outcome.as_ref().ok().and_then(BootAnswer::from_response) else {
            self.on_boot_failed(now);
            return false;
        };
        registration.on_boot_answer(now, &answer);
        self.heartbeat_interval = registration.heartbeat_interval();
        let version = registration.version();
        if answer.status != super::RegistrationStatus::Accepted {
            self.status = Status::Registering {
                version,
                registration: Some(answer.status),
                boot_failures: 0,
            };
            return false;
        }
        self.booted_before = true;
        self.boot_reason = None;
        self.reconnect.on_accepted(now);
        self.profiles.on_accepted(now);
        self.status = Status::Accepted { version };
        true
    }

    /// The station's next deadline (then [`poll_transmit`](Self::poll_transmit) again): the
    /// registration's, a held CALL's, the return to the first central system.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let registration = self.registration.as_ref()?;
        if self.leaving.is_some() {
            return None;
        }
        [
            registration.poll_timeout(),
            self.held.poll_timeout(),
            self.profiles.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The time has come ([`poll_timeout`](Self::poll_timeout)): whether to return to the first
    /// central system now (then [`poll_transmit`](Self::poll_transmit) hands out the close).
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.registration.is_some()
            && self.leaving.is_none()
            && self.profiles.handle_timeout(now)
        {
            self.leave(Leaving::ReturnToFirst);
        }
    }

    /// The connection ended for `reason` at `now`: the registration ends with it, and the
    /// held CALLs are [`drain_held`](Self::drain_held)'s. What is next: stop, connect again at
    /// once, or after the back-off (`draw`, the caller's random number, uniform over `u64`,
    /// for its random part).
    pub fn on_closed(&mut self, now: Instant, reason: &CloseReason, draw: u64) -> Next {
        self.registration = None;
        match self.leaving.take() {
            Some(Leaving::Stop) => {
                self.status = Status::Stopped;
                Next::Stop(Ok(()))
            }
            Some(Leaving::Reboot | Leaving::ReturnToFirst) => {
                self.reconnect.on_restart(now);
                self.profiles.on_restart();
                Next::ReconnectNow
            }
            Some(Leaving::BootUnanswered { attempts }) => {
                self.lost(now, Cause::BootUnanswered { attempts }, draw)
            }
            None => match PermanentFailure::of(reason) {
                Some(failure) if !self.retry_refusals => {
                    self.status = Status::Stopped;
                    Next::Stop(Err(failure))
                }
                _ => self.lost(now, Cause::of(reason), draw),
            },
        }
    }

    /// The CALLs still held when the connection ended, in order: none was sent.
    pub fn drain_held(&mut self) -> impl Iterator<Item = HeldCall<C>> + '_ {
        self.held.drain()
    }

    /// The station stopped for good (the status is [`Status::Stopped`]).
    pub fn on_stopped(&mut self) {
        self.status = Status::Stopped;
    }

    fn leave(&mut self, leaving: Leaving) {
        // A stop outranks a reboot decided before it; otherwise the first reason stands.
        if self.leaving.is_none() || leaving == Leaving::Stop {
            self.leaving = Some(leaving);
        }
    }

    fn on_boot_failed(&mut self, now: Instant) {
        let Some(registration) = &mut self.registration else {
            return;
        };
        registration.on_boot_failed(now);
        if !registration.is_accepted() {
            self.status = Status::Registering {
                version: registration.version(),
                registration: registration.status(),
                boot_failures: registration.boot_failures(),
            };
        }
    }

    fn lost(&mut self, now: Instant, cause: Cause, draw: u64) -> Next {
        self.profiles.on_lost(now);
        // The draw's top 53 bits, as a fraction in [0, 1).
        let unit = (draw >> 11) as f64 / (1u64 << 53) as f64;
        let wait = self.reconnect.on_lost(now, unit);
        self.status = Status::Waiting { wait, cause };
        Next::Reconnect(wait)
    }
}

#[cfg(test)]
mod tests;
