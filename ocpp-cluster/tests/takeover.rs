//! Takeovers that race the old holder's own Redis calls (PROTOCOL.md 5.3 and 7, "Takeover"):
//! Redis may know the old holder's claim under a newer epoch than the holder has read yet (a
//! restore whose reply is still on its way, a refresh or a claim.lua that timed out on the
//! node's side after Redis ran it). A newer claim on another node must still close the old
//! socket at once, not at the old node's next refresh. Real redis-server on loopback.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{node, wait_until, Node, Probe, RedisServer};
use ocpp_cluster::{scripts, Cluster, ClusterConfig, ClusterEvent, ClusterEvents, LostClaim};

/// A node that refreshes once a minute (after its first rounds, which the helper lets pass):
/// nothing of its own re-reads its claims during a test, so what it knows is what the test
/// made it know.
async fn quiet_node(url: String, name: &str, redis_timeout: Duration) -> Node {
    let config = ClusterConfig::new(url, name)
        .with_claim_ttl(Duration::from_secs(180))
        .with_node_ttl(Duration::from_secs(180))
        .with_refresh_interval(Duration::from_secs(60))
        .with_redis_timeout(redis_timeout);
    let probe = Probe::new(name);
    let (cluster, events) = Cluster::start(config, probe.clone()).expect("start");
    wait_until(Duration::from_secs(5), || cluster.is_connected()).await;
    // The rounds at start and after the subscription.
    tokio::time::sleep(Duration::from_millis(300)).await;
    Node {
        cluster,
        events,
        probe,
    }
}

async fn superseded_within(events: &mut ClusterEvents, within: Duration) -> LostClaim {
    match tokio::time::timeout(within, events.recv()).await {
        Ok(Some(ClusterEvent::Superseded(lost))) => lost,
        other => panic!("no Superseded within {within:?}: {other:?}"),
    }
}

/// refresh.lua as node `node` runs it for its claim under `epoch` (one claim, on one Redis:
/// the claim key and `since`), on a connection of the test's own; the claim's answer.
async fn refresh_as(
    raw: &mut redis::aio::MultiplexedConnection,
    node: &str,
    identity: &str,
    epoch: u64,
) -> Vec<String> {
    let mut answers: Vec<Vec<String>> = redis::cmd("EVAL")
        .arg(scripts::REFRESH)
        .arg(2)
        .arg(format!("ocpp:cp:{identity}"))
        .arg("ocpp:since")
        .arg(node)
        .arg(180_000)
        .arg("ocpp:inbox:")
        .arg(epoch)
        .arg("")
        .arg(identity)
        .query_async(raw)
        .await
        .expect("refresh.lua");
    assert_eq!(answers.len(), 1, "one answer per claim");
    answers.remove(0)
}

async fn delete(raw: &mut redis::aio::MultiplexedConnection, identity: &str) {
    let _: i64 = redis::cmd("DEL")
        .arg(format!("ocpp:cp:{identity}"))
        .query_async(raw)
        .await
        .expect("DEL");
}

fn epoch_in_redis(redis: &RedisServer, identity: &str) -> u64 {
    redis
        .query(&format!("HGET ocpp:cp:{identity} epoch"))
        .and_then(|e| e.parse().ok())
        .expect("an epoch in Redis")
}

/// A TCP proxy between one node and Redis that can hold back Redis's answers on the node's
/// command connection (not on its inbox, told apart by its SUBSCRIBE): the node's script then
/// runs in Redis while the node reads the answer only when the test lets it through.
struct Proxy {
    port: u16,
    hold: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
}

