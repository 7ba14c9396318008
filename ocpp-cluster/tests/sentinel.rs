//! Two nodes on a Redis Sentinel set of the test's own (`redis+sentinel://`): a stream of
//! commands in both directions across a failover (the master killed, or switched with
//! `SENTINEL FAILOVER`). Nothing runs twice, nothing runs past its deadline, every `Ok` ran
//! exactly once, every answer comes within its timeout, and the failures are only the ones a
//! failover may give (not sent, 503; or may have run, 504). Afterwards the nodes use the new
//! master: commands pass both ways again, every claim is in the new master under its holder,
//! and a claim the new master lost is made again by its holder.

mod common;
#[path = "common/sentinel.rs"]
mod sentinel_set;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::wait_until;
use ocpp_cluster::{
    BoxFuture, CallFailure, Cluster, ClusterConfig, ClusterEvents, Executor, JsonCallOutcome,
};
use sentinel_set::{query, Reply, SentinelSet};

/// Each command's timeout.
const CALL: Duration = Duration::from_secs(1);
/// How often the stream sends a command (alternately from each node): 20 per second.
const EVERY: Duration = Duration::from_millis(50);
/// How long the executor takes to answer action `Slow`.
const SLOW: Duration = Duration::from_secs(1);
/// Scheduling slack on a loaded machine for "within its timeout".
const SLACK: Duration = Duration::from_millis(150);

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Records when each payload ran (Unix ms), and answers with the node's name at once.
#[derive(Clone)]
struct Recorder {
    node: String,
    runs: Arc<Mutex<HashMap<String, Vec<u64>>>>,
}

impl Executor for Recorder {
    fn execute(
        &self,
        identity: &str,
        action: &str,
        payload_json: &str,
        _timeout: Duration,
    ) -> BoxFuture<JsonCallOutcome> {
        self.runs
            .lock()
            .unwrap()
            .entry(payload_json.to_owned())
            .or_default()
            .push(unix_ms());
        let answer = format!(r#"{{"node":"{}","identity":"{identity}"}}"#, self.node);
        let slow = action == "Slow";
        Box::pin(async move {
            if slow {
                tokio::time::sleep(SLOW).await;
            }
            Ok(answer)
        })
    }
}

struct Node {
    cluster: Cluster,
    events: ClusterEvents,
    recorder: Recorder,
}

fn start(url: &str, name: &str) -> Node {
    let config = ClusterConfig::new(url, name)
        .with_claim_ttl(Duration::from_secs(4))
        .with_node_ttl(Duration::from_secs(4))
        .with_refresh_interval(Duration::from_millis(500))
        .with_redis_timeout(Duration::from_millis(300));
    let recorder = Recorder {
        node: name.to_owned(),
        runs: Arc::default(),
    };
    let (cluster, events) = Cluster::start(config, recorder.clone()).expect("start");
    Node {
        cluster,
        events,
        recorder,
    }
}

/// One command of the stream and its answer.
struct Sent {
    from: &'static str,
    to: &'static str,
    identity: String,
    payload: String,
    /// The deadline the caller set (Unix ms, read just before the call).
    deadline_ms: u64,
    started: Instant,
    took: Duration,
    answer: Result<String, CallFailure>,
}

fn holder(port: u16, identity: &str) -> Option<(String, String, u64)> {
    let reply = query(port, &["HGETALL", &format!("ocpp:cp:{identity}")])?;
    Some((
        reply.field("node")?.to_owned(),
        reply.field("epoch")?.to_owned(),
        reply.field("expires_ms")?.parse().ok()?,
    ))
}

#[derive(Clone, Copy, Debug)]
enum Switch {
    /// SIGKILL the master: the sentinels see it down after a second and promote the replica.
    Kill,
    /// `SENTINEL FAILOVER`: the replica is promoted while the old master still runs (and
    /// still accepts writes until the sentinels demote it, seconds later).
    Failover,
}

async fn commands_across(switch: Switch) {
    let mut set = tokio::task::block_in_place(SentinelSet::start);
    let old = set.named_master().expect("a master");
    let url = match switch {
        // A sentinel that does not answer, first in the list: the others are asked.
        Switch::Failover => format!(
            "redis+sentinel://127.0.0.1:{},{}",
            sentinel_set::free_port(),
            set.url().trim_start_matches("redis+sentinel://")
        ),
        Switch::Kill => set.url(),
    };
    let mut a = start(&url, "a");
    let mut b = start(&url, "b");
    wait_until(Duration::from_secs(10), || {
        a.cluster.is_connected() && b.cluster.is_connected()
    })
    .await;
    let identities = |node: &str| -> Vec<String> {
        (0..3)
            .map(|i| format!("CP-{}{i}", node.to_uppercase()))
            .collect()
    };
    for (node, name) in [(&a, "a"), (&b, "b")] {
        for identity in identities(name) {
            let claim = node.cluster.claim(&identity).await;
            assert!(claim.epoch.is_some(), "{identity} registered");
        }
    }
    for name in ["a", "b"] {
        for identity in identities(name) {
            let (node, ..) = holder(old, &identity).expect("claimed in the master");
            assert_eq!(node, name);
        }
    }

    let last_epoch = ["a", "b"]
        .iter()
        .flat_map(|name| identities(name))
        .filter_map(|identity| holder(old, &identity))
        .map(|(_, epoch, _)| epoch.parse::<u64>().expect("epoch"))
        .max()
        .expect("epochs");

    // The stream: 20 commands a second, alternately a → CP-B* and b → CP-A*.
    let stop = Arc::new(AtomicBool::new(false));
    let log: Arc<Mutex<Vec<Sent>>> = Arc::default();
    let stream = {
        let (a, b) = (a.cluster.clone(), b.cluster.clone());
        let (stop, log) = (Arc::clone(&stop), Arc::clone(&log));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(EVERY);
            let mut calls = Vec::new();
            let mut n = 0u32;
            while !stop.load(Ordering::Acquire) {
                tick.tick().await;
                let (from, to, caller) = if n.is_multiple_of(2) {
                    ("a", "b", a.clone())
                } else {
                    ("b", "a", b.clone())
                };
                let identity = format!("CP-{}{}", to.to_uppercase(), (n / 2) % 3);
                let payload = format!(r#"{{"n":{n}}}"#);
                let log = Arc::clone(&log);
                calls.push(tokio::spawn(async move {
                    let deadline_ms = unix_ms() + CALL.as_millis() as u64;
                    let started = Instant::now();
                    let answer = caller.call(&identity, "Reset", &payload, CALL).await;
                    let took = started.elapsed();
                    log.lock().unwrap().push(Sent {
                        from,
                        to,
                        identity,
                        payload,
                        deadline_ms,
                        started,
                        took,
                        answer,
                    });
                }));
                n += 1;
            }
            for call in calls {
                call.await.expect("a call task");
            }
            n as usize
        })
    };
    tokio::time::sleep(Duration::from_millis(1500)).await;

