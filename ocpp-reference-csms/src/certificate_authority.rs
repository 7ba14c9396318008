//! A small certificate authority for SignCertificate -> CertificateSigned (OCPP 2.0.1 and 2.1
//! A02/A03, the OCPP 1.6 security whitepaper §3): the CSMS signs a charging station's PKCS#10
//! certificate signing request with the CA of `--ca-cert` / `--ca-key`.
//!
//! A CSR is input from the network: every step below refuses rather than panics, and the
//! refusal ([`CsrRefusal`]) says which check failed (for the log and the admin API; the station
//! only sees `Rejected`). A CSR is signed when
//!
//! 1. it is one PEM `CERTIFICATE REQUEST` block holding a DER PKCS#10 request that parses
//!    (nothing after it);
//! 2. its signature verifies with the public key it carries (RSA, ECDSA P-256/P-384, Ed25519):
//!    the station holds the private key (proof of possession, RFC 2986 §3);
//! 3. its subject has exactly one Common Name, equal to the station's identity (the URL's last
//!    segment): OCPP 2.0.1 A00 names the station in the certificate's CN, and the TLS listener
//!    checks exactly that at a security profile 3 connection; a station may not ask for
//!    another station's certificate;
//! 4. it does not ask to be a CA (basicConstraints `cA`): a station certificate never signs
//!    others.
//!
//! Whatever else the CSR asks for (other extensions, SANs, key usages) is ignored: the CA
//! decides what the certificate says. The certificate: subject CN (and O, if the CSR has one),
//! a random 127-bit serial number, valid from five minutes ago for [`CERTIFICATE_VALIDITY`], not a CA, key
//! usage digitalSignature, extended key usage clientAuth (a `ChargingStationCertificate`: the
//! station is the TLS client of security profile 3) or serverAuth (a `V2GCertificate`: the
//! station is the TLS server of ISO 15118). This example has one CA for both; a real V2G PKI
//! has its own roots. The chain sent in CertificateSigned is the certificate, then the CA's
//! certificate(s) as in `--ca-cert` (leaf first, OCPP 2.0.1 CertificateSignedRequest).

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rcgen::{
    CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SerialNumber, SubjectPublicKeyInfo,
};
use ring::rand::{SecureRandom, SystemRandom};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, CertificateSigningRequestDer};
use x509_parser::certification_request::X509CertificationRequest;
use x509_parser::extensions::ParsedExtension;
use x509_parser::prelude::FromDer;

/// How long a certificate the CA signs is valid.
pub const CERTIFICATE_VALIDITY: Duration = Duration::from_secs(365 * 24 * 3600);

/// The longest `certificateChain` OCPP allows (1.6 security whitepaper, 2.0.1 and 2.1
/// CertificateSignedRequest: 10000 characters).
const MAX_CHAIN: usize = 10_000;

/// What the station asked for: OCPP 2.x `certificateType` (1.6 knows only the first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CertificateUse {
    /// `ChargingStationCertificate`: the station's TLS client certificate (profile 3).
    #[default]
    ChargingStation,
    /// `V2GCertificate`: the station's ISO 15118 TLS server certificate.
    V2G,
}

impl CertificateUse {
    /// The OCPP 2.x wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            CertificateUse::ChargingStation => "ChargingStationCertificate",
            CertificateUse::V2G => "V2GCertificate",
        }
    }
}

/// A signed certificate and what to send and show of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedCertificate {
    /// The PEM chain for CertificateSigned: the new certificate first, then the CA's.
    pub chain: String,
    /// The serial number, hexadecimal.
    pub serial: String,
    /// The end of validity, as seconds since the Unix epoch.
    pub not_after: i64,
}

/// Why a CSR was not signed (the station is answered `Rejected`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CsrRefusal {
    /// Not a PEM `CERTIFICATE REQUEST`.
    NotPem,
    /// The DER does not parse as a PKCS#10 request (or has bytes after it).
    Malformed,
    /// The signature does not verify with the request's own key (or uses an algorithm we
    /// cannot verify).
    BadSignature,
    /// The subject has no CN, or more than one.
    NoCommonName,
    /// The subject CN is not the station's identity.
    WrongCommonName,
    /// The request asks for a CA certificate.
    AsksForCa,
    /// The public key's algorithm is not one the CA can put in a certificate.
    UnsupportedKey,
    /// The chain would exceed the 10000 characters OCPP allows.
    ChainTooLong,
    /// Signing failed (a CA problem, not the station's).
    Signing(String),
}

