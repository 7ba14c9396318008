//! The configuration of one node.

use std::time::Duration;

use crate::ClusterError;

/// How one node joins the cluster. Every node of a cluster uses the same `key_prefix` and the
/// same Redis; node ids are unique.
///
/// ```
/// use std::time::Duration;
/// use ocpp_cluster::ClusterConfig;
///
/// let config = ClusterConfig::new("redis://127.0.0.1:6379/", "csms-a")
///     .with_address("http://10.0.0.5:8080")
///     .with_claim_ttl(Duration::from_secs(90));
/// assert_eq!(config.refresh_interval(), Duration::from_secs(30));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClusterConfig {
    /// Where the cluster's Redis is, one of:
    /// - `redis://[user:password@]host:port[/db]`: one Redis (any URL the `redis` crate opens);
    /// - `redis+sentinel://[user:password@]host:port[,host:port...]/service[?db=N]`: the master
    ///   of `service` as Redis Sentinel names it, asked of these sentinels (port 26379 when
    ///   left out), and followed through failovers (PROTOCOL.md 1). The user and password (both
    ///   percent-decoded) and the database are those of the data nodes; the sentinels are
    ///   asked without a password;
    /// - `redis-cluster://[user:password@]host:port[,host:port...]`: a Redis Cluster (Redis 7
    ///   or later: the inboxes are sharded pub/sub channels), found from these seed nodes (port
    ///   6379 when left out; the user and password percent-decoded); database 0 only. The
    ///   claims spread over the cluster's masters; the node records, `since` and the inboxes
    ///   share one slot (hash tag `{<prefix>}`, PROTOCOL.md 1.2).
    pub redis_url: String,
    /// This node's id, unique in the cluster (e.g. the host name).
    pub node_id: String,
    /// An address other nodes or operators can reach this node at (informative: stored in the
    /// node record, not used for commands, which travel through Redis).
    pub address: String,
    /// The prefix of every key and channel (`ocpp` by default).
    pub key_prefix: String,
    /// How long a claim lives without a refresh (90 s by default).
    pub claim_ttl: Duration,
    /// How long the node record lives without an announcement (5 s by default): how soon the
    /// other nodes count this node dead (its charge points `live: false`, commands for them
    /// `owner_unreachable`), and how long after Redis starts empty (or loses its data) a missing
    /// claim reads as unknown rather than connected nowhere (PROTOCOL.md 2).
    pub node_ttl: Duration,
    /// How often claims are refreshed; `None`: a third of the claim TTL.
    pub refresh: Option<Duration>,
    /// How many claims a refresh round refreshes in one round trip (1,000 by default, at least
    /// 1): on one Redis (or Sentinel's master) one `refresh.lua` call for the batch, on Redis
    /// Cluster a pipeline of a call per claim to each master. Each batch is bounded by the
    /// Redis timeout as a whole, and on one Redis runs as one script, which blocks Redis while
    /// it runs (PROTOCOL.md 6.3): keep it to what Redis runs well within that timeout. It
    /// also bounds how many claims one `claim.lua` or `release.lua` call carries (the claims
    /// or releases that waited together, PROTOCOL.md 6.2.1).
    pub refresh_batch: usize,
    /// How often the node announces itself (rewrites its node record); `None`: a third of the
    /// node TTL.
    pub announce: Option<Duration>,
    /// The bound on every single Redis call (500 ms by default); a call that takes longer
    /// counts as Redis being down. The time the node itself is stalled meanwhile is added,
    /// up to [`ClusterConfig::redis_timeout_most`].
    pub redis_timeout: Duration,
}

/// How many claims a refresh round sends to Redis in one round trip by default
/// ([`ClusterConfig::refresh_batch`]).
pub(crate) const DEFAULT_REFRESH_BATCH: usize = 1000;

