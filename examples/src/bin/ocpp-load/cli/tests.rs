//! The command line's tests: every option parsed, its bad values refused by clap, the help.

use clap::error::ErrorKind;
use clap::CommandFactory;

use super::*;

/// Parses `line` (words separated by blanks) as `ocpp-load`'s arguments.
fn parse_line(line: &str) -> Result<Options, clap::Error> {
    parse_words(&line.split_whitespace().collect::<Vec<_>>())
}

/// Parses `words` as `ocpp-load`'s arguments.
fn parse_words(words: &[&str]) -> Result<Options, clap::Error> {
    parse(std::iter::once("ocpp-load").chain(words.iter().copied()))
}

/// The kind of error `line` gives; panics (the test fails) if it parses.
fn error(line: &str) -> clap::Error {
    match parse_line(line) {
        Ok(o) => panic!("`{line}` parsed: {o:?}"),
        Err(e) => e,
    }
}

#[test]
fn defaults() {
    let o = parse_line("heartbeat").unwrap();
    assert_eq!(o.scenario, Scenario::Heartbeat);
    assert_eq!(o.url.host, "127.0.0.1:9000");
    assert_eq!(o.url.ip, IpAddr::V4(Ipv4Addr::LOCALHOST));
    assert_eq!(o.url.port, 9000);
    assert_eq!(o.url.endpoint, "/ocpp");
    assert_eq!(o.count, 1000);
    assert_eq!(o.rate, 1000.0);
    assert_eq!(o.version, OcppVersion::V1_6);
    assert_eq!(o.prefix, "LOAD");
    assert_eq!(o.sources(), vec![IpAddr::V4(Ipv4Addr::LOCALHOST)]);
    assert_eq!(o.processes(), 1);
    assert_eq!(o.duration, Duration::from_secs(20));
    assert_eq!(o.heartbeat(), Some(Duration::from_secs(10)));
    assert_eq!(o.status(), Some(Duration::from_secs(30)));
    assert_eq!(o.meter(), Some(Duration::from_secs(30)));
    assert_eq!(o.connect_timeout(), Duration::from_secs(120));
    assert!(o.server_pids().is_empty());
    assert_eq!(o.restart_cmd, None);
    assert_eq!(o.burn_percent, 0);
    assert_eq!(o.json, None);
    assert_eq!(o.label, "server");
    assert!(o.kernel_timestamps());
    assert_eq!(o.retry_min, Duration::from_millis(250));
    assert_eq!(o.retry_random, Duration::from_millis(1000));
    assert_eq!(o.deflate, Deflate::Off);
    assert_eq!(o.soak.admin, None);
    assert_eq!(o.soak.commands_per_s, 10.0);
    assert_eq!(o.soak.churn(), Some(Duration::from_secs(600)));
    assert_eq!(o.soak.drop_share, 0.5);
    assert_eq!(o.soak.duplicate_share, 0.02);
    assert_eq!(o.soak.session(), Duration::from_secs(180));
    assert_eq!(o.soak.pause(), Duration::from_secs(180));
    assert_eq!(o.soak.retry_max, Duration::from_secs(30));
    assert_eq!(o.soak.call_timeout(), Duration::from_secs(30));
    assert_eq!(o.worker, None);
}

#[test]
fn flags() {
    let o = parse_line(
        "push --url ws://127.0.0.1:9100/ --count 50000 --source-count 3 --version 2.0.1 \
         --status-s 0 --server-pid 1,2 --worker 1/3",
    )
    .unwrap();
    assert_eq!(o.url.endpoint, "");
    assert_eq!(o.processes(), 3);
    assert_eq!(o.sources().len(), 3);
    assert_eq!(o.sources()[0], IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)));
    assert_eq!(o.version, OcppVersion::V2_0_1);
    assert_eq!(o.status(), None);
    assert_eq!(o.server_pids(), vec![1, 2]);
    assert_eq!(o.worker, Some(WorkerSlot { index: 1, of: 3 }));
}

