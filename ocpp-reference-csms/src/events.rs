//! What a charge point's CALL means, answered once for every version: one route per concept of
//! the protocol ([`ocpp_model::StationEvent`]), then the version's response made by
//! [`ocpp_model::respond`] (checked against its schema).
//!
//! | concept | handled in | recorded |
//! | --- | --- | --- |
//! | `Booted` | [`booted`] | the registration, what the boot policy answered |
//! | `Heartbeat` | here | the last heartbeat |
//! | `StatusChanged` | [`status_changed`] | the connector's status |
//! | `AuthorizationRequested` | [`authorization`] (a 2.x contract certificate: [`super::v2x`]) | nothing |
//! | `TransactionStarted` / `Updated` / `Ended`, `MeterReadings` | [`super::transactions`] | the transaction |
//! | `SecurityEvent`, `FirmwareStatus`, `LogStatus` | here | kept as notifications by `Csms::handle` |
//! | `Other` (what the model does not read) | [`super::v1_6`], [`super::v2x`], else acknowledged | per action |
//!
//! Per-version code remains only where the versions say different things: the actions the
//! model does not read (DataTransfer, SignCertificate, Plug & Charge, smart charging, 2.1's
//! own), and, in the concepts, the few places each names below.

use ocpp_messages::error_code::ErrorCode;
use ocpp_messages::version::OcppVersion;
use ocpp_model::{
    AuthorizationStatus, BootAnswer, Booted, EventAnswer, IdToken, IdTokenType, RegistrationStatus,
    StationEvent, StatusChanged,
};
use ocpp_proto::{Answer, Request};

use super::{
    transactions, v1_6, v2x, Answering, BootDetails, BootPolicy, ChargePointRecord, Context,
};

/// Answers one CALL of a charge point of any version.
pub(super) fn handle(
    context: &Context<'_>,
    cp: &mut ChargePointRecord,
    request: &Request,
) -> Answering {
    let version = request.version();
    let event = StationEvent::from_request(request);
    let answer = match &event {
        StationEvent::Booted(boot) => EventAnswer::Boot(booted(context, cp, boot)),
        // 1.6 §4.6, 2.x G02.
        StationEvent::Heartbeat(_) => {
            cp.last_heartbeat = Some(context.now);
            EventAnswer::heartbeat(context.current_time())
        }
        StationEvent::StatusChanged(status) => {
            status_changed(context, cp, status, version);
            EventAnswer::Received
        }
        // 1.6 §4.1, 2.x C01; C07 (2.x only): a contract certificate is checked off the I/O
        // loop, and the answer then says how it went.
        StationEvent::AuthorizationRequested(asked) => {
            let authorization = authorization(context, &asked.token, version);
            if let Some(job) = v2x::contract_check(request, &event, &authorization) {
                return Answering::Later(job);
            }
            EventAnswer::Authorization(authorization)
        }
        StationEvent::TransactionStarted(start) => {
            match transactions::started(context, cp, start, version) {
                Ok(answer) => answer,
                Err(error) => return Answer::Error(error).into(),
            }
        }
        StationEvent::TransactionUpdated(update) => {
            transactions::updated(context, cp, update, version)
        }
        StationEvent::TransactionEnded(end) => transactions::ended(context, cp, end, version),
        StationEvent::MeterReadings(readings) => {
            transactions::meter_readings(cp, readings, version);
            EventAnswer::Received
        }
        // Reports: kept as notifications (`Csms::handle`), acknowledged.
        StationEvent::SecurityEvent(_)
        | StationEvent::FirmwareStatus(_)
        | StationEvent::LogStatus(_) => EventAnswer::Received,
        _ => return other(context, cp, request, event),
    };
    respond(&event, &answer, version)
}

