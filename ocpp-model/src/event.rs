//! [`StationEvent`]: what a charge point's request means, in one vocabulary for every version.

use ocpp_messages::{Request, RequestRef};

use crate::{
    AuthorizationRequested, Booted, FirmwareStatus, LogStatus, MeterReadings, SecurityEvent,
    StatusChanged, TransactionEnded, TransactionStarted, TransactionUpdated,
};

/// A charge point's request, read as a concept of the protocol.
///
/// The model is a layer, not a wall: what it does not model is [`StationEvent::Other`] with the
/// typed request itself, and every event can be answered with [`StationEvent::respond`] or, the raw
/// way, with the typed response of its action.
///
/// ```
/// use ocpp_messages::{v2_0_1, DecodeOptions, OcppVersion, Request};
/// use ocpp_model::{IdToken, IdTokenType, StationEvent};
///
/// let request = Request::decode(
///     OcppVersion::V2_0_1,
///     "Authorize",
///     r#"{"idToken":{"idToken":"04A2B3C4","type":"ISO14443"}}"#,
///     &DecodeOptions::strict(),
/// )?;
/// match StationEvent::from_request(&request) {
///     StationEvent::AuthorizationRequested(asked) => {
///         assert_eq!(asked.token, IdToken::new("04A2B3C4", IdTokenType::Iso14443));
///     }
///     other => panic!("{other:?}"),
/// }
/// # Ok::<(), ocpp_messages::DecodeError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StationEvent {
    /// `BootNotification`.
    Booted(Booted),
    /// `StatusNotification`.
    StatusChanged(StatusChanged),
    /// `Authorize`.
    AuthorizationRequested(AuthorizationRequested),
    /// 1.6 `StartTransaction`, 2.x `TransactionEvent` `Started`.
    TransactionStarted(TransactionStarted),
    /// 1.6 `MeterValues` with a `transactionId`, 2.x `TransactionEvent` `Updated`.
    TransactionUpdated(TransactionUpdated),
    /// 1.6 `StopTransaction`, 2.x `TransactionEvent` `Ended`.
    TransactionEnded(TransactionEnded),
    /// `MeterValues` outside a transaction.
    MeterReadings(MeterReadings),
    /// `Heartbeat`.
    Heartbeat(Heartbeat),
    /// `SecurityEventNotification`.
    SecurityEvent(SecurityEvent),
    /// `FirmwareStatusNotification`.
    FirmwareStatus(FirmwareStatus),
    /// `LogStatusNotification`.
    LogStatus(LogStatus),
    /// Any other request (or one whose values the model cannot read, such as a negative
    /// connector id), as it came.
    Other(Request),
}

impl StationEvent {
    /// Reads a charge point's request of any version.
    ///
    /// ```
    /// use ocpp_messages::{v1_6, Request};
    /// use ocpp_model::StationEvent;
    ///
    /// let heartbeat: Request = v1_6::HeartbeatRequest::default().into();
    /// let read = StationEvent::from_request(&heartbeat);
    /// assert_eq!(read, StationEvent::Heartbeat(ocpp_model::Heartbeat));
    /// let clear: Request = v1_6::ClearCacheRequest::default().into();
    /// assert_eq!(StationEvent::from_request(&clear), StationEvent::Other(clear));
    /// ```
    pub fn from_request(request: &Request) -> StationEvent {
        let event = match request.view() {
            RequestRef::V1_6(request) => crate::v1_6::event(request),
            RequestRef::V2_0_1(request) => crate::v2::v2_0_1::event(request),
            RequestRef::V2_1(request) => crate::v2::v2_1::event(request),
            #[allow(unreachable_patterns)]
            _ => None,
        };
        event.unwrap_or_else(|| StationEvent::Other(request.clone()))
    }

    /// The event's name, for errors and logs (`TransactionStarted`...).
    pub fn name(&self) -> &'static str {
        match self {
            StationEvent::Booted(_) => "Booted",
            StationEvent::StatusChanged(_) => "StatusChanged",
            StationEvent::AuthorizationRequested(_) => "AuthorizationRequested",
            StationEvent::TransactionStarted(_) => "TransactionStarted",
            StationEvent::TransactionUpdated(_) => "TransactionUpdated",
            StationEvent::TransactionEnded(_) => "TransactionEnded",
            StationEvent::MeterReadings(_) => "MeterReadings",
            StationEvent::Heartbeat(_) => "Heartbeat",
            StationEvent::SecurityEvent(_) => "SecurityEvent",
            StationEvent::FirmwareStatus(_) => "FirmwareStatus",
            StationEvent::LogStatus(_) => "LogStatus",
            StationEvent::Other(_) => "Other",
        }
    }
}

impl From<&Request> for StationEvent {
    fn from(request: &Request) -> StationEvent {
        StationEvent::from_request(request)
    }
}

/// A `Heartbeat`: nothing but the charge point saying it is there (answer it with
/// [`EventAnswer::Heartbeat`](crate::EventAnswer::Heartbeat)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Heartbeat;

/// One concept of [`StationEvent`], as a handler of that concept alone takes it (a router routes
/// each event to the handler of its concept: `ocpp_tokio::Router::on_concept`).
///
/// ```
/// use ocpp_messages::{v1_6, Request};
/// use ocpp_model::{Concept, Heartbeat, StationEvent, TransactionStarted};
///
/// let heartbeat: Request = v1_6::HeartbeatRequest::default().into();
/// let event = StationEvent::from_request(&heartbeat);
/// let event = TransactionStarted::from_event(event).unwrap_err(); // not this concept
/// assert_eq!(Heartbeat::from_event(event), Ok(Heartbeat));
/// ```
pub trait Concept: Sized {
    /// The concept `event` is, or the event back when it is another.
    ///
    /// # Errors
    /// `event` itself, when it is another concept.
    // The event comes back by value so that a router tries the next concept without a copy
    // or an allocation; it is as large as the `Ok` side anyway.
    #[allow(clippy::result_large_err)]
    fn from_event(event: StationEvent) -> Result<Self, StationEvent>;
}

/// [`Concept`] for the events that carry one value, each variant named as its concept.
macro_rules! concepts {
    ($($concept:ident),+ $(,)?) => {
        $(
            impl Concept for $concept {
                #[allow(clippy::result_large_err)]
                fn from_event(event: StationEvent) -> Result<Self, StationEvent> {
                    match event {
                        StationEvent::$concept(concept) => Ok(concept),
                        other => Err(other),
                    }
                }
            }
        )+
    };
}

concepts!(
    Booted,
    StatusChanged,
    AuthorizationRequested,
    TransactionStarted,
    TransactionUpdated,
    TransactionEnded,
    MeterReadings,
    Heartbeat,
    SecurityEvent,
    FirmwareStatus,
    LogStatus,
);