    let switch_ms = unix_ms();
    let switched = Instant::now();
    match switch {
        Switch::Kill => assert_eq!(set.kill_master(), old),
        Switch::Failover => set.failover(),
    }
    let new = tokio::task::block_in_place(|| set.wait_new_master(old, Duration::from_secs(30)));
    let promoted = switched.elapsed();
    // A write the new master lost (asynchronous replication): its holder makes it again, and
    // meanwhile nobody reads it as connected nowhere.
    assert_eq!(
        query(new, &["DEL", "ocpp:cp:CP-A0"]),
        Some(Reply::Int(1)),
        "the replica had the claim"
    );

    // Commands pass both ways again.
    let since_promotion = |from: &str| {
        log.lock()
            .unwrap()
            .iter()
            .any(|s| s.from == from && s.started >= switched + promoted && s.answer.is_ok())
    };
    wait_until(Duration::from_secs(20), || {
        since_promotion("a") && since_promotion("b")
    })
    .await;
    let recovered = switched.elapsed();
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, Ordering::Release);
    let issued = stream.await.expect("the stream");

    // Every command has its one answer, within its timeout.
    let log = std::mem::take(&mut *log.lock().unwrap());
    assert_eq!(log.len(), issued, "one answer per command");
    let runs_a = a.recorder.runs.lock().unwrap().clone();
    let runs_b = b.recorder.runs.lock().unwrap().clone();
    let mut failures: HashMap<&'static str, usize> = HashMap::new();
    for sent in &log {
        assert!(
            sent.took <= CALL + SLACK,
            "{} answered after {:?}",
            sent.payload,
            sent.took
        );
        let (here, elsewhere) = match sent.to {
            "a" => (&runs_a, &runs_b),
            _ => (&runs_b, &runs_a),
        };
        assert!(
            !elsewhere.contains_key(&sent.payload),
            "{} ran on the wrong node",
            sent.payload
        );
        let runs = here.get(&sent.payload).map(Vec::as_slice).unwrap_or(&[]);
        assert!(runs.len() <= 1, "{} ran {} times", sent.payload, runs.len());
        for ran in runs {
            assert!(
                *ran <= sent.deadline_ms + 1,
                "{} ran {} ms after its deadline",
                sent.payload,
                ran - sent.deadline_ms
            );
        }
        match &sent.answer {
            Ok(answer) => {
                assert_eq!(
                    runs.len(),
                    1,
                    "{} answered Ok but ran {runs:?}",
                    sent.payload
                );
                assert_eq!(
                    answer,
                    &format!(r#"{{"node":"{}","identity":"{}"}}"#, sent.to, sent.identity)
                );
            }
            Err(CallFailure::OwnerUnreachable) => {
                assert!(runs.is_empty(), "{}: 503 but it ran", sent.payload);
                *failures.entry("owner_unreachable").or_default() += 1;
            }
            Err(CallFailure::Timeout) => *failures.entry("timeout").or_default() += 1,
            Err(other) => panic!("{} from {}: {other:?}", sent.payload, sent.from),
        }
    }
    let issued_payloads: std::collections::HashSet<&str> =
        log.iter().map(|s| s.payload.as_str()).collect();
    for payload in runs_a.keys().chain(runs_b.keys()) {
        assert!(
            issued_payloads.contains(payload.as_str()),
            "{payload} ran unasked"
        );
    }

    // Presence in the new master: every claim under its holder, made again there.
    for (node, name) in [(&a, "a"), (&b, "b")] {
        for identity in identities(name) {
            let local = node.cluster.holds(&identity).expect("still held");
            let mut found = None;
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(5) {
                found = holder(new, &identity);
                let matches = found.as_ref().is_some_and(|(holder, epoch, _)| {
                    holder == name
                        && node.cluster.holds(&identity).and_then(|c| c.epoch) == epoch.parse().ok()
                });
                if matches {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let (holder, epoch, expires_ms) =
                found.unwrap_or_else(|| panic!("{identity} not in the new master"));
            assert_eq!(holder, name, "{identity} held by its node");
            assert_eq!(
                node.cluster.holds(&identity).and_then(|c| c.epoch),
                epoch.parse().ok(),
                "{identity}: the node's epoch is the new master's"
            );
            assert_eq!(local.ticket, node.cluster.holds(&identity).unwrap().ticket);
            assert!(
                expires_ms > switch_ms,
                "{identity} refreshed in the new master"
            );
        }
    }
    for identity in identities("a") {
        assert!(b.cluster.holds(&identity).is_none());
    }
    for identity in identities("b") {
        assert!(a.cluster.holds(&identity).is_none());
    }
    assert!(a.events.try_recv().is_err(), "no claim of a was superseded");
    assert!(b.events.try_recv().is_err(), "no claim of b was superseded");
    let since: u64 = match query(new, &["GET", "ocpp:since"]) {
        Some(Reply::Bulk(Some(since))) => since.parse().expect("since"),
        other => panic!("ocpp:since: {other:?}"),
    };
    assert!(since >= switch_ms, "the node that moved marked ocpp:since");
    // The claim the new master lost is made again under its own epoch (the loop above found
    // it there); a claim made now gets an epoch above every epoch of the old master.
    let fresh = a.cluster.claim("CP-AFTER").await.epoch.expect("registered");
    assert!(fresh > last_epoch, "{fresh} > {last_epoch}");
    assert!(
        fresh > switch_ms * 1000,
        "the epoch counter was raised to the clock"
    );
    // Both inboxes read on the new master (after SENTINEL FAILOVER the old one still runs).
    let numsub = query(new, &["PUBSUB", "NUMSUB", "ocpp:inbox:a", "ocpp:inbox:b"]);
    assert_eq!(
        numsub,
        Some(Reply::Array(vec![
            Reply::Bulk(Some("ocpp:inbox:a".into())),
            Reply::Int(1),
            Reply::Bulk(Some("ocpp:inbox:b".into())),
            Reply::Int(1),
        ]))
    );
    for name in ["a", "b"] {
        assert_eq!(
            query(new, &["EXISTS", &format!("ocpp:node:{name}")]),
            Some(Reply::Int(1))
        );
    }

    // And sequentially, every charge point from the other node.
    for i in 0..3 {
        let answer = a
            .cluster
            .call(&format!("CP-B{i}"), "Reset", "{}", CALL)
            .await;
        assert_eq!(
            answer,
            Ok(format!(r#"{{"node":"b","identity":"CP-B{i}"}}"#))
        );
        let answer = b
            .cluster
            .call(&format!("CP-A{i}"), "Reset", "{}", CALL)
            .await;
        assert_eq!(
            answer,
            Ok(format!(r#"{{"node":"a","identity":"CP-A{i}"}}"#))
        );
    }
    eprintln!(
        "{switch:?}: {} commands; new master named after {promoted:?}, commands passing both \
         ways after {recovered:?}; failures {failures:?}",
        log.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_master_is_followed_and_no_command_is_lost_doubled_or_late() {
    commands_across(Switch::Kill).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_failover_is_followed_although_the_old_master_still_runs() {
    commands_across(Switch::Failover).await;
}

/// How long after the link moved (`failover.lua` marks `ocpp:since` on the new master, by
/// Redis's clock) the node's inbox is subscribed there (`PUBSUB NUMSUB`, polled every 5 ms on
/// loopback), in ms; and the times from the switch until both. PROTOCOL.md 1.1 quotes these.
fn inbox_follows(switch: Switch) -> (u64, Duration, Duration) {
    let mut set = SentinelSet::start();
    let old = set.named_master().expect("a master");
    let new = set
        .data
        .iter()
        .map(|p| p.port)
        .find(|port| *port != old)
        .expect("a replica");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let node = runtime.block_on(async {
        let node = start(&set.url(), "a");
        wait_until(Duration::from_secs(10), || node.cluster.is_connected()).await;
        node
    });
    let switched = Instant::now();
    match switch {
        Switch::Kill => assert_eq!(set.kill_master(), old),
        Switch::Failover => set.failover(),
    }
    let since = || match query(new, &["GET", "ocpp:since"]) {
        Some(Reply::Bulk(Some(since))) => since.parse::<u64>().ok().filter(|s| *s > 0),
        _ => None,
    };
    let subscribed = || {
        query(new, &["PUBSUB", "NUMSUB", "ocpp:inbox:a"])
            == Some(Reply::Array(vec![
                Reply::Bulk(Some("ocpp:inbox:a".into())),
                Reply::Int(1),
            ]))
    };
    let (mut moved, mut inbox) = (None, None);
    while inbox.is_none() {
        assert!(
            switched.elapsed() < Duration::from_secs(30),
            "{switch:?}: the inbox did not move within 30 s (moved: {moved:?})"
        );
        if moved.is_none() {
            moved = since().map(|since| (since, switched.elapsed()));
        }
        if moved.is_some() && subscribed() {
            inbox = Some((unix_ms(), switched.elapsed()));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let ((moved_ms, moved_after), (inbox_ms, inbox_after)) =
        (moved.expect("moved"), inbox.expect("subscribed"));
    drop(node);
    drop(runtime);
    (inbox_ms.saturating_sub(moved_ms), moved_after, inbox_after)
}

/// The inbox follows the link to the new master at once (issue 35): not after the rest of its
/// reconnection backoff (up to 1 s), also when it had lost its connection before the move
/// (the master killed). Loosely bounded; the figures are printed.
#[test]
fn the_inbox_is_subscribed_on_the_new_master_as_soon_as_the_link_moves() {
    for switch in [Switch::Failover, Switch::Kill] {
        let (gap_ms, moved, inbox) = inbox_follows(switch);
        eprintln!(
            "{switch:?}: the link moved {moved:?} after the switch, the inbox {inbox:?} after \
             it: {gap_ms} ms after the move"
        );
        assert!(
            gap_ms < 500,
            "{switch:?}: the inbox resubscribed {gap_ms} ms after the link moved"
        );
    }
}

/// Issue 35: a command whose reply was lost in a failover (published on the master that was
/// killed) is answered `timeout` (may have run) when the caller moves to the new master, not
/// at its deadline: the reply can no longer come. Figures printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_whose_reply_the_failover_lost_is_answered_when_the_node_moves() {
    let mut set = tokio::task::block_in_place(SentinelSet::start);
    let old = set.named_master().expect("a master");
    let url = set.url();
    let a = start(&url, "a");
    let b = start(&url, "b");
    wait_until(Duration::from_secs(10), || {
        a.cluster.is_connected() && b.cluster.is_connected()
    })
    .await;
    assert!(b.cluster.claim("CP-B").await.epoch.is_some());
    // The executor answers a second after the command arrives; the master is killed meanwhile,
    // so the reply cannot be published where the caller reads it.
    let timeout = Duration::from_secs(20);
    let caller = a.cluster.clone();
    let sent = Instant::now();
    let call = tokio::spawn(async move {
        let answer = caller.call("CP-B", "Slow", r#"{"n":1}"#, timeout).await;
        (answer, sent.elapsed())
    });
    wait_until(Duration::from_secs(5), || {
        b.recorder.runs.lock().unwrap().contains_key(r#"{"n":1}"#)
    })
    .await;
    let killed = sent.elapsed();
    assert_eq!(tokio::task::block_in_place(|| set.kill_master()), old);
    let (answer, took) = call.await.expect("the call task");
    let new = tokio::task::block_in_place(|| set.wait_new_master(old, Duration::from_secs(30)));
    eprintln!(
        "master killed {killed:?} after the command was sent; answered {answer:?} after {took:?} \
         (timeout {timeout:?}); new master {new}"
    );
    assert_eq!(answer, Err(CallFailure::Timeout), "may have run");
    assert!(
        took < timeout / 2,
        "answered after {took:?}, not when the node moved"
    );
    assert_eq!(b.recorder.runs.lock().unwrap()[r#"{"n":1}"#].len(), 1);
}

/// Issue "The cluster without windows", finding 1: charge points that move from a to b while
/// `SENTINEL FAILOVER` runs. b's takeovers that land on the old master after the replica's
/// promotion are lost with it, and the new master brings a's claims back; b's refresh round
/// after its move makes its newer claims again (and tells a). Before, b found them `lost` and
/// closed the newest connections too: the charge points ended with no connection at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn takeovers_during_a_sentinel_failover_keep_the_newest_connection() {
    const MOVES: usize = 40;
    let set = tokio::task::block_in_place(SentinelSet::start);
    let old = set.named_master().expect("a master");
    let url = set.url();
    let a = start(&url, "a");
    let mut b = start(&url, "b");
    wait_until(Duration::from_secs(10), || {
        a.cluster.is_connected() && b.cluster.is_connected()
    })
    .await;
    let identities: Vec<String> = (0..MOVES).map(|i| format!("CP-M{i}")).collect();
    for identity in &identities {
        assert!(a.cluster.claim(identity).await.epoch.is_some());
    }
    // The replica has a's claims before the failover begins.
    wait_until(Duration::from_secs(5), || {
        let replica = set
            .data
            .iter()
            .map(|process| process.port)
            .find(|&port| port != old)
            .expect("a replica");
        identities
            .iter()
            .all(|identity| holder(replica, identity).is_some_and(|(node, ..)| node == "a"))
    })
    .await;

    // The failover, and the charge points moving to b across it: one every 50 ms for 2 s
    // (the promotion comes 0.15-0.25 s after the command, the nodes' switch about 1.2 s).
    set.failover();
    let failover_at = Instant::now();
    let mut claims = Vec::new();
    for identity in &identities {
        claims.push((identity.clone(), b.cluster.claim(identity).await));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let new = tokio::task::block_in_place(|| set.wait_new_master(old, Duration::from_secs(10)));
    // Presence rebuilt: every moved charge point is b's on the new master (printed: a
    // measurement, not a bound; PROTOCOL.md 1.1 quotes it).
    wait_until(Duration::from_secs(10), || {
        identities
            .iter()
            .all(|identity| holder(new, identity).is_some_and(|(node, ..)| node == "b"))
    })
    .await;
    eprintln!(
        "takeovers across SENTINEL FAILOVER: every claim b's on the new master {:?} after the command",
        failover_at.elapsed()
    );
    // Two refresh rounds more (500 ms each) and a margin: nothing is undone.
    tokio::time::sleep(Duration::from_secs(2)).await;

    let mut lost = Vec::new();
    while let Ok(event) = b.events.try_recv() {
        lost.push(format!("{event:?}"));
    }
    assert!(lost.is_empty(), "b closed newest connections: {lost:?}");
    for (identity, claim) in &claims {
        let held = b.cluster.holds(identity);
        assert_eq!(
            held.map(|c| c.ticket),
            Some(claim.ticket),
            "{identity}: b no longer holds its newest connection"
        );
        let (node, ..) = holder(new, identity).expect("claimed on the new master");
        assert_eq!(node, "b", "{identity} on the new master");
        assert!(a.cluster.holds(identity).is_none(), "{identity} still on a");
    }
}
