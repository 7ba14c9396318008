//! [`Event`]: what a charge point's request means, in one vocabulary for every version.

use ocpp_messages::{Request, RequestRef};

use crate::{
    AuthorizationRequested, Booted, FirmwareStatus, LogStatus, MeterReadings, SecurityEvent,
    StatusChanged, TransactionEnded, TransactionStarted, TransactionUpdated,
};

/// A charge point's request, read as a concept of the protocol.
///
/// The model is a layer, not a wall: what it does not model is [`Event::Other`] with the typed
/// request itself, and every event can be answered with [`Event::respond`] or, the raw way,
/// with the typed response of its action.
///
/// ```
/// use ocpp_messages::{v2_0_1, DecodeOptions, OcppVersion, Request};
/// use ocpp_model::{Event, IdToken, IdTokenType};
///
/// let request = Request::decode(
///     OcppVersion::V2_0_1,
///     "Authorize",
///     r#"{"idToken":{"idToken":"04A2B3C4","type":"ISO14443"}}"#,
///     &DecodeOptions::strict(),
/// )?;
/// match Event::from_request(&request) {
///     Event::AuthorizationRequested(asked) => {
///         assert_eq!(asked.token, IdToken::new("04A2B3C4", IdTokenType::Iso14443));
///     }
///     other => panic!("{other:?}"),
/// }
/// # Ok::<(), ocpp_messages::DecodeError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event {
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

impl Event {
    /// Reads a charge point's request of any version.
    ///
    /// ```
    /// use ocpp_messages::{v1_6, Request};
    /// use ocpp_model::Event;
    ///
    /// let heartbeat: Request = v1_6::HeartbeatRequest::default().into();
    /// assert_eq!(Event::from_request(&heartbeat), Event::Heartbeat(ocpp_model::Heartbeat));
    /// let clear: Request = v1_6::ClearCacheRequest::default().into();
    /// assert_eq!(Event::from_request(&clear), Event::Other(clear));
    /// ```
    pub fn from_request(request: &Request) -> Event {
        let event = match request.view() {
            RequestRef::V1_6(request) => crate::v1_6::event(request),
            RequestRef::V2_0_1(request) => crate::v2::v2_0_1::event(request),
            RequestRef::V2_1(request) => crate::v2::v2_1::event(request),
            #[allow(unreachable_patterns)]
            _ => None,
        };
        event.unwrap_or_else(|| Event::Other(request.clone()))
    }

    /// The event's name, for errors and logs (`TransactionStarted`...).
    pub fn name(&self) -> &'static str {
        match self {
            Event::Booted(_) => "Booted",
            Event::StatusChanged(_) => "StatusChanged",
            Event::AuthorizationRequested(_) => "AuthorizationRequested",
            Event::TransactionStarted(_) => "TransactionStarted",
            Event::TransactionUpdated(_) => "TransactionUpdated",
            Event::TransactionEnded(_) => "TransactionEnded",
            Event::MeterReadings(_) => "MeterReadings",
            Event::Heartbeat(_) => "Heartbeat",
            Event::SecurityEvent(_) => "SecurityEvent",
            Event::FirmwareStatus(_) => "FirmwareStatus",
            Event::LogStatus(_) => "LogStatus",
            Event::Other(_) => "Other",
        }
    }
}

impl From<&Request> for Event {
    fn from(request: &Request) -> Event {
        Event::from_request(request)
    }
}

/// A `Heartbeat`: nothing but the charge point saying it is there (answer it with
/// [`EventAnswer::Heartbeat`](crate::EventAnswer::Heartbeat)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Heartbeat;

/// One concept of [`Event`], as a handler of that concept alone takes it (a router routes
/// each event to the handler of its concept: `ocpp_tokio::Router::on_concept`).
///
/// ```
/// use ocpp_messages::{v1_6, Request};
/// use ocpp_model::{Concept, Event, Heartbeat, TransactionStarted};
///
/// let heartbeat: Request = v1_6::HeartbeatRequest::default().into();
/// let event = Event::from_request(&heartbeat);
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
    fn from_event(event: Event) -> Result<Self, Event>;
}

/// [`Concept`] for the events that carry one value, each variant named as its concept.
macro_rules! concepts {
    ($($concept:ident),+ $(,)?) => {
        $(
            impl Concept for $concept {
                #[allow(clippy::result_large_err)]
                fn from_event(event: Event) -> Result<Self, Event> {
                    match event {
                        Event::$concept(concept) => Ok(concept),
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
