//! The [`ocpp_tokio::Handler`] over the shared [`Csms`]: upgrades, CALLs, SENDs and closes go
//! to the CSMS application; what a connection needs besides its handle (its CSMS session)
//! is the connection's own state, made when the charge point connects.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ocpp_server_core::{CallFailure, CallOutcome, Closed, ErrorCode, Request};
use ocpp_tokio::handler::PeerCertificate;
use ocpp_tokio::{Answer, ChargePoint, Connecting, Handler, IncomingCall, Rejection, Session};

use super::push::Pushes;
use crate::csms::{ClientCertificate, Csms, Reply, SessionId, Transport};

/// The application the tokio server serves: the [`Csms`], and how it is reached.
#[derive(Debug)]
pub(super) struct App {
    pub(super) csms: Arc<Csms>,
    /// `wss://`: the transport [`Csms::on_upgrade`] is told of.
    tls: bool,
    /// `--push-interval-ms`: the ticker that pushes.
    pushes: Option<Pushes>,
    /// The follow-up CALLs ([`Csms::take_follow_up`]) of each session that has some still
    /// to send or in flight, in the order the CSMS gave them. One task per such session
    /// sends them one after another and hands each outcome to the CSMS before it sends the
    /// next: the CSMS settles its records (a SetChargingProfile's answer...) in the order
    /// sent, as mio-server's loop hears of them. A task per batch would let a later batch's
    /// outcome reach the CSMS first when the earlier task waits in a run queue.
    follow_ups: Arc<FollowUps>,
}

/// The follow-up CALLs still to send, per session ([`App::follow_ups`]).
#[derive(Debug, Default)]
struct FollowUps(Mutex<HashMap<SessionId, VecDeque<Request>>>);

/// What the server keeps per connection: its CSMS session (`None` for a connection that
/// will not open: no OCPP version in common).
#[derive(Debug)]
pub(super) struct Station {
    session: Option<SessionId>,
}

impl App {
    /// The application; with `push_interval`, its push ticker starts (call it inside the
    /// runtime).
    pub(super) fn new(
        csms: Arc<Csms>,
        tls: bool,
        push_interval: Option<Duration>,
        shards: usize,
    ) -> Self {
        let pushes =
            push_interval.map(|interval| Pushes::start(Arc::clone(&csms), interval, shards));
        App {
            csms,
            tls,
            pushes,
            follow_ups: Arc::default(),
        }
    }
}

impl FollowUps {
    /// Queues `requests` behind `session`'s follow-ups; `true` when no task sends them yet
    /// (the caller starts [`FollowUps::send`]).
    fn queue(&self, session: SessionId, requests: impl Iterator<Item = Request>) -> bool {
        let mut queues = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let fresh = !queues.contains_key(&session);
        queues.entry(session).or_default().extend(requests);
        fresh
    }

    /// The next follow-up of `session`; `None` (and the session's queue gone) when it has
    /// no more.
    fn next(&self, session: SessionId) -> Option<Request> {
        let mut queues = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let queue = queues.get_mut(&session)?;
        let next = queue.pop_front();
        if next.is_none() {
            queues.remove(&session);
        }
        next
    }

    /// Sends `session`'s follow-ups on `cp` until none is left, each once the previous one
    /// ended and its outcome reached the CSMS.
    async fn send(&self, csms: &Csms, session: SessionId, cp: &ChargePoint) {
        while let Some(request) = self.next(session) {
            let action = request.action();
            let outcome = cp.call_raw(request).await;
            call_ended(csms, cp, action, &outcome);
        }
    }
}

/// Tells the CSMS how one of our CALLs to `cp` ended, as the mio server's loop does from the
/// connection's events: a CALL the connection took counts as sent; its outcome counts unless
/// the connection ended first (the CSMS's `on_closed` counts those).
pub(super) fn call_ended(csms: &Csms, cp: &ChargePoint, action: &str, outcome: &CallOutcome) {
    let identity = cp.identity();
    match outcome {
        Err(CallFailure::Disconnected | CallFailure::ClosedBeforeSent) => {
            csms.on_call_sent(identity, action);
        }
        Err(failure) if !failure.may_have_reached_peer() => {}
        _ => {
            csms.on_call_sent(identity, action);
            csms.on_call_completed(identity, action, outcome);
        }
    }
}

