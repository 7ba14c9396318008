//! OCPP 1.6 handlers: each CALL of a charge point, answered from and recorded in the
//! [`ChargePoint`] state.

use ocpp_messages::v1_6::{
    AuthorizationStatus, AuthorizeResponse, BootNotificationResponse, HeartbeatResponse, IdTagInfo,
    MeterValuesResponse, RegistrationStatus, Request, SampledValue, StartTransactionResponse,
    StatusNotificationResponse, StopTransactionResponse,
};
use ocpp_server_core::Response;

use super::{ChargePoint, Context, MeterReading, Registration, Reply};

/// Answers one OCPP 1.6 CALL.
pub(super) fn handle(context: &Context<'_>, cp: &mut ChargePoint, request: &Request) -> Reply {
    let now = context.now;
    let response: ocpp_messages::v1_6::Response = match request {
        // Core profile, OCPP 1.6 §4.2: accept every charge point, tell it our clock and how
        // often to send Heartbeat.
        Request::BootNotification(boot) => {
            cp.registration = Some(Registration {
                vendor: boot.charge_point_vendor.clone(),
                model: boot.charge_point_model.clone(),
                serial_number: boot
                    .charge_point_serial_number
                    .clone()
                    .or_else(|| boot.charge_box_serial_number.clone()),
                firmware_version: boot.firmware_version.clone(),
                reason: None,
                at: now,
            });
            BootNotificationResponse {
                status: RegistrationStatus::Accepted,
                current_time: context.current_time(),
                interval: context.heartbeat_interval(),
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
                status.connector_id.to_string(),
                status.status.as_str(),
                (error != "NoError").then_some(error),
                now,
            );
            StatusNotificationResponse {}.into()
        }
        // §4.1: this CSMS accepts every idTag; a real one looks it up.
        Request::Authorize(_) => AuthorizeResponse {
            id_tag_info: accepted(),
        }
        .into(),
        // §4.8: the central system assigns the transaction id.
        Request::StartTransaction(start) => {
            let id = context.next_transaction_id();
            cp.start_transaction(
                id.to_string(),
                start.connector_id.to_string(),
                Some(start.id_tag.clone()),
                Some(f64::from(start.meter_start)),
                now,
            );
            StartTransactionResponse {
                id_tag_info: accepted(),
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
                id_tag_info: stop.id_tag.as_ref().map(|_| accepted()),
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
        other => return Reply::not_supported(other.action().as_str()),
    };
    Reply::Result(Response::from(response))
}

fn accepted() -> IdTagInfo {
    IdTagInfo {
        expiry_date: None,
        parent_id_tag: None,
        status: AuthorizationStatus::Accepted,
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
