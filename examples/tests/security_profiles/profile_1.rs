//! Profile 1: Basic auth before the upgrade.

use super::*;

#[test]
fn profile_1_basic_auth_before_the_upgrade() {
    let pki = Pki::new("p1");
    let server = start(MIO, &["--basic-auth".into(), passwords(&pki)]);

    // Missing header, wrong password, another identity's valid credentials: 401 with the
    // Basic challenge, before any upgrade.
    for (what, authorization) in [
        ("missing", None),
        ("bad password", Some(basic("CP001", "0123456789abcdeX"))),
        (
            "identity mismatch",
            Some(basic("CP002", "fedcba9876543210")),
        ),
        ("unknown identity", Some(basic("CP009", "0123456789abcdef"))),
    ] {
        let head = raw_upgrade(server.ocpp, "CP001", authorization.as_deref());
        assert!(head.starts_with("HTTP/1.1 401 "), "{what}: {head}");
        assert!(
            head.contains("\r\nWWW-Authenticate: Basic realm=\"OCPP\"\r\n"),
            "{what}: {head}"
        );
        assert!(!head.contains("Sec-WebSocket-Accept"), "{what}: {head}");
    }
    // The same through the Sans-IO charge point.
    let refused = ChargePoint::connect(server.ocpp, "CP001", V16, Some(b"wrong-password-1")).err();
    assert!(matches!(
        refused,
        Some(CloseReason::UpgradeRefused {
            status: Some(401),
            ..
        })
    ));
    assert_eq!(rejected_upgrades(&server), 5);

    let head = raw_upgrade(
        server.ocpp,
        "CP001",
        Some(&basic("CP001", "0123456789abcdef")),
    );
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    let mut good =
        ChargePoint::connect(server.ocpp, "CP002", V16, Some(b"fedcba9876543210")).unwrap();
    boots(&mut good);
    good.close();
}
