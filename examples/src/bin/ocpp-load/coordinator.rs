//! The coordinator: starts the worker processes, holds them at each phase boundary while it
//! reads the server's memory and CPU time from `/proc`, restarts the server for `reconnect`,
//! merges what the workers measured, and writes the report.
//!
//! The coordinator holds no socket of its own; `ocpp-load` always runs its charge points in
//! workers (one or more), so one charge point count or many take the same path.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use ocpp_reference_csms::push::unix_nanos_now;
use serde_json::{json, Value};

use super::admin::{self, CommandDriver};
use super::cli::{Options, Scenario};
use super::phase::{curve, summary, PhaseStats};
use super::procfs::{self, Sample};

/// How long a worker may take to set up.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the workers get to close their connections and exit.
const EXIT_TIMEOUT: Duration = Duration::from_secs(15);

/// One worker process.
struct Worker {
    child: Child,
    stdin: ChildStdin,
}

/// What a worker said: its index and the line.
type Said = (usize, Option<String>);

/// What happened around one phase.
struct PhaseRecord {
    stats: PhaseStats,
    server_before: Sample,
    server_after: Sample,
    wall: Duration,
}

/// Runs the whole measurement; `args` are the command line to pass on to the workers.
pub(crate) fn run(mut options: Options, args: &[OsString]) -> Result<Value, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find myself: {e}"))?;
    let (sender, said) = mpsc::channel::<Said>();
    let mut workers = Vec::new();
    for index in 0..options.processes() {
        let mut child = Command::new(&exe)
            .args(args)
            .arg("--worker")
            .arg(format!("{index}/{}", options.processes()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start worker {index}: {e}"))?;
        let stdin = child.stdin.take().ok_or("worker without stdin")?;
        let stdout = child.stdout.take().ok_or("worker without stdout")?;
        let sender = sender.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send((index, Some(line))).is_err() {
                    return;
                }
            }
            let _ = sender.send((index, None));
        });
        workers.push(Worker { child, stdin });
    }
    let result = drive(&mut options, &mut workers, &said);
    // Whatever happened: tell the workers to finish, then make sure they are gone.
    for worker in &mut workers {
        let _ = writeln!(worker.stdin, "quit");
        let _ = worker.stdin.flush();
    }
    let deadline = Instant::now() + EXIT_TIMEOUT;
    for worker in &mut workers {
        while Instant::now() < deadline {
            if let Ok(Some(_)) = worker.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if let Ok(None) = worker.child.try_wait() {
            let _ = worker.child.kill();
            let _ = worker.child.wait();
        }
    }
    result
}

fn expect_from_all(
    said: &mpsc::Receiver<Said>,
    workers: usize,
    word: &str,
    timeout: Duration,
) -> Result<Vec<String>, String> {
    let deadline = Instant::now() + timeout;
    let mut lines: Vec<Option<String>> = vec![None; workers];
    while lines.iter().any(Option::is_none) {
        let left = deadline.saturating_duration_since(Instant::now());
        match said.recv_timeout(left) {
            Ok((index, Some(line))) => {
                if let Some(rest) = line.strip_prefix(word) {
                    lines[index] = Some(rest.trim().to_string());
                } else {
                    return Err(format!("worker {index} said `{line}`, expected `{word}`"));
                }
            }
            Ok((index, None)) => return Err(format!("worker {index} exited")),
            Err(_) => return Err(format!("workers did not say `{word}` within {timeout:?}")),
        }
    }
    Ok(lines.into_iter().flatten().collect())
}

/// [`expect_from_all`] for a phase that `--end-file` may end early: once the file exists,
/// every worker is told `end` (once).
fn done_or_end(
    workers: &mut [Worker],
    said: &mpsc::Receiver<Said>,
    word: &str,
    timeout: Duration,
    end_file: &str,
) -> Result<Vec<String>, String> {
    let deadline = Instant::now() + timeout;
    let mut lines: Vec<Option<String>> = vec![None; workers.len()];
    let mut told = false;
    while lines.iter().any(Option::is_none) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!("workers did not say `{word}` within {timeout:?}"));
        }
        match said.recv_timeout(left.min(Duration::from_millis(200))) {
            Ok((index, Some(line))) => match line.strip_prefix(word) {
                Some(rest) => lines[index] = Some(rest.trim().to_string()),
                None => return Err(format!("worker {index} said `{line}`, expected `{word}`")),
            },
            Ok((index, None)) => return Err(format!("worker {index} exited")),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if !told && std::path::Path::new(end_file).exists() {
                    told = true;
                    tell_all(workers, "end")?;
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return Err("no worker left".into()),
        }
    }
    Ok(lines.into_iter().flatten().collect())
}

