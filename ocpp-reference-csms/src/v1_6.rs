//! OCPP 1.6 CALLs that the model does not read ([`super::events`] answers the others): each
//! answered from and recorded in the [`ChargePointRecord`] state.

use ocpp_messages::v1_6::{
    DataTransferResponse, DataTransferStatus, GenericStatusEnum, Request, SignCertificateResponse,
};
use ocpp_messages::version::OcppVersion;
use ocpp_proto::{Answer, Response};

use super::{Answering, ChargePointRecord, Context};

/// Answers one OCPP 1.6 CALL the model does not read; `None`: not one of this version's own
/// (a report, acknowledged by the caller, or an action the central system sends).
pub(super) fn handle(
    context: &Context<'_>,
    cp: &mut ChargePointRecord,
    request: &Request,
) -> Option<Answering> {
    let response: ocpp_messages::v1_6::Response = match request {
        // §4.3: Accepted for a vendor we know, UnknownVendorId otherwise.
        Request::DataTransfer(transfer) => {
            let status = context.data_transfer_status(&transfer.vendor_id);
            DataTransferResponse::new(DataTransferStatus::from_wire(status)).into()
        }
        // Security whitepaper §3 (A02/A03): Accepted when the CA (`--ca-cert`) signs the
        // CSR, the CertificateSigned then follows the answer; Rejected otherwise (no CA, or
        // a CSR that fails a check of `CertificateAuthority::sign`).
        Request::SignCertificate(sign) => {
            let accepted = context.sign_certificate(cp, OcppVersion::V1_6, &sign.csr, None, None);
            SignCertificateResponse::new(if accepted {
                GenericStatusEnum::Accepted
            } else {
                GenericStatusEnum::Rejected
            })
            .into()
        }
        _ => return None,
    };
    Some(Answer::Result(Response::from(response)).into())
}
