//! One connection's registration: BootNotification until the CSMS accepts the station, the
//! heartbeat after, and what either side may send meanwhile.
//!
//! Sources: OCPP 1.6 §4.2 (BootNotification) and §4.6 (Heartbeat); OCPP 2.0.1 and 2.1 B01
//! (cold boot), B02 (Pending), B03 (Rejected) and G02 (Heartbeat).

use std::time::{Duration, Instant};

use ocpp_messages::{DecodeOptions, ErrorCode, OcppVersion, Request, Response};

use super::{BootAnswer, RegistrationStatus};
use crate::{Answer, ErrorAnswer};

/// The wait before the next BootNotification when the CSMS gave no interval (0) with Pending or
/// Rejected, and after a BootNotification that failed (CALLERROR, timeout, lost connection).
/// 2.0.1 B03.FR.05 asks the station to choose a wait in that case; 1.6 §4.2 asks it not to
/// flood the CSMS.
pub const BOOT_RETRY_FALLBACK: Duration = Duration::from_secs(30);

/// How many BootNotifications in a row may fail (no answer in time, a CALLERROR, an answer that
/// does not decode) on one connection before the registration gives the connection up
/// ([`Registration::boot_given_up`]): the driver then closes it and reconnects after its
/// back-off, so that a central system that never answers is not waited for forever.
pub const DEFAULT_BOOT_ATTEMPTS: u32 = 3;

/// The heartbeat interval of a station until the CSMS sets one (a BootNotification accepted with
/// a positive interval, or a HeartbeatInterval change).
pub const DEFAULT_HEARTBEAT_INTERVAL: Duration = Duration::from_secs(60);

/// How many trigger credits ([`Registration::on_trigger_accepted`]) a connection keeps at most;
/// more are ignored, so that a CSMS that triggers in a loop cannot grow the station's memory.
pub const MAX_TRIGGER_CREDITS: usize = 64;

/// What the driver must send now ([`Registration::handle_timeout`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    /// A BootNotification ([`boot_request`](super::boot_request)); it is in flight from now on
    /// until [`Registration::on_boot_answer`] or [`Registration::on_boot_failed`].
    Boot,
    /// A Heartbeat ([`heartbeat_request`](super::heartbeat_request)).
    Heartbeat,
    /// A BootNotification that a TriggerMessage of the CSMS asked for
    /// ([`on_trigger_accepted`](Registration::on_trigger_accepted)), with the reason
    /// [`BootReason::Triggered`](super::BootReason::Triggered): in flight from now on, as
    /// [`Due::Boot`]. Its answer is the registration's like any other's. A 1.6 station may be
    /// asked to boot again once Accepted (§5.17); a 2.x one refuses that trigger
    /// ([`Registration::own_answer`], F06.FR.17).
    TriggeredBoot,
}

