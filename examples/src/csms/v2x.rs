//! OCPP 2.0.1 and 2.1 handlers, written once: each CALL of a charging station, answered from
//! and recorded in the [`ChargePoint`] state. The two versions' messages differ only in
//! optional fields these handlers leave unset, so one body serves both, instantiated for each
//! version's types by [`handlers_2x`]; the actions only 2.1 has are extra match arms given
//! to the 2.1 instance.
//!
//! Reports (NotifyEvent, NotifyReport, the status notifications...) are kept by
//! `Csms::on_call` as notifications; here they are only acknowledged. Smart charging
//! (NotifyEVChargingNeeds, NotifyEVChargingSchedule) is answered from the policy of
//! [`super::smart_charging`]. Where this CSMS lacks what a real one would need (a VAT
//! register), the answer says so (Failed / Rejected) rather than promise what will never come.
//!
//! Plug & Charge (C07 Authorize with contract certificates, M06 GetCertificateStatus, M01/M02
//! Get15118EVCertificate) needs network round trips (OCSP, the contract-certificate service):
//! those arms return `Reply::Later`, a job the servers run off their I/O loop, built from
//! [`super::plug_and_charge`].

/// The handlers of one OCPP 2.x version: a module named after the version (`v2_0_1`, `v2_1`)
/// over that version's types, with the `OcppVersion` variant in parentheses. `central` is the
/// `IdToken` type `Central` of the version (an enum in 2.0.1, a string in 2.1); `request_id`
/// the SignCertificate's `requestId` (2.1 only; `sign` names the request); `extra` are match
/// arms for the version's own actions.
macro_rules! handlers_2x {
    (
        $version:ident ($ocpp_version:ident),
        central: $central:expr,
        request_id($sign:ident): $request_id:expr,
        extra($context:ident): { $($extra:tt)* }
    ) => {
        pub(super) mod $version {
            use ocpp_messages::$version::{
                AuthorizationStatusEnum, AuthorizeResponse, BootNotificationResponse,
                ClearedChargingLimitResponse, DataTransferResponse, DataTransferStatusEnum,
                FirmwareStatusNotificationResponse, GenericStatusEnum,
                Get15118EVCertificateResponse, GetCertificateStatusEnum,
                GetCertificateStatusResponse, HeartbeatResponse, IdToken, IdTokenInfo,
                Iso15118EVCertificateStatusEnum, LogStatusNotificationResponse, MeterValue,
                MeterValuesResponse, NotifyChargingLimitResponse,
                NotifyCustomerInformationResponse, NotifyDisplayMessagesResponse,
                NotifyEVChargingNeedsResponse, NotifyEVChargingNeedsStatusEnum,
                NotifyEVChargingScheduleResponse, NotifyEventResponse,
                NotifyMonitoringReportResponse, NotifyReportResponse,
                PublishFirmwareStatusNotificationResponse, RegistrationStatusEnum,
                ReportChargingProfilesResponse, Request, ReservationStatusUpdateResponse,
                Response, SecurityEventNotificationResponse, SignCertificateResponse,
                StatusNotificationResponse, TransactionEventEnum, TransactionEventResponse,
            };

            use ocpp_messages::$version::{AuthorizeCertificateStatusEnum, StatusInfo};
            use ocpp_messages::version::OcppVersion;
            use ocpp_server_core::Answer;

            use super::super::contract_certificate_service::ContractRequest;
            use super::super::ocsp::OcspRequestData;
            use super::super::plug_and_charge::ContractStatus;
            use super::super::{
                Authorization, ChargePoint, Context, Csms, Later, MeterReading, Registration,
                Reply,
            };
            use super::{additional_info, base64_of, MAX_OCSP_RESULT};

            /// Answers one CALL of this version.
            pub(in crate::csms) fn handle(
                context: &Context<'_>,
                cp: &mut ChargePoint,
                request: &Request,
            ) -> Reply {
                let now = context.now;
                // The name the `extra` arms use for the context (macro hygiene).
                #[allow(unused_variables)]
                let $context = context;
                let response: Response = match request {
                    // B01-B03: the boot policy, our clock, and the heartbeat interval (or,
                    // when not Accepted, when to boot again).
                    Request::BootNotification(boot) => {
                        let station = &boot.charging_station;
                        cp.registration = Some(Registration::new(
                            &station.vendor_name,
                            &station.model,
                            station.serial_number.as_deref(),
                            station.firmware_version.as_deref(),
                            Some(boot.reason.as_str()),
                            now,
                        ));
                        let policy = context.boot_policy(cp);
                        context.booted(cp, policy);
                        BootNotificationResponse::new(
                            context.current_time(),
                            context.boot_interval(policy),
                            RegistrationStatusEnum::from_wire(policy.as_str()),
                        )
                        .into()
                    }
                    // G02.
                    Request::Heartbeat(_) => {
                        cp.last_heartbeat = Some(now);
                        HeartbeatResponse::new(context.current_time()).into()
                    }
                    // G01: connectors are numbered within their EVSE.
                    Request::StatusNotification(status) => {
                        cp.set_connector_status(
                            &format!("{}/{}", status.evse_id, status.connector_id),
                            status.connector_status.as_str(),
                            None,
                            now,
                        );
                        StatusNotificationResponse::default().into()
                    }
                    // C01: from the token store (every idToken Accepted without one).
                    // C07: with a contract certificate (`certificate`, a PEM chain) or its
                    // hash data, the contract is checked (chain, then OCSP) off the I/O
                    // loop; anything but Accepted makes the token Invalid (C07.FR.16).
                    Request::Authorize(authorize) => {
                        let info = id_token_info(context, &authorize.id_token);
                        let hash_data =
                            authorize.iso15118_certificate_hash_data.as_deref().unwrap_or_default();
                        if authorize.certificate.is_none() && hash_data.is_empty() {
                            AuthorizeResponse::new(info).into()
                        } else {
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
                            return Reply::Later(Later::new(move |csms: &Csms| {
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
                                let mut info = info;
                                if status != ContractStatus::Accepted {
                                    info.status = AuthorizationStatusEnum::Invalid;
                                }
                                let response: Response = AuthorizeResponse::new(info)
                                    .with_certificate_status(
                                        AuthorizeCertificateStatusEnum::from_wire(status.as_str()),
                                    )
                                    .into();
                                Answer::Result(response.into())
                            }));
                        }
                    }
                    // E01-E07: the station names the transaction; Started, Updated..., Ended.
                    Request::TransactionEvent(event) => {
                        let info = &event.transaction_info;
                        let connector = event
                            .evse
                            .as_ref()
                            .map(|evse| format!("{}/{}", evse.id, evse.connector_id.unwrap_or(1)));
                        let id_tag = event.id_token.as_ref().map(|t| t.id_token.clone());
                        let readings = event.meter_value.iter().flatten().flat_map(readings);
                        let keep = context.config.ended_transactions_kept;
                        // E: seqNo grows by one per event of a transaction; a jump means
                        // lost messages.
                        let gaps_kept = context.config.notifications_kept;
                        let seq_no = i64::from(event.seq_no);
                        cp.note_seq_no(&info.transaction_id, seq_no, gaps_kept, now);
                        // I02/I03: with a tariff, the final cost answers Ended and the
                        // running cost of an Updated that brings meter values goes in a
                        // CostUpdated (2.1: in the answer too, where its schema allows it).
                        let tariff = context.tariff(cp);
                        let metered = event.meter_value.as_ref().is_some_and(|m| !m.is_empty());
                        let mut final_cost = None;
                        let mut running_cost = None;
                        match event.event_type {
                            TransactionEventEnum::Ended => {
                                // The cost of a transaction never seen before its end is
                                // not known: no totalCost (0 would say it was free).
                                let known = cp.transaction_mut(&info.transaction_id).is_some();
                                if let Some(transaction) = cp.transaction_mut(&info.transaction_id)
                                {
                                    ChargePoint::record_meter(transaction, readings);
                                }
                                let reason = info.stopped_reason.as_ref().map(|r| r.as_str());
                                cp.end_transaction(
                                    &info.transaction_id,
                                    connector,
                                    None,
                                    reason,
                                    keep,
                                    now,
                                );
                                if let Some(transaction) = cp.transaction_mut(&info.transaction_id)
                                {
                                    transaction.last_seq_no = Some(seq_no);
                                    final_cost = tariff
                                        .filter(|_| known)
                                        .map(|t| t.cost_of(transaction, now));
                                }
                            }
                            _ => {
                                // Started, or Updated for a transaction we did not see start.
                                let transaction = cp.start_transaction(
                                    info.transaction_id.clone(),
                                    connector.unwrap_or_default(),
                                    id_tag.clone(),
                                    None,
                                    now,
                                );
                                if transaction.id_tag.is_none() {
                                    transaction.id_tag = id_tag.clone();
                                }
                                transaction.last_seq_no.get_or_insert(seq_no);
                                if let Some(state) = &info.charging_state {
                                    transaction.charging_state = Some(state.as_str().into());
                                }
                                ChargePoint::record_meter(transaction, readings);
                                if metered && event.event_type == TransactionEventEnum::Updated {
                                    running_cost = tariff.map(|t| t.cost_of(transaction, now));
                                }
                            }
                        }
                        let mut response = TransactionEventResponse::default();
                        if let Some(cost) = final_cost {
                            response = response.with_total_cost(cost.total_cost());
                        }
                        if let Some(cost) = running_cost {
                            let version = OcppVersion::$ocpp_version;
                            if version == OcppVersion::V2_1 {
                                response = response.with_total_cost(cost.total_cost());
                            }
                            context.cost_updated(cp, version, &info.transaction_id, cost);
                        }
                        // idTokenInfo answers an event that carries an idToken (E03), from
                        // the token store.
                        if let Some(token) = &event.id_token {
                            response = response.with_id_token_info(id_token_info(context, token));
                        }
                        response.into()
                    }
                    // J01: samples outside a transaction go to the EVSE's active one, if any.
                    Request::MeterValues(values) => {
                        let prefix = format!("{}/", values.evse_id);
                        let transaction = cp
                            .transactions
                            .iter_mut()
                            .rev()
                            .find(|t| t.is_active() && t.connector.starts_with(&prefix));
                        if let Some(transaction) = transaction {
                            ChargePoint::record_meter(
                                transaction,
                                values.meter_value.iter().flat_map(readings),
                            );
                        }
                        MeterValuesResponse::default().into()
                    }
                    // P01/P02: Accepted for a vendor we know, UnknownVendorId otherwise.
                    Request::DataTransfer(transfer) => {
                        let status = if context.knows_vendor(&transfer.vendor_id) {
                            DataTransferStatusEnum::Accepted
                        } else {
                            DataTransferStatusEnum::UnknownVendorId
                        };
                        DataTransferResponse::new(status).into()
                    }
                    // Reports and status notifications, kept by `Csms::on_call`:
                    // B07/B08 NotifyReport, N07/N02 NotifyEvent and NotifyMonitoringReport,
                    // N09/N10 NotifyCustomerInformation, O03/O04 NotifyDisplayMessages,
                    // K11-K14 charging limits, K09/K10 ReportChargingProfiles, H05
                    // ReservationStatusUpdate, L01/L03 firmware, N01 logs, A04 security
                    // events.
                    Request::NotifyEvent(_) => NotifyEventResponse::default().into(),
                    Request::NotifyReport(_) => NotifyReportResponse::default().into(),
                    Request::NotifyMonitoringReport(_) => {
                        NotifyMonitoringReportResponse::default().into()
                    }
                    Request::NotifyCustomerInformation(_) => {
                        NotifyCustomerInformationResponse::default().into()
                    }
                    Request::NotifyDisplayMessages(_) => {
                        NotifyDisplayMessagesResponse::default().into()
                    }
                    Request::NotifyChargingLimit(_) => NotifyChargingLimitResponse::default().into(),
                    Request::ClearedChargingLimit(_) => {
                        ClearedChargingLimitResponse::default().into()
                    }
                    Request::ReportChargingProfiles(_) => {
                        ReportChargingProfilesResponse::default().into()
                    }
                    Request::ReservationStatusUpdate(_) => {
                        ReservationStatusUpdateResponse::default().into()
                    }
                    Request::FirmwareStatusNotification(_) => {
                        FirmwareStatusNotificationResponse::default().into()
                    }
                    Request::PublishFirmwareStatusNotification(_) => {
                        PublishFirmwareStatusNotificationResponse::default().into()
                    }
                    Request::LogStatusNotification(_) => {
                        LogStatusNotificationResponse::default().into()
                    }
                    Request::SecurityEventNotification(_) => {
                        SecurityEventNotificationResponse::default().into()
                    }
                    // K15/K17: Accepted, and a SetChargingProfile for the EVSE's transaction
                    // follows the answer (the share of the site limit, `smart_charging`);
                    // without a transaction on the EVSE, or any limit to send, the version's
                    // "no profile" answer (2.0.1 Rejected, 2.1 NoChargingProfile).
                    Request::NotifyEVChargingNeeds(needs) => {
                        let version = ocpp_messages::version::OcppVersion::$ocpp_version;
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
                        let version = ocpp_messages::version::OcppVersion::$ocpp_version;
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
                            ocpp_messages::version::OcppVersion::$ocpp_version,
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
                            return Reply::Later(Later::new(move |csms: &Csms| {
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
                            }));
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
                        return Reply::Later(Later::new(move |csms: &Csms| {
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
                        }));
                    }
                    $($extra)*
                    // A CALL the CSMS sends, not the station.
                    other => return Answer::not_supported(other.action().as_str()).into(),
                };
                Answer::Result(response.into()).into()
            }

            /// The answer for a token as 2.x `idTokenInfo`: from the token store, except
            /// `NoAuthorization` (the station lets the driver charge without a token, C01).
            fn id_token_info(context: &Context<'_>, token: &IdToken) -> IdTokenInfo {
                let authorization = if token.r#type.as_str() == "NoAuthorization" {
                    Authorization::accepted()
                } else {
                    context.authorize(&token.id_token)
                };
                let mut info = IdTokenInfo::new(AuthorizationStatusEnum::from_wire(
                    authorization.status.as_str(),
                ));
                if let Some(group) = authorization.group {
                    info = info.with_group_id_token(IdToken::new(group, $central));
                }
                if let Some(expiry) = authorization.expiry {
                    info = info.with_cache_expiry_date_time(expiry);
                }
                info
            }

            fn readings(value: &MeterValue) -> impl Iterator<Item = MeterReading<'_>> {
                value.sampled_value.iter().map(|sample| {
                    let unit = sample.unit_of_measure.as_ref();
                    MeterReading {
                        measurand: sample.measurand.as_ref().map(|m| m.as_str()),
                        // The ledger keeps readings as f64 (SQL REAL): converted at this
                        // edge. TODO(issue 39): Decimal through the ledger and its store.
                        value: sample.value.to_f64(),
                        unit: unit.and_then(|u| u.unit.as_deref()),
                        multiplier: unit.and_then(|u| u.multiplier).unwrap_or(0),
                    }
                })
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
    central: ocpp_messages::v2_0_1::IdTokenEnum::Central,
    request_id(sign): None,
    extra(context): {}
);
handlers_2x!(v2_1(V2_1), central: "Central", request_id(sign): sign.request_id, extra(context): {
    // 2.1's own charging-station CALLs. Battery swaps (C24), DER alarms, start/stops and
    // control reports (R04-R06), priority charging (K21), settlements (C18) and periodic
    // event streams (N01.x) are kept as notifications and acknowledged.
    Request::BatterySwap(_) => ocpp_messages::v2_1::BatterySwapResponse::default().into(),
    Request::NotifyDERAlarm(_) => ocpp_messages::v2_1::NotifyDERAlarmResponse::default().into(),
    Request::NotifyDERStartStop(_) => {
        ocpp_messages::v2_1::NotifyDERStartStopResponse::default().into()
    }
    Request::ReportDERControl(_) => {
        ocpp_messages::v2_1::ReportDERControlResponse::default().into()
    }
    Request::NotifyPriorityCharging(_) => {
        ocpp_messages::v2_1::NotifyPriorityChargingResponse::default().into()
    }
    Request::NotifySettlement(_) => {
        ocpp_messages::v2_1::NotifySettlementResponse::default().into()
    }
    Request::OpenPeriodicEventStream(_) => ocpp_messages::v2_1::OpenPeriodicEventStreamResponse::new(
        GenericStatusEnum::Accepted,
    )
    .into(),
    Request::ClosePeriodicEventStream(_) => {
        ocpp_messages::v2_1::ClosePeriodicEventStreamResponse::default().into()
    }
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
        let next_update = super::super::date_time(std::time::SystemTime::from(context.now) + std::time::Duration::from_secs(86_400));
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