fn tell_all(workers: &mut [Worker], word: &str) -> Result<(), String> {
    for (index, worker) in workers.iter_mut().enumerate() {
        writeln!(worker.stdin, "{word}")
            .and_then(|()| worker.stdin.flush())
            .map_err(|e| format!("worker {index}: {e}"))?;
    }
    Ok(())
}

fn drive(
    options: &mut Options,
    workers: &mut [Worker],
    said: &mpsc::Receiver<Said>,
) -> Result<Value, String> {
    let count = workers.len();
    expect_from_all(said, count, "ready", READY_TIMEOUT)?;
    let baseline = procfs::sample(options.server_pids());
    let soak_admin = options
        .soak
        .admin
        .filter(|_| options.scenario == Scenario::Soak);
    let metrics_before = soak_admin.map(admin::metrics).transpose()?;
    let mut commands = None;
    let mut phases = vec!["connect"];
    phases.extend(options.scenario.run_phase());
    let mut records = Vec::new();
    for name in phases {
        let server_before = procfs::sample(options.server_pids());
        let started = Instant::now();
        let burner = (name != "connect" && options.burn_percent > 0)
            .then(|| Burner::start(options.burn_percent));
        tell_all(workers, "go")?;
        expect_from_all(said, count, "started", READY_TIMEOUT)?;
        if name == "reconnect" {
            restart_server(options)?;
        }
        if let (Some(admin), "soak") = (soak_admin, name) {
            let driver = (options.soak.commands_per_s > 0.0).then(|| {
                CommandDriver::start(
                    admin,
                    options.soak.commands_per_s,
                    options.count,
                    &options.prefix,
                    options.version,
                    options.soak.call_timeout(),
                )
            });
            // The commands stop with the duration, while the swarm still serves (it then
            // waits for its own CALLs and closes).
            std::thread::sleep(options.duration);
            commands = driver.map(CommandDriver::finish);
        }
        let limit = options.duration + options.connect_timeout() + Duration::from_secs(60);
        let end_file = options
            .end_file
            .as_deref()
            .filter(|_| matches!(name, "idle" | "heartbeat"));
        let lines = match end_file {
            Some(file) => done_or_end(workers, said, "done", limit, file)?,
            None => expect_from_all(said, count, "done", limit)?,
        };
        drop(burner);
        let wall = started.elapsed();
        let mut merged: Option<PhaseStats> = None;
        for line in lines {
            let value: Value =
                serde_json::from_str(&line).map_err(|e| format!("bad worker report: {e}"))?;
            let stats = PhaseStats::from_wire(&value).ok_or("bad worker report")?;
            match &mut merged {
                Some(all) => all.merge(&stats),
                None => merged = Some(stats),
            }
        }
        let stats = merged.ok_or("no worker")?;
        let server_after = procfs::sample(options.server_pids());
        let record = PhaseRecord {
            stats,
            server_before,
            server_after,
            wall,
        };
        eprintln!("{}", describe(options, &record, baseline));
        records.push(record);
    }
    let mut value = report(options, baseline, &records);
    if let (Some(admin), Some(before)) = (soak_admin, metrics_before) {
        // The server's side of the last closes.
        std::thread::sleep(Duration::from_secs(2));
        let after = admin::metrics(admin)?;
        let soak = soak_summary(&records, commands.as_ref(), &before, &after);
        eprintln!("{}", describe_soak(&soak));
        value["soak"] = soak;
    }
    Ok(value)
}

