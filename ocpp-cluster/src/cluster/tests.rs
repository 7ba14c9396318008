//! Registrations that meet one another: a registration that finds another of its claim in
//! flight waits for it, and what it answers then. The claim table's states are driven by hand
//! where the interleaving matters, as a refresh round or the bridge would drive them.

use std::time::{Duration, Instant};

use futures_util::FutureExt;

use super::*;
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
