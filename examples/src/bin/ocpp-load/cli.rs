//! The command line of `ocpp-load`.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use ocpp_messages::version::OcppVersion;

/// What the swarm does after it has connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scenario {
    /// Handshake + BootNotification for every charge point, checked; nothing after.
    Connect,
    /// Connect, then hold every connection silent for the duration.
    Idle,
    /// Connect, then Heartbeat, StatusNotification and MeterValues at their periods.
    Heartbeat,
    /// Connect, then answer the server's DataTransfer pushes and measure their latency.
    Push,
    /// `push` for a few clients at a high rate (the server pushes every 10 ms): the streaming
    /// study of seed 002.
    Stream,
    /// Connect, then the server is restarted: the time until every charge point is back.
    Reconnect,
    /// Connect, then sessions, notifications, commands through the admin API and churn
    /// (clean closes, abrupt drops, duplicate identities) for the duration; every CALL both
    /// ways is accounted for at the end.
    Soak,
}

impl Scenario {
    fn parse(text: &str) -> Result<Self, String> {
        Ok(match text {
            "connect" => Scenario::Connect,
            "idle" => Scenario::Idle,
            "heartbeat" => Scenario::Heartbeat,
            "push" => Scenario::Push,
            "stream" => Scenario::Stream,
            "reconnect" => Scenario::Reconnect,
            "soak" => Scenario::Soak,
            other => return Err(format!("unknown scenario `{other}`")),
        })
    }

    /// The scenario's name on the command line and in the report.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Scenario::Connect => "connect",
            Scenario::Idle => "idle",
            Scenario::Heartbeat => "heartbeat",
            Scenario::Push => "push",
            Scenario::Stream => "stream",
            Scenario::Reconnect => "reconnect",
            Scenario::Soak => "soak",
        }
    }

    /// The phase after `connect`, if any.
    pub(crate) fn run_phase(self) -> Option<&'static str> {
        match self {
            Scenario::Connect => None,
            Scenario::Idle => Some("idle"),
            Scenario::Heartbeat => Some("heartbeat"),
            Scenario::Push | Scenario::Stream => Some("push"),
            Scenario::Reconnect => Some("reconnect"),
            Scenario::Soak => Some("soak"),
        }
    }
}

/// Where the worker processes take their part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WorkerSlot {
    /// 0-based.
    pub(crate) index: usize,
    /// How many workers there are.
    pub(crate) of: usize,
}

/// Everything `ocpp-load` is told.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) scenario: Scenario,
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) target_ip: IpAddr,
    pub(crate) endpoint: String,
    pub(crate) count: usize,
    pub(crate) rate: f64,
    pub(crate) version: OcppVersion,
    pub(crate) prefix: String,
    pub(crate) sources: Vec<IpAddr>,
    pub(crate) processes: usize,
    pub(crate) duration: Duration,
    pub(crate) heartbeat: Option<Duration>,
    pub(crate) status: Option<Duration>,
    pub(crate) meter: Option<Duration>,
    pub(crate) connect_timeout: Duration,
    pub(crate) password: Option<String>,
    pub(crate) server_pids: Vec<u32>,
    pub(crate) restart_cmd: Option<String>,
    pub(crate) restart_pid_file: Option<String>,
    pub(crate) burn_percent: u32,
    pub(crate) json: Option<String>,
    pub(crate) label: String,
    pub(crate) kernel_timestamps: bool,
    pub(crate) retry_min: Duration,
    pub(crate) retry_random: Duration,
    pub(crate) deflate: Deflate,
    pub(crate) soak: SoakOptions,
    pub(crate) worker: Option<WorkerSlot>,
}

/// The `soak` scenario's settings.
#[derive(Debug, Clone)]
pub(crate) struct SoakOptions {
    /// The admin interface of the server: commands go there, and `/metrics` is read.
    pub(crate) admin: Option<std::net::SocketAddr>,
    /// Admin commands per second, over all charge points.
    pub(crate) commands_per_s: f64,
    /// Mean time between two disconnects of one charge point (exponential).
    pub(crate) churn: Option<Duration>,
    /// The share of those disconnects that shut the socket without a close frame.
    pub(crate) drop_share: f64,
    /// Extra charge points, as a share of `--count`, that connect now and then with the
    /// identity of another one.
    pub(crate) duplicate_share: f64,
    /// Mean length of a charging session and of the pause between two.
    pub(crate) session: Duration,
    pub(crate) pause: Duration,
    /// The longest back-off before a reconnect (before jitter).
    pub(crate) retry_max: Duration,
    /// The server's call timeout: a command unanswered 15 s past it counts as hung.
    pub(crate) call_timeout: Duration,
}