#[test]
fn every_value() {
    let o = parse_line(
        "soak --url ws://localhost/x/ --rate 2.5 --version ocpp2.1 --prefix -P- \
         --password -secret --sources 127.0.0.3,::1 --processes 0 --count 7 \
         --duration-s 1.5 --heartbeat-s 0 --meter-s 0.25 --connect-timeout-s 0 \
         --server-pid 4,,5 --restart-cmd true --restart-pid-file pid --rejoin \
         --end-file end --retry-min-ms 1 \
         --retry-random-ms 2 --deflate no-context --admin 127.0.0.1:9001 \
         --commands-per-s 0 --churn-s 0 --drop-share 1 --duplicate-share 0 --session-s 0 \
         --retry-max-ms 3 --call-timeout-s 0 --burn 100 --timestamps user --label -x \
         --json out.json",
    )
    .unwrap();
    assert_eq!(o.scenario, Scenario::Soak);
    assert_eq!(o.url.host, "localhost");
    assert_eq!(o.url.port, 80);
    assert_eq!(o.url.ip, IpAddr::V4(Ipv4Addr::LOCALHOST));
    assert_eq!(o.url.endpoint, "/x");
    assert_eq!(o.rate, 2.5);
    assert_eq!(o.version, OcppVersion::V2_1);
    assert_eq!(o.prefix, "-P-");
    assert_eq!(o.password.as_deref(), Some("-secret"));
    assert_eq!(o.sources().len(), 2);
    assert_eq!(o.processes(), 1);
    assert_eq!(o.duration, Duration::from_millis(1500));
    assert_eq!(o.heartbeat(), None);
    assert_eq!(o.meter(), Some(Duration::from_millis(250)));
    assert_eq!(o.connect_timeout(), Duration::from_secs(120));
    assert_eq!(o.server_pids(), vec![4, 5]);
    assert_eq!(o.restart_cmd.as_deref(), Some("true"));
    assert_eq!(o.restart_pid_file.as_deref(), Some("pid"));
    assert!(o.rejoin);
    assert_eq!(o.end_file.as_deref(), Some("end"));
    assert_eq!(o.retry_min, Duration::from_millis(1));
    assert_eq!(o.retry_random, Duration::from_millis(2));
    assert_eq!(o.deflate, Deflate::NoContext);
    assert_eq!(o.soak.admin, Some(SocketAddr::from(([127, 0, 0, 1], 9001))));
    assert_eq!(o.soak.commands_per_s, 0.0);
    assert_eq!(o.soak.churn(), None);
    assert_eq!(o.soak.drop_share, 1.0);
    assert_eq!(o.soak.duplicate_share, 0.0);
    assert_eq!(o.soak.session(), Duration::from_secs(1));
    assert_eq!(o.soak.pause(), Duration::from_secs(1));
    assert_eq!(o.soak.retry_max, Duration::from_millis(3));
    assert_eq!(o.soak.call_timeout(), Duration::from_secs(30));
    assert_eq!(o.burn_percent, 100);
    assert!(!o.kernel_timestamps());
    assert_eq!(o.label, "-x");
    assert_eq!(o.json.as_deref(), Some("out.json"));
}

#[test]
fn processes_are_at_most_one_per_charge_point() {
    assert_eq!(parse_line("idle --count 40000").unwrap().processes(), 3);
    assert_eq!(
        parse_line("idle --count 2 --processes 5")
            .unwrap()
            .processes(),
        2
    );
    assert_eq!(
        parse_line("idle --count 9 --processes 4")
            .unwrap()
            .processes(),
        4
    );
}

#[test]
fn the_last_of_a_repeated_option_wins() {
    let o = parse_line("idle --label a --count 5 --label b --count 6").unwrap();
    assert_eq!(o.label, "b");
    assert_eq!(o.count, 6);
    let o = parse_line("idle --sources 127.0.0.9 --source-count 2").unwrap();
    assert_eq!(o.sources().len(), 2);
    assert_eq!(o.sources()[1], IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3)));
    let o = parse_line("idle --source-count 2 --sources 127.0.0.9").unwrap();
    assert_eq!(o.sources(), vec![IpAddr::V4(Ipv4Addr::new(127, 0, 0, 9))]);
}

