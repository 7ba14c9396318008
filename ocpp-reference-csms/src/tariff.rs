//! Tariffs and the cost of a transaction (OCPP 2.0.1 and 2.1 block I: I02 running cost with
//! CostUpdated, I03 final cost in the TransactionEvent Ended answer).
//!
//! A [`Tariff`] is a price per kWh and a price per hour of charging, in one currency (shown
//! on the admin API; on the wire `totalCost` is a bare number "in the currency configured
//! with the Configuration Variable Currency" of the station, which this CSMS does not set).
//! The default tariff comes from `--price-per-kwh`, `--price-per-hour` and `--currency`;
//! a station's own from `PUT /chargepoints/ID/tariff`. Without either, nothing about cost
//! is sent (no `totalCost`, no CostUpdated).
//!
//! # Arithmetic and rounding
//!
//! Money never goes through a float until it is put on the wire:
//!
//! - a price is a [`Price`]: a decimal with at most 4 fraction digits, kept as an integer
//!   count of 1/10,000 of the currency unit (`"0.2575"` is 2575);
//! - the energy is taken in whole milliwatt-hours (the Wh reading rounded to the nearest
//!   mWh), the charging time in whole milliseconds;
//! - the cost `price_per_kwh * energy + price_per_hour * time` is computed exactly in
//!   `i128` (in units of 1/(10,000 * 3,600,000,000) of the currency unit) and rounded
//!   **once**, to the nearest cent (1/100 of the unit), halves up: a [`Cost`];
//! - `totalCost` is that count of cents divided by 100 as an exact [`Decimal`], written as
//!   the shortest decimal with at least one fraction digit: 1234 cents go out as `12.34`,
//!   150 as `1.5`, 200 as `2.0` (what the `f64` it once was printed).
//!
//! A negative energy (a meter that went backwards or was replaced) counts as none.
//!
//! The charging time is the transaction's time from its start to its end (or now, while it
//! runs) by the CSMS's clock, which is what the per-hour price pays for.
//!
//! ```
//! use std::time::Duration;
//! use ocpp_reference_csms::{Cost, Tariff};
//! let tariff = Tariff::parse("0.25", "2.00", "EUR").unwrap();
//! // 5 kWh and half an hour: 1.25 + 1.00
//! let cost = tariff.cost("5000".parse().unwrap(), Duration::from_secs(1_800));
//! assert_eq!(cost, Cost::from_cents(225));
//! assert_eq!(cost.to_string(), "2.25");
//! assert_eq!(serde_json::json!(cost.total_cost()).to_string(), "2.25");
//! ```

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use ocpp_messages::version::OcppVersion;
use ocpp_messages::Decimal;
use ocpp_proto::ChargePointIdentity;

use super::{
    ChangeError, ChargePointRecord, Context, Csms, Durability, Record, Transaction, UnixTime,
};

/// 1/10,000 of the currency unit: the resolution of a [`Price`].
const PRICE_SCALE: i128 = 10_000;
/// Fraction digits of a [`Price`].
const PRICE_DIGITS: usize = 4;
/// Milliwatt-hours in a kWh.
const MWH_PER_KWH: i128 = 1_000_000;
/// Milliseconds in an hour.
const MS_PER_HOUR: i128 = 3_600_000;
/// Cents in the currency unit.
const CENTS: i128 = 100;
/// The largest price taken (a million currency units per kWh or per hour): far beyond any
/// tariff, and small enough that no cost of a plausible transaction overflows.
const PRICE_MAX: i64 = 1_000_000 * PRICE_SCALE as i64;

/// Why a tariff is refused (the admin API answers 400, the command line stops).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TariffError {
    /// A price that is not a plain non-negative decimal (`12`, `0.25`).
    #[error("price {0:?}: expected a non-negative decimal such as 0.25")]
    NotADecimal(String),
    /// More fraction digits than a [`Price`] keeps.
    #[error("price {0:?}: at most 4 digits after the point")]
    TooPrecise(String),
    /// Above the largest price taken.
    #[error("price {0:?}: at most 1000000")]
    TooLarge(String),
    /// Not an ISO 4217 code of three capital letters.
    #[error("currency {0:?}: expected an ISO 4217 code such as EUR")]
    Currency(String),
}

