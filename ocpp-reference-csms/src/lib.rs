//! The reference central system (CSMS) of ocpp-ws, independent of the I/O loop that feeds it:
//! `mio-server` and `tokio-server` (crate `ocpp-examples`) both drive this one application.
//!
//! An I/O loop (the mio server, the tokio server, a test) owns sockets and one
//! [`ocpp_proto::Connection`] per charge point; it turns the connection's events into
//! calls on one shared [`Csms`], and turns the answers back into mutator calls:
//!
//! | connection event | call | then |
//! | --- | --- | --- |
//! | `UpgradeRequested(upgrade)` | [`Csms::on_upgrade`] (with the [`Transport`]) | `Connection::decide` |
//! | `Connected { version }` | [`Csms::on_connected`] | keep the [`SessionId`] |
//! | `Call { id, request }` | [`Csms::on_call`] | `Connection::answer` now ([`Answering::Now`]), or after running the [`Later`] job on a worker thread |
//! | `Send { request, .. }` (2.1) | [`Csms::on_send`] | nothing |
//! | (you send a CALL) | [`Csms::on_call_sent`] | |
//! | (the connection refuses a CALL) | [`Csms::on_call_not_sent`] | |
//! | (an answer went out) | [`Csms::take_follow_up`] until `None` | send each (`Connection::call_for`), then `on_call_sent` / `on_call_not_sent` |
//! | (a push tick, `--push-interval-ms`) | [`push::tick`] | send it, then [`push::sent`] / [`push::refused`] |
//! | `CallCompleted { .. }` | [`Csms::on_call_completed`] | |
//! | `Closed(closed)` | [`Csms::on_closed`] | close the socket |
//! | (an admin command is decoded) | [`Csms::on_command`] (done by the [admin API](mod@admin)'s `route`) | send it |
//!
//! # What a charge point's CALLs get
//!
//! A CALL is read as one concept of the protocol (`ocpp_model::StationEvent`) and answered once
//! for every version: `events.rs` routes each concept (booted, heartbeat, status changed,
//! authorization requested, transaction started / updated / ended, meter readings, reports),
//! `transactions.rs` keeps the transactions of 1.6 and 2.x in one place, and `ocpp_model`
//! makes the version's response. Only what the model does not read keeps handlers per
//! version (`v1_6.rs`: DataTransfer, SignCertificate; `v2x.rs`: those, Plug & Charge, smart
//! charging and 2.1's own actions, for 2.0.1 and 2.1 from one body).
//!
//! Every action a charge point may send in OCPP 1.6 (with the security whitepaper), 2.0.1
//! and 2.1 gets its typed CALLRESULT; only an action that the central system sends (a
//! `Reset` from a charge point, say) gets NotSupported. BootNotification, Heartbeat,
//! StatusNotification, MeterValues, Authorize, Start/StopTransaction and TransactionEvent
//! update typed state ([`ChargePointRecord`]); every other CALL, and the 2.1 SEND
//! NotifyPeriodicEventStream, is kept as a [`Notification`] (the last
//! [`CsmsConfig::notifications_kept`] of each kind) and shown at
//! `GET /chargepoints/ID/notifications`. Where this example has no back end, the answer
//! says so rather than promise: SignCertificate `Rejected` without a CA (see below),
//! Get15118EVCertificate and GetCertificateStatus `Failed`, GetCertificateChainStatus every certificate `Failed`
//! (no PKI, no OCSP), PullDynamicScheduleUpdate and VatNumberValidation `Rejected`;
//! DataTransfer is `Accepted` for a vendor of [`CsmsConfig::data_transfer_vendors`] and
//! `UnknownVendorId` otherwise.
//!
//! Smart charging (2.x K15-K17, [`smart_charging`]): NotifyEVChargingNeeds for an EVSE in
//! transaction is `Accepted` and followed by a SetChargingProfile (a TxProfile for the
//! transaction, its share of the station's site limit, [`CsmsConfig::site_limit`]);
//! NotifyEVChargingSchedule is checked against it (`Rejected` and renegotiated when over it);
//! [`Csms::set_site_limit`] and [`Csms::renegotiate`] give the CALLs of a renegotiation the
//! operator starts. The profiles sent and the station's answers are kept per station.
//!
//! Authorization comes from a [`TokenStore`] when one is configured (`--tokens`, or the first
//! `PUT /tokens/ID`), else every token is Accepted. The boot policy ([`BootPolicy`],
//! `--boot-policy`, `PUT /chargepoints/ID/boot`) decides the BootNotification answer, and
//! while a station is Pending or Rejected its other CALLs get SecurityError except those
//! [`boot`] lists. TransactionEvent `seqNo` gaps are counted per charge point
//! ([`ExtraState::seq_no_gaps`]), and each is followed by a GetTransactionStatus for its
//! transaction (E14), whose answer is kept with it ([`SeqNoGap::check`]).
//!
//! With a tariff ([`tariff`]: `--price-per-kwh`, `--price-per-hour`, or a station's own from
//! `PUT /chargepoints/ID/tariff`), OCPP 2.0.1 and 2.1 TransactionEvent `Ended` answers carry
//! the final `totalCost` (I03) and an `Updated` with meter values is followed by CostUpdated
//! with the running cost (I02), at most once per [`CsmsConfig::cost_updated_interval`] per
//! transaction; 2.1 `Updated` answers carry the running `totalCost` too. OCPP 1.6 has no cost
//! message in its core profile: nothing is sent. Without a tariff nothing changes.
//!
//! # Certificates and security profiles
//!
//! - **SignCertificate -> CertificateSigned** (2.0.1 and 2.1 A02/A03, 1.6 security
//!   whitepaper §3). With a CA ([`CsmsConfig::certificate_authority`]; `--ca-cert FILE
//!   --ca-key FILE`, PEM) a SignCertificate is Accepted when the CSR parses, its signature
//!   verifies, its subject CN is the station's identity and it asks for no CA certificate
//!   ([`CertificateAuthority`] lists the checks and why); right after the answer the CSMS
//!   sends CertificateSigned with the chain (the new certificate, then the CA's), and records
//!   the station's answer ([`ExtraState::certificate`], `certificate` in
//!   `GET /chargepoints/ID`). Otherwise (no CA, a CSR that fails a check) the answer is
//!   Rejected and nothing follows. The I/O loops take the follow-up CALL with
//!   [`Csms::take_follow_up`] and send it on their connection. The TLS listener trusts the same CA
//!   for client certificates, so the station can use its new certificate for security
//!   profile 3 at its next connection.
//! - **Security profile per station** ([`credentials`]: `--security-profiles FILE` with lines
//!   `identity profile`, `GET|PUT|DELETE /chargepoints/ID/security`): on one wss:// listener
//!   with optional client certificates (`--client-ca` with `--basic-auth` or
//!   `--security-profiles`), a profile-3 station must show its certificate (a password alone
//!   gets 401), a profile-2 station its password over TLS; a certificate naming another
//!   identity gets 403; a station that connected with its certificate is held to profile 3.
//!   Both servers decide in [`Csms::on_upgrade`], which calls [`credentials::decide`];
//!   refusals count in `ocpp_upgrades_rejected_total`.
//!
//! # Compliance runs (OCTT CSMS test cases)
//!
//! - **No subprotocol in common.** The OCPP-J texts say to complete the handshake without
//!   `Sec-WebSocket-Protocol` and then close, which is the servers' default
//!   (`--no-common-version accept-then-close`). The OCTT cases TC_088_CSMS (1.6) and
//!   TC_B_58_CSMS (2.0.1) expect the upgrade refused instead: run them with
//!   `--no-common-version reject-400` (HTTP 400, `ocpp_proto::NoCommonVersion::Reject400`).
//! - **TLS cipher suites (OCPP 2.0.1 Part 2 A00.FR.317/318): run with `--tls-backend openssl`.**
//!   A00.FR.318 lists, for TLS 1.2 with an RSA certificate, `TLS_RSA_WITH_AES_128_GCM_SHA256`
//!   and `TLS_RSA_WITH_AES_256_GCM_SHA384`: static RSA key exchange, without forward secrecy;
//!   the OCTT's TLS cases (TC_A_04 on profiles 2 and 3, TC_A_07) offer only those. The
//!   default backend, rustls, does not implement static RSA key exchange and never will (a
//!   deliberate design decision: a stolen server key must not decrypt recorded traffic): with
//!   it the servers offer the `TLS_ECDHE_RSA_*` / `TLS_ECDHE_ECDSA_*` AES-GCM suites and TLS 1.3,
//!   and a station that offers only static-RSA suites cannot connect (a deviation). The OpenSSL
//!   backend (`--tls-backend openssl`, cargo feature `openssl`, on by default in `ocpp-examples`:
//!   its module `tls::openssl`) offers over TLS 1.2 the ECDHE-ECDSA and ECDHE-RSA AES-GCM suites
//!   and then the two static-RSA ones, nothing with CBC or SHA-1, and TLS 1.3; give it an RSA
//!   certificate for the static-RSA suites and an ECDSA one for the ECDHE-ECDSA suites
//!   (`--tls-cert`/`--tls-key` twice). Client certificates, their CN in [`Transport`], and the
//!   failures counted are the same with either backend.
//! - **GetVariables / SetVariables split by ItemsPerMessage** (2.0.1 and 2.1 B05/B06,
//!   [`items_per_message`]): the CSMS learns each station's `DeviceDataCtrlr.ItemsPerMessage`
//!   (instances `GetVariables`, `SetVariables`) from NotifyReport and from the results of our
//!   GetVariables, shows it on the charge point record, and sends an admin command with
//!   more entries as consecutive CALLs of at most that many (a split command,
//!   [`SplitCall`]), one in flight, with one answer merged in the request's order. Unknown:
//!   one CALL, unless `--items-per-message N` gives a default. A command forwarded through
//!   the cluster is not split (its one deadline and one outcome cannot carry several
//!   chunks); see [`items_per_message`].
//! - **Password changes** (A01, 1.6 security whitepaper): a SetVariables of
//!   `SecurityCtrlr.BasicAuthPassword` or a ChangeConfiguration of `AuthorizationKey` sent
//!   through the admin API replaces the charge point's Basic password once it answers
//!   Accepted (or RebootRequired), from its next connection on ([`Csms::on_command`]).
//!
//! The CSMS speaks the library's vocabulary: an upgrade decision is `Result<(), Rejection>`,
//! an answer is the core's [`Answer`] (which `Connection::answer` checks against its CALL),
//! an outcome of our CALL is the core's [`CallOutcome`].
//!
//! ```
//! use ocpp_reference_csms::{Csms, CsmsConfig, Answering};
//! use ocpp_proto::Answer;
//! use ocpp_messages::{v1_6, version::OcppVersion};
//! use ocpp_proto::{ChargePointIdentity, Request};
//!
//! let csms = Csms::new(CsmsConfig::default());
//! let identity = ChargePointIdentity::new("CP001".into(), false).unwrap();
//! let session = csms.on_connected(&identity, OcppVersion::V1_6);
//! let heartbeat = Request::from(v1_6::Request::from(v1_6::HeartbeatRequest {}));
//! let Answering::Now(Answer::Result(response)) = csms.on_call(session, &identity, &heartbeat) else {
//!     panic!()
//! };
//! assert_eq!(response.action(), "Heartbeat");
//! ```
//!
//! State lives in memory behind one mutex, taken once per message for a few microseconds.
//! What must survive a crash is written through to a [`Store`] when one is configured
//! ([`CsmsConfig::store`], [`Csms::open`]; the rules in [`persistence`], the SQLite and
//! PostgreSQL backends in [`store`]): a transaction's start and end before the CALLRESULT, an
//! operator's change before it takes effect. Metrics are atomic counters ([`Metrics`]) that
//! need no lock.