/// The soak's reconciliation: the client's counts (every phase), the commands' HTTP
/// outcomes and the server's `/metrics` (the difference over the run; gauges at the end).
fn soak_summary(
    records: &[PhaseRecord],
    commands: Option<&PhaseStats>,
    before: &std::collections::BTreeMap<String, f64>,
    after: &std::collections::BTreeMap<String, f64>,
) -> Value {
    let mut client = PhaseStats::new("client", 0);
    for record in records {
        client.merge(&record.stats);
    }
    let c = |name: &str| client.counter(name);
    let delta = |name: &str| {
        let at = |m: &std::collections::BTreeMap<String, f64>| m.get(name).copied().unwrap_or(0.0);
        (at(after) - at(before)).max(0.0) as u64
    };
    let gauge = |name: &str| after.get(name).copied().unwrap_or(f64::NAN);
    let empty = PhaseStats::new("commands", 0);
    let commands = commands.unwrap_or(&empty);
    let k = |name: &str| commands.counter(name);

    let sent = c("calls_sent");
    let (result, error, timeout) = (c("calls_result"), c("calls_error"), c("calls_timeout"));
    let (ours, takeover, other) = (
        c("calls_unanswered_ours"),
        c("calls_unanswered_takeover"),
        c("calls_unanswered_other"),
    );
    let answered = result + error;
    let s_received = delta("ocpp_calls_received_total");
    let s_answered = delta("ocpp_calls_answered_total");
    let s_unanswered = delta("ocpp_calls_unanswered_at_close_total");
    let s_sent = delta("ocpp_calls_sent_total");
    let (r_received, r_answered, r_refused, r_unanswered) = (
        c("srv_calls_received"),
        c("srv_calls_answered"),
        c("srv_calls_answer_refused"),
        c("srv_calls_unanswered_at_close"),
    );
    let statuses = [
        "http_200",
        "http_502_callerror",
        "http_502_disconnected",
        "http_404",
        "http_503",
        "http_504",
    ];
    let resolved: u64 = statuses.iter().map(|s| k(s)).sum();
    let other_status: u64 = commands
        .counters
        .iter()
        .filter(|(name, _)| name.starts_with("http_") && !statuses.contains(&name.as_str()))
        .map(|(_, n)| *n)
        .sum();
    let with_call =
        k("http_200") + k("http_502_callerror") + k("http_502_disconnected") + k("http_504");
    let check = |ok: bool, what: String| json!({ "ok": ok, "what": what });
    let checks = vec![
        check(
            s_received == s_answered + s_unanswered,
            format!(
                "server: CALLs received {s_received} = answered {s_answered} + unanswered at close {s_unanswered}"
            ),
        ),
        check(
            sent == answered + timeout + ours + takeover + other,
            format!(
                "client: CALLs sent {sent} = result {result} + error {error} + timeout {timeout} \
                 + unanswered at a close of ours {ours} + at a takeover {takeover} + otherwise {other}"
            ),
        ),
        check(
            other == 0 && timeout == 0,
            format!("client: unanswered otherwise {other} and timed out {timeout} are 0"),
        ),
        check(
            c("unmatched_responses") == 0,
            format!(
                "client: answers to no CALL of ours {} (a second answer would be one)",
                c("unmatched_responses"),
            ),
        ),
        check(
            s_received <= sent && sent - s_received <= ours + takeover + other,
            format!(
                "both: the server received {s_received} of {sent} sent; the {} missing are within \
                 the {} unanswered at a close",
                sent.saturating_sub(s_received),
                ours + takeover + other
            ),
        ),
        check(
            answered <= s_answered && s_answered - answered <= ours + takeover + other,
            format!(
                "both: the client got {answered} of the server's {s_answered} answers; the {} missing \
                 are within the {} unanswered at a close",
                s_answered.saturating_sub(answered),
                ours + takeover + other
            ),
        ),
        check(
            r_received == r_answered + r_refused + r_unanswered && r_refused == 0,
            format!(
                "client: server CALLs received {r_received} = answered {r_answered} + refused \
                 {r_refused} + unanswered at close {r_unanswered}"
            ),
        ),
        check(
            r_received <= s_sent && s_sent == with_call,
            format!(
                "commands: the server sent {s_sent} CALLs = HTTP 200 {} + 502 {} + 504 {}; the \
                 swarm received {r_received}",
                k("http_200"),
                k("http_502_callerror") + k("http_502_disconnected"),
                k("http_504")
            ),
        ),
        check(
            k("commands_hung") == 0
                && k("commands_failed") == 0
                && other_status == 0
                && resolved == k("commands_sent"),
            format!(
                "commands: {} sent, {resolved} resolved (200/502/404/503/504), hung {}, failed {}, \
                 other status {other_status}",
                k("commands_sent"),
                k("commands_hung"),
                k("commands_failed")
            ),
        ),
        check(
            gauge("ocpp_calls_pending") == 0.0
                && gauge("ocpp_sockets_open") == 0.0
                && gauge("ocpp_charge_points_connected") == 0.0,
            format!(
                "server at the end: CALLs pending {}, sockets open {}, charge points connected {}",
                gauge("ocpp_calls_pending"),
                gauge("ocpp_sockets_open"),
                gauge("ocpp_charge_points_connected")
            ),
        ),
    ];
    let server: std::collections::BTreeMap<String, u64> = after
        .keys()
        .filter(|name| name.ends_with("_total"))
        .map(|name| (name.clone(), delta(name)))
        .collect();
    let mut latency = serde_json::Map::new();
    for (name, hist) in &commands.histograms {
        if !hist.is_empty() {
            latency.insert(name.clone(), summary(hist));
        }
    }
    json!({
        "all_ok": checks.iter().all(|c| c["ok"] == true),
        "checks": checks,
        "client": client.counters,
        "commands": commands.counters,
        "command_latency": latency,
        "server_counters": server,
        "server_gauges_at_end": after
            .iter()
            .filter(|(name, _)| !name.ends_with("_total"))
            .collect::<std::collections::BTreeMap<_, _>>(),
    })
}