impl ClusterConfig {
    /// A node `node_id` on the Redis at `redis_url`, with the default TTLs.
    pub fn new(redis_url: impl Into<String>, node_id: impl Into<String>) -> Self {
        Self {
            redis_url: redis_url.into(),
            node_id: node_id.into(),
            address: String::new(),
            key_prefix: "ocpp".to_owned(),
            claim_ttl: Duration::from_secs(90),
            node_ttl: Duration::from_secs(5),
            refresh: None,
            refresh_batch: DEFAULT_REFRESH_BATCH,
            announce: None,
            redis_timeout: Duration::from_millis(500),
        }
    }

    /// Sets the informative address stored in the node record.
    pub fn with_address(mut self, address: impl Into<String>) -> Self {
        self.address = address.into();
        self
    }

    /// Sets the key and channel prefix.
    pub fn with_key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.key_prefix = prefix.into();
        self
    }

    /// Sets the claim TTL.
    pub fn with_claim_ttl(mut self, ttl: Duration) -> Self {
        self.claim_ttl = ttl;
        self
    }

    /// Sets the node record TTL.
    pub fn with_node_ttl(mut self, ttl: Duration) -> Self {
        self.node_ttl = ttl;
        self
    }

    /// Sets the announcement interval (must be shorter than the node TTL).
    pub fn with_announce_interval(mut self, interval: Duration) -> Self {
        self.announce = Some(interval);
        self
    }

    /// Sets the refresh interval (must be shorter than the claim TTL; rounds come 10 % either
    /// way of it at random, so keep it well below: the default is a third).
    pub fn with_refresh_interval(mut self, interval: Duration) -> Self {
        self.refresh = Some(interval);
        self
    }

    /// Sets how many claims a refresh round sends to Redis in one round trip (at least 1).
    ///
    /// ```
    /// use ocpp_cluster::ClusterConfig;
    ///
    /// let config = ClusterConfig::new("redis://127.0.0.1:6379/", "csms-a");
    /// assert_eq!(config.refresh_batch, 1000);
    /// assert_eq!(config.with_refresh_batch(200).refresh_batch, 200);
    /// ```
    pub fn with_refresh_batch(mut self, claims: usize) -> Self {
        self.refresh_batch = claims;
        self
    }

    /// Sets the bound on every Redis call.
    pub fn with_redis_timeout(mut self, timeout: Duration) -> Self {
        self.redis_timeout = timeout;
        self
    }

    /// The refresh interval in force (each wait is 10 % either way of it at random).
    pub fn refresh_interval(&self) -> Duration {
        self.refresh.unwrap_or(self.claim_ttl / 3)
    }

    /// The announcement interval in force.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ocpp_cluster::ClusterConfig;
    ///
    /// let config = ClusterConfig::new("redis://127.0.0.1:6379/", "csms-a");
    /// assert_eq!(config.node_ttl, Duration::from_secs(5));
    /// assert!(config.announce_interval() < Duration::from_secs(2));
    /// ```
    pub fn announce_interval(&self) -> Duration {
        self.announce.unwrap_or(self.node_ttl / 3)
    }

    /// How long a server holds a charge point's handshake answer (the 101) for its claim
    /// (PROTOCOL.md 6.1): twice the Redis timeout, the bound of `claim.lua` with room for the
    /// queue before it. Past it the charge point is served with its claim pending (Redis down
    /// or too slow) and registered by a later refresh round.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ocpp_cluster::ClusterConfig;
    ///
    /// let config = ClusterConfig::new("redis://127.0.0.1:6379/", "csms-a");
    /// assert_eq!(config.claim_wait(), Duration::from_secs(1));
    /// ```
    pub fn claim_wait(&self) -> Duration {
        self.redis_timeout.saturating_mul(2)
    }

    /// The longest one Redis call may wait: four times the Redis timeout (2 s). A call is
    /// bounded by the Redis timeout plus the time the node itself was stalled meanwhile (its
    /// timers ran late: a machine with more busy threads than cores), never more than this
    /// (PROTOCOL.md 8.1). A node that runs on time fails a call at the Redis timeout.
    ///
    /// ```
    /// use std::time::Duration;
    /// use ocpp_cluster::ClusterConfig;
    ///
    /// let config = ClusterConfig::new("redis://127.0.0.1:6379/", "csms-a");
    /// assert_eq!(config.redis_timeout_most(), Duration::from_secs(2));
    /// ```
    pub fn redis_timeout_most(&self) -> Duration {
        self.redis_timeout.saturating_mul(4)
    }

    pub(crate) fn validate(&self) -> Result<(), ClusterError> {
        let bad = |why: &str| Err(ClusterError::Config(why.to_owned()));
        if self.node_id.is_empty() {
            return bad("the node id is empty");
        }
        if self.key_prefix.is_empty() {
            return bad("the key prefix is empty");
        }
        if self.claim_ttl < Duration::from_millis(10) || self.node_ttl < Duration::from_millis(10) {
            return bad("a TTL is under 10 ms");
        }
        let refresh = self.refresh_interval();
        if refresh.is_zero() || refresh >= self.claim_ttl {
            return bad("the refresh interval must be above zero and below the claim TTL");
        }
        let announce = self.announce_interval();
        if announce.is_zero() || announce >= self.node_ttl {
            return bad("the announcement interval must be above zero and below the node TTL");
        }
        if self.refresh_batch == 0 {
            return bad("the refresh batch is zero");
        }
        if self.redis_timeout.is_zero() {
            return bad("the Redis timeout is zero");
        }
        if let RedisTarget::Cluster(_) = self.redis_target()?
            && self.key_prefix.contains(['{', '}'])
        {
            return bad(
                "on Redis Cluster the key prefix may not hold '{' or '}' (it is the hash tag \
                     of the node records and inboxes)",
            );
        }
        Ok(())
    }

    /// Whether the Redis URL names a Redis Cluster (`redis-cluster://`).
    pub(crate) fn is_redis_cluster(&self) -> bool {
        starts_with_scheme(&self.redis_url, CLUSTER_SCHEME)
    }

    /// The Redis URL, read: one address, a service behind Sentinel, or a Redis Cluster.
    pub(crate) fn redis_target(&self) -> Result<RedisTarget, ClusterError> {
        let url = self.redis_url.as_str();
        let bad = |why: String| ClusterError::Config(format!("redis url: {why}"));
        if starts_with_scheme(url, SENTINEL_SCHEME) {
            SentinelTarget::parse(&url[SENTINEL_SCHEME.len()..])
                .map(RedisTarget::Sentinel)
                .map_err(bad)
        } else if starts_with_scheme(url, CLUSTER_SCHEME) {
            ClusterTarget::parse(&url[CLUSTER_SCHEME.len()..])
                .map(RedisTarget::Cluster)
                .map_err(bad)
        } else {
            Ok(RedisTarget::Direct(self.redis_url.clone()))
        }
    }

    /// The claim key of `identity`: `<p>:cp:<identity>`, whatever the Redis. On Redis Cluster
    /// its slot is the hash of the whole key (of the identity's own `{...}`, if it has one):
    /// the claims spread over the masters, and each charge point's one key is in one slot.
    pub(crate) fn claim_key(&self, identity: &str) -> String {
        format!("{}:cp:{identity}", self.key_prefix)
    }
    /// The prefix of the node-level names (`since`, the live node set, the node records, the
    /// inboxes): `<p>` on one Redis (the names of protocol version 1), `{<p>}` on Redis
    /// Cluster, a hash tag that puts them all in one slot (PROTOCOL.md 1.2).
    fn control_prefix(&self) -> String {
        if self.is_redis_cluster() {
            format!("{{{}}}", self.key_prefix)
        } else {
            self.key_prefix.clone()
        }
    }
    pub(crate) fn epoch_key(&self) -> String {
        format!("{}:epoch", self.control_prefix())
    }
    pub(crate) fn since_key(&self) -> String {
        format!("{}:since", self.control_prefix())
    }
    pub(crate) fn nodes_key(&self) -> String {
        format!("{}:nodes", self.control_prefix())
    }
    pub(crate) fn node_prefix(&self) -> String {
        format!("{}:node:", self.control_prefix())
    }
    pub(crate) fn inbox_prefix(&self) -> String {
        format!("{}:inbox:", self.control_prefix())
    }
}

