//! An OCSP client (RFC 6960) for Plug & Charge: from OCPP's `OCSPRequestDataType` (2.0.1
//! Part 2 §2.37: hashAlgorithm, issuerNameHash, issuerKeyHash, serialNumber, responderURL) a
//! DER `OCSPRequest` is built, POSTed over HTTP (`Content-Type: application/ocsp-request`,
//! RFC 6960 Appendix A.1) to the responder, and the `OCSPResponse` read back: its status
//! (good / revoked / unknown), its validity (thisUpdate / nextUpdate) and its signature.
//!
//! Used by Authorize with contract certificates (C07), GetCertificateStatus (M06) and the
//! contract chain check of [`super::plug_and_charge`]. Every call is blocking and bounded by
//! [`OcspClient::timeout`]: it runs off the I/O loop (`Answering::Later`).
//!
//! # Crates
//! - `x509-ocsp` (RustCrypto, with `der`, `x509-cert` and `spki`): the RFC 6960 ASN.1 types,
//!   derived from the RFC's module, encoded and decoded strictly as DER; no hand-written
//!   ASN.1.
//! - `x509-parser` (already used for the CSRs) with its `verify` feature: certificate
//!   fields, extensions (AIA, EKU) and signature checks through `ring`, so one signature
//!   path serves both certificates and OCSP responses.
//! - `ureq` 3 with default features off: a small blocking HTTP/1.1 client without TLS (OCSP
//!   runs over plain HTTP, the responses are signed), with a global timeout per request and
//!   a cap on the body read; a round trip here needs no async runtime.
//!
//! # Signature rule (RFC 6960 §4.2.2.2)
//! The response must be signed by the certificate's issuer (the certificate among the
//! known ones, or among those the response carries, whose name and key hash to the
//! request's `issuerNameHash` / `issuerKeyHash`), or by a responder certificate that the
//! issuer signed and that has the `id-kp-OCSPSigning` extended key usage. When trust roots
//! are given, the issuer must also be one of them or chain to one of them (through the
//! known certificates and those in the response). Without roots, the binding of the hashes
//! to the issuer key is the only anchor.

use std::time::{Duration, SystemTime};

use der::asn1::{AnyRef, OctetString};
use der::{Decode, Encode, Reader, SliceReader};
use x509_cert::serial_number::SerialNumber;
use x509_cert::spki::AlgorithmIdentifierOwned;
use x509_ocsp::{
    BasicOcspResponse, CertId, CertStatus, OcspRequest, OcspResponse, OcspResponseStatus, Request,
    TbsRequest, Version,
};
use x509_parser::certificate::X509Certificate;
use x509_parser::prelude::{FromDer, GeneralName, ParsedExtension};

/// The hash of a CertID (OCPP `HashAlgorithmEnumType`): the model's.
pub use ocpp_model::signed_meter::HashAlgorithm;

/// The time one OCSP round trip may take (connect, send, read): 4 s.
pub const TIMEOUT: Duration = Duration::from_secs(4);

/// The largest response body read (RFC 6960 responses are a few KB; OCPP caps
/// `ocspResult` at 5500 characters of base64).
const MAX_RESPONSE: u64 = 64 * 1024;

/// How far thisUpdate may lie in the future and nextUpdate in the past (clock skew).
const CLOCK_SKEW: Duration = Duration::from_secs(300);

/// `id-pkix-ocsp-basic` (RFC 6960 §4.2.1).
const OCSP_BASIC: der::oid::ObjectIdentifier =
    der::oid::ObjectIdentifier::new_unwrap("1.3.6.1.5.5.7.48.1.1");

