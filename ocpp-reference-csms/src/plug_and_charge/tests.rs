//! Roots files and the contract chain checks that come before OCSP.

use std::time::{Duration, SystemTime};

use super::{ContractStatus, PlugAndCharge};

use crate::ocsp::tests::responder;

#[test]
fn roots_files_hold_one_or_more_certificates() {
    if !responder::openssl_available() {
        return;
    }
    let pki = responder::Pki::new("roots");
    let both = pki.dir.join("both.pem");
    let text = format!("{}{}", pki.root.pem_text(), pki.sub_ca.pem_text());
    std::fs::write(&both, text).expect("write");
    assert_eq!(PlugAndCharge::load_roots(&both).expect("roots").len(), 2);
    let empty = pki.dir.join("empty.pem");
    std::fs::write(&empty, "no certificate here\n").expect("write");
    assert!(PlugAndCharge::load_roots(&empty).is_err());
    assert!(PlugAndCharge::load_roots(&pki.dir.join("missing.pem")).is_err());
}

#[test]
fn a_chain_is_checked_before_any_ocsp_request() {
    if !responder::openssl_available() {
        return;
    }
    let mut pki = responder::Pki::new("chain");
    let leaf = pki.issue("leaf", "DE-ABC-C00000-7");
    let settings = PlugAndCharge::default().mo_roots(vec![pki.root.der()]);
    let chain = format!("{}{}", leaf.pem_text(), pki.sub_ca.pem_text());
    // No responder runs: these are decided before OCSP.
    let later = SystemTime::now() + Duration::from_secs(60 * 86_400);
    assert_eq!(
        settings.check_contract(Some(&chain), &[], later),
        ContractStatus::CertificateExpired
    );
    let reversed = format!("{}{}", pki.sub_ca.pem_text(), leaf.pem_text());
    assert_eq!(
        settings.check_contract(Some(&reversed), &[], SystemTime::now()),
        ContractStatus::CertChainError
    );
    assert_eq!(
        settings.check_contract(Some("not PEM"), &[], SystemTime::now()),
        ContractStatus::CertChainError
    );
    assert_eq!(
        settings.check_contract(None, &[], SystemTime::now()),
        ContractStatus::NoCertificateAvailable
    );
    // A valid chain with its responder down: no status to be had.
    assert_eq!(
        settings.check_contract(Some(&chain), &[], SystemTime::now()),
        ContractStatus::NoCertificateAvailable
    );
}
