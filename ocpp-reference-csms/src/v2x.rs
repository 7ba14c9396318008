//! OCPP 2.0.1 and 2.1 CALLs that the model does not read ([`super::events`] answers the
//! concepts): each answered from and recorded in the [`ChargePointRecord`] state. The two versions
//! say these in the same words with distinct types, so one body serves both, instantiated for
//! each version's types by [`handlers_2x`]; the actions only 2.1 has are extra match arms
//! given to the 2.1 instance.
//!
//! Smart charging (NotifyEVChargingNeeds, NotifyEVChargingSchedule) is answered from the
//! policy of [`super::smart_charging`]. Where this CSMS lacks what a real one would need (a
//! VAT register), the answer says so (Failed / Rejected) rather than promise what will never
//! come.
//!
//! Plug & Charge (C07 Authorize with contract certificates, M06 GetCertificateStatus, M01/M02
//! Get15118EVCertificate) needs network round trips (OCSP, the contract-certificate service):
//! those return `Answering::Later`, a job the servers run off their I/O loop, built from
//! [`super::plug_and_charge`].

use ocpp_model::{Authorization, StationEvent};

use super::{Later, Request};

/// C07: the contract-certificate check of a 2.x Authorize that carries a certificate or its
/// hash data, as a job off the I/O loop whose answer is `authorization` (Invalid unless the
/// contract is Accepted, C07.FR.16) with the `certificateStatus` found; `None` for any other
/// request (1.6 has no contract certificates).
pub(super) fn contract_check(
    request: &Request,
    event: &StationEvent,
    authorization: &Authorization,
) -> Option<Later> {
    match request {
        Request::V2_0_1(request) => match &**request {
            ocpp_messages::v2_0_1::Request::Authorize(authorize) => {
                v2_0_1::contract_check(authorize, event, authorization)
            }
            _ => None,
        },
        Request::V2_1(request) => match &**request {
            ocpp_messages::v2_1::Request::Authorize(authorize) => {
                v2_1::contract_check(authorize, event, authorization)
            }
            _ => None,
        },
        _ => None,
    }
}

