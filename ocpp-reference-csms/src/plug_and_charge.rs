//! Plug & Charge on the CSMS side (OCPP 2.0.1 and 2.1, ISO 15118): the trust roots
//! (`--v2g-root`, `--mo-root`), the OCSP client ([`super::ocsp`]) and the
//! contract-certificate service ([`super::contract_certificate_service`]), and the checks
//! the handlers run off the I/O loop:
//! - C07 Authorize with contract certificates: [`PlugAndCharge::check_contract`];
//! - M06 GetCertificateStatus: [`PlugAndCharge::certificate_status`];
//! - M01/M02 Get15118EVCertificate: [`PlugAndCharge::forward_contract_request`].
//!
//! Every check bounds its own time: each network round trip has a timeout, and the OCSP
//! checks of one Authorize share a budget of [`CHECK_BUDGET`].

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use x509_parser::certificate::X509Certificate;
use x509_parser::prelude::FromDer;

use super::contract_certificate_service::{self, ContractRequest, ContractResponse};
use super::ocsp::{
    self, CertificateStatus, HashAlgorithm, OcspClient, OcspError, OcspOutcome, OcspRequestData,
    Trust,
};

/// The time all OCSP round trips of one Authorize may take together.
pub const CHECK_BUDGET: Duration = Duration::from_secs(9);

/// Why the Plug & Charge settings could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlugAndChargeError {
    /// A roots file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A roots file holds no certificate, or one that does not parse.
    #[error("{path}: {reason}")]
    Certificates {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
}

/// The outcome of a contract-certificate check: OCPP's `AuthorizeCertificateStatusEnumType`
/// (2.0.1 and 2.1 spell it alike).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContractStatus {
    /// Valid, chained to the MO root (when configured) and good by OCSP.
    Accepted,
    /// The OCSP response's signature does not verify.
    SignatureError,
    /// A certificate of the chain is outside its validity period.
    CertificateExpired,
    /// OCSP says revoked (C07.FR.16).
    CertificateRevoked,
    /// No status could be had (no responder, unreachable, a malformed answer).
    NoCertificateAvailable,
    /// The chain does not verify or reach a root; OCSP says unknown.
    CertChainError,
}

impl ContractStatus {
    /// The OCPP name.
    pub fn as_str(self) -> &'static str {
        match self {
            ContractStatus::Accepted => "Accepted",
            ContractStatus::SignatureError => "SignatureError",
            ContractStatus::CertificateExpired => "CertificateExpired",
            ContractStatus::CertificateRevoked => "CertificateRevoked",
            ContractStatus::NoCertificateAvailable => "NoCertificateAvailable",
            ContractStatus::CertChainError => "CertChainError",
        }
    }

    /// What an OCSP check means for the contract.
    fn of(outcome: &Result<OcspOutcome, OcspError>) -> Self {
        match outcome {
            Ok(outcome) => match outcome.status {
                CertificateStatus::Good => ContractStatus::Accepted,
                CertificateStatus::Revoked(_) => ContractStatus::CertificateRevoked,
                CertificateStatus::Unknown => ContractStatus::CertChainError,
            },
            Err(OcspError::Signature(_)) => ContractStatus::SignatureError,
            Err(OcspError::Untrusted) => ContractStatus::CertChainError,
            Err(_) => ContractStatus::NoCertificateAvailable,
        }
    }
}

/// The Plug & Charge settings: trust roots, the OCSP client, the contract service.
#[derive(Clone, Debug, Default)]
pub struct PlugAndCharge {
    v2g_roots: Vec<Vec<u8>>,
    mo_roots: Vec<Vec<u8>>,
    ocsp: OcspClient,
    contract_service: Option<String>,
}

impl PlugAndCharge {
    /// The V2G roots (DER): the anchors of GetCertificateStatus answers (M06).
    pub fn v2g_roots(mut self, roots: Vec<Vec<u8>>) -> Self {
        self.v2g_roots = roots;
        self
    }

    /// The MO roots (DER): the anchors of contract certificates (C07).
    pub fn mo_roots(mut self, roots: Vec<Vec<u8>>) -> Self {
        self.mo_roots = roots;
        self
    }

    /// The OCSP client (`--ocsp-responder` overrides the stations' responder URLs).
    pub fn ocsp(mut self, client: OcspClient) -> Self {
        self.ocsp = client;
        self
    }

    /// The contract-certificate service's URL; `None`: Get15118EVCertificate is Failed.
    pub fn contract_service(mut self, url: Option<String>) -> Self {
        self.contract_service = url;
        self
    }

    /// Whether Get15118EVCertificate has a service to go to.
    pub fn has_contract_service(&self) -> bool {
        self.contract_service.is_some()
    }

    /// The certificates (DER) of a PEM file, one or more.
    pub fn load_roots(path: &Path) -> Result<Vec<Vec<u8>>, PlugAndChargeError> {
        let text = std::fs::read_to_string(path).map_err(|source| PlugAndChargeError::Read {
            path: path.display().to_string(),
            source,
        })?;
        certificates_of_pem(&text).map_err(|reason| PlugAndChargeError::Certificates {
            path: path.display().to_string(),
            reason,
        })
    }