/// Whether `url` starts with `scheme` (ASCII case-insensitive).
fn starts_with_scheme(url: &str, scheme: &str) -> bool {
    url.get(..scheme.len())
        .is_some_and(|s| s.eq_ignore_ascii_case(scheme))
}

/// The scheme of a Redis reached through Sentinel.
const SENTINEL_SCHEME: &str = "redis+sentinel://";
/// The port of a sentinel given without one.
const SENTINEL_PORT: u16 = 26379;
/// The scheme of a Redis Cluster.
const CLUSTER_SCHEME: &str = "redis-cluster://";
/// The port of a cluster node given without one.
const CLUSTER_PORT: u16 = 6379;

/// Where the cluster's Redis is ([`ClusterConfig::redis_url`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RedisTarget {
    /// One Redis, opened with the URL as it is.
    Direct(String),
    /// The master of a service, asked of its sentinels.
    Sentinel(SentinelTarget),
    /// A Redis Cluster, found from its seed nodes.
    Cluster(ClusterTarget),
}

/// `redis-cluster://[user:password@]host:port[,host:port...]`, read.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct ClusterTarget {
    /// The seed nodes (host, port), in the order given.
    pub(crate) nodes: Vec<(String, u16)>,
    /// The user, if any.
    pub(crate) username: Option<String>,
    /// The password, if any.
    pub(crate) password: Option<String>,
}

