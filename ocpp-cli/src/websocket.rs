//! A small WebSocket client (RFC 6455, client role, `ws://` only) on ocpp-frame's Sans-IO
//! handshake and codec: it sends texts exactly as given, which replaying a capture needs and a
//! [`Station`](ocpp_tokio::Station) (which writes its own messages) cannot do.
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

use ocpp_frame::handshake::{ClientHandshake, ClientRequest, Progress, SecWebSocketKey};
use ocpp_frame::{Decoder, DecoderConfig, Encoder, Message, Role};
use ocpp_messages::OcppVersion;
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
    decoder: Decoder,
    encoder: Encoder,
    /// Bytes read and not yet decoded.
    pending: Vec<u8>,
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
        let full = format!("{}/{}", base_url.trim_end_matches('/'), encode(identity));
        let bad = |reason: String| LinkError::Url {
            url: full.clone(),
            reason,
        };
        let url = StationUrl::parse(&full).map_err(|e| bad(e.to_string()))?;
        if url.tls() {
            return Err(bad("wss:// is not supported by this tool's client".into()));
        }
        let port = url
            .authority()
            .rsplit_once(':')
            .and_then(|(_, port)| port.parse::<u16>().ok())
            .unwrap_or(80);
        let target = format!(
            "{}/{}",
            url.endpoint().trim_end_matches('/'),
            encode(identity)
        );
        let key = SecWebSocketKey::from_bytes(fastrand::u128(..).to_le_bytes());
        let request = ClientRequest::new(url.server_name(), &target, key)
            .and_then(|r| r.with_subprotocol(version.subprotocol()))
            .map_err(|e| bad(e.to_string()))?
            .with_port(port);
        let mut stream = TcpStream::connect(url.authority()).await?;
        stream.set_nodelay(true)?;
        let mut out = Vec::new();
        request.write(&mut out);
        stream.write_all(&out).await?;
        let mut handshake = ClientHandshake::new(&request);
        let mut buf = vec![0u8; 4096];
        loop {
            let n = stream.read(&mut buf).await?;
            if n == 0 {
                return Err(LinkError::Handshake(
                    "the server closed before answering".into(),
                ));
            }
            let data = buf.get(..n).unwrap_or_default();
            match handshake.handle_data(data) {
                Ok(Progress::NeedMore) => continue,
                Ok(Progress::Complete { value, consumed }) => {
                    return Ok(Link {
                        stream,
                        decoder: Decoder::new(Role::Client, DecoderConfig::default()),
                        encoder: Encoder::new(Role::Client),
                        pending: data.get(consumed..).unwrap_or_default().to_vec(),
                        subprotocol: value.subprotocol().map(String::from),
                    });
                }
                Err(error) => return Err(LinkError::Handshake(error.to_string())),
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
    /// [`LinkError::Io`] when the socket fails.
    pub async fn send_text(&mut self, text: &str) -> Result<(), LinkError> {
        let mut out = Vec::with_capacity(text.len() + 14);
        self.encoder
            .encode_text(text, Some(fastrand::u32(..).to_be_bytes()), &mut out)
            .map_err(|e| LinkError::Protocol(e.to_string()))?;
        self.stream.write_all(&out).await?;
        Ok(())
    }

    /// The next text message; pings are answered on the way.
    ///
    /// # Errors
    /// [`LinkError::Closed`] when the server closed the connection, or the socket's or the
    /// protocol's error.
    pub async fn next_text(&mut self) -> Result<String, LinkError> {
        let mut buf = vec![0u8; 8192];
        loop {
            while !self.pending.is_empty() {
                let decoded = self
                    .decoder
                    .decode(&self.pending)
                    .map_err(|e| LinkError::Protocol(e.to_string()))?;
                self.pending
                    .drain(..decoded.consumed.min(self.pending.len()));
                match decoded.message {
                    Some(Message::Text(text)) => return Ok(text.as_str().to_string()),
                    Some(Message::Ping(payload)) => {
                        let mut out = Vec::new();
                        let mask = Some(fastrand::u32(..).to_be_bytes());
                        self.encoder
                            .encode_pong(&payload, mask, &mut out)
                            .map_err(|e| LinkError::Protocol(e.to_string()))?;
                        self.stream.write_all(&out).await?;
                    }
                    Some(Message::Close(_)) => return Err(LinkError::Closed),
                    Some(_) => {}
                    None => break,
                }
            }
            let n = self.stream.read(&mut buf).await?;
            if n == 0 {
                return Err(LinkError::Closed);
            }
            self.pending
                .extend_from_slice(buf.get(..n).unwrap_or_default());
        }
    }

    /// Sends a close frame (1000) and drops the connection.
    pub async fn close(mut self) {
        let mut out = Vec::new();
        let mask = Some(fastrand::u32(..).to_be_bytes());
        if self
            .encoder
            .encode_close(Some((ocpp_frame::CloseCode::NORMAL, "")), mask, &mut out)
            .is_ok()
        {
            let _ = self.stream.write_all(&out).await;
        }
        let _ = self.stream.shutdown().await;
    }
}

/// Percent-encodes an identity for a URL path segment (RFC 3986 unreserved characters kept).
fn encode(identity: &str) -> String {
    let mut out = String::with_capacity(identity.len());
    for byte in identity.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_are_encoded() {
        assert_eq!(encode("CP-1"), "CP-1");
        assert_eq!(encode("RDAM|1"), "RDAM%7C1");
    }
}
