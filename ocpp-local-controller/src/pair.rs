//! The driver of one pair: a station's connection and its own to the central system, relayed
//! until both are over.

use std::collections::HashMap;
use std::io;
use std::sync::Arc;
use std::time::Instant;

use ocpp_proto::{CloseCode, CloseReason, Connection, Event, OcppVersion};
use ocpp_tokio::handler::PeerCertificate;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

use crate::controller::ControllerShared;
use crate::relay::{Output, Relay};
use crate::stations::{Mailbox, OwnCallRequest};
use crate::upstream::connect_upstream;
use crate::OwnCallError;

type Reader = Box<dyn AsyncRead + Send + Unpin>;
type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// One hop: its connection and the two halves of its socket.
pub(crate) struct Hop {
    connection: Connection,
    reader: Reader,
    writer: Writer,
}

impl Hop {
    pub(crate) fn new(
        connection: Connection,
        stream: impl AsyncRead + AsyncWrite + Send + 'static,
    ) -> Hop {
        let (reader, writer) = tokio::io::split(stream);
        Hop {
            connection,
            reader: Box::new(reader),
            writer: Box::new(writer),
        }
    }

    fn done(&self) -> bool {
        self.connection.is_closed() && self.connection.pending_transmit_len() == 0
    }

    /// Hands the connection what a read of its socket into `buf` gave: data, or the end.
    fn handle_read(&mut self, read: io::Result<usize>, buf: &[u8]) {
        match read {
            Ok(n) if n > 0 => self.connection.handle_data(Instant::now(), &buf[..n]),
            _ => self.connection.handle_eof(Instant::now()),
        }
    }

    /// Hands the connection what a write of its output gave: bytes gone, or the end (the rest
    /// of the output dropped).
    fn handle_written(&mut self, written: io::Result<usize>) {
        match written {
            Ok(n) if n > 0 => self.connection.advance_transmit(n),
            _ => {
                let pending = self.connection.pending_transmit_len();
                self.connection.advance_transmit(pending);
                self.connection.handle_eof(Instant::now());
            }
        }
    }
}

/// The code that closes the other hop when one ends with `reason`.
fn close_code(reason: &CloseReason) -> CloseCode {
    match reason {
        CloseReason::PeerClosed {
            code: Some(code), ..
        }
        | CloseReason::LocalClose { code }
            if code.is_valid_on_wire() =>
        {
            *code
        }
        _ => CloseCode::GOING_AWAY,
    }
}

/// The HTTP status that refuses the station when the upstream connection could not open.
fn refusal_status(reason: &CloseReason) -> u16 {
    match reason {
        CloseReason::UpgradeRefused {
            status: Some(status),
            ..
        } if (400..=599).contains(status) => *status,
        CloseReason::NoCommonVersion => 400,
        _ => 502,
    }
}

static NEXT_PAIR: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A hop's socket split for one turn of the loop: its reader, and its writer with the output.
type Halves<'a> = (Option<&'a mut Reader>, Option<(&'a mut Writer, &'a [u8])>);

fn halves(hop: Option<&mut Hop>) -> Halves<'_> {
    match hop {
        Some(hop) => (
            Some(&mut hop.reader),
            Some((&mut hop.writer, hop.connection.pending_transmit())),
        ),
        None => (None, None),
    }
}

async fn read_hop(reader: Option<&mut Reader>, buf: &mut [u8]) -> io::Result<usize> {
    match reader {
        Some(reader) => reader.read(buf).await,
        None => std::future::pending().await,
    }
}

async fn write_hop(writer: Option<(&mut Writer, &[u8])>) -> io::Result<usize> {
    match writer {
        Some((writer, pending)) => writer.write(pending).await,
        None => std::future::pending().await,
    }
}

/// Whether `hop` may be read now: it wants input and the other hop, where its messages go, is
/// not backed up.
fn may_read(hop: &Hop, other: Option<&Hop>) -> bool {
    let backed_up = other.is_some_and(|o| {
        o.connection.pending_transmit_len() > o.connection.config().get_max_outbound_bytes() / 2
    });
    hop.connection.wants_read() && !backed_up
}

/// Relays one station that connects over TLS: its handshake first, bounded by the handshake
/// timeout; a station whose handshake fails or lasts too long is dropped.
pub(crate) async fn relay_tls_pair(
    shared: Arc<ControllerShared>,
    acceptor: tokio_rustls::TlsAcceptor,
    socket: TcpStream,
) {
    let deadline = Instant::now() + shared.config.get_handshake_timeout();
    match tokio::time::timeout_at(deadline.into(), acceptor.accept(socket)).await {
        Ok(Ok(tls)) => {
            let certificate = PeerCertificate::of(tls.get_ref().1);
            relay_pair(shared, tls, certificate).await;
        }
        Ok(Err(error)) => tracing::debug!(%error, "station TLS handshake failed"),
        Err(_) => tracing::debug!("station TLS handshake timed out"),
    }
}

