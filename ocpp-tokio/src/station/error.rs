//! What a station's calls, queue and network profiles can fail with.

use super::*;

/// Why [`Station::builder`] or [`StationBuilder::connect`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StationError {
    /// The URL.
    #[error(transparent)]
    Url(#[from] UrlError),
    /// `wss://` without [`StationBuilder::tls`], or a server name TLS cannot use.
    #[error("TLS: {0}")]
    Tls(String),
    /// The offline store could not be read.
    #[error(transparent)]
    Store(#[from] OfflineStoreError),
    /// No versions to offer.
    #[error("no OCPP version to offer")]
    NoVersion,
}

/// Why [`Station::set_network_priority`] or [`Station::set_network_profile`] changed nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NetworkProfileError {
    /// The rules refused it (B09, A05.FR.04).
    #[error(transparent)]
    Rejected(ProfileRejected),
    /// The [`StationBuilder::on_network_profiles`] hook failed to keep it.
    #[error("the network profiles were not kept: {0}")]
    NotKept(String),
    /// The station stopped.
    #[error("the station stopped")]
    Stopped,
}
