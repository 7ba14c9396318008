//! [`ChargingLimit`]: a charging profile in its simplest neutral form, a limit in amps or watts
//! per period (1.6 `csChargingProfiles`, 2.x `chargingProfile`).

use ocpp_messages::DateTime;

use crate::{Decimal, TransactionId};

wire_names! {
    /// What a profile limits: 1.6 `ChargingProfilePurposeType`, 2.x
    /// `ChargingProfilePurposeEnumType` (the three both have).
    ChargingProfilePurpose {
        /// The whole station (1.6 `ChargePointMaxProfile`, 2.x `ChargingStationMaxProfile`).
        StationMax => "ChargingStationMaxProfile",
        /// Every new transaction.
        TxDefault => "TxDefaultProfile",
        /// One transaction.
        Tx => "TxProfile",
    }
}

wire_names! {
    /// The limit's unit (1.6 `ChargingRateUnitType`, 2.x `ChargingRateUnitEnumType`).
    RateUnit {
        /// Amperes (per phase).
        Amps => "A",
        /// Watts.
        Watts => "W",
    }
}

/// One period of a limit.
#[derive(Debug, Clone, PartialEq)]
pub struct LimitPeriod {
    /// Seconds from the schedule's start.
    pub start_s: u32,
    /// The limit, exact.
    pub limit: Decimal,
    /// How many phases may be used.
    pub phases: Option<u32>,
}

/// A charging limit: a profile of one schedule.
///
/// ```
/// use ocpp_messages::OcppVersion;
/// use ocpp_model::{ChargingLimit, ChargingProfilePurpose, Command, Decimal, LimitPeriod, RateUnit};
///
/// let limit = ChargingLimit {
///     id: 1,
///     stack_level: 0,
///     purpose: ChargingProfilePurpose::TxDefault,
///     evse: 0,
///     transaction: None,
///     starts: None,
///     unit: RateUnit::Amps,
///     periods: vec![LimitPeriod { start_s: 0, limit: "16.5".parse().unwrap(), phases: None }],
/// };
/// for version in OcppVersion::ALL {
///     let request = Command::SetChargingProfile(limit.clone()).to_request(version)?;
///     assert_eq!(request.action(), "SetChargingProfile");
/// }
/// # Ok::<(), ocpp_model::ModelError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ChargingLimit {
    /// The profile's id.
    pub id: i32,
    /// Its stack level.
    pub stack_level: u32,
    /// What it limits.
    pub purpose: ChargingProfilePurpose,
    /// The EVSE (1.6 connectorId; 0: the whole station).
    pub evse: u32,
    /// The transaction, for [`ChargingProfilePurpose::Tx`] (1.6 a number, 2.x text).
    pub transaction: Option<TransactionId>,
    /// `Some`: an absolute schedule from then; `None`: relative to the transaction's start.
    pub starts: Option<DateTime>,
    /// The unit.
    pub unit: RateUnit,
    /// The periods, in order of start.
    pub periods: Vec<LimitPeriod>,
}
