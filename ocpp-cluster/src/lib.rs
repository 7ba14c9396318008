//! The OCPP-J cluster protocol on Redis: several CSMS nodes behind a load balancer share one
//! view of which node holds which charge point, and a command for any charge point can be
//! issued on any node.
//!
//! - **Presence**: a claim per identity (`<prefix>:cp:<identity>`, a hash of node and epoch,
//!   with a TTL), made by `claim.lua`, extended by `refresh.lua` only while still this node's,
//!   released by `release.lua` only if still this node's epoch. A node record per node
//!   (`<prefix>:node:<node>`) with a TTL too.
//! - **Takeover**: the newest claim wins; the previous holder hears it at once on its inbox
//!   channel and at the latest at its next refresh, as [`ClusterEvent::Superseded`] (close that
//!   socket with [`CLOSE_SUPERSEDED`], 1008).
//! - **Routing**: [`Cluster::call`] runs the command through the local [`Executor`] if this node
//!   holds the charge point, or publishes it to the holder's inbox (`route.lua`) and waits for
//!   the one reply; at most once, never past its deadline, always one answer within the
//!   timeout: the core's [`CallFailure`] when there is no CALLRESULT, the same vocabulary as
//!   a local CALL, each saying whether the CALL may have reached the charge point
//!   ([`Delivery`]).
//! - **Failures**: every Redis call is bounded; with Redis down local work goes on and remote
//!   calls fail fast; when Redis returns every claim is registered again. Behind Redis
//!   Sentinel (`redis+sentinel://`, [`ClusterConfig::redis_url`]) a node finds the master
//!   through the sentinels and follows it through a failover (PROTOCOL.md 1.1). On a Redis
//!   Cluster (`redis-cluster://`) the claims spread over the masters by slot, and the node
//!   records and inboxes (sharded pub/sub) share one slot (PROTOCOL.md 1.2).
//!
//! Two faces: [`Cluster`] (async, tokio) and [`ClusterBridge`] (its own thread; non-blocking
//! calls, outputs through a channel and a wake callback, for a mio loop). With the feature
//! `tokio`, a server of `ocpp-tokio` is a node in one call (`tokio_node::ServerBuilderExt`).
//! The protocol, for a node in another language: `PROTOCOL.md` beside this crate.
#![deny(missing_docs)]
#![forbid(unsafe_code)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

/// The README's example (of the feature `tokio`), compiled as a doc test.
#[cfg(all(doctest, feature = "tokio"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod bound;
mod bridge;
mod claims;
mod cluster;
mod config;
mod directory;
mod error;
mod executor;
mod link;
pub mod scripts;
/// A redis-server of a unit test's own (the integration tests' helper).
#[cfg(test)]
#[path = "../tests/common/redis_server.rs"]
mod test_redis;
#[cfg(feature = "tokio")]
pub mod tokio_node;
mod wire;

pub use bridge::{BridgeError, BridgeOutput, ClusterBridge, Job, JobId, RequestId, Wake};
pub use cluster::{
    Claim, ClaimTicket, Cluster, ClusterEvent, ClusterEvents, LostClaim, CLOSE_SUPERSEDED,
    CLOSE_SUPERSEDED_REASON,
};
pub use config::ClusterConfig;
pub use directory::{Listing, Located};
pub use error::ClusterError;
pub use executor::{command_outcome, BoxFuture, Executor, JsonCallOutcome};
/// A routed command as the request its holder sends: the one decoding of an operator's
/// command, local or routed ([`ocpp_proto::command_request`]).
pub use ocpp_proto::command_request;
pub use ocpp_proto::{CallFailure, Delivery};
