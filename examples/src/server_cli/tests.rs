//! The command line's tests: defaults, flags, what goes together, the errors and the help.

use super::*;
use crate::tls::TlsError;

fn parse(args: &[&str]) -> Result<Args, clap::Error> {
    let command = command("server", "A test server.", "threads");
    // Nothing written to the working directory: memory unless a test says otherwise.
    let defaults = ["server", "--database", "memory"];
    args_from(command, defaults.into_iter().chain(args.iter().copied()))
}

/// The directory of a test's files, created: `server-cli-NAME-PID` in the temporary directory.
fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("server-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Parses `line`, its words separated by blanks (see [`parse`]).
fn parse_line(line: &str) -> Result<Args, clap::Error> {
    parse(&line.split_whitespace().collect::<Vec<_>>())
}

#[test]
fn capture_opens_its_file_for_appending_and_none_without() {
    let args = parse(&[]).unwrap();
    assert!(args.capture.is_none());
    assert!(capture(&args).unwrap().is_none());
    let path = std::env::temp_dir().join(format!("server-cli-{}.jsonl", std::process::id()));
    std::fs::write(&path, "kept\n").unwrap();
    let args = parse(&["--capture", path.to_str().unwrap()]).unwrap();
    assert_eq!(args.capture.as_deref(), Some(path.as_path()));
    let recorder = capture(&args).unwrap().expect("a recorder");
    recorder.record_text(
        "CP1",
        ocpp_messages::OcppVersion::V1_6,
        ocpp_cli::capture::CaptureDirection::In,
        "[2,\"1\",\"Heartbeat\",{}]".into(),
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(text.starts_with("kept\n{"), "{text}");
    let missing = parse(&["--capture", "/nonexistent-dir/capture.jsonl"]).unwrap();
    assert!(matches!(capture(&missing), Err(StartError::Capture { .. })));
}

#[test]
fn defaults_and_flags() {
    let args = parse(&[]).unwrap();
    assert_eq!(args.listen.to_string(), DEFAULT_LISTEN);
    assert_eq!(args.admin.unwrap().to_string(), DEFAULT_ADMIN);
    let args = parse(&[
        "--listen=127.0.0.1:0",
        "--admin",
        "off",
        "--threads",
        "2",
        "--push-interval-ms",
        "500",
    ])
    .unwrap();
    assert_eq!(args.listen.port(), 0);
    assert!(args.admin.is_none());
    assert_eq!(args.threads, 2);
    assert_eq!(args.shards(), 2, "one shard per thread unless told");
    assert_eq!(args.push_interval, Some(Duration::from_millis(500)));
    assert_eq!(parse(&["--shards", "0"]).unwrap().shards(), 0);
    assert_eq!(
        parse(&["--threads", "3", "--shards", "8"])
            .unwrap()
            .shards(),
        8
    );
    assert!(parse(&["--shards", "x"]).is_err());
    let help = parse(&["--help"]).unwrap_err();
    assert_eq!(help.kind(), clap::error::ErrorKind::DisplayHelp);
    assert!(parse(&["--threads", "0"]).is_err());
    assert!(parse(&["--bogus"]).is_err());
    assert!(parse(&["--listen"]).is_err());
    let twice = parse(&["--listen", "127.0.0.1:1", "--listen=127.0.0.1:2"]).unwrap();
    assert_eq!(twice.listen.port(), 2, "the last one counts");
    let vendors = parse(&["--data-transfer-vendor=a", "--data-transfer-vendor=b"]).unwrap();
    assert_eq!(
        vendors.data_transfer_vendors,
        ["a", "b"],
        "repeatable, all kept"
    );
    let args = parse(&["--redis", "redis://127.0.0.1:6379/", "--node-id=a"]).unwrap();
    assert_eq!(args.redis.as_deref(), Some("redis://127.0.0.1:6379/"));
    assert_eq!(args.node_id.as_deref(), Some("a"));
    assert!(parse(&["--redis", "redis://127.0.0.1/"]).is_err());
    assert!(parse(&["--node-id", "a"]).is_err());
    let args = parse(&["--redis=redis://r/", "--node-id=b", "--cluster-ttl-s", "3"]).unwrap();
    assert_eq!(args.cluster_ttl, Some(Duration::from_secs(3)));
    let cluster = cluster_config(&args).unwrap();
    assert_eq!(cluster.node_id, "b");
    assert_eq!(cluster.claim_ttl, Duration::from_secs(3));
    assert_eq!(cluster.address, format!("http://{DEFAULT_ADMIN}"));
    assert!(parse(&["--cluster-ttl-s", "3"]).is_err());
    assert!(parse(&["--redis=redis://r/", "--node-id=b", "--cluster-ttl-s=0"]).is_err());
}

#[test]
fn csms_flags() {
    let args = parse(&[]).unwrap();
    assert_eq!(args.boot_policy, BootPolicy::Accepted);
    assert_eq!(
        connection_config(&args).get_no_common_version(),
        NoCommonVersion::AcceptThenClose
    );
    let args = parse(&[
        "--boot-policy",
        "pending",
        "--no-common-version=reject-400",
        "--master-pass",
        "MASTER",
        "--data-transfer-vendor",
        "acme",
        "--data-transfer-vendor",
        "other",
        "--items-per-message=4",
        "--site-limit-amps=32",
    ])
    .unwrap();
    assert_eq!(args.boot_policy, BootPolicy::Pending);
    assert_eq!(
        connection_config(&args).get_no_common_version(),
        NoCommonVersion::Reject400
    );
    assert_eq!(args.data_transfer_vendors, ["acme", "other"]);
    let app = super::csms(&args).unwrap();
    assert_eq!(app.config().get_boot_policy(), BootPolicy::Pending);
    assert_eq!(app.config().get_boot_rate(), None);
    let rated = super::csms(&parse(&["--boot-rate", "200/50"]).unwrap()).unwrap();
    assert_eq!(rated.config().get_boot_rate(), Some(BootRate::new(200, 50)));
    assert_eq!(
        parse(&["--boot-rate", "10"]).unwrap().boot_rate,
        Some(BootRate::new(10, 10))
    );
    assert_eq!(args.accept_rate, None);
    assert_eq!(
        parse(&["--accept-rate", "500/100"]).unwrap().accept_rate,
        Some(AcceptRate::new(500, 100))
    );
    let rated = parse(&["--accept-rate", "20"]).unwrap();
    assert_eq!(rated.accept_rate, Some(AcceptRate::new(20, 20)));
    assert_eq!(
        super::server_config(&rated).unwrap().accept_rate,
        Some(AcceptRate::new(20, 20))
    );
    assert_eq!(app.config().get_items_per_message(), Some(4));
    assert_eq!(
        app.config().get_site_limit(),
        SiteLimit::new(Some(32.0), None).unwrap()
    );
    assert_eq!(app.tokens().unwrap().master_pass(), Some("MASTER"));
    assert_eq!(app.config().get_tariff(), None);
    assert_eq!(
        app.config().get_cost_updated_interval(),
        Duration::from_secs(60)
    );
    let args = parse(&[
        "--price-per-kwh",
        "0.25",
        "--currency=USD",
        "--cost-updated-interval",
        "0",
    ])
    .unwrap();
    let tariff = Tariff::parse("0.25", "0", "USD").unwrap();
    assert_eq!(args.tariff(), Some(tariff));
    let app = super::csms(&args).unwrap();
    assert_eq!(app.config().get_tariff(), Some(tariff));
    assert_eq!(app.config().get_cost_updated_interval(), Duration::ZERO);
    let args = parse(&["--price-per-hour", "1.5"]).unwrap();
    assert_eq!(
        args.tariff(),
        Some(Tariff::parse("0", "1.5", "EUR").unwrap())
    );
    for bad in [
        "--boot-policy maybe",
        "--boot-rate 0",
        "--boot-rate 10/0",
        "--boot-rate x/2",
        "--accept-rate 0",
        "--accept-rate 5/0",
        "--accept-rate 5/",
        "--accept-rate -1",
        "--no-common-version close",
        "--master-pass=",
        "--items-per-message 0",
        "--items-per-message x",
        "--price-per-kwh -1",
        "--price-per-kwh 0.12345",
        "--price-per-hour x",
        "--currency euro",
        "--cost-updated-interval -1",
        "--site-limit-amps 0",
        "--site-limit-watts -5",
        "--site-limit-watts inf",
    ] {
        assert!(parse_line(bad).is_err(), "{bad}");
    }
    let dir = temp_dir("tokens");
    let file = dir.join("tokens.txt");
    std::fs::write(&file, "TAG1 Accepted\nTAG2 Blocked G\n").unwrap();
    let args = parse(&["--tokens", file.to_str().unwrap()]).unwrap();
    assert_eq!(super::csms(&args).unwrap().tokens().unwrap().len(), 2);
    std::fs::write(&file, "TAG1 Sometimes\n").unwrap();
    let error = super::csms(&args).unwrap_err().to_string();
    assert!(error.contains("line 1"), "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tls_flags_go_together() {
    let args = parse(&[
        "--tls-cert",
        "c.pem",
        "--tls-key=k.pem",
        "--client-ca",
        "ca.pem",
    ])
    .unwrap();
    assert_eq!(args.tls_cert, [PathBuf::from("c.pem")]);
    assert_eq!(args.tls_key, [PathBuf::from("k.pem")]);
    assert_eq!(args.tls_backend, TlsBackend::Rustls);
    assert_eq!(args.client_ca.unwrap(), PathBuf::from("ca.pem"));
    for bad in [
        "--tls-cert c.pem",
        "--tls-key k.pem",
        "--client-ca ca.pem",
        "--ca-cert ca.pem",
        "--ca-key ca.key",
    ] {
        assert!(parse_line(bad).is_err(), "{bad}");
    }
    // Profiles per station: client certificates become optional.
    let mixed = parse(&[
        "--tls-cert",
        "c",
        "--tls-key",
        "k",
        "--client-ca",
        "ca",
        "--basic-auth",
        "p",
    ])
    .unwrap();
    assert!(!mixed.certificates_required());
    let alone = parse(&["--tls-cert", "c", "--tls-key", "k", "--client-ca", "ca"]);
    assert!(alone.unwrap().certificates_required());
    let args = parse(&["--tls-cert", "c", "--tls-key", "k", "--basic-auth", "p"]);
    assert!(args.is_ok(), "profile 2");
}

#[test]
fn tls_backend_and_certificates_per_backend() {
    let pair = |n: &str| {
        [
            "--tls-cert".to_owned(),
            format!("{n}.pem"),
            "--tls-key".to_owned(),
            format!("{n}.key"),
        ]
    };
    let with = |pairs: &[&str], more: &[&str]| {
        let mut args: Vec<String> = pairs.iter().flat_map(|n| pair(n)).collect();
        args.extend(more.iter().map(|s| (*s).to_owned()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        parse(&args)
    };
    let both = with(&["rsa", "ecdsa"], &["--tls-backend", "openssl"]).unwrap();
    assert_eq!(both.tls_backend, TlsBackend::OpenSsl);
    assert_eq!(
        both.tls_cert,
        [PathBuf::from("rsa.pem"), PathBuf::from("ecdsa.pem")]
    );
    assert_eq!(
        both.tls_key,
        [PathBuf::from("rsa.key"), PathBuf::from("ecdsa.key")]
    );
    assert!(with(&["rsa"], &["--tls-backend", "gnutls"]).is_err());
    // rustls takes one certificate, OpenSSL one per key type: refused before any file is
    // read.
    let error = tls_config(&with(&["rsa", "ecdsa"], &[]).unwrap()).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("--tls-backend rustls takes at most 1"),
        "{error}"
    );
    let three = with(&["a", "b", "c"], &["--tls-backend", "openssl"]).unwrap();
    let error = tls_config(&three).unwrap_err();
    if cfg!(feature = "openssl") {
        assert!(
            error
                .to_string()
                .contains("--tls-backend openssl takes at most 2"),
            "{error}"
        );
    } else {
        assert!(
            matches!(error, TlsError::BackendNotBuilt("openssl")),
            "{error}"
        );
    }
}

#[test]
fn ca_and_profile_files() {
    let dir = temp_dir("ca");
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    std::fs::write(dir.join("ca.pem"), params.self_signed(&key).unwrap().pem()).unwrap();
    std::fs::write(dir.join("ca.key"), key.serialize_pem()).unwrap();
    std::fs::write(dir.join("profiles"), "CP001 3\n").unwrap();
    let path = |file: &str| dir.join(file).to_str().unwrap().to_owned();
    let args = parse(&[
        "--ca-cert",
        &path("ca.pem"),
        "--ca-key",
        &path("ca.key"),
        "--security-profiles",
        &path("profiles"),
    ])
    .unwrap();
    let app = super::csms(&args).unwrap();
    let cp001 = ocpp_proto::ChargePointIdentity::new("CP001".into(), false).unwrap();
    assert_eq!(
        app.security_profile(&cp001).0,
        Some(ocpp_reference_csms::SecurityProfile::TlsClientCertificate)
    );
    let mut bad = args;
    bad.ca_key = Some(dir.join("missing.key"));
    let error = super::csms(&bad).unwrap_err().to_string();
    assert!(error.contains("missing.key: cannot read"), "{error}");
    std::fs::write(dir.join("profiles"), "CP001 three\n").unwrap();
    let error = super::csms(&bad).unwrap_err().to_string();
    assert!(error.contains("line 1"), "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn pem_errors_name_the_file() {
    let dir = temp_dir("pem");
    let empty = dir.join("empty.pem");
    std::fs::write(&empty, "not a certificate\n").unwrap();
    let args = |cert: &std::path::Path| Args {
        tls_cert: vec![cert.to_owned()],
        tls_key: vec![cert.to_owned()],
        ..parse(&[]).unwrap()
    };
    let error = tls_config(&args(&empty)).unwrap_err().to_string();
    assert!(
        error.contains("empty.pem: no PEM certificate found"),
        "{error}"
    );
    let error = tls_config(&args(&dir.join("missing.pem")))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("missing.pem: cannot read the PEM certificate"),
        "{error}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_admin_interface_beyond_loopback_needs_a_token() {
    let exposed = parse(&["--admin", "0.0.0.0:9001"]).unwrap();
    let error = admin_auth(&exposed).unwrap_err();
    assert!(matches!(error, StartError::AdminExposed(_)), "{error}");
    assert!(error.to_string().contains("--admin-token-file"), "{error}");
    assert!(server_config(&exposed).is_err());
    let exposed_v6 = parse(&["--admin", "[::]:9001"]).unwrap();
    assert!(admin_auth(&exposed_v6).is_err());
    // Loopback, or no admin interface at all: open is fine.
    assert!(admin_auth(&parse(&["--admin", "[::1]:9001"]).unwrap())
        .unwrap()
        .is_open());
    assert!(admin_auth(&parse(&["--admin", "off"]).unwrap())
        .unwrap()
        .is_open());
    // Tokens from the environment variable's text count.
    let with_env = Args {
        admin_tokens: Some(Secret("# ops\nan-operator-token-1\n".into())),
        ..parse(&["--admin", "0.0.0.0:9001"]).unwrap()
    };
    assert_eq!(admin_auth(&with_env).unwrap().len(), 1);
    for empty in ["", "  \n", "# none\n\n"] {
        let empty_env = Args {
            admin_tokens: Some(Secret(empty.into())),
            ..parse(&["--admin", "127.0.0.1:9001"]).unwrap()
        };
        let error = admin_auth(&empty_env).unwrap_err().to_string();
        assert!(error.contains(ADMIN_TOKENS_ENV), "{empty:?}: {error}");
    }
    let bad_env = Args {
        admin_tokens: Some(Secret("short\n".into())),
        ..parse(&[]).unwrap()
    };
    let error = admin_auth(&bad_env).unwrap_err().to_string();
    assert!(
        error.contains(ADMIN_TOKENS_ENV) && error.contains("line 1"),
        "{error}"
    );
    assert!(!format!("{with_env:?}").contains("an-operator-token-1"));
}

#[test]
fn admin_token_file_and_metrics_public() {
    let dir = temp_dir("admin");
    let file = dir.join("admin-tokens");
    std::fs::write(&file, "an-operator-token-1\nan-operator-token-2\n").unwrap();
    let path = file.to_str().unwrap();
    let args = parse(&["--admin=0.0.0.0:9001", "--admin-token-file", path]).unwrap();
    let auth = admin_auth(&args).unwrap();
    assert_eq!(auth.len(), 2);
    let metrics = ocpp_reference_csms::admin::AdminRequest::parse(b"GET /metrics HTTP/1.1\r\n\r\n")
        .unwrap()
        .unwrap()
        .0;
    assert!(auth.check(&metrics).is_err());
    let args = parse(&["--admin-token-file", path, "--metrics-public"]).unwrap();
    assert!(admin_auth(&args).unwrap().check(&metrics).is_ok());
    let args = parse(&["--admin-token-file", dir.join("none").to_str().unwrap()]).unwrap();
    let error = admin_auth(&args).unwrap_err().to_string();
    assert!(error.contains("cannot read the admin tokens"), "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_help_names_every_option() {
    let help = command("mio-server", "A CSMS on mio.", "event loops")
        .render_help()
        .to_string();
    for option in [
        "--listen",
        "--admin ",
        "--admin-token-file",
        "OCPP_ADMIN_TOKENS",
        "--metrics-public",
        "--database",
        "OCPP_DATABASE_URL",
        "--threads",
        "event loops",
        "--push-interval-ms",
        "--basic-auth",
        "--tls-cert",
        "--tls-key",
        "--client-ca",
        "--security-profiles",
        "--ca-cert",
        "--ca-key",
        "--deflate",
        "--tokens",
        "--v2g-root",
        "--mo-root",
        "--ocsp-responder",
        "--contract-certificate-service",
        "--master-pass",
        "--boot-policy",
        "--data-transfer-vendor",
        "--items-per-message",
        "--no-common-version",
        "--call-timeout-s",
        "--redis",
        "OCPP_REDIS_URL",
        "--node-id",
        "--cluster-ttl-s",
        "/chargepoints/ID/call/ACTION",
        "mio-server listening on",
    ] {
        assert!(help.contains(option), "{option} missing from\n{help}");
    }
}

#[test]
fn a_redis_password_is_not_logged() {
    assert_eq!(
        ocpp_reference_csms::store::without_password("redis://user:pw@10.0.0.1:6379/"),
        "redis://user:***@10.0.0.1:6379/"
    );
    assert_eq!(
        ocpp_reference_csms::store::without_password("redis+sentinel://:pw@a:1,b:2/svc"),
        "redis+sentinel://:***@a:1,b:2/svc"
    );
    assert_eq!(
        ocpp_reference_csms::store::without_password("redis://r:6379/"),
        "redis://r:6379/"
    );
}