#[test]
fn errors() {
    let refused: [(ErrorKind, &[&str]); 4] = [
        // No SCENARIO; reconnect without --restart-cmd.
        (ErrorKind::MissingRequiredArgument, &["", "reconnect"]),
        (
            ErrorKind::InvalidValue,
            &[
                "fly",
                "idle --count",
                "idle --deflate on",
                "idle --timestamps wall",
            ],
        ),
        (
            ErrorKind::ValueValidation,
            &[
                "idle --url wss://h/x",
                "idle --url ws://h:1/x",
                "idle --url ws://1.2.3.4:x/",
                "soak --drop-share 2",
                "soak --duplicate-share nan",
                "soak --admin nowhere",
                "idle --count 0",
                "idle --count -1",
                "idle --rate 0",
                "idle --rate -5",
                "idle --rate nan",
                "idle --version 3",
                "idle --sources 127.0.0.1,nowhere",
                "idle --source-count 0",
                "idle --source-count 251",
                "idle --duration-s -1",
                "idle --heartbeat-s inf",
                "idle --meter-s 1e300",
                "idle --server-pid 1,x",
                "idle --retry-min-ms 1.5",
                "idle --burn 101",
                "idle --worker 1",
                "idle --worker 2/2",
                "idle --worker 0/0",
            ],
        ),
        (ErrorKind::UnknownArgument, &["idle extra"]),
    ];
    for (kind, lines) in refused {
        for line in lines {
            assert_eq!(error(line).kind(), kind, "`{line}`");
        }
    }
    assert!(error("reconnect").to_string().contains("--restart-cmd"));
}

/// The message of the error `line` gives, checked to be a usage error of `kind`: exit code 2,
/// printed to stderr.
fn usage_error(line: &str, kind: ErrorKind) -> String {
    let e = error(line);
    assert_eq!(e.kind(), kind, "`{line}`");
    assert_eq!(e.exit_code(), 2);
    assert!(e.use_stderr());
    e.to_string()
}

#[test]
fn an_unknown_option_is_clap_s_error() {
    let text = usage_error("idle --cout 5", ErrorKind::UnknownArgument);
    assert!(text.contains("--cout"), "{text}");
    // clap suggests the option meant.
    assert!(text.contains("--count"), "{text}");
    // `--version` is the OCPP version's, and it needs a value: no program version flag.
    assert_eq!(error("idle --version").kind(), ErrorKind::InvalidValue);
    assert_eq!(error("idle -V").kind(), ErrorKind::UnknownArgument);
}

#[test]
fn a_bad_number_names_the_option_and_the_value() {
    let text = usage_error("idle --count x", ErrorKind::ValueValidation);
    assert!(text.contains("--count"), "{text}");
    assert!(text.contains("`x` is not a number"), "{text}");
    let text = error("idle --duration-s -2").to_string();
    assert!(
        text.contains("--duration-s") && text.contains("must be >= 0"),
        "{text}"
    );
    let text = error("soak --drop-share 1.5").to_string();
    assert!(
        text.contains("--drop-share") && text.contains("within 0..=1"),
        "{text}"
    );
}

/// The `--help` text, as `ocpp-load --help` prints it.
fn help() -> clap::Error {
    match parse_line("--help") {
        Ok(o) => panic!("--help parsed: {o:?}"),
        Err(e) => e,
    }
}

#[test]
fn help_goes_to_stdout_with_exit_code_0() {
    let e = help();
    assert_eq!(e.kind(), ErrorKind::DisplayHelp);
    assert_eq!(e.exit_code(), 0);
    assert!(!e.use_stderr());
    // Also after a scenario and among options, as before.
    assert_eq!(error("idle --count 5 -h").kind(), ErrorKind::DisplayHelp);
}

/// Whether the help lists `flag`: a line starts with it (after `-h, ` for `--help`).
fn listed(help: &str, flag: &str) -> bool {
    help.lines().any(|line| {
        let line = line.trim_start();
        line.strip_prefix("-h, ")
            .unwrap_or(line)
            .split_whitespace()
            .next()
            == Some(flag)
    })
}

#[test]
fn help_names_and_explains_every_option() {
    let text = help().to_string();
    let mut command = Options::command();
    // With clap's own --help among the arguments.
    command.build();
    let mut named = 0;
    for arg in command.get_arguments() {
        let id = arg.get_id().as_str();
        if arg.is_hide_set() {
            assert_eq!(id, "worker");
            continue;
        }
        if let Some(long) = arg.get_long() {
            assert!(
                listed(&text, &format!("--{long}")),
                "--{long} not in\n{text}"
            );
            named += 1;
        }
        assert!(
            arg.get_help().is_some_and(|h| !h.to_string().is_empty()),
            "{id} has no help"
        );
    }
    // The options of the hand-written parser, and --help.
    for flag in [
        "--url",
        "--count",
        "--rate",
        "--version",
        "--prefix",
        "--password",
        "--sources",
        "--source-count",
        "--processes",
        "--duration-s",
        "--heartbeat-s",
        "--status-s",
        "--meter-s",
        "--connect-timeout-s",
        "--server-pid",
        "--restart-cmd",
        "--restart-pid-file",
        "--rejoin",
        "--end-file",
        "--retry-min-ms",
        "--retry-random-ms",
        "--deflate",
        "--admin",
        "--commands-per-s",
        "--churn-s",
        "--drop-share",
        "--duplicate-share",
        "--session-s",
        "--retry-max-ms",
        "--call-timeout-s",
        "--burn",
        "--timestamps",
        "--label",
        "--json",
        "--help",
    ] {
        assert!(listed(&text, flag), "{flag} not in\n{text}");
    }
    assert_eq!(named, 35, "{text}");
    assert!(!listed(&text, "--worker"), "{text}");
    for scenario in Scenario::value_variants() {
        assert!(text.contains(scenario.name()), "{}", scenario.name());
    }
    assert!(text.contains("OCPP_PASSWORD"), "{text}");
}