    /// C07: the status of a contract, from the chain the station sent (`certificate`, PEM,
    /// leaf first: its validity, its signatures up to an MO root, then OCSP for the leaf) or
    /// from its `iso15118CertificateHashData` (OCSP for each entry). The worst outcome wins.
    pub fn check_contract(
        &self,
        certificate: Option<&str>,
        hash_data: &[OcspRequestData],
        now: SystemTime,
    ) -> ContractStatus {
        let deadline = Instant::now() + CHECK_BUDGET;
        match certificate {
            Some(pem) => self.check_chain(pem, now, deadline),
            None if hash_data.is_empty() => ContractStatus::NoCertificateAvailable,
            None => {
                let mut worst = ContractStatus::Accepted;
                for data in hash_data {
                    let outcome = self.ocsp_until(data, &self.mo_roots, &[], now, deadline);
                    let status = ContractStatus::of(&outcome);
                    if let Err(error) = &outcome {
                        tracing::info!(%error, "contract certificate OCSP check failed");
                    }
                    worst = worse(worst, status);
                }
                worst
            }
        }
    }

    /// M06: the OCSP response for a station's certificate (verified against the V2G roots),
    /// to pass on as `ocspResult`.
    pub fn certificate_status(
        &self,
        data: &OcspRequestData,
        now: SystemTime,
    ) -> Result<OcspOutcome, OcspError> {
        self.ocsp.check(
            data,
            Trust {
                roots: &self.v2g_roots,
                known: &[],
            },
            now,
        )
    }

    /// M01/M02: the contract-certificate service's answer; `None` when there is no service.
    pub fn forward_contract_request(
        &self,
        request: &ContractRequest,
    ) -> Option<Result<ContractResponse, contract_certificate_service::ContractServiceError>> {
        let url = self.contract_service.as_deref()?;
        Some(contract_certificate_service::forward(
            url,
            request,
            contract_certificate_service::TIMEOUT,
        ))
    }

    fn ocsp_until(
        &self,
        data: &OcspRequestData,
        roots: &[Vec<u8>],
        known: &[Vec<u8>],
        now: SystemTime,
        deadline: Instant,
    ) -> Result<OcspOutcome, OcspError> {
        let left = deadline.saturating_duration_since(Instant::now());
        let url = self.ocsp.responder_for(data)?.to_owned();
        if left.is_zero() {
            return Err(OcspError::Http {
                url,
                reason: "no time left for this check".into(),
            });
        }
        let client = OcspClient::new(Some(url), left.min(self.ocsp.timeout()));
        client.check(data, Trust { roots, known }, now)
    }

    fn check_chain(&self, pem: &str, now: SystemTime, deadline: Instant) -> ContractStatus {
        let Ok(chain) = certificates_of_pem(pem) else {
            return ContractStatus::CertChainError;
        };
        let Ok(parsed) = chain
            .iter()
            .map(|der| X509Certificate::from_der(der).map(|(_, c)| c))
            .collect::<Result<Vec<_>, _>>()
        else {
            return ContractStatus::CertChainError;
        };
        let Some(leaf) = parsed.first() else {
            return ContractStatus::CertChainError;
        };
        let seconds = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let Ok(at) =
            x509_parser::time::ASN1Time::from_timestamp(i64::try_from(seconds).unwrap_or(i64::MAX))
        else {
            return ContractStatus::CertChainError;
        };
        if parsed.iter().any(|c| !c.validity().is_valid_at(at)) {
            return ContractStatus::CertificateExpired;
        }
        // Each certificate signed by the next one.
        for pair in parsed.windows(2) {
            let [child, parent] = pair else { continue };
            if child.issuer().as_raw() != parent.subject().as_raw()
                || child.verify_signature(Some(parent.public_key())).is_err()
            {
                return ContractStatus::CertChainError;
            }
        }
        let roots: Vec<X509Certificate<'_>> = self
            .mo_roots
            .iter()
            .filter_map(|der| X509Certificate::from_der(der).ok().map(|(_, c)| c))
            .collect();
        if !self.mo_roots.is_empty() && !ocsp::anchored(leaf, &parsed, &self.mo_roots) {
            return ContractStatus::CertChainError;
        }
        // The leaf's issuer: the next certificate, a root that signed it, or itself.
        let issuer = parsed
            .get(1)
            .or_else(|| {
                roots.iter().find(|root| {
                    root.subject().as_raw() == leaf.issuer().as_raw()
                        && leaf.verify_signature(Some(root.public_key())).is_ok()
                })
            })
            .unwrap_or(leaf);
        let Ok(data) =
            OcspRequestData::for_certificate(leaf.as_raw(), issuer.as_raw(), HashAlgorithm::Sha256)
        else {
            return ContractStatus::CertChainError;
        };
        let outcome = self.ocsp_until(&data, &self.mo_roots, &chain, now, deadline);
        if let Err(error) = &outcome {
            tracing::info!(%error, "contract certificate OCSP check failed");
        }
        ContractStatus::of(&outcome)
    }
}

/// The outcome that decides: anything beats Accepted; revocation beats the rest.
fn worse(a: ContractStatus, b: ContractStatus) -> ContractStatus {
    let rank = |s: ContractStatus| match s {
        ContractStatus::Accepted => 0,
        ContractStatus::NoCertificateAvailable => 1,
        ContractStatus::CertChainError => 2,
        ContractStatus::CertificateExpired => 3,
        ContractStatus::SignatureError => 4,
        ContractStatus::CertificateRevoked => 5,
    };
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

/// The DER certificates of PEM text (`CERTIFICATE` blocks, in order).
pub fn certificates_of_pem(text: &str) -> Result<Vec<Vec<u8>>, String> {
    let mut certificates = Vec::new();
    for pem in x509_parser::pem::Pem::iter_from_buffer(text.as_bytes()) {
        let pem = pem.map_err(|e| e.to_string())?;
        if pem.label == "CERTIFICATE" {
            X509Certificate::from_der(&pem.contents).map_err(|e| e.to_string())?;
            certificates.push(pem.contents);
        }
    }
    if certificates.is_empty() {
        return Err("no CERTIFICATE block".into());
    }
    Ok(certificates)
}

#[cfg(test)]
mod tests;