impl std::fmt::Debug for ClusterTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterTarget")
            .field("nodes", &self.nodes)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl ClusterTarget {
    /// Reads what follows `redis-cluster://`. A path (a database) or a query is refused: a
    /// Redis Cluster has database 0 only.
    fn parse(rest: &str) -> Result<Self, String> {
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        if authority.contains(['/', '?', '#']) {
            return Err(format!(
                "{rest:?}: a Redis Cluster URL names its nodes only \
                 (redis-cluster://host:port[,host:port...]; database 0, no parameters)"
            ));
        }
        let (username, password, hosts) = userinfo(authority)?;
        let nodes = hosts
            .split(',')
            .map(|text| host_port(text, CLUSTER_PORT, "cluster node"))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ClusterTarget {
            nodes,
            username,
            password,
        })
    }
}

/// The user, password (both percent-decoded) and hosts of `[user[:password]@]hosts`.
type UserInfo<'a> = (Option<String>, Option<String>, &'a str);

fn userinfo(authority: &str) -> Result<UserInfo<'_>, String> {
    let (userinfo, hosts) = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => (Some(userinfo), hosts),
        None => (None, authority),
    };
    let (username, password) = match userinfo {
        None => (None, None),
        Some(userinfo) => {
            let (user, password) = match userinfo.split_once(':') {
                Some((user, password)) => (user, Some(password)),
                None => (userinfo, None),
            };
            let user = percent_decode(user)?;
            let password = password.map(percent_decode).transpose()?;
            ((!user.is_empty()).then_some(user), password)
        }
    };
    Ok((username, password, hosts))
}

/// `redis+sentinel://[user:password@]host:port[,host:port...]/service[?db=N]`, read.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct SentinelTarget {
    /// The sentinels (host, port), in the order given.
    pub(crate) sentinels: Vec<(String, u16)>,
    /// The service (`sentinel monitor <service> ...`).
    pub(crate) service: String,
    /// The data nodes' user, if any.
    pub(crate) username: Option<String>,
    /// The data nodes' password, if any.
    pub(crate) password: Option<String>,
    /// The data nodes' database.
    pub(crate) db: i64,
}

