//! The resolver of a Sentinel link: the background task that asks the sentinels which master
//! to use, and moves the link when they name another one.

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures_util::StreamExt;
use redis::aio::{ConnectionManager, ConnectionManagerConfig, MultiplexedConnection};
use redis::{
    AsyncConnectionConfig, ConnectionAddr, IntoConnectionInfo, RedisConnectionInfo, RedisResult,
    Role,
};
use tokio::sync::mpsc;

use super::sentinel::{Master, SentinelLink};
use crate::bound::Bound;
use crate::ClusterError;

/// The shortest time between two questions to the sentinels.
pub(super) const RESOLVE_INTERVAL: Duration = Duration::from_millis(250);
/// The longest wait between two questions while the sentinels name no reachable master.
const RESOLVE_BACKOFF_MAX: Duration = Duration::from_secs(2);

/// The background task of a Sentinel link: asks the sentinels when asked to (at most every
/// [`RESOLVE_INTERVAL`]; again with a backoff until they name a reachable master), and moves
/// the link when they name another master. It also listens to every sentinel's
/// `+switch-master` events, so that a failover that leaves the old master working (`SENTINEL
/// FAILOVER`: it is demoted only seconds later) is followed at once.
pub(super) struct Resolver {
    pub(super) link: Weak<SentinelLink>,
    pub(super) requests: mpsc::Receiver<()>,
    /// Each sentinel, with its connection once made.
    pub(super) sentinels: Vec<(redis::Client, Option<MultiplexedConnection>)>,
    pub(super) service: String,
    /// The user, password and database of the data nodes.
    pub(super) node_info: RedisConnectionInfo,
    pub(super) manager_config: ConnectionManagerConfig,
    pub(super) since_key: String,
    pub(super) epoch_key: String,
    /// `failover.lua`, run on a new master before it is used.
    pub(super) failover: redis::Script,
    /// The bound of a sentinel's answer.
    pub(super) timeout: Duration,
    /// The bound of a call to a data node.
    pub(super) bound: Bound,
}

impl Resolver {
    pub(super) async fn run(mut self) {
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
        let role: Role = self
            .bound
            .run(redis::cmd("ROLE").query_async(&mut manager))
            .await?;
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
                self.bound
                    .run(failover.invoke_async::<i64>(&mut manager))
                    .await?;
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
