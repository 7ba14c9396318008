//! Smart charging with ISO 15118 EVs (OCPP 2.0.1 and 2.1 K15-K17): a small policy that shares
//! a **site limit** between the EVSEs of a station that have an active transaction, and the
//! charging profiles the CSMS sent, kept per station.
//!
//! # The policy
//!
//! A station's site limit ([`SiteLimit`]: amperes and/or watts) is its own
//! (`PUT /chargepoints/ID/site-limit`) or the CSMS default (`--site-limit-amps`,
//! `--site-limit-watts`). Every EVSE with an active transaction gets an equal share of it,
//! never more than its EV asked for in its last NotifyEVChargingNeeds (AC `evMaxCurrent`,
//! DC `evMaxPower` / `evMaxCurrent`), rounded down to 0.1 ([`share`]). The unit is the one
//! the site limit has; with both (or none), A for an AC EV and W for a DC one. Without a
//! site limit in that unit the EV's own maximum is the limit; with neither, there is nothing
//! to send.
//!
//! # The messages
//!
//! | the station sends | the CSMS answers | and then |
//! | --- | --- | --- |
//! | NotifyEVChargingNeeds, transaction active on the EVSE | `Accepted` | SetChargingProfile (K15.FR.02/03): TxProfile with that `transactionId`, kind Absolute from now, one period at the share (`numberPhases` for AC), the same profile id for the same transaction (a new one replaces the last, K01.FR.05) |
//! | NotifyEVChargingNeeds, no transaction on the EVSE (or no limit at all) | 2.0.1 `Rejected`, 2.1 `NoChargingProfile` | nothing: no transaction to attach a TxProfile to |
//! | NotifyEVChargingSchedule within the profile in force on the EVSE (or no profile) | `Accepted` | nothing |
//! | NotifyEVChargingSchedule over it (a period's limit above ours) | `Rejected` | a new SetChargingProfile for the transaction (renegotiation, K16) |
//!
//! A second NotifyEVChargingNeeds (the EV renegotiates, K17) gets a new profile the same way.
//! When a transaction starts or ends on another EVSE, the share changes: each EVSE holding a
//! profile of ours gets a new one right after that TransactionEvent's answer ([`rebalance`]),
//! so that the station stays within its site limit.
//! The operator renegotiates (K16) with `PUT|DELETE /chargepoints/ID/site-limit` or
//! `POST /chargepoints/ID/renegotiate`: each EVSE with an active transaction gets a new
//! SetChargingProfile (one CALL after another, [`SplitCall::sequence`](super::SplitCall::sequence) when several).
//!
//! Every profile sent, ours or the operator's (`POST /chargepoints/ID/call/SetChargingProfile`),
//! is kept with the station's answer ([`ChargingProfileRecord`]); a ClearChargingProfile by
//! id that the station Accepts marks the profile cleared. The station's own NotifyEVChargingNeeds
//! are kept per EVSE ([`ChargingNeeds`]). Site limits set through the admin API live in memory.

use ocpp_messages::version::OcppVersion;
use ocpp_proto::Request;
use serde_json::{json, Value};

use super::{ChargePointRecord, UnixTime};

mod records;

/// A charging rate unit (`chargingRateUnit`: `A` or `W`): the model's.
pub use ocpp_model::RateUnit;
pub use records::{ChargingProfileRecord, ProfileReason, SmartCharging};

/// The first charging profile id the CSMS gives (per station): clear of the small ids an
/// operator picks by hand for profiles of their own.
pub const FIRST_PROFILE_ID: i32 = 1000;

/// How many charging profiles of each station are kept (the oldest go first).
pub const PROFILES_KEPT: usize = 16;

/// A limit shared by the EVSEs of a station: in amperes (per phase), in watts, or both.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[non_exhaustive]
pub struct SiteLimit {
    /// Amperes (per phase, AC).
    pub amps: Option<f64>,
    /// Watts.
    pub watts: Option<f64>,
}

/// Why a site limit was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SiteLimitError {
    /// Neither `amps` nor `watts`.
    #[error("expected {{\"amps\":A}} and/or {{\"watts\":W}}")]
    Missing,
    /// A value that is not a number above 0.
    #[error("{0} must be a number above 0")]
    NotPositive(&'static str),
}

