//! The scenarios that run on every kind of Redis: one redis-server (`tests/cluster.rs`) and a
//! Redis Cluster (`tests/redis_cluster.rs`), each given its [`Backend`].
#![allow(dead_code, unreachable_pub)]

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use ocpp_cluster::{BridgeOutput, CallFailure, ClusterBridge, ClusterEvent, LostClaim};

use super::{config, node, wait_until, Backend};

/// A command's timeout where the test is not about timeouts: generous, since an answer that
/// comes returns at once whatever the limit (a loaded CI machine must not turn it into Timeout).
const CALL: Duration = Duration::from_secs(10);

async fn next_event(events: &mut ocpp_cluster::ClusterEvents, within: Duration) -> LostClaim {
    match tokio::time::timeout(within, events.recv()).await {
        Ok(Some(ClusterEvent::Superseded(s))) => s,
        other => panic!("no takeover event within {within:?}: {other:?}"),
    }
}

pub async fn command_reaches_the_holder_and_its_answer_comes_back(redis: &impl Backend) {
    let a = node(redis, "a").await;
    let b = node(redis, "b").await;
    let claim = b.cluster.claim("CP-1").await;
    assert!(claim.epoch.is_some(), "registered");

    // Result, through Redis to b's executor and back.
    let answer = a
        .cluster
        .call("CP-1", "Reset", r#"{"type":"Soft"}"#, CALL)
        .await;
    assert_eq!(
        answer,
        Ok(r#"{"node":"b","identity":"CP-1"}"#.to_owned()),
        "a result routed from a to b"
    );
    assert_eq!(b.probe.runs_of(r#"{"type":"Soft"}"#), 1);
    assert_eq!(a.probe.total(), 0);

    // A CALLERROR comes back as such, details verbatim.
    let answer = a.cluster.call("CP-1", "Fail", "{}", CALL).await;
    assert_eq!(
        answer,
        Err(CallFailure::ErrorResponse {
            code: ocpp_proto::ErrorCode::NotSupported,
            description: "not here".to_owned(),
            details: r#"{"why":"test"}"#.to_owned(),
        }),
        "a CALLERROR routed from a to b"
    );

    // A panicking executor: still one answer, remote and local, one that may have run.
    for from in [&a, &b] {
        let answer = from.cluster.call("CP-1", "Panic", "{}", CALL).await;
        assert_eq!(
            answer,
            Err(CallFailure::Timeout),
            "a panic on b, called from {}",
            from.probe.node
        );
    }

    // On the holder itself: the local executor, no Redis needed.
    let answer = b.cluster.call("CP-1", "Reset", r#"{"n":1}"#, CALL).await;
    assert_eq!(
        answer,
        Ok(r#"{"node":"b","identity":"CP-1"}"#.to_owned()),
        "on the holder"
    );

    // Nobody holds it: NotConnected (404).
    let answer = a.cluster.call("CP-404", "Reset", "{}", CALL).await;
    assert_eq!(answer, Err(CallFailure::NotConnected), "held by nobody");

    // Released: NotConnected too, and only the holder's own epoch can release.
    assert!(
        !a.cluster.release("CP-1", claim.ticket).await.unwrap(),
        "a holds nothing"
    );
    assert!(b.cluster.release("CP-1", claim.ticket).await.unwrap());
    let answer = a.cluster.call("CP-1", "Reset", "{}", CALL).await;
    assert_eq!(answer, Err(CallFailure::NotConnected), "released");
}

pub async fn newest_claim_wins_and_the_old_node_hears_it_at_once(redis: &impl Backend) {
    let mut a = node(redis, "a").await;
    let b = node(redis, "b").await;
    let c = node(redis, "c").await;

    let old = a.cluster.claim("CP-7").await;
    let new = b.cluster.claim("CP-7").await;
    assert!(new.epoch > old.epoch, "epochs grow: {old:?} then {new:?}");

    let started = Instant::now();
    let lost = next_event(&mut a.events, Duration::from_secs(2)).await;
    assert_eq!(lost.identity, "CP-7");
    assert_eq!(lost.ticket, old.ticket);
    assert_eq!(Some(lost.epoch), old.epoch);
    assert_eq!(lost.by_node, "b");
    assert_eq!(Some(lost.by_epoch), new.epoch);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "at once, not at the next refresh"
    );
    assert!(a.cluster.holds("CP-7").is_none());

    // Commands follow the new owner, from the old node and from a third one.
    for from in [&a, &c] {
        let answer = from.cluster.call("CP-7", "Reset", "{}", CALL).await;
        assert_eq!(answer, Ok(r#"{"node":"b","identity":"CP-7"}"#.to_owned()));
    }
    assert_eq!(a.probe.total(), 0, "no command went to the stale socket");

    // The old node's late release cannot touch the new claim.
    assert!(!a.cluster.release("CP-7", old.ticket).await.unwrap());
    let answer = c.cluster.call("CP-7", "Reset", "{}", CALL).await;
    assert!(answer.is_ok());
}

pub async fn killed_node_s_claims_expire_and_routing_follows_the_reconnection(
    redis: &impl Backend,
) {
    let a = node(redis, "a").await;
    let b = node(redis, "b").await;
    let c = node(redis, "c").await;
    b.cluster.claim("CP-K").await;
    assert!(c.cluster.call("CP-K", "Reset", "{}", CALL).await.is_ok());

    // "SIGKILL": b's tasks and connections stop, nothing is released. (The kernel closes a
    // killed process's sockets at once; an aborted task drops its connection a moment later.)
    drop(b);
    let killed = Instant::now();
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Until the claim's key is gone: OwnerUnreachable (nobody reads b's inbox, or its record
    // is gone, or the claim is past its liveness: b may only be stopped).
    let answer = c.cluster.call("CP-K", "Reset", "{}", CALL).await;
    assert_eq!(answer, Err(CallFailure::OwnerUnreachable));
    // Within twice the TTL (2 s) plus slack: NotConnected.
    loop {
        let answer = c.cluster.call("CP-K", "Reset", "{}", CALL).await;
        if answer == Err(CallFailure::NotConnected) {
            break;
        }
        assert_eq!(answer, Err(CallFailure::OwnerUnreachable));
        assert!(
            killed.elapsed() < Duration::from_secs(6),
            "claim outlived twice its TTL"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The charge point reconnects to a: routing follows.
    a.cluster.claim("CP-K").await;
    let answer = c.cluster.call("CP-K", "Reset", "{}", CALL).await;
    assert_eq!(answer, Ok(r#"{"node":"a","identity":"CP-K"}"#.to_owned()));
}

pub async fn drain_releases_every_claim_and_the_node_record(redis: &impl Backend) {
    let a = node(redis, "a").await;
    let b = node(redis, "b").await;
    a.cluster.claim("CP-1").await;
    a.cluster.claim("CP-2").await;
    let record = redis.node_key("a");
    assert!(redis.exists(&record), "{record}");

    assert_eq!(a.cluster.drain().await.unwrap(), 2);
    assert!(a.cluster.claims().is_empty());
    assert!(!redis.exists(&record), "{record}");
    for id in ["CP-1", "CP-2"] {
        assert_eq!(
            b.cluster.call(id, "Reset", "{}", CALL).await,
            Err(CallFailure::NotConnected)
        );
    }
    // Nothing comes back after a refresh round.
    a.cluster.refresh().await.unwrap();
    assert!(!redis.exists(&record), "{record}");
}

/// The non-async face (`ClusterBridge`, the mio server's): a plain thread that never blocks on
/// Redis claims, calls, runs a command routed to it and hears a takeover.
pub async fn bridge_serves_a_non_async_loop(redis: &impl Backend) {
    let mut b = node(redis, "b").await;
    let wakes = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&wakes);
    let bridge = ClusterBridge::spawn(
        config(redis, "m"),
        Box::new(move || {
            counted.fetch_add(1, Ordering::SeqCst);
        }),
    )
    .unwrap();
    b.cluster.claim("CP-B").await;
    let ticket = bridge.claim("CP-M");
    assert!(bridge.holds("CP-M").is_some(), "held at once");

    // The "mio loop": a plain thread that never blocks on Redis, polling after wakes.
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let loop_thread = std::thread::spawn(move || {
        let mut outputs = Vec::new();
        while !bridge.is_connected() {
            std::thread::sleep(Duration::from_millis(5));
        }
        let call = bridge
            .call("CP-B", "Reset", r#"{"from":"m"}"#, CALL)
            .unwrap();
        while stop_rx.try_recv().is_err() {
            while let Some(output) = bridge.try_recv() {
                if let BridgeOutput::Execute(job) = &output {
                    assert_eq!(job.identity, "CP-M");
                    assert!(bridge.complete(job.id, Ok(r#"{"mio":true}"#.into())));
                }
                outputs.push(output);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        (bridge, call, outputs)
    });

    // b calls the charge point the loop holds.
    wait_until(Duration::from_secs(3), || wakes.load(Ordering::SeqCst) > 0).await;
    let answer = b.cluster.call("CP-M", "Reset", "{}", CALL).await;
    assert_eq!(answer, Ok(r#"{"mio":true}"#.to_owned()));
    // b takes CP-M over: the loop gets the event.
    b.cluster.claim("CP-M").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop_tx.send(()).unwrap();
    let (bridge, call, outputs) = loop_thread.join().unwrap();

    assert!(outputs.iter().any(|o| matches!(o,
        BridgeOutput::Registered { identity, ticket: t, epoch: Some(_) } if identity == "CP-M" && *t == ticket)));
    assert!(outputs.iter().any(|o| matches!(o,
        BridgeOutput::CallDone { request, result: Ok(payload) }
            if *request == call && payload == r#"{"node":"b","identity":"CP-B"}"#)));
    assert!(outputs.iter().any(|o| matches!(o,
        BridgeOutput::Event(ClusterEvent::Superseded(s)) if s.identity == "CP-M" && s.by_node == "b")));
    assert!(bridge.holds("CP-M").is_none());
    let _ = b.events.try_recv();
    // Dropped on a thread without a runtime (as in the mio server): joins the cluster thread.
    std::thread::spawn(move || drop(bridge)).join().unwrap();
}

/// Commands from every node while charge points move between nodes (takeovers, releases):
/// exactly one answer each, at most one execution, a result only with its execution.
pub async fn soak_every_command_gets_one_answer_and_runs_at_most_once(redis: &impl Backend) {
    const NODES: usize = 3;
    const IDENTITIES: usize = 12;
    const COMMANDS: usize = 300;
    let mut nodes = Vec::new();
    for name in ["s0", "s1", "s2"] {
        nodes.push(node(redis, name).await);
    }
    let nodes = Arc::new(nodes);
    for i in 0..IDENTITIES {
        nodes[i % NODES].cluster.claim(&format!("CP-{i}")).await;
    }

    // Charge points move: a reconnect elsewhere (takeover), sometimes a disconnect first.
    let mover = {
        let nodes = Arc::clone(&nodes);
        tokio::spawn(async move {
            for _ in 0..60 {
                let id = format!("CP-{}", fastrand::usize(..IDENTITIES));
                let to = fastrand::usize(..NODES);
                if fastrand::u8(..4) == 0 {
                    for n in nodes.iter() {
                        if let Some(c) = n.cluster.holds(&id) {
                            n.cluster.release(&id, c.ticket).await.unwrap();
                        }
                    }
                }
                nodes[to].cluster.claim(&id).await;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };

    let started = Instant::now();
    let results = futures_util::stream::iter(0..COMMANDS)
        .map(|n| {
            let nodes = Arc::clone(&nodes);
            async move {
                let from = fastrand::usize(..NODES);
                let id = format!("CP-{}", fastrand::usize(..IDENTITIES));
                let answer = nodes[from]
                    .cluster
                    .call(
                        &id,
                        "Jitter",
                        &format!(r#"{{"n":{n}}}"#),
                        Duration::from_secs(2),
                    )
                    .await;
                (n, answer)
            }
        })
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await;
    mover.await.unwrap();
    let elapsed = started.elapsed();
    let mut nodes = Arc::try_unwrap(nodes).ok().expect("the mover is done");
    let moved: usize = nodes
        .iter_mut()
        .map(|n| std::iter::from_fn(|| n.events.try_recv().ok()).count())
        .sum();
    assert!(moved > 0, "charge points were taken over during the run");

    let (mut ok, mut not_connected, mut timeout) = (0, 0, 0);
    let mut answered = vec![0u32; COMMANDS];
    for (n, answer) in &results {
        answered[*n] += 1;
        let runs: u32 = nodes
            .iter()
            .map(|x| x.probe.runs_of(&format!(r#"{{"n":{n}}}"#)))
            .sum();
        assert!(runs <= 1, "command {n} executed {runs} times");
        match answer {
            Ok(_) => {
                assert_eq!(runs, 1, "a result without an execution");
                ok += 1;
            }
            Err(CallFailure::NotConnected) => not_connected += 1,
            Err(CallFailure::Timeout) => timeout += 1,
            Err(other) => panic!("command {n}: unexpected {other:?}"),
        }
    }
    assert!(answered.iter().all(|&a| a == 1), "exactly one answer each");
    assert_eq!(ok + not_connected + timeout, COMMANDS);
    assert!(
        ok > COMMANDS / 2,
        "most commands land: {ok} ok, {not_connected} not connected, {timeout} timeouts"
    );
    eprintln!("soak: {COMMANDS} commands in {elapsed:?}: {ok} ok, {not_connected} not connected, {timeout} timeouts, {moved} takeovers");
}
