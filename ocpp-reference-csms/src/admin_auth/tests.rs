use super::*;

const TOKEN: &str = "0123456789abcdef-token";

fn request(method: &str, path: &str, authorization: Option<&str>) -> AdminRequest {
    AdminRequest {
        method: method.into(),
        path: path.into(),
        body: Vec::new(),
        authorization: authorization.map(AuthorizationHeader::new),
        caller_timeout: None,
    }
}

/// How `auth` refuses a GET with this `Authorization` header (`None`: without one).
fn refusal(auth: &AdminAuth, authorization: Option<&str>) -> HttpResponse {
    auth.check(&request("GET", "/chargepoints", authorization))
        .unwrap_err()
}

#[test]
fn open_lets_everyone_in() {
    let auth = AdminAuth::open();
    assert!(auth.is_open());
    assert!(auth.check(&request("POST", "/tokens/X", None)).is_ok());
}

#[test]
fn a_token_is_needed_and_must_be_one_of_ours() {
    let auth = AdminAuth::from_tokens([TOKEN, "another-token-of-16"]).unwrap();
    assert_eq!(auth.len(), 2);
    let missing = refusal(&auth, None);
    assert_eq!(missing.status, 401);
    assert_eq!(missing.www_authenticate, Some(CHALLENGE));
    for wrong in [
        "Bearer 0123456789abcdef-tokeN",
        "Bearer 0123456789abcdef-token-and-more",
        "Bearer 0123456789abcdef",
        "Basic MDEyMzQ1Njc4OWFiY2RlZi10b2tlbg==",
        "Bearer",
        "Bearer ",
        "Bearer0123456789abcdef-token",
        "",
    ] {
        assert_eq!(refusal(&auth, Some(wrong)).status, 401, "{wrong:?}");
    }
    for right in [
        "Bearer 0123456789abcdef-token",
        "bearer 0123456789abcdef-token",
        "BEARER   0123456789abcdef-token  ",
        "Bearer another-token-of-16",
    ] {
        assert!(
            auth.check(&request("GET", "/", Some(right))).is_ok(),
            "{right:?}"
        );
    }
    // A token that is not ours is told so.
    let wrong = refusal(&auth, Some("Bearer wrong-token-wrong-token"));
    assert_eq!(wrong.www_authenticate, Some(CHALLENGE_INVALID));
}

#[test]
fn metrics_may_be_public_and_nothing_else() {
    let auth = AdminAuth::from_tokens([TOKEN]).unwrap();
    assert!(auth.check(&request("GET", "/metrics", None)).is_err());
    let auth = auth.metrics_public(true);
    assert!(auth.check(&request("GET", "/metrics", None)).is_ok());
    assert!(auth.check(&request("POST", "/metrics", None)).is_err());
    assert!(auth.check(&request("GET", "/metrics/x", None)).is_err());
    assert!(auth.check(&request("GET", "/chargepoints", None)).is_err());
}