/// The registration state of one connection of a station, in the Sans-IO shape: the driver
/// passes the time in, asks [`poll_timeout`](Self::poll_timeout) when to wake up, and calls
/// [`handle_timeout`](Self::handle_timeout) then to learn what is [`Due`].
///
/// - A new connection owes a BootNotification at once. Until the first answer the station sends
///   nothing else (1.6 §4.2, 2.0.1 B01).
/// - Accepted: the station sends anything and heartbeats at the interval. On 2.0.1 and 2.1 any
///   CALL counts as a sign of life and pushes the next heartbeat back (G02 lets the station skip
///   a heartbeat when other messages went out within the interval); on 1.6 the heartbeat goes
///   out at the interval regardless.
/// - Pending: the station boots again after the interval and meanwhile sends only what the CSMS
///   triggers (1.6 §4.2, 2.0.1 B02); the CSMS may ask anything but to start or stop a
///   transaction.
/// - Rejected: the station boots again after the interval and sends nothing else; it refuses
///   every CALL of the CSMS (2.0.1 B03).
///
/// ```
/// use std::time::{Duration, Instant};
/// use ocpp_proto::station::{BootAnswer, Due, Registration, RegistrationStatus};
/// use ocpp_proto::{v2_0_1, DateTime, OcppVersion, Response};
///
/// let start = Instant::now();
/// let mut registration = Registration::new(start, OcppVersion::V2_0_1);
/// assert_eq!(registration.handle_timeout(start), Some(Due::Boot));
/// assert!(!registration.may_send("StatusNotification"));
///
/// // The CSMS accepts with a 300 s heartbeat interval.
/// let time = DateTime::from_unix_timestamp(1_780_000_000).unwrap();
/// let status = v2_0_1::RegistrationStatusEnum::Accepted;
/// let response = Response::from(v2_0_1::BootNotificationResponse::new(time, 300, status));
/// let answer = BootAnswer::from_response(&response).unwrap();
/// registration.on_boot_answer(start, &answer);
/// assert_eq!(registration.status(), Some(RegistrationStatus::Accepted));
/// assert!(registration.may_send("StatusNotification"));
/// assert_eq!(registration.poll_timeout(), Some(start + Duration::from_secs(300)));
/// let later = start + Duration::from_secs(300);
/// assert_eq!(registration.handle_timeout(later), Some(Due::Heartbeat));
/// ```
#[derive(Debug, Clone)]
pub struct Registration {
    version: OcppVersion,
    /// The last answer's status; `None` until the first answer.
    status: Option<RegistrationStatus>,
    /// A BootNotification went out and awaits its answer.
    boot_in_flight: bool,
    /// When the next BootNotification is due (not accepted, none in flight).
    next_boot: Option<Instant>,
    /// The heartbeat interval; zero disables heartbeats.
    heartbeat_interval: Duration,
    /// When the next Heartbeat is due (accepted and heartbeats enabled).
    next_heartbeat: Option<Instant>,
    /// One action name per accepted TriggerMessage not yet sent.
    credits: Vec<&'static str>,
    /// A TriggerMessage(BootNotification) was accepted: from when its boot is due (it waits
    /// for the BootNotification in flight, if any).
    triggered_boot: Option<Instant>,
    /// BootNotifications that failed in a row on this connection.
    boot_failures: u32,
    /// How many may fail before the connection is given up (at least 1).
    boot_attempts: u32,
    /// The wait before the next BootNotification after a failed one.
    boot_retry_interval: Duration,
}

impl Registration {
    /// A new connection: a BootNotification is due now. The heartbeat interval starts at
    /// [`DEFAULT_HEARTBEAT_INTERVAL`].
    pub fn new(now: Instant, version: OcppVersion) -> Self {
        Registration {
            version,
            status: None,
            boot_in_flight: false,
            next_boot: Some(now),
            heartbeat_interval: DEFAULT_HEARTBEAT_INTERVAL,
            next_heartbeat: None,
            credits: Vec::new(),
            triggered_boot: None,
            boot_failures: 0,
            boot_attempts: DEFAULT_BOOT_ATTEMPTS,
            boot_retry_interval: BOOT_RETRY_FALLBACK,
        }
    }

    // Getters.

    /// The connection's OCPP version.
    pub fn version(&self) -> OcppVersion {
        self.version
    }

    /// The last BootNotification answer's status; `None` until the first answer.
    pub fn status(&self) -> Option<RegistrationStatus> {
        self.status
    }

    /// Whether the CSMS accepted the station.
    pub fn is_accepted(&self) -> bool {
        self.status == Some(RegistrationStatus::Accepted)
    }

    /// The heartbeat interval in force (zero: heartbeats disabled).
    pub fn heartbeat_interval(&self) -> Duration {
        self.heartbeat_interval
    }

    /// BootNotifications that failed in a row on this connection (no answer in time, a
    /// CALLERROR, an answer that does not decode); an answer sets it back to 0.
    pub fn boot_failures(&self) -> u32 {
        self.boot_failures
    }

    /// Whether the BootNotification failed as many times in a row as allowed
    /// ([`set_boot_retries`](Self::set_boot_retries), [`DEFAULT_BOOT_ATTEMPTS`] by default)
    /// without the station being accepted: no BootNotification is due any more, and the driver
    /// closes the connection and reconnects after its back-off.
    pub fn boot_given_up(&self) -> bool {
        !self.is_accepted() && self.boot_failures >= self.boot_attempts
    }