impl Proxy {
    fn start(redis_port: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let hold = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let (hold2, stop2) = (Arc::clone(&hold), Arc::clone(&stop));
        std::thread::spawn(move || {
            while !stop2.load(Ordering::Acquire) {
                match listener.accept() {
                    Ok((client, _)) => {
                        let _ = client.set_nonblocking(false);
                        let Ok(server) = TcpStream::connect(("127.0.0.1", redis_port)) else {
                            continue;
                        };
                        pump(client, server, Arc::clone(&hold2), Arc::clone(&stop2));
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(_) => return,
                }
            }
        });
        Proxy { port, hold, stop }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn hold(&self, on: bool) {
        self.hold.store(on, Ordering::Release);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

fn pump(client: TcpStream, server: TcpStream, hold: Arc<AtomicBool>, stop: Arc<AtomicBool>) {
    let pubsub = Arc::new(AtomicBool::new(false));
    let (mut client_in, mut server_out) = (
        client.try_clone().expect("clone"),
        server.try_clone().expect("clone"),
    );
    let marks = Arc::clone(&pubsub);
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        while let Ok(n) = client_in.read(&mut buf) {
            if n == 0 {
                break;
            }
            if buf[..n]
                .windows(9)
                .any(|w| w.eq_ignore_ascii_case(b"SUBSCRIBE"))
            {
                marks.store(true, Ordering::Release);
            }
            if server_out.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = server_out.shutdown(Shutdown::Both);
    });
    let (mut server_in, mut client_out) = (server, client);
    std::thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        while let Ok(n) = server_in.read(&mut buf) {
            if n == 0 {
                break;
            }
            while hold.load(Ordering::Acquire)
                && !pubsub.load(Ordering::Acquire)
                && !stop.load(Ordering::Acquire)
            {
                std::thread::sleep(Duration::from_millis(2));
            }
            if client_out.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = client_out.shutdown(Shutdown::Both);
    });
}

/// The finding: a holds CP-1 under e0; Redis lost the key and a refresh of a's earlier
/// connection's claim, run late (the test runs it as a), restored it under that claim's older
/// epoch E1; b's claim then takes CP-1 and tells a that epoch E1 was superseded. a's only claim
/// in Redis is its current connection's, and b's claim is newer than e0: a must close at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_takeover_of_a_claim_restored_behind_the_holders_back_is_heard_at_once() {
    let redis = RedisServer::start();
    let mut a = quiet_node(redis.url(), "a", Duration::from_millis(300)).await;
    let b = node(&redis, "b").await;
    let claim = a.cluster.claim("CP-1").await;
    let e0 = claim.epoch.expect("registered");

    // Redis lost the key; a late refresh of a's earlier claim ran in Redis.
    let mut raw = redis.connection().await;
    delete(&mut raw, "CP-1").await;
    let restored = refresh_as(&mut raw, "a", "CP-1", e0 - 1).await;
    assert_eq!(restored[0], "restored");
    let e1: u64 = restored[1].parse().unwrap();
    assert_eq!(e1, e0 - 1, "restored under its own epoch");
    assert_eq!(
        a.cluster.holds("CP-1").unwrap().epoch,
        Some(e0),
        "a still knows e0"
    );

    // The charge point's newer connection on b.
    let newer = b.cluster.claim("CP-1").await;
    let lost = superseded_within(&mut a.events, Duration::from_secs(2)).await;
    assert_eq!(lost.identity, "CP-1");
    assert_eq!(lost.ticket, claim.ticket);
    assert_eq!(lost.epoch, e1, "the claim Redis superseded");
    assert_eq!(lost.by_node, "b");
    assert_eq!(Some(lost.by_epoch), newer.epoch);
    assert!(a.cluster.holds("CP-1").is_none());
    tokio::task::block_in_place(|| redis.wait_claimed("CP-1", "b"));
    assert!(b.cluster.holds("CP-1").is_some());
}

/// The same with the real refresh: a's refresh round timed out on a's side after Redis ran
/// refresh.lua (restored under e0, its own epoch).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_takeover_after_a_refresh_that_timed_out_but_ran_is_heard_at_once() {
    let redis = RedisServer::start();
    let proxy = Proxy::start(redis.port);
    let mut a = quiet_node(proxy.url(), "a", Duration::from_millis(300)).await;
    let b = node(&redis, "b").await;
    let claim = a.cluster.claim("CP-1").await;
    let e0 = claim.epoch.expect("registered");
    // Loads refresh.lua into Redis's script cache (EVALSHA then runs it in one round trip).
    assert!(a.cluster.refresh().await.unwrap().is_empty());

    let mut raw = redis.connection().await;
    delete(&mut raw, "CP-1").await;
    proxy.hold(true);
    assert!(a.cluster.refresh().await.is_err(), "the round timed out");
    tokio::task::block_in_place(|| redis.wait_claimed("CP-1", "a"));
    let e1 = epoch_in_redis(&redis, "CP-1");
    assert_eq!(e1, e0, "restored by a's refresh, under its own epoch");
    proxy.hold(false);
    assert_eq!(
        a.cluster.holds("CP-1").unwrap().epoch,
        Some(e0),
        "a still knows e0"
    );