/// The transport [`Csms::on_upgrade`] decides on.
fn transport(tls: bool, certificate: Option<&PeerCertificate>) -> Transport {
    if !tls {
        return Transport::Plain;
    }
    Transport::Tls {
        client_certificate: certificate
            .map(|c| ClientCertificate::new(c.common_name().map(str::to_owned))),
    }
}

impl Handler for App {
    type State = Station;

    async fn on_upgrade(&self, connecting: Connecting) -> Result<Station, Rejection> {
        let transport = transport(self.tls, connecting.certificate());
        self.csms.on_upgrade(connecting.request(), &transport)?;
        // With a version in common the connection opens as it is accepted, before any CALL.
        let session = connecting
            .version()
            .map(|version| self.csms.on_connected(connecting.identity(), version));
        Ok(Station { session })
    }

    async fn on_connect(&self, session: Session<Station>) {
        let cp = session.charge_point();
        tracing::info!(identity = %cp.identity(), version = cp.version().as_str(), "connected");
        if let Some(pushes) = &self.pushes {
            pushes.add(cp.clone());
        }
    }

    async fn on_call(&self, station: &Session<Station>, call: IncomingCall) -> Answer {
        let Some(session) = station.session else {
            return Answer::not_supported(call.action());
        };
        let identity = station.identity();
        let answer = match self.csms.on_call(session, identity, call.request()) {
            Reply::Now(answer) => answer,
            // A commit or a network round trip: on tokio's blocking pool, not on a worker of
            // the runtime that drives the connections.
            Reply::Later(later) => {
                let csms = Arc::clone(&self.csms);
                match tokio::task::spawn_blocking(move || later.run(&csms)).await {
                    Ok(answer) => answer,
                    Err(e) => {
                        tracing::error!(%identity, action = call.action(), "answer job failed: {e}");
                        Answer::error(
                            ErrorCode::InternalError,
                            "the central system failed to answer",
                        )
                    }
                }
            }
        };
        // CertificateSigned after an accepted SignCertificate... The driver writes the answer
        // as soon as this future is ready, before it takes the next command: the CALLs
        // follow the answer, one after another, in order, behind the session's earlier
        // follow-ups ([`FollowUps`]).
        let mut follow_ups = std::iter::from_fn(|| self.csms.take_follow_up(identity)).peekable();
        if follow_ups.peek().is_some() && self.follow_ups.queue(session, follow_ups) {
            let queues = Arc::clone(&self.follow_ups);
            let (csms, cp) = (Arc::clone(&self.csms), station.charge_point().clone());
            tokio::spawn(async move { queues.send(&csms, session, &cp).await });
        }
        answer
    }

    async fn on_send(&self, station: &Session<Station>, send: IncomingCall) {
        self.csms.on_send(station.identity(), send.request());
    }

    async fn on_close(&self, station: Session<Station>, closed: Closed) {
        let identity = station.identity();
        self.csms
            .on_closed(station.session, Some(identity), &closed);
        tracing::info!(%identity, reason = ?closed.reason, "disconnected");
    }
}

#[cfg(test)]
mod tests {
    use ocpp_messages::v1_6;
    use ocpp_messages::version::OcppVersion;
    use ocpp_server_core::ChargePointIdentity;

    use super::*;

    fn clear_cache() -> Request {
        Request::from(v1_6::Request::from(v1_6::ClearCacheRequest {}))
    }

    /// A session's follow-ups go out in the order queued, by one task: a batch queued while
    /// the task runs joins its queue instead of starting a second task.
    #[test]
    fn follow_ups_of_a_session_are_taken_in_order_by_one_task() {
        let csms = Csms::new(Default::default());
        let identity = ChargePointIdentity::new("CP-F".into(), false).unwrap();
        let (a, b) = (
            csms.on_connected(&identity, OcppVersion::V1_6),
            csms.on_connected(&identity, OcppVersion::V1_6),
        );
        let queues = FollowUps::default();
        assert!(
            queues.queue(a, [clear_cache()].into_iter()),
            "a task starts"
        );
        assert!(queues.next(a).is_some());
        // The task waits for the first outcome; the next batch joins its queue.
        assert!(!queues.queue(a, [clear_cache(), clear_cache()].into_iter()));
        assert!(
            queues.queue(b, [clear_cache()].into_iter()),
            "another session"
        );
        assert!(queues.next(a).is_some());
        assert!(queues.next(a).is_some());
        assert!(queues.next(a).is_none(), "the task ends, the queue goes");
        assert!(queues.queue(a, [clear_cache()].into_iter()), "a new task");
        assert!(queues.next(b).is_some());
    }
}
