//! One worker process: its share of the charge points on one mio loop, driven through the
//! charge-point side of `ocpp-proto`.
//!
//! The coordinator starts the worker, then says `go` on its standard input at each phase
//! boundary; the worker answers `ready` once set up and `done <json>` at the end of each phase,
//! on its standard output (logs go to standard error). Between phases it keeps serving its
//! connections (pings, pushes), so a phase boundary never stalls the swarm.
//!
//! # One loop
//! - A connect pacer opens this worker's share of `--rate`.
//! - Each socket's reads land in one 64 KiB buffer per worker; with kernel timestamps on, every
//!   read returns the time the kernel received its bytes (`SO_TIMESTAMPNS`), so a push's
//!   latency does not include the time the swarm took to get to it.
//! - Every connection's next deadline (the connection's own timers and the scenario's next
//!   message) sits in a binary heap; stale entries are skipped when popped.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io::{self, BufRead, IoSliceMut, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Events, Poll, Token, Waker};
use nix::sys::socket::{recvmsg, ControlMessageOwned, MsgFlags};
use nix::sys::time::TimeSpec;
use ocpp_frame::deflate::DeflateConfig;
use ocpp_messages::version::OcppVersion;
use ocpp_proto::{Connection, ConnectionConfig, DeflatePolicy, Request, Response};
use ocpp_reference_csms::push::unix_nanos_now;

use super::cli::{Deflate, Options, Scenario, WorkerSlot};
use super::phase::PhaseStats;
use super::procfs;
use ocpp_examples::charge_point_payload::{
    self as payload, CallAnswer, CommandReply, ConnectorStage, MeterSnapshot, Outgoing,
};

mod connecting;
mod events;
mod soak;
use soak::SoakCp;

const STDIN: Token = Token(usize::MAX - 1);
const READ_BUFFER: usize = 64 * 1024;
/// The most connections opened per turn of the loop: when the pacer is behind, the
/// connections already open are served between bursts (their handshakes, pings and boots).
const CONNECTS_PER_TURN: usize = 32;
/// The longest a worker waits for its connections to close at the end.
const CLOSE_GRACE: Duration = Duration::from_secs(3);

/// What one of our CALLs is and when it was made: the caller each CALL carries in the core.
#[derive(Debug, Clone, Copy)]
struct Sent {
    kind: Kind,
    at: Instant,
}

/// A message the swarm sends on a schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Boot,
    Heartbeat,
    Status,
    Meter,
    /// The soak's sessions: Authorize, StartTransaction, StopTransaction.
    Authorize,
    Start,
    Stop,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Boot => "boot",
            Kind::Heartbeat => "heartbeat",
            Kind::Status => "status",
            Kind::Meter => "meter",
            Kind::Authorize => "authorize",
            Kind::Start => "start",
            Kind::Stop => "stop",
        }
    }
}

/// A charge point's socket and connection, while it has one.
#[derive(Debug)]
struct ChargePointSocket {
    stream: TcpStream,
    /// Each CALL of ours carries what it is and when `call` was made ([`Sent`]), handed back
    /// with its outcome: the worker keeps no table of them.
    conn: Connection<Sent>,
    /// The TCP connect has completed (first writable event).
    connected: bool,
    /// `WRITABLE` interest is registered.
    wants_write: bool,
}

/// One simulated charge point.
#[derive(Debug)]
struct SimulatedChargePoint {
    link: Option<ChargePointSocket>,
    booted: bool,
    /// Settled in the connect phase (booted, or failed for good).
    settled: bool,
    /// When the current connection attempt started.
    attempt_started: Instant,
    /// Reconnect phase: when its connection dropped (Unix ns), until it is booted again.
    dropped_ns: Option<u128>,
    retry_at: Option<Instant>,
    /// When to send the BootNotification again (it was answered Pending).
    boot_at: Option<Instant>,
    attempts: u32,
    last_seq: u64,
    next: [Option<Instant>; 3],
    /// The deadline this charge point has in the heap.
    scheduled: Option<Instant>,
    /// The soak scenario's state.
    soak: SoakCp,
}

