//! A charging station's durable state, synchronous (no async runtime): the offline queue of
//! transaction messages ([`offline`]: the stores [`OfflineStore`], [`MemoryStore`],
//! [`FileStore`], and [`OfflineQueue`], the Sans-IO rules of delivering them), the
//! device model ([`DeviceModelStore`]) and local authorization ([`LocalAuthStore`], fed by the
//! central system's answers through [`auth_cache::CacheFeed`]), each kept
//! so that a crash at any moment loses nothing that was acknowledged.
//!
//! `ocpp-tokio`'s `Station` keeps its state here (and re-exports these types from
//! `ocpp_tokio::station`, with the routes that serve the device model and the local list to the
//! central system); another driver can use them the same way. The methods that change a store
//! write (and sync) before they return: from an async runtime, call them on a blocking thread.
//!
//! ```
//! use ocpp_model::device_model::{catalogue::Layout, Configuration, DeviceModel};
//! use ocpp_model::local_auth::Settings;
//! use ocpp_model::IdToken;
//! use ocpp_proto::v2_0_1;
//! use ocpp_station_store::{DeviceModelStore, LocalAuthStore, MemoryStore, OfflineStore};
//!
//! // A station that keeps nothing across restarts (tests, simulations): the same API as the
//! // stores in a state directory (`FileStore::open`, `DeviceModelStore::open`, ...).
//! let mut queue = MemoryStore::new();
//! assert!(queue.load()?.is_empty());
//! let model = DeviceModelStore::in_memory(
//!     DeviceModel::standard(Layout::new(&[1])),
//!     Configuration::standard(1),
//! );
//! let set = v2_0_1::SetVariablesRequest::new(vec![v2_0_1::SetVariableData::new(
//!     "30",
//!     v2_0_1::Component::new("OCPPCommCtrlr"),
//!     v2_0_1::Variable::new("HeartbeatInterval"),
//! )]);
//! let answer = model.set_variables(&set)?;
//! assert_eq!(answer.set_variable_result[0].attribute_status, v2_0_1::SetVariableStatusEnum::Accepted);
//! assert_eq!(model.configuration().value("HeartbeatInterval").as_deref(), Some("30"));
//! let local_auth = LocalAuthStore::in_memory(Settings::default());
//! assert!(!local_auth.authorize_locally(&IdToken::from_id_tag("A"), false).may_charge());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod auth_cache;
pub mod device_model;
pub mod durable;
pub mod local_auth;
pub mod offline;

pub use device_model::{DeviceModelError, DeviceModelStore};
pub use local_auth::{LocalAuthError, LocalAuthStore};
pub use offline::{
    FileStore, MemoryStore, OfflineQueue, OfflineStore, OfflineStoreError, QueueError,
    StoredMessage,
};

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// The guard of a mutex, poisoned or not (a panicking listener must not stop a store).
fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
