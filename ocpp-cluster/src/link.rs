//! The node's way to Redis: one address, the master that Redis Sentinel names, followed through
//! failovers (PROTOCOL.md 1.1), or a Redis Cluster (1.2).
//!
//! [`RedisLink`] is what the node runs every command and script on (a
//! [`ConnectionLike`](redis::aio::ConnectionLike), cheap to clone): the rest of the crate has
//! one code path for the three. On a plain `redis://` URL it is a [`ConnectionManager`]. On
//! `redis-cluster://` it is the `redis` crate's cluster connection, which sends each command to
//! the master of its key's slot and follows `MOVED`/`ASK` redirections and topology changes;
//! the inbox is a sharded pub/sub subscription ([`Inbox`]). On `redis+sentinel://` it is the
//! manager of the master the sentinels named last. A background [`Resolver`] asks the sentinels
//! again (at most every [`RESOLVE_INTERVAL`]) on every `+switch-master` event and when a call
//! fails as a failover makes calls fail (refused, reset, timed out, `READONLY` from a demoted
//! master); it believes the sentinel with the newest configuration (`config-epoch`), and when
//! that names another master that says it is one (`ROLE`), runs `failover.lua` there and moves
//! the link to it. The inbox subscription follows ([`MasterMoved`]). A call never waits for the
//! sentinels longer than the Redis timeout and is never sent again on the new master: it fails
//! (the caller's retryable outcome) and the next call goes there.

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures_util::{FutureExt, StreamExt};
use redis::aio::{
    ConnectionLike, ConnectionManager, ConnectionManagerConfig, MultiplexedConnection,
};
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::{
    AsyncConnectionConfig, Cmd, ConnectionAddr, ErrorKind, IntoConnectionInfo, Pipeline,
    ProtocolVersion, PushInfo, PushKind, RedisConnectionInfo, RedisError, RedisFuture, RedisResult,
    Role, ServerErrorKind, Value,
};
use tokio::sync::{mpsc, watch};

use crate::config::RedisTarget;
use crate::{ClusterConfig, ClusterError};

/// The shortest time between two questions to the sentinels.
const RESOLVE_INTERVAL: Duration = Duration::from_millis(250);
/// The longest wait between two questions while the sentinels name no reachable master.
const RESOLVE_BACKOFF_MAX: Duration = Duration::from_secs(2);

/// The connection every Redis command of the node goes through (see the module's doc).
#[derive(Clone)]
pub(crate) enum RedisLink {
    /// One Redis address.
    Direct {
        client: redis::Client,
        manager: ConnectionManager,
    },
    /// The master of a Sentinel service.
    Sentinel(Arc<SentinelLink>),
    /// A Redis Cluster.
    Cluster {
        client: Arc<redis::cluster::ClusterClient>,
        connection: ClusterConnection,
        timeout: Duration,
        /// The `run_id` of every master at the last look ([`RedisLink::new_master`]).
        masters: Arc<std::sync::Mutex<Option<std::collections::BTreeSet<String>>>>,
    },
}

/// The message a node publishes to its own inbox on Redis Cluster to check that it is
/// subscribed where `SPUBLISH` counts it (PROTOCOL.md 3); every node ignores it.
pub(crate) const INBOX_PING: &str = r#"{"type":"ping"}"#;

/// A node's inbox subscription: a pub/sub connection (one Redis, Sentinel), or a Redis Cluster
/// connection that takes sharded pub/sub messages (`SSUBSCRIBE`) at the master of the inbox's
/// slot.
pub(crate) enum Inbox {
    /// `SUBSCRIBE` on one Redis.
    PubSub {
        sink: redis::aio::PubSubSink,
        stream: redis::aio::PubSubStream,
    },
    /// `SSUBSCRIBE` on Redis Cluster; the messages come through `pushes`.
    Sharded {
        connection: ClusterConnection,
        pushes: mpsc::UnboundedReceiver<PushInfo>,
        channel: Option<String>,
    },
}

