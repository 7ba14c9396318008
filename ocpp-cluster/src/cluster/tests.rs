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
    let executor =
        |_: &str, _: &str, _: &str, _: Duration| -> crate::BoxFuture<crate::JsonCallOutcome> {
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

/// Yields to the node's tasks until `done` holds (at most 10 s).
pub(super) async fn until(mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(10), "never got there");
        tokio::task::yield_now().await;
    }
}

/// Runs a round over the pending claims `A` (ticket `a`) and `B` (`b`), registered a claim at a
/// time (`refresh_batch` 1): once the round registers one of them (the table's order), another
/// registration of the other begins, by hand; returns when the first is registered, so that the
/// round's registration of the other now waits on that one (the same poll of the round's
/// task). The other claim and its ticket; its registration is the caller's to settle.
async fn round_registers_one_while_the_other_begins(
    cluster: &Cluster,
    a: ClaimTicket,
    b: ClaimTicket,
) -> (&'static str, ClaimTicket) {
    let shared = cluster.shared();
    shared.refresh_now.notify_one();
    let mut first = None;
    until(|| {
        let claims = lock(&shared.claims);
        first = [("A", a), ("B", b)]
            .into_iter()
            .find(|(identity, ticket)| claims.is_registering(identity, *ticket));
        first.is_some()
    })
    .await;
    let (first, _) = first.expect("found");
    let (other, ticket) = if first == "A" { ("B", b) } else { ("A", a) };
    assert_eq!(
        lock(&shared.claims).begin_register(other, ticket),
        Begin::Run
    );
    until(|| {
        cluster
            .holds(first)
            .is_some_and(|claim| claim.epoch.is_some())
    })
    .await;
    (other, ticket)
}

/// A registration whose future is dropped while its `claim.lua` is in flight (a caller that
/// gave up on [`Cluster::claim`]) wakes a registration that waits on it, as one that ends
/// does. Before, nothing woke the waiter: it waited out its whole bound (the Redis timeout)
/// and answered no epoch.
#[tokio::test]
async fn a_registration_dropped_in_flight_wakes_the_one_waiting_on_it() {
    let server = RedisServer::start();
    // A Redis timeout longer than the test waits: a waiter not woken waits it out.
    let config = ClusterConfig::new(server.url(), "a").with_redis_timeout(Duration::from_secs(20));
    let (cluster, _events) = started(config).await;
    let a = cluster.hold("A", None);
    let mut first = Box::pin(cluster.register("A", a));
    assert!(first.as_mut().now_or_never().is_none(), "claim.lua queued");
    assert!(lock(&cluster.shared().claims).is_registering("A", a));
    let mut waiting = Box::pin(cluster.register("A", a));
    assert!(
        waiting.as_mut().now_or_never().is_none(),
        "it waits on the first"
    );
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
    shared.settled.notify_waiters();
    assert_eq!(waiting.await, Some(42));
}

/// A refresh round that finds a claim's registration in flight (the bridge's, say) and waits
/// for it counts that claim as registered only if it was: a registration that fails leaves the
/// claim pending, and the round registers it itself. Before, the round took the waited-for
/// failure for success and announced `synced` (every claim in Redis under `since`, PROTOCOL.md
/// 6.3 step 3) with the claim pending: a reader then took the charge point for connected
/// nowhere (`not_connected`) rather than `unknown`.
#[tokio::test]
async fn a_round_that_waited_on_a_failed_registration_registers_the_claim_itself() {
    let server = RedisServer::start();
    // A claim at a time: the round's second registration starts once its first is done.
    let config = ClusterConfig::new(server.url(), "a").with_refresh_batch(1);
    let (cluster, _events) = started(config).await;
    let shared = cluster.shared();
    let (a, b) = {
        // No round runs meanwhile: the next one finds both pending.
        let _round = shared.round.lock().await;
        *lock(&shared.synced) = None;
        (cluster.hold("A", None), cluster.hold("B", None))
    };
    // The round registers one of them while another registration of the other begins.
    let (other, ticket) = round_registers_one_while_the_other_begins(&cluster, a, b).await;
    // Which fails (Redis did not answer it in time).
    lock(&shared.claims).register_done(other, ticket, None);
    shared.settled.notify_waiters();
    // The round ends.
    let _round = shared.round.lock().await;
    let synced = lock(&shared.synced).clone();
    let pending: Vec<_> = cluster
        .claims()
        .into_iter()
        .filter(|claim| claim.epoch.is_none())
        .collect();
    assert!(
        synced.is_none() || pending.is_empty(),
        "the round announced synced = {synced:?} with {pending:?} pending"
    );
    assert!(pending.is_empty(), "{pending:?} left pending");
}

/// A round whose registration waits on another's that never settles (a registration future
/// polled once, then held and no longer polled) gives up after a refresh interval: the round
/// fails and the node's rounds go on. A bound of the round's own: other waiters wait until the
/// registration settles, however long its claim.lua waits in the claim queue.
#[tokio::test]
async fn a_round_gives_up_on_a_registration_that_never_settles() {
    let server = RedisServer::start();
    let config = ClusterConfig::new(server.url(), "a")
        .with_refresh_batch(1)
        .with_refresh_interval(Duration::from_millis(300));
    let (cluster, _events) = started(config).await;
    let shared = cluster.shared();
    let (a, b) = {
        let _round = shared.round.lock().await;
        (cluster.hold("A", None), cluster.hold("B", None))
    };
    // A registration of the other begins (and, here, never settles).
    round_registers_one_while_the_other_begins(&cluster, a, b).await;
    // The round that waits on it ends.
    let ended = tokio::time::timeout(Duration::from_secs(5), shared.round.lock()).await;
    assert!(ended.is_ok(), "the round still waits");
}

/// A round that finds a claim's registration in flight (the bridge's, a caller's) counts the
/// claim registered only once that registration succeeded: it waits for it, and registers the
/// claim itself if it failed. Before, the round passed over the claim and announced `synced`
/// (every claim in Redis under `since`, PROTOCOL.md 6.3 step 3) while that registration was
/// still on its way, and it failed: the claim pending, a reader took the charge point for
/// connected nowhere (`not_connected`) rather than `unknown`.
#[tokio::test]
async fn a_round_counts_a_registration_in_flight_once_it_succeeded() {
    let server = RedisServer::start();
    let (cluster, _events) = started(ClusterConfig::new(server.url(), "a")).await;
    let shared = cluster.shared();
    let a = {
        // No round runs meanwhile: the next one finds A's registration in flight.
        let _round = shared.round.lock().await;
        *lock(&shared.synced) = None;
        let a = cluster.hold("A", None);
        assert_eq!(lock(&shared.claims).begin_register("A", a), Begin::Run);
        a
    };
    shared.refresh_now.notify_one();
    // The round found it.
    until(|| lock(&shared.claims).marked_recheck("A")).await;
    // That registration fails (Redis did not answer it in time).
    lock(&shared.claims).register_done("A", a, None);
    shared.settled.notify_waiters();
    // The round ends.
    let _round = shared.round.lock().await;
    let synced = lock(&shared.synced).clone();
    let epoch = cluster.holds("A").and_then(|claim| claim.epoch);
    assert!(
        synced.is_none() || epoch.is_some(),
        "the round announced synced = {synced:?} with A pending"
    );
    assert!(epoch.is_some(), "A left pending");
}
