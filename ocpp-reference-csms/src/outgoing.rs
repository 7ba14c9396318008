//! The CALLs the CSMS sends and what their outcomes settle: an admin command noted before it
//! goes out, the follow-up CALLs queued behind an answer, and the records (a charging
//! profile, a certificate, a proposed Basic password) that a result, an error, a timeout or a
//! CALL never sent settles.

use std::sync::atomic::{AtomicUsize, Ordering};

use ocpp_proto::{CallFailure, CallOutcome, ChargePointIdentity, Request};

use crate::{smart_charging, ChargePointRecord, ChargingProfileRecord, Csms, Record, UnixTime};

impl Csms {
    /// An admin command is about to go to `identity`: a SetVariables of
    /// `SecurityCtrlr.BasicAuthPassword` (2.x, A01) or a ChangeConfiguration of
    /// `AuthorizationKey` (1.6 security whitepaper) proposes a new Basic password, which
    /// replaces the old one when the charge point accepts it ([`Csms::on_call_completed`])
    /// and counts from its next connection on. The 1.6 value is taken as the password text
    /// as sent (no hex decoding). Without `--basic-auth` there is nothing to change.
    ///
    /// The proposal is settled by the next SetVariables / ChangeConfiguration answer of that
    /// charge point: with several such commands in flight at once, the first answer settles
    /// it. (Pairing them exactly needs the I/O loop to hand the application the request of
    /// each answered CALL, which `on_call_completed` does not get today.)
    pub fn on_command(&self, identity: &ChargePointIdentity, request: &Request) {
        self.note_charging_command(identity, request);
        let Some(password) = proposed_password(request) else {
            return;
        };
        let mut credentials = self.credentials.write().unwrap_or_else(|p| p.into_inner());
        match credentials.as_mut() {
            Some(credentials) => {
                credentials.propose(identity, password.as_bytes());
                tracing::info!(%identity, action = request.action(), "password change proposed");
            }
            None => tracing::debug!(%identity, "password change ignored: no --basic-auth"),
        }
    }

    /// The next CALL the application wants sent to `identity` right after the answer just
    /// made (CertificateSigned after an accepted SignCertificate, GetTransactionStatus after
    /// a seqNo gap...), if any; call it until `None`. The I/O loop puts each on its own
    /// connection after the answer, in this order, so that the station gets the CALLRESULT
    /// first, with nobody waiting for it (no deadline; its outcome comes to
    /// [`Csms::on_call_completed`]). Then it reports what the connection did with it, as for
    /// any CALL of ours: taken, [`Csms::on_call_sent`]; refused (its queue full, the
    /// connection over), [`Csms::on_call_not_sent`], which settles what was recorded for it
    /// (a SetChargingProfile, a CertificateSigned...) as not sent.
    ///
    /// ```
    /// use ocpp_proto::{CallFailure, ChargePointIdentity, RefusalReason, Request};
    /// use ocpp_reference_csms::{Csms, CsmsConfig};
    ///
    /// /// After each answer to `identity`: `call` stands for the driver's
    /// /// `Connection::call_for(now, request, caller, None)`.
    /// fn send_follow_ups(
    ///     csms: &Csms,
    ///     identity: &ChargePointIdentity,
    ///     mut call: impl FnMut(Request) -> Result<(), RefusalReason>,
    /// ) {
    ///     while let Some(request) = csms.take_follow_up(identity) {
    ///         let action = request.action();
    ///         match call(request) {
    ///             Ok(()) => csms.on_call_sent(identity, action),
    ///             Err(reason) => csms.on_call_not_sent(identity, action, &CallFailure::from(reason)),
    ///         }
    ///     }
    /// }
    ///
    /// let csms = Csms::new(CsmsConfig::default());
    /// let identity = ChargePointIdentity::new("CP1".into(), false).unwrap();
    /// let mut sent = Vec::new();
    /// send_follow_ups(&csms, &identity, |request| {
    ///     sent.push(request);
    ///     Ok(())
    /// });
    /// assert!(sent.is_empty()); // no answer made, nothing follows
    /// ```
    pub fn take_follow_up(&self, identity: &ChargePointIdentity) -> Option<Request> {
        if self.follow_ups.load(Ordering::Acquire) == 0 {
            return None;
        }
        let taken = self
            .lock()
            .get_mut(identity)
            .and_then(|cp| cp.extras.take_follow_up());
        if taken.is_some() {
            self.follow_ups.fetch_sub(1, Ordering::AcqRel);
        }
        taken
    }

