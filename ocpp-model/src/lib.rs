#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![forbid(unsafe_code)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

/// A neutral enumeration whose values are spelt as on the wire of the versions that have them.
macro_rules! wire_names {
    (
        $(#[$meta:meta])*
        $name:ident { $($(#[$vmeta:meta])* $variant:ident => $wire:literal),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every value.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The value as on the wire.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $wire),+
                }
            }

            /// The value of a wire string (`None` when not listed).
            pub fn from_wire(value: &str) -> Option<$name> {
                match value {
                    $($wire => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl core::fmt::Display for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

pub mod answer;
pub mod authorization;
pub mod boot;
pub mod charging_limit;
pub mod command;
pub mod device_model;
pub mod error;
pub mod event;
pub mod id_token;
pub mod ledger;
pub mod local_auth;
pub mod meter;
pub mod notification;
pub mod number;
pub mod setting;
#[cfg(feature = "signed-meter")]
pub mod signed_meter;
pub mod status;
pub mod transaction;

mod v1_6;
mod v2;

pub use answer::{respond, EventAnswer};
pub use authorization::{Authorization, AuthorizationRequested, AuthorizationStatus};
pub use boot::{BootAnswer, BootReason, Booted, RegistrationStatus};
pub use charging_limit::{ChargingLimit, ChargingProfilePurpose, LimitPeriod, RateUnit};
pub use command::{Command, CommandOutcome, MessageTrigger, Outcome, ResetKind};
pub use error::ModelError;
pub use event::{Concept, Heartbeat, StationEvent};
pub use id_token::{IdToken, IdTokenType};
pub use ledger::{
    InMemoryLedger, InMemoryLedgerError, LedgerTransaction, Recorded, StartKey, StartKeyError,
    TransactionLedger,
};
pub use meter::{MeterReading, MeterReadings, SignedMeterValue};
pub use notification::{FirmwareStatus, LogStatus, SecurityEvent};
pub use number::Decimal;
pub use setting::Setting;
#[cfg(feature = "signed-meter")]
pub use signed_meter::{SignedMeterError, SignedReading, Verified};
pub use status::{ConnectorStatus, StatusChanged};
pub use transaction::{
    StopReason, TransactionEnded, TransactionId, TransactionStarted, TransactionUpdated,
    TriggerReason,
};
