//! A small WebSocket client (client role, `ws://` only) that sends texts exactly as given,
//! which replaying a capture needs and a [`Station`](ocpp_tokio::Station) (which writes its own
//! messages) cannot do: the core's client connection
//! ([`Connection::connect`](ocpp_proto::Connection::connect)) in relay mode
//! ([`ConnectionConfig::relay_text`]), driven on a tokio socket. The handshake, masking, pings
//! and the close are the core's.
//!
//! ```no_run
//! use ocpp_cli::websocket::Link;
//! use ocpp_messages::OcppVersion;
//!
//! # async fn run() -> Result<(), ocpp_cli::websocket::LinkError> {
//! let mut link = Link::connect("ws://127.0.0.1:9000/ocpp", "CP1", OcppVersion::V1_6).await?;
//! link.send_text(r#"[2,"1","Heartbeat",{}]"#).await?;
//! let answer = link.next_text().await?;
//! # let _ = answer; Ok(()) }
//! ```

use std::io;
use std::sync::Arc;
use std::time::Instant;

use ocpp_messages::OcppVersion;
use ocpp_proto::{
    ChargePointIdentity, CloseCode, ConnectTarget, Connection, ConnectionConfig, Event,
};
use ocpp_tokio::station::StationUrl;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Why a link failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LinkError {
    /// The URL is not `ws://host[:port]/path`.
    #[error("bad URL `{url}`: {reason}")]
    Url {
        /// The URL.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// A socket error.
    #[error("socket: {0}")]
    Io(#[from] io::Error),
    /// The server refused the upgrade or answered it wrongly.
    #[error("WebSocket handshake: {0}")]
    Handshake(String),
    /// The server broke RFC 6455.
    #[error("WebSocket protocol: {0}")]
    Protocol(String),
    /// The server closed the connection.
    #[error("the server closed the connection")]
    Closed,
}

/// One WebSocket connection to a central system, as a charge point.
#[derive(Debug)]
pub struct Link {
    stream: TcpStream,
    connection: Connection,
    /// The subprotocol the server chose.
    subprotocol: Option<String>,
}

impl Link {
    /// Connects to `base_url` + `/` + `identity` (percent-encoded), offering `version`'s
    /// subprotocol only.
    ///
    /// # Errors
    /// [`LinkError`] when the URL is bad, the socket fails or the upgrade is refused.
    pub async fn connect(
        base_url: &str,
        identity: &str,
        version: OcppVersion,
    ) -> Result<Link, LinkError> {
        let bad = |reason: String| LinkError::Url {
            url: format!("{}/{identity}", base_url.trim_end_matches('/')),
            reason,
        };
        // The base URL has no identity: parsed with a placeholder in its place, for the
        // authority and the endpoint (the identity goes into the target, encoded there).
        let with_placeholder = format!("{}/_", base_url.trim_end_matches('/'));
        let url = StationUrl::parse(&with_placeholder).map_err(|e| bad(e.to_string()))?;
        if url.tls() {
            return Err(bad("wss:// is not supported by this tool's client".into()));
        }
        let identity =
            ChargePointIdentity::new(identity.to_owned(), false).map_err(|e| bad(e.to_string()))?;
        let target = ConnectTarget::new(url.authority(), url.endpoint(), identity);
        let config = ConnectionConfig::default()
            .versions(vec![version])
            .relay_text(true)
            .ping_interval(None)
            .idle_timeout(None);
        let key = fastrand::u128(..).to_le_bytes();
        let connection = Connection::connect(
            Instant::now(),
            Arc::new(config),
            &target,
            key,
            fastrand::u64(..),
        )
        .map_err(|e| bad(e.to_string()))?;
        let stream = TcpStream::connect(url.authority()).await?;
        stream.set_nodelay(true)?;
        let mut link = Link {
            stream,
            connection,
            subprotocol: None,
        };
        loop {
            match link.next_event().await? {
                Event::Connected { version } => {
                    link.subprotocol = Some(version.subprotocol().to_owned());
                    return Ok(link);
                }
                Event::Closed(closed) => {
                    return Err(LinkError::Handshake(format!("{:?}", closed.reason)))
                }
                _ => {}
            }
        }
    }

    /// The subprotocol the server chose.
    pub fn subprotocol(&self) -> Option<&str> {
        self.subprotocol.as_deref()
    }

    /// Sends one text message, exactly.
    ///
    /// # Errors
    /// [`LinkError::Closed`] when the connection is over, [`LinkError::Io`] when the socket
    /// fails.
    pub async fn send_text(&mut self, text: &str) -> Result<(), LinkError> {
        self.connection
            .send_text(Instant::now(), text)
            .map_err(|e| LinkError::Protocol(e.to_string()))?;
        self.flush().await
    }

    /// The next text message (the core answers pings on the way).
    ///
    /// # Errors
    /// [`LinkError::Closed`] when the server closed the connection, or the socket's or the
    /// protocol's error.
    pub async fn next_text(&mut self) -> Result<String, LinkError> {
        loop {
            match self.next_event().await? {
                Event::Text(text) => return Ok(text),
                Event::Closed(_) => return Err(LinkError::Closed),
                _ => {}
            }
        }
    }

    /// Sends a close frame (1000) and drops the connection.
    pub async fn close(mut self) {
        self.connection.close(Instant::now(), CloseCode::NORMAL, "");
        let _ = self.flush().await;
        let _ = self.stream.shutdown().await;
    }

    /// The connection's next event, reading from the socket until there is one.
    async fn next_event(&mut self) -> Result<Event, LinkError> {
        let mut buf = vec![0u8; 8192];
        loop {
            self.flush().await?;
            if let Some(event) = self.connection.poll_event() {
                return Ok(event);
            }
            let n = self.stream.read(&mut buf).await?;
            let now = Instant::now();
            match buf.get(..n) {
                Some([]) | None => self.connection.handle_eof(now),
                Some(data) => self.connection.handle_data(now, data),
            }
        }
    }

    /// Writes what the connection has to send.
    async fn flush(&mut self) -> Result<(), LinkError> {
        let pending = self.connection.pending_transmit();
        if !pending.is_empty() {
            self.stream.write_all(pending).await?;
            let n = pending.len();
            self.connection.advance_transmit(n);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The upgrade goes to the base URL's path with the identity percent-encoded after it.
    #[tokio::test]
    async fn the_upgrade_names_the_endpoint_and_the_encoded_identity() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("ws://{}/ocpp/", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut head = vec![0u8; 1024];
            let n = socket.read(&mut head).await.unwrap();
            String::from_utf8_lossy(&head[..n]).into_owned()
        });
        let link = Link::connect(&base, "RDAM|1", OcppVersion::V1_6).await;
        assert!(matches!(link, Err(LinkError::Handshake(_))), "{link:?}");
        let request = server.await.unwrap();
        assert!(
            request.starts_with("GET /ocpp/RDAM%7C1 HTTP/1.1\r\n"),
            "{request}"
        );
    }
}
