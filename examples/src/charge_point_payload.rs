//! What a charge point says and hears, independent of the OCPP version, and its translation to
//! and from the payloads of the negotiated version.
//!
//! OCPP 1.6 payloads are built from the generated types of `ocpp_messages::v1_6`. OCPP 2.0.1
//! and 2.1 share their messages' JSON shape but not their Rust types (2.1 adds fields and makes
//! some integers unsigned), so their payloads are written once as JSON and decoded through the
//! version's generated, schema-checking decoder: one code path serves both, and a payload the
//! schema rejects is caught here rather than by the CSMS.
//!
//! The `charge-point` simulator and the `ocpp-load` swarm both build their messages here.

use ocpp_model::{BootReason, Command, Outcome};
use ocpp_proto::station::StationStopReason;

mod calls;
mod commands;
#[cfg(test)]
mod tests;

pub use calls::{read_answer, request, CallAnswer};
pub use commands::{read_command, response};

/// Where a connector is in a charging session, as StatusNotification reports it: four of 1.6's
/// `ChargePointStatus` values; 2.x `connectorStatus` `Available`, else `Occupied`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectorStage {
    /// Free for a new session.
    Available,
    /// A session is being set up (1.6 Preparing, 2.x Occupied).
    Preparing,
    /// Energy flows (1.6 Charging, 2.x Occupied).
    Charging,
    /// The session ended, the cable is still in (1.6 Finishing, 2.x Occupied).
    Finishing,
}

/// The meter at one moment, as the charge point reports it in one meter value (1.6
/// `MeterValue`, 2.x `meterValue`): the energy register and the power.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeterSnapshot {
    /// The import register, in Wh.
    pub energy_wh: i64,
    /// The active power, in W.
    pub power_w: f64,
}

/// A transaction as the messages that report it need it.
#[derive(Debug, Clone, PartialEq)]
pub struct TxRef {
    /// The connector (1.6 connectorId; 2.x EVSE 1's connector).
    pub connector: u32,
    /// The id tag (2.x idToken) that started it.
    pub id_tag: String,
    /// 2.x: our transactionId.
    pub local_id: String,
    /// 1.6: the transactionId the CSMS gave in StartTransaction's answer.
    pub csms_id: Option<i32>,
    /// 2.x: the sequence number of this TransactionEvent.
    pub seq_no: u32,
    /// 2.x: the remoteStartId of RequestStartTransaction, if it started that way.
    pub remote_start_id: Option<i32>,
}

/// A CALL the charge point sends.
#[derive(Debug, Clone, PartialEq)]
pub enum Outgoing {
    /// BootNotification.
    Boot {
        /// The charge point's identity (its serial number in the payload).
        identity: String,
        /// Why it booted (2.x `reason`; 1.6 sends none).
        reason: BootReason,
    },
    /// Heartbeat.
    Heartbeat,
    /// StatusNotification.
    Status {
        /// The connector reported.
        connector: u32,
        /// Its state.
        state: ConnectorStage,
    },
    /// Authorize.
    Authorize {
        /// The id tag (2.x idToken) to check.
        id_tag: String,
    },
    /// 1.6 StartTransaction, 2.x TransactionEvent(Started).
    TxStarted {
        /// The transaction.
        tx: TxRef,
        /// The meter at the start.
        reading: MeterSnapshot,
        /// Started by the CSMS (RemoteStart / RequestStartTransaction).
        remote: bool,
    },
    /// 1.6 MeterValues, 2.x TransactionEvent(Updated).
    TxUpdated {
        /// The transaction.
        tx: TxRef,
        /// The meter now.
        reading: MeterSnapshot,
        /// Asked for by TriggerMessage rather than periodic.
        triggered: bool,
    },
    /// 1.6 StopTransaction, 2.x TransactionEvent(Ended).
    TxEnded {
        /// The transaction.
        tx: TxRef,
        /// The meter at the end.
        reading: MeterSnapshot,
        /// Why it ended.
        reason: StationStopReason,
    },
    /// 1.6 MeterValues outside a transaction (TriggerMessage).
    Meter {
        /// The connector measured.
        connector: u32,
        /// The meter now.
        reading: MeterSnapshot,
    },
}

/// A CALL of the CSMS, read into what the charge point acts on.
#[derive(Debug, Clone, PartialEq)]
pub enum CsmsCommand {
    /// A command of the model ([`Command::from_request`]: remote start and stop, reset,
    /// trigger, a standard setting...), answered with an [`Outcome`]
    /// through [`Command::answer`].
    Model(Command),
    /// 1.6 ChangeConfiguration of a key the model does not name.
    ChangeConfiguration {
        /// The configuration key.
        key: String,
        /// Its new value.
        value: String,
    },
    /// 1.6 GetConfiguration (`None`: all keys).
    GetConfiguration {
        /// The keys asked for (`None`: all keys).
        keys: Option<Vec<String>>,
    },
    /// 2.x SetVariables the model does not read (several variables, or not a standard
    /// setting): (component, variable, value).
    SetVariables(Vec<(String, String, String)>),
    /// 2.x GetVariables: (component, variable).
    GetVariables(Vec<(String, String)>),
    /// DataTransfer.
    DataTransfer {
        /// vendorId.
        vendor_id: String,
        /// messageId, if given.
        message_id: Option<String>,
        /// data, if given.
        data: Option<String>,
    },
    /// A TriggerMessage the model does not read (a message it does not name, a 2.x
    /// connector): answered NotImplemented.
    OtherTrigger,
    /// Anything else: answered NotSupported.
    Other(&'static str),
}

/// The answer to setting one setting: a configuration key (1.6 ChangeConfiguration's
/// `ConfigurationStatus`) or a variable (2.x SetVariables' `attributeStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingStatus {
    /// Accepted.
    Accepted,
    /// Rejected.
    Rejected,
    /// 1.6: the key is unknown (NotSupported); 2.x: UnknownVariable.
    Unknown,
}

impl From<SettingStatus> for Outcome {
    /// The model's word for it (an unknown setting is `NotSupported`: 1.6 `NotSupported`,
    /// 2.x `UnknownVariable`).
    fn from(status: SettingStatus) -> Outcome {
        match status {
            SettingStatus::Accepted => Outcome::Accepted,
            SettingStatus::Rejected => Outcome::Rejected,
            SettingStatus::Unknown => Outcome::NotSupported,
        }
    }
}

/// `Accepted` or `Rejected`: a command's outcome when it is taken or not.
pub fn accepted(yes: bool) -> Outcome {
    if yes {
        Outcome::Accepted
    } else {
        Outcome::Rejected
    }
}

/// The answer to a [`CsmsCommand`] that is not the model's.
#[derive(Debug, Clone, PartialEq)]
pub enum CommandReply {
    /// TriggerMessage: NotImplemented.
    TriggerNotImplemented,
    /// 1.6 ChangeConfiguration.
    ChangeConfiguration(SettingStatus),
    /// Known keys (key, value, read-only) and unknown ones.
    GetConfiguration {
        /// (key, value, read-only).
        known: Vec<(String, String, bool)>,
        /// The keys asked for that do not exist.
        unknown: Vec<String>,
    },
    /// (component, variable, status).
    SetVariables(Vec<(String, String, SettingStatus)>),
    /// (component, variable, value if known).
    GetVariables(Vec<(String, String, Option<String>)>),
    /// DataTransfer (Accepted).
    DataTransfer,
}

/// A payload that did not come out right: a bug in this file, logged and skipped.
#[derive(Debug)]
pub struct PayloadError(
    /// What went wrong.
    pub String,
);

impl std::fmt::Display for PayloadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
