use super::*;

fn identity(name: &str) -> ChargePointIdentity {
    ChargePointIdentity::new(name.into(), false).unwrap()
}

#[test]
fn checks_user_and_password() {
    let credentials = Credentials::parse("CP1:secret-password-16\n\n# x\nCP2:a:b\n").unwrap();
    assert_eq!(credentials.len(), 2);
    let good = BasicCredentials::new(b"CP1", b"secret-password-16").unwrap();
    let colon = BasicCredentials::new(b"CP2", b"a:b").unwrap();
    let bad = BasicCredentials::new(b"CP1", b"wrong").unwrap();
    let other = BasicCredentials::new(b"CP2", b"secret-password-16").unwrap();
    assert_eq!(credentials.check(&identity("CP1"), Some(&good)), Ok(()));
    assert_eq!(credentials.check(&identity("CP2"), Some(&colon)), Ok(()));
    assert!(credentials.check(&identity("CP1"), Some(&bad)).is_err());
    assert!(credentials.check(&identity("CP1"), Some(&other)).is_err());
    assert!(credentials.check(&identity("CP1"), None).is_err());
    let unknown = BasicCredentials::new(b"CP9", b"x").unwrap();
    assert!(credentials.check(&identity("CP9"), Some(&unknown)).is_err());
}

#[test]
fn a_proposed_password_counts_once_accepted() {
    let mut credentials = Credentials::parse("CP1:old-password-0000\n").unwrap();
    let cp1 = identity("CP1");
    let old = BasicCredentials::new(b"CP1", b"old-password-0000").unwrap();
    let new = BasicCredentials::new(b"CP1", b"new-password-1111").unwrap();
    credentials.propose(&cp1, b"new-password-1111");
    assert_eq!(credentials.check(&cp1, Some(&old)), Ok(()));
    assert!(!credentials.settle(&cp1, false), "refused: nothing changes");
    assert!(credentials.check(&cp1, Some(&new)).is_err());
    credentials.propose(&cp1, b"new-password-1111");
    assert!(credentials.settle(&cp1, true));
    assert_eq!(credentials.check(&cp1, Some(&new)), Ok(()));
    assert!(credentials.check(&cp1, Some(&old)).is_err());
    assert!(!credentials.settle(&cp1, true), "settled once");
}

#[test]
fn debug_shows_no_password() {
    let credentials = Credentials::parse("CP1:secret-password-16\n").unwrap();
    let shown = format!("{credentials:?}");
    assert!(!shown.contains("secret"), "{shown}");
    let sent = BasicCredentials::new(b"CP1", b"secret-password-16").unwrap();
    assert!(!format!("{sent:?}").contains("secret"));
}

#[test]
fn rejects_malformed_lines() {
    assert!(matches!(
        Credentials::parse("CP1"),
        Err(CredentialsError::MissingColon(1))
    ));
    assert!(matches!(
        Credentials::parse("ok:x\n:pw"),
        Err(CredentialsError::EmptyIdentity(2))
    ));
}

fn ip(text: &str) -> Option<IpAddr> {
    Some(text.parse().unwrap())
}

/// Failed attempts counted with the default limits, from now on.
fn default_attempts() -> (AuthAttempts, Instant) {
    (AuthAttempts::new(AttemptLimits::default()), Instant::now())
}

