//! [`StationBuilder`]: what a station is told before it connects.

use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use ocpp_proto::station::Lifecycle;
use ocpp_proto::{ConnectionConfig, OcppVersion};
use tokio::sync::{mpsc, watch};

use super::*;
use crate::{Handler, Router};

/// Configures a [`Station`]: from [`Station::builder`].
pub struct StationBuilder {
    url: StationUrl,
    versions: Vec<OcppVersion>,
    password: Option<Vec<u8>>,
    tls: Option<Arc<rustls::ClientConfig>>,
    info: StationInfo,
    app: Option<Arc<dyn App>>,
    back_off: RetryBackOff,
    store: Option<Box<dyn OfflineStore>>,
    config: ConnectionConfig,
    retry_refusals: bool,
    seed: Option<u64>,
    transaction_attempts: u32,
    transaction_retry_interval: Duration,
    boot_attempts: u32,
    boot_retry_interval: Duration,
    established_after: Duration,
    resume: Option<Box<ResumeRule>>,
    profiles: Option<NetworkProfiles>,
    set_network_profile: Option<Option<Arc<network::ProfilesHook>>>,
    hook: Option<crate::hook::Hook>,
    local_auth: Option<LocalAuthStore>,
}

/// Which transaction found open at start the application goes on with
/// ([`StationBuilder::resume_transactions`]).
type ResumeRule = dyn Fn(&OpenTransaction) -> bool + Send;

impl fmt::Debug for StationBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StationBuilder")
            .field("url", &self.url)
            .field("versions", &self.versions)
            .field("tls", &self.tls.is_some())
            .field("info", &self.info)
            .field("back_off", &self.back_off)
            .finish_non_exhaustive()
    }
}

impl StationBuilder {
    pub(super) fn new(url: StationUrl) -> Self {
        StationBuilder {
            url,
            versions: vec![OcppVersion::V2_1, OcppVersion::V2_0_1, OcppVersion::V1_6],
            password: None,
            tls: None,
            info: StationInfo::new("ocpp-tokio", "station"),
            app: None,
            back_off: RetryBackOff::default(),
            store: None,
            config: ConnectionConfig::default(),
            retry_refusals: false,
            seed: None,
            transaction_attempts: 3,
            transaction_retry_interval: Duration::from_secs(10),
            boot_attempts: ocpp_proto::station::DEFAULT_BOOT_ATTEMPTS,
            boot_retry_interval: ocpp_proto::station::BOOT_RETRY_FALLBACK,
            established_after: ocpp_proto::station::MIN_ESTABLISHED_LIFETIME,
            resume: None,
            profiles: None,
            set_network_profile: None,
            hook: None,
            local_auth: None,
        }
    }

    /// The station feeds `store`'s authorization cache by itself: every answer of the
    /// central system on a token (1.6 Authorize, StartTransaction, StopTransaction
    /// `idTagInfo`; 2.x Authorize, TransactionEvent `idTokenInfo`) is learnt as the version's
    /// rules say ([`LocalAuthStore::learn`]: only with the cache on, `AuthorizationCacheEnabled`
    /// in 1.6, `AuthCacheCtrlr.Enabled` in 2.x, and not for a token of the local list), so
    /// that [`LocalAuthStore::authorize_locally`] decides on it offline.
    ///
    /// ```no_run
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// use ocpp_tokio::model::local_auth::Settings;
    /// use ocpp_tokio::model::IdToken;
    /// use ocpp_tokio::station::{LocalAuthExt, LocalAuthStore, Station};
    /// use ocpp_tokio::v1_6;
    ///
    /// let local_auth = LocalAuthStore::open("/var/lib/charger", Settings::default())?;
    /// let station = Station::builder("ws://127.0.0.1:9000/ocpp/CP001")?
    ///     .handler(local_auth.routes(ocpp_tokio::Router::for_station()), ())
    ///     .local_auth(local_auth.clone())
    ///     .connect()?;
    /// station.call(v1_6::AuthorizeRequest::new("04A2B3C4")).await?;
    /// // Later, offline: the answer decides.
    /// let decision = local_auth.authorize_locally(&IdToken::from_id_tag("04A2B3C4"), false);
    /// # let _ = decision;
    /// # Ok(()) }
    /// ```
    pub fn local_auth(mut self, store: LocalAuthStore) -> Self {
        self.local_auth = Some(store);
        self
    }