#[test]
fn the_password_also_comes_from_ocpp_password_never_shown() {
    // Checked on the definition, so the test needs no change to the process environment.
    let command = Options::command();
    let password = command
        .get_arguments()
        .find(|arg| arg.get_id() == "password")
        .expect("--password");
    assert_eq!(
        password.get_env(),
        Some(std::ffi::OsStr::new("OCPP_PASSWORD"))
    );
    assert!(password.is_hide_env_values_set());
    // The command line still sets it.
    let o = parse_line("idle --password s3cret").unwrap();
    assert_eq!(o.password.as_deref(), Some("s3cret"));
}

#[test]
fn the_definition_is_consistent() {
    Options::command().debug_assert();
}

#[test]
fn a_worker_parses_the_coordinator_s_command_line() {
    // The coordinator passes its own arguments on and appends --worker I/P (coordinator.rs).
    let line = "heartbeat --url ws://127.0.0.1:9000/ocpp --count 40 --processes 2 \
                --rate 400 --duration-s 2 --heartbeat-s 0.5 --json /tmp/r.json";
    let coordinator = parse_line(line).unwrap();
    assert_eq!(coordinator.worker, None);
    for index in 0..coordinator.processes() {
        let worker = parse_line(&format!(
            "{line} --worker {index}/{}",
            coordinator.processes()
        ))
        .unwrap();
        assert_eq!(
            worker.worker,
            Some(WorkerSlot {
                index,
                of: coordinator.processes()
            })
        );
        assert_eq!(worker.count, coordinator.count);
        assert_eq!(worker.heartbeat(), coordinator.heartbeat());
    }
}