#[test]
fn token_files_and_their_errors() {
    let dir = std::env::temp_dir().join(format!("admin-auth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("tokens");
    std::fs::write(
        &file,
        format!("# operators\n\n  {TOKEN}  \nsecond-token-0123456\n"),
    )
    .unwrap();
    assert_eq!(AdminAuth::load(&file).unwrap().len(), 2);
    std::fs::write(&file, "# nothing\n\n").unwrap();
    let error = AdminAuth::load(&file).unwrap_err().to_string();
    assert!(error.contains("no admin token"), "{error}");
    std::fs::write(&file, format!("{TOKEN}\nshort\n")).unwrap();
    let error = AdminAuth::load(&file).unwrap_err().to_string();
    assert!(
        error.contains("line 2") && error.contains("shorter"),
        "{error}"
    );
    std::fs::write(&file, "token with spaces inside\n").unwrap();
    let error = AdminAuth::load(&file).unwrap_err().to_string();
    assert!(error.contains("visible ASCII"), "{error}");
    let error = AdminAuth::load(&dir.join("missing"))
        .unwrap_err()
        .to_string();
    assert!(error.contains("missing: cannot read"), "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn debug_shows_no_secret() {
    let auth = AdminAuth::from_tokens([TOKEN]).unwrap();
    let shown = format!("{auth:?} {:?}", request("GET", "/", Some(TOKEN)));
    assert!(!shown.contains(TOKEN), "{shown}");
    assert!(!shown.contains("0123456789"), "{shown}");
}

#[test]
fn the_guard_knows_its_names() {
    fn head(host: &str) -> FetchHeaders<'_> {
        FetchHeaders {
            host: Some(host.as_bytes()),
            ..FetchHeaders::default()
        }
    }
    let v6 = AdminGuard::new("[::1]:9001".parse().unwrap(), &[]);
    for ok in [
        "[::1]:9001",
        "[::1]",
        "localhost:9001",
        "127.0.0.1",
        "LOCALHOST.",
    ] {
        assert_eq!(v6.check(&head(ok)), Ok(()), "{ok}");
    }
    for refused in ["[::2]:9001", "[::1]:9002", "evil:9001", "localhost:x", ""] {
        assert_eq!(
            v6.check(&head(refused)),
            Err(AdminRefusal::ForeignHost),
            "{refused}"
        );
    }
    let wildcard = AdminGuard::new(
        "0.0.0.0:9001".parse().unwrap(),
        &["Ops.Example".into(), "10.0.0.5".into()],
    );
    assert!(!wildcard.names().iter().any(|n| n == "0.0.0.0"));
    for ok in ["ops.example", "10.0.0.5:9001", "localhost"] {
        assert_eq!(wildcard.check(&head(ok)), Ok(()), "{ok}");
    }
    let exposed = AdminGuard::new("10.0.0.5:9001".parse().unwrap(), &[]);
    assert_eq!(
        exposed.check(&head("localhost")),
        Err(AdminRefusal::ForeignHost)
    );
    assert_eq!(exposed.check(&head("10.0.0.5:9001")), Ok(()));
}

#[test]
fn the_guard_refuses_pages_and_bodies_that_are_not_json() {
    let guard = AdminGuard::new("127.0.0.1:9001".parse().unwrap(), &[]);
    let with = |origin: Option<&str>, site: Option<&str>, content_type: Option<&str>| {
        guard.check(&FetchHeaders {
            host: Some(b"127.0.0.1:9001"),
            origin: origin.map(str::as_bytes),
            sec_fetch_site: site.map(str::as_bytes),
            content_type: content_type.map(str::as_bytes),
            has_body: content_type.is_some(),
        })
    };
    assert_eq!(
        with(Some("http://127.0.0.1:9001"), Some("same-origin"), None),
        Ok(())
    );
    assert_eq!(with(None, Some("none"), None), Ok(()));
    for origin in [
        "null",
        "http://evil",
        "http://127.0.0.1:9001/x",
        "ftp://127.0.0.1:9001",
    ] {
        assert_eq!(
            with(Some(origin), None, None),
            Err(AdminRefusal::ForeignOrigin),
            "{origin}"
        );
    }
    for site in ["cross-site", "same-site", "other"] {
        assert_eq!(
            with(None, Some(site), None),
            Err(AdminRefusal::CrossSite),
            "{site}"
        );
    }
    assert_eq!(
        with(None, None, Some("Application/JSON; charset=utf-8")),
        Ok(())
    );
    for content_type in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data",
        "",
    ] {
        assert_eq!(
            with(None, None, Some(content_type)),
            Err(AdminRefusal::ContentType)
        );
    }
    let no_type = guard.check(&FetchHeaders {
        host: Some(b"localhost"),
        has_body: true,
        ..FetchHeaders::default()
    });
    assert_eq!(no_type, Err(AdminRefusal::ContentType));
    assert_eq!(
        guard.check(&FetchHeaders::default()),
        Err(AdminRefusal::NoHost)
    );
    assert_eq!(AdminRefusal::ContentType.response().status, 415);
}