/// A price: a non-negative decimal with at most 4 fraction digits, kept exactly as a count
/// of 1/10,000 of the currency unit.
///
/// ```
/// use ocpp_reference_csms::Price;
/// let price: Price = "0.2575".parse().unwrap();
/// assert_eq!(price.ten_thousandths(), 2575);
/// assert_eq!(price.to_string(), "0.2575");
/// assert!("0.12345".parse::<Price>().is_err());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Price(i64);

impl Price {
    /// Free.
    pub const ZERO: Price = Price(0);

    /// The price in 1/10,000 of the currency unit.
    pub fn ten_thousandths(self) -> i64 {
        self.0
    }

    /// Whether it is zero.
    pub fn is_zero(self) -> bool {
        self.0 == 0
    }
}

impl FromStr for Price {
    type Err = TariffError;

    /// Digits, optionally a point and at most 4 more digits (`12`, `0.25`, `.5`, `3.`).
    /// No sign, no exponent.
    fn from_str(text: &str) -> Result<Price, TariffError> {
        let bad = || TariffError::NotADecimal(text.to_owned());
        let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
        let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if (whole.is_empty() && fraction.is_empty()) || !digits(whole) || !digits(fraction) {
            return Err(bad());
        }
        if fraction.len() > PRICE_DIGITS {
            return Err(TariffError::TooPrecise(text.to_owned()));
        }
        let too_large = || TariffError::TooLarge(text.to_owned());
        let whole: i64 = match whole.trim_start_matches('0') {
            "" => 0,
            w if w.len() > 7 => return Err(too_large()),
            w => w.parse().map_err(|_| bad())?,
        };
        let mut ten_thousandths: i64 = 0;
        for (i, digit) in fraction.bytes().enumerate() {
            let place = 10_i64.pow((PRICE_DIGITS - 1 - i) as u32);
            ten_thousandths += i64::from(digit - b'0') * place;
        }
        let price = whole * PRICE_SCALE as i64 + ten_thousandths;
        if price > PRICE_MAX {
            return Err(too_large());
        }
        Ok(Price(price))
    }
}

impl fmt::Display for Price {
    /// The shortest decimal: `0.25`, `2`, `0.2575`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scale = PRICE_SCALE as i64;
        let (whole, fraction) = (self.0 / scale, self.0 % scale);
        if fraction == 0 {
            return write!(f, "{whole}");
        }
        let fraction = format!("{fraction:04}");
        write!(f, "{whole}.{}", fraction.trim_end_matches('0'))
    }
}

/// An ISO 4217 currency code (`EUR`), for display: three capital ASCII letters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Currency([u8; 3]);

impl Currency {
    /// The euro, the default of `--currency`.
    pub const EUR: Currency = Currency(*b"EUR");

    /// The code.
    pub fn as_str(&self) -> &str {
        // Only capital ASCII letters get in (`from_str`).
        std::str::from_utf8(&self.0).unwrap_or("XXX")
    }
}

impl FromStr for Currency {
    type Err = TariffError;

    fn from_str(text: &str) -> Result<Currency, TariffError> {
        match text.as_bytes() {
            &[a, b, c] if [a, b, c].iter().all(u8::is_ascii_uppercase) => Ok(Currency([a, b, c])),
            _ => Err(TariffError::Currency(text.to_owned())),
        }
    }
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A cost: a whole number of cents (1/100 of the currency unit), never negative.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cost(i64);

impl Cost {
    /// A cost of `cents` (negative counts as zero).
    pub fn from_cents(cents: i64) -> Cost {
        Cost(cents.max(0))
    }

    /// The cost in cents.
    pub fn cents(self) -> i64 {
        self.0
    }

    /// The cost as OCPP's `totalCost` (a JSON number in currency units): the cents divided
    /// by 100, exactly, with one or two fraction digits (`12.34`, `1.5`, `2.0`).
    pub fn total_cost(self) -> Decimal {
        let cents = self.0;
        if cents % 10 == 0 {
            Decimal::new(cents / 10, 1)
        } else {
            Decimal::new(cents, 2)
        }
    }
}

impl fmt::Display for Cost {
    /// Always two fraction digits: `2.25`, `0.00`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:02}", self.0 / 100, self.0 % 100)
    }
}

/// A tariff: what a kWh and an hour of charging cost, and the currency they are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Tariff {
    /// The price of one kWh of energy imported by the EV.
    pub per_kwh: Price,
    /// The price of one hour of the transaction.
    pub per_hour: Price,
    /// The currency, for display (the station's `Currency` variable is not set by this CSMS).
    pub currency: Currency,
}

