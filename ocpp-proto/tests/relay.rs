//! Relay mode (`ConnectionConfig::relay_text`): text messages pass through unparsed, both
//! ways, byte for byte, with permessage-deflate too; nothing is answered by the core; a
//! version chosen elsewhere is accepted with `accept_version`.

use std::sync::Arc;
use std::time::Instant;

use ocpp_proto::{
    ChargePointIdentity, ConnectTarget, Connection, ConnectionConfig, DeflatePolicy, Event,
    OcppVersion,
};

/// Moves every pending byte from `from` to `to`.
fn pump(from: &mut Connection, to: &mut Connection) {
    let n = from.pending_transmit_len();
    if n > 0 {
        let bytes = from.pending_transmit().to_vec();
        from.advance_transmit(n);
        to.handle_data(Instant::now(), &bytes);
    }
}

fn events(conn: &mut Connection) -> Vec<Event> {
    std::iter::from_fn(|| conn.poll_event()).collect()
}

/// A charge point and a CSMS, both in relay mode, connected on `version` (the CSMS's choice).
fn pair(client: ConnectionConfig, version: OcppVersion) -> (Connection, Connection) {
    let now = Instant::now();
    let server_config = Arc::new(ConnectionConfig::default().relay_text(true));
    let mut csms = Connection::accept_incoming(now, server_config);
    let identity = ChargePointIdentity::new("CP-R".into(), false).unwrap();
    let target = ConnectTarget::new("csms:80", "/ocpp", identity);
    let mut cp =
        Connection::connect(now, Arc::new(client.relay_text(true)), &target, [1; 16], 1).unwrap();
    pump(&mut cp, &mut csms);
    let Some(Event::UpgradeRequested(upgrade)) = csms.poll_event() else {
        panic!("no upgrade")
    };
    assert_eq!(upgrade.identity.as_str(), "CP-R");
    // Not offered: refused, nothing changes.
    assert!(csms.accept_version(now, OcppVersion::V2_1).is_err());
    csms.accept_version(now, version).unwrap();
    assert_eq!(events(&mut csms), vec![Event::Connected { version }]);
    pump(&mut csms, &mut cp);
    assert_eq!(events(&mut cp), vec![Event::Connected { version }]);
    (cp, csms)
}

fn check_texts_pass_unchanged(client: ConnectionConfig, deflate: bool) {
    let versions = vec![OcppVersion::V2_0_1, OcppVersion::V1_6];
    let (mut cp, mut csms) = pair(client.versions(versions), OcppVersion::V1_6);
    assert_eq!(cp.deflate().is_some(), deflate);
    assert_eq!(csms.deflate().is_some(), deflate);
    let texts = [
        "[2 , \"1\",\"BootNotification\" ,{ \"chargePointModel\":\"M\\u00e9\",\"chargePointVendor\":\"V\u{e9}\" } ]",
        "not OCPP-J at all",
        "[2,\"2\",\"NoSuchAction\",{}]",
    ];
    for text in texts {
        cp.send_text(Instant::now(), text).unwrap();
        pump(&mut cp, &mut csms);
        // Handed over as it came; no CALLERROR written for what the core would refuse.
        assert_eq!(events(&mut csms), vec![Event::Text(text.into())]);
        assert_eq!(csms.pending_transmit_len(), 0);
        csms.send_text(Instant::now(), text).unwrap();
        pump(&mut csms, &mut cp);
        assert_eq!(events(&mut cp), vec![Event::Text(text.into())]);
    }
}

#[test]
fn texts_pass_unchanged_both_ways() {
    check_texts_pass_unchanged(ConnectionConfig::default(), false);
}

#[test]
fn texts_pass_unchanged_with_permessage_deflate() {
    let offer = ConnectionConfig::default().get_deflate();
    let offer = match offer {
        DeflatePolicy::Accept(config) | DeflatePolicy::Offer(config) => {
            DeflatePolicy::Offer(config)
        }
        other => other,
    };
    check_texts_pass_unchanged(ConnectionConfig::default().deflate(offer), true);
}