impl SiteLimit {
    /// A limit of `amps` and/or `watts` (each a finite number above 0).
    ///
    /// ```
    /// use ocpp_reference_csms::SiteLimit;
    /// assert!(SiteLimit::new(Some(32.0), None).is_ok());
    /// assert!(SiteLimit::new(Some(0.0), None).is_err());
    /// assert!(SiteLimit::new(None, None).is_err());
    /// ```
    ///
    /// # Errors
    /// Neither is given, or one is not above 0.
    pub fn new(amps: Option<f64>, watts: Option<f64>) -> Result<SiteLimit, SiteLimitError> {
        if amps.is_none() && watts.is_none() {
            return Err(SiteLimitError::Missing);
        }
        for (name, value) in [("amps", amps), ("watts", watts)] {
            if value.is_some_and(|v| !(v.is_finite() && v > 0.0)) {
                return Err(SiteLimitError::NotPositive(name));
            }
        }
        Ok(SiteLimit { amps, watts })
    }

    /// From a `{"amps":A,"watts":W}` body (either may be left out).
    ///
    /// # Errors
    /// As [`SiteLimit::new`], or a field that is not a number.
    pub fn from_json(body: &Value) -> Result<SiteLimit, SiteLimitError> {
        let field = |name: &'static str| match &body[name] {
            Value::Null => Ok(None),
            value => value
                .as_f64()
                .map(Some)
                .ok_or(SiteLimitError::NotPositive(name)),
        };
        SiteLimit::new(field("amps")?, field("watts")?)
    }

    /// Whether it limits nothing.
    pub fn is_none(&self) -> bool {
        self.amps.is_none() && self.watts.is_none()
    }

    /// The limit in `unit`, if it has one.
    pub fn get(&self, unit: RateUnit) -> Option<f64> {
        match unit {
            RateUnit::Amps => self.amps,
            RateUnit::Watts => self.watts,
            _ => None,
        }
    }

    /// `{"amps","watts"}` (null where unset).
    pub fn to_json(&self) -> Value {
        json!({ "amps": self.amps, "watts": self.watts })
    }
}

/// The voltage assumed to convert amperes and watts when the EV did not say its own
/// (`evMaxVoltage`): the European nominal phase voltage.
pub const NOMINAL_VOLTAGE: f64 = 230.0;

/// What an EV asked for in a NotifyEVChargingNeeds (the fields the policy uses; the same in
/// 2.0.1 and 2.1).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ChargingNeeds {
    /// The EVSE.
    pub evse_id: i32,
    /// The transaction active on the EVSE when they came, if any.
    pub transaction_id: Option<String>,
    /// `requestedEnergyTransfer` (`AC_three_phase`, `DC`...).
    pub energy_transfer: String,
    /// AC `evMaxCurrent` (per phase) or DC `evMaxCurrent`, A.
    pub max_current: Option<f64>,
    /// AC `evMinCurrent`, A.
    pub min_current: Option<f64>,
    /// `evMaxVoltage`, V.
    pub max_voltage: Option<f64>,
    /// DC `evMaxPower`, W.
    pub max_power: Option<f64>,
    /// `energyAmount` (AC) or `energyRequest` (DC), Wh.
    pub energy: Option<f64>,
    /// `maxScheduleTuples`: the most periods the EV takes.
    pub max_schedule_tuples: Option<i64>,
    /// `departureTime`, as sent.
    pub departure_time: Option<String>,
    /// When they came.
    pub at: UnixTime,
}

