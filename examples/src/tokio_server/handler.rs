//! The [`ocpp_tokio::Handler`] over the shared [`Csms`]: upgrades, CALLs, SENDs and closes go
//! to the CSMS application, and what a connection needs besides its `ChargePoint` handle (the
//! CSMS session) lives in one table keyed by identity.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use ocpp_server_core::{CallOutcome, ChargePointIdentity, Closed, ErrorCode, Response};
use ocpp_tokio::UpgradeRequest;
use ocpp_tokio::{Answer, CallError, ChargePoint, Handler, IncomingCall, PeerCertificate, Upgrade};

use crate::csms::{ClientCertificate, Csms, Decision, Reply, SessionId, Transport};

/// What one connection of a charge point adds to its [`ChargePoint`] handle.
#[derive(Debug)]
struct Session {
    /// The connection: a newer one of the same identity has another handle.
    cp: ChargePoint,
    id: SessionId,
}

/// The application the tokio server serves: the [`Csms`], and the CSMS session of every
/// connected charge point.
#[derive(Debug)]
pub(super) struct App {
    pub(super) csms: Arc<Csms>,
    /// `wss://`: the transport [`Csms::on_upgrade`] is told of.
    tls: bool,
    /// `--push-interval-ms`.
    push_interval: Option<Duration>,
    sessions: Mutex<HashMap<ChargePointIdentity, Session>>,
}

/// How one of our CALLs ended, as the CSMS and the admin interface see it.
#[derive(Debug)]
pub(super) enum Ended {
    /// Answered, refused with a CALLERROR, or timed out.
    Outcome(CallOutcome),
    /// The connection ended before the answer.
    Disconnected,
    /// The CALL never left (not connected, queue full, wrong version).
    NotSent(CallError),
}

impl App {
    pub(super) fn new(csms: Arc<Csms>, tls: bool, push_interval: Option<Duration>) -> Self {
        App {
            csms,
            tls,
            push_interval,
            sessions: Mutex::new(HashMap::new()),
        }
    }

    fn sessions(&self) -> MutexGuard<'_, HashMap<ChargePointIdentity, Session>> {
        self.sessions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The CSMS session of `cp`'s connection, opened on first use: `on_connect` runs in a task
    /// of its own, so the first CALL may come before it. `None` once the connection is over.
    fn session(&self, cp: &ChargePoint) -> Option<SessionId> {
        let identity = cp.charge_point_identity()?;
        let mut sessions = self.sessions();
        if let Some(session) = sessions.get(identity) {
            if session.cp == *cp {
                return Some(session.id);
            }
        }
        // Checked under the lock that `on_close` takes: a connection that ended never opens
        // a session after its close was recorded.
        if !cp.is_connected() {
            return None;
        }
        let id = self.csms.on_connected(identity, cp.version());
        let session = Session { cp: cp.clone(), id };
        // A newer connection replaces the older one's entry; the older one's `on_close` then
        // leaves the CSMS alone (the CSMS already moved to the new session).
        sessions.insert(identity.clone(), session);
        Some(id)
    }

    /// Opens `cp`'s CSMS session if it has none yet (see [`App::session`]).
    pub(super) fn open(&self, cp: &ChargePoint) {
        let _ = self.session(cp);
    }

    /// Tells the CSMS how one of our CALLs to `cp` ended. `ChargePoint::call_raw` reports only
    /// the end, so a CALL is recorded as sent ([`Csms::on_call_sent`]) when its outcome is
    /// known; one cut short by the end of its connection is recorded as sent too, as the
    /// CSMS's `on_closed` counts it among the unanswered.
    pub(super) fn call_ended(
        &self,
        cp: &ChargePoint,
        action: &str,
        result: Result<Response, CallError>,
    ) -> Ended {
        call_ended(&self.csms, cp, action, result)
    }
}