/// The command lines of bench/, scripts/ and the documentation, with their shell variables
/// filled in (the same words, quoted arguments as one word).
#[test]
fn the_documented_command_lines_parse() {
    let lines = [
        // README.md
        "heartbeat --count 10000 --server-pid 4242",
        // BENCHMARKS.md
        "heartbeat --count 1000 --duration-s 6 --heartbeat-s 1 --status-s 2 --meter-s 2 \
         --deflate no-context",
        "heartbeat --count 1000 --duration-s 6 --heartbeat-s 1 --status-s 2 --meter-s 2 \
         --deflate context",
        "idle --url ws://127.0.0.1:9480/ocpp --count 10000 --rate 2000 --source-count 2 \
         --duration-s 10 --server-pid 4242 --json /tmp/mem-idle.json",
        "idle --count 19000 --source-count 4",
        // RELIABILITY.md
        "soak --url ws://127.0.0.1:9500/ocpp --admin 127.0.0.1:9501 --count 5000 --rate 500 \
         --duration-s 1800 --heartbeat-s 60 --meter-s 30 --session-s 180 --churn-s 600 \
         --drop-share 0.5 --duplicate-share 0.02 --commands-per-s 10 --retry-min-ms 500 \
         --retry-random-ms 1000 --retry-max-ms 30000 --server-pid 4242 --json soak.json",
        // bench/run.sh (run ... idle, heartbeat, push, stream, deflate)
        "idle --url ws://127.0.0.1:9400/ocpp --count 1000 --rate 1000 --source-count 1 \
         --server-pid 4242,4243 --label mio-1 --json out/idle.json --duration-s 20",
        "heartbeat --url ws://127.0.0.1:9400/ocpp --count 50000 --rate 1000 --source-count 10 \
         --server-pid 4242 --label mio-1 --json out/hb.json --duration-s 60 --heartbeat-s 10 \
         --status-s 30 --meter-s 30",
        "push --url ws://127.0.0.1:9400/ocpp --count 1000 --rate 1000 --source-count 1 \
         --server-pid 4242 --label tokio --json out/push.json --duration-s 20",
        "stream --url ws://127.0.0.1:9400/ocpp --count 20 --rate 1000 --source-count 1 \
         --server-pid 4242 --label mio-1 --json out/stream.json --duration-s 20 --burn 80",
        "heartbeat --url ws://127.0.0.1:9400/ocpp --count 10000 --rate 1000 --source-count 2 \
         --server-pid 4242 --label mio-1 --json out/d.json --duration-s 60 --heartbeat-s 10 \
         --status-s 30 --meter-s 30 --deflate no-context --label mio-1-deflate",
        // bench/cluster.sh
        "heartbeat --url ws://127.0.0.1:9600/ocpp --count 40000 --rate 1000 --source-count 8 \
         --processes 3 --server-pid 1,2,3 --label mio-cluster-3 --json out/c.json \
         --duration-s 60 --heartbeat-s 30 --status-s 0 --meter-s 0 --connect-timeout-s 280",
        // bench/cache_sim.sh
        "heartbeat --url ws://127.0.0.1:9700/ocpp --count 2000 --rate 250 --source-count 2 \
         --duration-s 70 --heartbeat-s 60 --status-s 0 --meter-s 0 --json out/load.json",
        // bench/callgrind_servers.sh
        "heartbeat --url ws://127.0.0.1:9700/ocpp --count 200 --rate 100 --duration-s 40 \
         --heartbeat-s 1 --status-s 3 --meter-s 3",
        // scripts/soak.sh (soak)
        "soak --url ws://127.0.0.1:9500/ocpp --admin 127.0.0.1:9501 --count 5000 --rate 500 \
         --duration-s 1800 --heartbeat-s 60 --meter-s 30 --session-s 180 --churn-s 600 \
         --drop-share 0.5 --duplicate-share 0.02 --commands-per-s 10 --retry-min-ms 500 \
         --retry-random-ms 1000 --retry-max-ms 30000 --server-pid 4242 --label mio-server \
         --json out/soak.json",
    ];
    for line in lines {
        if let Err(e) = parse_line(line) {
            panic!("`{line}`: {e}");
        }
    }
    // The lines with a quoted --restart-cmd (RELIABILITY.md, bench/run.sh, scripts/soak.sh):
    // the other words, and the command, which is one word.
    let with_restart_cmd = [
        (
            "reconnect --url ws://127.0.0.1:9502/ocpp --count 19000 --source-count 4 --rate 1000 \
             --connect-timeout-s 300 --server-pid 4242 --restart-pid-file restarted.pid \
             --retry-min-ms 250 --retry-random-ms 1000",
            "exec mio-server --listen 127.0.0.1:9502 --admin 127.0.0.1:9503",
        ),
        (
            "reconnect --url ws://127.0.0.1:9400/ocpp --count 1000 --rate 1000 --source-count 1 \
             --server-pid 4242 --label mio-1 --json out/r.json \
             --restart-pid-file out/restarted.pid --connect-timeout-s 120",
            "exec taskset -c 0 sh -c 'target/release/mio-server --listen 127.0.0.1:9400' \
             >>out/server.log 2>&1",
        ),
        (
            "reconnect --url ws://127.0.0.1:9502/ocpp --count 19000 --source-count 4 --rate 1000 \
             --connect-timeout-s 300 --server-pid 4242 --restart-pid-file out/restarted.pid \
             --retry-min-ms 250 --retry-random-ms 1000 --label mio-server --json out/restart.json",
            "exec bin/mio-server --listen 127.0.0.1:9502 --admin 127.0.0.1:9503 \
             >>out/restart-server.log 2>&1",
        ),
    ];
    for (line, restart_cmd) in with_restart_cmd {
        let mut words: Vec<&str> = line.split_whitespace().collect();
        words.extend(["--restart-cmd", restart_cmd]);
        match parse_words(&words) {
            Ok(o) => assert_eq!(o.restart_cmd.as_deref(), Some(restart_cmd)),
            Err(e) => panic!("`{words:?}`: {e}"),
        }
    }
    // bench/run.sh's deflate runs give --label twice: the second is the one.
    let o = parse_line(lines[10]).unwrap();
    assert_eq!(o.label, "mio-1-deflate");
    assert_eq!(o.deflate, Deflate::NoContext);
}