    /// Records the station's answer to our CALL `action` (its status, a CALLERROR, or how
    /// it failed, as [`answer_status`] names them) where a record waits for it: a
    /// CertificateSigned, a CostUpdated, a SetChargingProfile or a ClearChargingProfile.
    /// `answer` is made only for those.
    pub(crate) fn note_answer(
        &self,
        identity: &ChargePointIdentity,
        action: &str,
        answer: impl FnOnce() -> String,
    ) {
        match action {
            "CertificateSigned" => self.note_certificate_answer(identity, answer()),
            "CostUpdated" => self.note_cost_updated_answer(identity, answer()),
            "SetChargingProfile" | "ClearChargingProfile" => {
                self.note_profile_answer(identity, action, answer());
            }
            _ => {}
        }
    }

    /// Records the station's answer to our CertificateSigned.
    fn note_certificate_answer(&self, identity: &ChargePointIdentity, answer: String) {
        if let Some(record) = self
            .lock()
            .get_mut(identity)
            .and_then(|cp| cp.extras.get_mut().certificate.as_mut())
        {
            tracing::info!(%identity, answer, "CertificateSigned answered");
            record.answer = Some(answer);
            record.answered_at = Some(UnixTime::now());
        }
    }

    /// A SetChargingProfile or ClearChargingProfile the operator sends
    /// (`POST /chargepoints/ID/call/ACTION`): kept with the station's smart-charging state
    /// ([`smart_charging`]) so that its answer lands on the right record.
    fn note_charging_command(&self, identity: &ChargePointIdentity, request: &Request) {
        let action = request.action();
        if !matches!(action, "SetChargingProfile" | "ClearChargingProfile") {
            return;
        }
        let Ok(payload) = serde_json::to_value(request) else {
            return;
        };
        let mut fleet = self.lock();
        let state = &mut fleet.entry(identity).extras.get_mut().smart_charging;
        if action == "SetChargingProfile" {
            // 1.6 names the profile `csChargingProfiles`: the same record, read from it.
            let mut payload = payload;
            if payload.get("chargingProfile").is_none() {
                payload["chargingProfile"] = payload["csChargingProfiles"].take();
                payload["evseId"] = payload["connectorId"].take();
            }
            let reason = smart_charging::ProfileReason::Operator;
            state.sent(ChargingProfileRecord::new(
                &payload,
                reason,
                UnixTime::now(),
            ));
        } else {
            state.clear_asked(payload["chargingProfileId"].as_i64());
        }
    }

    /// Records the station's answer to our SetChargingProfile (its status, or how it
    /// failed) or ClearChargingProfile (Accepted clears the profile it named).
    fn note_profile_answer(&self, identity: &ChargePointIdentity, action: &str, answer: String) {
        let mut fleet = self.lock();
        let Some(cp) = fleet.get_mut(identity) else {
            return;
        };
        let state = &mut cp.extras.get_mut().smart_charging;
        if action == "ClearChargingProfile" {
            state.clear_answered(answer == "Accepted");
        } else if let Some(record) = state.settle(answer, UnixTime::now()) {
            tracing::info!(%identity, id = record.id, answer = record.answer, "SetChargingProfile answered");
        }
    }

    /// The I/O loop sent one of our CALLs (from the admin API or the push timer). A
    /// TriggerMessage lets a Pending station send what it triggers ([`boot`](crate::boot)).
    pub fn on_call_sent(&self, identity: &ChargePointIdentity, action: &str) {
        self.metrics.messages_out.inc();
        self.metrics.calls_pending.inc();
        self.metrics.calls_sent.inc();
        if matches!(action, "TriggerMessage" | "ExtendedTriggerMessage") {
            if let Some(charge_point) = self.lock().get_mut(identity) {
                charge_point.triggered = true;
            }
        }
    }

    /// One of our CALLs ended (it was counted sent by [`Csms::on_call_sent`]).
    pub fn on_call_completed(
        &self,
        identity: &ChargePointIdentity,
        action: &str,
        outcome: &CallOutcome,
    ) {
        self.metrics.calls_pending.dec();
        self.settle_call(identity, action, outcome);
    }

