//! What the server supplies: the local execution of a command for a charge point it holds.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use ocpp_proto::{CallFailure, CallOutcome};

/// A boxed future, as [`Executor::execute`] returns it.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// What a command came to, on every path (run here, or routed to the node holding the charge
/// point): the CALLRESULT's payload as JSON text, or the core's [`CallFailure`], the same
/// vocabulary a local CALL ends with. Each failure says whether the CALL may have reached the
/// charge point ([`CallFailure::delivery`]).
pub type JsonCallOutcome = Result<String, CallFailure>;

/// How a local CALL ended, as the command's outcome: the typed CALLRESULT as JSON text, every
/// failure as it is. The one conversion every node uses (mio and tokio alike).
///
/// ```
/// use ocpp_cluster::command_outcome;
/// use ocpp_proto::CallFailure;
/// let lost = command_outcome(&Err(CallFailure::Disconnected));
/// assert_eq!(lost, Err(CallFailure::Disconnected));
/// ```
pub fn command_outcome(outcome: &CallOutcome) -> JsonCallOutcome {
    match outcome {
        Ok(response) => serde_json::to_string(response).map_err(|e| CallFailure::InvalidResponse {
            description: format!("the CALLRESULT does not serialise: {e}"),
        }),
        Err(failure) => Err(failure.clone()),
    }
}

/// Sends a command to a charge point held by this node and waits for its answer: the server's
/// half of routing. The cluster calls it at most once per command id, never past the command's
/// deadline, and gives it the time left before that deadline.
///
/// The answer is the CALL's outcome as the connection gave it ([`command_outcome`]); for a
/// charge point not connected here, [`CallFailure::NotConnected`] (not sent: the caller may
/// route the command once more); for an action or payload that does not fit the charge
/// point's OCPP version, [`CallFailure::InvalidRequest`] (not sent), never a CALLERROR made up
/// in the charge point's name.
///
/// ```
/// use std::time::Duration;
/// use ocpp_cluster::{BoxFuture, Executor, JsonCallOutcome};
///
/// struct Echo;
/// impl Executor for Echo {
///     fn execute(&self, _identity: &str, _action: &str, payload_json: &str, _timeout: Duration)
///         -> BoxFuture<JsonCallOutcome>
///     {
///         let payload = payload_json.to_owned();
///         Box::pin(async move { Ok(payload) })
///     }
/// }
/// ```
pub trait Executor: Send + Sync + 'static {
    /// Sends the CALL `action` with `payload_json` to the charge point `identity` and resolves
    /// to its answer, or to [`CallFailure::Timeout`] after `timeout`.
    fn execute(
        &self,
        identity: &str,
        action: &str,
        payload_json: &str,
        timeout: Duration,
    ) -> BoxFuture<JsonCallOutcome>;
}

impl<F> Executor for F
where
    F: Fn(&str, &str, &str, Duration) -> BoxFuture<JsonCallOutcome> + Send + Sync + 'static,
{
    fn execute(
        &self,
        identity: &str,
        action: &str,
        payload_json: &str,
        timeout: Duration,
    ) -> BoxFuture<JsonCallOutcome> {
        self(identity, action, payload_json, timeout)
    }
}