/// [`App::call_ended`], for a task that holds only the [`Csms`].
fn call_ended(
    csms: &Csms,
    cp: &ChargePoint,
    action: &str,
    result: Result<Response, CallError>,
) -> Ended {
    let outcome = match result {
        Ok(response) => CallOutcome::Result(response),
        Err(CallError::CallError {
            code,
            description,
            details,
        }) => CallOutcome::Error {
            code,
            description,
            details,
        },
        Err(CallError::Timeout) => CallOutcome::Timeout,
        Err(CallError::InvalidResponse { description }) => {
            CallOutcome::InvalidResult { description }
        }
        Err(CallError::Disconnected) => {
            if let Some(identity) = cp.charge_point_identity() {
                csms.on_call_sent(identity, action);
            }
            return Ended::Disconnected;
        }
        Err(other) => return Ended::NotSent(other),
    };
    if let Some(identity) = cp.charge_point_identity() {
        csms.on_call_sent(identity, action);
        csms.on_call_completed(identity, action, &outcome);
    }
    Ended::Outcome(outcome)
}

impl Handler for App {
    async fn on_upgrade(
        &self,
        request: &UpgradeRequest,
        certificate: Option<&PeerCertificate>,
    ) -> Upgrade {
        let transport = if self.tls {
            Transport::Tls {
                client_certificate: certificate
                    .map(|c| ClientCertificate::new(c.common_name().map(str::to_owned))),
            }
        } else {
            Transport::Plain
        };
        match self.csms.on_upgrade(request, &transport) {
            Decision::Accept => Upgrade::Accept,
            Decision::Reject { status, reason } => {
                tracing::info!(identity = %request.identity, status, reason, "upgrade rejected");
                Upgrade::Reject { status }
            }
        }
    }

    async fn on_connect(&self, cp: ChargePoint) {
        if self.session(&cp).is_some() {
            tracing::info!(
                identity = cp.identity(),
                version = cp.version().as_str(),
                "connected"
            );
            if let Some(interval) = self.push_interval {
                // This task is the charge point's own: it pushes until the connection ends.
                super::push::pusher(self, cp, interval).await;
            }
        }
    }

    async fn on_call(&self, cp: &ChargePoint, call: IncomingCall) -> Answer {
        let (Some(identity), Some(session)) = (cp.charge_point_identity(), self.session(cp)) else {
            return Answer::error(ErrorCode::InternalError, "the connection is over");
        };
        let answer = match self.csms.on_call(session, identity, call.request()) {
            Reply::Result(response) => Answer::result(response),
            Reply::Error { code, description } => Answer::error(code, description),
        };
        // CertificateSigned after an accepted SignCertificate. The driver writes the answer
        // as soon as this future is ready, before it takes the next command: the CALL
        // follows the answer.
        if let Some(request) = self.csms.take_follow_up(identity) {
            let (csms, cp) = (Arc::clone(&self.csms), cp.clone());
            tokio::spawn(async move {
                let action = request.action().to_owned();
                let result = cp.call_raw(request).await;
                if let Ended::NotSent(error) = call_ended(&csms, &cp, &action, result) {
                    tracing::warn!(
                        identity = cp.identity(),
                        action,
                        "follow-up CALL not sent: {error}"
                    );
                }
            });
        }
        answer
    }

    async fn on_send(&self, cp: &ChargePoint, send: IncomingCall) {
        if let Some(identity) = cp.charge_point_identity() {
            self.csms.on_send(identity, send.request());
        }
    }

    async fn on_close(&self, cp: &ChargePoint, closed: &Closed) {
        let identity = cp.charge_point_identity();
        let session = identity.and_then(|identity| {
            let mut sessions = self.sessions();
            match sessions.get(identity) {
                Some(session) if session.cp == *cp => sessions.remove(identity).map(|s| s.id),
                _ => None,
            }
        });
        self.csms.on_closed(session, identity, closed);
        tracing::info!(identity = cp.identity(), reason = ?closed.reason, "disconnected");
    }
}
