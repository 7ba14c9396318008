//! OCPP-J for tokio: serve charge points (OCPP 1.6, 2.0.1, 2.1 over WebSocket), answer their
//! CALLs with handlers, and call them with typed, awaitable requests.
//!
//! The I/O half over the Sans-IO [`ocpp_server_core`], as quinn is to quinn-proto: one task
//! per connection drives an [`ocpp_server_core::Connection`]; all protocol rules stay in the
//! core. The pieces:
//!
//! - [`Server`] (built by [`ServerBuilder`]): listens, TLS optionally (security profiles 2
//!   and 3), graceful shutdown (1001 to every connection, bounded);
//! - [`Handler`]: what the application writes, only the methods it needs;
//! - [`ChargePoints`]: the registry of connected charge points (newer connection wins), with a
//!   [`Remote`] seam for a cluster; with the feature `redis`, `ServerBuilder::cluster` makes
//!   the server a node of `ocpp-cluster`'s cluster on Redis (claims, takeover with 1008, calls
//!   routed to the node holding the charge point, drain on shutdown);
//! - [`ChargePoint`]: a handle to one connection: [`ChargePoint::call`] returns the action's
//!   typed response or a [`CallError`] that says exactly what happened.
//!
#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod charge_point;
#[cfg(feature = "redis")]
mod cluster;
mod driver;
mod error;
mod handler;
mod hook;
mod registry;
mod server;
mod typed;

pub use charge_point::{ChargePoint, Settings};
pub use error::{CallError, SendError, ServerError};
pub use handler::{Answer, Handler, IncomingCall, PeerCertificate, Upgrade};
pub use hook::{Message, MessageEvent};
pub use registry::{ChargePoints, Remote, RemoteCall};
pub use server::{Server, ServerBuilder};
pub use typed::{ResponseOf, TypedCall};

/// The cluster protocol on Redis that [`ServerBuilder::cluster`] plugs in (feature `redis`).
#[cfg(feature = "redis")]
pub use ocpp_cluster;
pub use ocpp_frame::handshake::BasicCredentials;
pub use ocpp_messages::{Request, RequestRef, Response, ResponseRef};
pub use ocpp_server_core::{
    v1_6, v2_0_1, v2_1, ChargePointIdentity, CloseCode, CloseReason, Closed, ConnectionConfig,
    DateTime, ErrorCode, MessageId, OcppVersion, UpgradeRequest,
};
pub use rustls;

/// The default handler: accepts every charge point, answers every CALL `NotSupported`.
impl Handler for () {}
