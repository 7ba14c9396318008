//! The client of a contract-certificate service (`--contract-certificate-service URL`): where
//! Get15118EVCertificate (OCPP 2.0.1 M01 install, M02 update) is forwarded. The service
//! stands for the mobility operator / contract-certificate pool of ISO 15118-2 §8.3.2 (a
//! real deployment would front a PKI platform); this CSMS passes the EXI messages through
//! untouched.
//!
//! # Protocol (HTTP/1.1, JSON)
//! `POST URL` with `Content-Type: application/json`:
//! ```json
//! {"action": "Install", "iso15118SchemaVersion": "urn:iso:15118:2:2013:MsgDef",
//!  "exiRequest": "<base64 EXI CertificateInstallationReq / CertificateUpdateReq>"}
//! ```
//! (`action`: `Install` or `Update`, the OCPP `CertificateActionEnumType`; the schema
//! version and the EXI request as the station sent them.) The service answers `200` with:
//! ```json
//! {"status": "Accepted", "exiResponse": "<base64 EXI CertificateInstallationRes / ...Res>"}
//! ```
//! `status` is `Accepted` or `Failed`; `exiResponse` (at most 7500 characters, the OCPP
//! limit) may be empty when Failed. Any other HTTP status, a body that is not this JSON, or
//! no answer within the timeout is a failure (the station then gets `Failed`).

use std::time::Duration;

/// The time one round trip to the service may take: 5 s.
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// The largest answer read.
const MAX_ANSWER: u64 = 64 * 1024;

/// OCPP's limit on `exiResponse` (2.0.1 and 2.1: string[0..7500]).
const MAX_EXI_RESPONSE: usize = 7500;

/// Why the service gave no answer to pass on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ContractServiceError {
    /// The HTTP round trip failed (connect, timeout, a status other than 200).
    #[error("contract-certificate service {url}: {reason}")]
    Http {
        /// The service.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// The answer is not the protocol's JSON.
    #[error("contract-certificate service answer: {0}")]
    Answer(String),
}

/// One Get15118EVCertificate, as forwarded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContractRequest {
    /// `Install` or `Update`.
    pub action: String,
    /// The ISO 15118 schema version the station named.
    pub iso15118_schema_version: String,
    /// The EXI request, base64, as the station sent it.
    pub exi_request: String,
}

/// The service's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContractResponse {
    /// Whether the service produced a response for the EV.
    pub accepted: bool,
    /// The EXI response, base64 (possibly empty when not accepted).
    pub exi_response: String,
}

/// Forwards `request` to the service at `url`, waiting at most `timeout`.
pub fn forward(
    url: &str,
    request: &ContractRequest,
    timeout: Duration,
) -> Result<ContractResponse, ContractServiceError> {
    let http = |reason: String| ContractServiceError::Http {
        url: url.to_owned(),
        reason,
    };
    let body = serde_json::json!({
        "action": request.action,
        "iso15118SchemaVersion": request.iso15118_schema_version,
        "exiRequest": request.exi_request,
    })
    .to_string();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .max_redirects(0)
        .build()
        .into();
    let mut response = agent
        .post(url)
        .header("Content-Type", "application/json")
        .send(body.as_bytes())
        .map_err(|e| http(e.to_string()))?;
    let answer = response
        .body_mut()
        .with_config()
        .limit(MAX_ANSWER)
        .read_to_vec()
        .map_err(|e| http(e.to_string()))?;
    let answer: serde_json::Value =
        serde_json::from_slice(&answer).map_err(|e| ContractServiceError::Answer(e.to_string()))?;
    let accepted = match answer["status"].as_str() {
        Some("Accepted") => true,
        Some("Failed") => false,
        other => {
            return Err(ContractServiceError::Answer(format!(
                "status {other:?}, not Accepted or Failed"
            )))
        }
    };
    let exi_response = answer["exiResponse"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    if exi_response.len() > MAX_EXI_RESPONSE {
        return Err(ContractServiceError::Answer(format!(
            "exiResponse of {} characters (OCPP allows {MAX_EXI_RESPONSE})",
            exi_response.len()
        )));
    }
    if accepted && exi_response.is_empty() {
        return Err(ContractServiceError::Answer(
            "Accepted without an exiResponse".into(),
        ));
    }
    Ok(ContractResponse {
        accepted,
        exi_response,
    })
}

#[cfg(test)]
mod tests;