    /// One function for every OCPP message of the station, in and out, as the server's
    /// [`ServerBuilder::on_message`](crate::ServerBuilder::on_message) sees them (directions
    /// from the station's side: `CallOut` is the station's CALL, `CallIn` the central
    /// system's): the station's own BootNotifications, Heartbeats and queued transaction
    /// messages included. It runs on the station's task: keep it short.
    ///
    /// ```
    /// use ocpp_tokio::hook::Traffic;
    /// use ocpp_tokio::station::Station;
    ///
    /// let builder = Station::builder("ws://127.0.0.1:9000/ocpp/CP001").unwrap()
    ///     .on_message(|event| {
    ///         if let Traffic::CallOut(request) = event.message {
    ///             println!("{} -> {}", event.identity, request.action());
    ///         }
    ///     });
    /// # let _ = builder;
    /// ```
    pub fn on_message(
        mut self,
        hook: impl Fn(&crate::hook::MessageEvent<'_>) + Send + Sync + 'static,
    ) -> Self {
        self.hook = Some(Arc::new(hook));
        self
    }

    /// Several central systems, OCPP 2.x style: network connection profiles in configuration
    /// slots, tried in `NetworkConfigurationPriority` order with
    /// `NetworkProfileConnectionAttempts` attempts on each (B10; the rules are
    /// [`NetworkProfiles`]'s). Each profile's `ocppCsmsUrl` is given without the identity: the
    /// station appends the identity of the builder's URL (whose own central system is then
    /// used only if a profile names it). The reconnect back-off still applies between every
    /// two attempts. The station answers SetNetworkProfile itself (B09), storing the profile
    /// and calling [`StationBuilder::on_network_profiles`]'s hook; the credentials
    /// ([`password`](Self::password), [`tls`](Self::tls)) are the same for every profile.
    ///
    /// ```
    /// use ocpp_tokio::station::{NetworkProfile, NetworkProfiles, Station};
    ///
    /// let profiles = NetworkProfiles::new([
    ///     NetworkProfile::new(0, "ws://primary.example.com/ocpp").with_security_profile(1),
    ///     NetworkProfile::new(1, "ws://backup.example.com/ocpp").with_security_profile(1),
    /// ])
    /// .with_attempts(3);
    /// let builder = Station::builder("ws://primary.example.com/ocpp/CP001")
    ///     .unwrap()
    ///     .password("secret-secret-16")
    ///     .network_profiles(profiles);
    /// # let _ = builder;
    /// ```
    pub fn network_profiles(mut self, profiles: NetworkProfiles) -> Self {
        self.profiles = Some(profiles);
        if self.set_network_profile.is_none() {
            self.set_network_profile = Some(None);
        }
        self
    }

    /// Several central systems, the simple (OCPP 1.6) way: the builder's URL first, then
    /// these (each without the identity), `attempts` tries on each before the next, back to
    /// the first after a full cycle or after a connection was lost; with `return_after`, a
    /// connection to any but the first is left after that time so that the first is tried
    /// again. (1.6 has no standard mechanism; this is the policy of [`NetworkProfiles`] with
    /// [`NetworkProfiles::with_return_after`].)
    ///
    /// ```
    /// use std::time::Duration;
    /// use ocpp_tokio::station::Station;
    ///
    /// let builder = Station::builder("ws://primary.example.com/ocpp/CP001")
    ///     .unwrap()
    ///     .fallback_urls(["ws://backup.example.com/ocpp"], 3, Some(Duration::from_secs(3600)));
    /// # let _ = builder;
    /// ```
    pub fn fallback_urls<U: Into<String>>(
        mut self,
        urls: impl IntoIterator<Item = U>,
        attempts: u32,
        return_after: Option<Duration>,
    ) -> Self {
        let first = self.url.csms_url();
        let mut profiles = NetworkProfiles::from_urls(
            std::iter::once(first).chain(urls.into_iter().map(Into::into)),
        )
        .with_attempts(attempts);
        if let Some(after) = return_after {
            profiles = profiles.with_return_after(after);
        }
        self.profiles = Some(profiles);
        self
    }

    /// Keeps the network profiles when a SetNetworkProfile changes them (and makes the
    /// station answer SetNetworkProfile itself, also without
    /// [`network_profiles`](Self::network_profiles)): `hook` gets the new profiles before the
    /// change is accepted (e.g. writes them as JSON); its error answers Failed (B09.FR.03)
    /// and leaves the profiles as they were.
    ///
    /// ```
    /// use ocpp_tokio::station::Station;
    ///
    /// let builder = Station::builder("ws://127.0.0.1:9000/ocpp/CP001")
    ///     .unwrap()
    ///     .on_network_profiles(|profiles| {
    ///         let json = serde_json::to_string(profiles).map_err(|e| e.to_string())?;
    ///         std::fs::write("/tmp/profiles.json", json).map_err(|e| e.to_string())
    ///     });
    /// # let _ = builder;
    /// ```
    pub fn on_network_profiles(
        mut self,
        hook: impl Fn(&NetworkProfiles) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.set_network_profile = Some(Some(Arc::new(hook)));
        self
    }

    /// Which transactions found open in the store at start go on (`true`) rather than being
    /// ended as after a power loss (the default for every one: a station that went down
    /// during a transaction ends it with stopped reason `PowerLoss` and the last meter reading
    /// it knew, OCPP 1.6 `Reason` and 2.x `ReasonEnumType`). A transaction that goes on
    /// continues its `seqNo`s with the next [`Station::meter`].
    ///
    /// ```
    /// use ocpp_tokio::station::Station;
    ///
    /// // A station whose energy meter and contactor kept the session through the restart.
    /// let builder = Station::builder("ws://127.0.0.1:9000/ocpp/CP001")
    ///     .unwrap()
    ///     .resume_transactions(|open| open.evse.id == 1);
    /// # let _ = builder;
    /// ```
    pub fn resume_transactions(
        mut self,
        rule: impl Fn(&OpenTransaction) -> bool + Send + 'static,
    ) -> Self {
        self.resume = Some(Box::new(rule));
        self
    }

    /// The versions offered, in order of preference (default: 2.1, 2.0.1, 1.6).
    pub fn versions(mut self, versions: impl IntoIterator<Item = OcppVersion>) -> Self {
        self.versions = versions.into_iter().collect();
        self
    }

    /// Security profile 1 (or 2 with [`StationBuilder::tls`]): `Authorization: Basic` with the
    /// identity and this password (the AuthorizationKey; binary allowed on 1.6).
    pub fn password(mut self, password: impl AsRef<[u8]>) -> Self {
        self.password = Some(password.as_ref().to_vec());
        self
    }

    /// `wss://`: the TLS configuration, with the central system's CA (profile 2) and the
    /// station's client certificate (profile 3: `with_client_auth_cert`).
    pub fn tls(mut self, config: Arc<rustls::ClientConfig>) -> Self {
        self.tls = Some(config);
        self
    }

    /// What the BootNotification says (vendor, model, serial number, firmware).
    pub fn info(mut self, info: StationInfo) -> Self {
        self.info = info;
        self
    }

    /// The router that answers the central system's CALLs; its state `S` is made once, with
    /// `S::default()`, and lives as long as the station (across its connections).
    pub fn router<S: Default + Send + Sync + 'static>(self, router: Router<S>) -> Self {
        self.handler(router, S::default())
    }