/// Whether the charge points offer permessage-deflate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Deflate {
    Off,
    /// Offer it without context takeover.
    NoContext,
    /// Offer it with context takeover both ways.
    Context,
}

pub(crate) const USAGE: &str = "\
ocpp-load: a swarm of OCPP charge points on mio, for measuring a central system

usage: ocpp-load SCENARIO [options]

scenarios:
  connect     handshake + BootNotification for every charge point (answers checked)
  idle        connect, then hold every connection silent for --duration-s
  heartbeat   connect, then Heartbeat every --heartbeat-s, StatusNotification every
              --status-s and MeterValues every --meter-s, spread evenly, answers checked
  push        connect, then answer the server's DataTransfer pushes (mio-server
              --push-interval-ms N); latency = receive time - the server's stamp, gaps in
              the sequence counted as loss
  stream      push, for 1 or 20 clients with the server pushing every 10 ms (seed 002)
  reconnect   connect, then stop the server (--server-pid) and start it again
              (--restart-cmd): the time until every charge point is back and booted
  soak        connect, then for --duration-s: charging sessions (Authorize, Start,
              MeterValues every --meter-s, Stop, StatusNotification), Heartbeat every
              --heartbeat-s, commands through the admin API (--admin), churn (clean closes,
              abrupt drops, reconnects with back-off and jitter, duplicate identities);
              then every CALL both ways is reconciled with the server's /metrics

options:
  --url URL              ws://HOST:PORT/PATH; the identity is appended [ws://127.0.0.1:9000/ocpp]
  --count N              charge points [1000]
  --rate N               new connections per second, over all processes [1000]
  --version V            1.6, 2.0.1 or 2.1 [1.6]
  --prefix P             identities are P000000, P000001, ... [LOAD]
  --password P           Basic auth password (the same for every charge point)
  --sources A,B,...      source addresses, used in turn (one address reaches at most
                         28,232 connections to one port) [127.0.0.1]
  --source-count K       shorthand for --sources 127.0.0.2,...,127.0.0.(K+1)
  --processes P          worker processes (one holds at most ~19,990 sockets)
                         [count / 19,000 rounded up]
  --duration-s S         length of the phase after connect [20]
  --heartbeat-s S        Heartbeat period, 0 = none [10]
  --status-s S           StatusNotification period, 0 = none [30]
  --meter-s S            MeterValues period, 0 = none [30]
  --connect-timeout-s S  give up on the connect phase after S seconds [120]
  --server-pid PID,...   read the server's RSS and CPU time from /proc at each phase
                         boundary (several PIDs are summed)
  --restart-cmd CMD      reconnect: `sh -c CMD` starts the server again after the old one
                         (--server-pid) was stopped with SIGTERM
  --restart-pid-file F   reconnect: write the restarted server's PID there
  --retry-min-ms MS      reconnect: first retry after MS + random(--retry-random-ms) [250]
  --retry-random-ms MS   [1000]
  --deflate MODE         offer permessage-deflate: off, no-context or context [off]
  --admin ADDR           soak: the server's admin interface (commands, /metrics)
  --commands-per-s N     soak: admin commands per second [10]
  --churn-s S            soak: mean time between disconnects of a charge point, 0 = none [600]
  --drop-share F         soak: share of disconnects without a close frame [0.5]
  --duplicate-share F    soak: extra charge points (share of --count) that connect with an
                         identity already connected [0.02]
  --session-s S          soak: mean session length, and mean pause between sessions [180]
  --retry-max-ms MS      soak: the longest back-off before jitter [30000]
  --call-timeout-s S     soak: the server's call timeout; a command unanswered 15 s past it
                         counts as hung [30]
  --burn PERCENT         load both cores to PERCENT with busy threads during the run phase
  --timestamps K         kernel (SO_TIMESTAMPNS, the default) or user: receive time of a push
  --label NAME           the server's name in the report [server]
  --json FILE            write the report as JSON there
  --help                 this text
";

fn number<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T, String> {
    value
        .parse()
        .map_err(|_| format!("{flag}: `{value}` is not a number"))
}

fn seconds(flag: &str, value: &str) -> Result<Option<Duration>, String> {
    let s: f64 = number(flag, value)?;
    if !(s >= 0.0 && s.is_finite()) {
        return Err(format!("{flag}: `{value}` must be >= 0"));
    }
    Ok((s > 0.0).then(|| Duration::from_secs_f64(s)))
}