impl Inbox {
    /// Subscribes to `channel` (`SUBSCRIBE`, or `SSUBSCRIBE` on Redis Cluster).
    pub(crate) async fn subscribe(&mut self, channel: &str) -> RedisResult<()> {
        match self {
            Inbox::PubSub { sink, .. } => sink.subscribe(channel).await,
            Inbox::Sharded {
                connection,
                channel: subscribed,
                ..
            } => {
                if let Err(e) = connection.ssubscribe(channel).await {
                    if e.to_string()
                        .to_ascii_lowercase()
                        .contains("unknown command")
                    {
                        // Not a failure that passes: say what it is at each attempt.
                        tracing::error!(
                            error = %e,
                            "this Redis Cluster has no sharded pub/sub (SSUBSCRIBE): \
                             ocpp-cluster needs Redis 7 or later on a cluster"
                        );
                    }
                    return Err(e);
                }
                *subscribed = Some(channel.to_owned());
                Ok(())
            }
        }
    }

    /// The next message's payload; `None` once the connection is gone.
    pub(crate) async fn next(&mut self) -> Option<Vec<u8>> {
        match self {
            Inbox::PubSub { stream, .. } => stream
                .next()
                .await
                .map(|message| message.get_payload_bytes().to_vec()),
            Inbox::Sharded { pushes, .. } => loop {
                let push = pushes.recv().await?;
                if push.kind != PushKind::SMessage {
                    continue;
                }
                if let Some(Value::BulkString(payload)) = push.data.into_iter().nth(1) {
                    return Some(payload);
                }
            },
        }
    }

    /// Checks that the subscription still works: `PING` on the pub/sub connection; on Redis
    /// Cluster, [`INBOX_PING`] published to the inbox itself, which the master of its slot must
    /// count as read (the cluster connection subscribes again by itself after a disconnection
    /// or a failover; meanwhile this fails).
    pub(crate) async fn ping(&mut self) -> RedisResult<()> {
        match self {
            Inbox::PubSub { sink, .. } => sink.ping::<Value>().await.map(drop),
            Inbox::Sharded {
                connection,
                channel,
                ..
            } => {
                let Some(channel) = channel else {
                    return Err(RedisError::from((ErrorKind::Client, "not subscribed")));
                };
                let readers: i64 = redis::cmd("SPUBLISH")
                    .arg(&*channel)
                    .arg(INBOX_PING)
                    .query_async(connection)
                    .await?;
                if readers == 0 {
                    return Err(RedisError::from((
                        ErrorKind::Client,
                        "the inbox's master does not count this node's subscription",
                    )));
                }
                Ok(())
            }
        }
    }
}

impl std::fmt::Debug for RedisLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RedisLink::Direct { client, .. } => f
                .debug_tuple("Direct")
                .field(client.get_connection_info().addr())
                .finish(),
            RedisLink::Sentinel(link) => f
                .debug_tuple("Sentinel")
                .field(&link.master.borrow().as_ref().map(|m| m.addr.clone()))
                .finish(),
            RedisLink::Cluster { .. } => f.write_str("Cluster"),
        }
    }
}

/// The master in use behind a Sentinel service.
struct Master {
    addr: ConnectionAddr,
    client: redis::Client,
    manager: ConnectionManager,
    /// 0 for the first master found, one more for each move.
    generation: u64,
}

/// The shared half of a Sentinel link: the master in use, and the way to ask for a new look.
pub(crate) struct SentinelLink {
    /// `None` until the sentinels first named a reachable master.
    master: watch::Sender<Option<Arc<Master>>>,
    /// Wakes the resolver (a full channel: a look is asked for already).
    wanted: mpsc::Sender<()>,
    timeout: Duration,
    db: i64,
}

/// Fires when the link moved to another master than the one a subscription was made on (or,
/// made before any master was known, when the first one is).
pub(crate) struct MasterMoved(Option<(MasterWatch, Option<u64>)>);

/// The master a Sentinel link uses, as it changes (`None` until the first is found).
type MasterWatch = watch::Receiver<Option<Arc<Master>>>;

impl MasterMoved {
    /// Resolves once the link uses another master (never, on a plain URL).
    pub(crate) async fn wait(self) {
        if let Some((mut master, generation)) = self.0 {
            let moved = master
                .wait_for(|m| m.as_ref().is_some_and(|m| generation != Some(m.generation)))
                .await
                .is_ok();
            if moved {
                return;
            }
        }
        std::future::pending::<()>().await
    }
}

/// The settings of a Redis Cluster connection: each attempt and each answer bounded by the
/// Redis timeout.
fn cluster_config(config: &ClusterConfig) -> redis::cluster::ClusterConfig {
    redis::cluster::ClusterConfig::new()
        .set_connection_timeout(config.redis_timeout)
        .set_response_timeout(config.redis_timeout)
}

