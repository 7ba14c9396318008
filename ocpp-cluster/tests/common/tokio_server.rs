//! An `ocpp-tokio` server as a node of the cluster, and a charge point to connect to it
//! (`ocpp_proto::Connection::connect` driven on a tokio socket), for the tests of the feature
//! `tokio`. Every wait is bounded.
#![allow(dead_code, unreachable_pub)]

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ocpp_cluster::tokio_node::ServerBuilderExt;
use ocpp_cluster::{Cluster, ClusterConfig};
use ocpp_proto::{
    Answer, ChargePointIdentity, Closed, ConnectTarget, Connection, ConnectionConfig, ErrorCode,
    Event, MessageId, OcppVersion, Request, Response,
};
use ocpp_tokio::server::ServerError;
use ocpp_tokio::ChargePoints;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
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

/// A charge point on a plain TCP socket.
pub struct TestCp {
    stream: TcpStream,
    pub conn: Connection,
    events: VecDeque<Event>,
}

impl TestCp {
    /// Connects as `identity` speaking `version` and completes the upgrade.
    pub async fn connect(addr: SocketAddr, identity: &str, version: OcppVersion) -> TestCp {
        let stream = TcpStream::connect(addr).await.expect("connected");
        stream.set_nodelay(true).expect("no delay");
        let target = ConnectTarget::new(
            &addr.to_string(),
            "/ocpp",
            ChargePointIdentity::new(identity.into(), false).expect("an identity"),
        );
        let config = ConnectionConfig::default()
            .versions(vec![version])
            .ping_interval(None)
            .idle_timeout(None);
        let seed = fastrand::u64(..);
        let conn = Connection::connect(Instant::now(), Arc::new(config), &target, [7; 16], seed)
            .expect("an upgrade request");
        let mut cp = TestCp {
            stream,
            conn,
            events: VecDeque::new(),
        };
        match cp.next_event().await {
            Event::Connected { .. } => cp,
            other => panic!("{identity}: expected Connected, got {other:?}"),
        }
    }

    /// Writes what is pending.
    pub async fn flush(&mut self) {
        let n = self.conn.pending_transmit().len();
        if n > 0 {
            let _ = self.stream.write_all(self.conn.pending_transmit()).await;
            self.conn.advance_transmit(n);
        }
    }

    /// Drives the connection until it has an event; panics after [`WAIT`].
    pub async fn next_event(&mut self) -> Event {
        match tokio::time::timeout(WAIT, self.drive()).await {
            Ok(event) => event,
            Err(_) => panic!("no event within {WAIT:?}: {:?}", self.conn),
        }
    }

    async fn drive(&mut self) -> Event {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            while let Some(event) = self.conn.poll_event() {
                self.events.push_back(event);
            }
            self.flush().await;
            if let Some(event) = self.events.pop_front() {
                return event;
            }
            let wait = self
                .conn
                .poll_timeout()
                .map_or(WAIT, |t| t.saturating_duration_since(Instant::now()));
            match tokio::time::timeout(wait, self.stream.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => self.conn.handle_eof(Instant::now()),
                Ok(Ok(n)) => self.conn.handle_data(Instant::now(), &buf[..n]),
                Err(_) => self.conn.handle_timeout(Instant::now()),
            }
        }
    }

    /// Waits for a CALL of the server.
    pub async fn expect_call(&mut self) -> (MessageId<'static>, Request) {
        loop {
            match self.next_event().await {
                Event::Call { id, request } => return (id, request),
                Event::Closed(closed) => panic!("closed while waiting for a CALL: {closed:?}"),
                _ => {}
            }
        }
    }

    /// Answers CALL `id` with `response`.
    pub async fn respond(&mut self, id: &MessageId<'_>, response: Response) {
        self.answer(id, Answer::Result(response)).await;
    }

    /// Answers CALL `id` with a CALLERROR (e.g. after the server gave up on it).
    pub async fn respond_error(&mut self, id: &MessageId<'_>, code: ErrorCode, description: &str) {
        self.answer(id, Answer::error(code, description)).await;
    }

    async fn answer(&mut self, id: &MessageId<'_>, answer: Answer) {
        self.conn
            .answer(Instant::now(), id, answer)
            .expect("answered");
        self.flush().await;
    }

    /// Waits for the end of the connection.
    pub async fn expect_closed(&mut self) -> Closed {
        loop {
            if let Event::Closed(closed) = self.next_event().await {
                return *closed;
            }
        }
    }
}
