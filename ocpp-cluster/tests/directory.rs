//! The cluster-wide view (PROTOCOL.md section 2): any node reads where a charge point is
//! connected, with its OCPP version, from the presence records; a restore after Redis lost
//! its data writes the version back. Real redis-server on loopback.

mod common;

use std::time::Duration;

use common::{node, wait_until, RedisServer};
use ocpp_proto::OcppVersion;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_node_sees_where_each_charge_point_is_and_its_version() {
    let mut redis = RedisServer::start();
    let a = node(&redis, "a").await;
    let b = node(&redis, "b").await;
    let on_a = a.cluster.claim_as("CP-A", Some(OcppVersion::V1_6)).await;
    b.cluster.claim_as("CP-B", Some(OcppVersion::V2_0_1)).await;
    b.cluster.claim("CP-OLD").await; // a node that does not record the version

    let cp = a.cluster.locate("CP-B").await.unwrap().expect("located");
    assert_eq!(
        (cp.node.as_str(), cp.version, cp.live),
        ("b", Some(OcppVersion::V2_0_1), true)
    );
    assert!(cp.claimed_ms.is_some());
    let cp = b.cluster.locate("CP-A").await.unwrap().expect("located");
    assert_eq!(
        (cp.node.as_str(), cp.version),
        ("a", Some(OcppVersion::V1_6))
    );
    let cp = a.cluster.locate("CP-OLD").await.unwrap().expect("located");
    assert_eq!((cp.node.as_str(), cp.version), ("b", None));
    assert_eq!(a.cluster.locate("NOBODY").await.unwrap(), None);

    let mut all = a.cluster.list(100).await.unwrap();
    all.sort_by(|x, y| x.identity.cmp(&y.identity));
    let seen: Vec<(&str, &str)> = all
        .iter()
        .map(|cp| (cp.identity.as_str(), cp.node.as_str()))
        .collect();
    assert_eq!(seen, [("CP-A", "a"), ("CP-B", "b"), ("CP-OLD", "b")]);
    assert_eq!(a.cluster.list(2).await.unwrap().len(), 2, "the limit holds");

    // Released: gone from the view (a tombstone is not a charge point).
    a.cluster.release("CP-A", on_a.ticket).await.unwrap();
    assert_eq!(b.cluster.locate("CP-A").await.unwrap(), None);
    assert_eq!(b.cluster.list(100).await.unwrap().len(), 2);

    // Redis loses its data: the holder's refresh writes the version back.
    redis.restart();
    wait_until(Duration::from_secs(10), || b.cluster.is_connected()).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(Some(cp)) = a.cluster.locate("CP-B").await {
            assert_eq!(cp.version, Some(OcppVersion::V2_0_1));
            break;
        }
        assert!(std::time::Instant::now() < deadline, "CP-B never restored");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
