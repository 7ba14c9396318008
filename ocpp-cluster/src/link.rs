//! The node's way to Redis: one address, the master that Redis Sentinel names, followed through
//! failovers (PROTOCOL.md 1.1), or a Redis Cluster (1.2).
//!
//! [`RedisLink`] is what the node runs every command and script on (a
//! [`ConnectionLike`](redis::aio::ConnectionLike), cheap to clone): the rest of the crate has
//! one code path for the three. On a plain `redis://` URL it is a [`ConnectionManager`]. On
//! `redis-cluster://` it is the `redis` crate's cluster connection, which sends each command to
//! the master of its key's slot and follows `MOVED`/`ASK` redirections and topology changes;
//! the inbox is a sharded pub/sub subscription ([`Inbox`]). On `redis+sentinel://` it is the
//! manager of the master the sentinels named last. A background
//! [`Resolver`](resolver::Resolver) asks the sentinels again (at most every
//! [`RESOLVE_INTERVAL`](resolver::RESOLVE_INTERVAL)) on every `+switch-master` event and when a
//! call fails as a failover makes calls fail (refused, reset, timed out, `READONLY` from a demoted
//! master); it believes the sentinel with the newest configuration (`config-epoch`), and when
//! that names another master that says it is one (`ROLE`), runs `failover.lua` there and moves
//! the link to it. The inbox subscription follows ([`MasterMoved`]). A call never waits for the
//! sentinels longer than the Redis timeout and is never sent again on the new master: it fails
//! (the caller's retryable outcome) and the next call goes there.

use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisConnectionInfo, RedisFuture, Value};

use crate::config::RedisTarget;
use crate::{ClusterConfig, ClusterError};

mod inbox;
mod redis_cluster;
mod resolver;
mod sentinel;
mod slots;

pub(crate) use inbox::Inbox;
pub(crate) use sentinel::{MasterMoved, SentinelLink};
pub(crate) use slots::{Master, SlotMap};

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
        /// The bounds of every connection to the cluster (`redis_cluster::cluster_config`),
        /// the inbox's too.
        settings: redis::cluster::ClusterConfig,
        /// The `run_id` of every master at the last look ([`RedisLink::new_master`]).
        masters: Arc<std::sync::Mutex<Option<std::collections::BTreeSet<String>>>>,
        /// The slot map refresh rounds group their claims with ([`RedisLink::slot_map`]).
        slots: Arc<std::sync::Mutex<Option<Arc<SlotMap>>>>,
    },
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

/// `info` with the user and password of a Sentinel or Redis Cluster URL, those it gives.
fn with_credentials(
    mut info: RedisConnectionInfo,
    username: Option<&str>,
    password: Option<&str>,
) -> RedisConnectionInfo {
    if let Some(username) = username {
        info = info.set_username(username);
    }
    if let Some(password) = password {
        info = info.set_password(password);
    }
    info
}

/// The settings of every connection to a data node: each attempt bounded by the Redis
/// timeout, one reconnection attempt per failed call. An answer is bounded by the call's
/// [`Bound`](crate::bound::Bound), which gives back the node's own stall: the client's own
/// response timeout is its most, so as not to cut a call the bound still allows.
fn manager_config(config: &ClusterConfig) -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_connection_timeout(Some(config.redis_timeout))
        .set_response_timeout(Some(config.redis_timeout_most()))
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
            RedisTarget::Sentinel(target) => sentinel::open(target, config, runtime),
            RedisTarget::Cluster(target) => redis_cluster::open(target, config, runtime),
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

    /// A connection of the node's failed (its inbox): on Sentinel, ask whether the master moved.
    pub(crate) fn suspect(&self) {
        if let RedisLink::Sentinel(link) = self {
            link.want();
        }
    }
}

impl ConnectionLike for RedisLink {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            RedisLink::Direct { manager, .. } => manager.req_packed_command(cmd),
            RedisLink::Cluster { connection, .. } => connection.req_packed_command(cmd),
            RedisLink::Sentinel(link) => link
                .send(move |mut manager| async move { manager.send_packed_command(cmd).await })
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
            RedisLink::Sentinel(link) => link
                .send(move |mut manager| async move {
                    manager.send_packed_commands(pipeline, offset, count).await
                })
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

#[cfg(test)]
mod tests {
    use super::*;

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
            |_: &str, _: &str, _: &str, _: Duration| -> crate::BoxFuture<crate::JsonCallOutcome> {
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