#[test]
fn an_address_is_locked_after_five_failures_and_backs_off() {
    let (mut attempts, t0) = default_attempts();
    let attacker = ip("192.0.2.7");
    for n in 0..5 {
        assert_eq!(attempts.admit(t0, attacker, &format!("CP{n}")), Ok(()));
        attempts.failed(t0, attacker, &format!("CP{n}"));
    }
    // Locked for 10 s, whatever identity it tries.
    assert_eq!(
        attempts.admit(t0, attacker, "CP9"),
        Err(Duration::from_secs(10))
    );
    let t1 = t0 + Duration::from_secs(4);
    assert_eq!(
        attempts.admit(t1, attacker, "CP9"),
        Err(Duration::from_secs(6))
    );
    // Over: one more failure locks again, twice as long, then 40 s...
    let t2 = t0 + Duration::from_secs(10);
    assert_eq!(attempts.admit(t2, attacker, "CP9"), Ok(()));
    attempts.failed(t2, attacker, "CP9");
    assert_eq!(
        attempts.admit(t2, attacker, "CP9"),
        Err(Duration::from_secs(20))
    );
    let mut t = t2;
    let mut wait = 20;
    let mut delays = Vec::new();
    for _ in 0..6 {
        t += Duration::from_secs(wait);
        assert_eq!(attempts.admit(t, attacker, "CP9"), Ok(()));
        attempts.failed(t, attacker, "CP9");
        wait = attempts.admit(t, attacker, "CP9").unwrap_err().as_secs();
        delays.push(wait);
    }
    // ... capped at 5 minutes.
    assert_eq!(delays, [40, 80, 160, 300, 300, 300]);
    // Quiet long enough: forgotten, five failures again before a lockout.
    let later = t + Duration::from_secs(300 + 601);
    attempts.failed(later, attacker, "CP9");
    assert_eq!(attempts.admit(later, attacker, "CP9"), Ok(()));
}

#[test]
fn failures_outside_the_window_do_not_add_up() {
    let (mut attempts, t0) = default_attempts();
    let address = ip("2001:db8::1");
    for n in 0..20u64 {
        let now = t0 + Duration::from_secs(n * 15); // 4 per minute
        assert_eq!(attempts.admit(now, address, "CP1").ok(), Some(()), "{n}");
        attempts.failed(now, address, "CP1");
        if n % 4 == 3 {
            // The next one is in a new window.
            let next = t0 + Duration::from_secs((n + 1) * 15);
            assert!(attempts.admit(next, address, "CP1").is_ok());
        }
    }
}

#[test]
fn a_locked_identity_still_admits_an_address_that_has_not_failed() {
    let (mut attempts, now) = default_attempts();
    // A botnet: five addresses, one wrong password each.
    for n in 1..=5 {
        let bot = ip(&format!("198.51.100.{n}"));
        assert!(attempts.admit(now, bot, "CP1").is_ok());
        attempts.failed(now, bot, "CP1");
    }
    // The identity is locked: the bots (who failed) get 429 for it...
    assert!(attempts.admit(now, ip("198.51.100.1"), "CP1").is_err());
    // ... but not for another identity (each bot failed once only).
    assert!(attempts.admit(now, ip("198.51.100.1"), "CP2").is_ok());
    // A fresh bot gets one guess, then is refused for CP1.
    let fresh = ip("198.51.100.77");
    assert!(attempts.admit(now, fresh, "CP1").is_ok());
    attempts.failed(now, fresh, "CP1");
    assert!(attempts.admit(now, fresh, "CP1").is_err());
    // The station itself, from an address that never failed, is checked.
    assert!(attempts.admit(now, ip("203.0.113.9"), "CP1").is_ok());
    // An address we cannot tell is checked too.
    assert!(attempts.admit(now, None, "CP1").is_ok());
}

#[test]
fn ipv6_counts_by_slash_64() {
    let (mut attempts, now) = default_attempts();
    for n in 1..=5 {
        attempts.failed(now, ip(&format!("2001:db8:1:2::{n}")), &format!("X{n}"));
    }
    assert!(attempts.admit(now, ip("2001:db8:1:2::ffff"), "Y").is_err());
    assert!(attempts.admit(now, ip("2001:db8:1:3::1"), "Y").is_ok());
    assert_eq!(attempts.len().0, 1);
}

#[test]
fn memory_is_bounded() {
    let limits = AttemptLimits {
        capacity: 64,
        ..AttemptLimits::default()
    };
    let mut attempts = AuthAttempts::new(limits);
    let t0 = Instant::now();
    for n in 0..10_000u32 {
        let now = t0 + Duration::from_millis(u64::from(n));
        let address = IpAddr::from((n + 1000).to_be_bytes());
        attempts.failed(now, Some(address), &format!("ID{n}"));
        let (addresses, identities) = attempts.len();
        assert!(
            addresses <= 64 && identities <= 64,
            "{addresses} {identities}"
        );
    }
}
