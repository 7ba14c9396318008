//! Refresh rounds, claims and releases on one Redis (issue 38): a batch of claims is refreshed
//! by one `refresh.lua` call, which answers each claim as a call of its own would (PROTOCOL.md
//! 4.2 and 6.3); the claims and releases that wait together go in one `claim.lua` or
//! `release.lua` call (6.2.1). Real redis-server on loopback. The cost of both ways, measured in one run:
//! `cargo test -p ocpp-cluster --test refresh -- --ignored --nocapture`.

mod common;

use std::time::{Duration, Instant};

use common::{info_field, wait_until, Probe, RedisServer};
use futures_util::StreamExt;
use ocpp_cluster::{
    scripts, BridgeOutput, Cluster, ClusterBridge, ClusterConfig, ClusterEvent, ClusterEvents,
};

/// A node that refreshes only when the test asks (a round a minute, after the rounds at its
/// start, which this lets pass), in batches of `batch` claims.
async fn quiet_node(redis: &RedisServer, name: &str, batch: usize) -> (Cluster, ClusterEvents) {
    let config = ClusterConfig::new(redis.url(), name)
        .with_claim_ttl(Duration::from_secs(180))
        .with_node_ttl(Duration::from_secs(180))
        .with_refresh_interval(Duration::from_secs(60))
        .with_redis_timeout(Duration::from_secs(3))
        .with_refresh_batch(batch);
    let (cluster, events) = Cluster::start(config, Probe::new(name)).expect("start");
    wait_until(Duration::from_secs(5), || cluster.is_connected()).await;
    // Waits for the rounds at start and after the subscription (a round holds the round lock).
    cluster.refresh().await.expect("a first round");
    (cluster, events)
}

/// A field of `INFO <section>` (`name:value`), or a part of one (`name:a=1,b=2`: `b`).
async fn info(
    redis: &mut redis::aio::MultiplexedConnection,
    section: &str,
    field: &str,
    part: Option<&str>,
) -> f64 {
    let text: String = redis::cmd("INFO")
        .arg(section)
        .query_async(redis)
        .await
        .expect("INFO");
    info_field(&text, field, part).parse().expect("a number")
}

/// `EVALSHA` calls Redis ran so far.
async fn evalsha_calls(redis: &mut redis::aio::MultiplexedConnection) -> u64 {
    info(redis, "commandstats", "cmdstat_evalsha", Some("calls")).await as u64
}

async fn hget(redis: &mut redis::aio::MultiplexedConnection, key: &str, field: &str) -> String {
    redis::cmd("HGET")
        .arg(key)
        .arg(field)
        .query_async::<Option<String>>(redis)
        .await
        .expect("HGET")
        .unwrap_or_default()
}

async fn hset(redis: &mut redis::aio::MultiplexedConnection, key: &str, node: &str, epoch: u64) {
    let _: i64 = redis::cmd("HSET")
        .arg(key)
        .arg("node")
        .arg(node)
        .arg("epoch")
        .arg(epoch)
        .query_async(redis)
        .await
        .expect("HSET");
}

/// `SUBSCRIBE`s to `node`'s inbox; its messages.
async fn inbox_of(
    redis: &RedisServer,
    node: &str,
) -> impl futures_util::Stream<Item = redis::Msg> + use<> {
    let client = redis::Client::open(redis.url()).expect("client");
    let mut inbox = client.get_async_pubsub().await.expect("pubsub");
    inbox
        .subscribe(format!("ocpp:inbox:{node}"))
        .await
        .expect("SUBSCRIBE");
    inbox.into_on_message()
}