    /// When to call [`handle_timeout`](Self::handle_timeout) next: the next BootNotification
    /// (`None` while one is in flight) until the station is accepted, the next Heartbeat after
    /// (`None` when heartbeats are disabled), and a triggered BootNotification when none is in
    /// flight.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let registration = if self.is_accepted() {
            self.next_heartbeat
        } else if self.boot_in_flight {
            None
        } else {
            self.next_boot
        };
        let triggered = self.triggered_boot.filter(|_| !self.boot_in_flight);
        registration.into_iter().chain(triggered).min()
    }

    /// Whether the station may send a CALL of `action` now (OCPP 1.6 §4.2, 2.0.1 B01-B03):
    ///
    /// - Accepted: everything.
    /// - Before the first answer, and Rejected: only BootNotification (when it is due: see
    ///   [`handle_timeout`](Self::handle_timeout); this method does not know the time).
    /// - Pending: BootNotification, and a message the CSMS asked for with a TriggerMessage the
    ///   station accepted ([`on_trigger_accepted`](Self::on_trigger_accepted)). On 2.0.1 and
    ///   2.1 also NotifyReport, which a station only sends for a GetBaseReport or GetReport of
    ///   the CSMS (B02.FR.09 lists those with TriggerMessage; a report may take several
    ///   NotifyReport messages, so it is not counted in credits).
    pub fn may_send(&self, action: &str) -> bool {
        match self.status {
            Some(RegistrationStatus::Accepted) => true,
            Some(RegistrationStatus::Pending) => {
                action == "BootNotification"
                    || (self.version.is_2x() && action == "NotifyReport")
                    || self.credits.contains(&action)
            }
            // Rejected, and a status a later model may add: the reading that lets the station
            // send least.
            None | Some(_) => action == "BootNotification",
        }
    }

    /// Whether the station serves a CALL of `action` from the CSMS now, or the CALLERROR
    /// `SecurityError` to answer it with:
    ///
    /// - Accepted: every CALL.
    /// - Before the first answer, and Pending: every CALL but 1.6 RemoteStartTransaction and
    ///   RemoteStopTransaction (1.6 §4.2: "while in pending state, the following Central System
    ///   initiated messages are not allowed"), and 2.x RequestStartTransaction and
    ///   RequestStopTransaction (2.0.1 and 2.1 B02: the CSMS may only inspect and configure a
    ///   Pending station). Neither version names the error code; `SecurityError` is the one
    ///   2.0.1 B02.FR.09 and B03.FR.07 use for the mirror case (a Pending or Rejected station
    ///   that sends what it may not).
    /// - Rejected: no CALL (2.0.1 B03: the CSMS does not initiate messages, and a station
    ///   answers one with `SecurityError`). OCPP 1.6 §4.2 says a rejected charge point does not
    ///   respond at all; answering `SecurityError` instead frees the CSMS's CALL slot at once
    ///   rather than after its timeout.
    pub fn check_incoming(&self, action: &str) -> Result<(), ErrorAnswer> {
        match self.status {
            Some(RegistrationStatus::Accepted) => Ok(()),
            None | Some(RegistrationStatus::Pending) => {
                let refused = match self.version {
                    OcppVersion::V1_6 => {
                        matches!(action, "RemoteStartTransaction" | "RemoteStopTransaction")
                    }
                    OcppVersion::V2_0_1 | OcppVersion::V2_1 => {
                        matches!(action, "RequestStartTransaction" | "RequestStopTransaction")
                    }
                };
                if refused {
                    Err(ErrorAnswer::new(
                        ErrorCode::SecurityError,
                        format!("{action} is not allowed before the charging station is accepted"),
                    ))
                } else {
                    Ok(())
                }
            }
            // Rejected, and a status a later model may add: as Rejected.
            Some(_) => Err(ErrorAnswer::new(
                ErrorCode::SecurityError,
                "the charging station is not accepted by the CSMS (BootNotification Rejected)",
            )),
        }
    }

    /// The answer the registration gives a CALL of the CSMS itself, before the application
    /// sees it; `None` when the application answers. Two cases:
    ///
    /// - a CALL the registration does not serve now: the CALLERROR of
    ///   [`check_incoming`](Self::check_incoming);
    /// - on 2.0.1 and 2.1, a TriggerMessage for a BootNotification while Accepted: `Rejected`
    ///   (F06.FR.17), with the reason code `AlreadyAccepted`. 1.6 lets the station boot again
    ///   on request (§5.17), so there the application's answer stands.
    ///
    /// ```
    /// use std::time::Instant;
    /// use ocpp_messages::DecodeOptions;
    /// use ocpp_proto::station::{BootAnswer, Registration};
    /// use ocpp_proto::{v2_0_1, Answer, DateTime, OcppVersion, Request, Response};
    ///
    /// let t0 = Instant::now();
    /// let mut registration = Registration::new(t0, OcppVersion::V2_0_1);
    /// let payload = r#"{"requestedMessage":"BootNotification"}"#;
    /// let trigger = Request::decode(OcppVersion::V2_0_1, "TriggerMessage", payload, &DecodeOptions::strict()).unwrap();
    /// // Not accepted yet: the application answers.
    /// assert!(registration.own_answer(&trigger).is_none());
    /// let time = DateTime::from_unix_timestamp(1_780_000_000).unwrap();
    /// let accepted = v2_0_1::BootNotificationResponse::new(time, 300, v2_0_1::RegistrationStatusEnum::Accepted);
    /// registration.on_boot_answer(t0, &BootAnswer::from_response(&Response::from(accepted)).unwrap());
    /// let Some(Answer::Result(response)) = registration.own_answer(&trigger) else { panic!() };
    /// assert_eq!(serde_json::to_value(&response).unwrap()["status"], "Rejected");
    /// ```
    pub fn own_answer(&self, request: &Request) -> Option<Answer> {
        if let Err(refusal) = self.check_incoming(request.action()) {
            return Some(Answer::Error(refusal));
        }
        if !self.is_accepted()
            || !self.version.is_2x()
            || requested_by_trigger(request) != Some("BootNotification")
        {
            return None;
        }
        let rejected = r#"{"status":"Rejected","statusInfo":{"reasonCode":"AlreadyAccepted"}}"#;
        let options = DecodeOptions::strict();
        Some(
            match Response::decode(self.version, "TriggerMessage", rejected, &options) {
                Ok(response) => Answer::Result(response),
                Err(error) => Answer::error(ErrorCode::InternalError, error.to_string()),
            },
        )
    }

    // handle_*.

    /// The time has come ([`poll_timeout`](Self::poll_timeout)): what to send now, if anything.
    /// [`Due::Boot`] and [`Due::TriggeredBoot`] mark the BootNotification as in flight (a
    /// triggered one goes first, once none is in flight); [`Due::Heartbeat`] schedules the
    /// next one an interval from `now` (sending it, [`on_call_sent`](Self::on_call_sent),
    /// schedules it again from the time it went out).
    pub fn handle_timeout(&mut self, now: Instant) -> Option<Due> {
        if !self.boot_in_flight && self.triggered_boot.is_some_and(|at| at <= now) {
            self.triggered_boot = None;
            self.boot_in_flight = true;
            if !self.is_accepted() {
                self.next_boot = None;
            }
            return Some(Due::TriggeredBoot);
        }
        if self.is_accepted() {
            if self.next_heartbeat.is_none_or(|at| at > now) {
                return None;
            }
            self.next_heartbeat = now.checked_add(self.heartbeat_interval);
            return Some(Due::Heartbeat);
        }
        if self.boot_in_flight {
            return None;
        }
        match self.next_boot {
            Some(at) if at <= now => {
                self.boot_in_flight = true;
                self.next_boot = None;
                Some(Due::Boot)
            }
            _ => None,
        }
    }

    /// The CSMS answered a BootNotification (OCPP 1.6 §4.2, 2.0.1 B01-B03):
    ///
    /// - Accepted: the interval becomes the heartbeat interval and the first heartbeat is due an
    ///   interval from `now`. An interval of 0 keeps the interval in force
    ///   ([`DEFAULT_HEARTBEAT_INTERVAL`] unless [`set_heartbeat_interval`](Self::set_heartbeat_interval)
    ///   changed it): a CSMS that means "no heartbeats" disables them through the
    ///   HeartbeatInterval setting. Trigger credits are dropped (everything may be sent now).
    /// - Pending or Rejected: the next BootNotification is due an interval from `now`
    ///   ([`BOOT_RETRY_FALLBACK`] when the interval is 0); heartbeats stop.
    pub fn on_boot_answer(&mut self, now: Instant, answer: &BootAnswer) {
        self.boot_in_flight = false;
        self.boot_failures = 0;
        self.status = Some(answer.status);
        match answer.status {
            RegistrationStatus::Accepted => {
                if answer.interval_s != 0 {
                    self.heartbeat_interval = answer.interval();
                }
                self.next_boot = None;
                self.credits.clear();
                self.schedule_heartbeat(now);
            }
            // Pending, Rejected, and a status a later model may add.
            _ => {
                let wait = if answer.interval_s == 0 {
                    BOOT_RETRY_FALLBACK
                } else {
                    answer.interval()
                };
                self.next_boot = Some(now.checked_add(wait).unwrap_or(now));
                self.next_heartbeat = None;
            }
        }
    }

    /// The BootNotification in flight failed (CALLERROR, no answer in time, connection lost
    /// with it): the next one is due the retry interval from `now` ([`BOOT_RETRY_FALLBACK`]
    /// unless [`set_boot_retries`](Self::set_boot_retries) changed it), unless it was the last
    /// attempt allowed ([`boot_given_up`](Self::boot_given_up)). Once accepted (a triggered
    /// BootNotification failed), nothing is retried: the registration stands.
    pub fn on_boot_failed(&mut self, now: Instant) {
        self.boot_in_flight = false;
        if self.is_accepted() {
            return;
        }
        self.boot_failures = self.boot_failures.saturating_add(1);
        self.next_boot = if self.boot_given_up() {
            None
        } else {
            Some(now.checked_add(self.boot_retry_interval).unwrap_or(now))
        };
    }

    // Mutators.

    /// How many BootNotifications may fail in a row on this connection (at least 1) and the
    /// wait before the next one after a failure (the default: [`DEFAULT_BOOT_ATTEMPTS`] and
    /// [`BOOT_RETRY_FALLBACK`]). Neither 1.6 nor 2.x fixes these; both ask the station to retry
    /// without flooding the central system.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use ocpp_proto::station::{Due, Registration};
    /// use ocpp_proto::OcppVersion;
    ///
    /// let t0 = Instant::now();
    /// let mut registration = Registration::new(t0, OcppVersion::V1_6);
    /// registration.set_boot_retries(2, Duration::from_secs(5));
    /// assert_eq!(registration.handle_timeout(t0), Some(Due::Boot));
    /// registration.on_boot_failed(t0 + Duration::from_secs(30)); // no answer in time
    /// assert_eq!(registration.poll_timeout(), Some(t0 + Duration::from_secs(35)));
    /// assert_eq!(registration.handle_timeout(t0 + Duration::from_secs(35)), Some(Due::Boot));
    /// registration.on_boot_failed(t0 + Duration::from_secs(65));
    /// assert!(registration.boot_given_up());
    /// assert_eq!(registration.poll_timeout(), None);
    /// ```
    pub fn set_boot_retries(&mut self, attempts: u32, interval: Duration) {
        self.boot_attempts = attempts.max(1);
        self.boot_retry_interval = interval;
    }

    /// The station sent a CALL of `action` at `now`:
    ///
    /// - BootNotification: it is in flight (also one sent outside
    ///   [`handle_timeout`](Self::handle_timeout), e.g. the application's own), and it answers
    ///   a TriggerMessage(BootNotification) accepted before: no triggered one is due any more.
    /// - Not accepted: a trigger credit for `action` is used up.
    /// - Accepted, 2.0.1 and 2.1: any CALL pushes the next heartbeat to `now` plus the interval
    ///   (G02: a station may skip a heartbeat when other messages went out within the interval).
    ///   1.6: only a Heartbeat does; the heartbeat goes out at the interval whatever else is
    ///   sent (1.6 §4.6 leaves the skip to 2.x).
    pub fn on_call_sent(&mut self, now: Instant, action: &str) {
        if action == "BootNotification" {
            self.boot_in_flight = true;
            self.triggered_boot = None;
            if !self.is_accepted() {
                self.next_boot = None;
            }
        }
        if !self.is_accepted() {
            if let Some(at) = self.credits.iter().position(|credit| *credit == action) {
                self.credits.remove(at);
            }
            return;
        }
        if self.version.is_2x() || action == "Heartbeat" {
            self.schedule_heartbeat(now);
        }
    }

    /// The CSMS changed the heartbeat interval (1.6 ChangeConfiguration `HeartbeatInterval`,
    /// 2.x SetVariables `OCPPCommCtrlr.HeartbeatInterval`): the next heartbeat is due an
    /// interval from `now`. Zero disables heartbeats.
    pub fn set_heartbeat_interval(&mut self, now: Instant, interval: Duration) {
        self.heartbeat_interval = interval;
        if self.is_accepted() {
            self.schedule_heartbeat(now);
        }
    }

    /// The station accepted a TriggerMessage (1.6 TriggerMessage or ExtendedTriggerMessage,
    /// 2.x TriggerMessage) for `requested` at `now`: one CALL of that message may go out while
    /// Pending ([`may_send`](Self::may_send)), used up by [`on_call_sent`](Self::on_call_sent).
    /// A BootNotification is the registration's own to send: it is due at once
    /// ([`Due::TriggeredBoot`], whatever the status), after the one in flight if any.
    ///
    /// `requested` is the trigger's `requestedMessage` value, mapped by [`triggered_action`]
    /// (`SignChargingStationCertificate` allows a `SignCertificate`), or an action name the
    /// station sends in answer to the trigger (e.g. `SignedFirmwareStatusNotification` for a
    /// 1.6 station with signed firmware). Call it once per message the trigger asks for: a 2.x
    /// StatusNotification trigger without an EVSE allows one StatusNotification per connector.
    /// A name that is neither is ignored, as are credits beyond [`MAX_TRIGGER_CREDITS`].
    ///
    /// ```
    /// use std::time::Instant;
    /// use ocpp_proto::station::{Due, Registration};
    /// use ocpp_proto::OcppVersion;
    ///
    /// let t0 = Instant::now();
    /// let mut registration = Registration::new(t0, OcppVersion::V2_0_1);
    /// assert_eq!(registration.handle_timeout(t0), Some(Due::Boot));
    /// // The CSMS triggers a boot while the first is in flight: it waits for that one's answer.
    /// registration.on_trigger_accepted(t0, "BootNotification");
    /// assert_eq!(registration.handle_timeout(t0), None);
    /// registration.on_boot_failed(t0);
    /// assert_eq!(registration.handle_timeout(t0), Some(Due::TriggeredBoot));
    /// ```
    pub fn on_trigger_accepted(&mut self, now: Instant, requested: &str) {
        let action = triggered_action(self.version, requested)
            .or_else(|| station_action(self.version, requested));
        match action {
            Some("BootNotification") => {
                self.triggered_boot.get_or_insert(now);
            }
            Some(action) if self.credits.len() < MAX_TRIGGER_CREDITS => self.credits.push(action),
            _ => {}
        }
    }

    /// Next heartbeat an interval from `now` (none when disabled).
    fn schedule_heartbeat(&mut self, now: Instant) {
        self.next_heartbeat = if self.heartbeat_interval.is_zero() {
            None
        } else {
            now.checked_add(self.heartbeat_interval)
        };
    }
}