/// The handlers of one OCPP 2.x version: a module named after the version (`v2_0_1`, `v2_1`)
/// over that version's types, with the `OcppVersion` variant in parentheses. `request_id`
/// is the SignCertificate's `requestId` (2.1 only; `sign` names the request); `extra` are
/// match arms for the version's own actions.
macro_rules! handlers_2x {
    (
        $version:ident ($ocpp_version:ident),
        request_id($sign:ident): $request_id:expr,
        extra($context:ident): { $($extra:tt)* }
    ) => {
        pub(super) mod $version {
            use ocpp_messages::$version::{
                AuthorizeCertificateStatusEnum, AuthorizeRequest, DataTransferResponse,
                DataTransferStatusEnum, GenericStatusEnum, Get15118EVCertificateResponse,
                GetCertificateStatusEnum, GetCertificateStatusResponse,
                Iso15118EVCertificateStatusEnum, NotifyEVChargingNeedsResponse,
                NotifyEVChargingNeedsStatusEnum, NotifyEVChargingScheduleResponse, Request,
                Response, SignCertificateResponse, StatusInfo,
            };
            use ocpp_model::{EventAnswer, Authorization, AuthorizationStatus, StationEvent};
            use ocpp_proto::Answer;

            use super::super::contract_certificate_service::ContractRequest;
            use super::super::ocsp::OcspRequestData;
            use super::super::plug_and_charge::ContractStatus;
            use super::super::{ChargePointRecord, Context, Csms, Later, Answering};
            use super::{additional_info, base64_of, MAX_OCSP_RESULT};

            /// The version's own.
            const VERSION: ocpp_messages::version::OcppVersion =
                ocpp_messages::version::OcppVersion::$ocpp_version;

            /// Answers one CALL of this version that the model does not read; `None`: not
            /// one of this version's own (a report, acknowledged by the caller, or an
            /// action the CSMS sends).
            pub(crate) fn handle(
                context: &Context<'_>,
                cp: &mut ChargePointRecord,
                request: &Request,
            ) -> Option<Answering> {
                // The name the `extra` arms use for the context (macro hygiene).
                #[allow(unused_variables)]
                let $context = context;
                let response: Response = match request {
                    // P01/P02: Accepted for a vendor we know, UnknownVendorId otherwise.
                    Request::DataTransfer(transfer) => {
                        let status = context.data_transfer_status(&transfer.vendor_id);
                        DataTransferResponse::new(DataTransferStatusEnum::from_wire(status)).into()
                    }
                    // K15/K17: Accepted, and a SetChargingProfile for the EVSE's transaction
                    // follows the answer (the share of the site limit, `smart_charging`);
                    // without a transaction on the EVSE, or any limit to send, the version's
                    // "no profile" answer (2.0.1 Rejected, 2.1 NoChargingProfile).
                    Request::NotifyEVChargingNeeds(needs) => {
                        let version = VERSION;
                        let status = if context.charging_needs(cp, version, &serde_json::to_value(needs).unwrap_or_default()) {
                            "Accepted"
                        } else if version == ocpp_messages::version::OcppVersion::V2_1 {
                            "NoChargingProfile"
                        } else {
                            "Rejected"
                        };
                        NotifyEVChargingNeedsResponse::new(
                            NotifyEVChargingNeedsStatusEnum::from_wire(status),
                        )
                        .into()
                    }
                    // K15-K17: Accepted within the profile in force on the EVSE; Rejected
                    // over it, and a new SetChargingProfile follows (renegotiation).
                    Request::NotifyEVChargingSchedule(schedule) => {
                        let version = VERSION;
                        let status = if context.charging_schedule(cp, version, &serde_json::to_value(schedule).unwrap_or_default()) {
                            GenericStatusEnum::Accepted
                        } else {
                            GenericStatusEnum::Rejected
                        };
                        NotifyEVChargingScheduleResponse::new(status).into()
                    }
                    // A02/A03: Accepted when the CA (`--ca-cert`) signs the CSR, the
                    // CertificateSigned then follows the answer; Rejected otherwise (no CA,
                    // or a CSR that fails a check of `CertificateAuthority::sign`).
                    Request::SignCertificate($sign) => {
                        let certificate_type =
                            $sign.certificate_type.as_ref().map(|t| t.as_str());
                        let accepted = context.sign_certificate(
                            cp,
                            VERSION,
                            &$sign.csr,
                            certificate_type,
                            $request_id,
                        );
                        SignCertificateResponse::new(if accepted {
                            GenericStatusEnum::Accepted
                        } else {
                            GenericStatusEnum::Rejected
                        })
                        .into()
                    }
                    // M01/M02: forwarded to the contract-certificate service, off the I/O
                    // loop; Failed without one.
                    Request::Get15118EVCertificate(get) => {
                        if !context.config.plug_and_charge.has_contract_service() {
                            Get15118EVCertificateResponse::new(
                                Iso15118EVCertificateStatusEnum::Failed,
                                "",
                            )
                            .with_status_info(StatusInfo::new("NoService").with_additional_info(
                                "no contract-certificate service (--contract-certificate-service)",
                            ))
                            .into()
                        } else {
                            let request = ContractRequest {
                                action: get.action.as_str().to_owned(),
                                iso15118_schema_version: get.iso15118_schema_version.clone(),
                                exi_request: get.exi_request.clone(),
                            };
                            return Some(Answering::Later(Later::new(move |csms: &Csms| {
                                let forwarded =
                                    csms.config.plug_and_charge.forward_contract_request(&request);
                                let response = match forwarded {
                                    Some(Ok(answer)) => Get15118EVCertificateResponse::new(
                                        if answer.accepted {
                                            Iso15118EVCertificateStatusEnum::Accepted
                                        } else {
                                            Iso15118EVCertificateStatusEnum::Failed
                                        },
                                        answer.exi_response,
                                    ),
                                    Some(Err(error)) => {
                                        tracing::info!(%error, "Get15118EVCertificate failed");
                                        Get15118EVCertificateResponse::new(
                                            Iso15118EVCertificateStatusEnum::Failed,
                                            "",
                                        )
                                        .with_status_info(
                                            StatusInfo::new("ServiceFailed")
                                                .with_additional_info(additional_info(&error)),
                                        )
                                    }
                                    None => Get15118EVCertificateResponse::new(
                                        Iso15118EVCertificateStatusEnum::Failed,
                                        "",
                                    ),
                                };
                                let response: Response = response.into();
                                Answer::Result(response.into())
                            })));
                        }
                    }
                    // M06: the OCSP request made for the station, off the I/O loop; the
                    // DER response relayed (base64), or Failed with the reason.
                    Request::GetCertificateStatus(get) => {
                        let data = &get.ocsp_request_data;
                        let data = OcspRequestData::from_ocpp(
                            data.hash_algorithm.as_str(),
                            &data.issuer_name_hash,
                            &data.issuer_key_hash,
                            &data.serial_number,
                            &data.responder_url,
                        );
                        return Some(Answering::Later(Later::new(move |csms: &Csms| {
                            let outcome = data.and_then(|data| {
                                csms.config
                                    .plug_and_charge
                                    .certificate_status(&data, std::time::SystemTime::now())
                            });
                            let response = match outcome.map(|o| base64_of(&o.response)) {
                                Ok(result) if result.len() <= MAX_OCSP_RESULT => {
                                    GetCertificateStatusResponse::new(
                                        GetCertificateStatusEnum::Accepted,
                                    )
                                    .with_ocsp_result(result)
                                }
                                Ok(result) => GetCertificateStatusResponse::new(
                                    GetCertificateStatusEnum::Failed,
                                )
                                .with_status_info(StatusInfo::new("OCSPFailed").with_additional_info(
                                    format!(
                                        "OCSP response of {} base64 characters (OCPP allows {MAX_OCSP_RESULT})",
                                        result.len()
                                    ),
                                )),
                                Err(error) => {
                                    tracing::info!(%error, "GetCertificateStatus failed");
                                    GetCertificateStatusResponse::new(
                                        GetCertificateStatusEnum::Failed,
                                    )
                                    .with_status_info(
                                        StatusInfo::new("OCSPFailed")
                                            .with_additional_info(additional_info(&error)),
                                    )
                                }
                            };
                            let response: Response = response.into();
                            Answer::Result(response.into())
                        })));
                    }
                    $($extra)*
                    _ => return None,
                };
                Some(Answer::Result(response.into()).into())
            }

            /// C07: see [`super::contract_check`].
            pub(crate) fn contract_check(
                authorize: &AuthorizeRequest,
                event: &StationEvent,
                authorization: &Authorization,
            ) -> Option<Later> {
                let hash_data =
                    authorize.iso15118_certificate_hash_data.as_deref().unwrap_or_default();
                if authorize.certificate.is_none() && hash_data.is_empty() {
                    return None;
                }
                let certificate = authorize.certificate.clone();
                let hash_data = hash_data
                    .iter()
                    .map(|data| {
                        OcspRequestData::from_ocpp(
                            data.hash_algorithm.as_str(),
                            &data.issuer_name_hash,
                            &data.issuer_key_hash,
                            &data.serial_number,
                            &data.responder_url,
                        )
                    })
                    .collect::<Result<Vec<_>, _>>();
                let event = event.clone();
                let mut authorization = authorization.clone();
                Some(Later::new(move |csms: &Csms| {
                    let status = match hash_data {
                        Ok(hash_data) => csms.config.plug_and_charge.check_contract(
                            certificate.as_deref(),
                            &hash_data,
                            std::time::SystemTime::now(),
                        ),
                        Err(error) => {
                            tracing::info!(%error, "Authorize: bad certificate hash data");
                            ContractStatus::CertChainError
                        }
                    };
                    if status != ContractStatus::Accepted {
                        authorization.status = AuthorizationStatus::Invalid;
                    }
                    let answer = EventAnswer::Authorization(authorization);
                    let response = match ocpp_model::respond(&event, &answer, VERSION) {
                        Ok(ocpp_messages::Response::$ocpp_version(response)) => *response,
                        Ok(_) | Err(_) => {
                            return Answer::error(
                                ocpp_messages::error_code::ErrorCode::InternalError,
                                "no Authorize answer in this version's words",
                            )
                        }
                    };
                    // The certificate status is Plug & Charge's own (2.x only): not in the
                    // model's authorization, added to the version's answer.
                    let Response::Authorize(response) = response else {
                        return Answer::error(
                            ocpp_messages::error_code::ErrorCode::InternalError,
                            "an Authorize answered with another action",
                        );
                    };
                    let response: Response = response
                        .with_certificate_status(AuthorizeCertificateStatusEnum::from_wire(
                            status.as_str(),
                        ))
                        .into();
                    Answer::Result(response.into())
                }))
            }
        }
    };
}