    /// One of our CALLs never went out: the connection refused it (its queue full, the
    /// connection over) or its caller's deadline passed while it waited. Whatever was
    /// recorded for it (a SetChargingProfile, a CertificateSigned, a CostUpdated, a proposed
    /// password) is settled with the failure's name, as an answer would settle it: the next
    /// answer is never taken for its own. Every not-sent path of both servers comes here
    /// (follow-ups, admin commands, routed commands).
    pub fn on_call_not_sent(
        &self,
        identity: &ChargePointIdentity,
        action: &str,
        failure: &CallFailure,
    ) {
        tracing::warn!(%identity, action, %failure, "CALL not sent");
        self.settle_call(identity, action, &Err(failure.clone()));
    }

    /// How one of our CALLs ended, for a driver that learns only its outcome (ocpp-tokio's
    /// `ChargePoint::call_raw`), where mio-server's loop sees the connection's events: a CALL
    /// the connection took counts as sent ([`Csms::on_call_sent`]); its outcome counts
    /// ([`Csms::on_call_completed`]) unless the connection ended first ([`Csms::on_closed`]
    /// counts those); one that never went out settles what was recorded for it
    /// ([`Csms::on_call_not_sent`]).
    ///
    /// ```
    /// use ocpp_proto::{CallFailure, ChargePointIdentity};
    /// use ocpp_reference_csms::{Csms, CsmsConfig};
    ///
    /// let csms = Csms::new(CsmsConfig::default());
    /// let identity = ChargePointIdentity::new("CP1".into(), false).unwrap();
    /// csms.on_call_outcome(&identity, "Reset", &Err(CallFailure::Timeout));
    /// ```
    pub fn on_call_outcome(
        &self,
        identity: &ChargePointIdentity,
        action: &str,
        outcome: &CallOutcome,
    ) {
        match outcome {
            Err(CallFailure::Disconnected | CallFailure::ClosedBeforeSent) => {
                self.on_call_sent(identity, action);
            }
            Err(failure) if !failure.may_have_reached_peer() => {
                self.on_call_not_sent(identity, action, failure);
            }
            _ => {
                self.on_call_sent(identity, action);
                self.on_call_completed(identity, action, outcome);
            }
        }
    }

    /// What one of our CALLs' outcome settles: the record made when it was asked for.
    fn settle_call(&self, identity: &ChargePointIdentity, action: &str, outcome: &CallOutcome) {
        self.note_answer(identity, action, || answer_status(outcome));
        if action == "GetTransactionStatus" {
            self.note_transaction_status(identity, outcome);
        }
        if let ("GetVariables", Ok(response)) = (action, outcome) {
            if let Ok(payload) = serde_json::to_value(response) {
                if let Some(charge_point) = self.lock().get_mut(identity) {
                    charge_point
                        .extras
                        .get_mut()
                        .items_per_message
                        .learn_from_get_variables(&payload);
                }
            }
        }
        // A chunk of a split SetVariables ([`items_per_message`]) that did not carry the
        // password leaves the proposal for the chunk that does.
        if matches!(action, "SetVariables" | "ChangeConfiguration") && !answers_other_chunk(outcome)
        {
            let _changes = self.settings_changes();
            let changed = {
                let mut credentials = self.credentials.write().unwrap_or_else(|p| p.into_inner());
                match credentials.as_mut().filter(|c| c.has_proposal(identity)) {
                    None => None,
                    Some(credentials) => {
                        if credentials.settle(identity, password_change_accepted(outcome)) {
                            tracing::info!(%identity, "password changed: counts from the next connection");
                            Some(Record::Password {
                                identity: identity.as_str().to_owned(),
                                sha256: credentials.password_digest_of(identity.as_str()),
                            })
                        } else {
                            tracing::warn!(%identity, action, "password change not accepted");
                            None
                        }
                    }
                }
            };
            // Committed (the station may reconnect with it at once, on this node or another
            // sharing the database), outside the credentials' lock and off this thread: the
            // station has changed its password already, so the write is tried again until
            // it is kept, and no I/O loop waits for it.
            if let Some(record) = changed {
                self.keep_in_background(vec![record], "the new password");
            }
        }
        match outcome {
            Ok(_) => self.metrics.messages_in.inc(),
            Err(CallFailure::ErrorResponse { code, .. }) => {
                self.metrics.messages_in.inc();
                self.metrics.call_errors_received.inc();
                tracing::debug!(%identity, action, code = ?code, "CALLERROR received");
            }
            Err(CallFailure::Timeout) => {
                self.metrics.call_timeouts.inc();
                tracing::warn!(%identity, action, "CALL timed out");
            }
            _ => {
                self.metrics.messages_in.inc();
                self.metrics.call_errors_received.inc();
            }
        }
    }

