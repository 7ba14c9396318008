//! OCPP-J for tokio: serve charge points (OCPP 1.6, 2.0.1, 2.1 over WebSocket), answer their
//! CALLs with typed handlers, and call them with typed, awaitable requests.
//!
//! The I/O half over the Sans-IO [`ocpp_proto`], as quinn is to quinn-proto: one driver
//! per connection drives an [`ocpp_proto::Connection`], in a task of its own or on a
//! shard with many others ([`ServerBuilder::shards`]); every protocol rule stays in the core, including the rules around a call (an answer checked against its CALL, what a call's
//! outcome means). The crate, by concept:
//!
//! - **the server** ([`server`]): [`Server`] (a listener, built by [`ServerBuilder`]) and
//!   [`Service`](server::Service) (streams you accept yourself); shards (many connections per
//!   task, on an epoll of their own); TLS (security profiles 2 and 3), graceful shutdown (1001
//!   to every connection, bounded);
//! - **the application** ([`router`], [`handler`]): a [`Router`] with one typed async function
//!   per action, or a [`Handler`] for what is not routed; each connection has a [`Session`]
//!   holding the application's per-connection state, made when the charge point
//!   [connects](Connecting);
//! - **the charge points** ([`registry`]): [`ChargePoints`] (who is connected; newer connection
//!   wins) and [`ChargePoint`] handles whose [`call`](ChargePoint::call) returns the action's
//!   typed response or a [`CallFailure`] that says what happened and whether the CALL may have
//!   reached the charge point;
//! - **a cluster**: two seams, [`presence::Presence`] (which connections this node holds) and
//!   [`registry::Remote`] (calls for charge points held elsewhere); `ocpp-cluster` (its
//!   feature `tokio`) plugs its cluster on Redis into both, and your own backend can;
//! - **a charging station** ([`station`]): [`Station`] connects to a central system, boots as
//!   the specifications say, answers with the same [`Router`], reconnects with the back-off of
//!   OCPP 2.0.1, and delivers transaction messages through an offline queue that survives
//!   the process;
//! - **the message hook** ([`hook`]): one function for every message in and out;
//! - **the protocol** ([`ocpp`]): the types of the layers below (payloads per version, the
//!   answer and outcome types, identities, close codes, configuration).
//!
#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod charge_point;
mod driver;
mod error;
pub mod handler;
#[cfg_attr(not(unix), allow(dead_code))]
mod handoff;
pub mod hook;
pub mod presence;
pub mod registry;
pub mod router;
pub mod server;
mod session;
#[cfg(unix)]
mod shard;
pub mod station;
mod typed;

/// A boxed future that may move between threads: the application's work as the drivers, the
/// station and the router hold it.
pub(crate) type BoxFuture<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>;

/// The protocol types of the layers below, in one place: the typed payloads of each version,
/// the answer rule's and the call outcome's types, identities, close codes and the connection
/// settings.
pub mod ocpp {
    pub use ocpp_frame::handshake::BasicCredentials;
    pub use ocpp_messages::{Request, RequestRef, Response, ResponseRef};
    pub use ocpp_proto::{
        v1_6, v2_0_1, v2_1, Answer, CallFailure, CallOutcome, ChargePointIdentity, CloseCode,
        CloseReason, Closed, ConnectionConfig, DateTime, Decimal, Delivery, ErrorAnswer, ErrorCode,
        IncomingUpgrade, MessageId, OcppVersion, Rejection,
    };
}

// The server.
pub use server::{Server, ServerBuilder};
// The application.
pub use handler::{Connecting, Handler, IncomingCall};
pub use router::{Reply, Router};
pub use session::Session;
// The charging station.
pub use station::Station;
// The charge points.
pub use registry::{ChargePoint, ChargePoints};
// What every program names.
pub use ocpp::{
    v1_6, v2_0_1, v2_1, Answer, CallFailure, ConnectionConfig, DateTime, Decimal, ErrorAnswer,
    ErrorCode, OcppVersion, Rejection,
};

/// The version-neutral model of the protocol's concepts ([`Router::on_concept`]).
pub use ocpp_model as model;
/// The TLS library of [`ServerBuilder::tls`].
pub use rustls;