/// The action a TriggerMessage's `requestedMessage` value asks the station to send, for
/// `version`; `None` for a value the version does not list (and for 2.1 `CustomTrigger`, which
/// names no action).
///
/// - 1.6 TriggerMessage (`BootNotification`, `DiagnosticsStatusNotification`,
///   `FirmwareStatusNotification`, `Heartbeat`, `MeterValues`, `StatusNotification`) and
///   ExtendedTriggerMessage of the security whitepaper (adds `LogStatusNotification`, and
///   `SignChargePointCertificate` for a `SignCertificate`).
/// - 2.0.1 and 2.1 `MessageTriggerEnumType`: the same names, plus `TransactionEvent`,
///   `PublishFirmwareStatusNotification`, and the certificate triggers
///   `SignChargingStationCertificate`, `SignV2GCertificate`, `SignCombinedCertificate` (2.1 also
///   `SignV2G20Certificate`), all for a `SignCertificate`.
///
/// ```
/// use ocpp_proto::station::triggered_action;
/// use ocpp_proto::OcppVersion;
///
/// let v201 = OcppVersion::V2_0_1;
/// assert_eq!(triggered_action(v201, "SignV2GCertificate"), Some("SignCertificate"));
/// assert_eq!(triggered_action(OcppVersion::V1_6, "MeterValues"), Some("MeterValues"));
/// assert_eq!(triggered_action(OcppVersion::V1_6, "TransactionEvent"), None);
/// ```
pub fn triggered_action(version: OcppVersion, requested_message: &str) -> Option<&'static str> {
    let common = match requested_message {
        "BootNotification" => Some("BootNotification"),
        "FirmwareStatusNotification" => Some("FirmwareStatusNotification"),
        "Heartbeat" => Some("Heartbeat"),
        "MeterValues" => Some("MeterValues"),
        "StatusNotification" => Some("StatusNotification"),
        "LogStatusNotification" => Some("LogStatusNotification"),
        _ => None,
    };
    if common.is_some() {
        return common;
    }
    match (version, requested_message) {
        (OcppVersion::V1_6, "DiagnosticsStatusNotification") => {
            Some("DiagnosticsStatusNotification")
        }
        (OcppVersion::V1_6, "SignChargePointCertificate") => Some("SignCertificate"),
        (OcppVersion::V2_0_1 | OcppVersion::V2_1, "TransactionEvent") => Some("TransactionEvent"),
        (OcppVersion::V2_0_1 | OcppVersion::V2_1, "PublishFirmwareStatusNotification") => {
            Some("PublishFirmwareStatusNotification")
        }
        (
            OcppVersion::V2_0_1 | OcppVersion::V2_1,
            "SignChargingStationCertificate" | "SignV2GCertificate" | "SignCombinedCertificate",
        ) => Some("SignCertificate"),
        (OcppVersion::V2_1, "SignV2G20Certificate") => Some("SignCertificate"),
        _ => None,
    }
}