    /// Any [`Handler`] (a [`Router`] among them) with the station's state: every connection's
    /// [`Session`](crate::Session) derefs to this one state. (`Handler::on_upgrade` is a
    /// server's and is not called.)
    pub fn handler<H: Handler>(self, handler: H, state: H::State) -> Self {
        self.handler_shared(handler, Arc::new(state))
    }

    /// [`StationBuilder::handler`] with a state the application keeps a handle to (e.g. to put
    /// the [`Station`] in it once connected: see the [module](super) documentation).
    ///
    /// ```
    /// use std::sync::{Arc, OnceLock};
    /// use ocpp_tokio::station::Station;
    /// use ocpp_tokio::Router;
    ///
    /// #[derive(Default)]
    /// struct Charger {
    ///     station: OnceLock<Station>,
    /// }
    ///
    /// let charger = Arc::new(Charger::default());
    /// let builder = Station::builder("ws://127.0.0.1:9000/ocpp/CP001")
    ///     .unwrap()
    ///     .handler_shared(Router::for_station(), charger.clone());
    /// # let _ = builder;
    /// ```
    pub fn handler_shared<H: Handler>(mut self, handler: H, state: Arc<H::State>) -> Self {
        self.app = Some(Arc::new(app::BoundApp {
            handler: Arc::new(handler),
            state,
        }));
        self
    }