impl ChargingNeeds {
    /// From a NotifyEVChargingNeeds payload; `None` without an `evseId`.
    pub fn from_request(
        payload: &Value,
        transaction_id: Option<String>,
        at: UnixTime,
    ) -> Option<ChargingNeeds> {
        let evse_id = i32::try_from(payload["evseId"].as_i64()?).ok()?;
        let needs = &payload["chargingNeeds"];
        let ac = &needs["acChargingParameters"];
        let dc = &needs["dcChargingParameters"];
        let number = |value: &Value| value.as_f64();
        Some(ChargingNeeds {
            evse_id,
            transaction_id,
            energy_transfer: needs["requestedEnergyTransfer"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            max_current: number(&ac["evMaxCurrent"]).or(number(&dc["evMaxCurrent"])),
            min_current: number(&ac["evMinCurrent"]),
            max_voltage: number(&ac["evMaxVoltage"]).or(number(&dc["evMaxVoltage"])),
            max_power: number(&dc["evMaxPower"]),
            energy: number(&ac["energyAmount"]).or(number(&dc["energyRequest"])),
            max_schedule_tuples: payload["maxScheduleTuples"].as_i64(),
            departure_time: needs["departureTime"].as_str().map(str::to_owned),
            at,
        })
    }

    /// Whether the EV charges with alternating current (`AC_*`).
    pub fn is_ac(&self) -> bool {
        self.energy_transfer.starts_with("AC")
    }

    /// The phases an AC EV charges on (1 for `AC_single_phase`, else 3); `None` for DC.
    pub fn phases(&self) -> Option<u32> {
        match self.energy_transfer.as_str() {
            "AC_single_phase" => Some(1),
            "AC_two_phase" => Some(2),
            transfer if transfer.starts_with("AC") => Some(3),
            _ => None,
        }
    }

    /// The most the EV takes in `unit`, if it said (watts for an AC EV: its maximum current
    /// times its voltage, or [`NOMINAL_VOLTAGE`], times its phases).
    pub fn max_in(&self, unit: RateUnit) -> Option<f64> {
        match (unit, self.is_ac()) {
            (RateUnit::Amps, _) => self.max_current,
            (RateUnit::Watts, false) => self.max_power,
            (RateUnit::Watts, true) => {
                let volts = self.max_voltage.unwrap_or(NOMINAL_VOLTAGE);
                let phases = f64::from(self.phases().unwrap_or(3));
                self.max_current.map(|amps| amps * volts * phases)
            }
            _ => None,
        }
    }

    /// As the admin API shows them.
    pub fn to_json(&self) -> Value {
        json!({
            "evse_id": self.evse_id,
            "transaction_id": self.transaction_id,
            "requested_energy_transfer": self.energy_transfer,
            "ev_max_current": self.max_current,
            "ev_min_current": self.min_current,
            "ev_max_voltage": self.max_voltage,
            "ev_max_power": self.max_power,
            "energy": self.energy,
            "max_schedule_tuples": self.max_schedule_tuples,
            "departure_time": self.departure_time,
            "at": self.at.date_time().as_str(),
        })
    }
}

/// One EVSE's share of the site limit: a `limit` in `unit`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Share {
    /// The unit.
    pub unit: RateUnit,
    /// The limit, rounded down to 0.1.
    pub limit: f64,
}

/// The unit of an EVSE's profile: the one the site limit has; with both or none, the EV's
/// own (A for AC, W for DC; A when its needs are not known).
pub fn unit_for(site: SiteLimit, needs: Option<&ChargingNeeds>) -> RateUnit {
    let preferred = match needs {
        Some(needs) if !needs.is_ac() => RateUnit::Watts,
        _ => RateUnit::Amps,
    };
    match (site.amps, site.watts) {
        (Some(_), None) => RateUnit::Amps,
        (None, Some(_)) => RateUnit::Watts,
        _ => preferred,
    }
}

/// The share of one EVSE among `sharing` EVSEs with an active transaction (at least 1): the
/// site limit divided equally, never above what the EV asked for, rounded down to 0.1; the
/// EV's maximum alone without a site limit in that unit; `None` with neither.
///
/// ```
/// use ocpp_reference_csms::smart_charging::{share, RateUnit, Share};
/// use ocpp_reference_csms::SiteLimit;
/// let site = SiteLimit::new(Some(32.0), None).unwrap();
/// assert_eq!(share(site, 2, None), Some(Share { unit: RateUnit::Amps, limit: 16.0 }));
/// assert_eq!(share(site, 3, None).unwrap().limit, 10.6);
/// ```
pub fn share(site: SiteLimit, sharing: usize, needs: Option<&ChargingNeeds>) -> Option<Share> {
    let unit = unit_for(site, needs);
    let sharing = u32::try_from(sharing.max(1)).unwrap_or(u32::MAX);
    let equal = site.get(unit).map(|limit| limit / f64::from(sharing));
    let asked = needs.and_then(|needs| needs.max_in(unit));
    let limit = match (equal, asked) {
        (Some(equal), Some(asked)) => equal.min(asked),
        (Some(limit), None) | (None, Some(limit)) => limit,
        (None, None) => return None,
    };
    Some(Share {
        unit,
        limit: round_down(limit),
    })
}