#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod admin;
pub mod admin_auth;
pub mod admission;
mod answering;
pub mod boot;
mod certificate_authority;
mod charge_point;
pub mod command;
mod config;
mod connecting;
mod context;
pub mod contract_certificate_service;
pub mod credentials;
mod events;
mod fleet;
pub mod items_per_message;
pub mod ledger;
mod metrics;
pub mod ocsp;
mod outgoing;
pub mod persistence;
pub mod plug_and_charge;
pub mod push;
mod shared_text;
pub mod smart_charging;
pub mod sql_ledger;
pub mod store;
pub mod tariff;
mod tokens;
mod transaction_ids;
mod transactions;
mod unix_time;
mod v1_6;
mod v2x;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, RwLock};

use context::{certificate_use, Context, NO_CA};
use fleet::Fleet;
use ocpp_messages::error_code::ErrorCode;
use ocpp_messages::version::OcppVersion;
use ocpp_proto::{Answer, CallOutcome, ChargePointIdentity, CloseReason, Closed, Request};
pub use shared_text::SharedText;
pub use unix_time::UnixTime;

pub use admission::BootRate;
pub use answering::{Answering, Later};
pub use boot::BootPolicy;
pub use certificate_authority::{
    CaError, CertificateAuthority, CertificateUse, CsrRefusal, SignedCertificate,
    CERTIFICATE_VALIDITY,
};
pub use charge_point::{
    BootDetails, CertificateSigning, ChargePointRecord, ConnectorState, Connectors, ExtraState,
    Extras, LiveSession, Notification, SeqNoGap, SignedMeter, Transaction, TransactionStatusCheck,
};
pub use config::CsmsConfig;
pub use connecting::{ClientCertificate, Transport};
pub use credentials::{Credentials, CredentialsError, SecurityProfile};
pub use items_per_message::{ItemsPerMessage, SplitCall, SplitEnd};
pub use metrics::{Counter, Gauge, Metrics};
pub use persistence::{ChangeError, SETTINGS_REFRESH};
pub use plug_and_charge::PlugAndCharge;
pub use smart_charging::{
    ChargingNeeds, ChargingProfileRecord, SiteLimit, SiteLimitError, SmartCharging,
};
pub use sql_ledger::SqlLedger;
pub use store::{Durability, Record, Store, StoreError};
pub use tariff::{Cost, CostUpdate, Currency, Price, Tariff, TariffError};
pub use tokens::{TokenEntry, TokenStore, TokenStoreError};