/// 2,000 connections claim at once: their claims go in a few `claim.lua` calls (each carries
/// what waited while the one before ran: how many depends on how fast they come and Redis
/// answers; at most 100 here, 23 in a debug build), not 2,000, and each is answered as by a call of its
/// own: an epoch of its own, the key this node's, and the 20 that another node held taken
/// over with a `superseded` message each on that node's inbox. Then they all leave at once:
/// a few `release.lua` calls; each claim a tombstone, but for the 20 another node took back
/// meanwhile (compare-and-delete, claim by claim).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_and_releases_that_wait_together_go_in_one_call() {
    const CLAIMS: usize = 2_000;
    let redis = RedisServer::start();
    let (a, _events) = quiet_node(&redis, "a", 1_000).await;
    let mut raw = redis.connection().await;
    let identities: Vec<String> = (0..CLAIMS).map(|i| format!("CP-{i}")).collect();
    let taken: Vec<&String> = identities.iter().step_by(100).collect();
    for (i, identity) in taken.iter().enumerate() {
        hset(&mut raw, &format!("ocpp:cp:{identity}"), "b", 7 + i as u64).await;
    }
    let mut inbox = inbox_of(&redis, "b").await;
    // Loads claim.lua into Redis's script cache (a first EVALSHA answered NOSCRIPT).
    let warm = a.claim("WARM").await;
    a.release(&warm.identity, warm.ticket)
        .await
        .expect("release");

    let calls = evalsha_calls(&mut raw).await;
    let claims =
        futures_util::future::join_all(identities.iter().map(|identity| a.claim(identity))).await;
    let claim_calls = evalsha_calls(&mut raw).await - calls;

    assert!(
        (2..=100).contains(&claim_calls),
        "{CLAIMS} claims in {claim_calls} claim.lua calls"
    );
    let mut epochs: Vec<u64> = claims
        .iter()
        .map(|c| c.epoch.expect("registered"))
        .collect();
    epochs.sort_unstable();
    epochs.dedup();
    assert_eq!(epochs.len(), CLAIMS, "an epoch of its own for each claim");
    for claim in claims.iter().step_by(7) {
        let key = format!("ocpp:cp:{}", claim.identity);
        assert_eq!(hget(&mut raw, &key, "node").await, "a");
        assert_eq!(
            hget(&mut raw, &key, "epoch").await,
            claim.epoch.unwrap().to_string()
        );
    }
    let mut told = std::collections::HashSet::new();
    while told.len() < taken.len() {
        let message = tokio::time::timeout(Duration::from_secs(5), inbox.next())
            .await
            .expect("a superseded message for each claim taken over")
            .expect("the inbox");
        let payload: serde_json::Value =
            serde_json::from_slice(message.get_payload_bytes()).expect("JSON");
        assert_eq!(payload["type"], "superseded");
        assert_eq!(payload["by_node"], "a");
        told.insert(payload["identity"].as_str().expect("identity").to_owned());
    }
    assert!(taken
        .iter()
        .all(|identity| told.contains(identity.as_str())));

    // Another node takes 20 back (a newer claim) before they leave.
    for identity in &taken {
        let key = format!("ocpp:cp:{identity}");
        let epoch: u64 = hget(&mut raw, &key, "epoch").await.parse().expect("epoch");
        hset(&mut raw, &key, "b", epoch + 1).await;
    }
    let calls = evalsha_calls(&mut raw).await;
    let released = futures_util::future::join_all(
        claims
            .iter()
            .map(|claim| a.release(&claim.identity, claim.ticket)),
    )
    .await;
    let release_calls = evalsha_calls(&mut raw).await - calls;

    assert!(
        (1..=100).contains(&release_calls),
        "{CLAIMS} releases in {release_calls} release.lua calls"
    );
    for (claim, released) in claims.iter().zip(released) {
        let key = format!("ocpp:cp:{}", claim.identity);
        let node = hget(&mut raw, &key, "node").await;
        if taken.contains(&&claim.identity) {
            assert!(!released.expect("answered"), "{}: b's now", claim.identity);
            assert_eq!(node, "b");
        } else {
            assert!(released.expect("answered"), "{}", claim.identity);
            assert_eq!(node, "", "{}: a tombstone", claim.identity);
        }
    }
    assert!(a.claims().is_empty());
}

