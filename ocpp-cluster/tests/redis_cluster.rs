//! The cluster protocol on a Redis Cluster of the test's own (`redis-cluster://`, three
//! masters on loopback): the scenarios of `tests/cluster.rs` (claims and routing, takeover, a
//! node's death, a drain), run unchanged on it; and where the keys go (PROTOCOL.md 1.2): each
//! charge point's key in one slot, the node-level keys and inboxes in one slot, and the claims
//! of many charge points spread over the three masters.

mod common;
#[path = "common/redis_cluster.rs"]
mod redis_cluster;
#[path = "common/sentinel.rs"]
mod sentinel_set;

use std::collections::HashMap;
use std::time::Duration;

use common::{node, scenarios, Backend};
use ocpp_cluster::{CallFailure, Cluster, ClusterConfig, ClusterError};
use redis_cluster::{RedisCluster, MASTERS};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_reaches_the_holder_and_its_answer_comes_back() {
    let redis = RedisCluster::start();
    scenarios::command_reaches_the_holder_and_its_answer_comes_back(&redis).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_newest_claim_wins_and_the_old_node_hears_it_at_once() {
    let redis = RedisCluster::start();
    scenarios::newest_claim_wins_and_the_old_node_hears_it_at_once(&redis).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_node_s_claims_expire_and_routing_follows_the_reconnection() {
    let redis = RedisCluster::start();
    scenarios::killed_node_s_claims_expire_and_routing_follows_the_reconnection(&redis).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_releases_every_claim_and_the_node_record() {
    let redis = RedisCluster::start();
    scenarios::drain_releases_every_claim_and_the_node_record(&redis).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soak_every_command_gets_one_answer_and_runs_at_most_once_while_charge_points_move() {
    let redis = RedisCluster::start();
    scenarios::soak_every_command_gets_one_answer_and_runs_at_most_once(&redis).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bridge_serves_a_non_async_loop() {
    let redis = RedisCluster::start();
    scenarios::bridge_serves_a_non_async_loop(&redis).await;
}

/// The keys of one charge point share a slot, and so do the node-level keys and inboxes
/// (every multi-key script stays in one slot); the claims of many charge points land on every
/// master, and the cluster-wide listing (a `SCAN` per master) finds them all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_stay_together_per_charge_point_and_spread_over_the_masters() {
    let redis = RedisCluster::start();
    let a = node(&redis, "a").await;
    let b = node(&redis, "b").await;
    redis.wait_inbox("a");
    redis.wait_inbox("b");

    // The node-level names: one slot.
    let control = redis.keyslot("{ocpp}:since");
    for key in [
        "{ocpp}:nodes",
        "{ocpp}:node:a",
        "{ocpp}:node:b",
        "{ocpp}:inbox:a",
        "{ocpp}:inbox:b",
    ] {
        assert_eq!(redis.keyslot(key), control, "{key}");
    }
    assert!(redis.exists("{ocpp}:node:a") && redis.exists("{ocpp}:nodes"));

    const CHARGE_POINTS: usize = 120;
    for i in 0..CHARGE_POINTS {
        let holder = if i % 2 == 0 { &a } else { &b };
        let claim = holder.cluster.claim(&format!("CP-{i}")).await;
        assert!(claim.epoch.is_some(), "CP-{i} registered");
    }
    // Each charge point's keys (its claim; an identity with its own hash tag too) in one slot,
    // on the master that serves it.
    let mut per_master: HashMap<u16, usize> = HashMap::new();
    for i in 0..CHARGE_POINTS {
        let key = format!("ocpp:cp:CP-{i}");
        let slot = redis.keyslot(&key);
        assert_eq!(redis.keyslot(&format!("ocpp:cp:CP-{i}")), slot);
        assert!(redis.exists(&key), "{key}");
        *per_master.entry(redis.master_of(&key)).or_default() += 1;
    }
    assert_eq!(
        per_master.len(),
        MASTERS,
        "claims on every master: {per_master:?}"
    );
    for (master, count) in &per_master {
        assert!(
            *count >= CHARGE_POINTS / 10,
            "master {master} holds only {count} of {CHARGE_POINTS} claims: {per_master:?}"
        );
    }
    eprintln!("claims per master: {per_master:?}");

    // The listing visits every master.
    let all = a.cluster.list(10_000).await.expect("list");
    assert_eq!(all.len(), CHARGE_POINTS);
    assert!(all.iter().all(|cp| cp.live));
    let cp = b.cluster.locate("CP-0").await.unwrap().expect("located");
    assert_eq!(cp.node, "a");

    // Routing from either node to charge points on every master.
    for i in (0..CHARGE_POINTS).step_by(7) {
        let holder = if i % 2 == 0 { "a" } else { "b" };
        let from = if i % 2 == 0 { &b } else { &a };
        let identity = format!("CP-{i}");
        let answer = from
            .cluster
            .call(&identity, "Reset", "{}", Duration::from_secs(10))
            .await;
        assert_eq!(
            answer,
            Ok(format!(r#"{{"node":"{holder}","identity":"{identity}"}}"#))
        );
    }
    assert_eq!(
        a.cluster
            .call("NOBODY", "Reset", "{}", Duration::from_secs(10))
            .await,
        Err(CallFailure::NotConnected)
    );
}

/// A node started while its Redis Cluster is not up yet works locally, and joins the cluster
/// when it comes: its inbox subscribes, its pending claim is registered, commands route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_started_before_its_cluster_joins_it_when_it_comes_up() {
    let (ports, url) = RedisCluster::reserve();
    let probe = common::Probe::new("early");
    let config = ClusterConfig::new(url.clone(), "early")
        .with_claim_ttl(Duration::from_secs(2))
        .with_node_ttl(Duration::from_secs(2))
        .with_refresh_interval(Duration::from_millis(500))
        .with_redis_timeout(Duration::from_secs(1));
    let (early, _events) = Cluster::start(config, probe).expect("starts without Redis");
    let claim = early.claim("CP-E").await;
    assert_eq!(claim.epoch, None, "pending while the cluster is down");
    assert_eq!(
        early
            .call("CP-E", "Reset", "{}", Duration::from_secs(5))
            .await,
        Ok(r#"{"node":"early","identity":"CP-E"}"#.to_owned()),
        "local work goes on"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;

    let redis = tokio::task::block_in_place(|| RedisCluster::start_on(&ports));
    assert_eq!(redis.url(), url);
    common::wait_until(Duration::from_secs(20), || early.is_connected()).await;
    tokio::task::block_in_place(|| redis.wait_claimed("CP-E", "early"));
    let other = node(&redis, "other").await;
    let answer = other
        .cluster
        .call("CP-E", "Reset", "{}", Duration::from_secs(10))
        .await;
    assert_eq!(
        answer,
        Ok(r#"{"node":"early","identity":"CP-E"}"#.to_owned())
    );
}

/// A master of claims loses its data (killed, started again empty as the same cluster node):
/// its holder makes the claim again long before its next refresh round, since the nodes see a
/// master with another `run_id` serve and mark `since` (`failover.lua`); a command for that
/// charge point reads `not_connected` only until a node has looked at the masters (an
/// announcement interval), then `owner_unreachable`, then reaches it (PROTOCOL.md 1.2).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_a_master_lost_comes_back_long_before_the_refresh_round() {
    let mut redis = RedisCluster::start();
    // Long claims and refreshes: what brings the claim back is not the periodic round.
    let start = |name: &str| {
        let probe = common::Probe::new(name);
        let config = ClusterConfig::new(redis.url(), name)
            .with_claim_ttl(Duration::from_secs(60))
            .with_refresh_interval(Duration::from_secs(20))
            .with_node_ttl(Duration::from_secs(2))
            .with_redis_timeout(Duration::from_secs(1));
        Cluster::start(config, probe).expect("start")
    };
    let (a, _a_events) = start("a");
    let (b, _b_events) = start("b");
    common::wait_until(Duration::from_secs(10), || {
        a.is_connected() && b.is_connected()
    })
    .await;
    // A charge point whose claim is on another master than the node-level slot's.
    let control = redis.master_of("{ocpp}:since");
    let identity = (0..100)
        .map(|i| format!("CP-{i}"))
        .find(|id| redis.master_of(&format!("ocpp:cp:{id}")) != control)
        .expect("a claim on another master");
    let victim = redis.master_of(&format!("ocpp:cp:{identity}"));
    assert!(b.claim(&identity).await.epoch.is_some());
    let call = || a.call(&identity, "Reset", "{}", Duration::from_secs(5));
    assert_eq!(
        call().await,
        Ok(format!(r#"{{"node":"b","identity":"{identity}"}}"#))
    );
    // Let both nodes announce themselves synced.
    tokio::time::sleep(Duration::from_secs(2)).await;

    tokio::task::block_in_place(|| redis.restart(victim));
    let back = std::time::Instant::now();
    let mut answers = Vec::new();
    let mut last_not_connected = None;
    loop {
        let answer = call().await;
        if answer == Err(CallFailure::NotConnected) {
            last_not_connected = Some(back.elapsed());
        }
        if answer.is_ok() {
            break;
        }
        answers.push(answer);
        assert!(
            back.elapsed() < Duration::from_secs(10),
            "the claim did not come back within half a refresh interval: {answers:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let took = back.elapsed();
    eprintln!(
        "the claim came back {took:?} after the master did; not_connected until \
         {last_not_connected:?}; answers meanwhile: {answers:?}"
    );
    // The announcement interval (a third of the node TTL) plus the look itself (bounded by
    // the Redis timeout) and slack for a loaded machine.
    if let Some(until) = last_not_connected {
        assert!(
            until < Duration::from_secs(3),
            "not_connected for a connected charge point {until:?} after its master came back"
        );
    }
}

/// A master lost a takeover (it holds an older claim of another node again, as after a
/// failover): the newer holder's refresh makes its claim again, and, since the other node's
/// inbox is in another slot than the claim, the node publishes the `superseded` message itself
/// after `refresh.lua` (PROTOCOL.md 1.2), the same message the script publishes on one Redis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_over_an_older_claim_tells_its_node_on_its_inbox() {
    use std::io::{BufRead, BufReader, Write};

    let redis = RedisCluster::start();
    let b = node(&redis, "b").await;
    let epoch = b.cluster.claim("CP-R").await.epoch.expect("registered");
    // The inbox of a node "ghost", read by the test itself.
    let inbox = "{ocpp}:inbox:ghost";
    let mut subscriber =
        std::net::TcpStream::connect(("127.0.0.1", redis.master_of(inbox))).expect("connect");
    subscriber
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    subscriber
        .write_all(format!("SSUBSCRIBE {inbox}\r\n").as_bytes())
        .expect("SSUBSCRIBE");
    let mut lines = BufReader::new(subscriber).lines();
    let mut confirmed = false;
    for _ in 0..10 {
        let line = lines.next().expect("a line").expect("read");
        if line == ":1" {
            confirmed = true;
            break;
        }
    }
    assert!(confirmed, "subscribed");

    // The master holds ghost's older claim again.
    let key = "ocpp:cp:CP-R";
    let older = (epoch - 1).to_string();
    let set = redis.query_key(key, &["HSET", key, "node", "ghost", "epoch", &older]);
    assert!(set.is_some(), "{set:?}");
    assert!(b.cluster.refresh().await.expect("refresh").is_empty());
    tokio::task::block_in_place(|| redis.wait_claimed("CP-R", "b"));
    let message = lines
        .find_map(|line| line.ok().filter(|l| l.contains("superseded")))
        .expect("a superseded message on ghost's inbox");
    let message: serde_json::Value = serde_json::from_str(&message).expect("JSON");
    assert_eq!(
        message,
        serde_json::json!({
            "type": "superseded",
            "identity": "CP-R",
            "epoch": epoch - 1,
            "by_node": "b",
            "by_epoch": epoch,
        })
    );
}

/// A resharding moves a claim's slot, then the node-level slot (the node records, `since` and
/// the inboxes) to other masters: commands keep reaching the holder (the client follows
/// `MOVED`; the inboxes subscribe again where their slot went), the claims stay the holder's
/// under their epochs, and a refresh finds them held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slot_migration_is_followed_by_claims_routing_and_inboxes() {
    let redis = RedisCluster::start();
    let a = node(&redis, "a").await;
    let b = node(&redis, "b").await;
    let claim = b.cluster.claim("CP-M").await;
    let call = |identity: &'static str| {
        let a = a.cluster.clone();
        async move {
            a.call(identity, "Reset", "{}", Duration::from_secs(5))
                .await
        }
    };
    let expected = Ok(r#"{"node":"b","identity":"CP-M"}"#.to_owned());
    assert_eq!(call("CP-M").await, expected);

    // The claim's slot moves.
    let key = "ocpp:cp:CP-M";
    let elsewhere = |key: &str| {
        let now = redis.master_of(key);
        redis
            .ports
            .iter()
            .copied()
            .find(|p| *p != now)
            .expect("another master")
    };
    let to = elsewhere(key);
    tokio::task::block_in_place(|| redis.move_slot(key, to));
    assert_eq!(call("CP-M").await, expected, "after the claim's slot moved");
    assert!(
        b.cluster.refresh().await.expect("refresh").is_empty(),
        "still held"
    );
    assert_eq!(b.cluster.holds("CP-M").and_then(|c| c.epoch), claim.epoch);

    // The node-level slot moves: the inboxes follow (bounded).
    let control = "{ocpp}:since";
    let to = elsewhere(control);
    tokio::task::block_in_place(|| redis.move_slot(control, to));
    let moved = std::time::Instant::now();
    let mut answers = Vec::new();
    loop {
        let answer = call("CP-M").await;
        if answer == expected {
            break;
        }
        answers.push(answer);
        assert!(
            moved.elapsed() < Duration::from_secs(15),
            "commands do not pass after the node-level slot moved: {answers:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!(
        "commands pass {:?} after the node-level slot moved; before: {answers:?}",
        moved.elapsed()
    );
    tokio::task::block_in_place(|| {
        redis.wait_inbox("a");
        redis.wait_inbox("b");
    });
    assert!(
        b.cluster.refresh().await.expect("refresh").is_empty(),
        "still held"
    );
    assert!(redis.exists(&redis.node_key("a")) && redis.exists(&redis.node_key("b")));
    assert_eq!(
        a.cluster
            .call("NOBODY", "Reset", "{}", Duration::from_secs(5))
            .await,
        Err(CallFailure::NotConnected)
    );
}

/// A claims master is killed and its replica promoted (three masters, a replica each): the
/// nodes follow the new master, see its `run_id` and mark `since`; commands reach the holder
/// again, never `not_connected` on the way, and the claim is the holder's under its epoch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_failover_to_its_replica_is_followed() {
    let mut redis = RedisCluster::start_with_replicas();
    // A claim that outlives the failover (the claim TTL of `common::config`, 2 s, would
    // not: its key would expire, rightly, while its holder cannot refresh it).
    let start = |name: &str| {
        let probe = common::Probe::new(name);
        let config = ClusterConfig::new(redis.url(), name)
            .with_claim_ttl(Duration::from_secs(30))
            .with_refresh_interval(Duration::from_secs(10))
            .with_node_ttl(Duration::from_secs(2))
            .with_redis_timeout(Duration::from_secs(1));
        let (cluster, events) = Cluster::start(config, probe.clone()).expect("start");
        common::Node {
            cluster,
            events,
            probe,
        }
    };
    let a = start("a");
    let b = start("b");
    common::wait_until(Duration::from_secs(10), || {
        a.cluster.is_connected() && b.cluster.is_connected()
    })
    .await;
    let control = redis.master_of("{ocpp}:since");
    let identity = (0..100)
        .map(|i| format!("CP-{i}"))
        .find(|id| redis.master_of(&format!("ocpp:cp:{id}")) != control)
        .expect("a claim on another master");
    let claim = b.cluster.claim(&identity).await;
    assert!(claim.epoch.is_some());
    let expected = Ok(format!(r#"{{"node":"b","identity":"{identity}"}}"#));
    let call = || {
        a.cluster
            .call(&identity, "Reset", "{}", Duration::from_secs(5))
    };
    assert_eq!(call().await, expected);
    let victim = redis.master_of(&format!("ocpp:cp:{identity}"));
    // The replica must have the claim before its master dies (asynchronous replication): a
    // fixed wait of 500 ms was not always enough with the other tests' clusters running (CI
    // saw `not_connected`: the promoted replica had no claim).
    tokio::task::block_in_place(|| redis.wait_replicated(victim));

    let killed = std::time::Instant::now();
    tokio::task::block_in_place(|| redis.kill(victim));
    let ok_after = killed.elapsed();
    let promoted = redis.master_of(&format!("ocpp:cp:{identity}"));
    assert_ne!(promoted, victim);
    let mut answers = Vec::new();
    loop {
        let answer = call().await;
        assert_ne!(
            answer,
            Err(CallFailure::NotConnected),
            "not_connected for a connected charge point: {answers:?}"
        );
        if answer == expected {
            break;
        }
        answers.push(answer);
        assert!(
            killed.elapsed() < Duration::from_secs(30),
            "commands do not pass after the failover: {answers:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!(
        "cluster ok {ok_after:?} after the kill; commands pass {:?} after it; before: {answers:?}",
        killed.elapsed()
    );
    assert!(
        b.cluster.refresh().await.expect("refresh").is_empty(),
        "still held"
    );
    assert!(b.cluster.holds(&identity).is_some());
}

/// Issue 38: on Redis Cluster too, a refresh round sends its claims in batches, one pipeline
/// per master (per batch of 1,000), not one call per claim: 2,500 claims over three masters
/// in about three round trips, every `refresh.lua` run (2,500 `EVALSHA`s) but read by the
/// masters in a few dozen socket reads, each claim's TTL extended. Then slots move (a
/// resharding) behind the node's slot map: the next round still refreshes every claim (the
/// batches that meet `MOVED` are grouped again by a new look at the slots, not sent claim by
/// claim: that stalled the `redis` crate's connection on a loaded machine), nothing is lost,
/// and the round after that is back to one pipeline per master.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_round_sends_one_pipeline_per_master_and_follows_moved_slots() {
    use futures_util::StreamExt;

    const CLAIMS: usize = 2_500;
    let redis = RedisCluster::start();
    // No round of its own during the test (the interval), and long TTLs.
    let config = ClusterConfig::new(redis.url(), "a")
        .with_claim_ttl(Duration::from_secs(300))
        .with_refresh_interval(Duration::from_secs(250))
        .with_node_ttl(Duration::from_secs(30))
        .with_redis_timeout(Duration::from_secs(2));
    assert_eq!(config.refresh_batch, 1000);
    let (cluster, _events) = Cluster::start(config, common::Probe::new("a")).expect("start");
    common::wait_until(Duration::from_secs(10), || cluster.is_connected()).await;
    cluster.refresh().await.expect("a first round");
    let claims: Vec<_> = futures_util::stream::iter(0..CLAIMS)
        .map(|i| {
            let cluster = &cluster;
            async move { cluster.claim(&format!("cp{i}")).await }
        })
        .buffer_unordered(128)
        .collect()
        .await;
    assert!(
        claims.iter().all(|claim| claim.epoch.is_some()),
        "every claim registered"
    );
    let expires = |identity: &str| -> u64 {
        let key = format!("ocpp:cp:{identity}");
        let reply =
            tokio::task::block_in_place(|| redis.query_key(&key, &["HGET", &key, "expires_ms"]));
        reply
            .as_ref()
            .and_then(|r| r.text())
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("{key}: {reply:?}"))
    };
    // Claims on every master; among them, the ones whose slots move.
    let sample: Vec<String> = (0..CLAIMS).step_by(97).map(|i| format!("cp{i}")).collect();
    let moved: Vec<String> = (0..MASTERS)
        .map(|m| {
            let port = redis.ports[m];
            (0..CLAIMS)
                .map(|i| format!("cp{i}"))
                .find(|id| redis.master_of(&format!("ocpp:cp:{id}")) == port)
                .expect("a claim on every master")
        })
        .collect();
    let round = |name: &'static str, after_resharding: bool| {
        let cluster = &cluster;
        let redis = &redis;
        let checked: Vec<String> = sample.iter().chain(&moved).cloned().collect();
        async move {
            let before: Vec<u64> = checked.iter().map(|id| expires(id)).collect();
            tokio::time::sleep(Duration::from_millis(5)).await;
            let counts = || {
                tokio::task::block_in_place(|| {
                    (
                        redis.info_sum("commandstats", "cmdstat_evalsha", Some("calls")),
                        redis.info_sum("stats", "total_reads_processed", None),
                    )
                })
            };
            let (evalsha, reads) = counts();
            let begin = std::time::Instant::now();
            let lost = match cluster.refresh().await {
                Ok(lost) => lost,
                // Right after a resharding, the `redis` crate's connection can stall while it
                // refreshes its own slot map (seen about one run in four, and twice in a row on
                // a loaded CI machine, with calls one by one as before issue 38 too): a round
                // fails on the timeout, and a later one refreshes what it could not.
                Err(e) if after_resharding => {
                    eprintln!("{name}: the round failed ({e}) in {:?}", begin.elapsed());
                    let mut attempts = 1;
                    loop {
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        match cluster.refresh().await {
                            Ok(lost) => break lost,
                            Err(e) if attempts < 20 => {
                                attempts += 1;
                                eprintln!("{name}: round {attempts} failed too ({e})");
                            }
                            Err(e) => panic!("{name}: {attempts} rounds failed: {e}"),
                        }
                    }
                }
                Err(e) => panic!("{name}: the round failed: {e}"),
            };
            let took = begin.elapsed();
            let (evalsha_after, reads_after) = counts();
            let (scripts, socket_reads) = (evalsha_after - evalsha, reads_after - reads);
            eprintln!(
                "{name}: {CLAIMS} claims on {MASTERS} masters refreshed in {took:?}: \
                 {scripts} EVALSHA, {socket_reads} socket reads by the masters"
            );
            assert!(lost.is_empty(), "{name}: nothing lost: {lost:?}");
            assert!(
                scripts >= CLAIMS as u64,
                "{name}: every claim's refresh.lua ran: {scripts} EVALSHA"
            );
            for (id, before) in checked.iter().zip(before) {
                assert!(expires(id) > before, "{name}: {id} refreshed");
                assert!(cluster.holds(id).is_some(), "{name}: {id} held");
            }
            socket_reads
        }
    };
    // The first round loads refresh.lua on the masters (NOSCRIPT, then one more pipeline).
    for name in ["round 1", "round 2"] {
        let socket_reads = round(name, false).await;
        // One call per claim (before issue 38, 64 at once over the crate's multiplexed
        // connections): 305 to 689 reads for 2,500 refreshes; one pipeline per master: 35,
        // up to 65 in a round that meets NOSCRIPT.
        assert!(
            socket_reads < 150,
            "{name}: {socket_reads} reads of sockets for {CLAIMS} refreshes"
        );
    }
    // A resharding the node's slot map has not seen: one claim's slot of each master moves
    // to the next master.
    let epochs: Vec<_> = moved
        .iter()
        .map(|id| cluster.holds(id).and_then(|c| c.epoch))
        .collect();
    for (m, id) in moved.iter().enumerate() {
        let to = redis.ports[(m + 1) % MASTERS];
        tokio::task::block_in_place(|| redis.move_slot(&format!("ocpp:cp:{id}"), to));
    }
    let socket_reads = round("after the slots moved", true).await;
    // Claim by claim (before the second pass): 192 to 228 reads; regrouped: 107 to 112.
    assert!(
        socket_reads < 180,
        "after the slots moved: {socket_reads} reads of sockets for {CLAIMS} refreshes"
    );
    for (id, epoch) in moved.iter().zip(epochs) {
        assert_eq!(
            cluster.holds(id).and_then(|c| c.epoch),
            epoch,
            "{id} held under its epoch"
        );
    }
    let socket_reads = round("the round after", false).await;
    assert!(
        socket_reads < 150,
        "the round after: {socket_reads} reads of sockets for {CLAIMS} refreshes"
    );
}

/// What a Redis Cluster cannot do is refused when the node starts, not when it runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_redis_cluster_cannot_do_is_refused_at_startup() {
    let executor = common::Probe::new("x");
    for (url, prefix) in [
        ("redis-cluster://127.0.0.1:7000/1", "ocpp"),
        ("redis-cluster://127.0.0.1:7000?db=1", "ocpp"),
        ("redis-cluster://127.0.0.1:7000", "a{b}"),
    ] {
        let config = ClusterConfig::new(url, "a").with_key_prefix(prefix);
        match Cluster::start(config, executor.clone()) {
            Err(ClusterError::Config(why)) => eprintln!("{url} {prefix}: {why}"),
            other => panic!("{url} {prefix}: {:?}", other.map(|_| ())),
        }
    }
}
