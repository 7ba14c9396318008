//! Both servers as cluster nodes behind Redis Sentinel (`--redis redis+sentinel://...`): a
//! Sentinel set of the test's own on loopback (a master, a replica, three sentinels:
//! `ocpp-cluster/tests/common/sentinel.rs`, every process killed by its PID when the test
//! ends), a `mio-server` and a `tokio-server` node, a charge point on each. The master is
//! killed: both nodes follow the new master, their charge points stay claimed by them there,
//! and commands pass both ways again. (The command stream across a failover is
//! `ocpp-cluster/tests/sentinel.rs`.)
//!
//! Needs `redis-server` on the PATH (`apt-get install -y redis-server`).

mod common;
#[path = "../../ocpp-cluster/tests/common/sentinel.rs"]
mod sentinel_set;

use common::cluster::{connect, reset_through};
use common::*;
use sentinel_set::{query, Reply, SentinelSet};

const MIO: &str = env!("CARGO_BIN_EXE_mio-server");
const TOKIO: &str = env!("CARGO_BIN_EXE_tokio-server");

/// Whether `node` reads its inbox on the Redis at `port`.
fn reads_inbox(port: u16, node: &str) -> bool {
    let channel = format!("ocpp:inbox:{node}");
    query(port, &["PUBSUB", "NUMSUB", &channel])
        == Some(Reply::Array(vec![
            Reply::Bulk(Some(channel)),
            Reply::Int(1),
        ]))
}

/// The node that holds `identity` according to the Redis at `port`.
fn holder(port: u16, identity: &str) -> Option<String> {
    query(port, &["HGET", &format!("ocpp:cp:{identity}"), "node"])?
        .text()
        .map(str::to_owned)
}

fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "{what} not within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Both nodes read their inboxes on the master at `port`, hold their charge points there, and
/// have their node records there.
fn settled_on(port: u16) -> bool {
    reads_inbox(port, "m")
        && reads_inbox(port, "t")
        && holder(port, "CP1").as_deref() == Some("m")
        && holder(port, "CP2").as_deref() == Some("t")
        && ["m", "t"].iter().all(|node| {
            query(port, &["EXISTS", &format!("ocpp:node:{node}")]) == Some(Reply::Int(1))
        })
}

#[test]
fn a_mio_node_and_a_tokio_node_follow_the_master_sentinel_promotes() {
    let mut set = SentinelSet::start();
    let url = set.url();
    let old = set.named_master().expect("a master");
    let args = |node: &'static str| {
        vec![
            "--redis".to_owned(),
            url.clone(),
            "--node-id".to_owned(),
            node.to_owned(),
            "--cluster-ttl-s".to_owned(),
            "4".to_owned(),
        ]
    };
    let m_args = args("m");
    let t_args = args("t");
    let m = ServerProcess::start(MIO, &m_args.iter().map(String::as_str).collect::<Vec<_>>());
    let t = ServerProcess::start(
        TOKIO,
        &t_args.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let mut on_m = connect(&m, "CP1");
    let mut on_t = connect(&t, "CP2");
    wait_for("both nodes on the master", WAIT, || settled_on(old));
    let (status, body) = reset_through(t.admin, &mut on_m, "CP1");
    assert_eq!(status, 200, "{body}");
    let (status, body) = reset_through(m.admin, &mut on_t, "CP2");
    assert_eq!(status, 200, "{body}");

    let killed = Instant::now();
    assert_eq!(set.kill_master(), old);
    let new = set.wait_new_master(old, Duration::from_secs(30));
    let promoted = killed.elapsed();
    wait_for(
        "both nodes on the new master",
        Duration::from_secs(20),
        || settled_on(new),
    );
    eprintln!(
        "new master named after {promoted:?}, both servers on it after {:?}",
        killed.elapsed()
    );

    // Commands both ways again, on the same sockets (Redis is not on their path).
    let (status, body) = reset_through(t.admin, &mut on_m, "CP1");
    assert_eq!(status, 200, "{body}");
    let (status, body) = reset_through(m.admin, &mut on_t, "CP2");
    assert_eq!(status, 200, "{body}");
    for admin in [m.admin, t.admin] {
        let (status, _) = http(admin, "POST", "/chargepoints/NOBODY/call/Reset", "{}");
        assert!(status == 404 || status == 503, "{status}");
    }
}
