//! OCPP 2.0.1 and 2.1 handlers, written once: each CALL of a charging station, answered from
//! and recorded in the [`ChargePoint`] state. The two versions' messages differ only in
//! optional fields these handlers leave unset, so one body serves both, instantiated for each
//! version's types by [`handlers_2x`].

/// The handlers of one OCPP 2.x version: a module named after the version (`v2_0_1`, `v2_1`)
/// over that version's types.
macro_rules! handlers_2x {
    ($version:ident) => {
        pub(super) mod $version {
            use ocpp_messages::$version::{
                AuthorizationStatusEnum, AuthorizeResponse, BootNotificationResponse,
                HeartbeatResponse, IdTokenInfo, MeterValue, MeterValuesResponse,
                RegistrationStatusEnum, Request, Response, StatusNotificationResponse,
                TransactionEventEnum, TransactionEventResponse,
            };

            use super::super::{ChargePoint, Context, MeterReading, Registration, Reply};

            /// Answers one CALL of this version.
            pub(in crate::csms) fn handle(
                context: &Context<'_>,
                cp: &mut ChargePoint,
                request: &Request,
            ) -> Reply {
                let now = context.now;
                let response: Response = match request {
                    // B01: accept every station, tell it our clock and the heartbeat interval.
                    Request::BootNotification(boot) => {
                        let station = &boot.charging_station;
                        cp.registration = Some(Registration {
                            vendor: station.vendor_name.clone(),
                            model: station.model.clone(),
                            serial_number: station.serial_number.clone(),
                            firmware_version: station.firmware_version.clone(),
                            reason: Some(boot.reason.as_str().into()),
                            at: now,
                        });
                        BootNotificationResponse::new(
                            context.current_time(),
                            context.heartbeat_interval(),
                            RegistrationStatusEnum::Accepted,
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
                            format!("{}/{}", status.evse_id, status.connector_id),
                            status.connector_status.as_str(),
                            None,
                            now,
                        );
                        StatusNotificationResponse::default().into()
                    }
                    // C01: this CSMS accepts every idToken; a real one looks it up.
                    Request::Authorize(_) => AuthorizeResponse::new(accepted()).into(),
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
                        match event.event_type {
                            TransactionEventEnum::Ended => {
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
                                if let Some(state) = &info.charging_state {
                                    transaction.charging_state = Some(state.as_str().into());
                                }
                                ChargePoint::record_meter(transaction, readings);
                            }
                        }
                        let mut response = TransactionEventResponse::default();
                        // idTokenInfo answers an event that carries an idToken (E03).
                        if id_tag.is_some() {
                            response = response.with_id_token_info(accepted());
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
                    other => return Reply::not_supported(other.action().as_str()),
                };
                Reply::Result(response.into())
            }

            fn accepted() -> IdTokenInfo {
                IdTokenInfo::new(AuthorizationStatusEnum::Accepted)
            }

            fn readings(value: &MeterValue) -> impl Iterator<Item = MeterReading<'_>> {
                value.sampled_value.iter().map(|sample| {
                    let unit = sample.unit_of_measure.as_ref();
                    MeterReading {
                        measurand: sample.measurand.as_ref().map(|m| m.as_str()),
                        value: sample.value,
                        unit: unit.and_then(|u| u.unit.as_deref()),
                        multiplier: unit.and_then(|u| u.multiplier).unwrap_or(0),
                    }
                })
            }
        }
    };
}

handlers_2x!(v2_0_1);
handlers_2x!(v2_1);