    /// The reconnect back-off (OCPP 2.0.1 `RetryBackOffWaitMinimum`,
    /// `RetryBackOffRandomRange`, `RetryBackOffRepeatTimes`; the same schedule on 1.6).
    pub fn back_off(mut self, back_off: RetryBackOff) -> Self {
        self.back_off = back_off;
        self
    }

    /// Where transaction messages wait (default: a [`MemoryStore`], lost with the process; a
    /// [`FileStore`] survives it).
    pub fn store(mut self, store: impl OfflineStore) -> Self {
        self.store = Some(Box::new(store));
        self
    }

    /// How often a transaction message is tried when the central system answers it with a
    /// CALLERROR, or not at all within the call timeout on a connection that stays up, and the
    /// wait before the next try (multiplied by the tries so far): 1.6
    /// `TransactionMessageAttempts` and `TransactionMessageRetryInterval`, 2.x
    /// `OCPPCommCtrlr.MessageAttempts` and `MessageAttemptInterval` (default 3 and 10 s). After
    /// the last try the message is given up: its caller gets the last failure
    /// ([`CallFailure::ErrorResponse`], [`CallFailure::Timeout`]) and the next one goes. A
    /// connection lost with the message in flight does not count: it goes again after the next
    /// accepted boot.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ocpp_tokio::station::Station;
    ///
    /// let builder = Station::builder("ws://127.0.0.1:9000/ocpp/CP001")
    ///     .unwrap()
    ///     .transaction_retries(5, Duration::from_secs(20));
    /// # let _ = builder;
    /// ```
    pub fn transaction_retries(mut self, attempts: u32, interval: Duration) -> Self {
        self.transaction_attempts = attempts;
        self.transaction_retry_interval = interval;
        self
    }

    /// How many BootNotifications may fail in a row on one connection (no answer within the
    /// call timeout, a CALLERROR), and the wait before the next one after a failure (default
    /// 3 and 30 s). After the last the station closes the connection and reconnects after the
    /// back-off; [`Status::Waiting`] says [`Cause::BootUnanswered`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use ocpp_tokio::station::Station;
    ///
    /// let builder = Station::builder("ws://127.0.0.1:9000/ocpp/CP001")
    ///     .unwrap()
    ///     .boot_retries(5, Duration::from_secs(60));
    /// # let _ = builder;
    /// ```
    pub fn boot_retries(mut self, attempts: u32, interval: Duration) -> Self {
        self.boot_attempts = attempts.max(1);
        self.boot_retry_interval = interval;
        self
    }