impl Tariff {
    /// A tariff of these prices.
    pub fn new(per_kwh: Price, per_hour: Price, currency: Currency) -> Tariff {
        Tariff {
            per_kwh,
            per_hour,
            currency,
        }
    }

    /// A tariff from text: the prices as decimals, the currency as its ISO 4217 code.
    ///
    /// # Errors
    /// A price or the currency does not parse ([`TariffError`]).
    pub fn parse(per_kwh: &str, per_hour: &str, currency: &str) -> Result<Tariff, TariffError> {
        Ok(Tariff::new(
            per_kwh.parse()?,
            per_hour.parse()?,
            currency.parse()?,
        ))
    }

    /// The cost of `energy_wh` Wh over `duration` of charging, rounded once to the nearest
    /// cent, halves up (see the module docs). The energy is exact to the mWh (a register
    /// written with more than three decimals of a Wh is taken to the nearest mWh, halves
    /// away from zero: at any real price that is below a millionth of a cent). A negative
    /// energy counts as 0.
    pub fn cost(&self, energy_wh: Decimal, duration: Duration) -> Cost {
        let mwh = if energy_wh.is_negative() {
            0
        } else {
            // At scale 3 the mantissa is the mWh; a value too large for that is no real meter.
            energy_wh
                .round_dp(3)
                .rescale(3)
                .map_or(i64::MAX, Decimal::mantissa)
        };
        // Capped at u64::MAX ms (585 million years), so that nothing below overflows.
        let ms = i128::from(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX));
        // In units of 1 / (PRICE_SCALE * MWH_PER_KWH * MS_PER_HOUR) of the currency unit.
        let exact = i128::from(self.per_kwh.0) * i128::from(mwh) * MS_PER_HOUR
            + i128::from(self.per_hour.0) * ms * MWH_PER_KWH;
        let per_cent = PRICE_SCALE * MWH_PER_KWH * MS_PER_HOUR / CENTS;
        let cents = (exact + per_cent / 2) / per_cent;
        Cost(i64::try_from(cents).unwrap_or(i64::MAX))
    }
}

impl fmt::Display for Tariff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} per kWh + {} {} per hour",
            self.per_kwh, self.currency, self.per_hour, self.currency
        )
    }
}

/// A CostUpdated the CSMS sent (I02) and the station's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CostUpdate {
    /// The transaction.
    pub transaction: String,
    /// The `totalCost` sent.
    pub total_cost: Cost,
    /// When it was queued, right after the TransactionEvent answer.
    pub at: UnixTime,
    /// The station's answer: `Accepted` (an empty CostUpdatedResponse), or `CALLERROR
    /// <code>`, `Timeout`, or another failure's name ([`CallFailure::name`], e.g.
    /// `queue_full` when it was not sent); `None` while pending.
    ///
    /// [`CallFailure::name`]: ocpp_proto::CallFailure::name
    pub answer: Option<String>,
}

impl Tariff {
    /// The cost of a transaction so far: its energy ([`Transaction::energy_wh`], none
    /// without readings) and its time from start to end, or to `now` while it runs.
    pub fn cost_of(&self, transaction: &Transaction, now: UnixTime) -> Cost {
        let end = transaction.ended.unwrap_or(now);
        let duration =
            Duration::from_millis(end.millis().saturating_sub(transaction.started.millis()));
        self.cost(transaction.energy_wh().unwrap_or(Decimal::ZERO), duration)
    }
}

