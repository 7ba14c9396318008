//! The connection of a pair to the central system: TCP, or TLS over it, and its upgrade request.

use std::sync::Arc;
use std::time::Instant;

use ocpp_proto::{ConnectTarget, Connection, OcppVersion};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use crate::controller::ControllerShared;
use crate::pair::Hop;

/// A socket towards the central system: TCP, or TLS over it.
trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}
impl<S: AsyncRead + AsyncWrite + Send + Unpin> Stream for S {}

/// The name a `wss://` host's certificate must carry: the host without its port (and an IPv6
/// literal without its brackets).
pub(crate) fn server_name(host: &str) -> Option<rustls::pki_types::ServerName<'static>> {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split_once(']').map(|(name, _)| name)?,
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    rustls::pki_types::ServerName::try_from(name.to_owned()).ok()
}

/// Opens the TCP (and TLS) connection to the central system and writes the upgrade request for
/// `identity` (the handshake then completes in the pair's loop); `None` when the central
/// system cannot be reached within the handshake timeout.
pub(crate) async fn connect_upstream(
    shared: &ControllerShared,
    identity: &ocpp_proto::ChargePointIdentity,
    versions: Vec<OcppVersion>,
    password: Option<Vec<u8>>,
    rng: &mut fastrand::Rng,
) -> Option<Hop> {
    let config = Arc::new((*shared.config).clone().versions(versions));
    let timeout = config.get_handshake_timeout();
    let stream = tokio::time::timeout(timeout, TcpStream::connect(shared.host.as_str()))
        .await
        .ok()?
        .ok()?;
    let _ = stream.set_nodelay(true);
    let stream: Box<dyn Stream> = match &shared.tls {
        Some((connector, name)) => {
            let tls = connector.connect(name.clone(), stream);
            Box::new(tokio::time::timeout(timeout, tls).await.ok()?.ok()?)
        }
        None => Box::new(stream),
    };
    let mut target = ConnectTarget::new(&shared.host, &shared.endpoint, identity.clone());
    if let Some(password) = password {
        target = target.with_password(&password);
    }
    let mut key = [0u8; 16];
    rng.fill(&mut key);
    let connection = Connection::connect(Instant::now(), config, &target, key, rng.u64(..)).ok()?;
    Some(Hop::new(connection, stream))
}