    /// How long a connection must stay up after its BootNotification was accepted to count as
    /// established (default 10 s): only an established connection starts the back-off and
    /// the attempt count again. A central system that accepts the WebSocket (or even the boot)
    /// and closes at once makes every wait longer, up to the back-off's bound.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ocpp_tokio::station::Station;
    ///
    /// let builder = Station::builder("ws://127.0.0.1:9000/ocpp/CP001")
    ///     .unwrap()
    ///     .established_after(Duration::from_secs(30));
    /// # let _ = builder;
    /// ```
    pub fn established_after(mut self, lifetime: Duration) -> Self {
        self.established_after = lifetime;
        self
    }

    /// Keep reconnecting (with the back-off) after a 401, a 403 or no version in common,
    /// instead of stopping with a [`PermanentFailure`].
    pub fn retry_refusals(mut self, retry: bool) -> Self {
        self.retry_refusals = retry;
        self
    }

    /// Seeds the station's random numbers (the back-off's random part, WebSocket keys), for a
    /// simulation that must replay the same waits; by default they come from the system.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// The connection's settings: timeouts, keep-alive pings, limits, compression (its
    /// versions are those of [`StationBuilder::versions`]).
    pub fn config(mut self, config: ConnectionConfig) -> Self {
        self.config = config;
        self
    }

