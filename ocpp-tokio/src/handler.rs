//! What the application writes: a [`Handler`] with only the methods it needs, and what it
//! is handed (a [`Connecting`] charge point, an [`IncomingCall`]).

use std::future::Future;
use std::net::SocketAddr;

use ocpp_frame::handshake::BasicCredentials;
use ocpp_messages::{Request, RequestRef};
use ocpp_proto::{
    Answer, ChargePointIdentity, Closed, IncomingUpgrade, MessageId, OcppVersion, Rejection,
};
use rustls::pki_types::CertificateDer;

pub use crate::session::Session;

/// The application's side of every connection, untyped: the [`Router`](crate::Router) is
/// one (typed, an async function per action); implement this trait directly for what a
/// router does not cover. Every method but [`on_upgrade`](Self::on_upgrade) has a default.
///
/// Each connection has a [`State`](Self::State) of the application's own, made by
/// `on_upgrade` before the upgrade completes (so before any CALL of that connection), reached
/// by every method through the [`Session`], and handed back to `on_close`.
///
/// Methods run while the connection keeps serving pings, timeouts and the results of its own
/// CALLs: [`on_call`](Self::on_call) and [`on_send`](Self::on_send) are polled by the
/// connection's task, [`on_connect`](Self::on_connect) and [`on_close`](Self::on_close) run
/// in tasks of their own. Implement them with `async fn`.
///
/// ```
/// use ocpp_tokio::{v1_6, Answer, Connecting, DateTime, Handler, IncomingCall, Rejection, Session};
/// use ocpp_tokio::ocpp::RequestRef;
///
/// struct Csms;
///
/// impl Handler for Csms {
///     type State = ();
///
///     async fn on_upgrade(&self, connecting: Connecting) -> Result<(), Rejection> {
///         match connecting.identity().as_str().starts_with("CP") {
///             true => Ok(()),
///             false => Err(Rejection::NOT_FOUND),
///         }
///     }
///
///     async fn on_call(&self, _: &Session<()>, call: IncomingCall) -> Answer {
///         match call.view() {
///             RequestRef::V1_6(v1_6::Request::Heartbeat(_)) => {
///                 Answer::result(v1_6::HeartbeatResponse::new(DateTime::now()))
///             }
///             _ => Answer::not_supported(call.action()),
///         }
///     }
/// }
/// ```
pub trait Handler: Send + Sync + 'static {
    /// What the application keeps for each connection (`()` for nothing).
    type State: Send + Sync + 'static;

    /// A charge point asks to connect: accept it with its state, or refuse with an HTTP status
    /// ([`Rejection::UNAUTHORIZED`] for bad Basic credentials, security profiles 1 and 2;
    /// [`Rejection::NOT_FOUND`] for an unknown identity; [`Rejection::FORBIDDEN`] when a client
    /// certificate does not match, profile 3). Runs within the handshake deadline.
    fn on_upgrade(
        &self,
        connecting: Connecting,
    ) -> impl Future<Output = Result<Self::State, Rejection>> + Send;

    /// The charge point is connected and registered (its handle is in
    /// [`ChargePoints`](crate::ChargePoints)); runs in a task of its own, so it may call the
    /// charge point and wait. CALLs of the charge point may be handled meanwhile.
    fn on_connect(&self, session: Session<Self::State>) -> impl Future<Output = ()> + Send {
        let _ = session;
        async {}
    }

    /// A CALL from the charge point; the answer goes out when the future completes, through
    /// the core's answer rule (an answer of another action or version than the CALL's goes
    /// out as CALLERROR `InternalError`). The charge point's next CALL waits until then
    /// (OCPP-J: one at a time). The default answers `NotSupported` (the action is known: an
    /// unknown one never reaches the handler, the core answers it `NotImplemented`).
    fn on_call(
        &self,
        session: &Session<Self::State>,
        call: IncomingCall,
    ) -> impl Future<Output = Answer> + Send {
        let _ = session;
        async move { Answer::not_supported(call.action()) }
    }

    /// A SEND from the charge point (OCPP 2.1, e.g. NotifyPeriodicEventStream): never
    /// answered. SENDs of one connection are handled one after the other, in order.
    fn on_send(
        &self,
        session: &Session<Self::State>,
        send: IncomingCall,
    ) -> impl Future<Output = ()> + Send {
        let _ = (session, send);
        async {}
    }

    /// The connection of a charge point that had connected is over; runs in a task of its
    /// own, with the connection's state. `closed` says why and lists what was left unanswered.
    /// When a newer connection replaced this one, the identity is already the newer one's:
    /// `charge_points.get(id) == Some(cp)` tells whether this one still held it.
    fn on_close(
        &self,
        session: Session<Self::State>,
        closed: Closed,
    ) -> impl Future<Output = ()> + Send {
        let _ = (session, closed);
        async {}
    }
}

/// A charge point asking to connect, as [`Handler::on_upgrade`] sees it: its upgrade request
/// and, over TLS, its client certificate.
#[derive(Debug, Clone, PartialEq)]
pub struct Connecting {
    request: Box<IncomingUpgrade>,
    certificate: Option<PeerCertificate>,
    peer: Option<SocketAddr>,
}

impl Connecting {
    pub(crate) fn new(
        request: Box<IncomingUpgrade>,
        certificate: Option<PeerCertificate>,
        peer: Option<SocketAddr>,
    ) -> Self {
        Connecting {
            request,
            certificate,
            peer,
        }
    }