impl fmt::Display for CsrRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CsrRefusal::NotPem => f.write_str("the csr is not a PEM CERTIFICATE REQUEST"),
            CsrRefusal::Malformed => f.write_str("the CSR does not parse as PKCS#10"),
            CsrRefusal::BadSignature => f.write_str("the CSR's signature does not verify"),
            CsrRefusal::NoCommonName => f.write_str("the CSR's subject has no single CN"),
            CsrRefusal::WrongCommonName => {
                f.write_str("the CSR's subject CN is not the station's identity")
            }
            CsrRefusal::AsksForCa => f.write_str("the CSR asks for a CA certificate"),
            CsrRefusal::UnsupportedKey => f.write_str("the CSR's key algorithm is not supported"),
            CsrRefusal::ChainTooLong => f.write_str("the chain would exceed 10000 characters"),
            CsrRefusal::Signing(e) => write!(f, "signing failed: {e}"),
        }
    }
}

impl std::error::Error for CsrRefusal {}

/// Why `--ca-cert` / `--ca-key` could not be used.
#[derive(Debug)]
#[non_exhaustive]
pub enum CaError {
    /// A file could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The certificate or the key is not usable (with the parser's words).
    Invalid {
        /// The file.
        path: PathBuf,
        /// Why.
        error: String,
    },
    /// The key is not the certificate's.
    KeyMismatch,
}

impl fmt::Display for CaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaError::Io { path, error } => write!(f, "{}: cannot read: {error}", path.display()),
            CaError::Invalid { path, error } => {
                write!(f, "{}: not a usable CA file: {error}", path.display())
            }
            CaError::KeyMismatch => f.write_str("--ca-key is not the key of --ca-cert"),
        }
    }
}

impl std::error::Error for CaError {}

/// The CSMS's certificate authority: a CA certificate and its private key.
///
/// ```
/// use ocpp_reference_csms::{CertificateAuthority, CertificateUse, CsrRefusal};
/// use ocpp_proto::ChargePointIdentity;
/// use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
///
/// // A CA (normally the files of --ca-cert and --ca-key).
/// let ca_key = KeyPair::generate().unwrap();
/// let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
/// ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
/// ca.distinguished_name.push(DnType::CommonName, "CSMS CA");
/// let ca_pem = ca.self_signed(&ca_key).unwrap().pem();
/// let authority = CertificateAuthority::from_pem(&ca_pem, &ca_key.serialize_pem()).unwrap();
///
/// // The station's CSR: its own key, its identity as CN.
/// let key = KeyPair::generate().unwrap();
/// let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
/// params.distinguished_name.push(DnType::CommonName, "CP001");
/// let csr = params.serialize_request(&key).unwrap().pem().unwrap();
///
/// let cp001 = ChargePointIdentity::new("CP001".into(), false).unwrap();
/// let signed = authority.sign(&csr, &cp001, CertificateUse::ChargingStation).unwrap();
/// assert!(signed.chain.ends_with(ca_pem.trim_end()));
/// let cp002 = ChargePointIdentity::new("CP002".into(), false).unwrap();
/// assert_eq!(
///     authority.sign(&csr, &cp002, CertificateUse::ChargingStation),
///     Err(CsrRefusal::WrongCommonName)
/// );
/// assert_eq!(
///     authority.sign("junk", &cp001, CertificateUse::ChargingStation),
///     Err(CsrRefusal::NotPem)
/// );
/// ```
pub struct CertificateAuthority {
    issuer: Issuer<'static, KeyPair>,
    /// The CA certificate(s) as PEM, appended to every chain.
    ca_pem: String,
    /// The CA certificates as DER (the TLS listener trusts them for client certificates).
    ca_certificates: Vec<CertificateDer<'static>>,
    random: SystemRandom,
}

impl fmt::Debug for CertificateAuthority {
    /// Shows the CA's certificates' count, never its key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CertificateAuthority")
            .field("ca_certificates", &self.ca_certificates.len())
            .finish_non_exhaustive()
    }
}

impl CertificateAuthority {
    /// Reads `--ca-cert` (PEM, the signing CA first, then its own issuers if any) and
    /// `--ca-key` (PEM, PKCS#8).
    pub fn load(cert: &Path, key: &Path) -> Result<Self, CaError> {
        let read = |path: &Path| {
            std::fs::read_to_string(path).map_err(|error| CaError::Io {
                path: path.to_owned(),
                error,
            })
        };
        let (cert_pem, key_pem) = (read(cert)?, read(key)?);
        Self::from_pem(&cert_pem, &key_pem).map_err(|error| match error {
            CaError::Invalid { path, error } if path.as_os_str() == "key" => CaError::Invalid {
                path: key.to_owned(),
                error,
            },
            CaError::Invalid { error, .. } => CaError::Invalid {
                path: cert.to_owned(),
                error,
            },
            other => other,
        })
    }

