//! The CSMS application's settings ([`CsmsConfig`]), built once by the server's command
//! line and shared by every connection.

use crate::BootRate;
use std::sync::Arc;
use std::time::Duration;

use crate::{
    BootPolicy, CertificateAuthority, Credentials, PlugAndCharge, SiteLimit, Store, Tariff,
    TokenStore,
};

/// Settings of the CSMS application.
///
/// ```
/// use std::time::Duration;
/// use ocpp_reference_csms::CsmsConfig;
/// let config = CsmsConfig::default().heartbeat_interval(Duration::from_secs(60));
/// assert_eq!(config.get_heartbeat_interval(), Duration::from_secs(60));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CsmsConfig {
    pub(crate) heartbeat_interval: Duration,
    pub(crate) credentials: Option<Credentials>,
    pub(crate) client_certificates: bool,
    pub(crate) ended_transactions_kept: usize,
    pub(crate) notifications_kept: usize,
    pub(crate) boot_policy: BootPolicy,
    pub(crate) boot_retry_interval: Duration,
    pub(crate) boot_rate: Option<BootRate>,
    pub(crate) tokens: Option<TokenStore>,
    pub(crate) data_transfer_vendors: Vec<String>,
    pub(crate) certificate_authority: Option<Arc<CertificateAuthority>>,
    pub(crate) items_per_message: Option<usize>,
    pub(crate) store: Option<Arc<dyn Store>>,
    pub(crate) plug_and_charge: PlugAndCharge,
    pub(crate) tariff: Option<Tariff>,
    pub(crate) cost_updated_interval: Duration,
    pub(crate) site_limit: SiteLimit,
}

impl Default for CsmsConfig {
    /// Heartbeat every 300 s, no authentication, the last 8 ended transactions and the last
    /// 8 notifications of each kind of each charge point kept, every BootNotification
    /// Accepted, every token Accepted (no token store), DataTransfer known for vendor
    /// `ocpp-ws` only, no ItemsPerMessage assumed, no tariff (no cost sent), CostUpdated at
    /// most once a minute per transaction when there is one.
    fn default() -> Self {
        CsmsConfig {
            heartbeat_interval: Duration::from_secs(300),
            credentials: None,
            client_certificates: false,
            ended_transactions_kept: 8,
            notifications_kept: 8,
            boot_policy: BootPolicy::Accepted,
            boot_retry_interval: Duration::from_secs(60),
            boot_rate: None,
            tokens: None,
            data_transfer_vendors: vec!["ocpp-ws".into()],
            certificate_authority: None,
            items_per_message: None,
            store: None,
            plug_and_charge: PlugAndCharge::default(),
            tariff: None,
            cost_updated_interval: Duration::from_secs(60),
            site_limit: SiteLimit::default(),
        }
    }
}

impl CsmsConfig {
    /// Plug & Charge: the V2G and MO roots, the OCSP client and the contract-certificate
    /// service (none by default: Get15118EVCertificate Failed, OCSP to the stations'
    /// responder URLs, OCSP responses anchored only by the issuer hashes).
    pub fn plug_and_charge(mut self, settings: PlugAndCharge) -> Self {
        self.plug_and_charge = settings;
        self
    }

    /// The `interval` a BootNotification answer asks for (seconds, OCPP 1.6 §4.2, 2.0.1 B01).
    pub fn heartbeat_interval(mut self, interval: Duration) -> Self {
        self.heartbeat_interval = interval;
        self
    }

    /// See [`CsmsConfig::heartbeat_interval`].
    pub fn get_heartbeat_interval(&self) -> Duration {
        self.heartbeat_interval
    }

    /// Security profile 1: require `Authorization: Basic` with these credentials (401
    /// otherwise). `None` (the default) accepts every charge point.
    pub fn credentials(mut self, credentials: Option<Credentials>) -> Self {
        self.credentials = credentials;
        self
    }

    /// Security profile 3 for every station: require a client certificate, verified by the
    /// TLS layer, whose subject CN is the identity of the URL (401 without one, 403 for
    /// another CN). Off by default; per station: [`Credentials::set_profile`].
    pub fn client_certificates(mut self, required: bool) -> Self {
        self.client_certificates = required;
        self
    }

    /// How many ended transactions each charge point keeps in memory (active ones are always
    /// kept), so that a long run does not grow without bound.
    pub fn ended_transactions_kept(mut self, count: usize) -> Self {
        self.ended_transactions_kept = count;
        self
    }

    /// How many notifications of each kind (NotifyEvent, NotifyReport...) each charge point
    /// keeps, and how many seqNo gaps: the oldest go first.
    pub fn notifications_kept(mut self, count: usize) -> Self {
        self.notifications_kept = count;
        self
    }