/// The settings of every connection to a data node: each attempt and each answer bounded by
/// the Redis timeout, one reconnection attempt per failed call.
fn manager_config(config: &ClusterConfig) -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_connection_timeout(Some(config.redis_timeout))
        .set_response_timeout(Some(config.redis_timeout))
        .set_number_of_retries(1)
        .set_min_delay(Duration::from_millis(20))
        .set_max_delay(config.redis_timeout)
}

impl RedisLink {
    /// The link of `config.redis_url`; on a Sentinel URL, starts its resolver on `runtime`,
    /// which asks the sentinels for the master at once and ends with the last clone of the link.
    pub(crate) fn open(
        config: &ClusterConfig,
        runtime: &tokio::runtime::Handle,
    ) -> Result<RedisLink, ClusterError> {
        match config.redis_target()? {
            RedisTarget::Direct(url) => {
                let client = redis::Client::open(url.as_str())
                    .map_err(|e| ClusterError::Config(format!("redis url: {e}")))?;
                let manager = ConnectionManager::new_lazy_with_config(
                    client.clone(),
                    manager_config(config),
                )?;
                Ok(RedisLink::Direct { client, manager })
            }
            RedisTarget::Sentinel(target) => {
                let sentinels = target
                    .sentinels
                    .iter()
                    .map(|(host, port)| {
                        redis::Client::open(ConnectionAddr::Tcp(host.clone(), *port))
                    })
                    .collect::<RedisResult<Vec<_>>>()
                    .map_err(|e| ClusterError::Config(format!("redis url: {e}")))?;
                let mut node_info = RedisConnectionInfo::default().set_db(target.db);
                if let Some(username) = &target.username {
                    node_info = node_info.set_username(username);
                }
                if let Some(password) = &target.password {
                    node_info = node_info.set_password(password);
                }
                let (wanted, requests) = mpsc::channel(1);
                let link = Arc::new(SentinelLink {
                    master: watch::Sender::new(None),
                    wanted,
                    timeout: config.redis_timeout,
                    db: target.db,
                });
                let resolver = Resolver {
                    link: Arc::downgrade(&link),
                    requests,
                    sentinels: sentinels.into_iter().map(|client| (client, None)).collect(),
                    service: target.service,
                    node_info,
                    manager_config: manager_config(config),
                    since_key: config.since_key(),
                    epoch_key: config.epoch_key(),
                    failover: redis::Script::new(crate::scripts::FAILOVER),
                    timeout: config.redis_timeout,
                };
                runtime.spawn(resolver.run());
                link.want();
                Ok(RedisLink::Sentinel(link))
            }
            RedisTarget::Cluster(target) => {
                let mut info = RedisConnectionInfo::default();
                if let Some(username) = &target.username {
                    info = info.set_username(username);
                }
                if let Some(password) = &target.password {
                    info = info.set_password(password);
                }
                let nodes = target
                    .nodes
                    .iter()
                    .map(|(host, port)| {
                        ConnectionAddr::Tcp(host.clone(), *port)
                            .into_connection_info()
                            .map(|node| node.set_redis_settings(info.clone()))
                    })
                    .collect::<RedisResult<Vec<_>>>()
                    .map_err(|e| ClusterError::Config(format!("redis url: {e}")))?;
                // RESP3: the inbox takes its sharded messages as pushes.
                let client = redis::cluster::ClusterClientBuilder::new(nodes)
                    .use_protocol(ProtocolVersion::RESP3)
                    .connection_timeout(config.redis_timeout)
                    .response_timeout(config.redis_timeout)
                    .retries(2)
                    .build()
                    .map_err(|e| ClusterError::Config(format!("redis url: {e}")))?;
                // Connects in the background (the node starts without waiting for Redis).
                let _entered = runtime.enter();
                let connection =
                    client.get_pending_async_connection_with_config(cluster_config(config));
                Ok(RedisLink::Cluster {
                    client: Arc::new(client),
                    connection,
                    timeout: config.redis_timeout,
                    masters: Arc::default(),
                })
            }
        }
    }