/// OCPP's limit on `ocspResult` (2.0.1 and 2.1: string[0..5500]).
const MAX_OCSP_RESULT: usize = 5500;

/// Base64 (RFC 4648 §4, padded), as `ocspResult` carries DER.
fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// An error as `statusInfo.additionalInfo` (at most 512 characters).
fn additional_info(error: &dyn std::fmt::Display) -> String {
    error.to_string().chars().take(512).collect()
}

handlers_2x!(
    v2_0_1(V2_0_1),
    request_id(sign): None,
    extra(context): {}
);
handlers_2x!(v2_1(V2_1), request_id(sign): sign.request_id, extra(context): {
    // 2.1's own charging-station CALLs. Battery swaps (C24), DER alarms, start/stops and
    // control reports (R04-R06), priority charging (K21), settlements (C18) and the closing
    // of periodic event streams are reports: kept as notifications and acknowledged (by
    // `events`, as every version's reports). Opening a stream (N01.x) is Accepted.
    Request::OpenPeriodicEventStream(_) => ocpp_messages::v2_1::OpenPeriodicEventStreamResponse::new(
        GenericStatusEnum::Accepted,
    )
    .into(),
    // No dynamic schedule (K28): Rejected. No VAT register (C20 VatNumberValidation):
    // Rejected, the number echoed as the schema requires.
    Request::PullDynamicScheduleUpdate(_) => {
        ocpp_messages::v2_1::PullDynamicScheduleUpdateResponse::new(
            ocpp_messages::v2_1::ChargingProfileStatusEnum::Rejected,
        )
        .into()
    }
    Request::VatNumberValidation(validation) => {
        ocpp_messages::v2_1::VatNumberValidationResponse::new(
            validation.vat_number.clone(),
            GenericStatusEnum::Rejected,
        )
        .into()
    }
    // 2.1's chain form of M06 (OCSP or CRL per certificate) is not implemented: every
    // certificate of the chain Failed, until its next update in a day. GetCertificateStatus
    // (one certificate, OCSP) is.
    Request::GetCertificateChainStatus(chain) => {
        let next_update = ocpp_messages::DateTime::from_system_time(
            std::time::SystemTime::from(context.now) + std::time::Duration::from_secs(86_400),
        );
        let statuses = chain
            .certificate_status_requests
            .iter()
            .map(|request| {
                ocpp_messages::v2_1::CertificateStatus::new(
                    request.certificate_hash_data.clone(),
                    request.source.clone(),
                    ocpp_messages::v2_1::CertificateStatusEnum::Failed,
                    next_update.clone(),
                )
            })
            .collect();
        ocpp_messages::v2_1::GetCertificateChainStatusResponse::new(statuses).into()
    }
});