/// Why an OCSP check gave no status.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OcspError {
    /// `hashAlgorithm` is none of SHA256, SHA384, SHA512.
    #[error("unknown hash algorithm {0:?}")]
    HashAlgorithm(String),
    /// A field of the request data is not hex (nor base64 for the two hashes).
    #[error("{field} is not hex: {value:?}")]
    NotHex {
        /// The OCPP field name.
        field: &'static str,
        /// What it held.
        value: String,
    },
    /// Neither the request data nor the configuration names a responder.
    #[error("no OCSP responder URL")]
    NoResponder,
    /// A certificate could not be parsed.
    #[error("bad certificate: {0}")]
    Certificate(String),
    /// The request or response is not valid DER for its RFC 6960 type.
    #[error("DER: {0}")]
    Der(#[from] der::Error),
    /// The HTTP round trip failed: connect, timeout, an HTTP error status, a body too large.
    #[error("OCSP responder {url}: {reason}")]
    Http {
        /// The responder.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// The responder answered with a status other than successful (RFC 6960 §2.3).
    #[error("OCSP responder status {0:?}")]
    Status(OcspResponseStatus),
    /// The response is not of type `id-pkix-ocsp-basic`.
    #[error("OCSP response type is not id-pkix-ocsp-basic")]
    ResponseType,
    /// The response has no SingleResponse for the requested CertID.
    #[error("OCSP response has no status for the requested certificate")]
    NoMatchingResponse,
    /// No certificate known or carried matches the request's issuer hashes, or no
    /// certificate that may sign for the issuer verifies the response.
    #[error("OCSP response signature not verified: {0}")]
    Signature(String),
    /// The issuer does not chain to a configured root.
    #[error("OCSP issuer does not chain to a trusted root")]
    Untrusted,
    /// thisUpdate is in the future or nextUpdate in the past.
    #[error("OCSP response not current (thisUpdate / nextUpdate)")]
    NotCurrent,
}

/// The OID of `hash` in a CertID (NIST's, RFC 5754 §2); [`OcspError::HashAlgorithm`] for a
/// hash without one here.
fn hash_oid(hash: HashAlgorithm) -> Result<der::oid::ObjectIdentifier, OcspError> {
    let oid = match hash {
        HashAlgorithm::Sha256 => "2.16.840.1.101.3.4.2.1",
        HashAlgorithm::Sha384 => "2.16.840.1.101.3.4.2.2",
        HashAlgorithm::Sha512 => "2.16.840.1.101.3.4.2.3",
        other => return Err(OcspError::HashAlgorithm(other.to_string())),
    };
    Ok(der::oid::ObjectIdentifier::new_unwrap(oid))
}

/// Which certificate to ask about and where: OCPP's `OCSPRequestDataType`, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OcspRequestData {
    /// The hash of the two issuer hashes.
    pub hash_algorithm: HashAlgorithm,
    /// The hash of the issuer's DER-encoded subject name.
    pub issuer_name_hash: Vec<u8>,
    /// The hash of the issuer's public key (the BIT STRING's value).
    pub issuer_key_hash: Vec<u8>,
    /// The certificate's serial number (big-endian bytes, as in the certificate).
    pub serial_number: Vec<u8>,
    /// The responder to ask (`responderURL`); may be empty when one is configured.
    pub responder_url: String,
}

impl OcspRequestData {
    /// From the OCPP fields: the hashes and the serial number in hex (2.0.1 Part 2
    /// §2.12/§2.37; the hashes are also taken in base64, which some stations send).
    ///
    /// ```
    /// # use ocpp_reference_csms::ocsp::OcspRequestData;
    /// let data = OcspRequestData::from_ocpp("SHA256", "00ff", "ab01", "1A2B", "http://x")?;
    /// assert_eq!(data.serial_number, vec![0x1a, 0x2b]);
    /// # Ok::<(), ocpp_reference_csms::ocsp::OcspError>(())
    /// ```
    pub fn from_ocpp(
        hash_algorithm: &str,
        issuer_name_hash: &str,
        issuer_key_hash: &str,
        serial_number: &str,
        responder_url: &str,
    ) -> Result<Self, OcspError> {
        let hash_algorithm = HashAlgorithm::from_wire(hash_algorithm)
            .ok_or_else(|| OcspError::HashAlgorithm(hash_algorithm.to_owned()))?;
        Ok(OcspRequestData {
            hash_algorithm,
            issuer_name_hash: hash_field("issuerNameHash", issuer_name_hash)?,
            issuer_key_hash: hash_field("issuerKeyHash", issuer_key_hash)?,
            serial_number: hex_field("serialNumber", serial_number)?,
            responder_url: responder_url.to_owned(),
        })
    }

    /// For a certificate (DER) and its issuer (DER): the hashes computed, the responder
    /// taken from the certificate's Authority Information Access (id-ad-ocsp, RFC 5280
    /// §4.2.2.1), empty when it has none.
    pub fn for_certificate(
        certificate: &[u8],
        issuer: &[u8],
        hash_algorithm: HashAlgorithm,
    ) -> Result<Self, OcspError> {
        let certificate = parse(certificate)?;
        let issuer = parse(issuer)?;
        Ok(OcspRequestData {
            hash_algorithm,
            issuer_name_hash: hash_algorithm.digest(issuer.subject().as_raw()),
            issuer_key_hash: hash_algorithm.digest(&issuer.public_key().subject_public_key.data),
            serial_number: certificate.raw_serial().to_vec(),
            responder_url: responder_of(&certificate).unwrap_or_default(),
        })
    }

