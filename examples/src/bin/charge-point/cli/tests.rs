//! The command line's tests: clap's definition, defaults and the URL, wss and certificates,
//! versions and counts, the values refused.

use super::*;

/// Parses `args` as `charge-point args...`.
fn parse(args: &[&str]) -> Result<Options, clap::Error> {
    Options::try_parse_from(std::iter::once("charge-point").chain(args.iter().copied()))
}

/// Whether `result` is a usage error (clap's exit code 2), not `--help`.
fn is_usage_error(result: &Result<Options, clap::Error>) -> bool {
    matches!(result, Err(e) if e.exit_code() == 2 && e.use_stderr()
        && e.kind() != ErrorKind::DisplayHelp)
}

/// The text `--help` prints.
fn help_text() -> String {
    match parse(&["--help"]) {
        Ok(o) => panic!("--help parsed: {o:?}"),
        Err(e) => e.render().to_string(),
    }
}

/// The error message of `args`, which must not parse.
fn error_of(args: &[&str]) -> String {
    match parse(args) {
        Ok(o) => panic!("{args:?} parsed: {o:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn clap_definition_is_consistent() {
    Options::command().debug_assert();
}

#[test]
fn defaults_and_url() {
    let o = parse(&[]).unwrap();
    assert_eq!(
        (o.url.host.as_str(), o.url.endpoint.as_str()),
        ("127.0.0.1:9000", "/ocpp")
    );
    assert_eq!(o.identities(), vec!["CP001".to_string()]);
    assert_eq!(o.url.url, "ws://127.0.0.1:9000/ocpp/CP001");
    assert_eq!(o.url.server_name, "127.0.0.1");
    assert!(!o.url.tls && o.ca.is_none() && o.client_cert().is_none());
    assert_eq!(
        o.versions,
        vec![OcppVersion::V2_1, OcppVersion::V2_0_1, OcppVersion::V1_6]
    );
    assert_eq!((o.count, o.connectors), (1, 1));
    assert_eq!(o.meter_interval, Duration::from_secs(10));
    assert!(!o.session);
    assert_eq!(o.session_length, Duration::from_secs(30));
    assert_eq!(o.id_tag, "SIMTAG0001");
    assert_eq!((o.duration, o.seed), (None, None));
    // The defaults of the retry options are those of the library.
    assert_eq!(o.back_off(), RetryBackOff::default());
    let o = parse(&["--url", "ws://csms.example/a/b/RDAM%7C123?x=1"]).unwrap();
    assert_eq!(o.url.host, "csms.example:80");
    assert_eq!(o.url.endpoint, "/a/b");
    assert_eq!(o.url.identity, "RDAM|123");
    let o = parse(&["--url", "ws://[::1]:9/CP9"]).unwrap();
    assert_eq!(
        (o.url.host.as_str(), o.url.endpoint.as_str()),
        ("[::1]:9", "")
    );
    assert_eq!(o.url.server_name, "::1");
    assert!(!o.url.tls);
}

#[test]
fn wss_and_certificates() {
    let o = parse(&["--url", "wss://csms.example/ocpp/CP1", "--ca", "ca.pem"]).unwrap();
    assert!(o.url.tls);
    assert_eq!(o.url.host, "csms.example:443");
    assert_eq!(o.url.server_name, "csms.example");
    assert_eq!(o.ca, Some(PathBuf::from("ca.pem")));
    let o = parse(&[
        "--url",
        "wss://127.0.0.1:9443/ocpp/CP1",
        "--ca",
        "ca.pem",
        "--cert",
        "cp.pem",
        "--key",
        "cp.key",
        "--password",
        "secret-password-1234",
    ])
    .unwrap();
    assert_eq!(
        (o.url.host.as_str(), o.url.server_name.as_str()),
        ("127.0.0.1:9443", "127.0.0.1")
    );
    assert_eq!(
        o.client_cert(),
        Some((PathBuf::from("cp.pem"), PathBuf::from("cp.key")))
    );
    assert_eq!(
        o.password.as_ref().map(|p| p.0.as_str()),
        Some("secret-password-1234")
    );
    assert!(!format!("{o:?}").contains("secret-password-1234"));
}

#[test]
fn versions_in_order_and_counts() {
    let o = parse(&[
        "--version",
        "1.6",
        "--version",
        "ocpp2.1",
        "--version",
        "1.6",
    ])
    .unwrap();
    assert_eq!(o.versions, vec![OcppVersion::V1_6, OcppVersion::V2_1]);
    let o = parse(&["--count", "3", "--retry-wait-min-s", "0.25", "--session"]).unwrap();
    assert_eq!(o.identities(), vec!["CP0001", "CP0002", "CP0003"]);
    assert_eq!(
        o.url_of("CP0002"),
        "ws://127.0.0.1:9000/ocpp/CP0002".to_string()
    );
    assert_eq!(o.back_off().wait_minimum, Duration::from_millis(250));
    assert!(o.session);
}

#[test]
fn every_option_and_repeats() {
    let o = parse(&[
        "--connectors",
        "32",
        "--meter-interval-s",
        "0.5",
        "--session-s",
        "1e1",
        "--id-tag",
        "ABCDEFGHIJKLMNOPQRST",
        "--duration-s",
        "0",
        "--retry-random-range-s",
        "0",
        "--retry-repeat-times",
        "0",
        "--seed",
        "18446744073709551615",
        "--count",
        "100000",
    ])
    .unwrap();
    assert_eq!((o.connectors, o.count), (32, 100_000));
    assert_eq!(o.meter_interval, Duration::from_millis(500));
    assert_eq!(o.session_length, Duration::from_secs(10));
    assert_eq!(o.id_tag, "ABCDEFGHIJKLMNOPQRST");
    assert_eq!(o.duration, Some(Duration::ZERO));
    assert_eq!(o.back_off().random_range, Duration::ZERO);
    assert_eq!(o.back_off().repeat_times, 0);
    assert_eq!(o.seed, Some(u64::MAX));
    // As before clap: a repeated option takes its last value, a repeated flag is fine, and
    // a value may start with '-'.
    let o = parse(&[
        "--count",
        "2",
        "--count",
        "4",
        "--session",
        "--session",
        "--password",
        "-secret",
        "--id-tag",
        "-TAG",
    ])
    .unwrap();
    assert_eq!(o.count, 4);
    assert!(o.session);
    assert_eq!(o.password.map(|p| p.0), Some("-secret".to_string()));
    assert_eq!(o.id_tag, "-TAG");
}

#[test]
fn errors() {
    assert_eq!(
        parse(&["--help"]).unwrap_err().kind(),
        ErrorKind::DisplayHelp
    );
    assert_eq!(parse(&["-h"]).unwrap_err().kind(), ErrorKind::DisplayHelp);
    for bad in [
        &["--url", "http://x/y"][..],
        &["--url", "wss://x/y"],
        &["--url", "ws://x/y", "--ca", "ca.pem"],
        &["--url", "wss://x/y", "--ca", "ca.pem", "--cert", "c.pem"],
        &["--url", "wss://x/y", "--ca", "ca.pem", "--key", "k.pem"],
        &["--url", "ws://x/"],
        &["--url", "ws:///CP1"],
        &["--version", "3.0"],
        &["--count", "0"],
        &["--count", "100001"],
        &["--connectors", "33"],
        &["--retry-repeat-times", "32"],
        &["--seed", "-1"],
        &["--meter-interval-s", "-1"],
        &["--meter-interval-s", "0"],
        &["--session-s", "x"],
        &["--duration-s", "inf"],
        &["--id-tag", ""],
        &["--id-tag", "ABCDEFGHIJKLMNOPQRSTU"],
        &["--bogus", "1"],
        &["--url"],
        &["--session", "extra"],
        &["--session=yes"],
    ] {
        assert!(is_usage_error(&parse(bad)), "{bad:?}");
    }
}

#[test]
fn error_messages_name_the_problem() {
    for (args, expected) in [
        (
            &["--url", "http://x/y"][..],
            "expected ws://host[:port]/path",
        ),
        (&["--url", "wss://x/y"], "wss:// needs --ca FILE"),
        (
            &["--url", "ws://x/y", "--ca", "ca.pem"],
            "--ca, --cert and --key are for wss:// URLs",
        ),
        (
            &["--url", "wss://x/y", "--ca", "ca.pem", "--cert", "c.pem"],
            "--key <FILE>",
        ),
        (
            &["--url", "wss://x/y", "--ca", "ca.pem", "--key", "k.pem"],
            "--cert <FILE>",
        ),
        (&["--url", "ws://x/"], "the identity) is empty"),
        (&["--version", "3.0"], "expected 1.6, 2.0.1 or 2.1"),
        (&["--count", "0"], "1..=100000"),
        (&["--meter-interval-s", "0"], "must be > 0"),
        (&["--meter-interval-s", "-1"], "expected seconds >= 0"),
        (&["--id-tag", ""], "needs 1 to 20 characters"),
    ] {
        let message = error_of(args);
        assert!(message.contains(expected), "{args:?}: {message}");
    }
}

#[test]
fn unknown_option_is_a_usage_error() {
    let error = parse(&["--bogus", "1"]).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::UnknownArgument);
    assert_eq!(error.exit_code(), 2);
    assert!(error.use_stderr());
    assert!(error.to_string().contains("--bogus"), "{error}");
}

#[test]
fn help_describes_every_option() {
    // What `charge-point --help` prints.
    let help = help_text();
    assert!(help.starts_with(ABOUT), "{help}");
    assert!(help.contains("Logs go to stderr"), "{help}");
    for option in [
        "--url <URL>",
        "--version <V>",
        "--password <P>",
        "--ca <FILE>",
        "--cert <FILE>",
        "--key <FILE>",
        "--count <N>",
        "--connectors <N>",
        "--meter-interval-s <S>",
        "--session ",
        "--session-s <S>",
        "--id-tag <TAG>",
        "--duration-s <S>",
        "--retry-wait-min-s <S>",
        "--retry-random-range-s <S>",
        "--retry-repeat-times <N>",
        "--seed <N>",
        "--state-dir <DIR>",
        "--help",
    ] {
        assert!(help.contains(option), "{option} missing:\n{help}");
    }
    assert!(help.contains("[env: OCPP_PASSWORD]"), "{help}");
    // Every option has a text of its own.
    for arg in Options::command().get_arguments() {
        assert!(
            arg.get_help().is_some_and(|h| !h.to_string().is_empty()),
            "{:?} has no help",
            arg.get_id()
        );
    }
    let error = parse(&["--help"]).unwrap_err();
    assert_eq!(error.exit_code(), 0);
    assert!(!error.use_stderr());
}

#[test]
fn documented_invocations_parse() {
    // README.md and the docs of main.rs.
    for line in [
        "--url ws://127.0.0.1:9000/ocpp/CP001 --version 1.6 --session --duration-s 60",
        "--url ws://127.0.0.1:9100/ocpp/CP001 --version 1.6 --session --duration-s 60",
        "--url wss://localhost:9000/ocpp/CP001 --ca ca.pem --cert CP001.pem --key CP001.key \
         --version 1.6 --duration-s 10",
        "--url wss://localhost:9000/ocpp/CP001 --ca ca.pem --cert cp001.pem --key cp001.key",
    ] {
        let args: Vec<&str> = line.split_whitespace().collect();
        if let Err(e) = parse(&args) {
            panic!("{line}: {e}");
        }
    }
}

/// Set by [`password_from_environment`] for the child process it runs.
const CHILD_MARKER: &str = "CHARGE_POINT_CLI_TEST_CHILD";

/// `--password` from `OCPP_PASSWORD`. clap reads the variable when it builds the command,
/// and setting it in this process would race the tests running in parallel (and their
/// `getenv`), so this runs [`password_from_environment_in_child`] in a child process of
/// this test binary, once with the variable set and once without it.
#[test]
fn password_from_environment() {
    let exe = std::env::current_exe().unwrap();
    // The test's path without the crate name: `cli::tests::...`.
    let module = module_path!()
        .split_once("::")
        .map_or(module_path!(), |(_, m)| m);
    let name = format!("{module}::password_from_environment_in_child");
    for value in [Some("from-the-environment-42"), None] {
        let mut child = std::process::Command::new(&exe);
        child.args(["--exact", &name, "--test-threads=1"]);
        match value {
            Some(value) => child.env(CHILD_MARKER, "set").env(PASSWORD_ENV, value),
            None => child.env(CHILD_MARKER, "unset").env_remove(PASSWORD_ENV),
        };
        let out = child.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "{value:?}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The child half of [`password_from_environment`]; passes trivially in a normal run.
#[test]
fn password_from_environment_in_child() {
    let Some(marker) = std::env::var_os(CHILD_MARKER) else {
        return;
    };
    let o = parse(&[]).unwrap();
    if marker == "unset" {
        assert!(o.password.is_none());
        return;
    }
    let secret = "from-the-environment-42";
    assert_eq!(o.password.as_ref().map(|p| p.0.as_str()), Some(secret));
    // The command line wins over the environment.
    let o = parse(&["--password", "from-the-command-line"]).unwrap();
    assert_eq!(
        o.password.map(|p| p.0),
        Some("from-the-command-line".to_string())
    );
    // Neither help nor errors print the value.
    let help = help_text();
    assert!(help.contains("[env: OCPP_PASSWORD]"), "{help}");
    assert!(!help.contains(secret), "{help}");
    assert!(!error_of(&["--bogus"]).contains(secret));
}