/// Requests built once and cloned per message.
#[derive(Debug)]
struct Prebuilt {
    heartbeat: Request,
    status: Request,
    meter: Request,
    data_transfer_answer: Response,
}

impl Prebuilt {
    fn new(version: OcppVersion) -> io::Result<Self> {
        let bad = |e: payload::PayloadError| io::Error::other(e.to_string());
        let reading = MeterSnapshot {
            energy_wh: 12_345,
            power_w: 7_400.0,
        };
        Ok(Prebuilt {
            heartbeat: payload::request(version, &Outgoing::Heartbeat).map_err(bad)?,
            status: payload::request(
                version,
                &Outgoing::Status {
                    connector: 1,
                    state: ConnectorStage::Available,
                },
            )
            .map_err(bad)?,
            meter: payload::request(
                version,
                &Outgoing::Meter {
                    connector: 1,
                    reading,
                },
            )
            .map_err(bad)?,
            data_transfer_answer: payload::response(
                version,
                "DataTransfer",
                &CommandReply::DataTransfer,
            )
            .map_err(bad)?,
        })
    }

    /// The request of a scheduled kind (Boot is built per charge point, with its identity).
    fn request(&self, kind: Kind) -> Option<Request> {
        match kind {
            Kind::Heartbeat => Some(self.heartbeat.clone()),
            Kind::Status => Some(self.status.clone()),
            Kind::Meter => Some(self.meter.clone()),
            _ => None,
        }
    }
}

/// The benchmark phase the worker is in (`connect`, then the scenario's phase).
#[derive(Debug, Clone, Copy, PartialEq)]
enum LoadPhase {
    /// Between phases: serving connections, waiting for `go`.
    Waiting,
    Connect,
    Idle {
        until: Instant,
    },
    Heartbeat {
        until: Instant,
    },
    Push {
        until: Instant,
    },
    Reconnect {
        until: Instant,
    },
    Soak {
        until: Instant,
    },
    /// The soak's end: no new CALLs; once ours are answered (or at `close_at`) every
    /// connection is closed; done when all are gone (or at `deadline`).
    SoakEnding {
        close_at: Instant,
        closed: bool,
        deadline: Instant,
    },
}

/// The worker's state.
struct Worker {
    options: Options,
    /// `options.sources()`, computed once: the source address of each new socket.
    sources: Vec<IpAddr>,
    poll: Poll,
    config: Arc<ConnectionConfig>,
    target: SocketAddr,
    cps: Vec<SimulatedChargePoint>,
    /// This worker's share of `--count`: `cps[..primaries]`; the soak's duplicates follow.
    primaries: usize,
    /// Counting every CALL both ways (the soak scenario).
    accounting: bool,
    /// Global index of `cps[0]`.
    first: usize,
    heap: BinaryHeap<Reverse<(Instant, usize)>>,
    read_buf: Vec<u8>,
    cmsg: Vec<u8>,
    prebuilt: Prebuilt,
    rng: fastrand::Rng,
    phase: LoadPhase,
    phases: VecDeque<&'static str>,
    stats: PhaseStats,
    phase_cpu: Duration,
    /// Connect pacing.
    connect_next: usize,
    connect_started: Instant,
    connect_rate: f64,
    connect_deadline: Instant,
    settled: usize,
    rebooted: usize,
    commands: mpsc::Receiver<String>,
    shutting_down: Option<Instant>,
}

