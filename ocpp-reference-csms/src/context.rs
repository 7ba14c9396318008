//! What the per-version handlers need besides the charge point: the settings, the token
//! store, the ids, the time, and the certificate a SignCertificate asked for.

use std::sync::atomic::AtomicUsize;
use std::sync::RwLock;

use ocpp_messages::version::OcppVersion;
use ocpp_messages::DateTime;
use ocpp_proto::Request;

use crate::outgoing::queue_follow_up;
use crate::{
    transaction_ids, BootPolicy, CertificateSigning, CertificateUse, ChargePointRecord, CsmsConfig,
    SignedCertificate, TokenStore, Transaction, UnixTime,
};
use ocpp_model::{Authorization, AuthorizationStatus};

/// What the per-version handlers need besides the charge point.
#[derive(Debug)]
pub(crate) struct Context<'a> {
    pub(crate) config: &'a CsmsConfig,
    pub(crate) transaction_ids: &'a transaction_ids::TransactionIds,
    pub(crate) tokens: &'a RwLock<Option<TokenStore>>,
    /// [`Csms::follow_ups`], counted up when a follow-up CALL is stored.
    pub(crate) follow_ups: &'a AtomicUsize,
    pub(crate) now: UnixTime,
    /// A SignCertificate's CSR, checked and signed before the lock was taken.
    pub(crate) presigned: Option<&'a Result<SignedCertificate, String>>,
    /// The charge point's starts whose commit failed: a resend gets the same id
    /// ([`ledger`]).
    pub(crate) unconfirmed: &'a [Transaction],
    /// [`Csms::admission`](crate::Csms): the boot rate, if there is one.
    pub(crate) admission: Option<&'a std::sync::Mutex<crate::admission::Admission>>,
    pub(crate) metrics: &'a crate::Metrics,
}

/// Why a SignCertificate is Rejected without a CA.
pub(crate) const NO_CA: &str = "no certificate authority (--ca-cert, --ca-key)";

/// The certificate use of a 2.x `certificateType` (none: a station certificate).
pub(crate) fn certificate_use(certificate_type: Option<&str>) -> CertificateUse {
    match certificate_type {
        Some("V2GCertificate") => CertificateUse::V2G,
        _ => CertificateUse::ChargingStation,
    }
}