/// The message a TriggerMessage of the CSMS asks the station for (its `requestedMessage`), as
/// the action the station sends for it ([`triggered_action`]); `None` for any other CALL. Kept
/// from the CALL until its answer: an accepted trigger is a credit
/// ([`Registration::on_trigger_accepted`], with [`trigger_accepted`]).
///
/// ```
/// use ocpp_messages::{DecodeOptions, OcppVersion, Request};
/// use ocpp_proto::station::requested_by_trigger;
///
/// let payload = r#"{"requestedMessage":"StatusNotification"}"#;
/// let options = DecodeOptions::strict();
/// let trigger = Request::decode(OcppVersion::V1_6, "TriggerMessage", payload, &options).unwrap();
/// assert_eq!(requested_by_trigger(&trigger), Some("StatusNotification"));
/// ```
pub fn requested_by_trigger(request: &Request) -> Option<&'static str> {
    if request.action() != "TriggerMessage" {
        return None;
    }
    let payload = serde_json::to_value(request).ok()?;
    let requested = payload.get("requestedMessage")?.as_str()?;
    triggered_action(request.version(), requested)
}

/// Whether the station's answer to a TriggerMessage accepts it: a CALLRESULT whose `status`
/// is `Accepted` (1.6 and 2.x alike). Only then may the requested message go out while the
/// registration is Pending; a refusal, `NotImplemented` or a CALLERROR gives no credit.
pub fn trigger_accepted(answer: &Answer) -> bool {
    let Answer::Result(response) = answer else {
        return false;
    };
    let response: &Response = response;
    serde_json::to_value(response)
        .ok()
        .and_then(|v| {
            v.get("status")
                .and_then(|s| s.as_str())
                .map(|s| s == "Accepted")
        })
        .unwrap_or(false)
}

/// The actions a station may send in answer to a trigger besides those [`triggered_action`]
/// names (their own names), as `'static` strings.
fn station_action(version: OcppVersion, action: &str) -> Option<&'static str> {
    match (version, action) {
        (_, "SignCertificate") => Some("SignCertificate"),
        (OcppVersion::V1_6, "SignedFirmwareStatusNotification") => {
            Some("SignedFirmwareStatusNotification")
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests;
