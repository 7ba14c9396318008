//! Registrations that meet one another: a registration that finds another of its claim in
//! flight waits for it, and what it answers then. The claim table's states are driven by hand
//! where the interleaving matters, as a refresh round or the bridge would drive them.

use std::time::{Duration, Instant};

use futures_util::FutureExt;

use super::*;
use crate::claims::Begin;
use crate::test_redis::RedisServer;

/// A node of `config`, its inbox subscribed and a first round run.
pub(super) async fn started(config: ClusterConfig) -> (Cluster, ClusterEvents) {
    let executor = |_: &str, _: &str, _: &str, _: Duration| -> crate::BoxFuture<crate::JsonCallOutcome> {
        Box::pin(async { Ok("{}".to_owned()) })
    };
    let (cluster, events) = Cluster::start(config, executor).expect("start");
    let start = Instant::now();
    while !cluster.is_connected() && start.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(cluster.is_connected(), "the inbox subscribed");
    cluster.refresh().await.expect("a first round");
    (cluster, events)
}

/// A registration whose future is dropped while its `claim.lua` is in flight (a caller that
/// gave up on [`Cluster::claim`]) wakes a registration that waits on it, as one that ends
/// does. Before, nothing woke the waiter: it waited out its whole bound (the Redis timeout)
/// and answered no epoch.
#[tokio::test]
async fn a_registration_dropped_in_flight_wakes_the_one_waiting_on_it() {
    let server = RedisServer::start();
    // A Redis timeout longer than the test waits: a waiter not woken waits it out.
    let config =
        ClusterConfig::new(server.url(), "a").with_redis_timeout(Duration::from_secs(20));
    let (cluster, _events) = started(config).await;
    let a = cluster.hold("A", None);
    let mut first = Box::pin(cluster.register("A", a));
    assert!(first.as_mut().now_or_never().is_none(), "claim.lua queued");
    assert!(lock(&cluster.shared().claims).is_registering("A", a));
    let mut waiting = Box::pin(cluster.register("A", a));
    assert!(waiting.as_mut().now_or_never().is_none(), "it waits on the first");
    drop(first);
    let epoch = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the waiter woke when the registration it waited on was dropped");
    assert_eq!(epoch, cluster.holds("A").and_then(|claim| claim.epoch));
}

/// A registration waits for the one in flight of its claim until that one settles, however
/// long it takes: its `claim.lua` may wait in the claim queue behind a batch in flight, then
/// run in its own call, each bounded by the Redis timeout (and the node's stall). Before, the
/// waiter gave up after one Redis timeout and answered `epoch: None` for a claim about to be
/// registered.
#[tokio::test]
async fn a_registration_waits_for_the_one_in_flight_past_the_redis_timeout() {
    let server = RedisServer::start();
    let config =
        ClusterConfig::new(server.url(), "a").with_redis_timeout(Duration::from_millis(100));
    let (cluster, _events) = started(config).await;
    let shared = cluster.shared();
    // A round runs claim.lua for A (by hand: no await in between, the node's own rounds
    // cannot take it first).
    let a = cluster.hold("A", None);
    assert_eq!(lock(&shared.claims).begin_register("A", a), Begin::Run);
    let mut waiting = Box::pin(cluster.register("A", a));
    // Five Redis timeouts, and A's claim.lua is still on its way.
    let early = tokio::time::timeout(Duration::from_millis(500), waiting.as_mut()).await;
    assert!(
        early.is_err(),
        "the waiter answered {early:?} while the registration it waited on was in flight"
    );
    lock(&shared.claims).register_done("A", a, Some(42));
    shared.registered.notify_waiters();
    assert_eq!(waiting.await, Some(42));
}