    /// The CA from PEM text: its certificate(s) and its private key. Errors name the file as
    /// `cert` or `key`.
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Self, CaError> {
        let invalid = |which: &str, error: String| CaError::Invalid {
            path: PathBuf::from(which),
            error,
        };
        let ca_certificates = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| invalid("cert", e.to_string()))?;
        let Some(first) = ca_certificates.first() else {
            return Err(invalid("cert", "no PEM certificate found".into()));
        };
        let key = KeyPair::from_pem(key_pem).map_err(|e| invalid("key", e.to_string()))?;
        let (_, parsed) = x509_parser::parse_x509_certificate(first.as_ref())
            .map_err(|e| invalid("cert", e.to_string()))?;
        if *parsed.public_key().subject_public_key.data != *key.public_key_raw() {
            return Err(CaError::KeyMismatch);
        }
        let issuer =
            Issuer::from_ca_cert_der(first, key).map_err(|e| invalid("cert", e.to_string()))?;
        let mut ca_pem = String::new();
        for certificate in &ca_certificates {
            ca_pem.push_str(&pem_certificate(certificate.as_ref()));
        }
        Ok(CertificateAuthority {
            issuer,
            ca_pem,
            ca_certificates,
            random: SystemRandom::new(),
        })
    }

    /// The CA's certificates, for the TLS listener's client certificate verifier.
    pub fn certificates(&self) -> &[CertificateDer<'static>] {
        &self.ca_certificates
    }

    /// Checks the CSR `csr` (PEM) of the station `identity` and signs it (see the module
    /// docs for the checks and what the certificate says).
    pub fn sign(
        &self,
        csr: &str,
        identity: &ocpp_proto::ChargePointIdentity,
        usage: CertificateUse,
    ) -> Result<SignedCertificate, CsrRefusal> {
        let der = CertificateSigningRequestDer::from_pem_slice(csr.as_bytes())
            .map_err(|_| CsrRefusal::NotPem)?;
        let (rest, request) =
            X509CertificationRequest::from_der(der.as_ref()).map_err(|_| CsrRefusal::Malformed)?;
        if !rest.is_empty() {
            return Err(CsrRefusal::Malformed);
        }
        request
            .verify_signature()
            .map_err(|_| CsrRefusal::BadSignature)?;
        let info = &request.certification_request_info;
        let mut names = info.subject.iter_common_name();
        let cn = match (names.next(), names.next()) {
            (Some(cn), None) => cn.as_str().map_err(|_| CsrRefusal::NoCommonName)?,
            _ => return Err(CsrRefusal::NoCommonName),
        };
        if cn != identity.as_str() {
            return Err(CsrRefusal::WrongCommonName);
        }
        let asks_for_ca = request
            .requested_extensions()
            .is_some_and(|mut extensions| {
                extensions.any(|e| matches!(e, ParsedExtension::BasicConstraints(bc) if bc.ca))
            });
        if asks_for_ca {
            return Err(CsrRefusal::AsksForCa);
        }
        let organization = info
            .subject
            .iter_organization()
            .next()
            .and_then(|o| o.as_str().ok())
            .map(str::to_owned);
        let public_key = SubjectPublicKeyInfo::from_der(info.subject_pki.raw)
            .map_err(|_| CsrRefusal::UnsupportedKey)?;

        let mut params = CertificateParams::default();
        let mut name = DistinguishedName::new();
        name.push(DnType::CommonName, cn);
        if let Some(organization) = organization {
            name.push(DnType::OrganizationName, organization);
        }
        params.distinguished_name = name;
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![match usage {
            CertificateUse::ChargingStation => ExtendedKeyUsagePurpose::ClientAuth,
            CertificateUse::V2G => ExtendedKeyUsagePurpose::ServerAuth,
        }];
        params.use_authority_key_identifier_extension = true;
        let mut serial = [0u8; 16];
        self.random
            .fill(&mut serial)
            .map_err(|_| CsrRefusal::Signing("no randomness".into()))?;
        serial[0] &= 0x7f; // positive (RFC 5280 §4.1.2.2)
        serial[0] |= 0x01; // and 16 bytes long
        params.serial_number = Some(SerialNumber::from_slice(&serial));
        let now = time::OffsetDateTime::now_utc();
        params.not_before = now - time::Duration::minutes(5);
        params.not_after = now + CERTIFICATE_VALIDITY;
        let certificate = params
            .signed_by(&public_key, &self.issuer)
            .map_err(|e| CsrRefusal::Signing(e.to_string()))?;
        let chain = format!(
            "{}{}",
            pem_certificate(certificate.der()),
            self.ca_pem.trim_end()
        );
        if chain.len() > MAX_CHAIN {
            return Err(CsrRefusal::ChainTooLong);
        }
        Ok(SignedCertificate {
            chain,
            serial: serial.iter().map(|b| format!("{b:02x}")).collect(),
            not_after: params.not_after.unix_timestamp(),
        })
    }
}