    /// Queues `request` to be sent to `cp` (see [`Csms::take_follow_up`]).
    pub(crate) fn queue_follow_up(&self, cp: &mut ChargePointRecord, request: Request) {
        queue_follow_up(&self.follow_ups, cp, request);
    }

    /// Takes back the follow-up CALLs of `cp` past its first `queued` (those made by the CALL
    /// being handled: see [`ledger`]).
    pub(crate) fn withdraw_follow_ups(
        &self,
        cp: &mut ChargePointRecord,
        queued: usize,
    ) -> Vec<Request> {
        if cp.extras.follow_ups.len() <= queued {
            return Vec::new();
        }
        let taken: Vec<Request> = cp.extras.get_mut().follow_ups.drain(queued..).collect();
        self.follow_ups.fetch_sub(taken.len(), Ordering::AcqRel);
        taken
    }
}

/// Queues `request` to be sent to `cp` right after the answer being made, counted in
/// `queued` ([`Csms::follow_ups`]) so that the I/O loops look only when there is one.
pub(crate) fn queue_follow_up(queued: &AtomicUsize, cp: &mut ChargePointRecord, request: Request) {
    cp.extras.get_mut().follow_ups.push_back(request);
    queued.fetch_add(1, Ordering::AcqRel);
}

/// What an answer to our CALL says, in a word: its `status` (`Accepted` for a result without
/// one), or `CALLERROR <code>`, `Timeout`, the failure's name ([`CallFailure::name`]).
fn answer_status(outcome: &CallOutcome) -> String {
    match outcome {
        // A result without a status (CostUpdated's is empty) accepts.
        Ok(response) => serde_json::to_value(response)
            .ok()
            .map(|v| v["status"].as_str().unwrap_or("Accepted").to_owned())
            .unwrap_or_else(|| "InvalidResult".into()),
        Err(CallFailure::ErrorResponse { code, .. }) => format!("CALLERROR {code:?}"),
        Err(CallFailure::Timeout) => "Timeout".into(),
        Err(failure) => failure.name().to_owned(),
    }
}

/// The Basic password a command proposes: SetVariables `SecurityCtrlr.BasicAuthPassword`
/// (2.x) or ChangeConfiguration `AuthorizationKey` (1.6). Read from the JSON, which has the
/// same shape in 2.0.1 and 2.1.
fn proposed_password(request: &Request) -> Option<String> {
    let payload = match request.action() {
        "SetVariables" | "ChangeConfiguration" => serde_json::to_value(request).ok()?,
        _ => return None,
    };
    if payload["key"] == "AuthorizationKey" {
        return payload["value"].as_str().map(String::from);
    }
    payload["setVariableData"]
        .as_array()?
        .iter()
        .find(|data| is_basic_auth_password(data))
        .and_then(|data| data["attributeValue"].as_str().map(String::from))
}

fn is_basic_auth_password(data: &serde_json::Value) -> bool {
    data["component"]["name"] == "SecurityCtrlr"
        && data["variable"]["name"] == "BasicAuthPassword"
        // Only the `Actual` attribute (the default) is the password.
        && matches!(data["attributeType"].as_str(), None | Some("Actual"))
}

/// Whether `outcome` is a SetVariables CALLRESULT none of whose results is the Basic
/// password: the answer to a chunk of a split command that did not carry it.
fn answers_other_chunk(outcome: &CallOutcome) -> bool {
    let Ok(response) = outcome else {
        return false;
    };
    let Ok(payload) = serde_json::to_value(response) else {
        return false;
    };
    payload["setVariableResult"]
        .as_array()
        .is_some_and(|results| !results.iter().any(is_basic_auth_password))
}

/// Whether the answer to a password change accepted it (RebootRequired: it counts after the
/// reboot, which is a new connection anyway).
fn password_change_accepted(outcome: &CallOutcome) -> bool {
    let Ok(response) = outcome else {
        return false;
    };
    let Ok(payload) = serde_json::to_value(response) else {
        return false;
    };
    let ok = |status: &serde_json::Value| status == "Accepted" || status == "RebootRequired";
    match payload["setVariableResult"].as_array() {
        Some(results) => results
            .iter()
            .any(|result| is_basic_auth_password(result) && ok(&result["attributeStatus"])),
        None => ok(&payload["status"]),
    }
}