/// A drain releases 3,000 claims in `release.lua` calls of 1,000 (the batch), not 3,000.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_releases_its_claims_in_batches() {
    let redis = RedisServer::start();
    let (a, _events) = quiet_node(&redis, "a", 1_000).await;
    let mut raw = redis.connection().await;
    let identities: Vec<String> = (0..3_000).map(|i| format!("CP-{i}")).collect();
    futures_util::future::join_all(identities.iter().map(|identity| a.claim(identity))).await;
    let warm = a.claim("WARM").await;
    a.release(&warm.identity, warm.ticket)
        .await
        .expect("release");
    // A round that may have started meanwhile ends (the node's rounds hold one lock).
    a.refresh().await.expect("a round");

    let calls = evalsha_calls(&mut raw).await;
    let released = a.drain().await.expect("drained");
    let calls = evalsha_calls(&mut raw).await - calls;

    assert_eq!(released, 3_000);
    assert_eq!(calls, 3, "3,000 releases in batches of 1,000");
    for identity in identities.iter().step_by(11) {
        assert_eq!(
            hget(&mut raw, &format!("ocpp:cp:{identity}"), "node").await,
            ""
        );
    }
}

/// A mio loop's storm through the bridge: 10,000 charge points connect at once, then leave at
/// once, more than the 4,096 requests its queue holds. No claim and no release is refused for
/// want of room (before: the claims past the queue stayed pending until a refresh round, the
/// releases were refused with `Full` and left to expire with their TTL); each claim is
/// registered and each release done in Redis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bridge_takes_a_storm_of_claims_and_releases_past_its_request_queue() {
    const STORM: usize = 10_000;
    let redis = RedisServer::start();
    let config = ClusterConfig::new(redis.url(), "m")
        .with_claim_ttl(Duration::from_secs(180))
        .with_redis_timeout(Duration::from_secs(3));
    let bridge = ClusterBridge::spawn(config, Box::new(|| {})).expect("spawn");
    let mut raw = redis.connection().await;
    // The "mio loop": a plain thread that claims, waits for every registration, releases.
    let mio = std::thread::spawn(move || {
        let outputs = |bridge: &ClusterBridge, want: usize| {
            let mut outputs = Vec::new();
            let deadline = Instant::now() + Duration::from_secs(60);
            while outputs.len() < want && Instant::now() < deadline {
                match bridge.try_recv() {
                    Some(output @ BridgeOutput::Registered { .. })
                    | Some(output @ BridgeOutput::Released { .. }) => outputs.push(output),
                    Some(_) => {}
                    None => std::thread::sleep(Duration::from_millis(2)),
                }
            }
            outputs
        };
        // Connected first: a claim made before the node reaches Redis is left to a round.
        // (The round that follows the subscription may take some of the storm's claims: the
        // bridge's registration of each waits for the round's, which once answered
        // `epoch: None` as soon as another of the round's claims settled.)
        let deadline = Instant::now() + Duration::from_secs(30);
        while !bridge.is_connected() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(bridge.is_connected(), "the bridge reached Redis");
        let tickets: Vec<_> = (0..STORM)
            .map(|i| bridge.claim(&format!("CP-{i}")))
            .collect();
        let registered = outputs(&bridge, STORM);
        let released: Vec<_> = tickets
            .iter()
            .enumerate()
            .map(|(i, ticket)| bridge.release(&format!("CP-{i}"), *ticket))
            .collect();
        let done = outputs(&bridge, STORM);
        (bridge, registered, released, done)
    });
    let (bridge, registered, released, done) = tokio::task::spawn_blocking(move || mio.join())
        .await
        .expect("join")
        .expect("the loop");

    let epochs = registered
        .iter()
        .filter(|o| matches!(o, BridgeOutput::Registered { epoch: Some(_), .. }))
        .count();
    assert_eq!(epochs, STORM, "every claim registered with an epoch");
    let refused = released.iter().filter(|r| r.is_err()).count();
    assert_eq!(refused, 0, "no release refused");
    let in_redis = done
        .iter()
        .filter(|o| {
            matches!(
                o,
                BridgeOutput::Released {
                    result: Ok(true),
                    ..
                }
            )
        })
        .count();
    assert_eq!(in_redis, STORM, "every release done in Redis");
    for i in (0..STORM).step_by(97) {
        assert_eq!(hget(&mut raw, &format!("ocpp:cp:CP-{i}"), "node").await, "");
    }
    // Dropped on a thread without a runtime (as in the mio server): joins the cluster thread.
    std::thread::spawn(move || drop(bridge))
        .join()
        .expect("drop");
}