    /// A new inbox connection to the master in use (not subscribed yet: [`Inbox::subscribe`]),
    /// and what fires when the link moves to another one (the subscription should follow).
    pub(crate) async fn inbox(&self) -> RedisResult<(Inbox, MasterMoved)> {
        let pubsub = |pubsub: redis::aio::PubSub| {
            let (sink, stream) = pubsub.split();
            Inbox::PubSub { sink, stream }
        };
        match self {
            RedisLink::Direct { client, .. } => {
                Ok((pubsub(client.get_async_pubsub().await?), MasterMoved(None)))
            }
            RedisLink::Sentinel(link) => {
                let master = link.current().await?;
                let moved = MasterMoved(Some((link.master.subscribe(), Some(master.generation))));
                match master.client.get_async_pubsub().await {
                    Ok(connection) => Ok((pubsub(connection), moved)),
                    Err(e) => {
                        link.want();
                        Err(e)
                    }
                }
            }
            RedisLink::Cluster {
                client, timeout, ..
            } => {
                let (pushes_in, pushes) = mpsc::unbounded_channel();
                let config = redis::cluster::ClusterConfig::new()
                    .set_connection_timeout(*timeout)
                    .set_response_timeout(*timeout)
                    .set_push_sender(pushes_in);
                let connection = client.get_async_connection_with_config(config).await?;
                let inbox = Inbox::Sharded {
                    connection,
                    pushes,
                    channel: None,
                };
                Ok((inbox, MasterMoved(None)))
            }
        }
    }

    /// The command that publishes to an inbox: `PUBLISH`, or `SPUBLISH` on Redis Cluster (the
    /// inboxes are sharded channels there).
    pub(crate) fn publish_command(&self) -> &'static str {
        match self {
            RedisLink::Cluster { .. } => "SPUBLISH",
            _ => "PUBLISH",
        }
    }

    /// Whether the link is a Redis Cluster's.
    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self, RedisLink::Cluster { .. })
    }

    /// The masters a `SCAN` must visit: `None`, the one Redis (or master) of the link; on Redis
    /// Cluster each master, by address (`CLUSTER SLOTS`).
    pub(crate) async fn scan_targets(&self) -> RedisResult<Vec<Option<(String, u16)>>> {
        let RedisLink::Cluster { connection, .. } = self else {
            return Ok(vec![None]);
        };
        let mut connection = connection.clone();
        let slots: Value = redis::cmd("CLUSTER")
            .arg("SLOTS")
            .query_async(&mut connection)
            .await?;
        let mut masters = Vec::new();
        if let Value::Array(ranges) = slots {
            for range in ranges {
                let Value::Array(fields) = range else {
                    continue;
                };
                let Some(Value::Array(master)) = fields.get(2) else {
                    continue;
                };
                let host = match master.first() {
                    Some(Value::BulkString(host)) => String::from_utf8_lossy(host).into_owned(),
                    Some(Value::SimpleString(host)) => host.clone(),
                    _ => continue,
                };
                let Some(Value::Int(port)) = master.get(1) else {
                    continue;
                };
                let Ok(port) = u16::try_from(*port) else {
                    continue;
                };
                if !masters.contains(&Some((host.clone(), port))) {
                    masters.push(Some((host, port)));
                }
            }
        }
        if masters.is_empty() {
            return Err(RedisError::from((
                ErrorKind::Client,
                "CLUSTER SLOTS names no master",
            )));
        }
        Ok(masters)
    }

    /// On Redis Cluster: whether a master serves now that did not at the last look (by its
    /// `run_id`, new at every start of a redis-server): a replica promoted by a failover, a
    /// master that restarted without its data, or one added. Its slots may lack writes
    /// (asynchronous replication, no persistence). `false` at the first look, and on one Redis.
    pub(crate) async fn new_master(&self) -> RedisResult<bool> {
        let RedisLink::Cluster { masters, .. } = self else {
            return Ok(false);
        };
        let mut info = redis::cmd("INFO");
        info.arg("server");
        let mut now = std::collections::BTreeSet::new();
        for target in self.scan_targets().await? {
            let text: String = self.scan_on(&target, &info).await?;
            let run_id = text
                .lines()
                .find_map(|line| line.strip_prefix("run_id:"))
                .map(|id| id.trim().to_owned())
                .ok_or_else(|| RedisError::from((ErrorKind::Parse, "INFO without a run_id")))?;
            now.insert(run_id);
        }
        let mut seen = masters
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let new = seen.as_ref().is_some_and(|before| !now.is_subset(before));
        *seen = Some(now);
        Ok(new)
    }

    /// Runs `cmd` (a `SCAN` step) on `target`, one of [`RedisLink::scan_targets`].
    pub(crate) async fn scan_on<T: redis::FromRedisValue>(
        &self,
        target: &Option<(String, u16)>,
        cmd: &Cmd,
    ) -> RedisResult<T> {
        match (self, target) {
            (RedisLink::Cluster { connection, .. }, Some((host, port))) => {
                let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress {
                    host: host.clone(),
                    port: *port,
                });
                let value = connection
                    .clone()
                    .route_command(cmd.clone(), routing)
                    .await?;
                Ok(redis::from_redis_value(value)?)
            }
            _ => cmd.query_async(&mut self.clone()).await,
        }
    }

    /// Which master the link uses: 0 for the first one found behind Sentinel, one more for
    /// each move; `None` on a plain URL, or before the sentinels named one.
    pub(crate) fn generation(&self) -> Option<u64> {
        match self {
            RedisLink::Direct { .. } | RedisLink::Cluster { .. } => None,
            RedisLink::Sentinel(link) => link.master.borrow().as_ref().map(|m| m.generation),
        }
    }

    /// What fires when the link moves to another master than the one it uses now (or finds its
    /// first): the inbox waits on it between two attempts, so that it follows a failover at
    /// once rather than after the rest of its backoff (never fires on a plain URL).
    pub(crate) fn moves(&self) -> MasterMoved {
        match self {
            RedisLink::Direct { .. } | RedisLink::Cluster { .. } => MasterMoved(None),
            RedisLink::Sentinel(link) => {
                let master = link.master.subscribe();
                let generation = master.borrow().as_ref().map(|m| m.generation);
                MasterMoved(Some((master, generation)))
            }
        }
    }

    /// Moves a Sentinel link to the Redis on `port` as the resolver does (without asking the
    /// sentinels, nor running `failover.lua`): a test's failover at the instant it chooses.
    #[cfg(test)]
    pub(crate) fn move_to(&self, port: u16) {
        if let RedisLink::Sentinel(link) = self {
            let addr = ConnectionAddr::Tcp("127.0.0.1".to_owned(), port);
            let client = redis::Client::open(addr.clone()).expect("client");
            let manager = ConnectionManager::new_lazy_with_config(
                client.clone(),
                ConnectionManagerConfig::new(),
            )
            .expect("manager");
            let generation = link
                .master
                .borrow()
                .as_ref()
                .map_or(0, |m| m.generation + 1);
            link.master.send_replace(Some(Arc::new(Master {
                addr,
                client,
                manager,
                generation,
            })));
        }
    }

    /// A connection of the node's failed (its inbox): on Sentinel, ask whether the master moved.
    pub(crate) fn suspect(&self) {
        if let RedisLink::Sentinel(link) = self {
            link.want();
        }
    }
}