impl std::fmt::Debug for SentinelTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentinelTarget")
            .field("sentinels", &self.sentinels)
            .field("service", &self.service)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("db", &self.db)
            .finish()
    }
}

impl SentinelTarget {
    /// Reads what follows `redis+sentinel://`.
    fn parse(rest: &str) -> Result<Self, String> {
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, path) = rest
            .split_once('/')
            .ok_or("no service name (redis+sentinel://host:port/service)")?;
        let service = percent_decode(path.strip_suffix('/').unwrap_or(path))?;
        if service.is_empty() || service.contains('/') {
            return Err(format!("bad service name {path:?}"));
        }
        let (username, password, hosts) = userinfo(authority)?;
        let sentinels = hosts
            .split(',')
            .map(|text| host_port(text, SENTINEL_PORT, "sentinel"))
            .collect::<Result<Vec<_>, _>>()?;
        let mut db = 0;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("db", n)) => {
                    db = n
                        .parse::<i64>()
                        .ok()
                        .filter(|n| *n >= 0)
                        .ok_or(format!("bad database {n:?}"))?;
                }
                _ => return Err(format!("unknown parameter {pair:?} (only db=N)")),
            }
        }
        Ok(SentinelTarget {
            sentinels,
            service,
            username,
            password,
            db,
        })
    }
}

/// `host:port`, `host` (port `default_port`), `[v6]:port` or `[v6]`; `what` names it in the
/// error.
fn host_port(text: &str, default_port: u16, what: &str) -> Result<(String, u16), String> {
    let bad = || format!("bad {what} address {text:?} (host:port)");
    let (host, port) = match text.strip_prefix('[') {
        Some(v6) => {
            let (host, after) = v6.split_once(']').ok_or_else(bad)?;
            match after {
                "" => (host, None),
                _ => (host, Some(after.strip_prefix(':').ok_or_else(bad)?)),
            }
        }
        None => match text.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        },
    };
    let port = match port {
        None => default_port,
        Some(port) => port
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(bad)?,
    };
    if host.is_empty() || (host.contains(['/', '@', ':']) && !text.starts_with('[')) {
        return Err(bad());
    }
    Ok((host.to_owned(), port))
}

