//! The admin API's JSON: how it shows charge points, transactions, tokens and tariffs, and how
//! it reads what an operator sends.

use ocpp_model::AuthorizationStatus;
use ocpp_proto::{ChargePointIdentity, Response};
use serde_json::{json, Value};

use super::{AdminRequest, HttpResponse};
use crate::store::TransactionQuery;
use crate::{
    BootPolicy, ChangeError, ChargePointRecord, Csms, Currency, Price, Tariff, TokenEntry,
    Transaction, TransactionStatusCheck, UnixTime,
};

pub(super) fn response_json(response: &Response) -> Value {
    serde_json::to_value(response).unwrap_or(Value::Null)
}

/// 200 with `show(cp)`, 404 for a charge point never seen, 400 for a bad identity.
pub(super) fn with_charge_point(
    csms: &Csms,
    identity: &str,
    show: impl FnOnce(&ChargePointRecord) -> Value,
) -> HttpResponse {
    match parse_identity(identity) {
        Ok(identity) => match csms.charge_point(&identity) {
            Some(cp) => HttpResponse::json(200, &show(&cp)),
            None => HttpResponse::error(404, &format!("unknown charge point {identity}")),
        },
        Err(response) => response,
    }
}

pub(super) fn body_json(request: &AdminRequest) -> Result<Value, String> {
    serde_json::from_slice(&request.body).map_err(|e| format!("body is not JSON: {e}"))
}

/// A token from a PUT body `{"status", "group"?, "expiry"?}`.
pub(super) fn token_entry(request: &AdminRequest) -> Result<TokenEntry, String> {
    let body = body_json(request)?;
    let status = body["status"]
        .as_str()
        .and_then(AuthorizationStatus::from_wire)
        .ok_or_else(|| {
            let all: Vec<&str> = AuthorizationStatus::ALL
                .iter()
                .map(|s| s.as_str())
                .collect();
            format!("`status` must be one of {}", all.join(", "))
        })?;
    let mut entry = TokenEntry::new(status);
    match &body["group"] {
        Value::Null => {}
        Value::String(group) if !group.is_empty() && group.chars().count() <= 36 => {
            entry = entry.with_group(group.as_str());
        }
        _ => return Err("`group` must be a string of 1 to 36 characters".into()),
    }
    match &body["expiry"] {
        Value::Null => {}
        Value::String(expiry) => {
            let expiry = ocpp_messages::DateTime::parse(expiry)
                .map_err(|_| format!("`expiry` {expiry:?} is not an RFC 3339 date-time"))?;
            entry = entry.with_expiry(expiry);
        }
        _ => return Err("`expiry` must be an RFC 3339 date-time".into()),
    }
    Ok(entry)
}

/// What our GetTransactionStatus after a seqNo gap found: `{"asked":true}` while unanswered,
/// `{"ongoing_indicator","messages_in_queue","at"}`, or `{"failed": outcome}`.
pub(super) fn transaction_status_json(check: &TransactionStatusCheck) -> Value {
    match check {
        TransactionStatusCheck::Asked => json!({ "asked": true }),
        TransactionStatusCheck::Answered {
            ongoing,
            messages_in_queue,
            at,
        } => json!({
            "ongoing_indicator": ongoing,
            "messages_in_queue": messages_in_queue,
            "at": time_json(*at),
        }),
        TransactionStatusCheck::Failed(outcome) => json!({ "failed": outcome }),
    }
}

/// A tariff as the admin API shows it: prices as decimal strings (exact), the currency.
pub(super) fn tariff_json(tariff: &Tariff) -> Value {
    json!({
        "price_per_kwh": tariff.per_kwh.to_string(),
        "price_per_hour": tariff.per_hour.to_string(),
        "currency": tariff.currency.as_str(),
    })
}