impl SentinelLink {
    /// Asks the resolver for a look at the sentinels (rate-limited there).
    fn want(&self) {
        let _ = self.wanted.try_send(());
    }

    /// The master in use; before the first one is known, waits for it (at most the Redis
    /// timeout).
    async fn current(&self) -> RedisResult<Arc<Master>> {
        let known = self.master.borrow().clone();
        if let Some(master) = known {
            return Ok(master);
        }
        self.want();
        let mut master = self.master.subscribe();
        let found = tokio::time::timeout(self.timeout, async {
            master
                .wait_for(Option::is_some)
                .await
                .ok()
                .and_then(|m| m.clone())
        })
        .await;
        match found {
            Ok(Some(master)) => Ok(master),
            _ => Err(RedisError::from((
                ErrorKind::MasterNameNotFoundBySentinel,
                "the sentinels named no reachable master yet",
            ))),
        }
    }
}

/// Whether an error says the master may have moved: the connection refused, dropped or timed
/// out, or a demoted master (`READONLY`, `MASTERDOWN`).
fn may_have_moved(e: &RedisError) -> bool {
    e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
        || e.is_unrecoverable_error()
        || matches!(
            e.kind(),
            ErrorKind::Server(ServerErrorKind::ReadOnly | ServerErrorKind::MasterDown)
                | ErrorKind::MasterNameNotFoundBySentinel
        )
}

/// Asks for a look at the sentinels when dropped armed: a call that failed as a failover makes
/// calls fail, or was dropped before its answer (the caller's Redis timeout ran out).
struct Watch<'a> {
    link: &'a SentinelLink,
    armed: bool,
}