fn describe_soak(soak: &Value) -> String {
    let mut text = format!("soak reconciliation: all ok = {}", soak["all_ok"]);
    for check in soak["checks"].as_array().into_iter().flatten() {
        let mark = if check["ok"] == true { "ok  " } else { "FAIL" };
        text += &format!("\n  {mark} {}", check["what"].as_str().unwrap_or_default());
    }
    text += &format!("\n  commands: {}", soak["commands"]);
    text
}

/// Stops the server (SIGTERM, then SIGKILL after 10 s) and starts it again with
/// `--restart-cmd`; from then on the new process is the one measured.
fn restart_server(options: &mut Options) -> Result<(), String> {
    use rustix::process::{kill_process, Pid, Signal};
    for &pid in options.server_pids() {
        let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
            continue;
        };
        let _ = kill_process(pid, Signal::TERM);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while options.server_pids().iter().any(|&p| procfs::alive(p)) {
        if Instant::now() > deadline {
            for &pid in options.server_pids() {
                if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
                    let _ = kill_process(pid, Signal::KILL);
                }
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let command = options.restart_cmd.as_deref().ok_or("no --restart-cmd")?;
    let child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot restart the server: {e}"))?;
    options.server_pid = Some(vec![child.id()]);
    if let Some(file) = &options.restart_pid_file {
        std::fs::write(file, format!("{}\n", child.id()))
            .map_err(|e| format!("cannot write {file}: {e}"))?;
    }
    // Dropping a `Child` leaves the process running: the caller stops it by the PID in the
    // file.
    drop(child);
    Ok(())
}

fn cpu_share(before: Sample, after: Sample, wall: Duration) -> f64 {
    let cpu = after.cpu.saturating_sub(before.cpu).as_secs_f64();
    if wall.is_zero() {
        0.0
    } else {
        cpu / wall.as_secs_f64() * 100.0
    }
}

fn per(cpu: Duration, n: u64) -> Option<f64> {
    (n > 0).then(|| cpu.as_secs_f64() * 1e6 / n as f64)
}

fn round(x: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (x * scale).round() / scale
}

/// The JSON of one phase.
fn phase_json(options: &Options, record: &PhaseRecord, baseline: Sample) -> Value {
    let stats = &record.stats;
    let server_cpu = record
        .server_after
        .cpu
        .saturating_sub(record.server_before.cpu);
    let server_system = record
        .server_after
        .system
        .saturating_sub(record.server_before.system);
    let wall = record.wall.as_secs_f64();
    let mut value = json!({
        "phase": stats.name,
        "seconds": round(wall, 3),
        "counters": stats.counters,
        "server_rss_bytes": record.server_after.rss,
        "server_anon_rss_bytes": record.server_after.anon,
        "server_cpu_percent": round(cpu_share(record.server_before, record.server_after, record.wall), 2),
        "server_alive": record.server_after.alive,
        "load_cpu_percent": round(stats.counter("load_cpu_us") as f64 / 1e6 / wall.max(1e-9) * 100.0, 2),
    });
    let connected = stats.counter("open_at_end");
    if connected > 0 && record.server_after.alive > 0 && baseline.alive > 0 {
        let per_conn =
            record.server_after.rss.saturating_sub(baseline.rss) as f64 / connected as f64;
        value["server_rss_per_connection_bytes"] = json!(round(per_conn, 0));
        // Without the executable's pages touched once (a fixed cost of the process, which
        // the figure above spreads over the connections: 2.4 MB for mio-server).
        let anon = record.server_after.anon.saturating_sub(baseline.anon) as f64 / connected as f64;
        value["server_anon_rss_per_connection_bytes"] = json!(round(anon, 0));
    }
    match stats.name.as_str() {
        "connect" => {
            let ok = stats.counter("connected");
            value["connect_rate_per_s"] = json!(round(ok as f64 / stats.seconds().max(1e-9), 1));
            value["failed"] = json!(
                stats.counter("connect_failed")
                    + stats.counter("connect_timeout")
                    + stats.counter("boot_rejected")
            );
            value["server_cpu_us_per_connect"] = json!(per(server_cpu, ok).map(|x| round(x, 1)));
        }
        "heartbeat" => {
            let ok = stats.counter("requests_ok");
            value["requests_per_s"] = json!(round(ok as f64 / wall.max(1e-9), 1));
            value["server_cpu_us_per_request"] = json!(per(server_cpu, ok).map(|x| round(x, 1)));
            value["server_system_cpu_us_per_request"] =
                json!(per(server_system, ok).map(|x| round(x, 1)));
        }
        "push" => {
            let pushes = stats.counter("pushes");
            value["pushes_per_s"] = json!(round(pushes as f64 / wall.max(1e-9), 1));
            let clients = options.count as f64;
            value["pushes_per_s_per_client"] =
                json!(round(pushes as f64 / wall.max(1e-9) / clients, 2));
            value["server_cpu_us_per_push"] = json!(per(server_cpu, pushes).map(|x| round(x, 1)));
            value["server_system_cpu_us_per_push"] =
                json!(per(server_system, pushes).map(|x| round(x, 1)));
        }
        _ => {}
    }
    // reconnect, --rejoin: from the first drop to the last charge point booted again.
    if let (Some(first), Some(last)) = (
        stats.instants.get("first_drop"),
        stats.instants.get("last_back"),
    ) {
        value["all_back_after_s"] = json!(round(last.saturating_sub(*first) as f64 / 1e9, 3));
    }
    let mut latency = serde_json::Map::new();
    let mut curves = serde_json::Map::new();
    for (name, hist) in &stats.histograms {
        if hist.is_empty() {
            continue;
        }
        latency.insert(name.clone(), summary(hist));
        curves.insert(name.clone(), curve(hist));
    }
    value["latency"] = Value::Object(latency);
    value["curves"] = Value::Object(curves);
    value
}

fn report(options: &Options, baseline: Sample, records: &[PhaseRecord]) -> Value {
    json!({
        "label": options.label,
        "scenario": options.scenario.name(),
        "charge_points": options.count,
        "processes": options.processes(),
        "version": options.version.subprotocol(),
        "rate": options.rate,
        "duration_s": options.duration.as_secs_f64(),
        "kernel_timestamps": options.kernel_timestamps(),
        "burn_percent": options.burn_percent,
        "deflate": format!("{:?}", options.deflate),
        "date_unix_ns": unix_nanos_now().to_string(),
        "server_baseline_rss_bytes": baseline.rss,
        "server_baseline_anon_rss_bytes": baseline.anon,
        "phases": records.iter().map(|r| phase_json(options, r, baseline)).collect::<Vec<_>>(),
    })
}

/// One line per phase for the terminal.
fn describe(options: &Options, record: &PhaseRecord, baseline: Sample) -> String {
    let value = phase_json(options, record, baseline);
    let mut line = format!(
        "[{}] {} {:.1} s: server cpu {}%, rss {:.1} MB",
        options.label,
        record.stats.name,
        record.wall.as_secs_f64(),
        value["server_cpu_percent"],
        record.server_after.rss as f64 / 1e6,
    );
    if let Some(per_conn) = value["server_rss_per_connection_bytes"].as_f64() {
        line += &format!(" ({per_conn:.0} B per connection)");
    }
    line += &format!(", load cpu {}%", value["load_cpu_percent"]);
    for (name, n) in &record.stats.counters {
        if name != "load_cpu_us" {
            line += &format!(", {name} {n}");
        }
    }
    if let Some(latency) = value["latency"].as_object() {
        for (name, s) in latency {
            line += &format!(
                "\n    {name:<10} n={} p50 {} us, p90 {} us, p99 {} us, p99.9 {} us, max {} us",
                s["count"], s["p50_us"], s["p90_us"], s["p99_us"], s["p99_9_us"], s["max_us"]
            );
        }
    }
    for key in [
        "connect_rate_per_s",
        "requests_per_s",
        "server_cpu_us_per_request",
        "server_system_cpu_us_per_request",
        "pushes_per_s",
        "server_cpu_us_per_push",
        "server_system_cpu_us_per_push",
        "all_back_after_s",
    ] {
        if !value[key].is_null() {
            line += &format!("\n    {key} = {}", value[key]);
        }
    }
    line
}

/// Busy threads that load every core to a share of its time, for the run under load.
struct Burner {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Burner {
    fn start(percent: u32) -> Burner {
        let stop = Arc::new(AtomicBool::new(false));
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let busy = Duration::from_micros(100 * u64::from(percent));
        let period = Duration::from_millis(10);
        let threads = (0..cores)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let start = Instant::now();
                        while start.elapsed() < busy {
                            std::hint::spin_loop();
                        }
                        std::thread::sleep(period.saturating_sub(busy));
                    }
                })
            })
            .collect();
        Burner { stop, threads }
    }
}

impl Drop for Burner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}