/// The tariff of a `PUT /chargepoints/ID/tariff` body `{"price_per_kwh", "price_per_hour",
/// "currency"?}`: prices as decimal strings or JSON numbers (read as their shortest
/// decimal), at least one of them (the other is 0); the currency defaults to the default
/// tariff's, else EUR.
pub(super) fn tariff_of(
    body: &Value,
    default_currency: Option<Currency>,
) -> Result<Tariff, String> {
    let price = |name: &str| -> Result<Option<Price>, String> {
        let text = match &body[name] {
            Value::Null => return Ok(None),
            Value::String(text) => text.clone(),
            Value::Number(number) => number.to_string(),
            _ => return Err(format!("`{name}` must be a decimal such as \"0.25\"")),
        };
        text.parse()
            .map(Some)
            .map_err(|e: crate::TariffError| e.to_string())
    };
    let (per_kwh, per_hour) = (price("price_per_kwh")?, price("price_per_hour")?);
    if per_kwh.is_none() && per_hour.is_none() {
        return Err(
            "expected {\"price_per_kwh\":\"0.25\",\"price_per_hour\":\"1.00\",\"currency\":\"EUR\"}"
                .into(),
        );
    }
    let currency = match &body["currency"] {
        Value::Null => default_currency.unwrap_or(Currency::EUR),
        Value::String(code) => code
            .parse()
            .map_err(|e: crate::TariffError| e.to_string())?,
        _ => return Err("`currency` must be an ISO 4217 code such as \"EUR\"".into()),
    };
    Ok(Tariff::new(
        per_kwh.unwrap_or(Price::ZERO),
        per_hour.unwrap_or(Price::ZERO),
        currency,
    ))
}

/// A transaction as the admin API shows it; with a tariff, its `cost` so far (final once
/// ended) and `currency`, derived from what is stored (energy, start, end) with the
/// station's tariff as it is now ([`Tariff::cost_of`]).
pub(super) fn transaction_json(t: &Transaction, tariff: Option<Tariff>, now: UnixTime) -> Value {
    let cost = tariff.map(|tariff| tariff.cost_of(t, now));
    json!({
        "id": t.id,
        "connector": t.connector,
        "id_tag": t.id_tag,
        "started": time_json(t.started),
        "ended": t.ended.map(time_json),
        "stop_reason": t.stop_reason,
        "charging_state": t.charging_state,
        "meter_start_wh": t.meter_start_wh,
        "meter_last_wh": t.meter_last_wh,
        "energy_wh": t.energy_wh(),
        "samples": t.samples,
        "last_seq_no": t.last_seq_no,
        "cost": cost.map(|c| c.total_cost()),
        "currency": tariff.map(|t| t.currency.as_str().to_owned()),
        "signed_meter": t.signed_meter.as_ref().map(|m| json!({
            "data": m.data,
            "encoding": m.encoding,
            "check": m.check,
        })),
    })
}

/// `GET /transactions` and `GET /chargepoints/ID/transactions`: from the store (every node's,
/// on a database the nodes share), the latest started first.
pub(super) fn stored_transactions(
    csms: &Csms,
    identity: Option<&str>,
    open_only: bool,
) -> HttpResponse {
    let query = TransactionQuery {
        identity: identity.map(str::to_owned),
        open_only,
        limit: TRANSACTIONS_LIMIT,
    };
    match csms.stored_transactions(query) {
        Ok(found) => {
            let now = UnixTime::now();
            let mut tariffs = std::collections::HashMap::new();
            let list: Vec<Value> = found
                .iter()
                .map(|(identity, t)| {
                    let tariff = *tariffs
                        .entry(identity.as_str())
                        .or_insert_with(|| csms.tariff_for(identity));
                    let mut value = transaction_json(t, tariff, now);
                    value["identity"] = json!(identity);
                    value
                })
                .collect();
            HttpResponse::json(200, &Value::Array(list))
        }
        Err(e) => HttpResponse::error(503, &format!("the database failed: {e}")),
    }
}

/// The most transactions one `GET /transactions` lists.
pub const TRANSACTIONS_LIMIT: usize = 1000;

/// The answer to an operator's change: 200 with `body`, or the error's status.
pub(super) fn changed(result: Result<(), ChangeError>, body: Value) -> HttpResponse {
    match result {
        Ok(()) => HttpResponse::json(200, &body),
        Err(e) => HttpResponse::error(e.http_status(), &e.to_string()),
    }
}

pub(super) fn token_json(entry: &TokenEntry) -> Value {
    json!({
        "status": entry.status.as_str(),
        "group": entry.group,
        "expiry": entry.expiry.as_ref().map(|e| e.as_str()),
    })
}

pub(super) fn notifications_json(list: &std::collections::VecDeque<crate::Notification>) -> Value {
    list.iter()
        .map(|n| json!({ "at": time_json(n.at), "payload": n.payload }))
        .collect()
}