/// One DER certificate as a PEM block (RFC 7468: base64 in lines of 64, then a newline).
fn pem_certificate(der: &[u8]) -> String {
    use base64::Engine as _;
    let text = base64::engine::general_purpose::STANDARD.encode(der);
    let mut pem = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in text.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(line).unwrap_or_default());
        pem.push('\n');
    }
    pem.push_str("-----END CERTIFICATE-----\n");
    pem
}

#[cfg(test)]
mod tests {
    use super::*;
    use ocpp_proto::ChargePointIdentity;
    use rcgen::BasicConstraints;

    fn authority() -> (CertificateAuthority, String) {
        let key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name.push(DnType::CommonName, "unit CA");
        let pem = ca.self_signed(&key).unwrap().pem();
        (
            CertificateAuthority::from_pem(&pem, &key.serialize_pem()).unwrap(),
            pem,
        )
    }

    fn csr(cn: Option<&str>, ca: bool) -> String {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = DistinguishedName::new();
        if let Some(cn) = cn {
            params.distinguished_name.push(DnType::CommonName, cn);
        }
        if ca {
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        }
        params.serialize_request(&key).unwrap().pem().unwrap()
    }

    fn cp(name: &str) -> ChargePointIdentity {
        ChargePointIdentity::new(name.into(), false).unwrap()
    }

    #[test]
    fn signs_a_good_csr_and_the_leaf_verifies_against_the_ca() {
        let (authority, ca_pem) = authority();
        let signed = authority
            .sign(&csr(Some("CP1"), false), &cp("CP1"), CertificateUse::V2G)
            .unwrap();
        let chain: Vec<_> = CertificateDer::pem_slice_iter(signed.chain.as_bytes())
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(chain.len(), 2);
        let ca_der = CertificateDer::from_pem_slice(ca_pem.as_bytes()).unwrap();
        assert_eq!(chain[1], ca_der);
        let (_, leaf) = x509_parser::parse_x509_certificate(&chain[0]).unwrap();
        let (_, ca) = x509_parser::parse_x509_certificate(&ca_der).unwrap();
        leaf.verify_signature(Some(ca.public_key())).unwrap();
        assert_eq!(
            leaf.subject().iter_common_name().next().unwrap().as_str(),
            Ok("CP1")
        );
        assert!(!leaf.is_ca());
        assert_eq!(signed.serial.len(), 32);
    }

    #[test]
    fn refusals() {
        let (authority, _) = authority();
        let use_ = CertificateUse::ChargingStation;
        let good = csr(Some("CP1"), false);
        for (csr, expected) in [
            (String::new(), CsrRefusal::NotPem),
            (
                "-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"
                    .into(),
                CsrRefusal::Malformed,
            ),
            (csr(Some("CP2"), false), CsrRefusal::WrongCommonName),
            (csr(None, false), CsrRefusal::NoCommonName),
            (csr(Some("CP1"), true), CsrRefusal::AsksForCa),
        ] {
            assert_eq!(authority.sign(&csr, &cp("CP1"), use_), Err(expected));
        }
        // One bit of the signed content flipped: the signature no longer verifies.
        let mut der = CertificateSigningRequestDer::from_pem_slice(good.as_bytes())
            .unwrap()
            .as_ref()
            .to_vec();
        let at = der.len() / 3;
        der[at] ^= 0x01;
        let tampered = pem_certificate(&der).replace("CERTIFICATE", "CERTIFICATE REQUEST");
        assert!(matches!(
            authority.sign(&tampered, &cp("CP1"), use_),
            Err(CsrRefusal::BadSignature | CsrRefusal::Malformed)
        ));
        // Random bytes never panic.
        let mut seed = 7u32;
        for len in 0..200 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    (seed >> 16) as u8
                })
                .collect();
            let pem = pem_certificate(&bytes).replace("CERTIFICATE", "CERTIFICATE REQUEST");
            assert!(authority.sign(&pem, &cp("CP1"), use_).is_err());
        }
    }

    #[test]
    fn a_key_that_is_not_the_certificates_is_refused() {
        let (_, ca_pem) = authority();
        let other = KeyPair::generate().unwrap();
        assert!(matches!(
            CertificateAuthority::from_pem(&ca_pem, &other.serialize_pem()),
            Err(CaError::KeyMismatch)
        ));
    }

    #[test]
    fn pem_encoding_matches_rcgen() {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec!["x.test".to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        assert_eq!(
            pem_certificate(cert.der()).replace("\r\n", "\n"),
            cert.pem().replace("\r\n", "\n")
        );
    }
}