    /// The OCPP fields as hex: issuerNameHash, issuerKeyHash, serialNumber (upper case).
    pub fn hex_fields(&self) -> (String, String, String) {
        (
            hex(&self.issuer_name_hash),
            hex(&self.issuer_key_hash),
            hex(&self.serial_number),
        )
    }

    /// The RFC 6960 CertID.
    fn cert_id(&self) -> Result<CertId, OcspError> {
        Ok(CertId {
            hash_algorithm: AlgorithmIdentifierOwned {
                oid: hash_oid(self.hash_algorithm)?,
                parameters: Some(der::Any::null()),
            },
            issuer_name_hash: OctetString::new(self.issuer_name_hash.clone())?,
            issuer_key_hash: OctetString::new(self.issuer_key_hash.clone())?,
            serial_number: SerialNumber::new(&self.serial_number)?,
        })
    }

    /// The DER `OCSPRequest` (RFC 6960 §4.1.1): one unsigned request for this CertID.
    pub fn request_der(&self) -> Result<Vec<u8>, OcspError> {
        let request = OcspRequest {
            tbs_request: TbsRequest {
                version: Version::V1,
                requestor_name: None,
                request_list: vec![Request {
                    req_cert: self.cert_id()?,
                    single_request_extensions: None,
                }],
                request_extensions: None,
            },
            optional_signature: None,
        };
        Ok(request.to_der()?)
    }
}

/// A certificate's status in a response (RFC 6960 §4.2.1 CertStatus).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CertificateStatus {
    /// Not revoked.
    Good,
    /// Revoked (at the given time).
    Revoked(SystemTime),
    /// The responder does not know the certificate.
    Unknown,
}

/// A verified OCSP answer for one certificate.
#[derive(Clone, Debug)]
pub struct OcspOutcome {
    /// The status.
    pub status: CertificateStatus,
    /// When the status was known to be correct.
    pub this_update: SystemTime,
    /// When newer information will be available, if the responder says.
    pub next_update: Option<SystemTime>,
    /// The whole DER `OCSPResponse`, as GetCertificateStatus passes it on.
    pub response: Vec<u8>,
}

/// What a response's signer may be checked against.
#[derive(Clone, Copy, Debug, Default)]
pub struct Trust<'a> {
    /// Trust anchors (DER); empty: the issuer hashes are the only anchor.
    pub roots: &'a [Vec<u8>],
    /// Other certificates that may be the issuer or link it to a root (DER).
    pub known: &'a [Vec<u8>],
}

/// The HTTP side: where to send requests (a configured responder overrides the request's)
/// and how long to wait.
#[derive(Clone, Debug)]
pub struct OcspClient {
    responder: Option<String>,
    timeout: Duration,
}

impl Default for OcspClient {
    fn default() -> Self {
        OcspClient::new(None, TIMEOUT)
    }
}

impl OcspClient {
    /// A client that sends to `responder` when given (`--ocsp-responder`), else to each
    /// request's `responderURL`, waiting at most `timeout` per round trip.
    pub fn new(responder: Option<String>, timeout: Duration) -> Self {
        OcspClient { responder, timeout }
    }

    /// The time a round trip may take.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The URL a request for `data` goes to.
    pub fn responder_for<'a>(&'a self, data: &'a OcspRequestData) -> Result<&'a str, OcspError> {
        match &self.responder {
            Some(url) => Ok(url),
            None if !data.responder_url.is_empty() => Ok(&data.responder_url),
            None => Err(OcspError::NoResponder),
        }
    }

    /// POSTs the request for `data` and returns the raw response body (RFC 6960 A.1).
    pub fn fetch(&self, data: &OcspRequestData) -> Result<Vec<u8>, OcspError> {
        let url = self.responder_for(data)?;
        let body = data.request_der()?;
        let http = |reason: String| OcspError::Http {
            url: url.to_owned(),
            reason,
        };
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(self.timeout))
            .max_redirects(0)
            .build()
            .into();
        let mut response = agent
            .post(url)
            .header("Content-Type", "application/ocsp-request")
            .header("Accept", "application/ocsp-response")
            .send(&body[..])
            .map_err(|e| http(e.to_string()))?;
        response
            .body_mut()
            .with_config()
            .limit(MAX_RESPONSE)
            .read_to_vec()
            .map_err(|e| http(e.to_string()))
    }

    /// Fetches and verifies: the status of the certificate `data` names, at `now`.
    pub fn check(
        &self,
        data: &OcspRequestData,
        trust: Trust<'_>,
        now: SystemTime,
    ) -> Result<OcspOutcome, OcspError> {
        let response = self.fetch(data)?;
        verify_response(response, data, trust, now)
    }
}

