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
    Store(#[from] StoreError),
    /// No versions to offer.
    #[error("no OCPP version to offer")]
    NoVersion,
}

/// Why [`Station::queue`] did not take a message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueueError {
    /// Only transaction messages go through the offline queue (1.6 Start/StopTransaction and
    /// MeterValues with a transactionId; 2.x TransactionEvent): use [`Station::call`].
    #[error("not a transaction message: {0}")]
    NotATransactionMessage(&'static str),
    /// [`Station::queue_in`] with a message that carries no 1.6 transactionId.
    #[error("only a 1.6 StopTransaction or MeterValues can take a transaction's id")]
    NotForATransaction,
    /// [`Station::queue_in`] with a StartTransaction this station no longer knows (given up,
    /// or of an earlier run).
    #[error("StartTransaction {0} is not known")]
    UnknownTransaction(u64),
    /// The message did not serialise.
    #[error("encode: {0}")]
    Encode(String),
    /// The station's transactions refused the change (e.g. a transaction is open on the EVSE
    /// already, or none is): nothing was queued.
    #[error(transparent)]
    Transaction(#[from] TransactionError),
    /// The store refused it: the message was not accepted.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The station stopped.
    #[error("the station stopped")]
    Stopped,
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
