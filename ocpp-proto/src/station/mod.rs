//! The OCPP rules a charging station follows around its connection, in the Sans-IO shape (no
//! clock, no socket, no RNG: `now` and random draws come from the caller), so that every
//! station driver (the tokio client, a mio load tool, a simulator) shares one implementation.
//!
//! - [`RetryBackOff`], [`Reconnect`]: how long to wait before connecting again (OCPP 2.0.1
//!   Part 4 §5.3, OCPP 2.1 Part 4 §5.4; the same schedule on 1.6, and after a refused upgrade
//!   as the OCPP-J 1.6 errata §3.3 ask).
//! - [`boot_request`], [`heartbeat_request`], [`BootAnswer`]: what a station says at boot and
//!   what the answer means, per version (OCPP 1.6 §4.2 and §4.6; 2.0.1 and 2.1 B01, G02).
//! - [`Registration`]: one connection's registration. BootNotification until Accepted,
//!   retried after the CSMS's interval while Pending or Rejected, and a bounded number of times
//!   after a failure (no answer, CALLERROR) before the connection is given up; heartbeats once
//!   accepted; what the station may send ([`Registration::may_send`]) and which CALLs of the
//!   CSMS it refuses ([`Registration::check_incoming`]) meanwhile (1.6 §4.2; 2.0.1 and 2.1 B02, B03);
//!   what it answers itself, refusals included ([`Registration::own_answer`]; F06.FR.17).
//! - [`HeldCalls`]: the station's CALLs that wait for the registration to allow them, and
//!   when each is done (sent once allowed, never sent past its deadline).
//! - [`is_transaction_message`] and its helpers: which messages are transaction-related and go
//!   through a station's offline queue (1.6 StartTransaction, StopTransaction, MeterValues of a
//!   transaction; 2.x TransactionEvent).
//! - [`NetworkProfiles`]: which central system the next attempt goes to: network connection
//!   profiles in priority order, `NetworkProfileConnectionAttempts` on each, failing over and
//!   back (2.0.1 B09, B10; a URL list on 1.6).
//! - [`Transactions`]: the station's own transactions per EVSE (open, id, `seqNo`, meter
//!   readings) and the transaction messages each start, reading and stop makes; one snapshot
//!   to journal with the offline queue (whose rules are `ocpp-station-store`'s `OfflineQueue`).
//! - [`answer_set_network_profile`], [`NetworkProfile::station_url`],
//!   [`NetworkProfile::connection_config`]: a profile put to use, and SetNetworkProfile
//!   answered (2.x B09).
//! - [`StationUrl`]: the central system's address as a station is given it
//!   (`ws[s]://host[:port]/path/IDENTITY`).
//! - [`Status`], [`Cause`], [`PermanentFailure`]: where a station stands, and what a
//!   connection's end means for it ([`Cause::of`]; [`PermanentFailure::of`]: a refusal that
//!   retrying cannot cure stops the station).
//! - [`Lifecycle`]: all of the above working together, across connections: which central
//!   system each attempt opens, what the registration sends and in which order (its own
//!   BootNotification or Heartbeat, then the held CALLs it allows, then the offline queue once
//!   Accepted, [`Transmit`]), which of the central system's CALLs the station answers itself
//!   (refusals before acceptance, a TriggerMessage for a boot, SetNetworkProfile once
//!   [`Lifecycle::answer_set_network_profile`]), what a boot's answer and a connection's end
//!   mean for the [`Status`], and what is next ([`Next`]: wait, reconnect at once, stop).
//!
//! A driver's loop: [`Lifecycle::begin_attempt`], open what it says; on the WebSocket's open,
//! [`Lifecycle::on_connected`]; after every step, [`Lifecycle::poll_transmit`] until `None`
//! (and the queue's head while [`Lifecycle::may_send_queued`]); sleep until the earliest of
//! [`Lifecycle::poll_timeout`] and the connection's own deadline; every CALL the connection
//! took goes to [`Lifecycle::on_call_sent`], every outcome to
//! [`Lifecycle::on_call_completed`]; the central system's CALLs go through
//! [`Lifecycle::on_incoming`] (and the application's answer through
//! [`Lifecycle::on_answered`]); at the end, [`Lifecycle::on_closed`] says what is next.
//! `ocpp_tokio`'s station is that loop on tokio.

mod backoff;
mod boot;
mod held;
mod lifecycle;
mod network_profile;
mod profile_connection;
mod registration;
mod status;
mod transaction;
mod transactions;
mod url;

pub use backoff::{Reconnect, RetryBackOff, MIN_ESTABLISHED_LIFETIME};
pub use boot::{boot_request, connection_boot_reason, heartbeat_request, StationInfo};
// A BootNotification's reason, its answer and the answer's status are the model's (one type
// for the CSMS that reads or answers and the station that sends or reads, the answer with
// `BootAnswer::from_response`).
pub use held::{HeldCall, HeldCalls, Release};
pub use lifecycle::{Lifecycle, Next, Transmit};
pub use network_profile::{
    Attempt, NetworkProfile, NetworkProfiles, ProfileRejected, DEFAULT_CONNECTION_ATTEMPTS,
    DEFAULT_SLOT_COUNT,
};
pub use ocpp_model::{BootAnswer, BootReason, RegistrationStatus};
pub use profile_connection::answer_set_network_profile;
pub use registration::{
    requested_by_trigger, trigger_accepted, triggered_action, Due, Registration,
    BOOT_RETRY_FALLBACK, DEFAULT_BOOT_ATTEMPTS, DEFAULT_HEARTBEAT_INTERVAL, MAX_TRIGGER_CREDITS,
};
pub use status::{Cause, PermanentFailure, Status, Stopped};
pub use transaction::{
    is_transaction_action, is_transaction_message, transaction_id_of, with_transaction_id,
};
pub use transactions::{
    Evse, IdToken, IdTokenType, OpenTransaction, Reading, SampledValue, Start, StationStopReason,
    TransactionError, TransactionMessage, TransactionRef, Transactions, ENERGY_REGISTER, MAX_ENDED,
    MAX_TRANSACTION_ID_PREFIX,
};
pub use url::{StationUrl, UrlError};