    let newer = b.cluster.claim("CP-1").await;
    let lost = superseded_within(&mut a.events, Duration::from_secs(2)).await;
    assert_eq!(lost.ticket, claim.ticket);
    assert_eq!(lost.by_node, "b");
    assert_eq!(Some(lost.by_epoch), newer.epoch);
    assert!(a.cluster.holds("CP-1").is_none());
}

/// The Registering case: a's claim.lua ran in Redis (epoch r) but a has not read the answer;
/// Redis then lost the key and a late refresh of a's earlier claim restored it under that
/// claim's epoch E < r; b's claim supersedes E. The message reaches a while its registration
/// is in flight: a keeps it and applies it when claim.lua returns r, older than b's claim.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_takeover_that_overtakes_the_holders_claim_reply_is_applied_when_it_returns() {
    let redis = RedisServer::start();
    let proxy = Proxy::start(redis.port);
    let mut a = quiet_node(proxy.url(), "a", Duration::from_secs(3)).await;
    let b = node(&redis, "b").await;
    // Loads claim.lua into Redis's script cache.
    a.cluster.claim("CP-WARM").await;

    proxy.hold(true);
    let cluster = a.cluster.clone();
    let registering = tokio::spawn(async move { cluster.claim("CP-1").await });
    tokio::task::block_in_place(|| redis.wait_claimed("CP-1", "a"));
    let r = epoch_in_redis(&redis, "CP-1");
    let mut raw = redis.connection().await;
    delete(&mut raw, "CP-1").await;
    let restored = refresh_as(&mut raw, "a", "CP-1", r - 1).await;
    assert_eq!(restored[0], "restored");
    let e: u64 = restored[1].parse().unwrap();
    assert_eq!(e, r - 1, "an earlier claim of a's, restored late");
    let newer = b.cluster.claim("CP-1").await;
    // The superseded message (on a's inbox, not held) arrives while claim.lua is in flight.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!registering.is_finished(), "claim.lua's answer is held");
    proxy.hold(false);

    let claim = registering.await.unwrap();
    assert_eq!(claim.epoch, Some(r));
    let lost = superseded_within(&mut a.events, Duration::from_secs(2)).await;
    assert_eq!(lost.identity, "CP-1");
    assert_eq!(lost.ticket, claim.ticket);
    assert_eq!(lost.epoch, e);
    assert_eq!(lost.by_node, "b");
    assert_eq!(Some(lost.by_epoch), newer.epoch);
    assert!(a.cluster.holds("CP-1").is_none());
}

/// A claim whose claim.lua timed out on the node's side after Redis ran it is pending again
/// (no epoch known); a newer claim elsewhere supersedes it: the pending claim yields at once
/// rather than registering at its next round and closing the newer connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_claim_superseded_by_a_newer_one_yields_at_once() {
    let redis = RedisServer::start();
    let proxy = Proxy::start(redis.port);
    let mut a = quiet_node(proxy.url(), "a", Duration::from_millis(300)).await;
    let mut b = node(&redis, "b").await;
    a.cluster.claim("CP-WARM").await;

    proxy.hold(true);
    let claim = a.cluster.claim("CP-1").await;
    assert_eq!(claim.epoch, None, "timed out on a's side");
    tokio::task::block_in_place(|| redis.wait_claimed("CP-1", "a"));
    proxy.hold(false);

    let newer = b.cluster.claim("CP-1").await;
    let lost = superseded_within(&mut a.events, Duration::from_secs(2)).await;
    assert_eq!(lost.ticket, claim.ticket);
    assert_eq!(lost.by_node, "b");
    assert_eq!(Some(lost.by_epoch), newer.epoch);
    assert!(a.cluster.holds("CP-1").is_none());
    // a's next round registers nothing: b keeps CP-1.
    a.cluster.refresh().await.unwrap();
    tokio::task::block_in_place(|| redis.wait_claimed("CP-1", "b"));
    assert!(b.events.try_recv().is_err(), "b was not superseded");
}