    /// Starts the station's task on the current tokio runtime (it connects at once).
    ///
    /// # Errors
    /// [`StationError`]: no versions, `wss://` without TLS configuration, an offline store
    /// that cannot be read.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub fn connect(mut self) -> Result<Station, StationError> {
        if self.versions.is_empty() {
            return Err(StationError::NoVersion);
        }
        let mut profiles = self
            .profiles
            .take()
            .unwrap_or_else(|| NetworkProfiles::new([NetworkProfile::new(0, self.url.csms_url())]));
        if profiles.active_security_profile() == 0 {
            let active =
                network::security_profile_of(&self.url, self.password.is_some(), self.tls.as_ref());
            // The configured profiles may start lower than the builder's URL implies: the
            // lowest of them is the floor then.
            let lowest = profiles.profiles().iter().map(|p| p.security_profile).min();
            profiles =
                profiles.with_active_security_profile(lowest.map_or(active, |l| l.min(active)));
        }
        if self.tls.is_none() {
            if let Some(wss) = profiles
                .profiles()
                .iter()
                .find(|p| p.csms_url.starts_with("wss://"))
            {
                return Err(StationError::Tls(format!(
                    "{}: wss:// needs StationBuilder::tls (the central system's CA)",
                    wss.csms_url
                )));
            }
        }
        for profile in profiles.profiles() {
            profile.station_url(self.url.identity())?;
        }
        let tls = match (self.url.tls(), self.tls) {
            (false, config) => config,
            (true, None) => {
                return Err(StationError::Tls(
                    "wss:// needs StationBuilder::tls (the central system's CA)".into(),
                ))
            }
            (true, Some(config)) => {
                // A host TLS can check the certificate against.
                let name = self.url.server_name();
                rustls::pki_types::ServerName::try_from(name.to_owned())
                    .map_err(|e| StationError::Tls(format!("{name}: {e}")))?;
                Some(config)
            }
        };
        let store = self.store.unwrap_or_else(|| Box::new(MemoryStore::new()));
        let first_version = self.versions[0];
        let prefix = transaction_id_prefix(self.url.identity().as_str());
        let (mut queue, restart) = queue::Queue::open(
            store,
            self.transaction_attempts,
            self.transaction_retry_interval,
            || Transactions::new(first_version, &prefix),
        )?;
        // A transaction open when the station went down ends as after a power loss, unless
        // the application goes on with it.
        for open in &restart.open {
            if self.resume.as_ref().is_some_and(|resume| resume(open)) {
                continue;
            }
            let op = super::TransactionOp::PowerLoss { evse: open.evse.id };
            match queue.transaction(op, ocpp_messages::DateTime::now()) {
                Ok(_) => {}
                Err(QueueError::Store(error)) => return Err(StationError::Store(error)),
                Err(error) => {
                    tracing::warn!(evse = open.evse.id, %error, "transaction open at start not ended");
                }
            }
        }
        let transactions = queue.watch_transactions();
        let app = self.app.unwrap_or_else(|| {
            Arc::new(app::BoundApp {
                handler: Arc::new(Router::<()>::default()),
                state: Arc::new(()),
            })
        });
        let (commands, receiver) = mpsc::unbounded_channel();
        let (status_tx, status) = watch::channel(Status::Connecting { attempt: 1 });
        let (stopped_tx, stopped) = watch::channel(None);
        let identity = self.url.identity().clone();
        let heartbeat_ms = Arc::new(AtomicU64::new(
            ocpp_proto::station::DEFAULT_HEARTBEAT_INTERVAL.as_millis() as u64,
        ));
        // Starting is a reboot: the lifecycle tries the first entry of the priority list
        // first (B10.FR.04), even with profiles kept from an earlier run.
        let mut lifecycle = Lifecycle::new(self.info, self.back_off, profiles);
        lifecycle.set_established_after(self.established_after);
        lifecycle.set_boot_retries(self.boot_attempts, self.boot_retry_interval);
        lifecycle.set_retry_refusals(self.retry_refusals);
        if self.set_network_profile.is_some() {
            lifecycle.answer_set_network_profile(tls.is_some());
        }
        let (profiles_watch, profiles_rx) = watch::channel(lifecycle.profiles().clone());
        let config = Arc::new(self.config.versions(self.versions));
        let task = driver::Task {
            base_config: config.clone(),
            config,
            url: self.url,
            password: self.password,
            tls,
            lifecycle,
            profiles_watch,
            profiles_hook: self.set_network_profile.flatten(),
            app,
            queue,
            commands: receiver,
            status: status_tx,
            rng: self
                .seed
                .map_or_else(fastrand::Rng::new, fastrand::Rng::with_seed),
            heartbeat_ms: heartbeat_ms.clone(),
            hook: match (self.hook, self.local_auth) {
                (hook, None) => hook,
                (hook, Some(store)) => {
                    let feeder = auth_cache::CacheFeeder::new(store);
                    Some(Arc::new(move |event: &crate::hook::MessageEvent<'_>| {
                        feeder.on_message(event);
                        if let Some(hook) = &hook {
                            hook(event);
                        }
                    }))
                }
            },
        };
        tokio::spawn(async move {
            let result = task.run().await;
            let _ = stopped_tx.send(Some(result));
        });
        Ok(Station {
            shared: Arc::new(StationShared {
                commands,
                status,
                stopped,
                identity,
                heartbeat_ms,
                transactions,
                profiles: profiles_rx,
                restarted: restart.open,
            }),
        })
    }
}

/// What the 2.x transactionIds of a station start with when it has no state yet: its identity
/// (at most 14 bytes of it) and the second the state was made, so that ids stay unique even
/// if the state is lost (a [`MemoryStore`]).
fn transaction_id_prefix(identity: &str) -> String {
    let mut end = identity.len().min(14);
    while !identity.is_char_boundary(end) {
        end -= 1;
    }
    let mut secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut stamp = Vec::new();
    while secs > 0 || stamp.is_empty() {
        stamp.push(b"0123456789abcdefghijklmnopqrstuvwxyz"[(secs % 36) as usize]);
        secs /= 36;
    }
    stamp.reverse();
    format!("{}-{}-", &identity[..end], String::from_utf8_lossy(&stamp))
}