fn share(flag: &str, value: &str) -> Result<f64, String> {
    let x: f64 = number(flag, value)?;
    if !(0.0..=1.0).contains(&x) {
        return Err(format!("{flag}: `{value}` must be within 0..=1"));
    }
    Ok(x)
}

/// Parses the arguments after the program name; `Ok(None)` for `--help`.
pub(crate) fn parse(mut args: impl Iterator<Item = String>) -> Result<Option<Options>, String> {
    let scenario = match args.next() {
        None => return Err("missing SCENARIO".into()),
        Some(flag) if flag == "--help" || flag == "-h" => return Ok(None),
        Some(name) => Scenario::parse(&name)?,
    };
    let mut url = "ws://127.0.0.1:9000/ocpp".to_string();
    let mut options = Options {
        scenario,
        host: String::new(),
        port: 0,
        target_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
        endpoint: String::new(),
        count: 1000,
        rate: 1000.0,
        version: OcppVersion::V1_6,
        prefix: "LOAD".into(),
        sources: vec![IpAddr::V4(Ipv4Addr::LOCALHOST)],
        processes: 0,
        duration: Duration::from_secs(20),
        heartbeat: Some(Duration::from_secs(10)),
        status: Some(Duration::from_secs(30)),
        meter: Some(Duration::from_secs(30)),
        connect_timeout: Duration::from_secs(120),
        password: None,
        server_pids: Vec::new(),
        restart_cmd: None,
        restart_pid_file: None,
        burn_percent: 0,
        json: None,
        label: "server".into(),
        kernel_timestamps: true,
        retry_min: Duration::from_millis(250),
        retry_random: Duration::from_millis(1000),
        deflate: Deflate::Off,
        soak: SoakOptions {
            admin: None,
            commands_per_s: 10.0,
            churn: Some(Duration::from_secs(600)),
            drop_share: 0.5,
            duplicate_share: 0.02,
            session: Duration::from_secs(180),
            pause: Duration::from_secs(180),
            retry_max: Duration::from_secs(30),
            call_timeout: Duration::from_secs(30),
        },
        worker: None,
    };
    while let Some(flag) = args.next() {
        if flag == "--help" || flag == "-h" {
            return Ok(None);
        }
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--url" => url = value,
            "--count" => options.count = number(&flag, &value)?,
            "--rate" => options.rate = number(&flag, &value)?,
            "--version" => {
                options.version = match value.trim_start_matches("ocpp") {
                    "1.6" => OcppVersion::V1_6,
                    "2.0.1" => OcppVersion::V2_0_1,
                    "2.1" => OcppVersion::V2_1,
                    _ => return Err(format!("--version: `{value}` is not 1.6, 2.0.1 or 2.1")),
                }
            }
            "--prefix" => options.prefix = value,
            "--password" => options.password = Some(value),
            "--sources" => {
                options.sources = value
                    .split(',')
                    .map(|a| {
                        a.trim()
                            .parse()
                            .map_err(|_| format!("--sources: bad address `{a}`"))
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--source-count" => {
                let k: u8 = number(&flag, &value)?;
                if k == 0 || k > 250 {
                    return Err("--source-count: 1..=250".into());
                }
                options.sources = (0..k)
                    .map(|i| IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2 + i)))
                    .collect();
            }
            "--processes" => options.processes = number(&flag, &value)?,
            "--duration-s" => {
                options.duration = seconds(&flag, &value)?.unwrap_or(Duration::ZERO);
            }
            "--heartbeat-s" => options.heartbeat = seconds(&flag, &value)?,
            "--status-s" => options.status = seconds(&flag, &value)?,
            "--meter-s" => options.meter = seconds(&flag, &value)?,
            "--connect-timeout-s" => {
                options.connect_timeout =
                    seconds(&flag, &value)?.unwrap_or(Duration::from_secs(120));
            }
            "--server-pid" => {
                options.server_pids = value
                    .split(',')
                    .filter(|p| !p.is_empty())
                    .map(|p| number(&flag, p))
                    .collect::<Result<_, _>>()?;
            }
            "--restart-cmd" => options.restart_cmd = Some(value),
            "--restart-pid-file" => options.restart_pid_file = Some(value),
            "--retry-min-ms" => {
                options.retry_min = Duration::from_millis(number(&flag, &value)?);
            }
            "--retry-random-ms" => {
                options.retry_random = Duration::from_millis(number(&flag, &value)?);
            }
            "--burn" => {
                options.burn_percent = number(&flag, &value)?;
                if options.burn_percent > 100 {
                    return Err("--burn: 0..=100".into());
                }
            }
            "--timestamps" => {
                options.kernel_timestamps = match value.as_str() {
                    "kernel" => true,
                    "user" => false,
                    _ => return Err("--timestamps: kernel or user".into()),
                }
            }
            "--deflate" => {
                options.deflate = match value.as_str() {
                    "off" => Deflate::Off,
                    "no-context" => Deflate::NoContext,
                    "context" => Deflate::Context,
                    _ => return Err("--deflate: off, no-context or context".into()),
                }
            }
            "--admin" => {
                options.soak.admin = Some(
                    value
                        .parse()
                        .map_err(|_| format!("--admin: `{value}` is not IP:PORT"))?,
                );
            }
            "--commands-per-s" => options.soak.commands_per_s = number(&flag, &value)?,
            "--churn-s" => options.soak.churn = seconds(&flag, &value)?,
            "--drop-share" => options.soak.drop_share = share(&flag, &value)?,
            "--duplicate-share" => options.soak.duplicate_share = share(&flag, &value)?,
            "--session-s" => {
                let s = seconds(&flag, &value)?.unwrap_or(Duration::from_secs(1));
                options.soak.session = s;
                options.soak.pause = s;
            }
            "--retry-max-ms" => {
                options.soak.retry_max = Duration::from_millis(number(&flag, &value)?);
            }
            "--call-timeout-s" => {
                options.soak.call_timeout =
                    seconds(&flag, &value)?.unwrap_or(Duration::from_secs(30));
            }
            "--label" => options.label = value,
            "--json" => options.json = Some(value),
            "--worker" => {
                let (index, of) = value.split_once('/').ok_or("--worker: I/P")?;
                options.worker = Some(WorkerSlot {
                    index: number(&flag, index)?,
                    of: number(&flag, of)?,
                });
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    parse_url(&url, &mut options)?;
    if options.count == 0 {
        return Err("--count must be at least 1".into());
    }
    if options.rate.is_nan() || options.rate <= 0.0 {
        return Err("--rate must be > 0".into());
    }
    if options.processes == 0 {
        options.processes = options.count.div_ceil(19_000);
    }
    options.processes = options.processes.min(options.count);
    if options.scenario == Scenario::Reconnect && options.restart_cmd.is_none() {
        return Err("reconnect needs --restart-cmd (and --server-pid)".into());
    }
    Ok(Some(options))
}

fn parse_url(url: &str, options: &mut Options) -> Result<(), String> {
    let rest = url
        .strip_prefix("ws://")
        .ok_or("--url: only ws:// URLs (the swarm measures the server, not TLS)")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (h, number::<u16>("--url port", p)?),
        None => (authority, 80),
    };
    options.target_ip = if host == "localhost" {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    } else {
        host.parse()
            .map_err(|_| format!("--url: `{host}` must be an IP address (loopback)"))?
    };
    options.host = authority.to_string();
    options.port = port;
    options.endpoint = path.trim_end_matches('/').to_string();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_line(line: &str) -> Result<Option<Options>, String> {
        parse(line.split_whitespace().map(str::to_string))
    }

    #[test]
    fn defaults() {
        let o = parse_line("heartbeat").unwrap().unwrap();
        assert_eq!(o.scenario, Scenario::Heartbeat);
        assert_eq!(o.port, 9000);
        assert_eq!(o.endpoint, "/ocpp");
        assert_eq!(o.count, 1000);
        assert_eq!(o.processes, 1);
        assert_eq!(o.heartbeat, Some(Duration::from_secs(10)));
    }

    #[test]
    fn flags() {
        let o = parse_line(
            "push --url ws://127.0.0.1:9100/ --count 50000 --source-count 3 --version 2.0.1 \
             --status-s 0 --server-pid 1,2 --worker 1/3",
        )
        .unwrap()
        .unwrap();
        assert_eq!(o.endpoint, "");
        assert_eq!(o.processes, 3);
        assert_eq!(o.sources.len(), 3);
        assert_eq!(o.version, OcppVersion::V2_0_1);
        assert_eq!(o.status, None);
        assert_eq!(o.server_pids, vec![1, 2]);
        assert_eq!(o.worker, Some(WorkerSlot { index: 1, of: 3 }));
    }

    #[test]
    fn errors() {
        assert!(parse_line("").is_err());
        assert!(parse_line("fly").is_err());
        assert!(parse_line("idle --count x").is_err());
        assert!(parse_line("idle --url wss://h/x").is_err());
        assert!(parse_line("reconnect").is_err());
        assert!(parse_line("soak --drop-share 2").is_err());
        assert!(parse_line("soak --admin nowhere").is_err());
        assert!(parse_line("--help").unwrap().is_none());
    }
}