/// A round over claims in every state a refresh meets, in batches of 10: 29 claims are
/// refreshed by three `refresh.lua` calls (not 29), and each claim ends as a call of its own
/// would end it: held ones extended (an older epoch of this node's raised to the claim's),
/// a deleted key and one naming another node's older claim restored under the claim's own
/// epoch (that node told `superseded` on its inbox, by the script), a key naming a newer
/// claim, or its release, lost (the round and the events say so, the node forgets it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_refreshes_each_batch_in_one_script_call_with_every_outcome() {
    let redis = RedisServer::start();
    let (a, mut events) = quiet_node(&redis, "a", 10).await;
    let mut raw = redis.connection().await;
    let held: Vec<String> = (0..24).map(|i| format!("HELD-{i}")).collect();
    let special = ["RAISED", "GONE", "OLDER", "LOST", "RELEASED"];
    let mut epochs = std::collections::HashMap::new();
    for identity in held.iter().map(String::as_str).chain(special) {
        let claim = a.claim(identity).await;
        epochs.insert(identity, claim.epoch.expect("registered"));
    }
    let epoch = |identity: &str| epochs[identity];
    // The round that loads refresh.lua (and passes the claims registered meanwhile).
    assert!(a.refresh().await.expect("a round").is_empty());

    hset(&mut raw, "ocpp:cp:RAISED", "a", epoch("RAISED") - 1).await;
    let _: i64 = redis::cmd("DEL")
        .arg("ocpp:cp:GONE")
        .query_async(&mut raw)
        .await
        .expect("DEL");
    hset(&mut raw, "ocpp:cp:OLDER", "b", epoch("OLDER") - 1).await;
    hset(&mut raw, "ocpp:cp:LOST", "b", epoch("LOST") + 1000).await;
    hset(&mut raw, "ocpp:cp:RELEASED", "", epoch("RELEASED") + 1).await;
    let expires_before = hget(&mut raw, "ocpp:cp:HELD-0", "expires_ms").await;
    let client = redis::Client::open(redis.url()).expect("client");
    let mut inbox = client.get_async_pubsub().await.expect("pubsub");
    inbox.subscribe("ocpp:inbox:b").await.expect("SUBSCRIBE");
    let mut inbox = inbox.into_on_message();
    tokio::time::sleep(Duration::from_millis(5)).await;

    let calls = evalsha_calls(&mut raw).await;
    let mut lost = a.refresh().await.expect("the round");
    let calls = evalsha_calls(&mut raw).await - calls;

    // Three refresh.lua calls (29 claims, batches of 10) and the round's two announcements;
    // a call per claim would be 31.
    assert_eq!(calls, 3 + 2, "EVALSHA calls of the round");
    for identity in &held {
        let key = format!("ocpp:cp:{identity}");
        assert_eq!(hget(&mut raw, &key, "node").await, "a", "{identity}");
        assert_eq!(
            hget(&mut raw, &key, "epoch").await,
            epoch(identity).to_string()
        );
        assert_eq!(
            a.holds(identity).and_then(|c| c.epoch),
            Some(epoch(identity))
        );
    }
    let expires_after = hget(&mut raw, "ocpp:cp:HELD-0", "expires_ms").await;
    assert!(
        expires_after.parse::<u64>().unwrap() > expires_before.parse::<u64>().unwrap(),
        "held claims extended: {expires_before} then {expires_after}"
    );
    for identity in ["RAISED", "GONE", "OLDER"] {
        let key = format!("ocpp:cp:{identity}");
        assert_eq!(hget(&mut raw, &key, "node").await, "a", "{identity} is a's");
        assert_eq!(
            hget(&mut raw, &key, "epoch").await,
            epoch(identity).to_string(),
            "{identity} under its own epoch"
        );
        assert_eq!(
            a.holds(identity).and_then(|c| c.epoch),
            Some(epoch(identity))
        );
    }
    let told = tokio::time::timeout(Duration::from_secs(2), inbox.next())
        .await
        .expect("b told within 2 s")
        .expect("a message");
    let told: serde_json::Value =
        serde_json::from_str(&told.get_payload::<String>().expect("text")).expect("JSON");
    assert_eq!(
        told,
        serde_json::json!({
            "type": "superseded", "identity": "OLDER", "epoch": epoch("OLDER") - 1,
            "by_node": "a", "by_epoch": epoch("OLDER"),
        })
    );

    lost.sort_by(|x, y| x.identity.cmp(&y.identity));
    let named: Vec<_> = lost
        .iter()
        .map(|l| (l.identity.as_str(), l.by_node.as_str(), l.by_epoch))
        .collect();
    assert_eq!(
        named,
        [
            ("LOST", "b", epoch("LOST") + 1000),
            ("RELEASED", "", epoch("RELEASED") + 1)
        ]
    );
    for identity in ["LOST", "RELEASED"] {
        assert!(a.holds(identity).is_none(), "{identity} forgotten");
        match tokio::time::timeout(Duration::from_secs(2), events.recv()).await {
            Ok(Some(ClusterEvent::Superseded(_))) => {}
            other => panic!("no Superseded event: {other:?}"),
        }
    }
    assert_eq!(
        hget(&mut raw, "ocpp:cp:LOST", "node").await,
        "b",
        "left as it was"
    );
}

