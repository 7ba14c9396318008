//! The OCSP client against `openssl ocsp`, a real and independent responder.

use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use super::{CertificateStatus, HashAlgorithm, OcspClient, OcspError, OcspRequestData, Trust};

#[path = "../../../examples/tests/common/ocsp_responder.rs"]
pub(crate) mod responder;

use responder::{openssl_available, Issued, Pki};

/// A fresh PKI in a directory named after `name`, or `None` where the `openssl` command is
/// missing (the test then checks nothing).
fn openssl_pki(name: &str) -> Option<Pki> {
    openssl_available().then(|| Pki::new(name))
}

fn data_for(pki: &Pki, leaf: &Issued) -> OcspRequestData {
    OcspRequestData::for_certificate(&leaf.der(), &pki.sub_ca.der(), HashAlgorithm::Sha256)
        .expect("request data")
}

fn check(pki: &Pki, leaf: &Issued, roots: &[Vec<u8>]) -> Result<super::OcspOutcome, OcspError> {
    check_data(&data_for(pki, leaf), roots, &[])
}

/// Asks `data`'s responder now, trusting `roots` and the `known` issuers.
fn check_data(
    data: &OcspRequestData,
    roots: &[Vec<u8>],
    known: &[Vec<u8>],
) -> Result<super::OcspOutcome, OcspError> {
    OcspClient::default().check(data, Trust { roots, known }, SystemTime::now())
}

/// What `openssl ocsp -req_text` reads in `data`'s request, written to `path` (it must read
/// it).
fn openssl_request_text(path: &Path, data: &OcspRequestData) -> String {
    std::fs::write(path, data.request_der().expect("encode")).expect("write");
    let output = Command::new("openssl")
        .args(["ocsp", "-req_text", "-reqin"])
        .arg(path)
        .output()
        .expect("openssl");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{text}");
    text
}

#[test]
fn the_request_is_an_rfc_6960_request_openssl_reads() {
    let Some(mut pki) = openssl_pki("reqin") else {
        return;
    };
    let leaf = pki.issue("leaf", "DE-ABC-C12345-6");
    let data = data_for(&pki, &leaf);
    assert_eq!(data.responder_url, pki.responder_url, "from the AIA");
    let path = pki.dir.join("request.der");
    let text = openssl_request_text(&path, &data);
    assert!(text.contains("Hash Algorithm: sha256"), "{text}");
    assert!(
        text.contains(&format!("Serial Number: {}", leaf.serial)),
        "{text}"
    );
    let (name_hash, key_hash, _) = data.hex_fields();
    assert!(
        text.contains(&format!("Issuer Name Hash: {name_hash}")),
        "{text}"
    );
    assert!(
        text.contains(&format!("Issuer Key Hash: {key_hash}")),
        "{text}"
    );

    // A serial with its high bit set, as a station may send it (with or without the DER
    // sign byte): a positive INTEGER either way.
    for serial in ["DEADBEEF", "00deadbeef"] {
        let data = OcspRequestData::from_ocpp("SHA384", &name_hash, &key_hash, serial, "")
            .expect("fields");
        let text = openssl_request_text(&path, &data);
        assert!(text.contains("Hash Algorithm: sha384"), "{text}");
        assert!(text.contains("Serial Number: DEADBEEF"), "{text}");
    }
}

