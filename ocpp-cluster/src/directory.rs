//! The cluster-wide view: where each charge point is connected, read from the presence
//! records any node can see (PROTOCOL.md section 2): its node, the OCPP version of its
//! connection, and when its claim was made.

use ocpp_proto::OcppVersion;

use crate::cluster::parse_epoch;
use crate::{Cluster, ClusterError};

/// How many claim keys one `SCAN` step asks for, and how many records one pipeline reads.
const SCAN_BATCH: usize = 500;

/// Where a charge point is connected, as the cluster's presence records say.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Located {
    /// The charge point's identity.
    pub identity: String,
    /// The node holding it.
    pub node: String,
    /// Its claim's epoch.
    pub epoch: u64,
    /// The OCPP version of its connection (`None` from a node that does not record it).
    pub version: Option<OcppVersion>,
    /// When the claim was made (Unix ms, Redis's clock): the connection's start, or the moment
    /// its node registered it again after Redis lost its data. `None` from a node that does not
    /// record it.
    pub claimed_ms: Option<u64>,
    /// `false` for a claim past its liveness whose key lingers, or whose node has no live node
    /// record (it has not announced itself for a node TTL, 5 s by default: killed, stopped, or
    /// cut off from Redis). Such a node may or may not still hold the socket.
    pub live: bool,
}

/// The cluster's charge points as this node can list them now ([`Cluster::list_known`]):
/// its own always, the other nodes' when Redis answers.
#[derive(Debug)]
#[non_exhaustive]
pub struct Listing {
    /// The charge points listed: this node's own (from its local claims, also one not
    /// registered in Redis yet), and, unless [`Listing::elsewhere_unknown`] says otherwise,
    /// the other nodes' as the presence records say ([`Cluster::list`]).
    pub charge_points: Vec<Located>,
    /// Why the other nodes' charge points are not listed (Redis down, or slower than the Redis
    /// timeout): they are unknown, not absent. `None`: the listing is the whole cluster's.
    pub elsewhere_unknown: Option<ClusterError>,
}

impl Listing {
    /// Whether the listing is the whole cluster's (the other nodes' charge points are known).
    pub fn is_complete(&self) -> bool {
        self.elsewhere_unknown.is_none()
    }
}

/// The fields of a claim read back, in this order.
const FIELDS: [&str; 5] = ["node", "epoch", "version", "claimed_ms", "expires_ms"];

type Record = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

fn located(identity: &str, record: Record, now_ms: u64) -> Result<Option<Located>, ClusterError> {
    let (node, epoch, version, claimed_ms, expires_ms) = record;
    let (Some(node), Some(epoch)) = (node, epoch) else {
        return Ok(None);
    };
    if node.is_empty() {
        return Ok(None); // released: a tombstone
    }
    let number = |text: Option<String>| text.and_then(|t| t.parse::<u64>().ok());
    Ok(Some(Located {
        identity: identity.to_owned(),
        node,
        epoch: parse_epoch(&epoch)?,
        version: version.as_deref().and_then(OcppVersion::from_subprotocol),
        claimed_ms: number(claimed_ms),
        live: number(expires_ms).is_none_or(|expires| expires > now_ms),
    }))
}

