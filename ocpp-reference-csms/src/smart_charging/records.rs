//! What the CSMS remembers of the charging profiles it sent: why, to which EVSE, what the
//! station answered, the newest few per charge point.

use std::collections::VecDeque;

use serde_json::{json, Value};

use super::{schedule_limit, ChargingNeeds, RateUnit, SiteLimit, FIRST_PROFILE_ID, PROFILES_KEPT};
use crate::UnixTime;

/// Why a charging profile was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileReason {
    /// After a NotifyEVChargingNeeds (K15, K17).
    ChargingNeeds,
    /// After a NotifyEVChargingSchedule we Rejected (renegotiation).
    ScheduleRejected,
    /// The operator changed the site limit or asked to renegotiate (K16).
    Renegotiation,
    /// The operator sent it (`POST /chargepoints/ID/call/SetChargingProfile`).
    Operator,
}

impl ProfileReason {
    /// For the admin API.
    pub fn as_str(self) -> &'static str {
        match self {
            ProfileReason::ChargingNeeds => "ChargingNeeds",
            ProfileReason::ScheduleRejected => "ScheduleRejected",
            ProfileReason::Renegotiation => "Renegotiation",
            ProfileReason::Operator => "Operator",
        }
    }
}

/// A SetChargingProfile sent to a station, and its answer.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ChargingProfileRecord {
    /// `evseId`.
    pub evse_id: i64,
    /// `chargingProfile.id`.
    pub id: Option<i64>,
    /// `chargingProfile.transactionId`, if any.
    pub transaction_id: Option<String>,
    /// The `chargingProfile` as sent.
    pub profile: Value,
    /// Why it was sent.
    pub reason: ProfileReason,
    /// When it was handed to the connection.
    pub sent_at: UnixTime,
    /// The station's answer: its `status` (`Accepted`, `Rejected`), or `CALLERROR <code>`,
    /// `Timeout`, or another failure's name (`deadline_passed`, `queue_full`: not sent);
    /// `None` while pending.
    pub answer: Option<String>,
    /// When the answer came.
    pub answered_at: Option<UnixTime>,
    /// Whether a ClearChargingProfile of its id was Accepted since.
    pub cleared: bool,
}

impl ChargingProfileRecord {
    /// A record of the SetChargingProfile `payload`, sent now for `reason` (a 1.6 profile's
    /// `chargingProfileId` and integer `transactionId` read as 2.x's `id` and text).
    pub fn new(payload: &Value, reason: ProfileReason, sent_at: UnixTime) -> Self {
        let profile = payload["chargingProfile"].clone();
        let transaction_id = &profile["transactionId"];
        ChargingProfileRecord {
            evse_id: payload["evseId"].as_i64().unwrap_or(0),
            id: profile["id"]
                .as_i64()
                .or_else(|| profile["chargingProfileId"].as_i64()),
            transaction_id: transaction_id
                .as_str()
                .map(str::to_owned)
                .or_else(|| transaction_id.as_i64().map(|id| id.to_string())),
            profile,
            reason,
            sent_at,
            answer: None,
            answered_at: None,
            cleared: false,
        }
    }

    /// Whether it may be in force: not cleared, and Accepted or not answered yet.
    pub fn in_force(&self) -> bool {
        !self.cleared && matches!(self.answer.as_deref(), None | Some("Accepted"))
    }

    /// As the admin API shows it.
    pub fn to_json(&self) -> Value {
        json!({
            "evse_id": self.evse_id,
            "id": self.id,
            "transaction_id": self.transaction_id,
            "reason": self.reason.as_str(),
            "sent_at": self.sent_at.date_time().as_str(),
            "answer": self.answer,
            "answered_at": self.answered_at.map(|at| at.date_time().as_str().to_owned()),
            "cleared": self.cleared,
            "charging_profile": self.profile,
        })
    }
}

/// A station's smart-charging state: its own site limit, its EVs' last charging needs per
/// EVSE, the charging profiles sent to it.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct SmartCharging {
    /// Its own site limit (`PUT /chargepoints/ID/site-limit`); `None`: the CSMS default.
    pub site_limit: Option<SiteLimit>,
    /// The last NotifyEVChargingNeeds of each EVSE, by EVSE id.
    pub needs: Vec<ChargingNeeds>,
    /// The last [`PROFILES_KEPT`] SetChargingProfile sent, oldest first.
    pub profiles: VecDeque<ChargingProfileRecord>,
    /// The last profile id the CSMS gave (0: none yet).
    last_profile_id: i32,
    /// ClearChargingProfile CALLs sent and not answered: the profile id each clears, if by id.
    pending_clears: VecDeque<Option<i64>>,
}