/// Reads a DER `OCSPResponse` for `data` and checks it (status, CertID, signature, time).
pub fn verify_response(
    response: Vec<u8>,
    data: &OcspRequestData,
    trust: Trust<'_>,
    now: SystemTime,
) -> Result<OcspOutcome, OcspError> {
    let parsed = OcspResponse::from_der(&response)?;
    if parsed.response_status != OcspResponseStatus::Successful {
        return Err(OcspError::Status(parsed.response_status));
    }
    let bytes = parsed.response_bytes.ok_or(OcspError::ResponseType)?;
    if bytes.response_type != OCSP_BASIC {
        return Err(OcspError::ResponseType);
    }
    let basic_der = bytes.response.as_bytes();
    let basic = BasicOcspResponse::from_der(basic_der)?;
    let wanted = data.cert_id()?;
    let single = basic
        .tbs_response_data
        .responses
        .iter()
        .find(|single| same_cert_id(&single.cert_id, &wanted))
        .ok_or(OcspError::NoMatchingResponse)?;
    verify_signature(basic_der, &basic, data, trust)?;
    let this_update = single.this_update.0.to_system_time();
    let next_update = single.next_update.map(|t| t.0.to_system_time());
    if this_update > now + CLOCK_SKEW || next_update.is_some_and(|next| next + CLOCK_SKEW < now) {
        return Err(OcspError::NotCurrent);
    }
    let status = match &single.cert_status {
        CertStatus::Good(_) => CertificateStatus::Good,
        CertStatus::Revoked(info) => {
            CertificateStatus::Revoked(info.revocation_time.0.to_system_time())
        }
        CertStatus::Unknown(_) => CertificateStatus::Unknown,
    };
    Ok(OcspOutcome {
        status,
        this_update,
        next_update,
        response,
    })
}

/// The CertIDs name the same certificate: same hash algorithm (parameters NULL or absent
/// alike), hashes and serial number.
fn same_cert_id(a: &CertId, b: &CertId) -> bool {
    a.hash_algorithm.oid == b.hash_algorithm.oid
        && a.issuer_name_hash == b.issuer_name_hash
        && a.issuer_key_hash == b.issuer_key_hash
        && a.serial_number == b.serial_number
}

/// RFC 6960 §4.2.2.2: signed by the issuer or by a responder the issuer delegated to;
/// the issuer anchored at a root when there are roots.
fn verify_signature(
    basic_der: &[u8],
    basic: &BasicOcspResponse,
    data: &OcspRequestData,
    trust: Trust<'_>,
) -> Result<(), OcspError> {
    let tbs = tbs_response_data(basic_der)?;
    let algorithm_der = basic.signature_algorithm.to_der()?;
    let algorithm = x509_parser::x509::AlgorithmIdentifier::from_der(&algorithm_der)
        .map_err(|e| OcspError::Signature(format!("signature algorithm: {e}")))?
        .1;
    let signature = basic
        .signature
        .as_bytes()
        .ok_or_else(|| OcspError::Signature("signature has unused bits".into()))?;
    let signature = x509_parser::der_parser::asn1_rs::BitString::new(0, signature);
    let carried: Vec<Vec<u8>> = match &basic.certs {
        Some(certs) => certs.iter().map(|c| c.to_der()).collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    let pool: Vec<&Vec<u8>> = trust
        .roots
        .iter()
        .chain(trust.known)
        .chain(&carried)
        .collect();
    let parsed: Vec<X509Certificate<'_>> = pool
        .iter()
        .filter_map(|der| X509Certificate::from_der(der).ok().map(|(_, c)| c))
        .collect();
    let issuer = parsed
        .iter()
        .find(|c| {
            data.hash_algorithm.digest(c.subject().as_raw()) == data.issuer_name_hash
                && data
                    .hash_algorithm
                    .digest(&c.public_key().subject_public_key.data)
                    == data.issuer_key_hash
        })
        .ok_or_else(|| OcspError::Signature("no certificate matches the issuer hashes".into()))?;
    let signed_by = |signer: &X509Certificate<'_>| {
        x509_parser::verify::verify_signature(signer.public_key(), &algorithm, &signature, tbs)
            .is_ok()
    };
    let delegated = |responder: &&X509Certificate<'_>| {
        responder.issuer().as_raw() == issuer.subject().as_raw()
            && responder
                .verify_signature(Some(issuer.public_key()))
                .is_ok()
            && matches!(responder.extended_key_usage(), Ok(Some(eku)) if eku.value.ocsp_signing)
    };
    let by_issuer = signed_by(issuer);
    if !by_issuer && !parsed.iter().filter(delegated).any(signed_by) {
        return Err(OcspError::Signature(
            "neither the issuer nor a responder it delegated to signed the response".into(),
        ));
    }
    if !trust.roots.is_empty() && !anchored(issuer, &parsed, trust.roots) {
        return Err(OcspError::Untrusted);
    }
    Ok(())
}