impl Context<'_> {
    /// The tariff of this station: its own, else the CSMS default; `None`: no cost at all.
    pub(super) fn tariff(&self, cp: &ChargePointRecord) -> Option<Tariff> {
        cp.extras.tariff.or(self.config.get_tariff())
    }

    /// I02: queues a CostUpdated with the running `cost` of `transaction` as the follow-up
    /// CALL of this answer, unless one went for it less than
    /// [`CsmsConfig::cost_updated_interval`](super::CsmsConfig::cost_updated_interval) ago.
    /// Built from JSON, so that one path serves 2.0.1 and 2.1. Returns whether it was queued.
    pub(super) fn cost_updated(
        &self,
        cp: &mut ChargePointRecord,
        version: OcppVersion,
        transaction: &str,
        cost: Cost,
    ) -> bool {
        let interval =
            u64::try_from(self.config.get_cost_updated_interval().as_millis()).unwrap_or(u64::MAX);
        let last = cp
            .extras
            .cost_updates
            .iter()
            .rev()
            .find(|update| update.transaction == transaction);
        if last.is_some_and(|last| self.now.millis().saturating_sub(last.at.millis()) < interval) {
            return false;
        }
        let payload = serde_json::json!({
            "totalCost": cost.total_cost(),
            "transactionId": transaction,
        });
        let request =
            match crate::command::decode_command(version, "CostUpdated", &payload.to_string()) {
                Ok(request) => request,
                Err(e) => {
                    tracing::warn!(identity = %cp.identity, transaction, "CostUpdated: {e}");
                    return false;
                }
            };
        let keep = self.config.notifications_kept.max(1);
        let updates = &mut cp.extras.get_mut().cost_updates;
        while updates.len() >= keep {
            updates.pop_front();
        }
        updates.push_back(CostUpdate {
            transaction: transaction.to_owned(),
            total_cost: cost,
            at: self.now,
            answer: None,
        });
        tracing::debug!(identity = %cp.identity, transaction, total_cost = %cost, "CostUpdated");
        self.follow_up(cp, request);
        true
    }
}

impl Csms {
    /// A station's own tariff and the CSMS default (either may be `None`).
    pub fn tariff_of(&self, identity: &ChargePointIdentity) -> (Option<Tariff>, Option<Tariff>) {
        let own = self.lock().get(identity).and_then(|cp| cp.extras.tariff);
        (own, self.config().get_tariff())
    }

    /// The tariff that applies to a station: its own, else the default.
    pub fn tariff_for(&self, identity: &str) -> Option<Tariff> {
        let own = self.lock().get(identity).and_then(|cp| cp.extras.tariff);
        own.or(self.config().get_tariff())
    }

    /// Sets (or with `None` clears) a station's own tariff, known or not yet seen
    /// (`PUT|DELETE /chargepoints/ID/tariff`). It prices every transaction of the station
    /// from then on, those running included. Committed to the store first, if there is one
    /// (the nodes sharing it follow, see [`super::persistence`]).
    ///
    /// # Errors
    /// The store could not commit it: nothing changed.
    pub fn set_tariff(
        &self,
        identity: &ChargePointIdentity,
        tariff: Option<Tariff>,
    ) -> Result<(), ChangeError> {
        let _changes = self.settings_changes();
        let record = Record::Tariff {
            identity: identity.as_str().to_owned(),
            tariff,
        };
        self.keep(vec![record], Durability::Committed)?;
        let mut fleet = self.lock();
        match tariff {
            Some(tariff) => fleet.entry(identity).extras.get_mut().tariff = Some(tariff),
            None => {
                if let Some(cp) = fleet.get_mut(identity.as_str()) {
                    if cp.extras.tariff.is_some() {
                        cp.extras.get_mut().tariff = None;
                    }
                }
            }
        }
        tracing::info!(%identity, tariff = tariff.map(|t| t.to_string()), "tariff set by the operator");
        Ok(())
    }