/// A claim key that holds no claim (not a hash, which no node writes) fails its own claim's
/// refresh, not its batch's: the round fails (so the next one runs it again), the other
/// claims of the batch are extended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_that_is_not_a_claim_fails_its_claim_alone() {
    let redis = RedisServer::start();
    let (a, _events) = quiet_node(&redis, "a", 1000).await;
    let mut raw = redis.connection().await;
    for identity in ["CP-1", "CP-2", "CP-3"] {
        a.claim(identity).await.epoch.expect("registered");
    }
    let _: () = redis::cmd("SET")
        .arg("ocpp:cp:CP-2")
        .arg("not a claim")
        .query_async(&mut raw)
        .await
        .expect("SET");
    let before = [
        hget(&mut raw, "ocpp:cp:CP-1", "expires_ms").await,
        hget(&mut raw, "ocpp:cp:CP-3", "expires_ms").await,
    ];
    tokio::time::sleep(Duration::from_millis(5)).await;
    let error = a.refresh().await.expect_err("CP-2 fails");
    assert!(error.to_string().contains("CP-2"), "{error}");
    let after = [
        hget(&mut raw, "ocpp:cp:CP-1", "expires_ms").await,
        hget(&mut raw, "ocpp:cp:CP-3", "expires_ms").await,
    ];
    for (before, after) in before.iter().zip(&after) {
        assert!(
            after.parse::<u64>().unwrap() > before.parse::<u64>().unwrap(),
            "the others extended: {before} then {after}"
        );
    }
    assert!(a.holds("CP-2").is_some(), "CP-2 stays as it was");
}

/// Claim keys in every state refresh.lua meets, under `prefix`, each with the epoch this node
/// ("a") refreshes it under: 10.
async fn states(redis: &mut redis::aio::MultiplexedConnection, prefix: &str) -> Vec<String> {
    let key = |name: &str| format!("{prefix}:cp:{name}");
    hset(redis, &key("held"), "a", 10).await;
    hset(redis, &key("held-older"), "a", 8).await;
    hset(redis, &key("held-newer"), "a", 12).await;
    hset(redis, &key("older-other"), "b", 9).await;
    hset(redis, &key("older-release"), "", 9).await;
    hset(redis, &key("newer-other"), "b", 11).await;
    hset(redis, &key("newer-release"), "", 11).await;
    let _: () = redis::cmd("SET")
        .arg(key("not-a-claim"))
        .arg("x")
        .query_async(redis)
        .await
        .expect("SET");
    [
        "held",
        "held-older",
        "held-newer",
        "gone",
        "older-other",
        "older-release",
        "newer-other",
        "newer-release",
        "not-a-claim",
    ]
    .iter()
    .map(|name| key(name))
    .collect()
}

