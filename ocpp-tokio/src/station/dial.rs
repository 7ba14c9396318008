//! Opening a connection: the next central system, TCP and TLS, the upgrade request.

use super::driver::*;
use std::io;
use std::time::Instant;

use ocpp_proto::station::Attempt;
use ocpp_proto::{ConnectTarget, Connection};
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;

use super::Cause;

/// A plain or TLS stream.
pub(super) enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl Task {
    /// The central system of the lifecycle's attempt: the URL connected to from now on
    /// (unchanged when there is no profile at all).
    pub(super) fn next_target(
        &mut self,
        attempt: Option<Attempt>,
    ) -> Result<(), (Cause, io::Error)> {
        let Some(attempt) = attempt else {
            return Ok(());
        };
        self.config = attempt.profile.connection_config(&self.base_config);
        let url = attempt
            .profile
            .station_url(self.url.identity())
            .map_err(|e| {
                (
                    Cause::Other,
                    io::Error::new(io::ErrorKind::InvalidInput, e.to_string()),
                )
            })?;
        if url != self.url {
            tracing::info!(identity = %self.url.identity(), slot = attempt.profile.slot, url = %attempt.profile.csms_url, fallback = attempt.fallback, "central system");
        }
        self.url = url;
        Ok(())
    }

    /// TCP, then TLS: the stream (`None`: closed meanwhile), or why not.
    pub(super) async fn open(&mut self) -> Result<Option<Stream>, (Cause, io::Error)> {
        let authority = self.url.authority().to_owned();
        let tls = match (self.url.tls(), &self.tls) {
            (false, _) => None,
            (true, None) => {
                let error = io::Error::new(io::ErrorKind::InvalidInput, "wss:// without TLS");
                return Err((Cause::Tls, error));
            }
            (true, Some(config)) => {
                let name = ServerName::try_from(self.url.server_name().to_owned())
                    .map_err(|e| (Cause::Tls, io::Error::new(io::ErrorKind::InvalidInput, e)))?;
                Some((config.clone(), name))
            }
        };
        let connect = async move {
            let tcp = TcpStream::connect(authority)
                .await
                .map_err(|e| (Cause::Connect(e.kind()), e))?;
            let _ = tcp.set_nodelay(true);
            let Some((config, name)) = tls else {
                return Ok(Stream::Plain(tcp));
            };
            let connector = tokio_rustls::TlsConnector::from(config);
            let tls = connector
                .connect(name, tcp)
                .await
                .map_err(|e| (Cause::Tls, e))?;
            Ok(Stream::Tls(Box::new(tls)))
        };
        let connect = tokio::time::timeout(CONNECT_TIMEOUT, connect);
        match self.offline_while(connect).await {
            None => Ok(None),
            Some(Ok(Ok(stream))) => Ok(Some(stream)),
            Some(Ok(Err(failed))) => Err(failed),
            Some(Err(_)) => Err((
                Cause::Connect(io::ErrorKind::TimedOut),
                io::Error::new(io::ErrorKind::TimedOut, "connect timed out"),
            )),
        }
    }

    /// The upgrade request of a new connection (`None`: it could not be built).
    pub(super) fn dial(&mut self, now: Instant) -> Option<Connection<CallWaiter>> {
        let mut target = ConnectTarget::new(
            self.url.authority(),
            self.url.endpoint(),
            self.url.identity().clone(),
        );
        if let Some(password) = &self.password {
            target = target.with_password(password);
        }
        let mut key = [0u8; 16];
        self.rng.fill(&mut key);
        let seed = self.rng.u64(..);
        match Connection::connect_with_callers(now, self.config.clone(), &target, key, seed) {
            Ok(conn) => Some(conn),
            Err(error) => {
                tracing::warn!(identity = %self.url.identity(), %error, "upgrade request not built");
                None
            }
        }
    }
}