impl Watch<'_> {
    fn settle<T>(mut self, result: &RedisResult<T>) {
        self.armed = result.as_ref().err().is_some_and(may_have_moved);
    }
}

impl Drop for Watch<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.link.want();
        }
    }
}

impl ConnectionLike for RedisLink {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            RedisLink::Direct { manager, .. } => manager.req_packed_command(cmd),
            RedisLink::Cluster { connection, .. } => connection.req_packed_command(cmd),
            RedisLink::Sentinel(link) => async move {
                let link: &SentinelLink = link;
                let watch = Watch { link, armed: true };
                let mut manager = link.current().await?.manager.clone();
                let result = manager.send_packed_command(cmd).await;
                watch.settle(&result);
                result
            }
            .boxed(),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            RedisLink::Direct { manager, .. } => {
                manager.req_packed_commands(pipeline, offset, count)
            }
            RedisLink::Cluster { connection, .. } => {
                connection.req_packed_commands(pipeline, offset, count)
            }
            RedisLink::Sentinel(link) => async move {
                let link: &SentinelLink = link;
                let watch = Watch { link, armed: true };
                let mut manager = link.current().await?.manager.clone();
                let result = manager.send_packed_commands(pipeline, offset, count).await;
                watch.settle(&result);
                result
            }
            .boxed(),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            RedisLink::Direct { manager, .. } => manager.get_db(),
            RedisLink::Cluster { .. } => 0,
            RedisLink::Sentinel(link) => link.db,
        }
    }
}

/// The background task of a Sentinel link: asks the sentinels when asked to (at most every
/// [`RESOLVE_INTERVAL`]; again with a backoff until they name a reachable master), and moves
/// the link when they name another master. It also listens to every sentinel's
/// `+switch-master` events, so that a failover that leaves the old master working (`SENTINEL
/// FAILOVER`: it is demoted only seconds later) is followed at once.
struct Resolver {
    link: Weak<SentinelLink>,
    requests: mpsc::Receiver<()>,
    /// Each sentinel, with its connection once made.
    sentinels: Vec<(redis::Client, Option<MultiplexedConnection>)>,
    service: String,
    /// The user, password and database of the data nodes.
    node_info: RedisConnectionInfo,
    manager_config: ConnectionManagerConfig,
    since_key: String,
    epoch_key: String,
    /// `failover.lua`, run on a new master before it is used.
    failover: redis::Script,
    timeout: Duration,
}

impl Resolver {
    async fn run(mut self) {
        let switches = self.sentinels.iter().map(|(client, _)| {
            follow_switches(
                client.clone(),
                self.service.clone(),
                self.link.clone(),
                self.timeout,
            )
        });
        let switches = futures_util::future::join_all(switches);
        tokio::select! {
            _ = self.serve() => {}
            _ = switches => {}
        }
    }

    async fn serve(&mut self) {
        // Ends when the last link is gone (its sender with it).
        while self.requests.recv().await.is_some() {
            let mut backoff = RESOLVE_INTERVAL;
            loop {
                let Some(link) = self.link.upgrade() else {
                    return;
                };
                let resolved = self.resolve(&link).await;
                drop(link);
                // Asks that came while the sentinels were asked are answered by this look.
                while self.requests.try_recv().is_ok() {}
                tokio::time::sleep(RESOLVE_INTERVAL).await;
                match resolved {
                    Ok(()) => break,
                    Err(e) => tracing::debug!(error = %e, "no Redis master from the sentinels"),
                }
                // No master yet: look again, at once if a call asked meanwhile, else after a
                // backoff.
                let wait = backoff.saturating_sub(RESOLVE_INTERVAL);
                if let Ok(None) = tokio::time::timeout(wait, self.requests.recv()).await {
                    return;
                }
                backoff = (backoff * 2).min(RESOLVE_BACKOFF_MAX);
            }
        }
    }