/// Runs worker `slot` of `options` until the coordinator's last `go`.
pub(crate) fn run(options: Options, slot: WorkerSlot) -> io::Result<()> {
    let poll = Poll::new()?;
    let waker = Waker::new(poll.registry(), STDIN)?;
    let (sender, commands) = mpsc::channel();
    std::thread::spawn(move || {
        for line in io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if sender.send(line).is_err() || waker.wake().is_err() {
                return;
            }
        }
        // End of input: the coordinator is gone; shut down.
        let _ = sender.send("quit".into());
        let _ = waker.wake();
    });

    let first = options.count * slot.index / slot.of;
    let last = options.count * (slot.index + 1) / slot.of;
    let now = Instant::now();
    let primaries = last - first;
    let duplicates = if options.scenario == Scenario::Soak && options.soak.duplicate_share > 0.0 {
        ((primaries as f64 * options.soak.duplicate_share).round() as usize).max(1)
    } else {
        0
    };
    let cps = (0..primaries + duplicates)
        .map(|_| SimulatedChargePoint {
            link: None,
            booted: false,
            settled: false,
            attempt_started: now,
            dropped_ns: None,
            retry_at: None,
            boot_at: None,
            attempts: 0,
            last_seq: 0,
            next: [None; 3],
            scheduled: None,
            soak: SoakCp::default(),
        })
        .collect();
    let config = ConnectionConfig::default()
        .versions(vec![options.version])
        .ping_interval(None)
        .idle_timeout(None)
        .handshake_timeout(Duration::from_secs(60))
        .call_timeout(Duration::from_secs(60))
        .deflate(match options.deflate {
            Deflate::Off => DeflatePolicy::Off,
            Deflate::NoContext => DeflatePolicy::Offer(DeflateConfig::default()),
            Deflate::Context => DeflatePolicy::Offer(
                DeflateConfig::default()
                    .server_no_context_takeover(false)
                    .client_no_context_takeover(false),
            ),
        });
    let mut phases: VecDeque<&'static str> = VecDeque::from(["connect"]);
    if let Some(run_phase) = options.scenario.run_phase() {
        phases.push_back(run_phase);
    }
    let options_scenario_is_soak = options.scenario == Scenario::Soak;
    let mut worker = Worker {
        target: SocketAddr::new(options.url.ip, options.url.port),
        connect_rate: options.rate / slot.of as f64,
        prebuilt: Prebuilt::new(options.version)?,
        sources: options.sources(),
        options,
        poll,
        config: Arc::new(config),
        cps,
        primaries,
        accounting: options_scenario_is_soak,
        first,
        heap: BinaryHeap::new(),
        read_buf: vec![0; READ_BUFFER],
        cmsg: nix::cmsg_space!(TimeSpec),
        rng: fastrand::Rng::with_seed(0x5eed ^ slot.index as u64),
        phase: LoadPhase::Waiting,
        phases,
        stats: PhaseStats::new("setup", unix_nanos_now()),
        phase_cpu: Duration::ZERO,
        connect_next: 0,
        connect_started: now,
        connect_deadline: now,
        settled: 0,
        rebooted: 0,
        commands,
        shutting_down: None,
    };
    say("ready")?;
    worker.run()
}