    /// The answer to a BootNotification of a station without a policy of its own (see
    /// [`boot`](crate::boot); default Accepted).
    pub fn boot_policy(mut self, policy: BootPolicy) -> Self {
        self.boot_policy = policy;
        self
    }

    /// See [`CsmsConfig::boot_policy`].
    pub fn get_boot_policy(&self) -> BootPolicy {
        self.boot_policy
    }

    /// The `interval` of a Pending or Rejected BootNotification answer: when to boot again
    /// (default 60 s).
    pub fn boot_retry_interval(mut self, interval: Duration) -> Self {
        self.boot_retry_interval = interval;
        self
    }

    /// Accept BootNotifications at this rate at most, and answer the others Pending with the
    /// `interval` after which a slot is kept for them (see [`BootRate`]): the storm of boots
    /// after an outage is spread over time, nobody refused. Default: no bound.
    pub fn boot_rate(mut self, rate: BootRate) -> Self {
        self.boot_rate = Some(rate);
        self
    }

    /// See [`CsmsConfig::boot_rate`].
    pub fn get_boot_rate(&self) -> Option<BootRate> {
        self.boot_rate
    }

    /// Answer Authorize, StartTransaction, StopTransaction and TransactionEvent from this
    /// token store ([`TokenStore`]); `None` (the default) accepts every token.
    pub fn tokens(mut self, tokens: Option<TokenStore>) -> Self {
        self.tokens = tokens;
        self
    }

    /// The DataTransfer `vendorId`s this CSMS knows: their DataTransfer is Accepted, others
    /// get `UnknownVendorId` (OCPP 1.6 §4.3, 2.0.1 P01.FR.06). Default: `ocpp-ws`.
    pub fn data_transfer_vendors(mut self, vendors: Vec<String>) -> Self {
        self.data_transfer_vendors = vendors;
        self
    }

    /// The CA that signs the stations' CSRs (SignCertificate, then CertificateSigned; see
    /// [`CertificateAuthority`]). `None` (the default): every SignCertificate is Rejected.
    pub fn certificate_authority(mut self, ca: Option<Arc<CertificateAuthority>>) -> Self {
        self.certificate_authority = ca;
        self
    }
}

impl CsmsConfig {
    /// The ItemsPerMessage to split GetVariables / SetVariables by for a station that has
    /// not reported its own (`--items-per-message`; see [`items_per_message`](crate::items_per_message)). `None` (the
    /// default): no limit, such a command goes as one CALL. A value of 0 counts as 1.
    pub fn items_per_message(mut self, limit: Option<usize>) -> Self {
        self.items_per_message = limit;
        self
    }

    /// See [`CsmsConfig::items_per_message`].
    pub fn get_items_per_message(&self) -> Option<usize> {
        self.items_per_message
    }

    /// Keep what must survive a crash in `store` ([`store`](crate::store): open transactions, the token
    /// store, per-station boot policies, security profiles and passwords); read back by
    /// [`Csms::open`](crate::Csms::open). `None` (the default): memory only.
    pub fn store(mut self, store: Option<Arc<dyn Store>>) -> Self {
        self.store = store;
        self
    }

    /// See [`CsmsConfig::store`].
    pub fn get_store(&self) -> Option<&Arc<dyn Store>> {
        self.store.as_ref()
    }

    /// The tariff of stations without one of their own (`--price-per-kwh`,
    /// `--price-per-hour`, `--currency`; see [`tariff`](crate::tariff)). `None` (the default): no cost is
    /// computed or sent for them.
    pub fn tariff(mut self, tariff: Option<Tariff>) -> Self {
        self.tariff = tariff;
        self
    }

    /// See [`CsmsConfig::tariff`].
    pub fn get_tariff(&self) -> Option<Tariff> {
        self.tariff
    }

    /// The least time between two CostUpdated of one transaction (OCPP 2.x I02; the first
    /// goes at once; `--cost-updated-interval`, default 60 s). Zero: after every
    /// TransactionEvent Updated that brings meter values.
    pub fn cost_updated_interval(mut self, interval: Duration) -> Self {
        self.cost_updated_interval = interval;
        self
    }

    /// See [`CsmsConfig::cost_updated_interval`].
    pub fn get_cost_updated_interval(&self) -> Duration {
        self.cost_updated_interval
    }

    /// The site limit of a station without one of its own (`--site-limit-amps`,
    /// `--site-limit-watts`): shared by its EVSEs with an active transaction
    /// ([`smart_charging`](crate::smart_charging)). Default: none (each EV gets what it asks for).
    pub fn site_limit(mut self, limit: SiteLimit) -> Self {
        self.site_limit = limit;
        self
    }

    /// See [`CsmsConfig::site_limit`].
    pub fn get_site_limit(&self) -> SiteLimit {
        self.site_limit
    }
}