    /// The peer's address, when the service was handed a TCP socket
    /// ([`Service::serve_tcp`](crate::server::Service::serve_tcp) and the listeners of
    /// [`Server`](crate::Server)); `None` for a stream of the caller's own. For a limit on
    /// failed attempts per address, say.
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.peer
    }

    /// The identity from the last path segment, percent-decoded.
    pub fn identity(&self) -> &ChargePointIdentity {
        &self.request.identity
    }

    /// The version the connection will speak if accepted; `None` when no offered subprotocol
    /// is supported (accepting then completes the handshake and closes, as OCPP-J asks).
    pub fn version(&self) -> Option<OcppVersion> {
        self.request.version
    }

    /// `Authorization: Basic` credentials (security profiles 1 and 2), if sent.
    pub fn credentials(&self) -> Option<&BasicCredentials> {
        self.request.credentials.as_ref()
    }

    /// The client certificate the TLS layer verified (security profile 3), if any.
    pub fn certificate(&self) -> Option<&PeerCertificate> {
        self.certificate.as_ref()
    }

    /// The whole upgrade request (path, query, subprotocols offered).
    pub fn request(&self) -> &IncomingUpgrade {
        &self.request
    }
}

/// The client certificate a charge point presented over TLS (security profile 3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerCertificate {
    der: CertificateDer<'static>,
    common_name: Option<String>,
}

impl PeerCertificate {
    /// Reads the subject of a DER certificate (the end-entity certificate of the chain).
    ///
    /// ```
    /// use ocpp_tokio::handler::PeerCertificate;
    /// let not_a_certificate = PeerCertificate::from_der(vec![1, 2, 3].into());
    /// assert_eq!(not_a_certificate.common_name(), None);
    /// ```
    pub fn from_der(der: CertificateDer<'static>) -> Self {
        let common_name = x509_parser::parse_x509_certificate(der.as_ref())
            .ok()
            .and_then(|(_, parsed)| {
                let cn = parsed.subject().iter_common_name().next()?;
                cn.as_str().ok().map(str::to_owned)
            });
        PeerCertificate { der, common_name }
    }

    /// The end-entity certificate the client presented on a TLS connection a server accepted,
    /// if it presented one: what every TLS acceptor of ours reads after the handshake.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ocpp_tokio::handler::PeerCertificate;
    /// use ocpp_tokio::rustls::server::ResolvesServerCertUsingSni;
    /// use ocpp_tokio::rustls::{ServerConfig, ServerConnection};
    ///
    /// let config = ServerConfig::builder()
    ///     .with_no_client_auth()
    ///     .with_cert_resolver(Arc::new(ResolvesServerCertUsingSni::new()));
    /// let connection = ServerConnection::new(Arc::new(config)).unwrap();
    /// assert_eq!(PeerCertificate::of(&connection), None); // no handshake yet
    /// ```
    pub fn of(connection: &rustls::ServerConnection) -> Option<Self> {
        connection
            .peer_certificates()
            .and_then(|chain| chain.first())
            .map(|der| PeerCertificate::from_der(der.clone().into_owned()))
    }

    /// The subject Common Name: in OCPP security profile 3 it carries the identity
    /// (OCPP 2.0.1 A00.FR.4xx, 1.6 security whitepaper).
    pub fn common_name(&self) -> Option<&str> {
        self.common_name.as_deref()
    }

    /// The certificate, DER-encoded, for checks of the application's own.
    pub fn der(&self) -> &CertificateDer<'static> {
        &self.der
    }
}

/// A CALL (or a SEND) from a charge point: its id and its decoded, schema-checked payload.
#[derive(Debug, Clone, PartialEq)]
pub struct IncomingCall {
    id: MessageId<'static>,
    request: Request,
}

impl IncomingCall {
    pub(crate) fn new(id: MessageId<'static>, request: Request) -> Self {
        IncomingCall { id, request }
    }

    /// The message id.
    pub fn id(&self) -> &MessageId<'static> {
        &self.id
    }

    /// The action's name as on the wire, e.g. `"BootNotification"`.
    pub fn action(&self) -> &'static str {
        self.request.action()
    }

    /// The OCPP version of the payload (the connection's).
    pub fn version(&self) -> OcppVersion {
        self.request.version()
    }

    /// The payload.
    pub fn request(&self) -> &Request {
        &self.request
    }

    /// The payload borrowed for one `match` over versions and actions:
    /// `RequestRef::V1_6(v1_6::Request::Heartbeat(_)) => ..`.
    pub fn view(&self) -> RequestRef<'_> {
        self.request.view()
    }

    /// The payload, owned.
    pub fn into_request(self) -> Request {
        self.request
    }

    /// The id and the payload, owned.
    pub fn into_parts(self) -> (MessageId<'static>, Request) {
        (self.id, self.request)
    }
}

/// A shared handler (the application keeps a clone to reach its state).
impl<H: Handler> Handler for std::sync::Arc<H> {
    type State = H::State;

    fn on_upgrade(
        &self,
        connecting: Connecting,
    ) -> impl Future<Output = Result<Self::State, Rejection>> + Send {
        (**self).on_upgrade(connecting)
    }

    fn on_connect(&self, session: Session<Self::State>) -> impl Future<Output = ()> + Send {
        (**self).on_connect(session)
    }

    fn on_call(
        &self,
        session: &Session<Self::State>,
        call: IncomingCall,
    ) -> impl Future<Output = Answer> + Send {
        (**self).on_call(session, call)
    }

    fn on_send(
        &self,
        session: &Session<Self::State>,
        send: IncomingCall,
    ) -> impl Future<Output = ()> + Send {
        (**self).on_send(session, send)
    }

    fn on_close(
        &self,
        session: Session<Self::State>,
        closed: Closed,
    ) -> impl Future<Output = ()> + Send {
        (**self).on_close(session, closed)
    }
}

/// The default handler: accepts every charge point, answers every CALL `NotSupported`.
impl Handler for () {
    type State = ();

    async fn on_upgrade(&self, _: Connecting) -> Result<(), Rejection> {
        Ok(())
    }
}