impl SmartCharging {
    /// No limit, needs or profiles (a `const` for the records without extras).
    pub const EMPTY: SmartCharging = SmartCharging {
        site_limit: None,
        needs: Vec::new(),
        profiles: VecDeque::new(),
        last_profile_id: 0,
        pending_clears: VecDeque::new(),
    };

    /// Keeps an EV's needs (replacing the EVSE's last).
    pub fn note_needs(&mut self, needs: ChargingNeeds) {
        self.needs.retain(|n| n.evse_id != needs.evse_id);
        self.needs.push(needs);
    }

    /// The needs of the EV on `evse_id` in `transaction_id`.
    pub fn needs_of(&self, evse_id: i32, transaction_id: &str) -> Option<&ChargingNeeds> {
        self.needs
            .iter()
            .find(|n| n.evse_id == evse_id && n.transaction_id.as_deref() == Some(transaction_id))
    }

    /// The profile id for the transaction's profile: the one the CSMS gave it before (so
    /// that a new profile replaces the last, K01.FR.05), else a new one.
    pub fn profile_id_for(&mut self, evse_id: i32, transaction_id: &str) -> i32 {
        let earlier = self.profiles.iter().rev().find(|p| {
            p.reason != ProfileReason::Operator
                && p.evse_id == i64::from(evse_id)
                && p.transaction_id.as_deref() == Some(transaction_id)
        });
        if let Some(id) = earlier
            .and_then(|p| p.id)
            .and_then(|id| i32::try_from(id).ok())
        {
            return id;
        }
        self.last_profile_id = match self.last_profile_id {
            0 => FIRST_PROFILE_ID,
            last => last.saturating_add(1),
        };
        self.last_profile_id
    }

    /// The unit and limit of the profile in force for the transaction on `evse_id` (the last
    /// sent that is not cleared or refused).
    pub fn limit_in_force(&self, evse_id: i32, transaction_id: &str) -> Option<(RateUnit, f64)> {
        self.profiles
            .iter()
            .rev()
            .filter(|p| p.evse_id == i64::from(evse_id) && p.in_force())
            .find(|p| {
                p.transaction_id
                    .as_deref()
                    .is_none_or(|t| t == transaction_id)
            })
            .and_then(|p| schedule_limit(&p.profile))
    }

    /// Keeps a profile sent (the oldest past [`PROFILES_KEPT`] goes).
    pub fn sent(&mut self, record: ChargingProfileRecord) {
        while self.profiles.len() >= PROFILES_KEPT {
            self.profiles.pop_front();
        }
        self.profiles.push_back(record);
    }

    /// The station answered the oldest SetChargingProfile still waiting (one CALL in flight
    /// per connection: answers come in the order sent).
    pub fn settle(&mut self, answer: String, at: UnixTime) -> Option<&ChargingProfileRecord> {
        let record = self.profiles.iter_mut().find(|p| p.answer.is_none())?;
        record.answer = Some(answer);
        record.answered_at = Some(at);
        Some(record)
    }

    /// A ClearChargingProfile is on its way (`id`: the profile it clears, if by id).
    pub fn clear_asked(&mut self, id: Option<i64>) {
        self.pending_clears.push_back(id);
    }

    /// The oldest ClearChargingProfile was answered: Accepted clears the profile it named.
    pub fn clear_answered(&mut self, accepted: bool) {
        if let (Some(Some(id)), true) = (self.pending_clears.pop_front(), accepted) {
            for profile in self.profiles.iter_mut().filter(|p| p.id == Some(id)) {
                profile.cleared = true;
            }
        }
    }

    /// As the admin API shows it: `{"site_limit","charging_needs","charging_profiles"}`
    /// (`site_limit` null: the CSMS default).
    pub fn to_json(&self) -> Value {
        json!({
            "site_limit": self.site_limit.map(|l| l.to_json()),
            "charging_needs": self.needs.iter().map(ChargingNeeds::to_json).collect::<Vec<_>>(),
            "charging_profiles": self.profiles.iter().map(ChargingProfileRecord::to_json).collect::<Vec<_>>(),
        })
    }
}
