//! The errors of the controller and of its own CALLs.

use std::io;

#[cfg(doc)]
use crate::{LocalControllerBuilder, RelayedStations};
#[cfg(doc)]
use ocpp_proto::ConnectionConfig;

/// Why a CALL of the controller's own ([`RelayedStations::call`]) has no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OwnCallError {
    /// No station with this identity is connected through the controller.
    #[error("the station is not connected")]
    NotConnected,
    /// The action is not a name or the payload not a JSON object.
    #[error("the action or the payload is not valid OCPP-J")]
    InvalidCall,
    /// Too many CALLs wait for the station already.
    #[error("too many CALLs wait for the station")]
    QueueFull,
    /// No answer within the call timeout ([`ConnectionConfig::call_timeout`]).
    #[error("the station did not answer in time")]
    Timeout,
    /// The station's connection ended first (the CALL may have reached it).
    #[error("the station disconnected")]
    Disconnected,
}

/// Why the controller could not be built or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LocalControllerError {
    /// The central system's URL is not `ws://host[:port][/path]` (or `wss://` with
    /// [`LocalControllerBuilder::upstream_tls`]).
    #[error("the central system URL must be ws://host[:port][/path] or wss://...: {0}")]
    Url(String),
    /// The listener failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}
