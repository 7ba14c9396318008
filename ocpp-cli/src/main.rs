//! `ocpp`: validate OCPP-J messages, replay captures against a server, run a mock CSMS or a
//! mock station. See the crate's README for each subcommand and its output.

use std::io::{self, BufRead, BufReader, Read};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use ocpp_cli::capture::{read_capture, CaptureDirection, CaptureLine, CaptureRecorder};
use ocpp_cli::replay::{replay, ReplayOptions, DEFAULT_IGNORED};
use ocpp_cli::validate::{Validator, Verdict};
use ocpp_cli::{mock_csms, mock_station};
use ocpp_messages::OcppVersion;

/// A command-line tool for OCPP-J (1.6, 2.0.1, 2.1) in the field.
#[derive(Debug, Parser)]
#[command(name = "ocpp", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Checks messages as the receiving side would: prints OK or the OCPP error code it would
    /// answer with and the JSON path of the offending field; exits 1 if any is invalid.
    Validate {
        /// One OCPP-J message (or, with --action, a bare payload). Without it (or with
        /// --file), messages are read one per line: OCPP-J messages or capture lines.
        message: Option<String>,
        /// A file of messages, one per line (`-` for stdin).
        #[arg(long, short)]
        file: Option<String>,
        /// The OCPP version (1.6, 2.0.1, 2.1); capture lines carry their own.
        #[arg(long, short)]
        version: Option<OcppVersion>,
        /// The action of a bare payload, or of a CALLRESULT whose CALL is not in the input.
        #[arg(long, short)]
        action: Option<String>,
        /// A bare payload is the action's response (CALLRESULT), not its request.
        #[arg(long)]
        result: bool,
    },
    /// Replays a capture's station side against a server and reports answers that differ
    /// from the recorded ones; exits 1 if any differ.
    Replay {
        /// The capture (JSON lines; `-` for stdin).
        capture: String,
        /// The server's URL without the identity, e.g. ws://127.0.0.1:9000/ocpp.
        #[arg(long, short)]
        url: String,
        /// A field name to ignore when comparing payloads, at any depth (repeatable; adds to
        /// the defaults: currentTime, timestamp).
        #[arg(long = "ignore", value_name = "FIELD")]
        ignore: Vec<String>,
        /// Do not ignore currentTime and timestamp.
        #[arg(long)]
        no_default_ignores: bool,
        /// How long to wait for each answer, in milliseconds.
        #[arg(long, default_value_t = 10_000)]
        timeout_ms: u64,
        /// How long to stay connected after the last answer (answering the server's CALLs),
        /// in milliseconds.
        #[arg(long, default_value_t = 200)]
        linger_ms: u64,
        /// Writes every message of this run to FILE as a capture (what the server answered
        /// this time: a capture of any server, recorded from the station's side).
        #[arg(long, value_name = "FILE")]
        record: Option<String>,
    },
    /// A mock CSMS: accepts every station, answers the basics, logs every message as a
    /// capture line on stdout.
    Csms {
        /// The address to listen on.
        #[arg(long, short, default_value = "127.0.0.1:9000")]
        listen: String,
        /// The heartbeat interval given in BootNotification answers, in seconds.
        #[arg(long, short, default_value_t = 300)]
        interval: u32,
    },
    /// A mock station: connects, boots, heartbeats, answers the CSMS's CALLs NotSupported,
    /// logs them as capture lines on stdout and its status on stderr.
    Station {
        /// The CSMS URL including the identity, e.g. ws://127.0.0.1:9000/ocpp/CP1.
        #[arg(long, short)]
        url: String,
        /// The OCPP version to offer (1.6, 2.0.1, 2.1).
        #[arg(long, short, default_value = "1.6")]
        version: OcppVersion,
        /// Stop after this many seconds (default: run until Ctrl-C).
        #[arg(long)]
        duration: Option<u64>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Validate {
            message,
            file,
            version,
            action,
            result,
        } => validate(message, file, version, action, result),
        command => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            match runtime {
                Ok(runtime) => runtime.block_on(run(command)),
                Err(error) => fail(&format!("cannot start the runtime: {error}")),
            }
        }
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("ocpp: {message}");
    ExitCode::from(2)
}

