//! A worker's connections: pacing the connects, opening, losing a link; and each socket's I/O.

use std::io::{self, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Interest, Token};
use nix::sys::socket::{setsockopt, sockopt};
use ocpp_proto::{ChargePointIdentity, ConnectTarget, Connection};
use ocpp_reference_csms::push::unix_nanos_now;
use socket2::{Domain, Socket, Type};

use super::{read_stamped, ChargePointSocket, LoadPhase, Worker, CONNECTS_PER_TURN, READ_BUFFER};

impl Worker {
    pub(super) fn pace_connects(&mut self) {
        if self.phase != LoadPhase::Connect {
            return;
        }
        let now = Instant::now();
        let mut opened = 0;
        while opened < CONNECTS_PER_TURN
            && self.connect_next < self.primaries
            && self.connect_due(self.connect_next) <= now
        {
            opened += 1;
            let local = self.connect_next;
            self.connect_next += 1;
            self.start_connect(local, now);
        }
    }

    /// The identity of `cps[local]`: a soak duplicate takes the one of the charge point it
    /// doubles.
    pub(super) fn identity(&self, local: usize) -> String {
        let own = self.cps[local].soak.alias.unwrap_or(local);
        format!("{}{:06}", self.options.prefix, self.first + own)
    }

    pub(super) fn start_connect(&mut self, local: usize, now: Instant) {
        self.cps[local].attempt_started = now;
        self.cps[local].attempts += 1;
        match self.open(local, now) {
            Ok(link) => {
                self.cps[local].link = Some(link);
            }
            Err(e) => {
                tracing::debug!(local, "connect: {e}");
                self.stats.add("connect_errors", 1);
                self.link_lost(local, now);
            }
        }
        self.reschedule(local);
    }

