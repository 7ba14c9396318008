//! The Sans-IO OCPP-J connection: what a central system (CSMS) drives for each charge point,
//! and what a charge point (or a load generator) drives for its link to the CSMS.
//!
//! One [`Connection`] per peer takes bytes and the time, and hands back typed [`Event`]s, bytes
//! to write and its next deadline. It holds the OCPP-J rules that libraries in the field get
//! partly wrong:
//!
//! - the upgrade: identity from the last path segment (percent-decoded; OCPP 2.x: at most 48
//!   characters, no `:`), Basic credentials and the offered subprotocols reach the application,
//!   which accepts or rejects (401, 404) before the upgrade completes; the version is chosen by
//!   the client's order or a server policy; no common version completes the handshake and closes,
//!   or answers 400 ([`NoCommonVersion`]); a handshake that drags on is dropped;
//! - one outstanding CALL per direction: further CALLs queue (bounded); a peer's CALL that
//!   arrives before its previous one was answered is held (bounded) so that answers leave in the
//!   order the CALLs came; SEND (2.1) neither counts nor is answered;
//! - correlation: a CALLRESULT is decoded with its CALL's action; an unknown id is reported, not
//!   fatal; timeouts are events; a CALLRESULT that does not decode gets a CALLRESULTERROR on 2.1;
//! - every CALL received is answered exactly once ([`Connection::answer`], the one answer rule:
//!   an answer of another action or version than the CALL's becomes CALLERROR `InternalError`,
//!   never a wrong payload): by the application, or by the core with the CALLERROR its
//!   problem calls for (NotImplemented for an unknown action, the schema
//!   violation's code, FormationViolation/FormatViolation for bad JSON), spelled for the
//!   negotiated version;
//! - keep-alive and timers in a small table ([`Connection::poll_timeout`] is their minimum);
//!   every expiry ends in a terminal state;
//! - back-pressure: a bounded output, messages handed back when full ([`Refused`]), pongs and
//!   close frames always let through, a peer that stops reading dropped;
//! - a final [`Event::Closed`] that lists the CALLs left unanswered both ways;
//! - one vocabulary for what a CALL of ours came to ([`CallOutcome`], [`CallFailure`]), each
//!   failure saying whether the CALL may have reached the peer ([`Delivery`]), for every
//!   driver and path to reuse.
//!
//! - relay mode ([`ConnectionConfig::relay_text`]): text messages handed over unparsed and
//!   written byte for byte ([`Event::Text`], [`Connection::send_text`]), and an upgrade
//!   accepted with a version chosen elsewhere ([`Connection::accept_version`]), for a Local
//!   Controller or a proxy that must not re-serialise what it relays.
//!
//! An idle open connection is 168 bytes and holds no heap buffer (see `tests/memory.rs`).
//! [`IdentityTable`] keeps identities to connections with the policy a CSMS needs for
//! duplicates: the newer connection wins.
//! [`station`] holds the rules a charging station follows around its connection, for every driver.
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

/// The README's examples, compiled as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub mod accept;
mod answer;
mod command;
mod config;
mod connection;
mod event;
mod identity;
mod identity_table;
mod outcome;
mod rate;
mod rejection;
pub mod station;
mod timer;

pub use answer::{Answer, AnswerError, ErrorAnswer};
pub use command::command_request;
pub use outcome::{CallFailure, CallOutcome, Delivery};
pub use rate::Rate;
pub use rejection::Rejection;

pub use config::{ConnectionConfig, DeflatePolicy, NoCommonVersion, VersionPolicy};
// What a CSMS uses from the layers below, so that one dependency suffices.
pub use connection::{ConnectTarget, Connection, RefusalReason, Refused, Side, WrongState};
pub use event::{CloseReason, Closed, Event, IncomingUpgrade, UnansweredCall};
pub use identity::{ChargePointIdentity, IdentityError};
pub use identity_table::{IdentityTable, Superseded};
pub use ocpp_frame::CloseCode;
#[cfg(feature = "v1_6")]
pub use ocpp_messages::v1_6;
#[cfg(feature = "v2_0_1")]
pub use ocpp_messages::v2_0_1;
#[cfg(feature = "v2_1")]
pub use ocpp_messages::v2_1;
pub use ocpp_messages::{
    envelope::MessageId, ActionRequest, ActionResponse, DateTime, Decimal, DecodeOptions,
    ErrorCode, OcppVersion, Request, RequestRef, Response, ResponseRef,
};