fn validate(
    message: Option<String>,
    file: Option<String>,
    version: Option<OcppVersion>,
    action: Option<String>,
    result: bool,
) -> ExitCode {
    let mut validator = Validator::new();
    if let Some(action) = action {
        validator = validator.with_action(action);
    }
    let items: Vec<String> = match (message, file) {
        (Some(message), None) => vec![message],
        (None, Some(path)) if path != "-" => match std::fs::File::open(&path) {
            Ok(file) => match BufReader::new(file).lines().collect() {
                Ok(lines) => lines,
                Err(error) => return fail(&format!("{path}: {error}")),
            },
            Err(error) => return fail(&format!("{path}: {error}")),
        },
        (None, _) => {
            let mut text = String::new();
            if let Err(error) = io::stdin().read_to_string(&mut text) {
                return fail(&format!("stdin: {error}"));
            }
            text.lines().map(String::from).collect()
        }
        (Some(_), Some(_)) => return fail("give a message or --file, not both"),
    };
    let (mut valid, mut invalid, mut unchecked) = (0usize, 0usize, 0usize);
    for (index, item) in items.iter().enumerate() {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let (label, verdict) = if let Ok(line) = CaptureLine::from_json(item) {
            let dir = match line.dir {
                CaptureDirection::In => "in",
                CaptureDirection::Out => "out",
            };
            let label = format!("line {} {} {dir}", index + 1, line.identity);
            match line.ocpp_version().or(version) {
                Some(v) => (
                    label,
                    validator.check_message(v, &line.identity, Some(line.dir), &line.text),
                ),
                None => (
                    label,
                    Verdict::Unchecked {
                        reason: format!("unknown version `{}`", line.version),
                    },
                ),
            }
        } else {
            let Some(version) = version else {
                return fail("--version is needed for messages that are not capture lines");
            };
            let label = format!("line {}", index + 1);
            if item.starts_with('{') {
                (label, validator.check_payload(version, item, result))
            } else {
                (label, validator.check_message(version, "", None, item))
            }
        };
        match &verdict {
            Verdict::Valid { .. } => valid += 1,
            Verdict::Invalid(_) => invalid += 1,
            Verdict::Unchecked { .. } => unchecked += 1,
        }
        println!("{label}: {verdict}");
    }
    println!("{valid} valid, {invalid} invalid, {unchecked} unchecked");
    if invalid > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

async fn run(command: Command) -> ExitCode {
    match command {
        Command::Replay {
            capture,
            url,
            ignore,
            no_default_ignores,
            timeout_ms,
            linger_ms,
            record,
        } => {
            let read = if capture == "-" {
                read_capture(BufReader::new(io::stdin()))
            } else {
                match std::fs::File::open(&capture) {
                    Ok(file) => read_capture(BufReader::new(file)),
                    Err(error) => return fail(&format!("{capture}: {error}")),
                }
            };
            let lines = match read {
                Ok(lines) => lines,
                Err(error) => return fail(&format!("{capture}: {error}")),
            };
            let mut fields: Vec<String> = if no_default_ignores {
                Vec::new()
            } else {
                DEFAULT_IGNORED.iter().map(|s| s.to_string()).collect()
            };
            for field in ignore {
                if !fields.contains(&field) {
                    fields.push(field);
                }
            }
            if fields.is_empty() {
                println!("ignoring fields: (none)");
            } else {
                println!("ignoring fields: {}", fields.join(", "));
            }
            let options = ReplayOptions::new(url)
                .ignore(fields)
                .timeout(Duration::from_millis(timeout_ms))
                .linger(Duration::from_millis(linger_ms));
            let report = replay(&lines, &options).await;
            print!("{report}");
            if let Some(path) = record {
                let text: String = report
                    .transcript
                    .iter()
                    .map(|line| line.to_json() + "\n")
                    .collect();
                if let Err(error) = std::fs::write(&path, text) {
                    return fail(&format!("{path}: {error}"));
                }
            }
            if report.differences.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Command::Csms { listen, interval } => {
            let recorder = Arc::new(CaptureRecorder::new(io::stdout()));
            let server = match mock_csms::bind(&listen, interval, &recorder).await {
                Ok(server) => server,
                Err(error) => return fail(&format!("cannot listen on {listen}: {error}")),
            };
            match server.local_addr() {
                Ok(addr) => eprintln!("listening on {addr}"),
                Err(error) => return fail(&format!("no local address: {error}")),
            }
            let shutdown = async {
                let _ = tokio::signal::ctrl_c().await;
            };
            match server.run_until(shutdown).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => fail(&error.to_string()),
            }
        }
        Command::Station {
            url,
            version,
            duration,
        } => {
            let recorder = Arc::new(CaptureRecorder::new(io::stdout()));
            let station = match mock_station::connect(&url, version, &recorder) {
                Ok(station) => station,
                Err(error) => return fail(&error.to_string()),
            };
            let mut status = station.watch_status();
            let watch = async {
                loop {
                    let now = *status.borrow_and_update();
                    eprintln!("{} {now:?}", station.identity());
                    if status.changed().await.is_err() {
                        break;
                    }
                }
            };
            let until = async {
                match duration {
                    Some(seconds) => tokio::time::sleep(Duration::from_secs(seconds)).await,
                    None => {
                        let _ = tokio::signal::ctrl_c().await;
                    }
                }
            };
            tokio::select! {
                () = watch => {}
                () = until => {}
            }
            station.close();
            match tokio::time::timeout(Duration::from_secs(5), station.stopped()).await {
                Ok(Ok(())) | Err(_) => ExitCode::SUCCESS,
                Ok(Err(error)) => fail(&error.to_string()),
            }
        }
        // Handled in `main`, without a runtime.
        Command::Validate { .. } => ExitCode::SUCCESS,
    }
}