pub(super) fn parse_identity(segment: &str) -> Result<ChargePointIdentity, HttpResponse> {
    ChargePointIdentity::from_path(&format!("/{segment}"), false)
        .map_err(|e| HttpResponse::error(400, &format!("bad identity: {e}")))
}

pub(super) fn time_json(time: UnixTime) -> Value {
    Value::String(time.date_time().as_str().to_owned())
}

/// A charge point as the admin API shows it.
///
/// `default_tariff` is the CSMS's ([`CsmsConfig::get_tariff`](crate::CsmsConfig::get_tariff)): the transactions'
/// cost uses the station's own tariff, else that one.
pub fn charge_point_json(cp: &ChargePointRecord, default_tariff: Option<Tariff>) -> Value {
    let connectors: serde_json::Map<String, Value> = cp
        .connectors
        .iter()
        .map(|(label, state)| {
            let mut value = json!({ "status": &*state.status, "at": time_json(state.at) });
            if let Some(code) = &state.error_code {
                value["error_code"] = json!(&**code);
            }
            (label.to_string(), value)
        })
        .collect();
    let tariff = cp.extras.tariff.or(default_tariff);
    let now = UnixTime::now();
    let transactions: Vec<Value> = cp
        .transactions
        .iter()
        .map(|t| transaction_json(t, tariff, now))
        .collect();
    // Per kind: how many arrived, when the last did, and its `status` if it has one
    // (FirmwareStatusNotification, LogStatusNotification...). The payloads are at
    // `/chargepoints/ID/notifications`.
    let notifications: serde_json::Map<String, Value> = cp
        .extras
        .notification_counts
        .iter()
        .map(|(kind, count)| {
            let last = cp
                .extras
                .notifications
                .get(kind)
                .and_then(|list| list.back());
            let value = json!({
                "count": count,
                "last_at": last.map(|n| time_json(n.at)),
                "last_status": last.and_then(|n| n.payload.get("status")).cloned(),
            });
            ((*kind).to_owned(), value)
        })
        .collect();
    json!({
        "identity": cp.identity.as_str(),
        "connected": cp.session.is_some(),
        "version": cp.session.as_ref().map(|s| s.version.as_str()),
        "connected_since": cp.session.as_ref().map(|s| time_json(s.since)),
        "status": cp.status(),
        "boot": cp.registration.as_ref().map(|r| json!({
            "vendor": &*r.vendor,
            "model": &*r.model,
            "serial_number": r.serial_number.as_deref(),
            "firmware_version": r.firmware_version.as_deref(),
            "reason": r.reason.as_deref(),
            "at": time_json(r.at),
        })),
        "last_heartbeat": cp.last_heartbeat.map(time_json),
        "connectors": connectors,
        "transactions": transactions,
        "boot_policy": cp.boot_policy.map(BootPolicy::as_str),
        "items_per_message": cp.extras.items_per_message.to_json(),
        "smart_charging": cp.extras.smart_charging.to_json(),
        "notifications": notifications,
        "certificate": cp.extras.certificate.as_ref().map(|c| json!({
            "requested_at": time_json(c.requested_at),
            "certificate_type": c.certificate_type,
            "status": c.status,
            "reason": c.reason,
            "serial": c.serial,
            "not_after": c.not_after,
            "answer": c.answer,
            "answered_at": c.answered_at.map(time_json),
        })),
        "tariff": cp.extras.tariff.as_ref().map(tariff_json),
        "cost_updates": cp.extras.cost_updates.iter().map(|u| json!({
            "transaction": u.transaction,
            "total_cost": u.total_cost.total_cost(),
            "at": time_json(u.at),
            "answer": u.answer,
        })).collect::<Vec<_>>(),
        "client_certificate": cp.extras.client_certificate.as_ref().map(|c| json!({
            "common_name": c.common_name,
        })),
        "seq_no_gaps": {
            "count": cp.extras.seq_no_gap_count,
            "recent": cp.extras.seq_no_gaps.iter().map(|g| json!({
                "transaction": g.transaction,
                "expected": g.expected,
                "received": g.received,
                "at": time_json(g.at),
                "transaction_status": g.check.as_ref().map(transaction_status_json),
            })).collect::<Vec<_>>(),
        },
    })
}
