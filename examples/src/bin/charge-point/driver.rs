//! The I/O loop of one charge point: a tokio task that owns a `TcpStream`, the clock and the
//! reconnect schedule, and drives the Sans-IO `Connection` and [`Station`] with them. With
//! `wss://` a Sans-IO `TlsSession` (rustls) sits between the socket and the connection.
//!
//! # The loop
//!
//! ```text
//!  connect (TCP) ──▶ Connection::connect writes the upgrade request
//!        ▲                         │
//!        │            ┌────────────▼─────────────┐
//!        │            │ drain events → Station   │  Connected: boot; Call: answer;
//!        │            │ write pending_transmit   │  CallCompleted: next step
//!        │            │ deadline = min(conn,     │
//!        │            │            station)      │
//!        │            └────────────┬─────────────┘
//!        │       select! { socket readable → handle_data / handle_eof,
//!        │                 socket writable (only with output pending),
//!        │                 sleep_until(deadline) → handle_timeout (both),
//!        │                 stop command → close(1000) }
//!        │                         │ Event::Closed
//!   back-off wait ◀────────────────┘ (or at once after a Reset)
//! ```
//!
//! The connection never sees the socket: it is handed bytes and `now`, and hands back
//! events, bytes to write and its next deadline. That is all an I/O loop needs to offer, so
//! the very same core runs here on tokio's readiness API (`readable()`, `try_read`,
//! `writable()`, `try_write`, `sleep_until`) and in the CSMS on a mio `Poll`: neither the
//! core nor the station knows which.

use std::cell::RefCell;
use std::io;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ocpp_examples::tls::{Received, TlsSession, TryIo};
use ocpp_frame::CloseCode;
use ocpp_server_core::{ChargePointIdentity, ConnectTarget, Connection, ConnectionConfig, Event};
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::sleep_until;
use tracing::{debug, info, warn};

use super::cli::Options;
use super::station::Station;
use super::stats::Stats;

/// Bytes read per `try_read` (one scratch buffer per charge point).
const READ_BUFFER: usize = 16 * 1024;
/// The most time a TCP connect may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// A deadline far enough away to mean "none".
const FAR: Duration = Duration::from_secs(24 * 3600);

/// How one connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    /// Lost or refused: reconnect after the back-off.
    Lost,
    /// Closed for a Reset: reconnect at once.
    Reboot,
    /// The stop command came: leave.
    Stopped,
}

/// `wss://`: the TLS client configuration and the name the server's certificate must carry.
#[derive(Debug, Clone)]
pub(crate) struct TlsTarget {
    pub(crate) config: Arc<rustls::ClientConfig>,
    pub(crate) server_name: ServerName<'static>,
}

/// Everything one charge point's task needs.
#[derive(Debug)]
pub(crate) struct Driver {
    options: Rc<Options>,
    config: Arc<ConnectionConfig>,
    tls: Option<TlsTarget>,
    identity: ChargePointIdentity,
    station: Station,
    rng: fastrand::Rng,
    stop: watch::Receiver<bool>,
    stats: Rc<RefCell<Stats>>,
    buf: Vec<u8>,
}

