//! What the hooks see of a message ([`RelayedMessage`]) and what a station's CALL hook decides
//! ([`StationCallDecision`]).

#[cfg(doc)]
use crate::LocalControllerBuilder;
use crate::{Envelope, Leg};

/// One message of a station pair, as the hooks see it: the text exactly as relayed and its
/// parsed envelope (`None` when the text is not OCPP-J; it is relayed all the same).
#[derive(Debug, Clone, Copy)]
pub struct RelayedMessage<'a> {
    /// The station's identity.
    pub identity: &'a str,
    /// Which way it goes.
    pub direction: Leg,
    /// The text, byte for byte.
    pub text: &'a str,
    /// Its envelope.
    pub envelope: Option<Envelope<'a>>,
}

/// What to do with a station's CALL ([`LocalControllerBuilder::on_station_call`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StationCallDecision {
    /// Relay it to the central system.
    Forward,
    /// Answer it here with this CALLRESULT or CALLERROR text; the central system never sees
    /// the CALL.
    Answer(String),
}

impl StationCallDecision {
    /// Answers with a CALLRESULT `[3,"<id>",<payload>]`.
    ///
    /// ```
    /// use ocpp_local_controller::StationCallDecision;
    /// let payload = serde_json::json!({"status": "Accepted"});
    /// let decision = StationCallDecision::result("42", &payload);
    /// let answer = r#"[3,"42",{"status":"Accepted"}]"#;
    /// assert_eq!(decision, StationCallDecision::Answer(answer.into()));
    /// ```
    pub fn result(id: &str, payload: &serde_json::Value) -> StationCallDecision {
        StationCallDecision::Answer(serde_json::json!([3, id, payload]).to_string())
    }

    /// Answers with a CALLERROR `[4,"<id>","<code>","<description>",{}]`.
    ///
    /// ```
    /// use ocpp_local_controller::StationCallDecision;
    /// let decision = StationCallDecision::error("42", "NotSupported", "not here");
    /// let answer = r#"[4,"42","NotSupported","not here",{}]"#;
    /// assert_eq!(decision, StationCallDecision::Answer(answer.into()));
    /// ```
    pub fn error(id: &str, code: &str, description: &str) -> StationCallDecision {
        StationCallDecision::Answer(serde_json::json!([4, id, code, description, {}]).to_string())
    }
}