/// Relays one station until both hops are over. A station that showed a client certificate
/// (security profile 3) must carry its identity as the certificate's subject CN, or it is
/// refused with 403 before anything reaches the central system (OCPP 2.0.1 A00, as the
/// reference central system checks it).
pub(crate) async fn relay_pair(
    shared: Arc<ControllerShared>,
    socket: impl AsyncRead + AsyncWrite + Send + 'static,
    certificate: Option<PeerCertificate>,
) {
    let pair = NEXT_PAIR.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut station = Some(Hop::new(
        Connection::accept_incoming(Instant::now(), shared.config.clone()),
        socket,
    ));
    let mut upstream: Option<Hop> = None;
    let mut relay: Option<Relay> = None;
    let mut identity = String::new();
    let (commands_tx, mut commands) =
        mpsc::channel::<OwnCallRequest>(shared.config.get_max_queued_calls().max(1));
    let mut replies: HashMap<String, oneshot::Sender<Result<String, OwnCallError>>> =
        HashMap::new();
    let mut station_buf = vec![0u8; 16 * 1024];
    let mut upstream_buf = vec![0u8; 16 * 1024];
    let mut registered = false;
    let mut rng = fastrand::Rng::new();

    loop {
        let now = Instant::now();
        // The station's events.
        while let Some(event) = station.as_mut().and_then(|s| s.connection.poll_event()) {
            match event {
                Event::UpgradeRequested(upgrade) => {
                    identity = upgrade.identity.as_str().to_owned();
                    let certified = certificate
                        .as_ref()
                        .is_none_or(|c| c.common_name() == Some(identity.as_str()));
                    if !certified {
                        tracing::info!(identity, "the client certificate's CN is not the identity");
                        if let Some(s) = station.as_mut() {
                            let _ = s.connection.reject(now, 403);
                        }
                        continue;
                    }
                    let versions: Vec<OcppVersion> = upgrade
                        .offered_subprotocols
                        .iter()
                        .filter_map(|p| OcppVersion::from_subprotocol(p))
                        .filter(|v| shared.config.get_versions().contains(v))
                        .fold(Vec::new(), |mut vs, v| {
                            if !vs.contains(&v) {
                                vs.push(v);
                            }
                            vs
                        });
                    let password = match &shared.upstream_password {
                        Some(password) => password(&identity),
                        None => upgrade.credentials.as_ref().map(|c| c.password().to_vec()),
                    };
                    let hop = if versions.is_empty() {
                        None
                    } else {
                        connect_upstream(&shared, &upgrade.identity, versions, password, &mut rng)
                            .await
                    };
                    match hop {
                        Some(hop) => upstream = Some(hop),
                        None => {
                            if let Some(s) = station.as_mut() {
                                let status = if upgrade.version.is_none() { 400 } else { 502 };
                                let _ = s.connection.reject(Instant::now(), status);
                            }
                        }
                    }
                }
                Event::Text(text) => {
                    if let Some(relay) = relay.as_mut() {
                        relay.handle_station_text(now, text);
                    }
                }
                Event::Closed(closed) => {
                    tracing::debug!(identity, reason = ?closed.reason, "station closed");
                    if let Some(up) = upstream.as_mut() {
                        up.connection.close(now, close_code(&closed.reason), "");
                    }
                    if let Some(relay) = relay.as_mut() {
                        relay.close();
                    }
                }
                _ => {}
            }
        }
        // The central system's events.
        while let Some(event) = upstream.as_mut().and_then(|u| u.connection.poll_event()) {
            match event {
                Event::Connected { version } => {
                    let accepted = station
                        .as_mut()
                        .is_some_and(|s| s.connection.accept_version(now, version).is_ok());
                    if accepted {
                        relay = Some(Relay::new(
                            &identity,
                            version,
                            shared.hooks.clone(),
                            shared.config.get_call_timeout(),
                            shared.config.get_max_queued_calls(),
                        ));
                        shared.stations.lock().insert(
                            identity.clone(),
                            Mailbox {
                                pair,
                                commands: commands_tx.clone(),
                            },
                        );
                        registered = true;
                    } else if let Some(up) = upstream.as_mut() {
                        up.connection.close(now, CloseCode::GOING_AWAY, "");
                    }
                }
                Event::Text(text) => {
                    if let Some(relay) = relay.as_mut() {
                        relay.handle_csms_text(now, text);
                    }
                }
                Event::Closed(closed) => {
                    tracing::debug!(identity, reason = ?closed.reason, "upstream closed");
                    if let Some(s) = station.as_mut() {
                        if relay.is_some() {
                            s.connection.close(now, close_code(&closed.reason), "");
                        } else {
                            let _ = s.connection.reject(now, refusal_status(&closed.reason));
                        }
                    }
                    if let Some(relay) = relay.as_mut() {
                        relay.close();
                    }
                }
                _ => {}
            }
        }
        // What the relay hands out.
        if let Some(r) = relay.as_mut() {
            while let Some(output) = r.poll_output() {
                let (hop, text) = match output {
                    Output::ToStation(text) => (station.as_mut(), text),
                    Output::ToCsms(text) => (upstream.as_mut(), text),
                    Output::OwnOutcome { id, outcome } => {
                        if let Some(reply) = replies.remove(&id) {
                            let _ = reply.send(outcome);
                        }
                        continue;
                    }
                };
                if let Some(hop) = hop {
                    if hop.connection.send_text(now, &text).is_err() && hop.connection.is_open() {
                        // Over twice the outbound limit: this hop does not read.
                        hop.connection
                            .close(now, CloseCode::TRY_AGAIN_LATER, "backed up");
                    }
                }
            }
        }
        // Drop the hops that are over.
        if station.as_ref().is_some_and(Hop::done) {
            station = None;
            if let Some(up) = upstream.as_mut() {
                up.connection.close(now, CloseCode::GOING_AWAY, "");
            }
        }
        if upstream.as_ref().is_some_and(Hop::done) {
            upstream = None;
            if let Some(s) = station.as_mut() {
                s.connection.close(now, CloseCode::GOING_AWAY, "");
            }
        }
        if station.is_none() && upstream.is_none() {
            break;
        }
        if (station.is_none() || upstream.is_none()) && registered {
            registered = false;
            shared.stations.unregister(&identity, pair);
        }

        let deadline = [
            station.as_ref().and_then(|s| s.connection.poll_timeout()),
            upstream.as_ref().and_then(|u| u.connection.poll_timeout()),
            relay.as_ref().and_then(Relay::poll_timeout),
        ]
        .into_iter()
        .flatten()
        .min();
        let read_station = station
            .as_ref()
            .is_some_and(|s| may_read(s, upstream.as_ref()));
        let read_upstream = upstream
            .as_ref()
            .is_some_and(|u| may_read(u, station.as_ref()));
        let write_station = station
            .as_ref()
            .is_some_and(|s| s.connection.pending_transmit_len() > 0);
        let write_upstream = upstream
            .as_ref()
            .is_some_and(|u| u.connection.pending_transmit_len() > 0);
        let accepting_commands = relay.is_some() && registered;
        let sleep = async {
            match deadline {
                Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
                None => std::future::pending().await,
            }
        };
        let (station_reader, station_writer) = halves(station.as_mut());
        let (upstream_reader, upstream_writer) = halves(upstream.as_mut());
        tokio::select! {
            read = read_hop(station_reader, &mut station_buf), if read_station => {
                if let Some(s) = station.as_mut() {
                    s.handle_read(read, &station_buf);
                }
            }
            read = read_hop(upstream_reader, &mut upstream_buf), if read_upstream => {
                if let Some(u) = upstream.as_mut() {
                    u.handle_read(read, &upstream_buf);
                }
            }
            written = write_hop(station_writer), if write_station => {
                if let Some(s) = station.as_mut() {
                    s.handle_written(written);
                }
            }
            written = write_hop(upstream_writer), if write_upstream => {
                if let Some(u) = upstream.as_mut() {
                    u.handle_written(written);
                }
            }
            () = sleep => {
                let now = Instant::now();
                if let Some(s) = station.as_mut() {
                    s.connection.handle_timeout(now);
                }
                if let Some(u) = upstream.as_mut() {
                    u.connection.handle_timeout(now);
                }
                if let Some(r) = relay.as_mut() {
                    r.handle_timeout(now);
                }
            }
            Some(command) = commands.recv(), if accepting_commands => {
                if let Some(r) = relay.as_mut() {
                    match r.call(Instant::now(), &command.action, &command.payload) {
                        Ok(id) => {
                            replies.insert(id, command.reply);
                        }
                        Err(error) => {
                            let _ = command.reply.send(Err(error));
                        }
                    }
                }
            }
        }
    }
    // Whatever still waits fails.
    for (_, reply) in replies {
        let _ = reply.send(Err(OwnCallError::Disconnected));
    }
    if registered {
        shared.stations.unregister(&identity, pair);
    }
}
