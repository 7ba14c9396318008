//! The cluster protocol against a real redis-server on loopback (each test starts its own).

mod common;

use std::time::{Duration, Instant};

use common::{node, scenarios, wait_until, RedisServer};
use futures_util::StreamExt;
use ocpp_cluster::{CallFailure, ClusterEvent, LostClaim};

/// A command's timeout where the test is not about timeouts: generous, since an answer that
/// comes returns at once whatever the limit (a loaded CI machine must not turn it into Timeout).
const CALL: Duration = Duration::from_secs(10);

async fn next_event(events: &mut ocpp_cluster::ClusterEvents, within: Duration) -> LostClaim {
    match tokio::time::timeout(within, events.recv()).await {
        Ok(Some(ClusterEvent::Superseded(s))) => s,
        other => panic!("no takeover event within {within:?}: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_on_one_node_reaches_the_holder_and_its_answer_comes_back() {
    scenarios::command_reaches_the_holder_and_its_answer_comes_back(&RedisServer::start()).await;
}

/// Issue 35: a request of another OCPP version than the charge point's connection is
/// `WrongVersion` (409, not sent) on every path: on the holder, and routed from another node;
/// one without a version is decoded by the holder as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_of_another_version_is_wrong_version_whichever_node_sends_it() {
    use ocpp_proto::OcppVersion;
    let redis = RedisServer::start();
    let a = node(&redis, "a").await;
    let b = node(&redis, "b").await;
    let claim = b.cluster.claim_as("CP-1", Some(OcppVersion::V1_6)).await;
    assert!(claim.epoch.is_some(), "registered");
    let payload = r#"{"type":"Immediate"}"#;
    for from in [&a, &b] {
        let answer = from
            .cluster
            .call_as("CP-1", Some(OcppVersion::V2_0_1), "Reset", payload, CALL)
            .await;
        assert_eq!(
            answer,
            Err(CallFailure::WrongVersion),
            "from {}",
            from.probe.node
        );
    }
    assert_eq!(b.probe.total(), 0, "not sent");
    // Its own version, or none: sent.
    for version in [Some(OcppVersion::V1_6), None] {
        let answer = a
            .cluster
            .call_as("CP-1", version, "Reset", r#"{"type":"Soft"}"#, CALL)
            .await;
        assert_eq!(answer, Ok(r#"{"node":"b","identity":"CP-1"}"#.to_owned()));
    }
    assert_eq!(b.probe.total(), 2);
    // A holder that does not record the version decodes the payload itself.
    let unrecorded = b.cluster.claim("CP-2").await;
    assert!(unrecorded.epoch.is_some(), "registered");
    let answer = a
        .cluster
        .call_as("CP-2", Some(OcppVersion::V2_0_1), "Reset", payload, CALL)
        .await;
    assert_eq!(answer, Ok(r#"{"node":"b","identity":"CP-2"}"#.to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_newest_claim_wins_and_the_old_node_hears_it_at_once() {
    scenarios::newest_claim_wins_and_the_old_node_hears_it_at_once(&RedisServer::start()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inbox_stays_subscribed_across_its_pings() {
    let redis = RedisServer::start();
    let a = node(&redis, "a").await;
    for _ in 0..25 {
        assert!(a.cluster.is_connected());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Issue 38: a busy Redis is not a dead one. A script that holds Redis for eight times the
/// Redis timeout (longer than the ping interval, so a ping waits in it) (as a long queue of other nodes' scripts did at a million charge points)
/// delays the inbox's ping but does not lose the inbox: before, the ping was cut at the Redis
/// timeout, every node dropped its inbox, subscribed again and ran a refresh round, which made
/// Redis busier still. A command routed through the inbox afterwards still arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_redis_delays_the_inbox_ping_without_losing_the_inbox() {
    let redis = RedisServer::start();
    let config = |name: &str| {
        common::config(&redis, name)
            .with_redis_timeout(Duration::from_millis(300))
            .with_node_ttl(Duration::from_secs(5))
            .with_claim_ttl(Duration::from_secs(10))
            .with_refresh_interval(Duration::from_secs(3))
    };
    let probe = common::Probe::new("a");
    let (a, _a_events) = ocpp_cluster::Cluster::start(config("a"), probe.clone()).expect("start");
    let (b, _b_events) =
        ocpp_cluster::Cluster::start(config("b"), common::Probe::new("b")).expect("start");
    wait_until(Duration::from_secs(5), || {
        a.is_connected() && b.is_connected()
    })
    .await;
    assert!(a.claim("CP-BUSY").await.epoch.is_some(), "registered");
    // The crate's default response timeout (500 ms) would give up on the script.
    let mut raw = redis::Client::open(redis.url())
        .expect("client")
        .get_multiplexed_async_connection_with_config(
            &redis::AsyncConnectionConfig::new().set_response_timeout(None),
        )
        .await
        .expect("connect");
    let busy = tokio::spawn(async move {
        // Redis runs nothing else for 2.5 s (a script is not interrupted before
        // lua-time-limit, 5 s).
        let script = "local t = redis.call('TIME') \
            local start = t[1] * 1000000 + t[2] \
            while true do \
              local n = redis.call('TIME') \
              if n[1] * 1000000 + n[2] - start > tonumber(ARGV[1]) * 1000 then return 1 end \
            end";
        let started = Instant::now();
        let done: i64 = redis::cmd("EVAL")
            .arg(script)
            .arg(0)
            .arg(2500)
            .query_async(&mut raw)
            .await
            .expect("the busy script");
        assert_eq!(done, 1);
        started.elapsed()
    });
    let watched = Instant::now();
    while watched.elapsed() < Duration::from_millis(3500) {
        assert!(
            a.is_connected(),
            "the inbox was dropped {:?} into a busy Redis",
            watched.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let held = busy.await.expect("busy task");
    assert!(
        held >= Duration::from_millis(2500),
        "Redis was held {held:?}"
    );
    assert!(b.is_connected());
    let answer = b.call("CP-BUSY", "Reset", "{}", CALL).await;
    assert_eq!(
        answer,
        Ok(r#"{"node":"a","identity":"CP-BUSY"}"#.to_owned())
    );
    assert_eq!(probe.total(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_reports_a_takeover_the_inbox_missed() {
    let redis = RedisServer::start();
    let mut a = node(&redis, "a").await;
    let claim = a.cluster.claim("CP-9").await;
    assert!(a.cluster.refresh().await.unwrap().is_empty(), "still ours");

    // Another node's claim whose message a did not get (written straight into Redis).
    let mut raw = redis.connection().await;
    let _: () = redis::cmd("HSET")
        .arg("ocpp:cp:CP-9")
        .arg(&["node", "elsewhere", "epoch", "99999999999999999"])
        .query_async(&mut raw)
        .await
        .unwrap();
    let lost = a.cluster.refresh().await.unwrap();
    assert_eq!(lost.len(), 1);
    assert_eq!(lost[0].identity, "CP-9");
    assert_eq!(lost[0].ticket, claim.ticket);
    assert_eq!(lost[0].by_node, "elsewhere");
    assert_eq!(lost[0].by_epoch, 99_999_999_999_999_999);
    let event = next_event(&mut a.events, Duration::from_secs(1)).await;
    assert_eq!(event, lost[0]);
    assert!(a.cluster.holds("CP-9").is_none());
    // The refresh did not extend the other node's claim (its key lives twice the claim TTL,
    // 2 s here, from a's claim).
    let ttl: i64 = redis::cmd("PTTL")
        .arg("ocpp:cp:CP-9")
        .query_async(&mut raw)
        .await
        .unwrap();
    assert!(ttl > 0 && ttl <= 4_000, "ttl {ttl}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_node_s_claims_expire_and_routing_follows_the_reconnection() {
    scenarios::killed_node_s_claims_expire_and_routing_follows_the_reconnection(
        &RedisServer::start(),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_redis_restart_the_nodes_register_again_and_commands_route() {
    let mut redis = RedisServer::start();
    let a = node(&redis, "a").await;
    let b = node(&redis, "b").await;
    let before = b.cluster.claim("CP-R").await;
    assert!(a.cluster.call("CP-R", "Reset", "{}", CALL).await.is_ok());

    redis.restart(); // same port, no data
    let restarted = Instant::now();
    // b's refresh round makes its claim again, under its own epoch.
    tokio::task::block_in_place(|| redis.wait_claimed("CP-R", "b"));
    assert_eq!(b.cluster.holds("CP-R").and_then(|c| c.epoch), before.epoch);
    // Until both inboxes are back, OwnerUnreachable (or a Timeout if a's inbox has not noticed
    // the restart yet); then the command routes.
    let answer = loop {
        let answer = a
            .cluster
            .call("CP-R", "Reset", "{}", Duration::from_millis(500))
            .await;
        match answer {
            Err(CallFailure::OwnerUnreachable) | Err(CallFailure::Timeout) => {
                assert!(
                    restarted.elapsed() < Duration::from_secs(6),
                    "no route after restart"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            answer => break answer,
        }
    };
    assert_eq!(answer, Ok(r#"{"node":"b","identity":"CP-R"}"#.to_owned()));
    assert_eq!(
        b.cluster.holds("CP-R").unwrap().ticket,
        before.ticket,
        "same local claim"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_redis_down_local_work_goes_on_and_remote_commands_fail_fast() {
    let mut redis = RedisServer::start();
    let a = node(&redis, "a").await;
    let b = node(&redis, "b").await;
    a.cluster.claim("CP-LOCAL").await;
    b.cluster.claim("CP-REMOTE").await;

    redis.stop();
    // Remote: OwnerUnreachable, fast (a correctness bound, not a benchmark).
    let started = Instant::now();
    let answer = a
        .cluster
        .call("CP-REMOTE", "Reset", "{}", Duration::from_secs(10))
        .await;
    assert_eq!(answer, Err(CallFailure::OwnerUnreachable));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    // Once the inbox noticed, immediately.
    wait_until(Duration::from_secs(4), || !a.cluster.is_connected()).await;
    let started = Instant::now();
    let answer = a
        .cluster
        .call("CP-REMOTE", "Reset", "{}", Duration::from_secs(10))
        .await;
    assert_eq!(answer, Err(CallFailure::OwnerUnreachable));
    assert!(started.elapsed() < Duration::from_millis(500));

    // Local: lookups and commands.
    assert!(a.cluster.holds("CP-LOCAL").is_some());
    let answer = a.cluster.call("CP-LOCAL", "Reset", "{}", CALL).await;
    assert_eq!(
        answer,
        Ok(r#"{"node":"a","identity":"CP-LOCAL"}"#.to_owned())
    );
    // A new connection is held at once, registered later; claim waits only a bounded time.
    let started = Instant::now();
    let claim = a.cluster.claim("CP-NEW").await;
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(claim.epoch, None);
    assert!(a.cluster.call("CP-NEW", "Reset", "{}", CALL).await.is_ok());
    assert!(
        a.cluster.refresh().await.is_err(),
        "the refresh reports Redis down"
    );

    // Redis back: the pending claim is registered and routes.
    redis.restart();
    wait_until(Duration::from_secs(5), || {
        // (a's inbox went down with Redis above, so "connected" here means resubscribed.)
        a.cluster.holds("CP-NEW").is_some_and(|c| c.epoch.is_some())
            && a.cluster.is_connected()
            && b.cluster.is_connected()
    })
    .await;
    let answer = b.cluster.call("CP-NEW", "Reset", "{}", CALL).await;
    assert_eq!(answer, Ok(r#"{"node":"a","identity":"CP-NEW"}"#.to_owned()));
}

/// Issue 35: listing the cluster with Redis down still lists this node's own charge points
/// (also one that connected meanwhile) and says that the other nodes' are unknown, where
/// `Cluster::list` fails as a whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_redis_down_the_listing_has_this_node_s_own_and_says_the_rest_is_unknown() {
    use ocpp_proto::OcppVersion;
    let mut redis = RedisServer::start();
    let a = node(&redis, "a").await;
    let b = node(&redis, "b").await;
    assert!(a
        .cluster
        .claim_as("CP-A", Some(OcppVersion::V1_6))
        .await
        .epoch
        .is_some());
    assert!(b.cluster.claim("CP-B").await.epoch.is_some());
    let names = |listing: &ocpp_cluster::Listing| {
        let mut names: Vec<(String, String)> = listing
            .charge_points
            .iter()
            .map(|cp| (cp.identity.clone(), cp.node.clone()))
            .collect();
        names.sort();
        names
    };
    let pair = |identity: &str, node: &str| (identity.to_owned(), node.to_owned());
    let listing = a.cluster.list_known(100).await;
    assert!(listing.is_complete(), "{:?}", listing.elsewhere_unknown);
    assert_eq!(names(&listing), [pair("CP-A", "a"), pair("CP-B", "b")]);

    redis.stop();
    assert!(a.cluster.list(100).await.is_err(), "list fails as a whole");
    let start = Instant::now();
    let listing = a.cluster.list_known(100).await;
    assert!(start.elapsed() < CALL, "{:?}", start.elapsed());
    assert!(!listing.is_complete(), "the other nodes' are unknown");
    assert_eq!(names(&listing), [pair("CP-A", "a")]);
    let own = &listing.charge_points[0];
    assert_eq!(own.version, Some(OcppVersion::V1_6));
    assert!(own.live);
    // One that connects while Redis is down (its claim pending) is listed too.
    assert!(a.cluster.claim("CP-A2").await.epoch.is_none());
    let listing = a.cluster.list_known(100).await;
    assert_eq!(names(&listing), [pair("CP-A", "a"), pair("CP-A2", "a")]);
    assert_eq!(a.cluster.list_known(1).await.charge_points.len(), 1);

    // Redis back (empty): whole again once the nodes have registered their claims again.
    redis.restart();
    let whole = [pair("CP-A", "a"), pair("CP-A2", "a"), pair("CP-B", "b")];
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let listing = a.cluster.list_known(100).await;
        if listing.is_complete() && names(&listing) == whole {
            break;
        }
        assert!(Instant::now() < deadline, "{:?}", names(&listing));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_runs_at_most_once_and_never_past_its_deadline() {
    let redis = RedisServer::start();
    let a = node(&redis, "a").await;
    let b = node(&redis, "b").await;
    b.cluster.claim("CP-1").await;

    // The caller gives up before the charge point answers: Timeout, executed once.
    let started = Instant::now();
    let answer = a
        .cluster
        .call("CP-1", "Slow", r#"{"slow":1}"#, Duration::from_millis(300))
        .await;
    assert_eq!(answer, Err(CallFailure::Timeout));
    assert!(started.elapsed() < Duration::from_millis(800));
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(b.probe.runs_of(r#"{"slow":1}"#), 1);

    // Hand-made messages on b's inbox, as a node in another language would send them; the
    // replies go to a "probe" inbox we read.
    let client = redis::Client::open(redis.url()).unwrap();
    let mut pubsub = client.get_async_pubsub().await.unwrap();
    pubsub.subscribe("ocpp:inbox:probe").await.unwrap();
    let mut replies = pubsub.into_on_message();
    let raw = redis.connection().await;
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let publish = |message: String| {
        let mut raw = raw.clone();
        async move {
            let n: i64 = redis::cmd("PUBLISH")
                .arg("ocpp:inbox:b")
                .arg(message)
                .query_async(&mut raw)
                .await
                .unwrap();
            assert_eq!(n, 1);
        }
    };

    // Late: past its deadline on arrival, answered deadline_passed (not sent), not executed.
    publish(format!(
        r#"{{"type":"command","id":"late-1","reply_to":"probe","identity":"CP-1","action":"Reset","payload":{{"late":1}},"deadline_ms":{}}}"#,
        now_ms - 1
    ))
    .await;
    let answer = reply(&mut replies).await;
    assert_eq!(
        answer,
        serde_json::json!({"type":"reply","id":"late-1","status":"deadline_passed"})
    );
    assert_eq!(b.probe.runs_of(r#"{"late":1}"#), 0);

    // Delivered twice (same id): executed once, answered once.
    let twice = format!(
        r#"{{"type":"command","id":"dup-1","reply_to":"probe","identity":"CP-1","action":"Reset","payload":{{"dup":1}},"deadline_ms":{}}}"#,
        now_ms + 60_000
    );
    publish(twice.clone()).await;
    publish(twice).await;
    let answer = reply(&mut replies).await;
    assert_eq!(
        answer,
        serde_json::json!({"type":"reply","id":"dup-1","status":"result","payload":{"node":"b","identity":"CP-1"}})
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(500), replies.next())
            .await
            .is_err(),
        "one answer only"
    );
    assert_eq!(b.probe.runs_of(r#"{"dup":1}"#), 1);

    // For an identity b does not hold: not_connected, not executed.
    publish(format!(
        r#"{{"type":"command","id":"nc-1","reply_to":"probe","identity":"CP-NONE","action":"Reset","payload":{{}},"deadline_ms":{}}}"#,
        now_ms + 60_000
    ))
    .await;
    let answer = reply(&mut replies).await;
    assert_eq!(
        answer,
        serde_json::json!({"type":"reply","id":"nc-1","status":"not_connected"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_releases_every_claim_and_the_node_record() {
    scenarios::drain_releases_every_claim_and_the_node_record(&RedisServer::start()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bridge_serves_a_non_async_loop() {
    scenarios::bridge_serves_a_non_async_loop(&RedisServer::start()).await;
}

async fn reply(replies: &mut redis::aio::PubSubStream) -> serde_json::Value {
    let msg = tokio::time::timeout(Duration::from_secs(2), replies.next())
        .await
        .expect("a reply")
        .unwrap();
    serde_json::from_slice(msg.get_payload_bytes()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soak_every_command_gets_one_answer_and_runs_at_most_once_while_charge_points_move() {
    scenarios::soak_every_command_gets_one_answer_and_runs_at_most_once(&RedisServer::start())
        .await;
}