/// Rounded down to one decimal (the schemas' `multipleOf 0.1` in 1.6; a limit we send must
/// never exceed the share). The small epsilon keeps 16.0 from becoming 15.9.
fn round_down(value: f64) -> f64 {
    ((value * 10.0) + 1e-9).floor() / 10.0
}

/// The SetChargingProfile payload (2.0.1 and 2.1 alike) for a transaction's profile: a
/// TxProfile, kind Absolute from `start`, one period at `share` (with `numberPhases` for an
/// AC EV limited in amperes).
pub fn set_charging_profile(
    profile_id: i32,
    evse_id: i32,
    transaction_id: &str,
    share: Share,
    needs: Option<&ChargingNeeds>,
    start: &str,
) -> Value {
    let mut period = json!({ "startPeriod": 0, "limit": share.limit });
    if share.unit == RateUnit::Amps {
        if let Some(phases) = needs.and_then(ChargingNeeds::phases) {
            period["numberPhases"] = phases.into();
        }
    }
    json!({
        "evseId": evse_id,
        "chargingProfile": {
            "id": profile_id,
            "stackLevel": 0,
            "chargingProfilePurpose": "TxProfile",
            "chargingProfileKind": "Absolute",
            "transactionId": transaction_id,
            "chargingSchedule": [{
                "id": profile_id,
                "startSchedule": start,
                "chargingRateUnit": share.unit.as_str(),
                "chargingSchedulePeriod": [period],
            }],
        },
    })
}

/// The first schedule's unit and highest period limit of a `chargingProfile` (or of a
/// `chargingSchedule` itself), if it has them.
pub fn schedule_limit(schedule: &Value) -> Option<(RateUnit, f64)> {
    let schedule = match &schedule["chargingSchedule"] {
        Value::Array(list) => list.first()?,
        Value::Null => schedule,
        other => other,
    };
    let unit = RateUnit::from_wire(schedule["chargingRateUnit"].as_str()?)?;
    let highest = schedule["chargingSchedulePeriod"]
        .as_array()?
        .iter()
        .filter_map(|period| period["limit"].as_f64())
        .fold(None, |highest: Option<f64>, limit| {
            Some(highest.map_or(limit, |h| h.max(limit)))
        })?;
    Some((unit, highest))
}

/// What the check of an EV's schedule found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ScheduleCheck {
    /// Every period within our limit (or no limit of ours to check against).
    Within,
    /// A period asks for `asked` (in our unit) where our limit is `limit`.
    Exceeds {
        /// The EV's highest period limit, in our unit.
        asked: f64,
        /// Ours.
        limit: f64,
    },
}

/// Checks the EV's `chargingSchedule` (NotifyEVChargingSchedule, K15-K17) against `ours`
/// (the unit and limit of the profile in force on its EVSE). A schedule in the other unit is
/// converted with the EV's voltage ([`NOMINAL_VOLTAGE`] when not known) and phases (3 when
/// not known).
///
/// ```
/// use ocpp_reference_csms::smart_charging::{check_schedule, RateUnit, ScheduleCheck};
/// let ev = serde_json::json!({"chargingRateUnit": "A",
///                             "chargingSchedulePeriod": [{"startPeriod": 0, "limit": 100.0}]});
/// let ours = Some((RateUnit::Amps, 16.0));
/// assert_eq!(check_schedule(&ev, ours, None), ScheduleCheck::Exceeds { asked: 100.0, limit: 16.0 });
/// ```
pub fn check_schedule(
    schedule: &Value,
    ours: Option<(RateUnit, f64)>,
    needs: Option<&ChargingNeeds>,
) -> ScheduleCheck {
    let (Some((unit, limit)), Some((ev_unit, asked))) = (ours, schedule_limit(schedule)) else {
        return ScheduleCheck::Within;
    };
    let volts = needs.and_then(|n| n.max_voltage).unwrap_or(NOMINAL_VOLTAGE);
    let phases = f64::from(needs.and_then(ChargingNeeds::phases).unwrap_or(3));
    let asked = match (ev_unit, unit) {
        (RateUnit::Amps, RateUnit::Watts) => asked * volts * phases,
        (RateUnit::Watts, RateUnit::Amps) => asked / (volts * phases),
        _ => asked,
    };
    // A hair of slack for the EV's own rounding.
    if asked > limit + 0.05 {
        ScheduleCheck::Exceeds { asked, limit }
    } else {
        ScheduleCheck::Within
    }
}