impl Cluster {
    /// Where `identity` is connected in the cluster (on this node or another), or `None`
    /// without a claim or once released: two Redis calls (the claim, then its node's record),
    /// each bounded by the Redis timeout. A claim past its liveness, or whose node has no live
    /// record, is returned with `live: false`.
    ///
    /// ```no_run
    /// # async fn run(cluster: ocpp_cluster::Cluster) -> Result<(), ocpp_cluster::ClusterError> {
    /// if let Some(cp) = cluster.locate("CP-1").await? {
    ///     println!("on node {} with {:?}", cp.node, cp.version);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn locate(&self, identity: &str) -> Result<Option<Located>, ClusterError> {
        let shared = self.shared();
        let mut redis = shared.redis.clone();
        let record: Record = shared
            .bounded(
                redis::cmd("HMGET")
                    .arg(shared.config.claim_key(identity))
                    .arg(&FIELDS[..])
                    .query_async(&mut redis),
            )
            .await?;
        let mut cp = located(identity, record, crate::cluster::unix_ms())?;
        if let Some(cp) = cp.as_mut().filter(|cp| cp.live) {
            let exists: bool = shared
                .bounded(
                    redis::cmd("EXISTS")
                        .arg(format!("{}{}", shared.config.node_prefix(), cp.node))
                        .query_async(&mut redis),
                )
                .await?;
            cp.live = exists;
        }
        Ok(cp)
    }

    /// Every charge point connected in the cluster, as [`Cluster::locate`] sees each, in no
    /// particular order: `SCAN` over the claim keys (on Redis Cluster, on each master), each
    /// step and each batch of reads bounded by the Redis timeout; at most `limit` entries.
    ///
    /// ```no_run
    /// # async fn run(cluster: ocpp_cluster::Cluster) -> Result<(), ocpp_cluster::ClusterError> {
    /// for cp in cluster.list(10_000).await? {
    ///     println!("{} on {}", cp.identity, cp.node);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list(&self, limit: usize) -> Result<Vec<Located>, ClusterError> {
        let shared = self.shared();
        let prefix = shared.config.claim_key("");
        let pattern = format!("{}*", glob_escape(&prefix));
        let mut all = Vec::new();
        // One Redis: one SCAN; Redis Cluster: one per master (each holds its slots' keys).
        let targets = shared.bounded(shared.redis.scan_targets()).await?;
        for target in &targets {
            let mut cursor: u64 = 0;
            loop {
                let mut scan = redis::cmd("SCAN");
                scan.arg(cursor)
                    .arg("MATCH")
                    .arg(&pattern)
                    .arg("COUNT")
                    .arg(SCAN_BATCH);
                let (next, keys): (u64, Vec<String>) =
                    shared.bounded(shared.redis.scan_on(target, &scan)).await?;
                if !keys.is_empty() {
                    // One HMGET per key, all at once on the multiplexed connection (a
                    // pipeline would have to stay in one slot on Redis Cluster).
                    let reads = keys.iter().map(|key| {
                        let mut redis = shared.redis.clone();
                        async move {
                            redis::cmd("HMGET")
                                .arg(key)
                                .arg(&FIELDS[..])
                                .query_async::<Record>(&mut redis)
                                .await
                        }
                    });
                    let records: Vec<Record> = shared
                        .bounded(futures_util::future::try_join_all(reads))
                        .await?;
                    let now = crate::cluster::unix_ms();
                    for (key, record) in keys.iter().zip(records) {
                        let identity = key.strip_prefix(&prefix).unwrap_or(key);
                        if let Some(cp) = located(identity, record, now)?
                            && all.len() < limit
                        {
                            all.push(cp);
                        }
                    }
                }
                cursor = next;
                if cursor == 0 || all.len() >= limit {
                    break;
                }
            }
            if all.len() >= limit {
                break;
            }
        }
        self.with_live_nodes(&mut all).await?;
        Ok(all)
    }

    /// Marks `live: false` the charge points whose node has no live node record: one pipeline
    /// of `EXISTS` per node named, bounded by the Redis timeout.
    async fn with_live_nodes(&self, all: &mut [Located]) -> Result<(), ClusterError> {
        let shared = self.shared();
        let mut nodes: Vec<&str> = all
            .iter()
            .filter(|cp| cp.live)
            .map(|cp| cp.node.as_str())
            .collect();
        nodes.sort_unstable();
        nodes.dedup();
        if nodes.is_empty() {
            return Ok(());
        }
        let prefix = shared.config.node_prefix();
        let mut pipe = redis::pipe();
        for node in &nodes {
            pipe.cmd("EXISTS").arg(format!("{prefix}{node}"));
        }
        let mut redis = shared.redis.clone();
        let exists: Vec<bool> = shared.bounded(pipe.query_async(&mut redis)).await?;
        let dead: std::collections::HashSet<String> = nodes
            .iter()
            .zip(exists)
            .filter(|(_, exists)| !exists)
            .map(|(node, _)| (*node).to_owned())
            .collect();
        for cp in all.iter_mut() {
            if dead.contains(&cp.node) {
                cp.live = false;
            }
        }
        Ok(())
    }
}

