//! An `ocpp-tokio` server as a node of the cluster, for the tests of the feature `tokio` (their
//! charge point is `ocpp_test_kit::WireChargePoint`). Every wait is bounded.
#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use ocpp_cluster::tokio_node::ServerBuilderExt;
use ocpp_cluster::{Cluster, ClusterConfig};
use ocpp_proto::{ConnectionConfig, OcppVersion};
use ocpp_tokio::server::ServerError;
use ocpp_tokio::ChargePoints;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Every wait of a test ends within this.
pub const WAIT: Duration = Duration::from_secs(10);

/// Waits until `condition` holds, polling; panics after [`WAIT`].
pub async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !condition() {
        assert!(Instant::now() < deadline, "not within {WAIT:?}: {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The servers' connections: every version, short handshake and close timeouts.
pub fn server_config() -> ConnectionConfig {
    ConnectionConfig::default()
        .versions(vec![
            OcppVersion::V2_1,
            OcppVersion::V2_0_1,
            OcppVersion::V1_6,
        ])
        .handshake_timeout(Duration::from_secs(5))
        .close_timeout(Duration::from_secs(1))
}

/// A running server that is node `cluster.node_id()` (every identity accepted, every CALL of a
/// charge point answered NotSupported); stopped gracefully by [`TestNode::stop`].
pub struct TestNode {
    pub addr: SocketAddr,
    pub charge_points: ChargePoints,
    /// The node's handle, as `ServerBuilderExt::cluster_node` returned it.
    pub cluster: Cluster,
    stop: Option<oneshot::Sender<()>>,
    done: JoinHandle<Result<(), ServerError>>,
}

impl TestNode {
    /// Starts the node with `connections` and `shutdown_timeout`; returns once its inbox is
    /// subscribed.
    pub async fn start(
        config: ClusterConfig,
        connections: ConnectionConfig,
        shutdown_timeout: Duration,
    ) -> TestNode {
        let name = config.node_id.clone();
        let (builder, cluster) = ocpp_tokio::Server::builder()
            .config(connections)
            .shutdown_timeout(shutdown_timeout)
            .cluster_node(config)
            .expect("a valid cluster config");
        let server = builder.bind("127.0.0.1:0").await.expect("bound");
        let addr = server.local_addr().expect("an address");
        let charge_points = server.charge_points();
        let (stop, stopped) = oneshot::channel::<()>();
        let done = tokio::spawn(server.run_until(async {
            let _ = stopped.await;
        }));
        eventually(&format!("{name}: inbox subscribed"), || {
            cluster.is_connected()
        })
        .await;
        TestNode {
            addr,
            charge_points,
            cluster,
            stop: Some(stop),
            done,
        }
    }

    /// Graceful shutdown; returns how long it took.
    pub async fn stop(mut self) -> Duration {
        let started = Instant::now();
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        tokio::time::timeout(WAIT, &mut self.done)
            .await
            .expect("shutdown is bounded")
            .expect("the server task ends")
            .expect("the server ends without error");
        started.elapsed()
    }
}
