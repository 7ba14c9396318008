//! A peer that sees and writes raw text frames (the core's relay-text mode): a station (client)
//! or a central system, for the Local Controller's tests.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ocpp_proto::{
    ChargePointIdentity, CloseReason, ConnectTarget, Connection, ConnectionConfig, Event,
    OcppVersion,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How long a peer waits for an event.
pub const WAIT: Duration = Duration::from_secs(10);

/// A connection configuration that hands over texts as they came (`Event::Text`), with no
/// pings or idle timeout of its own.
pub fn relay_config(version: OcppVersion) -> Arc<ConnectionConfig> {
    Arc::new(
        ConnectionConfig::default()
            .versions(vec![version])
            .ping_interval(None)
            .idle_timeout(None)
            .relay_text(true),
    )
}

pub struct RelayTextPeer {
    pub stream: TcpStream,
    pub conn: Connection,
    events: VecDeque<Event>,
}

impl RelayTextPeer {
    /// A station: connects and writes its upgrade request (the 101 comes as `Connected`).
    pub async fn station(addr: SocketAddr, identity: &str, version: OcppVersion) -> RelayTextPeer {
        let stream = TcpStream::connect(addr).await.unwrap();
        let identity = ChargePointIdentity::new(identity.into(), false).unwrap();
        let target = ConnectTarget::new(&addr.to_string(), "/ocpp", identity);
        let conn = Connection::connect(Instant::now(), relay_config(version), &target, [3; 16], 9)
            .unwrap();
        let mut peer = RelayTextPeer {
            stream,
            conn,
            events: VecDeque::new(),
        };
        peer.flush().await;
        peer
    }

    /// A central system: accepts one connection and its upgrade; returns the request path.
    pub async fn csms(listener: &TcpListener, version: OcppVersion) -> (RelayTextPeer, String) {
        let (stream, _) = tokio::time::timeout(WAIT, listener.accept())
            .await
            .unwrap()
            .unwrap();
        let conn = Connection::accept_incoming(Instant::now(), relay_config(version));
        let mut peer = RelayTextPeer {
            stream,
            conn,
            events: VecDeque::new(),
        };
        let path = match peer.next_event().await {
            Event::UpgradeRequested(upgrade) => upgrade.path,
            other => panic!("expected an upgrade, got {other:?}"),
        };
        peer.conn.accept(Instant::now()).unwrap();
        assert!(matches!(peer.next_event().await, Event::Connected { .. }));
        (peer, path)
    }

    pub async fn flush(&mut self) {
        let n = self.conn.pending_transmit_len();
        if n > 0 {
            let _ = self.stream.write_all(self.conn.pending_transmit()).await;
            self.conn.advance_transmit(n);
        }
    }

    /// The next event, reading (bounded by [`WAIT`]) until there is one.
    pub async fn next_event(&mut self) -> Event {
        let deadline = tokio::time::Instant::now() + WAIT;
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            while let Some(event) = self.conn.poll_event() {
                self.events.push_back(event);
            }
            self.flush().await;
            if let Some(event) = self.events.pop_front() {
                return event;
            }
            let read = tokio::time::timeout_at(deadline, self.stream.read(&mut buf));
            match read.await.expect("an event within the wait") {
                Ok(0) | Err(_) => self.conn.handle_eof(Instant::now()),
                Ok(n) => self.conn.handle_data(Instant::now(), &buf[..n]),
            }
        }
    }

    pub async fn send(&mut self, text: &str) {
        self.conn.send_text(Instant::now(), text).unwrap();
        self.flush().await;
    }

    pub async fn next_text(&mut self) -> String {
        match self.next_event().await {
            Event::Text(text) => text,
            other => panic!("expected a text, got {other:?}"),
        }
    }

    pub async fn expect_closed(&mut self) -> CloseReason {
        loop {
            if let Event::Closed(closed) = self.next_event().await {
                return closed.reason;
            }
        }
    }
}