    pub(super) fn open(&mut self, local: usize, now: Instant) -> io::Result<ChargePointSocket> {
        let global = self.first + local;
        let source = self.sources[global % self.sources.len()];
        let socket = Socket::new(Domain::for_address(self.target), Type::STREAM, None)?;
        socket.set_nonblocking(true)?;
        socket.set_tcp_nodelay(true)?;
        if self.sources.len() > 1 || !source.is_loopback() || source.to_string() != "127.0.0.1" {
            socket.bind(&SocketAddr::new(source, 0).into())?;
        }
        match socket.connect(&self.target.into()) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(nix::errno::Errno::EINPROGRESS as i32) => {}
            Err(e) => return Err(e),
        }
        let std_stream: std::net::TcpStream = socket.into();
        let mut stream = TcpStream::from_std(std_stream);
        if self.options.kernel_timestamps() {
            setsockopt(&stream, sockopt::ReceiveTimestampns, &true)?;
        }
        self.poll.registry().register(
            &mut stream,
            Token(local),
            Interest::READABLE | Interest::WRITABLE,
        )?;
        let identity = ChargePointIdentity::new(self.identity(local), false)
            .map_err(|e| io::Error::other(e.to_string()))?;
        let mut target =
            ConnectTarget::new(&self.options.url.host, &self.options.url.endpoint, identity);
        if let Some(password) = &self.options.password {
            target = target.with_password(password.as_bytes());
        }
        let mut key = [0u8; 16];
        self.rng.fill(&mut key);
        let seed = self.rng.u64(..);
        let conn = Connection::connect_with_callers(now, self.config.clone(), &target, key, seed)
            .map_err(|e| io::Error::other(e.to_string()))?;
        Ok(ChargePointSocket {
            stream,
            conn,
            connected: false,
            wants_write: true,
        })
    }

    /// The connection of `local` is gone (closed, refused, reset): settle the bookkeeping and,
    /// in the reconnect phase, schedule the next attempt.
    pub(super) fn link_lost(&mut self, local: usize, now: Instant) {
        let phase = self.phase;
        let cp = &mut self.cps[local];
        if let Some(mut link) = cp.link.take() {
            let _ = self.poll.registry().deregister(&mut link.stream);
        }
        let was_booted = cp.booted;
        cp.booted = false;
        cp.boot_at = None;
        match phase {
            LoadPhase::Connect if !cp.settled && self.shutting_down.is_none() => {
                cp.settled = true;
                self.settled += 1;
                self.stats.add("connect_failed", 1);
            }
            LoadPhase::Reconnect { .. } => self.retry_later(local, was_booted, now),
            LoadPhase::Idle { .. } | LoadPhase::Heartbeat { .. }
                if self.options.rejoin && self.shutting_down.is_none() =>
            {
                if was_booted {
                    self.stats.add("disconnects", 1);
                }
                self.retry_later(local, was_booted, now);
            }
            LoadPhase::Soak { .. } => self.soak_link_lost(local, was_booted, now),
            _ => {
                if was_booted && self.shutting_down.is_none() {
                    self.stats.add("disconnects", 1);
                }
            }
        }
    }

    /// Reconnect, `--rejoin`: the connection of `local` is gone; counts the drop of a booted
    /// charge point and schedules the next attempt (back-off doubled per failed try up to 8 s,
    /// plus jitter).
    fn retry_later(&mut self, local: usize, was_booted: bool, now: Instant) {
        let cp = &mut self.cps[local];
        if was_booted && cp.dropped_ns.is_none() {
            let at = unix_nanos_now();
            cp.dropped_ns = Some(at);
            self.stats.mark("first_drop", at);
            self.stats.add("dropped", 1);
            cp.attempts = 0;
        }
        let backoff = self
            .options
            .retry_min
            .saturating_mul(1 << cp.attempts.min(4));
        let jitter = self.options.retry_random.mul_f64(self.rng.f64());
        cp.retry_at = Some(now + backoff.min(Duration::from_secs(8)) + jitter);
    }

    // -----------------------------------------------------------------------------------------
    // I/O.

    pub(super) fn on_writable(&mut self, local: usize) {
        let Some(link) = self.cps.get_mut(local).and_then(|cp| cp.link.as_mut()) else {
            return;
        };
        if !link.connected {
            match link.stream.take_error() {
                Ok(None) if link.stream.peer_addr().is_ok() => link.connected = true,
                Ok(None) => {} // not yet
                Ok(Some(e)) | Err(e) => {
                    tracing::debug!(local, "connect failed: {e}");
                    self.stats.add("connect_errors", 1);
                    link.conn.handle_eof(Instant::now());
                }
            }
        }
    }

    pub(super) fn on_readable(&mut self, local: usize, exhaust: bool) {
        let kernel = self.options.kernel_timestamps();
        loop {
            let Some(link) = self.cps.get_mut(local).and_then(|cp| cp.link.as_mut()) else {
                return;
            };
            if !link.connected {
                if link.stream.peer_addr().is_err() {
                    if let Ok(Some(_)) | Err(_) = link.stream.take_error() {
                        link.conn.handle_eof(Instant::now());
                        self.drain(local, None);
                    }
                    return;
                }
                link.connected = true;
            }
            let cmsg = kernel.then_some(&mut self.cmsg);
            match read_stamped(&link.stream, &mut self.read_buf, cmsg) {
                Ok((0, _)) => {
                    link.conn.handle_eof(Instant::now());
                    self.drain(local, None);
                    return;
                }
                Ok((n, stamp)) => {
                    let now = Instant::now();
                    let stamp = stamp.unwrap_or_else(unix_nanos_now);
                    link.conn.handle_data(now, &self.read_buf[..n]);
                    self.drain(local, Some(stamp));
                    if n < READ_BUFFER && !exhaust {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    tracing::debug!(local, "read: {e}");
                    link.conn.handle_eof(Instant::now());
                    self.drain(local, None);
                    return;
                }
            }
        }
    }

    /// Writes what the connection has, fixes the interest, and reschedules; drops the link
    /// once the connection is closed and flushed.
    pub(super) fn after(&mut self, local: usize) {
        let now = Instant::now();
        self.drain(local, None);
        let Some(link) = self.cps.get_mut(local).and_then(|cp| cp.link.as_mut()) else {
            self.reschedule(local);
            return;
        };
        let mut failed = false;
        if link.connected {
            while !link.conn.pending_transmit().is_empty() {
                match (&link.stream).write(link.conn.pending_transmit()) {
                    Ok(0) => {
                        failed = true;
                        break;
                    }
                    Ok(n) => link.conn.advance_transmit(n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => {
                        failed = true;
                        break;
                    }
                }
            }
        }
        if failed {
            // The socket is dead: the connection's output (a close reply, say) can never
            // leave, and a closed connection has no timer left, so the link goes now rather
            // than when its output is flushed (it never would be: the charge point would
            // stay in limbo and never reconnect).
            link.conn.handle_eof(now);
            self.drain(local, None);
            if self.cps[local].link.is_some() {
                self.link_lost(local, now);
            }
            self.reschedule(local);
            return;
        }
        let Some(link) = self.cps.get_mut(local).and_then(|cp| cp.link.as_mut()) else {
            self.reschedule(local);
            return;
        };
        let pending = !link.conn.pending_transmit().is_empty() || !link.connected;
        if pending != link.wants_write {
            let interest = if pending {
                Interest::READABLE | Interest::WRITABLE
            } else {
                Interest::READABLE
            };
            if self
                .poll
                .registry()
                .reregister(&mut link.stream, Token(local), interest)
                .is_ok()
            {
                link.wants_write = pending;
            }
        }
        // A connection that ended before its TCP connect completed (refused, reset) still
        // holds its upgrade request, which will never leave: it goes at once.
        if link.conn.is_closed() && (link.conn.pending_transmit().is_empty() || !link.connected) {
            self.link_lost(local, now);
        }
        self.reschedule(local);
    }
}
