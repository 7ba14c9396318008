//! A redis-server of the test's own on a free loopback port (`redis_server`, shared with the
//! tests of `ocpp-tokio` and the example servers), and a probe executor.
#![allow(dead_code, unreachable_pub)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ocpp_cluster::{
    BoxFuture, CallFailure, Cluster, ClusterConfig, ClusterEvents, Executor, JsonCallOutcome,
};
use ocpp_proto::ErrorCode;

mod redis_server;
pub mod scenarios;

pub use redis_server::RedisServer;
// Used by some test binaries only (each compiles this module).
#[allow(unused_imports)]
pub use redis_server::info_field;

/// The Redis a scenario runs on ([`scenarios`]): one redis-server, or a Redis Cluster.
pub trait Backend {
    /// The URL the nodes join with.
    fn redis_url(&self) -> String;
    /// Whether `key` exists (asked of the server that holds it).
    fn exists(&self, key: &str) -> bool;
    /// The key of `node`'s node record (prefix `ocpp`).
    fn node_key(&self, node: &str) -> String;
}

impl Backend for RedisServer {
    fn redis_url(&self) -> String {
        self.url()
    }
    fn exists(&self, key: &str) -> bool {
        self.query(&format!("EXISTS {key}")).as_deref() == Some(":1")
    }
    fn node_key(&self, node: &str) -> String {
        format!("ocpp:node:{node}")
    }
}

impl RedisServer {
    pub async fn connection(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url())
            .expect("client")
            .get_multiplexed_async_connection()
            .await
            .expect("connect to the test redis")
    }
}

/// Counts executions per payload and answers by action: `Fail` a CALLERROR, `Slow` after
/// 800 ms, anything else at once with `{"node":..,"identity":..}`.
#[derive(Clone)]
pub struct Probe {
    pub node: String,
    pub runs: Arc<Mutex<HashMap<String, u32>>>,
}

impl Probe {
    pub fn new(node: &str) -> Self {
        Probe {
            node: node.to_owned(),
            runs: Arc::default(),
        }
    }

    pub fn runs_of(&self, payload: &str) -> u32 {
        self.runs.lock().unwrap().get(payload).copied().unwrap_or(0)
    }

    pub fn total(&self) -> u32 {
        self.runs.lock().unwrap().values().sum()
    }
}

impl Executor for Probe {
    fn execute(
        &self,
        identity: &str,
        action: &str,
        payload_json: &str,
        _timeout: Duration,
    ) -> BoxFuture<JsonCallOutcome> {
        *self
            .runs
            .lock()
            .unwrap()
            .entry(payload_json.to_owned())
            .or_default() += 1;
        let answer = format!(r#"{{"node":"{}","identity":"{identity}"}}"#, self.node);
        let action = action.to_owned();
        Box::pin(async move {
            match action.as_str() {
                "Fail" => Err(CallFailure::ErrorResponse {
                    code: ErrorCode::NotSupported,
                    description: "not here".to_owned(),
                    details: r#"{"why":"test"}"#.to_owned(),
                }),
                "Panic" => panic!("the probe executor panics on purpose"),
                "Slow" => {
                    tokio::time::sleep(Duration::from_millis(800)).await;
                    Ok(answer)
                }
                "Jitter" => {
                    tokio::time::sleep(Duration::from_millis(fastrand::u64(0..5))).await;
                    Ok(answer)
                }
                _ => Ok(answer),
            }
        })
    }
}

/// Short TTLs so that expiry fits in a test. The Redis timeout is 1 s, not shorter: on a
/// loaded CI machine (13 tests, each with its own redis-server, on 2 cores) a round trip of a
/// few hundred milliseconds happens, and a test about routing must not see it as Redis down.
pub fn config(redis: &impl Backend, node: &str) -> ClusterConfig {
    ClusterConfig::new(redis.redis_url(), node)
        .with_claim_ttl(Duration::from_secs(2))
        .with_node_ttl(Duration::from_secs(2))
        .with_refresh_interval(Duration::from_millis(500))
        .with_redis_timeout(Duration::from_secs(1))
}

pub struct Node {
    pub cluster: Cluster,
    pub events: ClusterEvents,
    pub probe: Probe,
}

/// Starts a node and waits (bounded) until its inbox is subscribed.
pub async fn node(redis: &impl Backend, name: &str) -> Node {
    let probe = Probe::new(name);
    let (cluster, events) = Cluster::start(config(redis, name), probe.clone()).expect("start");
    wait_until(Duration::from_secs(5), || cluster.is_connected()).await;
    // A round done, so that the node record says every claim of this node is in Redis
    // (`synced`, PROTOCOL.md 6.3 step 3): before it, Redis cannot tell a charge point held by
    // nobody from one this node has not registered yet, and routes answer `unknown`.
    cluster.refresh().await.expect("the node's first round");
    Node {
        cluster,
        events,
        probe,
    }
}

pub async fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < limit,
            "condition not reached within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