    /// One look: the master the sentinels name; a move if it is another one and says so itself
    /// (`ROLE`).
    async fn resolve(&mut self, link: &SentinelLink) -> Result<(), ClusterError> {
        let addr = self.named_master().await?;
        let current = link.master.borrow().clone();
        if current.as_ref().is_some_and(|m| m.addr == addr) {
            return Ok(());
        }
        let info = addr
            .clone()
            .into_connection_info()?
            .set_redis_settings(self.node_info.clone());
        let client = redis::Client::open(info)?;
        let mut manager =
            ConnectionManager::new_lazy_with_config(client.clone(), self.manager_config.clone())?;
        let role: Role =
            bounded(self.timeout, redis::cmd("ROLE").query_async(&mut manager)).await?;
        if !matches!(role, Role::Primary { .. }) {
            return Err(ClusterError::Protocol(format!(
                "the sentinels name {addr} the master, which says it is not (yet)"
            )));
        }
        let generation = match &current {
            None => {
                tracing::info!(master = %addr, "Redis master found through Sentinel");
                0
            }
            Some(old) => {
                // A failover may have lost the last writes (asynchronous replication): the
                // new master reads a missing claim as unknown for a claim TTL, as after a
                // restart (PROTOCOL.md 2), until the holders have made their claims again,
                // and hands out epochs above the old master's.
                let mut failover = self.failover.key(&self.since_key);
                failover.key(&self.epoch_key);
                bounded(self.timeout, failover.invoke_async::<i64>(&mut manager)).await?;
                tracing::warn!(from = %old.addr, to = %addr, "the Redis master moved: following it");
                old.generation + 1
            }
        };
        link.master.send_replace(Some(Arc::new(Master {
            addr,
            client,
            manager,
            generation,
        })));
        Ok(())
    }

    /// Asks every sentinel at once (`SENTINEL MASTER <service>`, each bounded by the Redis
    /// timeout) and believes the newest configuration: the highest `config-epoch` (each
    /// failover raises it; a sentinel that has not heard of the last failover yet still names
    /// the old master), among its answers one whose master is not seen down.
    async fn named_master(&mut self) -> Result<ConnectionAddr, ClusterError> {
        let (timeout, service) = (self.timeout, self.service.as_str());
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout));
        let config = &config;
        let asks = self
            .sentinels
            .iter_mut()
            .map(|(client, connection)| async move {
                let asked = tokio::time::timeout(timeout, async {
                    let connection = match connection {
                        Some(connection) => connection,
                        None => connection.insert(
                            client
                                .get_multiplexed_async_connection_with_config(config)
                                .await?,
                        ),
                    };
                    redis::cmd("SENTINEL")
                        .arg("MASTER")
                        .arg(service)
                        .query_async::<std::collections::HashMap<String, String>>(connection)
                        .await
                })
                .await;
                if !matches!(asked, Ok(Ok(_))) {
                    *connection = None;
                }
                asked.ok().and_then(Result::ok)
            });
        let answers: Vec<_> = futures_util::future::join_all(asks)
            .await
            .into_iter()
            .flatten()
            .filter_map(|info| {
                let epoch = info.get("config-epoch")?.parse::<u64>().ok()?;
                let port = info.get("port")?.parse::<u16>().ok()?;
                let ip = info.get("ip")?.clone();
                let flags = info.get("flags")?;
                let up = !flags.contains("s_down") && !flags.contains("o_down");
                Some((epoch, ConnectionAddr::Tcp(ip, port), up))
            })
            .collect();
        let newest = answers.iter().map(|(epoch, ..)| *epoch).max();
        answers
            .into_iter()
            .find(|(epoch, _, up)| Some(*epoch) == newest && *up)
            .map(|(_, addr, _)| addr)
            .ok_or_else(|| {
                ClusterError::Protocol(format!(
                    "no sentinel names a master of {service:?} that is up"
                ))
            })
    }
}