    /// Records the station's answer to our CostUpdated on the oldest one still pending (one
    /// CALL is in flight at a time, in order).
    pub(super) fn note_cost_updated_answer(&self, identity: &ChargePointIdentity, answer: String) {
        let mut fleet = self.lock();
        let Some(cp) = fleet.get_mut(identity.as_str()) else {
            return;
        };
        let pending = cp
            .extras
            .get_mut()
            .cost_updates
            .iter_mut()
            .find(|update| update.answer.is_none());
        if let Some(update) = pending {
            tracing::debug!(%identity, transaction = update.transaction, answer, "CostUpdated answered");
            update.answer = Some(answer);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{admin, CsmsConfig};
    use ocpp_proto::{Answer, CallOutcome, Request};
    use serde_json::{json, Value};

    /// A CSMS with the default tariff 0.25 per kWh and this CostUpdated interval, and one
    /// connected station of `version`.
    fn csms(interval: Duration, version: OcppVersion) -> (Csms, ChargePointIdentity) {
        let tariff = Tariff::parse("0.25", "0", "EUR").unwrap();
        let config = CsmsConfig::default()
            .tariff(Some(tariff))
            .cost_updated_interval(interval);
        let csms = Csms::new(config);
        let identity = ChargePointIdentity::new("CP-TARIFF".into(), false).unwrap();
        csms.on_connected(&identity, version);
        (csms, identity)
    }

    /// The CALLRESULT payload of `action` (JSON in, JSON out).
    fn answer(csms: &Csms, identity: &ChargePointIdentity, action: &str, payload: Value) -> Value {
        let version = csms.version_of(identity).unwrap();
        let request =
            crate::command::decode_command(version, action, &payload.to_string()).unwrap();
        let session = csms.charge_point(identity).unwrap().session.unwrap().id;
        match csms.on_call(session, identity, &request).wait(csms) {
            Answer::Result(response) => serde_json::to_value(response).unwrap(),
            other => panic!("{action}: {other:?}"),
        }
    }

    /// The answer to a TransactionEvent of `kind` and `seq_no` for transaction `tx`, the
    /// meter at `wh`.
    fn transaction_event(
        csms: &Csms,
        cp: &ChargePointIdentity,
        kind: &str,
        seq_no: u32,
        tx: &str,
        wh: u32,
    ) -> Value {
        let event = json!({"eventType": kind, "timestamp": "2026-01-01T00:00:00Z",
               "triggerReason": "MeterValuePeriodic", "seqNo": seq_no,
               "transactionInfo": {"transactionId": tx}, "evse": {"id": 1, "connectorId": 1},
               "meterValue": [{"timestamp": "2026-01-01T00:00:00Z",
                               "sampledValue": [{"value": wh}]}]});
        answer(csms, cp, "TransactionEvent", event)
    }

    fn follow_up(csms: &Csms, identity: &ChargePointIdentity) -> Option<Value> {
        csms.take_follow_up(identity).map(|request: Request| {
            assert_eq!(request.action(), "CostUpdated");
            serde_json::to_value(request).unwrap()
        })
    }

    #[test]
    fn cost_updated_is_paced_per_transaction_and_its_answer_kept() {
        let (csms, cp) = csms(Duration::from_secs(3_600), OcppVersion::V2_0_1);
        let te = |kind, seq_no, tx, wh| transaction_event(&csms, &cp, kind, seq_no, tx, wh);
        assert_eq!(te("Started", 0, "A", 1_000), json!({}));
        assert_eq!(follow_up(&csms, &cp), None, "not after Started");
        assert_eq!(
            te("Updated", 1, "A", 3_000),
            json!({}),
            "2.0.1: not in the answer"
        );
        let first = follow_up(&csms, &cp).expect("the first at once");
        assert_eq!(first, json!({"totalCost": 0.5, "transactionId": "A"}));
        assert_eq!(follow_up(&csms, &cp), None);
        // Within the interval: none for A; B's first goes at once.
        assert_eq!(te("Updated", 2, "A", 4_000), json!({}));
        assert_eq!(follow_up(&csms, &cp), None, "paced");
        te("Started", 0, "B", 0);
        te("Updated", 1, "B", 10);
        assert_eq!(
            follow_up(&csms, &cp),
            Some(json!({"totalCost": 0.0, "transactionId": "B"}))
        );
        // The answers, in order: A's accepted, B's a CALLERROR.
        let accepted: CallOutcome = Ok(ocpp_messages::v2_0_1::Response::from(
            ocpp_messages::v2_0_1::CostUpdatedResponse::default(),
        )
        .into());
        csms.on_call_completed(&cp, "CostUpdated", &accepted);
        let failed: CallOutcome = Err(ocpp_proto::CallFailure::Timeout);
        csms.on_call_completed(&cp, "CostUpdated", &failed);
        let updates = csms.charge_point(&cp).unwrap().extras.cost_updates.clone();
        let answers: Vec<_> = updates.iter().map(|u| u.answer.as_deref()).collect();
        assert_eq!(answers, [Some("Accepted"), Some("Timeout")]);
        // The final cost: 3 kWh at 0.25.
        assert_eq!(te("Ended", 3, "A", 4_000), json!({"totalCost": 0.75}));
        assert_eq!(follow_up(&csms, &cp), None);
    }

    #[test]
    fn ocpp_2_1_updated_answers_carry_the_running_cost() {
        let (csms, cp) = csms(Duration::ZERO, OcppVersion::V2_1);
        let te = |kind, seq_no, tx, wh| transaction_event(&csms, &cp, kind, seq_no, tx, wh);
        te("Started", 0, "T", 1_000);
        assert_eq!(te("Updated", 1, "T", 2_000), json!({"totalCost": 0.25}));
        assert!(follow_up(&csms, &cp).is_some());
        assert_eq!(te("Updated", 2, "T", 2_400), json!({"totalCost": 0.35}));
        assert!(follow_up(&csms, &cp).is_some(), "interval 0: every time");
    }

    #[test]
    fn ocpp_1_6_is_not_priced_on_the_wire() {
        let (csms, cp) = csms(Duration::ZERO, OcppVersion::V1_6);
        let started = answer(
            &csms,
            &cp,
            "StartTransaction",
            json!({"connectorId": 1, "idTag": "T", "meterStart": 1000,
                   "timestamp": "2026-01-01T00:00:00Z"}),
        );
        let id = started["transactionId"].clone();
        let meter = json!({"connectorId": 1, "transactionId": id,
            "meterValue": [{"timestamp": "2026-01-01T00:00:00Z",
                            "sampledValue": [{"value": "3000"}]}]});
        assert_eq!(answer(&csms, &cp, "MeterValues", meter), json!({}));
        let stop = json!({"transactionId": id, "meterStop": 5000,
                          "timestamp": "2026-01-01T00:00:00Z"});
        let stopped = answer(&csms, &cp, "StopTransaction", stop);
        assert!(stopped.get("totalCost").is_none(), "{stopped}");
        assert_eq!(follow_up(&csms, &cp), None);
        // The admin API prices it all the same.
        let state =
            admin::charge_point_json(&csms.charge_point(&cp).unwrap(), csms.config().get_tariff());
        assert_eq!(state["transactions"][0]["cost"], json!(1.0), "{state}");
    }

    fn price(text: &str) -> Price {
        text.parse().unwrap()
    }

    #[test]
    fn prices_parse_exactly_and_print_shortest() {
        assert_eq!(price("0").ten_thousandths(), 0);
        assert_eq!(price("12").ten_thousandths(), 120_000);
        assert_eq!(price("0.25").ten_thousandths(), 2_500);
        assert_eq!(price(".5").ten_thousandths(), 5_000);
        assert_eq!(price("3.").ten_thousandths(), 30_000);
        assert_eq!(price("0.0001").ten_thousandths(), 1);
        assert_eq!(price("007.1000").ten_thousandths(), 71_000);
        assert_eq!(price("1000000").ten_thousandths(), PRICE_MAX);
        for (text, shown) in [("0.25", "0.25"), ("2.000", "2"), ("0.0105", "0.0105")] {
            assert_eq!(price(text).to_string(), shown);
        }
        for bad in [
            "", ".", "-1", "+1", "1e3", "0,25", " 1", "1.2.3", "abc", "0x10",
        ] {
            assert!(
                matches!(bad.parse::<Price>(), Err(TariffError::NotADecimal(_))),
                "{bad:?}"
            );
        }
        assert!(matches!(
            "0.00001".parse::<Price>(),
            Err(TariffError::TooPrecise(_))
        ));
        for big in ["1000000.0001", "99999999", "123456789012345678901234567890"] {
            assert!(
                matches!(big.parse::<Price>(), Err(TariffError::TooLarge(_))),
                "{big}"
            );
        }
    }

    #[test]
    fn currencies_are_three_capitals() {
        assert_eq!("EUR".parse::<Currency>().unwrap(), Currency::EUR);
        assert_eq!("USD".parse::<Currency>().unwrap().as_str(), "USD");
        for bad in ["eur", "EU", "EURO", "", "E1R", "ÉUR"] {
            assert!(bad.parse::<Currency>().is_err(), "{bad:?}");
        }
    }

    /// A number of Wh, as a meter writes it.
    fn wh(text: &str) -> Decimal {
        text.parse().unwrap()
    }

    #[test]
    fn cost_of_energy_and_time() {
        let tariff = Tariff::parse("0.25", "2", "EUR").unwrap();
        let hour = Duration::from_secs(3_600);
        assert_eq!(tariff.cost(wh("0.0"), Duration::ZERO).cents(), 0);
        assert_eq!(tariff.cost(wh("1000.0"), Duration::ZERO).cents(), 25);
        assert_eq!(tariff.cost(wh("5000.0"), Duration::ZERO).cents(), 125);
        assert_eq!(tariff.cost(wh("0.0"), hour).cents(), 200);
        assert_eq!(tariff.cost(wh("0.0"), hour / 4).cents(), 50);
        assert_eq!(tariff.cost(wh("12345.0"), hour * 3).cents(), 309 + 600);
        // Energy only, time only.
        let energy = Tariff::parse("0.3", "0", "EUR").unwrap();
        assert_eq!(energy.cost(wh("1000.0"), hour * 100).cents(), 30);
        let time = Tariff::parse("0", "1.2", "EUR").unwrap();
        assert_eq!(
            time.cost(wh("1000000000"), Duration::from_secs(60)).cents(),
            2
        );
    }

    #[test]
    fn rounding_is_once_to_the_cent_halves_up() {
        // 0.0001 per kWh: 50 kWh = 0.005 exactly -> 0.01 (half up); 49.999 kWh -> 0.00.
        let tiny = Tariff::parse("0.0001", "0", "EUR").unwrap();
        assert_eq!(tiny.cost(wh("50000.0"), Duration::ZERO).cents(), 1);
        assert_eq!(tiny.cost(wh("49999.0"), Duration::ZERO).cents(), 0);
        // Rounded once, on the sum: 0.004 + 0.004 = 0.008 -> 0.01, where rounding each
        // part first would give 0.00.
        let both = Tariff::parse("0.0001", "0.0001", "EUR").unwrap();
        assert_eq!(
            both.cost(wh("40000.0"), Duration::from_secs(40 * 3_600))
                .cents(),
            1
        );
        // 0.3333 per kWh, 1.5 kWh: 0.49995 -> 0.50.
        let third = Tariff::parse("0.3333", "0", "EUR").unwrap();
        assert_eq!(third.cost(wh("1500.0"), Duration::ZERO).cents(), 50);
        // Fractional Wh count to the mWh: 0.25/kWh * 1.998 Wh = 0.0004995 -> 0.00.
        assert_eq!(
            Tariff::parse("0.25", "0", "EUR")
                .unwrap()
                .cost(wh("1.998"), Duration::ZERO)
                .cents(),
            0
        );
        // The time price counts milliseconds: 36 per hour is 0.01 per second; 499 ms is
        // 0.00499 -> 0.00, 500 ms is 0.005 -> 0.01.
        let per_second = Tariff::parse("0", "36", "EUR").unwrap();
        assert_eq!(
            per_second
                .cost(wh("0.0"), Duration::from_millis(499))
                .cents(),
            0
        );
        assert_eq!(
            per_second
                .cost(wh("0.0"), Duration::from_millis(500))
                .cents(),
            1
        );
    }

    #[test]
    fn odd_energies_count_as_none() {
        let tariff = Tariff::parse("1", "0", "EUR").unwrap();
        for odd in ["-5", "-0.001"] {
            assert_eq!(tariff.cost(wh(odd), Duration::ZERO).cents(), 0, "{odd}");
        }
        // More decimals than a mWh: to the nearest mWh (0.4999 mWh is 0, 15 mWh 1.5 cents).
        let per_mwh = Tariff::parse("1000", "0", "EUR").unwrap(); // 0.1 cent per mWh
        assert_eq!(per_mwh.cost(wh("0.0004999"), Duration::ZERO).cents(), 0);
        assert_eq!(per_mwh.cost(wh("0.0150"), Duration::ZERO).cents(), 2);
        // The largest price and a huge meter do not overflow.
        let dear = Tariff::parse("1000000", "1000000", "EUR").unwrap();
        assert!(
            dear.cost(wh("1000000000000000"), Duration::from_secs(u64::MAX))
                .cents()
                > 0
        );
    }

    #[test]
    fn total_cost_is_the_decimal_on_the_wire() {
        for (cents, wire, shown) in [
            (0, "0.0", "0.00"),
            (5, "0.05", "0.05"),
            (30, "0.3", "0.30"),
            (225, "2.25", "2.25"),
            (1_234_567, "12345.67", "12345.67"),
        ] {
            let cost = Cost::from_cents(cents);
            assert_eq!(serde_json::json!(cost.total_cost()).to_string(), wire);
            assert_eq!(cost.to_string(), shown);
        }
        assert_eq!(Cost::from_cents(-3), Cost::from_cents(0));
    }
}