/// A CALL the model does not read: the version's own handlers, else, for a report or a
/// notification (NotifyReport, NotifyEvent, ReservationStatusUpdate...), the empty answer
/// that acknowledges it in every version, else NotSupported (an action the CSMS sends).
fn other(
    context: &Context<'_>,
    cp: &mut ChargePointRecord,
    request: &Request,
    event: StationEvent,
) -> Answering {
    let own = match request {
        Request::V1_6(request) => v1_6::handle(context, cp, request),
        Request::V2_0_1(request) => v2x::v2_0_1::handle(context, cp, request),
        Request::V2_1(request) => v2x::v2_1::handle(context, cp, request),
        _ => None,
    };
    if let Some(reply) = own {
        return reply;
    }
    match ocpp_model::respond(&event, &EventAnswer::Received, request.version()) {
        Ok(response) => Answer::Result(response).into(),
        Err(_) => Answer::not_supported(request.action()).into(),
    }
}

/// The version's response for `answer`, or InternalError when the model refuses it (an
/// answer this CSMS made wrong: a bug, said to the charge point rather than hidden).
pub(super) fn respond(
    event: &StationEvent,
    answer: &EventAnswer,
    version: OcppVersion,
) -> Answering {
    match ocpp_model::respond(event, answer, version) {
        Ok(response) => Answer::Result(response).into(),
        Err(error) => {
            tracing::error!(%error, event = event.name(), "no answer in the version's words");
            Answer::error(ErrorCode::InternalError, error.to_string()).into()
        }
    }
}

/// 1.6 §4.2, 2.x B01-B03: records the registration and answers with the boot policy, our
/// clock, and the heartbeat interval (or, when not Accepted, when to boot again).
fn booted(context: &Context<'_>, cp: &mut ChargePointRecord, boot: &Booted) -> BootAnswer {
    cp.registration = Some(BootDetails::new(
        &boot.vendor,
        &boot.model,
        boot.serial.as_deref(),
        boot.firmware.as_deref(),
        boot.raw_reason.as_deref(),
        context.now,
    ));
    let mut policy = context.boot_policy(cp);
    let mut interval_s = u32::try_from(context.boot_interval(policy)).unwrap_or(0);
    if policy == BootPolicy::Accepted {
        if let Some(after) = context.admit_boot(cp.identity.as_str()) {
            // The boot rate is reached: Pending until the slot kept for this charge point.
            policy = BootPolicy::Pending;
            interval_s = after;
        }
    }
    context.booted(cp, policy);
    BootAnswer {
        status: RegistrationStatus::from_wire(policy.as_str())
            .unwrap_or(RegistrationStatus::Rejected),
        interval_s,
        current_time: context.current_time(),
    }
}

/// 1.6 §4.9 (connectorId 0 is the charge point as a whole), 2.x G01. The connector's label
/// is the version's: 1.6 numbers connectors, 2.x numbers them within their EVSE
/// ([`transactions::connector_label`]); the status is kept as sent (1.6 `Charging` says
/// more than the neutral `Occupied`), and a 1.6 error code other than `NoError` with it.
fn status_changed(
    context: &Context<'_>,
    cp: &mut ChargePointRecord,
    status: &StatusChanged,
    version: OcppVersion,
) {
    let label = transactions::connector_label(version, Some(status.evse), status.connector)
        .unwrap_or_default();
    let error = status
        .error_code
        .as_deref()
        .filter(|code| *code != "NoError");
    cp.set_connector_status(&label, &status.raw_status, error, context.now);
}

/// The answer for a token: from the token store (every token Accepted without one), except a
/// 2.x `NoAuthorization` token (the station lets the driver charge without one, C01).
pub(super) fn authorization(
    context: &Context<'_>,
    token: &IdToken,
    version: OcppVersion,
) -> ocpp_model::Authorization {
    let mut authorization = if token.kind == IdTokenType::NoAuthorization {
        ocpp_model::Authorization::new(AuthorizationStatus::Accepted)
    } else {
        context.authorize(&token.value)
    };
    // 1.6 idTags (and so its parentIdTag) are at most 20 characters: a longer group cannot
    // be said in 1.6, and is left out rather than cut.
    authorization.group = authorization
        .group
        .filter(|group| version != OcppVersion::V1_6 || group.value.chars().count() <= 20);
    authorization
}
