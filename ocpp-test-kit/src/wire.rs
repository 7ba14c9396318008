//! A charge point on the wire: [`WireChargePoint`].

use std::collections::VecDeque;
use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use ocpp_proto::station::{boot_request, BootReason, StationInfo};
use ocpp_proto::{
    Answer, CallOutcome, ChargePointIdentity, CloseCode, Closed, ConnectTarget, Connection,
    ConnectionConfig, ErrorCode, Event, MessageId, OcppVersion, Request, Response,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::{TestKitError, DEFAULT_WAIT};

/// The path of the upgrade request, before the identity: `/ocpp/IDENTITY`.
const ENDPOINT: &str = "/ocpp";

/// The WebSocket key of every upgrade request (a test's: any 16 bytes do).
const WEBSOCKET_KEY: [u8; 16] = [7; 16];

/// How much a read takes from the stream at most.
const READ_SIZE: usize = 16 * 1024;

/// The seed of the next charge point's core (each one its own).
static NEXT_SEED: AtomicU64 = AtomicU64::new(1);

/// A charge point on the wire, for a test of what a central system (or a relay between the
/// two) does on a real socket: the core of `ocpp-proto` on the client's side
/// ([`Connection::connect`]) driven over a tokio stream, a plain [`TcpStream`] or any other
/// (TLS, an in-memory duplex).
///
/// Unlike [`MockStation`](crate::MockStation), it does nothing on its own: the test drives it,
/// one step at a time. It upgrades with one OCPP version and no pings or idle timeout of its
/// own, reads only while the test waits for something ([`next_event`](Self::next_event) and
/// the waits built on it), and so stands for a stalled peer whenever the test leaves it alone.
/// Every wait ends within [`DEFAULT_WAIT`] ([`TestKitError::Timeout`]); for what it has no
/// method for, the core itself is at hand ([`connection_mut`](Self::connection_mut), then
/// [`flush`](Self::flush)), and so is the stream ([`stream_mut`](Self::stream_mut)).
///
/// ```
/// use ocpp_test_kit::{MockCsms, WireChargePoint};
/// use ocpp_proto::OcppVersion;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let csms = MockCsms::builder().versions([OcppVersion::V1_6]).start().await?;
/// let mut cp = WireChargePoint::connect(csms.local_addr(), "CP001", OcppVersion::V1_6).await?;
/// assert_eq!(cp.boot().await?, "Accepted");
/// assert_eq!(csms.wait_for_calls("BootNotification", 1).await?.len(), 1);
/// # Ok(()) }
/// ```
pub struct WireChargePoint<S = TcpStream> {
    stream: S,
    connection: Connection,
    /// Events taken from the core and not handed to the test yet, in order.
    events: VecDeque<Event>,
    identity: String,
}

impl<S> fmt::Debug for WireChargePoint<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WireChargePoint")
            .field("identity", &self.identity)
            .field("connection", &self.connection)
            .field("events", &self.events)
            .finish_non_exhaustive()
    }
}

impl WireChargePoint<TcpStream> {
    /// Connects to `addr` as `identity` speaking `version`, and waits until the upgrade is
    /// done ([`Event::Connected`]).
    ///
    /// # Errors
    /// As [`start`](Self::start); [`TestKitError::Closed`] when the upgrade is refused,
    /// [`TestKitError::UnexpectedEvent`] when another event comes first,
    /// [`TestKitError::Timeout`].
    ///
    /// ```no_run
    /// # async fn example(addr: std::net::SocketAddr) -> Result<(), ocpp_test_kit::TestKitError> {
    /// use ocpp_test_kit::WireChargePoint;
    /// let cp = WireChargePoint::connect(addr, "CP001", ocpp_proto::OcppVersion::V2_0_1).await?;
    /// assert_eq!(cp.connection().version(), Some(ocpp_proto::OcppVersion::V2_0_1));
    /// # Ok(()) }
    /// ```
    pub async fn connect(
        addr: SocketAddr,
        identity: &str,
        version: OcppVersion,
    ) -> Result<Self, TestKitError> {
        let mut cp = Self::start(addr, identity, version, None).await?;
        match cp.next_event().await? {
            Event::Connected { .. } => Ok(cp),
            Event::Closed(closed) => Err(TestKitError::Closed {
                waiting_for: format!("{identity}'s upgrade"),
                closed,
            }),
            other => Err(TestKitError::UnexpectedEvent(format!(
                "{identity}: {other:?} before Connected"
            ))),
        }
    }