/// The raw DER of `tbsResponseData`, the signed bytes (not re-encoded).
fn tbs_response_data(basic_der: &[u8]) -> Result<&[u8], OcspError> {
    let mut reader = SliceReader::new(basic_der)?;
    // The BasicOCSPResponse SEQUENCE's header, then tbsResponseData whole.
    der::Header::decode(&mut reader)?;
    let start = usize::try_from(reader.position())?;
    AnyRef::decode(&mut reader)?;
    let end = usize::try_from(reader.position())?;
    basic_der
        .get(start..end)
        .ok_or_else(|| OcspError::Signature("tbsResponseData out of range".into()))
}

/// `certificate` is one of `roots` or chains to one through `pool` (signatures checked,
/// at most 8 links).
pub(crate) fn anchored(
    certificate: &X509Certificate<'_>,
    pool: &[X509Certificate<'_>],
    roots: &[Vec<u8>],
) -> bool {
    let roots: Vec<X509Certificate<'_>> = roots
        .iter()
        .filter_map(|der| X509Certificate::from_der(der).ok().map(|(_, c)| c))
        .collect();
    let mut current = certificate;
    for _ in 0..8 {
        if roots.iter().any(|root| root.as_raw() == current.as_raw()) {
            return true;
        }
        if roots.iter().any(|root| {
            root.subject().as_raw() == current.issuer().as_raw()
                && current.verify_signature(Some(root.public_key())).is_ok()
        }) {
            return true;
        }
        match pool.iter().find(|c| {
            c.subject().as_raw() == current.issuer().as_raw()
                && c.as_raw() != current.as_raw()
                && current.verify_signature(Some(c.public_key())).is_ok()
        }) {
            Some(next) => current = next,
            None => return false,
        }
    }
    false
}

/// The OCSP responder URL of a certificate's AIA extension.
pub fn responder_of(certificate: &X509Certificate<'_>) -> Option<String> {
    certificate.extensions().iter().find_map(|extension| {
        let ParsedExtension::AuthorityInfoAccess(aia) = extension.parsed_extension() else {
            return None;
        };
        aia.accessdescs.iter().find_map(|access| {
            match (&access.access_method, &access.access_location) {
                (method, GeneralName::URI(uri))
                    if *method == x509_parser::oid_registry::OID_PKIX_ACCESS_DESCRIPTOR_OCSP =>
                {
                    Some((*uri).to_owned())
                }
                _ => None,
            }
        })
    })
}

fn parse(der: &[u8]) -> Result<X509Certificate<'_>, OcspError> {
    X509Certificate::from_der(der)
        .map(|(_, c)| c)
        .map_err(|e| OcspError::Certificate(e.to_string()))
}

/// Upper-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    let text = text.trim();
    let padded;
    let text = if text.len() % 2 == 1 {
        padded = format!("0{text}");
        padded.as_str()
    } else {
        text
    };
    (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|d| u8::from_str_radix(d, 16).ok())
        })
        .collect()
}

fn hex_field(field: &'static str, value: &str) -> Result<Vec<u8>, OcspError> {
    match unhex(value) {
        Some(bytes) if !bytes.is_empty() => Ok(bytes),
        _ => Err(OcspError::NotHex {
            field,
            value: value.to_owned(),
        }),
    }
}

/// A hash in hex (the specification) or, failing that, base64.
fn hash_field(field: &'static str, value: &str) -> Result<Vec<u8>, OcspError> {
    use base64::Engine as _;
    hex_field(field, value).or_else(|error| {
        base64::engine::general_purpose::STANDARD
            .decode(value.trim())
            .ok()
            .filter(|bytes| !bytes.is_empty())
            .ok_or(error)
    })
}

/// Shared with the other Plug & Charge tests: the PKI and responder harness.
#[cfg(test)]
pub(crate) mod tests;
