//! The `MessageTypeId`: the first element of every OCPP-J RPC frame.

use core::fmt;

use crate::version::OcppVersion;

/// The message type number that opens every RPC frame (OCPP-J 1.6 §4.1.3, OCPP 2.0.1 Part 4
/// §4.1.3, OCPP 2.1 Part 4 §4.1.3).
///
/// 2, 3 and 4 exist in every version; 5 (CALLRESULTERROR) and 6 (SEND) only in OCPP 2.1.
///
/// ```
/// use ocpp_messages::envelope::MessageTypeId;
/// use ocpp_messages::version::OcppVersion;
///
/// assert_eq!(MessageTypeId::from_number(2), Some(MessageTypeId::Call));
/// assert_eq!(MessageTypeId::for_version(6, OcppVersion::V2_1), Some(MessageTypeId::Send));
/// assert_eq!(MessageTypeId::for_version(6, OcppVersion::V2_0_1), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MessageTypeId {
    /// 2, CALL: a request, `[2,"<id>","<Action>",{payload}]`.
    Call,
    /// 3, CALLRESULT: the answer to a CALL, `[3,"<id>",{payload}]`.
    CallResult,
    /// 4, CALLERROR: the error answer to a CALL, `[4,"<id>","<code>","<description>",{details}]`.
    CallError,
    /// 5, CALLRESULTERROR (2.1 only): answers a CALLRESULT that could not be processed; same
    /// layout as CALLERROR.
    CallResultError,
    /// 6, SEND (2.1 only): an unanswered message, `[6,"<id>","<Action>",{payload}]`.
    Send,
}

impl MessageTypeId {
    /// The number on the wire.
    #[must_use]
    pub const fn number(self) -> u8 {
        match self {
            MessageTypeId::Call => 2,
            MessageTypeId::CallResult => 3,
            MessageTypeId::CallError => 4,
            MessageTypeId::CallResultError => 5,
            MessageTypeId::Send => 6,
        }
    }

    /// The type for a number, whatever the version, or `None` if no version defines it.
    #[must_use]
    pub const fn from_number(number: i64) -> Option<MessageTypeId> {
        match number {
            2 => Some(MessageTypeId::Call),
            3 => Some(MessageTypeId::CallResult),
            4 => Some(MessageTypeId::CallError),
            5 => Some(MessageTypeId::CallResultError),
            6 => Some(MessageTypeId::Send),
            _ => None,
        }
    }

    /// The type for a number if `version` defines it: 5 and 6 are unknown on 1.6 and 2.0.1.
    #[must_use]
    pub const fn for_version(number: i64, version: OcppVersion) -> Option<MessageTypeId> {
        match MessageTypeId::from_number(number) {
            Some(t) if t.exists_in(version) => Some(t),
            _ => None,
        }
    }

    /// Whether `version` defines this type (CALLRESULTERROR and SEND are OCPP 2.1 only).
    #[must_use]
    pub const fn exists_in(self, version: OcppVersion) -> bool {
        match self {
            MessageTypeId::Call | MessageTypeId::CallResult | MessageTypeId::CallError => true,
            MessageTypeId::CallResultError | MessageTypeId::Send => {
                matches!(version, OcppVersion::V2_1)
            }
        }
    }

    /// The specification's name in capitals: `CALL`, `CALLRESULT`, `CALLERROR`,
    /// `CALLRESULTERROR`, `SEND`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            MessageTypeId::Call => "CALL",
            MessageTypeId::CallResult => "CALLRESULT",
            MessageTypeId::CallError => "CALLERROR",
            MessageTypeId::CallResultError => "CALLRESULTERROR",
            MessageTypeId::Send => "SEND",
        }
    }
}

impl fmt::Display for MessageTypeId {
    /// Writes the specification's name, e.g. `CALLERROR`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_round_trip() {
        for n in 2..=6 {
            let t = MessageTypeId::from_number(n).unwrap();
            assert_eq!(i64::from(t.number()), n);
            assert!(t.exists_in(OcppVersion::V2_1));
        }
        for n in [-1, 0, 1, 7, 99, i64::MAX] {
            assert_eq!(MessageTypeId::from_number(n), None);
        }
    }

    #[test]
    fn five_and_six_are_2_1_only() {
        for v in [OcppVersion::V1_6, OcppVersion::V2_0_1] {
            assert_eq!(MessageTypeId::for_version(5, v), None);
            assert_eq!(MessageTypeId::for_version(6, v), None);
            assert_eq!(
                MessageTypeId::for_version(4, v),
                Some(MessageTypeId::CallError)
            );
        }
    }
}