/// The CALLs of a charge point whose content lives in typed state ([`ChargePointRecord`]'s
/// registration, connectors, transactions); every other CALL (and SEND) is kept as a
/// [`Notification`].
const TYPED_ACTIONS: &[&str] = &[
    "BootNotification",
    "Heartbeat",
    "StatusNotification",
    "MeterValues",
    "Authorize",
    "StartTransaction",
    "StopTransaction",
    "TransactionEvent",
];

/// One WebSocket connection of a charge point, as the application knows it. A charge point
/// that reconnects gets a new session; the old one's [`Csms::on_closed`] then leaves the new
/// one alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(std::num::NonZeroU64);

impl SessionId {
    /// The number, for logs.
    pub fn get(self) -> u64 {
        self.0.get()
    }
}

/// The CSMS application: charge-point state, handlers and metrics. Share it between threads
/// with `Arc`; every method takes `&self`.
#[derive(Debug)]
pub struct Csms {
    config: CsmsConfig,
    /// Boxed: a table slot is a pointer, not a whole `ChargePointRecord`, so the table's spare
    /// capacity (up to half of it after a resize) costs 32 bytes per slot instead of 280.
    charge_points: Mutex<Fleet>,
    next_session: AtomicU64,
    transaction_ids: transaction_ids::TransactionIds,
    metrics: Metrics,
    /// The token store; `None`: every token is accepted. Taken after `charge_points` when
    /// both are needed.
    tokens: RwLock<Option<TokenStore>>,
    /// Security profiles 1 and 2: the passwords, changed by an accepted SetVariables
    /// BasicAuthPassword / ChangeConfiguration AuthorizationKey. Never taken with another lock.
    credentials: RwLock<Option<Credentials>>,
    /// How many follow-up CALLs are waiting in the store: every answered CALL asks for one
    /// ([`Csms::take_follow_up`]), and this spares it the store's lock while there are none
    /// (almost always: only an accepted SignCertificate makes one).
    follow_ups: AtomicUsize,
    /// Held while an operator's change is committed and applied, and while the settings are
    /// read again from the store ([`Csms::refresh_settings`]), so that neither undoes the
    /// other.
    settings_changes: Mutex<()>,
    /// The charge points with a transaction's start or end being committed
    /// ([`ledger`]).
    ledger: ledger::Ledger,
    /// The boot admission ([`CsmsConfig::boot_rate`]); taken after `charge_points`.
    admission: Option<Mutex<admission::Admission>>,
}