/// Decodes `%XX` escapes (a URL's user, password or service name).
fn percent_decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let byte = text
                .get(i + 1..i + 3)
                .filter(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit()))
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                .ok_or_else(|| format!("bad escape in {text:?}"))?;
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("{text:?} is not UTF-8 once decoded"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(url: &str) -> Result<RedisTarget, ClusterError> {
        ClusterConfig::new(url, "a").redis_target()
    }

    fn sentinel(url: &str) -> SentinelTarget {
        match target(url) {
            Ok(RedisTarget::Sentinel(t)) => t,
            other => panic!("{url}: {other:?}"),
        }
    }

    #[test]
    fn a_plain_url_is_used_as_it_is() {
        let url = "redis://u:p@127.0.0.1:6379/2";
        assert_eq!(target(url).unwrap(), RedisTarget::Direct(url.to_owned()));
    }

    #[test]
    fn a_sentinel_url_names_its_sentinels_and_service() {
        let t = sentinel("redis+sentinel://10.0.0.1:26379,10.0.0.2:26380,s3/svc");
        assert_eq!(
            t.sentinels,
            [
                ("10.0.0.1".to_owned(), 26379),
                ("10.0.0.2".to_owned(), 26380),
                ("s3".to_owned(), 26379)
            ]
        );
        assert_eq!(t.service, "svc");
        assert_eq!((t.username, t.password, t.db), (None, None, 0));

        let t = sentinel("REDIS+SENTINEL://app:p%40ss%3Aw@[::1]:5000,[fe80::1]/my%20svc/?db=3");
        assert_eq!(
            t.sentinels,
            [("::1".to_owned(), 5000), ("fe80::1".to_owned(), 26379)]
        );
        assert_eq!(t.service, "my svc");
        assert_eq!(t.username.as_deref(), Some("app"));
        assert_eq!(t.password.as_deref(), Some("p@ss:w"));
        assert_eq!(t.db, 3);
        assert!(
            !format!("{t:?}").contains("p@ss"),
            "the password is not logged"
        );

        let t = sentinel("redis+sentinel://:secret@h:1/svc");
        assert_eq!((t.username, t.password.as_deref()), (None, Some("secret")));
    }

    #[test]
    fn a_cluster_url_names_its_seed_nodes() {
        let t = match target("REDIS-CLUSTER://app:p%40ss@10.0.0.1:7000,10.0.0.2,[::1]:7002/") {
            Ok(RedisTarget::Cluster(t)) => t,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            t.nodes,
            [
                ("10.0.0.1".to_owned(), 7000),
                ("10.0.0.2".to_owned(), 6379),
                ("::1".to_owned(), 7002)
            ]
        );
        assert_eq!(t.username.as_deref(), Some("app"));
        assert_eq!(t.password.as_deref(), Some("p@ss"));
        assert!(
            !format!("{t:?}").contains("p@ss"),
            "the password is not logged"
        );
        let config = ClusterConfig::new("redis-cluster://h:1", "a");
        assert!(config.validate().is_ok());
        assert_eq!(config.claim_key("CP-1"), "ocpp:cp:CP-1");
        assert_eq!(config.since_key(), "{ocpp}:since");
        assert_eq!(config.nodes_key(), "{ocpp}:nodes");
        assert_eq!(config.node_prefix(), "{ocpp}:node:");
        assert_eq!(config.inbox_prefix(), "{ocpp}:inbox:");
        // One Redis keeps the names of protocol version 1.
        let config = ClusterConfig::new("redis://h:1", "a");
        assert_eq!(config.since_key(), "ocpp:since");
        assert_eq!(config.inbox_prefix(), "ocpp:inbox:");
    }

    #[test]
    fn what_a_redis_cluster_cannot_do_is_refused_at_startup() {
        for url in [
            "redis-cluster://",
            "redis-cluster://h:1/2",
            "redis-cluster://h:1?db=1",
            "redis-cluster://h:1,,h:2",
            "redis-cluster://h:0",
            "redis-cluster://h:x",
            "redis-cluster://h/svc",
        ] {
            let config = ClusterConfig::new(url, "a");
            assert!(
                matches!(config.validate(), Err(ClusterError::Config(_))),
                "{url} accepted"
            );
        }
        for prefix in ["a{b", "a}b", "{x}"] {
            let config = ClusterConfig::new("redis-cluster://h:1", "a").with_key_prefix(prefix);
            assert!(
                matches!(config.validate(), Err(ClusterError::Config(_))),
                "prefix {prefix} accepted"
            );
            // One Redis has no hash tags.
            let config = ClusterConfig::new("redis://h:1", "a").with_key_prefix(prefix);
            assert!(config.validate().is_ok());
        }
    }

    #[test]
    fn a_bad_sentinel_url_is_refused() {
        for url in [
            "redis+sentinel://h:26379",
            "redis+sentinel://h:26379/",
            "redis+sentinel:///svc",
            "redis+sentinel://h:26379,/svc",
            "redis+sentinel://h:0/svc",
            "redis+sentinel://h:port/svc",
            "redis+sentinel://h:1:2/svc",
            "redis+sentinel://[::1/svc",
            "redis+sentinel://h/a/b",
            "redis+sentinel://h/svc?db=-1",
            "redis+sentinel://h/svc?db=x",
            "redis+sentinel://h/svc?timeout=1",
            "redis+sentinel://h/sv%zz",
            "redis+sentinel://h/%ff",
        ] {
            let config = ClusterConfig::new(url, "a");
            assert!(
                matches!(config.validate(), Err(ClusterError::Config(_))),
                "{url} accepted"
            );
        }
    }
}