/// Listens to one sentinel's `+switch-master` events and asks for a look on each of this
/// service (and after each subscription, for a switch missed meanwhile); resubscribes after a
/// second when the sentinel goes. Ends with the link.
async fn follow_switches(
    sentinel: redis::Client,
    service: String,
    link: Weak<SentinelLink>,
    timeout: Duration,
) {
    let want = || match link.upgrade() {
        Some(link) => {
            link.want();
            true
        }
        None => false,
    };
    loop {
        let subscribed = tokio::time::timeout(timeout, async {
            let mut pubsub = sentinel.get_async_pubsub().await?;
            pubsub.subscribe("+switch-master").await?;
            RedisResult::Ok(pubsub)
        })
        .await;
        if let Ok(Ok(pubsub)) = subscribed {
            if !want() {
                return;
            }
            let mut events = pubsub.into_on_message();
            while let Some(event) = events.next().await {
                // "<service> <old ip> <old port> <new ip> <new port>"
                let text = String::from_utf8_lossy(event.get_payload_bytes()).into_owned();
                if text.split(' ').next() == Some(service.as_str()) && !want() {
                    return;
                }
            }
        }
        if link.strong_count() == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

async fn bounded<T>(
    timeout: Duration,
    work: impl std::future::Future<Output = RedisResult<T>>,
) -> Result<T, ClusterError> {
    match tokio::time::timeout(timeout, work).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(ClusterError::Redis(e)),
        Err(_) => Err(ClusterError::RedisTimeout(timeout)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_errors_a_failover_gives_ask_for_a_look_and_no_others() {
        let moved = [
            RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionRefused)),
            RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionReset)),
            RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut)),
            RedisError::from((
                ErrorKind::Server(ServerErrorKind::ReadOnly),
                "You can't write against a read only replica.",
            )),
            RedisError::from((ErrorKind::Server(ServerErrorKind::MasterDown), "link down")),
        ];
        for e in &moved {
            assert!(may_have_moved(e), "{e}");
        }
        let not_moved = [
            RedisError::from((ErrorKind::Server(ServerErrorKind::NoScript), "NOSCRIPT")),
            RedisError::from((ErrorKind::Server(ServerErrorKind::ResponseError), "ERR x")),
            RedisError::from((ErrorKind::UnexpectedReturnType, "not a number")),
        ];
        for e in &not_moved {
            assert!(!may_have_moved(e), "{e}");
        }
    }

    /// Issue 35: the inbox had lost its master and waited its longest backoff (1 s) between two
    /// attempts; when the link moves to a new master it subscribes there at once, not after the
    /// rest of that wait.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_inbox_subscribes_on_a_new_master_at_once_not_after_its_backoff() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::time::Instant;

        // A master that closes every connection at once: each inbox attempt fails, and its
        // accept times it.
        let dead = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        dead.set_nonblocking(true).expect("non-blocking");
        let dead_port = dead.local_addr().expect("addr").port();
        let stop = Arc::new(AtomicBool::new(false));
        let (attempts, attempted) = std::sync::mpsc::channel::<Instant>();
        let acceptor = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                while !stop.load(Ordering::Acquire) {
                    match dead.accept() {
                        Ok((socket, _)) => {
                            drop(socket);
                            let _ = attempts.send(Instant::now());
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                        Err(_) => return,
                    }
                }
            })
        };
        let redis = crate::test_redis::RedisServer::start();
        // No sentinel answers: only the test moves the link.
        let url = format!(
            "redis+sentinel://127.0.0.1:{}/svc",
            crate::test_redis::free_port()
        );
        let config = ClusterConfig::new(url, "a").with_redis_timeout(Duration::from_millis(300));
        let executor =
            |_: &str, _: &str, _: &str, _: Duration| -> crate::BoxFuture<crate::CommandOutcome> {
                Box::pin(async { Ok("{}".to_owned()) })
            };
        let (cluster, _events) = crate::Cluster::start(config, executor).expect("start");
        let link = &cluster.shared().redis;
        link.move_to(dead_port);
        // Until two attempts come a second apart: the inbox now waits its longest backoff.
        let waited = tokio::task::block_in_place(|| {
            let start = Instant::now();
            let mut last = attempted.recv_timeout(Duration::from_secs(10)).ok()?;
            while start.elapsed() < Duration::from_secs(20) {
                let next = attempted.recv_timeout(Duration::from_secs(5)).ok()?;
                if next - last >= Duration::from_millis(900) {
                    return Some(next);
                }
                last = next;
            }
            None
        });
        let last_attempt = waited.expect("the inbox backs off to a second between attempts");
        // The next attempt would come about 900 ms after the move.
        tokio::time::sleep_until((last_attempt + Duration::from_millis(100)).into()).await;
        let moved = Instant::now();
        link.move_to(redis.port);
        while !cluster.is_connected() && moved.elapsed() < Duration::from_secs(5) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let took = moved.elapsed();
        stop.store(true, Ordering::Release);
        acceptor.join().expect("the acceptor");
        eprintln!("the inbox subscribed on the new master {took:?} after the move");
        assert!(
            took < Duration::from_millis(500),
            "the inbox subscribed on the new master {took:?} after the move"
        );
    }
}