/// `refresh.lua` for this node's claims `keys` (epoch 10 each) in one call, on one Redis.
fn refresh_call(keys: &[String], prefix: &str) -> redis::Cmd {
    let mut call = redis::cmd("EVAL");
    call.arg(scripts::REFRESH).arg(keys.len() + 1).arg(keys);
    call.arg(format!("{prefix}:since"))
        .arg("a")
        .arg(180_000)
        .arg(format!("{prefix}:inbox:"));
    for key in keys {
        call.arg(10).arg("ocpp1.6").arg(key.rsplit(':').next());
    }
    call
}

/// The script itself: one call for nine claims in every state answers each as nine calls of
/// one claim do, and leaves the same claims in Redis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_call_for_many_claims_answers_as_a_call_per_claim() {
    let redis = RedisServer::start();
    let mut raw = redis.connection().await;
    let together = states(&mut raw, "t").await;
    let answers: Vec<Vec<String>> = refresh_call(&together, "t")
        .query_async(&mut raw)
        .await
        .expect("refresh.lua");
    let alone = states(&mut raw, "a").await;
    let mut one_by_one = Vec::new();
    for key in &alone {
        let mut answer: Vec<Vec<String>> = refresh_call(std::slice::from_ref(key), "a")
            .query_async(&mut raw)
            .await
            .expect("refresh.lua");
        assert_eq!(answer.len(), 1, "one answer per claim");
        one_by_one.push(answer.remove(0));
    }
    let expected: Vec<Vec<&str>> = vec![
        vec!["held", "10"],
        vec!["held", "10"],
        vec!["held", "12"],
        vec!["restored", "10", "", "0"],
        vec!["restored", "10", "b", "9"],
        vec!["restored", "10", "", "9"],
        vec!["lost", "b", "11"],
        vec!["lost", "", "11"],
    ];
    assert_eq!(answers[..8], expected);
    assert_eq!(one_by_one[..8], expected);
    assert_eq!(answers[8][0], "error", "{:?}", answers[8]);
    assert_eq!(one_by_one[8][0], "error", "{:?}", one_by_one[8]);
    for (t, a) in together.iter().zip(&alone).take(8) {
        for field in ["node", "epoch", "version"] {
            assert_eq!(
                hget(&mut raw, t, field).await,
                hget(&mut raw, a, field).await,
                "{t} {field}"
            );
        }
    }
}