    /// Opens a TCP connection to `addr` (no Nagle delay) and makes the upgrade request, with
    /// Basic credentials when there is a `password`; the request goes out with the first
    /// wait, whose first event tells how the upgrade went ([`Event::Connected`], or
    /// [`Event::Closed`] with [`UpgradeRefused`](ocpp_proto::CloseReason::UpgradeRefused)).
    ///
    /// # Errors
    /// [`TestKitError::Io`] or [`TestKitError::Timeout`] when the connection cannot be
    /// opened; as [`over`](Self::over).
    ///
    /// ```no_run
    /// # async fn example(addr: std::net::SocketAddr) -> Result<(), ocpp_test_kit::TestKitError> {
    /// use ocpp_proto::{Event, OcppVersion};
    /// use ocpp_test_kit::WireChargePoint;
    /// let mut cp = WireChargePoint::start(addr, "CP001", OcppVersion::V1_6, Some(b"password-0123456")).await?;
    /// assert!(matches!(cp.next_event().await?, Event::Connected { .. }));
    /// # Ok(()) }
    /// ```
    pub async fn start(
        addr: SocketAddr,
        identity: &str,
        version: OcppVersion,
        password: Option<&[u8]>,
    ) -> Result<Self, TestKitError> {
        let stream = tokio::time::timeout(DEFAULT_WAIT, TcpStream::connect(addr))
            .await
            .map_err(|_| TestKitError::Timeout(format!("a TCP connection to {addr}")))??;
        stream.set_nodelay(true)?;
        Self::over(stream, &addr.to_string(), identity, version, password)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> WireChargePoint<S> {
    /// A charge point on a `stream` already open (TLS, in-memory...), making the upgrade
    /// request to `host` as [`start`](WireChargePoint::start) does.
    ///
    /// # Errors
    /// [`TestKitError::Refused`]: an identity or a host the core cannot use.
    ///
    /// ```
    /// use ocpp_proto::OcppVersion;
    /// use ocpp_test_kit::WireChargePoint;
    /// let (client, _server) = tokio::io::duplex(4096);
    /// let cp = WireChargePoint::over(client, "in-memory", "CP001", OcppVersion::V2_0_1, None)?;
    /// assert!(!cp.connection().is_open());
    /// # Ok::<(), ocpp_test_kit::TestKitError>(())
    /// ```
    pub fn over(
        stream: S,
        host: &str,
        identity: &str,
        version: OcppVersion,
        password: Option<&[u8]>,
    ) -> Result<Self, TestKitError> {
        let refused = |what: String| TestKitError::Refused(format!("{identity}: {what}"));
        let charge_point = ChargePointIdentity::new(identity.to_owned(), false)
            .map_err(|e| refused(e.to_string()))?;
        let mut target = ConnectTarget::new(host, ENDPOINT, charge_point);
        if let Some(password) = password {
            target = target.with_password(password);
        }
        let config = ConnectionConfig::default()
            .versions(vec![version])
            .ping_interval(None)
            .idle_timeout(None);
        let seed = NEXT_SEED.fetch_add(1, Ordering::Relaxed);
        let connection = Connection::connect(
            Instant::now(),
            Arc::new(config),
            &target,
            WEBSOCKET_KEY,
            seed,
        )
        .map_err(|e| refused(e.to_string()))?;
        Ok(WireChargePoint {
            stream,
            connection,
            events: VecDeque::new(),
            identity: identity.to_owned(),
        })
    }

    /// The core.
    #[must_use]
    pub fn connection(&self) -> &Connection {
        &self.connection
    }

    /// The core, for what this type has no method for (a CALL whose outcome the test waits
    /// for itself, a SEND...); [`flush`](Self::flush) writes out what it made.
    ///
    /// ```no_run
    /// # async fn example(mut cp: ocpp_test_kit::WireChargePoint) -> Result<(), Box<dyn std::error::Error>> {
    /// use ocpp_proto::{v1_6, Request};
    /// let beat = Request::from(v1_6::Request::from(v1_6::HeartbeatRequest {}));
    /// cp.connection_mut().call(std::time::Instant::now(), beat)?;
    /// cp.flush().await?;
    /// # Ok(()) }
    /// ```
    pub fn connection_mut(&mut self) -> &mut Connection {
        &mut self.connection
    }

    /// The stream, for bytes of the test's own or a read of its own.
    pub fn stream_mut(&mut self) -> &mut S {
        &mut self.stream
    }

    /// Writes out what the core has to send. What the core handed over counts as sent even
    /// when the write fails (the stream is gone: the next wait reads its end).
    ///
    /// # Errors
    /// [`TestKitError::Io`], [`TestKitError::Timeout`] (the peer does not read).
    pub async fn flush(&mut self) -> Result<(), TestKitError> {
        tokio::time::timeout(DEFAULT_WAIT, self.transmit())
            .await
            .map_err(|_| TestKitError::Timeout(format!("{} to write", self.identity)))?
            .map_err(TestKitError::from)
    }

    /// Writes what the core has to send, unbounded (the callers bound it).
    async fn transmit(&mut self) -> std::io::Result<()> {
        let pending = self.connection.pending_transmit();
        if pending.is_empty() {
            return Ok(());
        }
        let written = self.stream.write_all(pending).await;
        let len = pending.len();
        self.connection.advance_transmit(len);
        written
    }

    /// Writes `bytes` as they are (whole WebSocket frames: the core does not know of them),
    /// after what the core has to send.
    ///
    /// # Errors
    /// [`TestKitError::Io`], [`TestKitError::Timeout`] (the peer does not read).
    pub async fn write_raw(&mut self, bytes: &[u8]) -> Result<(), TestKitError> {
        self.flush().await?;
        tokio::time::timeout(DEFAULT_WAIT, self.stream.write_all(bytes))
            .await
            .map_err(|_| TestKitError::Timeout(format!("{} to write", self.identity)))?
            .map_err(TestKitError::from)
    }

    /// The next event of the core: reads (and writes what the core has to send) until there
    /// is one. The end of the stream, or a failed read, is the core's to judge
    /// ([`Event::Closed`] comes as an event, not as an error).
    ///
    /// # Errors
    /// [`TestKitError::Timeout`] when no event comes within [`DEFAULT_WAIT`].
    pub async fn next_event(&mut self) -> Result<Event, TestKitError> {
        match tokio::time::timeout(DEFAULT_WAIT, self.drive()).await {
            Ok(event) => Ok(event),
            Err(_) => Err(TestKitError::Timeout(format!(
                "an event of {} ({:?})",
                self.identity, self.connection
            ))),
        }
    }

    /// Feeds the core what the stream brings and the time that passes until it has an event.
    async fn drive(&mut self) -> Event {
        let mut buffer = vec![0u8; READ_SIZE];
        loop {
            while let Some(event) = self.connection.poll_event() {
                self.events.push_back(event);
            }
            // A write that fails leaves the stream's end to the read below.
            let _ = self.transmit().await;
            if let Some(event) = self.events.pop_front() {
                return event;
            }
            let timer = self.connection.poll_timeout().map_or(DEFAULT_WAIT, |at| {
                at.saturating_duration_since(Instant::now())
            });
            match tokio::time::timeout(timer, self.stream.read(&mut buffer)).await {
                Ok(Ok(0) | Err(_)) => self.connection.handle_eof(Instant::now()),
                Ok(Ok(read)) => {
                    let data = buffer.get(..read).unwrap_or_default();
                    self.connection.handle_data(Instant::now(), data);
                }
                Err(_) => self.connection.handle_timeout(Instant::now()),
            }
        }
    }

    /// Sends a CALL and waits for its outcome (a CALL the core refuses to send ends at once,
    /// as the [`CallFailure`](ocpp_proto::CallFailure) of its reason). The events that come
    /// meanwhile wait, in order, for the next [`next_event`](Self::next_event).
    ///
    /// # Errors
    /// [`TestKitError::Closed`], [`TestKitError::Timeout`].
    ///
    /// ```no_run
    /// # async fn example(mut cp: ocpp_test_kit::WireChargePoint) -> Result<(), ocpp_test_kit::TestKitError> {
    /// use ocpp_proto::{v1_6, Request};
    /// let beat = Request::from(v1_6::Request::from(v1_6::HeartbeatRequest {}));
    /// assert!(cp.call(beat).await?.is_ok());
    /// # Ok(()) }
    /// ```
    pub async fn call(&mut self, request: Request) -> Result<CallOutcome, TestKitError> {
        let action = request.action();
        let sent = match self.connection.call(Instant::now(), request) {
            Ok(id) => id,
            Err(refused) => return Ok(Err(refused.reason.into())),
        };
        let mut meanwhile = VecDeque::new();
        let outcome = loop {
            match self.next_event().await {
                Ok(Event::CallCompleted { id, outcome, .. }) if id == sent => break Ok(outcome),
                Ok(Event::Closed(closed)) => {
                    break Err(TestKitError::Closed {
                        waiting_for: format!("the outcome of {}'s {action}", self.identity),
                        closed,
                    })
                }
                Ok(event) => meanwhile.push_back(event),
                Err(error) => break Err(error),
            }
        };
        while let Some(event) = meanwhile.pop_back() {
            self.events.push_front(event);
        }
        outcome
    }

    /// Sends a SEND (OCPP 2.1: never answered).
    ///
    /// # Errors
    /// [`TestKitError::Refused`] (not open, not 2.1, the queue full), [`TestKitError::Io`],
    /// [`TestKitError::Timeout`].
    pub async fn send(&mut self, request: Request) -> Result<(), TestKitError> {
        self.connection
            .send(Instant::now(), request)
            .map_err(|refused| {
                TestKitError::Refused(format!("{}'s SEND: {}", self.identity, refused.reason))
            })?;
        self.flush().await
    }

    /// Waits for a CALL of the peer; the events before it (other than the end) are dropped.
    ///
    /// # Errors
    /// [`TestKitError::Closed`], [`TestKitError::Timeout`].
    ///
    /// ```no_run
    /// # async fn example(mut cp: ocpp_test_kit::WireChargePoint) -> Result<(), ocpp_test_kit::TestKitError> {
    /// use ocpp_proto::{v1_6, Response};
    /// let (id, request) = cp.wait_for_call().await?;
    /// assert_eq!(request.action(), "Reset");
    /// let accepted = v1_6::ResetResponse { status: v1_6::ResetStatus::Accepted };
    /// cp.call_result(&id, Response::from(v1_6::Response::from(accepted))).await?;
    /// # Ok(()) }
    /// ```
    pub async fn wait_for_call(&mut self) -> Result<(MessageId<'static>, Request), TestKitError> {
        loop {
            match self.next_event().await? {
                Event::Call { id, request } => return Ok((id, request)),
                Event::Closed(closed) => {
                    return Err(TestKitError::Closed {
                        waiting_for: format!("a CALL to {}", self.identity),
                        closed,
                    })
                }
                _ => {}
            }
        }
    }

    /// Answers the peer's CALL `id`, and writes the answer out.
    ///
    /// # Errors
    /// [`TestKitError::Refused`] (the connection is not open, no CALL `id` waits for an
    /// answer, a result of another action or version: the core wrote CALLERROR
    /// `InternalError` in its place), [`TestKitError::Io`], [`TestKitError::Timeout`].
    pub async fn answer(&mut self, id: &MessageId<'_>, answer: Answer) -> Result<(), TestKitError> {
        let answered = self.connection.answer(Instant::now(), id, answer);
        // What the core wrote goes out, whether the answer was its own or not.
        self.flush().await?;
        answered.map_err(|e| {
            let id = id.as_str();
            TestKitError::Refused(format!("{}'s answer to {id}: {e}", self.identity))
        })
    }

    /// Answers the peer's CALL `id` with a CALLRESULT.
    ///
    /// # Errors
    /// As [`answer`](Self::answer).
    pub async fn call_result(
        &mut self,
        id: &MessageId<'_>,
        response: Response,
    ) -> Result<(), TestKitError> {
        self.answer(id, Answer::Result(response)).await
    }

    /// Answers the peer's CALL `id` with a CALLERROR (also one the peer gave up on: the core
    /// of this side still owes it an answer).
    ///
    /// # Errors
    /// As [`answer`](Self::answer).
    ///
    /// ```no_run
    /// # async fn example(mut cp: ocpp_test_kit::WireChargePoint) -> Result<(), ocpp_test_kit::TestKitError> {
    /// let (id, _) = cp.wait_for_call().await?;
    /// cp.call_error(&id, ocpp_proto::ErrorCode::NotSupported, "no").await?;
    /// # Ok(()) }
    /// ```
    pub async fn call_error(
        &mut self,
        id: &MessageId<'_>,
        code: ErrorCode,
        description: &str,
    ) -> Result<(), TestKitError> {
        self.answer(id, Answer::error(code, description)).await
    }

    /// Starts the closing handshake with `code` and `reason`; the end comes with
    /// [`wait_for_close`](Self::wait_for_close).
    ///
    /// # Errors
    /// [`TestKitError::Io`], [`TestKitError::Timeout`].
    pub async fn close(&mut self, code: CloseCode, reason: &str) -> Result<(), TestKitError> {
        self.connection.close(Instant::now(), code, reason);
        self.flush().await
    }

    /// Waits for the end of the connection; the events before it are dropped.
    ///
    /// # Errors
    /// [`TestKitError::Timeout`].
    ///
    /// ```no_run
    /// # async fn example(mut cp: ocpp_test_kit::WireChargePoint) -> Result<(), ocpp_test_kit::TestKitError> {
    /// use ocpp_proto::{CloseCode, CloseReason};
    /// let closed = cp.wait_for_close().await?;
    /// assert!(matches!(closed.reason, CloseReason::PeerClosed { code: Some(CloseCode::GOING_AWAY), .. }));
    /// # Ok(()) }
    /// ```
    pub async fn wait_for_close(&mut self) -> Result<Closed, TestKitError> {
        loop {
            if let Event::Closed(closed) = self.next_event().await? {
                return Ok(*closed);
            }
        }
    }

    /// Sends the version's BootNotification (vendor `ACME`, model `Test`, 2.x reason
    /// `PowerUp`) and returns the status of the answer as the central system spelt it.
    ///
    /// # Errors
    /// [`TestKitError::NotConnected`] (no version yet), [`TestKitError::Call`] (a CALLERROR,
    /// no answer...), [`TestKitError::Payload`] (an answer without a status), as
    /// [`call`](Self::call).
    pub async fn boot(&mut self) -> Result<String, TestKitError> {
        let not_connected = || TestKitError::NotConnected(self.identity.clone());
        let version = self.connection.version().ok_or_else(not_connected)?;
        let info = StationInfo::new("ACME", "Test");
        let request = boot_request(version, &info, BootReason::PowerUp).ok_or_else(|| {
            TestKitError::Payload(format!("no BootNotification of {version:?} compiled in"))
        })?;
        let response = self.call(request).await??;
        let payload = serde_json::to_value(&response)
            .map_err(|e| TestKitError::Payload(format!("BootNotification: {e}")))?;
        match payload.get("status").and_then(|status| status.as_str()) {
            Some(status) => Ok(status.to_owned()),
            None => Err(TestKitError::Payload(format!(
                "BootNotification answered without a status: {payload}"
            ))),
        }
    }
}
