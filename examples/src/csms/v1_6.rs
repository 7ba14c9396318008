//! OCPP 1.6 handlers: each CALL of a charge point, answered from and recorded in the
//! [`ChargePoint`] state.

use ocpp_messages::v1_6::{
    AuthorizationStatus, AuthorizeResponse, BootNotificationResponse, DataTransferResponse,
    DataTransferStatus, DiagnosticsStatusNotificationResponse, FirmwareStatusNotificationResponse,
    GenericStatusEnum, HeartbeatResponse, IdTagInfo, LogStatusNotificationResponse,
    MeterValuesResponse, RegistrationStatus, Request, SampledValue,
    SecurityEventNotificationResponse, SignCertificateResponse,
    SignedFirmwareStatusNotificationResponse, StartTransactionResponse, StatusNotificationResponse,
    StopTransactionResponse,
};
use ocpp_messages::version::OcppVersion;
use ocpp_server_core::{Answer, Response};

use super::{Authorization, ChargePoint, Context, MeterReading, Registration, Reply, Transaction};

/// Answers one OCPP 1.6 CALL.
pub(super) fn handle(context: &Context<'_>, cp: &mut ChargePoint, request: &Request) -> Reply {
    let now = context.now;
    let response: ocpp_messages::v1_6::Response = match request {
        // Core profile, OCPP 1.6 §4.2: answer with the boot policy, our clock and how often
        // to send Heartbeat (or, when not Accepted, when to boot again).
        Request::BootNotification(boot) => {
            cp.registration = Some(Registration::new(
                &boot.charge_point_vendor,
                &boot.charge_point_model,
                boot.charge_point_serial_number
                    .as_deref()
                    .or(boot.charge_box_serial_number.as_deref()),
                boot.firmware_version.as_deref(),
                None,
                now,
            ));
            let policy = context.boot_policy(cp);
            context.booted(cp, policy);
            BootNotificationResponse {
                status: RegistrationStatus::from_wire(policy.as_str()),
                current_time: context.current_time(),
                interval: context.boot_interval(policy),
            }
            .into()
        }
        Request::Heartbeat(_) => {
            cp.last_heartbeat = Some(now);
            HeartbeatResponse {
                current_time: context.current_time(),
            }
            .into()
        }
        // §4.9: connectorId 0 is the charge point as a whole.
        Request::StatusNotification(status) => {
            let error = status.error_code.as_str();
            cp.set_connector_status(
                &status.connector_id.to_string(),
                status.status.as_str(),
                (error != "NoError").then_some(error),
                now,
            );
            StatusNotificationResponse {}.into()
        }
        // §4.1: from the token store (every idTag Accepted without one).
        Request::Authorize(authorize) => AuthorizeResponse {
            id_tag_info: id_tag_info(context.authorize(&authorize.id_tag)),
        }
        .into(),
        // §4.8: the central system assigns the transaction id, even for an idTag it refuses
        // (the charge point then stops the transaction, §5.x StopTransactionOnInvalidId).
        // The same StartTransaction sent again (its answer lost, or refused while the
        // database was away and then committed after all) is the same transaction: it gets
        // the id it was given, recognised by the charge point's own words.
        Request::StartTransaction(start) => {
            let authorization = context.authorize(&start.id_tag);
            let key = format!(
                "{}|{}|{}|{}|{}",
                start.connector_id,
                start.id_tag,
                start.timestamp.as_str(),
                start.meter_start,
                start
                    .reservation_id
                    .map_or(String::new(), |r| r.to_string()),
            );
            let same = |t: &&Transaction| t.start_key.as_deref() == Some(key.as_str());
            let given = cp.transactions.iter().find(same);
            // Not committed yet (its commit failed, perhaps after writing it): the same id
            // again, and the same commit.
            let tried = context.unconfirmed.iter().find(same);
            let id = match given.or(tried).and_then(|t| t.id.parse::<i32>().ok()) {
                Some(id) if given.is_some() => id,
                tried => {
                    let id = tried.unwrap_or_else(|| context.next_transaction_id());
                    cp.start_transaction(
                        id.to_string(),
                        start.connector_id.to_string(),
                        Some(start.id_tag.clone()),
                        Some(f64::from(start.meter_start)),
                        now,
                    )
                    .start_key = Some(key);
                    id
                }
            };
            StartTransactionResponse {
                id_tag_info: id_tag_info(authorization),
                transaction_id: id,
            }
            .into()
        }
        // §4.10: always accepted, even for a transaction we do not know (the charge point
        // would retry forever otherwise).
        Request::StopTransaction(stop) => {
            let id = stop.transaction_id.to_string();
            if let (Some(transaction), Some(data)) =
                (cp.transaction_mut(&id), &stop.transaction_data)
            {
                let readings = data.iter().flat_map(|d| &d.sampled_value).filter_map(|s| {
                    Some(MeterReading {
                        measurand: s.measurand.as_ref().map(|m| m.as_str()),
                        value: s.value.parse().ok()?,
                        unit: s.unit.as_ref().map(|u| u.as_str()),
                        multiplier: 0,
                    })
                });
                ChargePoint::record_meter(transaction, readings);
            }
            cp.end_transaction(
                &id,
                None,
                Some(f64::from(stop.meter_stop)),
                stop.reason.as_ref().map(|r| r.as_str()),
                context.config.ended_transactions_kept,
                now,
            );
            StopTransactionResponse {
                id_tag_info: stop
                    .id_tag
                    .as_ref()
                    .map(|tag| id_tag_info(context.authorize(tag))),
            }
            .into()
        }
        // §4.7: samples go to the transaction named, else to the connector's active one.
        Request::MeterValues(values) => {
            let connector = values.connector_id.to_string();
            let transaction = match values.transaction_id {
                Some(id) => cp.transaction_mut(&id.to_string()),
                None => cp.active_transaction_on(&connector),
            };
            if let Some(transaction) = transaction {
                let readings = values
                    .meter_value
                    .iter()
                    .flat_map(|v| &v.sampled_value)
                    .filter_map(reading);
                ChargePoint::record_meter(transaction, readings);
            }
            MeterValuesResponse {}.into()
        }
        // §4.3: Accepted for a vendor we know, UnknownVendorId otherwise.
        Request::DataTransfer(transfer) => {
            let status = if context.knows_vendor(&transfer.vendor_id) {
                DataTransferStatus::Accepted
            } else {
                DataTransferStatus::UnknownVendorId
            };
            DataTransferResponse::new(status).into()
        }
        // §4.4, §4.5 and the security whitepaper §4-§5: kept as notifications (see
        // `Csms::on_call`), acknowledged.
        Request::DiagnosticsStatusNotification(_) => {
            DiagnosticsStatusNotificationResponse::default().into()
        }
        Request::FirmwareStatusNotification(_) => {
            FirmwareStatusNotificationResponse::default().into()
        }
        Request::LogStatusNotification(_) => LogStatusNotificationResponse::default().into(),
        Request::SecurityEventNotification(_) => {
            SecurityEventNotificationResponse::default().into()
        }
        Request::SignedFirmwareStatusNotification(_) => {
            SignedFirmwareStatusNotificationResponse::default().into()
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
        // A CALL the central system sends, not the charge point.
        other => return Answer::not_supported(other.action().as_str()).into(),
    };
    Answer::Result(Response::from(response)).into()
}

/// An authorization as 1.6 `idTagInfo` (2.x-only statuses become Invalid).
fn id_tag_info(authorization: Authorization) -> IdTagInfo {
    IdTagInfo {
        expiry_date: authorization.expiry,
        // 1.6 idTags are at most 20 characters; a longer group cannot be sent.
        parent_id_tag: authorization.group.filter(|g| g.chars().count() <= 20),
        status: AuthorizationStatus::from_wire(authorization.status.as_v1_6_str()),
    }
}

fn reading(sample: &SampledValue) -> Option<MeterReading<'_>> {
    Some(MeterReading {
        measurand: sample.measurand.as_ref().map(|m| m.as_str()),
        // 1.6 sends values as text; a signed value (format SignedData) does not parse.
        value: sample.value.parse().ok()?,
        unit: sample.unit.as_ref().map(|u| u.as_str()),
        multiplier: 0,
    })
}