/// One line to the coordinator.
fn say(line: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(line.as_bytes())?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Reads from `stream`; with `cmsg`, also the kernel's receive time (Unix ns) of the bytes.
fn read_stamped(
    stream: &TcpStream,
    buf: &mut [u8],
    cmsg: Option<&mut Vec<u8>>,
) -> io::Result<(usize, Option<u128>)> {
    let Some(cmsg) = cmsg else {
        let mut reader: &TcpStream = stream;
        return reader.read(buf).map(|n| (n, None));
    };
    let mut iov = [IoSliceMut::new(buf)];
    let message = recvmsg::<()>(stream.as_raw_fd(), &mut iov, Some(cmsg), MsgFlags::empty())?;
    let mut stamp = None;
    for control in message.cmsgs()? {
        if let ControlMessageOwned::ScmTimestampns(t) = control {
            let secs = u128::try_from(t.tv_sec()).unwrap_or(0);
            let nanos = u128::try_from(t.tv_nsec()).unwrap_or(0);
            stamp = Some(secs * 1_000_000_000 + nanos);
        }
    }
    Ok((message.bytes, stamp))
}

impl Worker {
    fn run(&mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(1024);
        loop {
            let now = Instant::now();
            let timeout = self
                .next_wake(now)
                .map(|at| at.saturating_duration_since(now));
            match self.poll.poll(&mut events, timeout) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            for event in &events {
                if event.token() == STDIN {
                    continue;
                }
                let index = event.token().0;
                if event.is_writable() {
                    self.on_writable(index);
                }
                if event.is_readable() || event.is_read_closed() || event.is_error() {
                    // A short read empties the socket; read on to EAGAIN only after a FIN or an
                    // error (one system call less per message, as in mio-server).
                    self.on_readable(index, event.is_read_closed() || event.is_error());
                }
                self.after(index);
            }
            while let Ok(command) = self.commands.try_recv() {
                match command.as_str() {
                    "go" => self.next_phase()?,
                    "end" => self.end_phase_now(),
                    _ => self.begin_shutdown(),
                }
            }
            self.fire_timers();
            self.pace_connects();
            if self.check_phase_end()? {
                return Ok(());
            }
        }
    }

    /// The earliest of the heap, the pacer and the phase's end.
    fn next_wake(&self, now: Instant) -> Option<Instant> {
        let mut wake = self.heap.peek().map(|Reverse((at, _))| *at);
        let mut consider = |at: Instant| wake = Some(wake.map_or(at, |w| w.min(at)));
        match self.phase {
            LoadPhase::Connect => {
                if self.connect_next < self.primaries {
                    consider(self.connect_due(self.connect_next));
                }
                consider(self.connect_deadline);
            }
            LoadPhase::Idle { until }
            | LoadPhase::Heartbeat { until }
            | LoadPhase::Push { until }
            | LoadPhase::Reconnect { until }
            | LoadPhase::Soak { until } => consider(until),
            LoadPhase::SoakEnding {
                close_at, deadline, ..
            } => {
                consider(close_at);
                consider(deadline);
            }
            LoadPhase::Waiting => {}
        }
        if let Some(started) = self.shutting_down {
            consider(started + CLOSE_GRACE);
        }
        // Never sleep more than a second: the loop re-checks everything at least that often.
        consider(now + Duration::from_secs(1));
        wake
    }

    fn connect_due(&self, local: usize) -> Instant {
        self.connect_started + Duration::from_secs_f64(local as f64 / self.connect_rate)
    }

    // -----------------------------------------------------------------------------------------
    // Phases.

    fn next_phase(&mut self) -> io::Result<()> {
        let Some(name) = self.phases.pop_front() else {
            self.begin_shutdown();
            return Ok(());
        };
        let now = Instant::now();
        self.stats = PhaseStats::new(name, unix_nanos_now());
        self.phase_cpu = procfs::own_cpu();
        let until = now + self.options.duration;
        self.phase = match name {
            "connect" => {
                self.connect_started = now;
                self.connect_deadline = now + self.options.connect_timeout();
                LoadPhase::Connect
            }
            "idle" => LoadPhase::Idle { until },
            "heartbeat" => {
                self.schedule_messages(now);
                LoadPhase::Heartbeat { until }
            }
            "push" => LoadPhase::Push { until },
            "soak" => {
                self.soak_begin(now);
                LoadPhase::Soak { until }
            }
            _ => {
                self.rebooted = 0;
                LoadPhase::Reconnect {
                    until: now + self.options.connect_timeout(),
                }
            }
        };
        // The coordinator waits for this before acting on the phase (stopping the server for
        // `reconnect`), so no close can reach us before we count it.
        say(&format!("started {name}"))
    }

    /// Spreads every charge point's Heartbeat, StatusNotification and MeterValues evenly over
    /// their periods.
    fn schedule_messages(&mut self, now: Instant) {
        let total = self.options.count as f64;
        let periods = [
            self.options.heartbeat(),
            self.options.status(),
            self.options.meter(),
        ];
        for (local, cp) in self.cps.iter_mut().enumerate() {
            let fraction = (self.first + local) as f64 / total;
            for (slot, period) in periods.iter().enumerate() {
                // Each kind gets its own offset so the three do not line up.
                cp.next[slot] = period.map(|p| {
                    let shift = (fraction + slot as f64 / 3.0).fract();
                    now + p.mul_f64(shift)
                });
            }
            cp.scheduled = None;
        }
        for local in 0..self.cps.len() {
            self.reschedule(local);
        }
    }

    /// Ends the phase when its condition is met; `Ok(true)` when the worker is done.
    fn check_phase_end(&mut self) -> io::Result<bool> {
        let now = Instant::now();
        if let Some(started) = self.shutting_down {
            let open = self.cps.iter().filter(|cp| cp.link.is_some()).count();
            return Ok(open == 0 || now >= started + CLOSE_GRACE);
        }
        let ended = match self.phase {
            LoadPhase::Waiting => false,
            LoadPhase::Connect => {
                if now >= self.connect_deadline && self.settled < self.primaries {
                    let missing = self.primaries - self.settled;
                    self.stats.add("connect_timeout", missing as u64);
                    for cp in &mut self.cps {
                        cp.settled = true;
                    }
                    self.settled = self.primaries;
                }
                self.settled == self.primaries
            }
            LoadPhase::Idle { until }
            | LoadPhase::Heartbeat { until }
            | LoadPhase::Push { until } => now >= until,
            LoadPhase::Reconnect { until } => now >= until || self.rebooted == self.primaries,
            LoadPhase::Soak { until } => {
                if now >= until {
                    self.soak_end(now);
                }
                false
            }
            LoadPhase::SoakEnding { .. } => self.soak_ending(now),
        };
        if ended {
            if let LoadPhase::Heartbeat { .. } = self.phase {
                for cp in &mut self.cps {
                    cp.next = [None; 3];
                }
            }
            match self.phase {
                LoadPhase::Reconnect { .. } => {
                    let missing = self.primaries - self.rebooted;
                    self.stats.add("not_back", missing as u64);
                }
                LoadPhase::Idle { .. } | LoadPhase::Heartbeat { .. } if self.options.rejoin => {
                    // Dropped in this phase and not booted again by its end.
                    let missing = self.cps[..self.primaries]
                        .iter()
                        .filter(|cp| cp.dropped_ns.is_some())
                        .count();
                    self.stats.add("not_back", missing as u64);
                }
                _ => {}
            }
            self.stats.ended_ns = unix_nanos_now();
            let cpu = procfs::own_cpu().saturating_sub(self.phase_cpu);
            self.stats.add(
                "load_cpu_us",
                u64::try_from(cpu.as_micros()).unwrap_or(u64::MAX),
            );
            let open = self
                .cps
                .iter()
                .filter(|cp| cp.booted && cp.link.is_some())
                .count();
            self.stats.add("open_at_end", open as u64);
            self.phase = LoadPhase::Waiting;
            say(&format!("done {}", self.stats.to_wire()))?;
        }
        Ok(false)
    }

    /// The coordinator's `end` (`--end-file`): an idle or heartbeat phase ends now.
    fn end_phase_now(&mut self) {
        let now = Instant::now();
        if let LoadPhase::Idle { until } | LoadPhase::Heartbeat { until } = &mut self.phase {
            *until = now.min(*until);
        }
    }

    fn begin_shutdown(&mut self) {
        if self.shutting_down.is_some() {
            return;
        }
        let now = Instant::now();
        self.shutting_down = Some(now);
        self.phase = LoadPhase::Waiting;
        for local in 0..self.cps.len() {
            self.cps[local].retry_at = None;
            self.cps[local].next = [None; 3];
            if let Some(link) = &mut self.cps[local].link {
                link.conn
                    .close(now, ocpp_frame::CloseCode::NORMAL, "load done");
            }
            self.after(local);
        }
    }
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("charge_points", &self.cps.len())
            .field("phase", &self.phase)
            .finish()
    }
}
