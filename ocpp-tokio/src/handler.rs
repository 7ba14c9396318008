//! What the application writes: a [`Handler`] with only the methods it needs.

use std::future::Future;

use ocpp_messages::{Request, RequestRef, Response};
use ocpp_server_core::{Closed, ErrorCode, MessageId, OcppVersion, UpgradeRequest};
use rustls::pki_types::CertificateDer;

use crate::ChargePoint;

/// The application's side of every connection. Every method has a default, so an
/// implementation names only what it serves (like `@on("BootNotification")` in Python `ocpp`).
///
/// Methods run while the connection keeps serving pings, timeouts and the results of its own
/// CALLs: [`on_call`](Self::on_call) and [`on_send`](Self::on_send) are polled by the
/// connection's task, [`on_connect`](Self::on_connect) and [`on_close`](Self::on_close) run
/// in tasks of their own. Implement them with `async fn`.
///
/// ```
/// use ocpp_tokio::{v1_6, v2_0_1, Answer, ChargePoint, DateTime, Handler, IncomingCall};
/// use ocpp_tokio::RequestRef;
///
/// struct Csms;
///
/// impl Handler for Csms {
///     async fn on_call(&self, _cp: &ChargePoint, call: IncomingCall) -> Answer {
///         match call.view() {
///             RequestRef::V1_6(v1_6::Request::Heartbeat(_)) => {
///                 Answer::result(v1_6::HeartbeatResponse::new(DateTime::now()))
///             }
///             RequestRef::V2_0_1(v2_0_1::Request::Heartbeat(_)) => {
///                 Answer::result(v2_0_1::HeartbeatResponse::new(DateTime::now()))
///             }
///             _ => Answer::not_supported(),
///         }
///     }
/// }
/// ```
pub trait Handler: Send + Sync + 'static {
    /// A charge point asks to connect: accept it, or refuse with an HTTP status (401 for bad
    /// Basic credentials, security profiles 1 and 2; 404 for an unknown identity; 403 when a
    /// client certificate's subject does not match, profile 3). Runs within the handshake
    /// deadline. The default accepts every charge point.
    fn on_upgrade(
        &self,
        request: &UpgradeRequest,
        certificate: Option<&PeerCertificate>,
    ) -> impl Future<Output = Upgrade> + Send {
        let _ = (request, certificate);
        async { Upgrade::Accept }
    }

    /// The charge point is connected and registered (its handle is in
    /// [`ChargePoints`](crate::ChargePoints)); runs in a task of its own, so it may call the
    /// charge point and wait.
    fn on_connect(&self, cp: ChargePoint) -> impl Future<Output = ()> + Send {
        let _ = cp;
        async {}
    }

    /// A CALL from the charge point; the answer goes out when the future completes. The
    /// charge point's next CALL waits until then (OCPP-J: one at a time). The default answers
    /// `NotSupported` (the action is known: an unknown one never reaches the handler, the
    /// core answers it `NotImplemented`).
    fn on_call(&self, cp: &ChargePoint, call: IncomingCall) -> impl Future<Output = Answer> + Send {
        let _ = (cp, call);
        async { Answer::not_supported() }
    }

    /// A SEND from the charge point (OCPP 2.1, e.g. NotifyPeriodicEventStream): never
    /// answered. SENDs of one connection are handled one after the other, in order.
    fn on_send(&self, cp: &ChargePoint, send: IncomingCall) -> impl Future<Output = ()> + Send {
        let _ = (cp, send);
        async {}
    }

    /// The connection of a charge point that had connected is over; runs in a task of its
    /// own. `closed` says why and lists what was left unanswered. When a newer connection
    /// replaced this one, the identity is already the newer one's: `charge_points.get(id) ==
    /// Some(cp)` tells whether `cp` still held it.
    fn on_close(&self, cp: &ChargePoint, closed: &Closed) -> impl Future<Output = ()> + Send {
        let _ = (cp, closed);
        async {}
    }
}

/// The upgrade decision of [`Handler::on_upgrade`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Upgrade {
    /// Complete the WebSocket upgrade.
    Accept,
    /// Refuse with this HTTP status (e.g. [`Upgrade::UNAUTHORIZED`]).
    Reject {
        /// The HTTP status sent.
        status: u16,
    },
}

impl Upgrade {
    /// 401: missing or bad Basic credentials (security profiles 1 and 2).
    pub const UNAUTHORIZED: Upgrade = Upgrade::Reject { status: 401 };
    /// 403: the client certificate does not belong to this identity (security profile 3).
    pub const FORBIDDEN: Upgrade = Upgrade::Reject { status: 403 };
    /// 404: unknown identity (OCPP-J §3.1: SHOULD).
    pub const NOT_FOUND: Upgrade = Upgrade::Reject { status: 404 };
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
    /// use ocpp_tokio::PeerCertificate;
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
}

/// How a CALL is answered: a CALLRESULT or a CALLERROR.
///
/// ```
/// use ocpp_tokio::{v1_6, Answer, DateTime, ErrorCode};
/// let now = DateTime::from_unix_timestamp(1_780_000_000).unwrap();
/// let ok = Answer::result(v1_6::HeartbeatResponse::new(now));
/// let refused = Answer::error(ErrorCode::SecurityError, "not accepted yet");
/// assert!(ok.is_result() && !refused.is_result());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Answer(pub(crate) AnswerKind);

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AnswerKind {
    Result(Response),
    Error {
        code: ErrorCode,
        description: String,
    },
}

impl Answer {
    /// A CALLRESULT with this payload: a generated response (`v1_6::HeartbeatResponse`), a
    /// version's response enum, or a [`Response`].
    pub fn result(response: impl Into<Response>) -> Self {
        Answer(AnswerKind::Result(response.into()))
    }

    /// A CALLERROR with this code (spelled for the connection's version) and description.
    pub fn error(code: ErrorCode, description: impl Into<String>) -> Self {
        Answer(AnswerKind::Error {
            code,
            description: description.into(),
        })
    }

    /// CALLERROR `NotSupported`: the action is known but this CSMS does not serve it.
    pub fn not_supported() -> Self {
        Answer::error(ErrorCode::NotSupported, "")
    }

    /// Whether this is a CALLRESULT.
    pub fn is_result(&self) -> bool {
        matches!(self.0, AnswerKind::Result(_))
    }
}

/// A shared handler (the application keeps a clone to reach its state).
impl<H: Handler> Handler for std::sync::Arc<H> {
    fn on_upgrade(
        &self,
        request: &UpgradeRequest,
        certificate: Option<&PeerCertificate>,
    ) -> impl Future<Output = Upgrade> + Send {
        (**self).on_upgrade(request, certificate)
    }

    fn on_connect(&self, cp: ChargePoint) -> impl Future<Output = ()> + Send {
        (**self).on_connect(cp)
    }

    fn on_call(&self, cp: &ChargePoint, call: IncomingCall) -> impl Future<Output = Answer> + Send {
        (**self).on_call(cp, call)
    }

    fn on_send(&self, cp: &ChargePoint, send: IncomingCall) -> impl Future<Output = ()> + Send {
        (**self).on_send(cp, send)
    }

    fn on_close(&self, cp: &ChargePoint, closed: &Closed) -> impl Future<Output = ()> + Send {
        (**self).on_close(cp, closed)
    }
}
