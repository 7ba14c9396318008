//! The [`ocpp_tokio::Handler`] over the shared [`Csms`]: upgrades, CALLs, SENDs and closes go
//! to the CSMS application; what a connection needs besides its handle (its CSMS session)
//! is the connection's own state, made when the charge point connects.

use std::sync::Arc;
use std::time::Duration;

use ocpp_proto::{Closed, ErrorCode};
use ocpp_tokio::handler::PeerCertificate;
use ocpp_tokio::{Answer, Connecting, Handler, IncomingCall, Rejection, Session};

use super::push::Pushes;
use ocpp_reference_csms::credentials::UpgradeGate;
use ocpp_reference_csms::{Answering, ClientCertificate, Csms, SessionId, Transport};

/// The application the tokio server serves: the [`Csms`], and how it is reached.
#[derive(Debug)]
pub(super) struct App {
    pub(super) csms: Arc<Csms>,
    /// `wss://`: the transport [`Csms::on_upgrade`] is told of.
    tls: bool,
    /// `--push-interval-ms`: the ticker that pushes.
    pushes: Option<Pushes>,
    /// The failed-attempt limit on Basic authentication.
    upgrades: UpgradeGate,
}

/// What the server keeps per connection: its CSMS session (`None` for a connection that
/// will not open: no OCPP version in common).
#[derive(Debug)]
pub(super) struct ConnectionState {
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
            upgrades: UpgradeGate::default(),
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
    type State = ConnectionState;

    async fn on_upgrade(&self, connecting: Connecting) -> Result<ConnectionState, Rejection> {
        let transport = transport(self.tls, connecting.certificate());
        let peer = connecting.peer_addr().map(|addr| addr.ip());
        let now = std::time::Instant::now();
        self.upgrades
            .decide(&self.csms, connecting.request(), &transport, peer, now)?;
        // With a version in common the connection opens as it is accepted, before any CALL.
        let session = connecting
            .version()
            .map(|version| self.csms.on_connected(connecting.identity(), version));
        Ok(ConnectionState { session })
    }

    async fn on_connect(&self, session: Session<ConnectionState>) {
        let cp = session.charge_point();
        tracing::info!(identity = %cp.identity(), version = cp.version().as_str(), "connected");
        if let Some(pushes) = &self.pushes {
            pushes.add(cp.clone());
        }
    }

    async fn on_call(&self, station: &Session<ConnectionState>, call: IncomingCall) -> Answer {
        let Some(session) = station.session else {
            return Answer::not_supported(call.action());
        };
        let identity = station.identity();
        let answer = match self.csms.on_call(session, identity, call.request()) {
            Answering::Now(answer) => answer,
            // A commit or a network round trip: on tokio's blocking pool, not on a worker of
            // the runtime that drives the connections.
            Answering::Later(later) => {
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
        // follow the answer, one after another, in order. Their outcomes reach the CSMS in
        // that order too: the connection hands each over as it ends (one CALL in flight at a
        // time), so the CSMS settles its records (a SetChargingProfile's answer...) in the
        // order sent, as mio-server's loop does. (A task per batch of follow-ups let a later
        // batch's outcome reach the CSMS first while the earlier task waited in a run queue:
        // `k15_on_ocpp_2_1` recorded two answers on each other's profiles.)
        let cp = station.charge_point();
        while let Some(request) = self.csms.take_follow_up(identity) {
            let action = request.action();
            let (csms, handle) = (Arc::clone(&self.csms), cp.clone());
            cp.call_raw_then(request, move |outcome| {
                csms.on_call_outcome(handle.identity(), action, &outcome);
            });
        }
        answer
    }

    async fn on_send(&self, station: &Session<ConnectionState>, send: IncomingCall) {
        self.csms.on_send(station.identity(), send.request());
    }

    async fn on_close(&self, station: Session<ConnectionState>, closed: Closed) {
        let identity = station.identity();
        self.csms
            .on_closed(station.session, Some(identity), &closed);
        tracing::info!(%identity, reason = ?closed.reason, "disconnected");
    }
}