impl Cluster {
    /// [`Cluster::list`] that never fails as a whole: with Redis down (or too slow) it lists
    /// this node's own charge points from its local claims and says that the other nodes' are
    /// unknown ([`Listing::elsewhere_unknown`]); with Redis, every node's, plus this node's
    /// claims Redis does not have yet (not registered while Redis was down). At most `limit`
    /// entries; one of this node's own listed from memory has `claimed_ms: None`, and epoch 0
    /// while it is not registered.
    ///
    /// ```no_run
    /// # async fn run(cluster: ocpp_cluster::Cluster) {
    /// let listing = cluster.list_known(10_000).await;
    /// for cp in &listing.charge_points {
    ///     println!("{} on {}", cp.identity, cp.node);
    /// }
    /// if let Some(why) = &listing.elsewhere_unknown {
    ///     println!("the other nodes' charge points are unknown now: {why}");
    /// }
    /// # }
    /// ```
    pub async fn list_known(&self, limit: usize) -> Listing {
        let own = self.claims();
        let own: Vec<Located> = own
            .into_iter()
            .map(|claim| Located {
                version: self.shared().version_of(&claim.identity),
                identity: claim.identity,
                node: self.node_id().to_owned(),
                epoch: claim.epoch.unwrap_or(0),
                claimed_ms: None,
                live: true,
            })
            .collect();
        match self.list(limit).await {
            Ok(mut all) => {
                let listed: std::collections::HashSet<String> =
                    all.iter().map(|cp| cp.identity.clone()).collect();
                let missing = own.into_iter().filter(|cp| !listed.contains(&cp.identity));
                let room = limit.saturating_sub(all.len());
                all.extend(missing.take(room));
                Listing {
                    charge_points: all,
                    elsewhere_unknown: None,
                }
            }
            Err(e) => Listing {
                charge_points: own.into_iter().take(limit).collect(),
                elsewhere_unknown: Some(e),
            },
        }
    }
}

/// `text` with the glob characters of `SCAN MATCH` escaped.
fn glob_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(fields: [Option<&str>; 5]) -> Record {
        let f = |i: usize| fields[i].map(str::to_owned);
        (f(0), f(1), f(2), f(3), f(4))
    }

    #[test]
    fn a_record_reads_back_with_its_version_and_liveness() {
        let live = record([
            Some("b"),
            Some("17"),
            Some("ocpp2.0.1"),
            Some("1000"),
            Some("5000"),
        ]);
        let cp = located("CP-1", live.clone(), 4_000).unwrap().unwrap();
        assert_eq!(cp.node, "b");
        assert_eq!(cp.version, Some(OcppVersion::V2_0_1));
        assert_eq!(cp.claimed_ms, Some(1_000));
        assert!(cp.live);
        assert!(!located("CP-1", live, 5_000).unwrap().unwrap().live);
        // A node of an older release: no version, no times, live.
        let old = record([Some("a"), Some("3"), None, None, None]);
        let cp = located("CP-2", old, 1).unwrap().unwrap();
        assert_eq!((cp.version, cp.live), (None, true));
        // Released, or absent.
        let tombstone = record([Some(""), Some("3"), None, None, None]);
        assert_eq!(located("CP-3", tombstone, 1).unwrap(), None);
        assert_eq!(located("CP-4", record([None; 5]), 1).unwrap(), None);
    }

    #[test]
    fn glob_characters_are_escaped() {
        assert_eq!(glob_escape("a*b?[c]\\"), "a\\*b\\?\\[c\\]\\\\");
    }
}