/// The EVSE id of a 2.x connector label (`"1/1"`).
fn evse_of(connector: &str) -> Option<i32> {
    connector.split('/').next()?.parse().ok()
}

/// The active transaction on `evse_id`, if any.
pub fn active_transaction(cp: &ChargePointRecord, evse_id: i32) -> Option<&str> {
    cp.transactions
        .iter()
        .rev()
        .find(|t| t.is_active() && evse_of(&t.connector) == Some(evse_id))
        .map(|t| t.id.as_str())
}

/// The EVSEs with an active transaction, each once, in order.
pub fn charging_evses(cp: &ChargePointRecord) -> Vec<i32> {
    let mut evses: Vec<i32> = cp
        .transactions
        .iter()
        .filter(|t| t.is_active())
        .filter_map(|t| evse_of(&t.connector))
        .collect();
    evses.sort_unstable();
    evses.dedup();
    evses
}

/// The SetChargingProfile the policy gives the transaction on `evse_id` now, recorded as
/// sent for `reason`; `None` when there is no transaction on it or no limit to send (or the
/// payload does not decode for `version`, logged).
pub fn profile_for(
    cp: &mut ChargePointRecord,
    default: SiteLimit,
    version: OcppVersion,
    evse_id: i32,
    reason: ProfileReason,
    now: UnixTime,
) -> Option<Request> {
    let transaction = active_transaction(cp, evse_id)?.to_owned();
    let sharing = charging_evses(cp).len();
    let state = &mut cp.extras.get_mut().smart_charging;
    let site = state.site_limit.unwrap_or(default);
    let needs = state.needs_of(evse_id, &transaction).cloned();
    let share = share(site, sharing, needs.as_ref())?;
    let id = state.profile_id_for(evse_id, &transaction);
    let start = now.date_time();
    let payload = set_charging_profile(
        id,
        evse_id,
        &transaction,
        share,
        needs.as_ref(),
        start.as_str(),
    );
    match crate::command::decode_command(version, "SetChargingProfile", &payload.to_string()) {
        Ok(request) => {
            tracing::info!(identity = %cp.identity, evse_id, transaction, limit = share.limit, unit = share.unit.as_str(), reason = reason.as_str(), "SetChargingProfile");
            state.sent(ChargingProfileRecord::new(&payload, reason, now));
            Some(request)
        }
        Err(e) => {
            tracing::warn!(identity = %cp.identity, evse_id, "SetChargingProfile: {e}");
            None
        }
    }
}

/// A new profile for every EVSE with an active transaction (K16: the site limit changed, or
/// the operator asks), each recorded as sent.
pub fn renegotiate(
    cp: &mut ChargePointRecord,
    default: SiteLimit,
    version: OcppVersion,
    now: UnixTime,
) -> Vec<Request> {
    charging_evses(cp)
        .into_iter()
        .filter_map(|evse| {
            profile_for(
                cp,
                default,
                version,
                evse,
                ProfileReason::Renegotiation,
                now,
            )
        })
        .collect()
}

/// After the EVSEs in transaction changed (`before`: those before the message): a new
/// profile for each other EVSE whose profile of ours is in force and whose share is now
/// another (a second EV arrived and the site limit is shared by more, or one left), each
/// recorded as sent. The EVSE whose transaction started gets its own at its EV's
/// NotifyEVChargingNeeds.
pub fn rebalance(
    cp: &mut ChargePointRecord,
    before: &[i32],
    default: SiteLimit,
    version: OcppVersion,
    now: UnixTime,
) -> Vec<Request> {
    let now_charging = charging_evses(cp);
    if now_charging == before {
        return Vec::new();
    }
    let sharing = now_charging.len();
    let mut requests = Vec::new();
    for evse in now_charging {
        let Some(transaction) = active_transaction(cp, evse).map(str::to_owned) else {
            continue;
        };
        let state = &cp.extras.smart_charging;
        let ours = state.profiles.iter().rev().find(|p| {
            p.reason != ProfileReason::Operator
                && p.evse_id == i64::from(evse)
                && p.transaction_id.as_deref() == Some(transaction.as_str())
        });
        let Some(in_force) = ours
            .filter(|p| p.in_force())
            .and_then(|p| schedule_limit(&p.profile))
        else {
            continue;
        };
        let site = state.site_limit.unwrap_or(default);
        let fresh = share(site, sharing, state.needs_of(evse, &transaction));
        if fresh.map(|s| (s.unit, s.limit)) == Some(in_force) {
            continue;
        }
        let reason = ProfileReason::Renegotiation;
        requests.extend(profile_for(cp, default, version, evse, reason, now));
    }
    requests
}