impl Context<'_> {
    /// The answer for an idTag / idToken: from the token store, or Accepted without one.
    pub(crate) fn authorize(&self, token: &str) -> Authorization {
        let tokens = self.tokens.read().unwrap_or_else(|p| p.into_inner());
        match tokens.as_ref() {
            Some(store) => store.authorize(token, &self.current_time()),
            None => Authorization::new(AuthorizationStatus::Accepted),
        }
    }

    /// The boot policy for this station: its own, else the default.
    pub(crate) fn boot_policy(&self, cp: &ChargePointRecord) -> BootPolicy {
        cp.boot_policy.unwrap_or(self.config.boot_policy)
    }

    /// The BootNotification `interval` for this answer: the heartbeat interval when
    /// Accepted, the retry interval otherwise (1.6 §4.2, 2.0.1 B01/B02/B03).
    pub(crate) fn boot_interval(&self, policy: BootPolicy) -> i32 {
        let interval = match policy {
            BootPolicy::Accepted => self.config.heartbeat_interval,
            _ => self.config.boot_retry_interval,
        };
        i32::try_from(interval.as_secs()).unwrap_or(i32::MAX)
    }

    /// Queues `request` to be sent to `cp` right after the answer being made (see
    /// [`Csms::take_follow_up`]).
    pub(crate) fn follow_up(&self, cp: &mut ChargePointRecord, request: Request) {
        queue_follow_up(self.follow_ups, cp, request);
    }

    /// A boot the policy accepts, under the boot rate: `None` to accept it now, or the
    /// seconds after which its slot comes (answer Pending).
    pub(crate) fn admit_boot(&self, identity: &str) -> Option<u32> {
        let mut admission = self.admission?.lock().unwrap_or_else(|p| p.into_inner());
        let admitted = admission.admit(identity, self.now);
        let waiting = i64::try_from(admission.waiting()).unwrap_or(i64::MAX);
        self.metrics.boots_waiting.set(waiting);
        match admitted {
            crate::admission::Admitted::Now => None,
            crate::admission::Admitted::After(seconds) => {
                self.metrics.boots_deferred.inc();
                Some(seconds)
            }
        }
    }

    /// Records what a BootNotification is answered.
    pub(crate) fn booted(&self, cp: &mut ChargePointRecord, policy: BootPolicy) {
        cp.boot_status = Some(policy);
        cp.triggered = false;
    }

    /// SignCertificate (A02/A03, 1.6 security whitepaper §3): checks and signs the CSR with
    /// the CA, if there is one, and records the outcome; when Accepted, the CertificateSigned
    /// carrying the chain waits in `follow_up` for the I/O loop. Returns whether Accepted.
    pub(crate) fn sign_certificate(
        &self,
        cp: &mut ChargePointRecord,
        version: OcppVersion,
        csr: &str,
        certificate_type: Option<&str>,
        request_id: Option<i32>,
    ) -> bool {
        let usage = certificate_use(certificate_type);
        let signed = match (self.presigned, &self.config.certificate_authority) {
            (Some(presigned), _) => presigned.clone(),
            (None, None) => Err(NO_CA.to_owned()),
            (None, Some(ca)) => ca
                .sign(csr, &cp.identity, usage)
                .map_err(|refusal| refusal.to_string()),
        };
        let sent = signed.and_then(|signed| {
            let request = certificate_signed(version, &signed.chain, certificate_type, request_id)?;
            Ok((signed, request))
        });
        let mut record = CertificateSigning {
            requested_at: self.now,
            certificate_type: usage.as_str(),
            status: "Rejected",
            reason: None,
            serial: None,
            not_after: None,
            answer: None,
            answered_at: None,
        };
        let accepted = match sent {
            Ok((signed, request)) => {
                tracing::info!(identity = %cp.identity, serial = signed.serial, "CSR signed");
                record.status = "Accepted";
                record.serial = Some(signed.serial);
                record.not_after = Some(signed.not_after);
                self.follow_up(cp, request);
                true
            }
            Err(reason) => {
                tracing::info!(identity = %cp.identity, reason, "SignCertificate rejected");
                record.reason = Some(reason);
                false
            }
        };
        cp.extras.get_mut().certificate = Some(record);
        accepted
    }

    /// The status of a DataTransfer from `vendor` (1.6 §4.3, 2.x P01/P02), in the words
    /// every version shares: Accepted for a vendor we know, UnknownVendorId otherwise.
    pub(crate) fn data_transfer_status(&self, vendor: &str) -> &'static str {
        let known = self
            .config
            .data_transfer_vendors
            .iter()
            .any(|v| v == vendor);
        if known {
            "Accepted"
        } else {
            "UnknownVendorId"
        }
    }

    /// `now` as an OCPP date-time (UTC, whole seconds).
    pub(crate) fn current_time(&self) -> DateTime {
        self.now.date_time()
    }

    /// A new OCPP 1.6 transaction id, never given before ([`transaction_ids`]); `None` when
    /// the block reserved in the database is used up (the start is answered "send it again").
    pub(crate) fn next_transaction_id(&self) -> Option<i32> {
        self.transaction_ids.next()
    }
}

/// The CertificateSigned CALL carrying `chain`, for `version` (2.x: with the
/// `certificateType` asked for; 2.1: the SignCertificate's `requestId`).
pub(crate) fn certificate_signed(
    version: OcppVersion,
    chain: &str,
    certificate_type: Option<&str>,
    request_id: Option<i32>,
) -> Result<Request, String> {
    let mut payload = serde_json::json!({ "certificateChain": chain });
    if version != OcppVersion::V1_6 {
        if let Some(certificate_type) = certificate_type {
            payload["certificateType"] = certificate_type.into();
        }
    }
    if let (OcppVersion::V2_1, Some(id)) = (version, request_id) {
        payload["requestId"] = id.into();
    }
    crate::command::decode_command(version, "CertificateSigned", &payload.to_string())
        .map_err(|e| format!("CertificateSigned: {e}"))
}