impl Driver {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        options: Rc<Options>,
        config: Arc<ConnectionConfig>,
        tls: Option<TlsTarget>,
        identity: ChargePointIdentity,
        stats: Rc<RefCell<Stats>>,
        stop: watch::Receiver<bool>,
        seed: u64,
    ) -> Self {
        let station = Station::new(
            Instant::now(),
            identity.as_str().to_owned(),
            &options,
            stats.clone(),
        );
        Driver {
            options,
            config,
            tls,
            identity,
            station,
            rng: fastrand::Rng::with_seed(seed),
            stop,
            stats,
            buf: vec![0; READ_BUFFER],
        }
    }

    fn stopping(&self) -> bool {
        *self.stop.borrow()
    }

    /// Connects, runs, reconnects, until the stop command.
    pub(crate) async fn run(mut self) {
        while !self.stopping() {
            self.stats.borrow_mut().attempts += 1;
            let ended = match self.connect_tcp().await {
                Some(Ok(stream)) => self.drive(stream).await,
                Some(Err(error)) => {
                    warn!(identity = %self.identity, %error, "TCP connect failed");
                    Ended::Lost
                }
                None => Ended::Stopped,
            };
            let delay = match ended {
                Ended::Stopped => break,
                Ended::Reboot => Duration::ZERO,
                Ended::Lost => self.station.reconnect.next_delay(self.rng.f64()),
            };
            if !delay.is_zero() {
                info!(identity = %self.identity, delay_ms = delay.as_millis() as u64, "reconnecting after back-off");
            }
            if !self.wait_offline(Instant::now() + delay).await {
                break;
            }
        }
        debug!(identity = %self.identity, "stopped");
    }

    /// The TCP connection (`None`: the stop command came first).
    async fn connect_tcp(&mut self) -> Option<io::Result<TcpStream>> {
        let connect = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&self.options.host));
        tokio::select! {
            result = connect => Some(match result {
                Ok(Ok(stream)) => {
                    let _ = stream.set_nodelay(true);
                    Ok(stream)
                }
                Ok(Err(error)) => Err(error),
                Err(_) => Err(io::Error::new(io::ErrorKind::TimedOut, "connect timed out")),
            }),
            _ = self.stop.changed() => None,
        }
    }

    /// Waits until `until` while disconnected; the station's timers still run (a transaction
    /// goes on offline). Returns `false` if the stop command came.
    async fn wait_offline(&mut self, until: Instant) -> bool {
        loop {
            let now = Instant::now();
            if now >= until {
                return true;
            }
            let deadline = self.station.poll_timeout().map_or(until, |t| t.min(until));
            tokio::select! {
                _ = sleep_until(deadline.into()) => {
                    self.station.handle_timeout(Instant::now(), None);
                }
                _ = self.stop.changed() => return false,
            }
        }
    }

    /// One WebSocket connection, from the upgrade request to `Event::Closed`.
    async fn drive(&mut self, stream: TcpStream) -> Ended {
        let now = Instant::now();
        let mut key = [0u8; 16];
        key.iter_mut().for_each(|b| *b = self.rng.u8(..));
        // `Host: host[:port]`, as in the URL (RFC 7230 §5.4).
        let mut target = ConnectTarget::new(
            &self.options.host,
            &self.options.endpoint,
            self.identity.clone(),
        );
        if let Some(password) = &self.options.password {
            target = target.with_password(password.0.as_bytes());
        }
        let mut tls = match &self.tls {
            None => None,
            Some(tls) => match TlsSession::client(tls.config.clone(), tls.server_name.clone()) {
                Ok(session) => Some(session),
                Err(error) => {
                    warn!(identity = %self.identity, %error, "TLS session not created");
                    return Ended::Lost;
                }
            },
        };
        let mut conn =
            match Connection::connect(now, self.config.clone(), &target, key, self.rng.u64(..)) {
                Ok(conn) => conn,
                Err(error) => {
                    warn!(identity = %self.identity, %error, "upgrade request not built");
                    return Ended::Lost;
                }
            };
        let mut stopping = false;
        loop {
            let now = Instant::now();
            // 1. What the connection has to say.
            while let Some(event) = conn.poll_event() {
                match event {
                    Event::Connected { version } => {
                        self.station.on_connected(now, &mut conn, version)
                    }
                    Event::Closed(closed) => {
                        let reboot = self.station.on_closed(&closed);
                        // The close frame, if any, and TLS's close_notify go out before the
                        // socket is dropped.
                        let _ = flush(&stream, tls.as_mut(), &mut conn);
                        if let Some(session) = &mut tls {
                            session.close();
                            let _ = session.write_to(&mut TryIo(&stream));
                        }
                        return if stopping {
                            Ended::Stopped
                        } else if reboot {
                            Ended::Reboot
                        } else {
                            Ended::Lost
                        };
                    }
                    other => self.station.on_event(now, &mut conn, other),
                }
            }
            if self.station.wants_close(&conn) {
                self.station.closing_for_reset();
                conn.close(now, CloseCode::NORMAL, "reset");
                continue;
            }
            // 2. Write what the socket takes now.
            if let Err(error) = flush(&stream, tls.as_mut(), &mut conn) {
                debug!(identity = %self.identity, %error, "write failed");
                conn.handle_eof(now);
                continue;
            }
            // 3. Sleep until the socket or a deadline wakes us.
            let deadline = [conn.poll_timeout(), self.station.poll_timeout()]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(now + FAR);
            let want_write =
                conn.pending_transmit_len() > 0 || tls.as_ref().is_some_and(|t| t.wants_write());
            tokio::select! {
                ready = stream.readable() => {
                    let now = Instant::now();
                    if ready.is_err() {
                        conn.handle_eof(now);
                        continue;
                    }
                    if let Some(session) = &mut tls {
                        let received = session.receive(&mut TryIo(&stream), &mut self.buf, |plaintext| {
                            conn.handle_data(now, plaintext)
                        });
                        match received {
                            Received::Progress | Received::WouldBlock => {}
                            Received::Closed => conn.handle_eof(now),
                            Received::Failed(error) => {
                                // E.g. the CSMS's certificate is not trusted (UnknownIssuer),
                                // or it refused ours with an alert.
                                warn!(identity = %self.identity, %error, "TLS failed");
                                session.abandon();
                                let _ = session.write_to(&mut TryIo(&stream));
                                conn.handle_eof(now);
                            }
                            Received::Io(error) => {
                                debug!(identity = %self.identity, %error, "read failed");
                                conn.handle_eof(now);
                            }
                        }
                        continue;
                    }
                    match stream.try_read(&mut self.buf) {
                        Ok(0) => conn.handle_eof(now),
                        Ok(n) => conn.handle_data(now, &self.buf[..n]),
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                        Err(error) => {
                            debug!(identity = %self.identity, %error, "read failed");
                            conn.handle_eof(now);
                        }
                    }
                }
                // Only with output waiting: the flush at the top of the loop writes it.
                _ = stream.writable(), if want_write => {}
                _ = sleep_until(deadline.into()) => {
                    let now = Instant::now();
                    conn.handle_timeout(now);
                    self.station.handle_timeout(now, Some(&mut conn));
                }
                _ = self.stop.changed(), if !stopping => {
                    stopping = true;
                    info!(identity = %self.identity, "closing");
                    conn.close(Instant::now(), CloseCode::NORMAL, "shutting down");
                }
            }
        }
    }
}

/// Writes as much pending output as the socket takes without blocking (through TLS, if on).
fn flush(
    stream: &TcpStream,
    tls: Option<&mut TlsSession>,
    conn: &mut Connection,
) -> io::Result<()> {
    if let Some(session) = tls {
        loop {
            let taken = session.send(&mut TryIo(stream), conn.pending_transmit())?;
            conn.advance_transmit(taken);
            if taken == 0 || conn.pending_transmit_len() == 0 {
                return Ok(());
            }
        }
    }
    while conn.pending_transmit_len() > 0 {
        match stream.try_write(conn.pending_transmit()) {
            Ok(n) => conn.advance_transmit(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