/// What a NotifyEVChargingNeeds (`payload`) is answered, after keeping the needs: `Accepted`
/// with the SetChargingProfile to follow, or `None` (the version's "no profile" answer) when
/// no transaction is active on the EVSE or there is no limit to send.
pub fn on_charging_needs(
    cp: &mut ChargePointRecord,
    default: SiteLimit,
    version: OcppVersion,
    payload: &Value,
    now: UnixTime,
) -> Option<Request> {
    let evse_id = i32::try_from(payload["evseId"].as_i64()?).ok()?;
    let transaction = active_transaction(cp, evse_id).map(str::to_owned);
    let needs = ChargingNeeds::from_request(payload, transaction.clone(), now)?;
    cp.extras.get_mut().smart_charging.note_needs(needs);
    transaction?;
    profile_for(
        cp,
        default,
        version,
        evse_id,
        ProfileReason::ChargingNeeds,
        now,
    )
}

/// What a NotifyEVChargingSchedule (`payload`) is answered: `Ok(())` (Accepted) when the
/// EV's schedule keeps within the profile in force on its EVSE, else `Err` with the new
/// SetChargingProfile to follow the Rejected answer, if the policy gives one.
pub fn on_charging_schedule(
    cp: &mut ChargePointRecord,
    default: SiteLimit,
    version: OcppVersion,
    payload: &Value,
    now: UnixTime,
) -> Result<(), Option<Request>> {
    let Some(evse_id) = payload["evseId"]
        .as_i64()
        .and_then(|id| i32::try_from(id).ok())
    else {
        return Ok(());
    };
    let Some(transaction) = active_transaction(cp, evse_id).map(str::to_owned) else {
        return Ok(());
    };
    let state = &cp.extras.smart_charging;
    let needs = state.needs_of(evse_id, &transaction);
    let ours = state.limit_in_force(evse_id, &transaction).or_else(|| {
        let site = state.site_limit.unwrap_or(default);
        let sharing = charging_evses(cp).len();
        share(site, sharing, needs).map(|s| (s.unit, s.limit))
    });
    match check_schedule(&payload["chargingSchedule"], ours, needs) {
        ScheduleCheck::Within => Ok(()),
        ScheduleCheck::Exceeds { asked, limit } => {
            tracing::info!(identity = %cp.identity, evse_id, asked, limit, "EV charging schedule over our limit: Rejected, renegotiating");
            Err(profile_for(
                cp,
                default,
                version,
                evse_id,
                ProfileReason::ScheduleRejected,
                now,
            ))
        }
    }
}

impl super::Context<'_> {
    /// NotifyEVChargingNeeds (any 2.x version's payload): keeps the needs and queues the
    /// SetChargingProfile to follow the answer; whether there is one (Accepted).
    pub(super) fn charging_needs(
        &self,
        cp: &mut ChargePointRecord,
        version: OcppVersion,
        payload: &Value,
    ) -> bool {
        let profile =
            on_charging_needs(cp, self.config.get_site_limit(), version, payload, self.now);
        let accepted = profile.is_some();
        self.follow_up_with(cp, profile);
        accepted
    }

    /// NotifyEVChargingSchedule (any 2.x version's payload): whether it is Accepted; when
    /// not, the renegotiated SetChargingProfile is queued to follow the answer.
    pub(super) fn charging_schedule(
        &self,
        cp: &mut ChargePointRecord,
        version: OcppVersion,
        payload: &Value,
    ) -> bool {
        match on_charging_schedule(cp, self.config.get_site_limit(), version, payload, self.now) {
            Ok(()) => true,
            Err(profile) => {
                self.follow_up_with(cp, profile);
                false
            }
        }
    }

    /// Queues `profile`, if there is one, to follow the answer.
    fn follow_up_with(&self, cp: &mut ChargePointRecord, profile: Option<Request>) {
        if let Some(profile) = profile {
            self.follow_up(cp, profile);
        }
    }
}

#[cfg(test)]
mod tests;
