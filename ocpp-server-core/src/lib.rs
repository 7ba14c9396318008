//! The Sans-IO OCPP-J connection (being written).
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod config;
mod connection;
mod event;
mod identity;
mod identity_table;
mod timer;
mod typed;

pub use config::{ConnectionConfig, NoCommonVersion, VersionPolicy};
pub use connection::{ConnectTarget, Connection, RefusalReason, Refused, Side, WrongState};
pub use event::{CallOutcome, CloseReason, Closed, Event, UnansweredCall, UpgradeRequest};
pub use identity::{ChargePointIdentity, IdentityError};
pub use identity_table::IdentityTable;
pub use typed::{Request, Response};