#[test]
fn good_revoked_and_unknown_from_the_responder() {
    let Some(mut pki) = openssl_pki("status") else {
        return;
    };
    let good = pki.issue("good", "DE-ABC-C00000-1");
    let revoked = pki.issue("revoked", "DE-ABC-C00000-2");
    let unknown = pki.issue("unknown", "DE-ABC-C00000-3");
    pki.revoke(&revoked);
    pki.forget(&unknown);
    let _responder = pki.responder(None);
    let roots = [pki.root.der()];

    let outcome = check(&pki, &good, &roots).expect("good");
    assert_eq!(outcome.status, CertificateStatus::Good);
    assert!(outcome.this_update <= SystemTime::now() + Duration::from_secs(5));
    assert!(outcome
        .next_update
        .is_some_and(|next| next > SystemTime::now()));
    assert!(!outcome.response.is_empty());

    let outcome = check(&pki, &revoked, &roots).expect("revoked");
    assert!(matches!(outcome.status, CertificateStatus::Revoked(_)));
    let outcome = check(&pki, &unknown, &roots).expect("unknown");
    assert_eq!(outcome.status, CertificateStatus::Unknown);

    // From the OCPP fields (hex), as a station sends them.
    let (name, key, serial) = data_for(&pki, &good).hex_fields();
    let data = OcspRequestData::from_ocpp("SHA256", &name, &key, &serial, &pki.responder_url)
        .expect("ocpp fields");
    let outcome = check_data(&data, &roots, &[]).expect("good from hex fields");
    assert_eq!(outcome.status, CertificateStatus::Good);
}

#[test]
fn a_response_signed_by_a_stranger_is_refused() {
    let Some(mut pki) = openssl_pki("stranger") else {
        return;
    };
    let leaf = pki.issue("leaf", "DE-ABC-C00000-4");
    let stranger = pki.stranger();
    let _responder = pki.responder(Some(&stranger));
    // The issuer is known (the sub-CA), but it did not sign and delegated to nobody.
    let known = [pki.sub_ca.der()];
    let error = check_data(&data_for(&pki, &leaf), &[], &known).expect_err("stranger's signature");
    assert!(matches!(error, OcspError::Signature(_)), "{error}");
}

#[test]
fn an_issuer_outside_the_roots_is_untrusted() {
    let Some(mut pki) = openssl_pki("untrusted") else {
        return;
    };
    let leaf = pki.issue("leaf", "DE-ABC-C00000-5");
    let _responder = pki.responder(None);
    let other_root = [pki.stranger().der()];
    let error = check(&pki, &leaf, &other_root).expect_err("other root");
    assert!(matches!(error, OcspError::Untrusted), "{error}");
}

#[test]
fn an_unreachable_responder_is_an_http_error() {
    let port = responder::free_port();
    let data = OcspRequestData::from_ocpp(
        "SHA256",
        "00",
        "00",
        "01",
        &format!("http://127.0.0.1:{port}/"),
    )
    .expect("data");
    let error = OcspClient::default()
        .check(&data, Trust::default(), SystemTime::now())
        .expect_err("nobody listens");
    assert!(matches!(error, OcspError::Http { .. }), "{error}");
}

#[test]
fn a_silent_responder_times_out() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/", listener.local_addr().expect("addr"));
    // Accepts, reads nothing, never answers.
    let _silent = std::thread::spawn(move || {
        let held: Vec<_> = listener.incoming().take(1).collect();
        std::thread::sleep(Duration::from_secs(5));
        drop(held);
    });
    let data = OcspRequestData::from_ocpp("SHA256", "00", "00", "01", &url).expect("data");
    let started = Instant::now();
    let error = OcspClient::new(None, Duration::from_millis(500))
        .check(&data, Trust::default(), SystemTime::now())
        .expect_err("no answer");
    assert!(matches!(error, OcspError::Http { .. }), "{error}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn the_ocpp_fields_are_checked() {
    assert!(matches!(
        OcspRequestData::from_ocpp("MD5", "00", "00", "01", ""),
        Err(OcspError::HashAlgorithm(_))
    ));
    assert!(matches!(
        OcspRequestData::from_ocpp("SHA256", "00", "00", "xyz", ""),
        Err(OcspError::NotHex {
            field: "serialNumber",
            ..
        })
    ));
    let data = OcspRequestData::from_ocpp("SHA384", "0a0B", "ff", "ABC", "").expect("hex");
    assert_eq!(data.issuer_name_hash, vec![0x0a, 0x0b]);
    assert_eq!(data.serial_number, vec![0x0a, 0xbc]);
    assert!(matches!(
        OcspClient::default().fetch(&data),
        Err(OcspError::NoResponder)
    ));
}
