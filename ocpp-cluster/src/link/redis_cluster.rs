//! The link to a Redis Cluster: its connection, the masters a `SCAN` or a look for a new
//! master visits, and the pipelines a refresh round sends to one master each.

use std::sync::Arc;

use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::{
    Cmd, ConnectionAddr, ErrorKind, IntoConnectionInfo, Pipeline, ProtocolVersion,
    RedisConnectionInfo, RedisError, RedisResult, Value,
};

use super::{with_credentials, Master, RedisLink, SlotMap};
use crate::cluster::lock;
use crate::config::ClusterTarget;
use crate::{ClusterConfig, ClusterError};

/// The settings of a Redis Cluster connection: each attempt bounded by the Redis timeout, each
/// answer by the call's [`Bound`](crate::bound::Bound) (the client's own response timeout is
/// the bound's most, as on one Redis).
fn cluster_config(config: &ClusterConfig) -> redis::cluster::ClusterConfig {
    redis::cluster::ClusterConfig::new()
        .set_connection_timeout(config.redis_timeout)
        .set_response_timeout(config.redis_timeout_most())
}

/// The link of a `redis-cluster://` URL.
pub(super) fn open(
    target: ClusterTarget,
    config: &ClusterConfig,
    runtime: &tokio::runtime::Handle,
) -> Result<RedisLink, ClusterError> {
    let info = with_credentials(
        RedisConnectionInfo::default(),
        target.username.as_deref(),
        target.password.as_deref(),
    );
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
        .response_timeout(config.redis_timeout_most())
        .retries(2)
        .build()
        .map_err(|e| ClusterError::Config(format!("redis url: {e}")))?;
    // Connects in the background (the node starts without waiting for Redis).
    let _entered = runtime.enter();
    let settings = cluster_config(config);
    let connection = client.get_pending_async_connection_with_config(settings.clone());
    Ok(RedisLink::Cluster {
        client: Arc::new(client),
        connection,
        settings,
        masters: Arc::default(),
        slots: Arc::default(),
    })
}

impl RedisLink {
    /// The masters a `SCAN` must visit: `None`, the one Redis (or master) of the link; on Redis
    /// Cluster each master, by address (`CLUSTER SLOTS`).
    pub(crate) async fn scan_targets(&self) -> RedisResult<Vec<Option<(String, u16)>>> {
        let RedisLink::Cluster { connection, .. } = self else {
            return Ok(vec![None]);
        };
        let map = cluster_slots(connection).await?;
        Ok(map.masters().iter().cloned().map(Some).collect())
    }

    /// On Redis Cluster, the slot map a refresh round groups its claims by master with: the
    /// one of the last look, or a new look (`CLUSTER SLOTS`) when it was forgotten
    /// ([`RedisLink::forget_slot_map`]) or never taken. `None` on one Redis.
    pub(crate) async fn slot_map(&self) -> RedisResult<Option<Arc<SlotMap>>> {
        let RedisLink::Cluster {
            connection, slots, ..
        } = self
        else {
            return Ok(None);
        };
        let kept = lock(slots).clone();
        if let Some(map) = kept {
            return Ok(Some(map));
        }
        let map = Arc::new(cluster_slots(connection).await?);
        *lock(slots) = Some(Arc::clone(&map));
        Ok(Some(map))
    }

    /// Forgets the slot map of [`RedisLink::slot_map`] (a call went elsewhere than it said):
    /// the next round looks again.
    pub(crate) fn forget_slot_map(&self) {
        if let RedisLink::Cluster { slots, .. } = self {
            *lock(slots) = None;
        }
    }

    /// Sends `pipeline` as one round trip to `master` (by its address, not by the `redis`
    /// crate's slot map; on one Redis: to the link's Redis), and returns each command's answer
    /// (an error answer as a [`Value::ServerError`]). On Redis Cluster the crate sends the
    /// whole pipeline again where an answer of it says (`MOVED`, `ASK`, `TRYAGAIN`,
    /// `CLUSTERDOWN`), at most its retries, then fails it as a whole.
    pub(crate) async fn pipeline_to(
        &self,
        master: &Master,
        pipeline: Pipeline,
    ) -> RedisResult<Vec<Value>> {
        let count = pipeline.len();
        match self {
            RedisLink::Cluster { connection, .. } => {
                let (host, port) = master;
                let route = SingleNodeRoutingInfo::ByAddress {
                    host: host.clone(),
                    port: *port,
                };
                connection
                    .clone()
                    .route_pipeline(pipeline, 0, count, route)
                    .await
            }
            _ => {
                use redis::aio::ConnectionLike;
                self.clone().req_packed_commands(&pipeline, 0, count).await
            }
        }
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
        let mut seen = lock(masters);
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
}

/// The slot map `CLUSTER SLOTS` gives now (asked of any node).
async fn cluster_slots(
    connection: &redis::cluster_async::ClusterConnection,
) -> RedisResult<SlotMap> {
    let slots: Value = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query_async(&mut connection.clone())
        .await?;
    SlotMap::from_cluster_slots(&slots)
}