impl Csms {
    /// A CSMS with no charge point known yet.
    pub fn new(config: CsmsConfig) -> Self {
        let tokens = RwLock::new(config.tokens.clone());
        let credentials = RwLock::new(config.credentials.clone());
        let admission = config
            .boot_rate
            .map(|rate| Mutex::new(admission::Admission::new(rate)));
        Csms {
            config,
            charge_points: Mutex::new(Fleet::default()),
            next_session: AtomicU64::new(1),
            transaction_ids: transaction_ids::TransactionIds::new(),
            metrics: Metrics::default(),
            follow_ups: AtomicUsize::new(0),
            settings_changes: Mutex::new(()),
            ledger: ledger::Ledger::default(),
            admission,
            tokens,
            credentials,
        }
    }

    /// A copy of the token store (`None`: every token is accepted).
    pub fn tokens(&self) -> Option<TokenStore> {
        self.tokens
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Edits the token store; the first edit of a CSMS without one creates an empty store
    /// (from then on, unknown tokens are refused).
    pub fn edit_tokens<T>(&self, edit: impl FnOnce(&mut TokenStore) -> T) -> T {
        let mut tokens = self.tokens.write().unwrap_or_else(|p| p.into_inner());
        edit(tokens.get_or_insert_with(TokenStore::default))
    }

    /// Sets (or with `None` clears) the boot policy of one station, known or not yet
    /// (committed to the store first, if there is one).
    ///
    /// # Errors
    /// The store could not commit it: nothing changed.
    pub fn set_boot_policy(
        &self,
        identity: &ChargePointIdentity,
        policy: Option<BootPolicy>,
    ) -> Result<(), ChangeError> {
        let _changes = self.settings_changes();
        let record = Record::BootPolicy {
            identity: identity.as_str().to_owned(),
            policy,
        };
        self.keep(vec![record], Durability::Committed)?;
        self.lock().entry(identity).boot_policy = policy;
        Ok(())
    }

    /// The counters (Prometheus text with [`Metrics::render`]).
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The configuration.
    pub fn config(&self) -> &CsmsConfig {
        &self.config
    }

    /// A station's own site limit (`None`: the default) and the CSMS default.
    pub fn site_limit(&self, identity: &ChargePointIdentity) -> (Option<SiteLimit>, SiteLimit) {
        let own = self
            .lock()
            .get(identity)
            .and_then(|cp| cp.extras.smart_charging.site_limit);
        (own, self.config.site_limit)
    }

    /// Sets (or with `None` clears) a station's own site limit, then renegotiates (K16): the
    /// SetChargingProfile CALLs to send it, one per EVSE with an active transaction (none
    /// when it is not connected with OCPP 2.x), each already recorded as sent. In memory
    /// only.
    pub fn set_site_limit(
        &self,
        identity: &ChargePointIdentity,
        limit: Option<SiteLimit>,
    ) -> Vec<Request> {
        let mut fleet = self.lock();
        let cp = fleet.entry(identity);
        cp.extras.get_mut().smart_charging.site_limit = limit;
        tracing::info!(%identity, limit = ?limit, "site limit set");
        self.renegotiate_locked(cp)
    }

    /// Renegotiates (K16) without changing the limit: a SetChargingProfile for each EVSE of
    /// `identity` with an active transaction, each recorded as sent.
    pub fn renegotiate(&self, identity: &ChargePointIdentity) -> Vec<Request> {
        let mut fleet = self.lock();
        match fleet.get_mut(identity) {
            Some(cp) => self.renegotiate_locked(cp),
            None => Vec::new(),
        }
    }

    fn renegotiate_locked(&self, cp: &mut ChargePointRecord) -> Vec<Request> {
        match cp.session.as_ref().map(|s| s.version) {
            Some(version @ (OcppVersion::V2_0_1 | OcppVersion::V2_1)) => {
                smart_charging::renegotiate(cp, self.config.site_limit, version, UnixTime::now())
            }
            _ => Vec::new(),
        }
    }

    /// The WebSocket is open: records the session and returns its id.
    pub fn on_connected(&self, identity: &ChargePointIdentity, version: OcppVersion) -> SessionId {
        // Numbered from 1, so that an `Option<SessionId>` takes 8 bytes in every socket record.
        let number = self.next_session.fetch_add(1, Ordering::Relaxed);
        let session =
            SessionId(std::num::NonZeroU64::new(number).unwrap_or(std::num::NonZeroU64::MIN));
        let mut charge_points = self.lock();
        let charge_point = charge_points.entry(identity);
        if charge_point.session.is_none() {
            self.metrics.charge_points_connected.inc();
        }
        charge_point.session = Some(LiveSession {
            id: session,
            version,
            since: UnixTime::now(),
        });
        self.metrics.sessions_total.inc();
        session
    }

    /// Answers a CALL of the charge point: now, or through a [`Later`] job the I/O loop runs
    /// on a worker thread (a commit to the [`Store`], a round trip to another server; see
    /// [`Answering`]). Counts one message in and one out. With a store, a CALL that may start or
    /// end a transaction follows the durability rule of [`ledger`]: its effect is committed
    /// before it is answered or seen, and a refused one leaves no trace.
    pub fn on_call(
        &self,
        session: SessionId,
        identity: &ChargePointIdentity,
        request: &Request,
    ) -> Answering {
        let _ = session;
        self.metrics.messages_in.inc();
        self.metrics.messages_out.inc();
        self.metrics.calls_received.inc();
        if self.has_store() && ledger::keeps_transactions(request.action()) {
            return self.settle(identity, request);
        }
        // A CSR is checked and signed before the lock is taken: that takes a millisecond or
        // so, the lock is held for microseconds otherwise.
        let presigned =
            (request.action() == "SignCertificate").then(|| self.sign(identity, request));
        let reply = {
            let mut charge_points = self.lock();
            let charge_point = charge_points.entry(identity);
            self.handle(
                charge_point,
                request,
                presigned.as_ref(),
                &[],
                UnixTime::now(),
            )
        };
        if let Answering::Now(answer) = &reply {
            self.count_answer(answer);
        }
        reply
    }

    /// Answers a CALL from and into `charge_point`'s state (under the CSMS's lock). A
    /// [`Answering::Later`] job answers (and records what it found) itself. `unconfirmed`: its
    /// starts whose commit failed ([`ledger`]).
    fn handle(
        &self,
        charge_point: &mut ChargePointRecord,
        request: &Request,
        presigned: Option<&Result<SignedCertificate, String>>,
        unconfirmed: &[Transaction],
        now: UnixTime,
    ) -> Answering {
        let action = request.action();
        let context = Context {
            config: &self.config,
            transaction_ids: &self.transaction_ids,
            tokens: &self.tokens,
            follow_ups: &self.follow_ups,
            now,
            presigned,
            unconfirmed,
            admission: self.admission.as_ref(),
            metrics: &self.metrics,
        };
        if !boot::allows(charge_point.boot_status, charge_point.triggered, action) {
            // 2.0.1 B02.FR.09, B03; OCPP-J 1.6 errata §3.8.
            let status = charge_point.status();
            let description =
                format!("{action} refused: the BootNotification was answered {status}");
            return Answer::error(ErrorCode::SecurityError, description).into();
        }
        let gaps_before = charge_point.extras.seq_no_gap_count;
        // Only a station holding profiles of ours can need a new share (K16); the others
        // pay nothing per TransactionEvent.
        let charging_before = (action == "TransactionEvent"
            && !charge_point.extras.smart_charging.profiles.is_empty())
        .then(|| smart_charging::charging_evses(charge_point));
        let reply = events::handle(&context, charge_point, request);
        let reply = match reply {
            Answering::Now(answer) => answer,
            // The job answers (and records what it found) itself; the CALL is kept as a
            // report now (a job's answer is a CALLRESULT: GetCertificateStatus,
            // Get15118EVCertificate).
            Answering::Later(later) => {
                if !TYPED_ACTIONS.contains(&action) {
                    self.record(charge_point, request, now);
                }
                return Answering::Later(later);
            }
        };
        if charge_point.extras.seq_no_gap_count != gaps_before {
            self.metrics.seq_no_gaps.inc();
            self.ask_transaction_status(charge_point, request.version());
        }
        if let Some(before) = charging_before {
            let default = self.config.site_limit;
            let version = request.version();
            for profile in smart_charging::rebalance(charge_point, &before, default, version, now) {
                context.follow_up(charge_point, profile);
            }
        }
        if action == "SignCertificate" {
            match charge_point.extras.certificate.as_ref().map(|c| c.status) {
                Some("Accepted") => self.metrics.certificates_signed.inc(),
                _ => self.metrics.certificate_requests_rejected.inc(),
            }
        }
        if reply.is_result() && !TYPED_ACTIONS.contains(&action) {
            self.record(charge_point, request, now);
            if action == "NotifyReport" {
                let extras = charge_point.extras.get_mut();
                if let Some(notification) = extras
                    .notifications
                    .get(action)
                    .and_then(|list| list.back())
                {
                    let payload = &notification.payload;
                    extras.items_per_message.learn_from_report(payload);
                }
            }
        }
        Answering::Now(reply)
    }

    /// Counts a CALLERROR we answer.
    fn count_answer(&self, answer: &Answer) {
        if !answer.is_result() {
            self.metrics.call_errors_sent.inc();
        }
    }

    /// After a seqNo gap in a TransactionEvent (2.x): asks the station with a
    /// GetTransactionStatus (E14), sent right after the answer as the follow-up CALL, whether
    /// messages of the transaction are still queued; the answer is kept with the gap
    /// ([`SeqNoGap::check`], `GET /chargepoints/ID`).
    fn ask_transaction_status(&self, cp: &mut ChargePointRecord, version: OcppVersion) {
        if version == OcppVersion::V1_6 {
            return;
        }
        let extras = cp.extras.get_mut();
        let Some(gap) = extras.seq_no_gaps.back_mut() else {
            return;
        };
        let payload = serde_json::json!({ "transactionId": gap.transaction });
        match crate::command::decode_command(version, "GetTransactionStatus", &payload.to_string())
        {
            Ok(request) => {
                gap.check = Some(TransactionStatusCheck::Asked);
                self.queue_follow_up(cp, request);
            }
            Err(e) => tracing::warn!(identity = %cp.identity, "GetTransactionStatus: {e}"),
        }
    }

    /// The answer to our GetTransactionStatus, kept with the gap that asked it.
    fn note_transaction_status(&self, identity: &ChargePointIdentity, outcome: &CallOutcome) {
        let check = match outcome {
            Ok(response) => {
                let payload = serde_json::to_value(response).unwrap_or_default();
                TransactionStatusCheck::Answered {
                    ongoing: payload["ongoingIndicator"].as_bool(),
                    messages_in_queue: payload["messagesInQueue"].as_bool().unwrap_or(false),
                    at: UnixTime::now(),
                }
            }
            Err(failure) => TransactionStatusCheck::Failed(failure.name().to_owned()),
        };
        let mut fleet = self.lock();
        let Some(cp) = fleet.get_mut(identity) else {
            return;
        };
        let asked = cp
            .extras
            .get_mut()
            .seq_no_gaps
            .iter_mut()
            .rev()
            .find(|gap| gap.check == Some(TransactionStatusCheck::Asked));
        if let Some(gap) = asked {
            tracing::info!(%identity, transaction = gap.transaction, check = ?check, "GetTransactionStatus answered");
            gap.check = Some(check);
        }
    }

    /// Checks and signs the CSR of a SignCertificate (any version) with the CA.
    fn sign(
        &self,
        identity: &ChargePointIdentity,
        request: &Request,
    ) -> Result<SignedCertificate, String> {
        let Some(ca) = &self.config.certificate_authority else {
            return Err(NO_CA.to_owned());
        };
        let payload = serde_json::to_value(request).map_err(|e| e.to_string())?;
        let csr = payload["csr"].as_str().unwrap_or_default();
        ca.sign(
            csr,
            identity,
            certificate_use(payload["certificateType"].as_str()),
        )
        .map_err(|refusal| refusal.to_string())
    }

    /// A SEND (OCPP 2.1, never answered), e.g. NotifyPeriodicEventStream: counted and kept
    /// as a [`Notification`].
    pub fn on_send(&self, identity: &ChargePointIdentity, request: &Request) {
        self.metrics.messages_in.inc();
        let mut charge_points = self.lock();
        self.record(charge_points.entry(identity), request, UnixTime::now());
    }

    /// Keeps a report of the charge point (bounded per kind).
    fn record(&self, charge_point: &mut ChargePointRecord, request: &Request, now: UnixTime) {
        let payload = serde_json::to_value(request).unwrap_or(serde_json::Value::Null);
        let keep = self.config.notifications_kept;
        charge_point.record_notification(request.action(), payload, keep, now);
    }

    /// The connection ended. `session` is `None` when it never opened (a rejected or failed
    /// handshake). Our CALLs left without an answer are logged as failed.
    pub fn on_closed(
        &self,
        session: Option<SessionId>,
        identity: Option<&ChargePointIdentity>,
        closed: &Closed,
    ) {
        let unanswered = closed.unanswered_outgoing.len() as i64;
        self.metrics.calls_pending.add(-unanswered);
        for _ in &closed.unanswered_incoming {
            self.metrics.calls_unanswered_at_close.inc();
        }
        if closed.reason == CloseReason::HandshakeTimeout {
            self.metrics.handshake_timeouts.inc();
        }
        for call in &closed.unanswered_outgoing {
            if let Some(identity) = identity {
                let action = call.request.action();
                self.note_answer(identity, action, || "Disconnected".into());
            }
            tracing::warn!(
                identity = identity.map(ChargePointIdentity::as_str),
                id = %call.id,
                action = call.request.action(),
                "pending CALL failed: the connection ended"
            );
        }
        if matches!(closed.reason, CloseReason::ProtocolError(_)) {
            self.metrics.protocol_errors.inc();
        }
        let (Some(session), Some(identity)) = (session, identity) else {
            return;
        };
        let mut charge_points = self.lock();
        if let Some(charge_point) = charge_points.get_mut(identity.as_str()) {
            // A newer connection of the same charge point may already hold it.
            if charge_point.session.as_ref().map(|s| s.id) == Some(session) {
                charge_point.session = None;
                self.metrics.charge_points_connected.dec();
            }
        }
    }

    /// What the charge point told us of its `DeviceDataCtrlr.ItemsPerMessage`
    /// ([`items_per_message`]; all unknown for a charge point never seen).
    pub fn items_per_message(&self, identity: &ChargePointIdentity) -> ItemsPerMessage {
        self.lock()
            .get(identity)
            .map(|cp| cp.extras.items_per_message)
            .unwrap_or_default()
    }

    /// The negotiated version of a connected charge point.
    pub fn version_of(&self, identity: &ChargePointIdentity) -> Option<OcppVersion> {
        self.lock()
            .get(identity)
            .and_then(|cp| cp.session.as_ref().map(|s| s.version))
    }

    /// A copy of one charge point's state (connected or not).
    pub fn charge_point(&self, identity: &ChargePointIdentity) -> Option<ChargePointRecord> {
        self.lock().get(identity).cloned()
    }

    /// Copies of the connected charge points, sorted by identity.
    pub fn connected(&self) -> Vec<ChargePointRecord> {
        self.with_connected(|list| list.iter().copied().cloned().collect())
    }

    /// Runs `f` on the connected charge points, sorted by identity, under the store's lock:
    /// no record is copied (a listing of 16,000 records built from copies held 75 MB of heap
    /// at its peak). Keep `f` short and free of I/O: every connection waits for the lock.
    pub fn with_connected<R>(&self, f: impl FnOnce(&[&ChargePointRecord]) -> R) -> R {
        let store = self.lock();
        let mut list: Vec<&ChargePointRecord> =
            store.values().filter(|cp| cp.session.is_some()).collect();
        list.sort_by(|a, b| a.identity.cmp(&b.identity));
        f(&list)
    }

    fn lock(&self) -> MutexGuard<'_, Fleet> {
        // A handler that panicked leaves consistent enough state for an example: go on.
        self.charge_points
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests;
