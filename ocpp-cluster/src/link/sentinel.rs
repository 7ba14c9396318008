//! The link to the master of a Redis Sentinel service: the master in use, what fires when it
//! moves, and the calls that ask for a new look at the sentinels.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::ConnectionManager;
use redis::{
    ConnectionAddr, ErrorKind, RedisConnectionInfo, RedisError, RedisResult, ServerErrorKind,
};
use tokio::sync::{mpsc, watch};

use super::resolver::Resolver;
use super::{manager_config, with_credentials, RedisLink};
use crate::config::SentinelTarget;
use crate::{ClusterConfig, ClusterError};

/// The master in use behind a Sentinel service.
pub(super) struct Master {
    pub(super) addr: ConnectionAddr,
    pub(super) client: redis::Client,
    pub(super) manager: ConnectionManager,
    /// 0 for the first master found, one more for each move.
    pub(super) generation: u64,
}

/// The shared half of a Sentinel link: the master in use, and the way to ask for a new look.
pub(crate) struct SentinelLink {
    /// `None` until the sentinels first named a reachable master.
    pub(super) master: watch::Sender<Option<Arc<Master>>>,
    /// Wakes the resolver (a full channel: a look is asked for already).
    pub(super) wanted: mpsc::Sender<()>,
    pub(super) timeout: Duration,
    pub(super) db: i64,
}

/// Fires when the link moved to another master than the one a subscription was made on (or,
/// made before any master was known, when the first one is).
pub(crate) struct MasterMoved(pub(super) Option<(MasterWatch, Option<u64>)>);

/// The master a Sentinel link uses, as it changes (`None` until the first is found).
pub(super) type MasterWatch = watch::Receiver<Option<Arc<Master>>>;

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

/// The link of a `redis+sentinel://` URL; starts its resolver on `runtime`, which asks the
/// sentinels for the master at once and ends with the last clone of the link.
pub(super) fn open(
    target: SentinelTarget,
    config: &ClusterConfig,
    runtime: &tokio::runtime::Handle,
) -> Result<RedisLink, ClusterError> {
    let sentinels = target
        .sentinels
        .iter()
        .map(|(host, port)| redis::Client::open(ConnectionAddr::Tcp(host.clone(), *port)))
        .collect::<RedisResult<Vec<_>>>()
        .map_err(|e| ClusterError::Config(format!("redis url: {e}")))?;
    let node_info = with_credentials(
        RedisConnectionInfo::default().set_db(target.db),
        target.username.as_deref(),
        target.password.as_deref(),
    );
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
        bound: crate::bound::Bound::of(config),
    };
    runtime.spawn(resolver.run());
    link.want();
    Ok(RedisLink::Sentinel(link))
}

impl RedisLink {
    /// Moves a Sentinel link to the Redis on `port` as the resolver does (without asking the
    /// sentinels, nor running `failover.lua`): a test's failover at the instant it chooses.
    #[cfg(test)]
    pub(crate) fn move_to(&self, port: u16) {
        if let RedisLink::Sentinel(link) = self {
            let addr = ConnectionAddr::Tcp("127.0.0.1".to_owned(), port);
            let client = redis::Client::open(addr.clone()).expect("client");
            let manager = ConnectionManager::new_lazy_with_config(
                client.clone(),
                redis::aio::ConnectionManagerConfig::new(),
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
}

impl SentinelLink {
    /// Asks the resolver for a look at the sentinels (rate-limited there).
    pub(super) fn want(&self) {
        let _ = self.wanted.try_send(());
    }

    /// Sends on the master in use (`send` is given its manager), and asks for a look at the
    /// sentinels when the call fails as a failover makes calls fail, or is dropped before its
    /// answer ([`Watch`]).
    pub(super) async fn send<T, F>(
        &self,
        send: impl FnOnce(ConnectionManager) -> F,
    ) -> RedisResult<T>
    where
        F: Future<Output = RedisResult<T>>,
    {
        let watch = Watch {
            link: self,
            armed: true,
        };
        let manager = self.current().await?.manager.clone();
        let result = send(manager).await;
        watch.settle(&result);
        result
    }

    /// The master in use; before the first one is known, waits for it (at most the Redis
    /// timeout).
    pub(super) async fn current(&self) -> RedisResult<Arc<Master>> {
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
pub(super) struct Watch<'a> {
    pub(super) link: &'a SentinelLink,
    pub(super) armed: bool,
}

impl Watch<'_> {
    pub(super) fn settle<T>(mut self, result: &RedisResult<T>) {
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
}