/// Redis's CPU per refreshed claim, the way before issue 38 (a pipeline of 1,000 `EVALSHA`
/// calls of one claim each, as Redis Cluster still sends) against one call per batch of 1,000,
/// on one Redis in one run: 100,000 held claims, rounds of each way alternating. Redis's CPU
/// is `INFO cpu` (`used_cpu_user` + `used_cpu_sys`, all it did: reading, parsing, the scripts,
/// writing); `EVALSHA` time is `INFO commandstats` (the scripts alone).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: cargo test -p ocpp-cluster --test refresh -- --ignored --nocapture"]
async fn refresh_cost_in_redis_a_call_per_claim_against_a_call_per_batch() {
    const CLAIMS: usize = 100_000;
    const BATCH: usize = 1000;
    const ROUNDS: usize = 4;
    let redis = RedisServer::start();
    let mut raw = redis.connection().await;
    let identities: Vec<String> = (0..CLAIMS).map(|i| format!("CP-{i:06}")).collect();
    for chunk in identities.chunks(10_000) {
        let mut pipe = redis::pipe();
        for identity in chunk {
            let key = format!("ocpp:cp:{identity}");
            pipe.cmd("HSET")
                .arg(&key)
                .arg(&[
                    ("node", "bench"),
                    ("epoch", "7"),
                    ("expires_ms", "0"),
                    ("version", "ocpp1.6"),
                    ("claimed_ms", "0"),
                ])
                .ignore()
                .cmd("PEXPIRE")
                .arg(&key)
                .arg(360_000)
                .ignore();
        }
        let _: () = pipe.query_async(&mut raw).await.expect("claims");
    }
    let script = redis::Script::new(scripts::REFRESH);
    script.load_async(&mut raw).await.expect("SCRIPT LOAD");
    let call = |identities: &[String]| {
        let mut call = script.prepare_invoke();
        call.arg("bench").arg(180_000).arg("ocpp:inbox:");
        for identity in identities {
            call.key(format!("ocpp:cp:{identity}"))
                .arg(7)
                .arg("ocpp1.6")
                .arg(identity);
        }
        call.key("ocpp:since");
        call
    };
    let ways = ["a call per claim", "a call per batch"];
    // Per way, each round's Redis CPU and EVALSHA time, in microseconds per claim.
    let mut cpu_per_claim = [Vec::new(), Vec::new()];
    let mut evalsha_per_claim = [Vec::new(), Vec::new()];
    for round in 0..2 * ROUNDS {
        let way = round % 2;
        let cpu = info(&mut raw, "cpu", "used_cpu_user", None).await
            + info(&mut raw, "cpu", "used_cpu_sys", None).await;
        let usec = info(&mut raw, "commandstats", "cmdstat_evalsha", Some("usec")).await;
        let started = Instant::now();
        for batch in identities.chunks(BATCH) {
            let mut pipe = redis::pipe();
            if way == 1 {
                pipe.invoke_script(&call(batch));
            } else {
                for identity in batch {
                    pipe.invoke_script(&call(std::slice::from_ref(identity)));
                }
            }
            let answers: Vec<Vec<Vec<String>>> =
                pipe.query_async(&mut raw).await.expect("refresh.lua");
            let held = answers.iter().flatten().filter(|a| a[0] == "held").count();
            assert_eq!(held, batch.len(), "every claim held");
        }
        let took = started.elapsed();
        let cpu = info(&mut raw, "cpu", "used_cpu_user", None).await
            + info(&mut raw, "cpu", "used_cpu_sys", None).await
            - cpu;
        let usec = info(&mut raw, "commandstats", "cmdstat_evalsha", Some("usec")).await - usec;
        let (cpu, usec) = (cpu * 1e6 / CLAIMS as f64, usec / CLAIMS as f64);
        eprintln!(
            "round {}: {}: Redis CPU {cpu:.2} us/claim, EVALSHA {usec:.2} us/claim, round {took:?}",
            round + 1,
            ways[way],
        );
        cpu_per_claim[way].push(cpu);
        evalsha_per_claim[way].push(usec);
    }
    let mean = |rounds: &[f64]| rounds.iter().sum::<f64>() / rounds.len() as f64;
    let [old_cpu, new_cpu] = cpu_per_claim.map(|rounds| mean(&rounds));
    let [old_usec, new_usec] = evalsha_per_claim.map(|rounds| mean(&rounds));
    eprintln!(
        "{CLAIMS} claims, batches of {BATCH}, {ROUNDS} rounds each: Redis CPU per claim \
         {old_cpu:.2} us (a call per claim) vs {new_cpu:.2} us (a call per batch), \
         {:.1}x; EVALSHA per claim {old_usec:.2} vs {new_usec:.2} us, {:.1}x; one call of \
         {BATCH} claims: {:.1} ms of EVALSHA",
        old_cpu / new_cpu,
        old_usec / new_usec,
        new_usec * BATCH as f64 / 1000.0,
    );
    assert!(new_cpu < old_cpu, "a call per batch costs Redis less");
}
