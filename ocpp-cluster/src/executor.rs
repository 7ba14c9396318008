//! What the server supplies: the local execution of a command for a charge point it holds.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use ocpp_server_core::{CallFailure as LocalFailure, CallOutcome, ErrorCode, OcppVersion};

use crate::CallFailure;

/// A boxed future, as [`Executor::execute`] returns it.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// How one execution of a command on a local charge point ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommandOutcome {
    /// The CALLRESULT's payload, JSON text.
    Result(String),
    /// The CALLERROR's code, description and details (JSON text, `{}` when none).
    CallError {
        /// The OCPP error code.
        code: String,
        /// The error description.
        description: String,
        /// The error details, JSON text.
        details: String,
    },
    /// The charge point is not (or no longer) connected here, and the CALL was **not** sent
    /// (a caller may route a command answered so once more, to wherever the charge point moved).
    NotConnected,
    /// The charge point did not answer within the timeout it was given.
    Timeout,
}

impl CommandOutcome {
    /// How a local CALL ended, as the command's outcome: the one mapping every node uses
    /// (mio and tokio alike), so that the same event gets the same answer on every path. The
    /// CALLERROR code is spelled for `version`. A CALL that was sent and got no answer
    /// (timeout, connection lost) is [`CommandOutcome::Timeout`]: it may have run, so it must
    /// not be routed again; one that was never written because the charge point is gone is
    /// [`CommandOutcome::NotConnected`], which may be routed again.
    ///
    /// ```
    /// use ocpp_cluster::CommandOutcome;
    /// use ocpp_server_core::{CallFailure, OcppVersion};
    /// let lost = CommandOutcome::from_call(OcppVersion::V1_6, &Err(CallFailure::Disconnected));
    /// assert_eq!(lost, CommandOutcome::Timeout);
    /// let gone = CommandOutcome::from_call(OcppVersion::V1_6, &Err(CallFailure::ClosedBeforeSent));
    /// assert_eq!(gone, CommandOutcome::NotConnected);
    /// ```
    pub fn from_call(version: OcppVersion, outcome: &CallOutcome) -> Self {
        let error = |code: ErrorCode, description: String| CommandOutcome::CallError {
            code: code.as_str(version).to_owned(),
            description,
            details: "{}".to_owned(),
        };
        let failure = match outcome {
            Ok(response) => {
                return match serde_json::to_string(response) {
                    Ok(payload) => CommandOutcome::Result(payload),
                    Err(e) => error(ErrorCode::InternalError, format!("CALLRESULT: {e}")),
                }
            }
            Err(failure) => failure,
        };
        match failure {
            LocalFailure::ErrorResponse {
                code,
                description,
                details,
            } => CommandOutcome::CallError {
                code: code.as_str(version).to_owned(),
                description: description.clone(),
                details: details.clone(),
            },
            LocalFailure::InvalidResponse { description } => error(
                ErrorCode::GenericError,
                format!("invalid CALLRESULT: {description}"),
            ),
            LocalFailure::NotConnected | LocalFailure::ClosedBeforeSent => {
                CommandOutcome::NotConnected
            }
            // Past the command's deadline before it could be written: its caller has stopped
            // waiting and was told `timeout` (PROTOCOL.md: "or the command arrived past it and
            // was not sent").
            LocalFailure::DeadlinePassed => CommandOutcome::Timeout,
            failure if failure.may_have_reached_peer() => CommandOutcome::Timeout,
            not_sent => error(
                ErrorCode::GenericError,
                format!("the CALL was not sent: {not_sent}"),
            ),
        }
    }

    /// The outcome as the caller of [`Cluster::call`](crate::Cluster::call) sees it.
    pub fn into_result(self) -> Result<String, CallFailure> {
        match self {
            CommandOutcome::Result(payload) => Ok(payload),
            CommandOutcome::CallError {
                code,
                description,
                details,
            } => Err(CallFailure::CallError {
                code,
                description,
                details,
            }),
            CommandOutcome::NotConnected => Err(CallFailure::NotConnected),
            CommandOutcome::Timeout => Err(CallFailure::Timeout),
        }
    }
}

/// Sends a command to a charge point held by this node and waits for its answer: the server's
/// half of routing. The cluster calls it at most once per command id, never past the command's
/// deadline, and gives it the time left before that deadline.
///
/// ```
/// use std::time::Duration;
/// use ocpp_cluster::{BoxFuture, CommandOutcome, Executor};
///
/// struct Echo;
/// impl Executor for Echo {
///     fn execute(&self, _identity: &str, _action: &str, payload_json: &str, _timeout: Duration)
///         -> BoxFuture<CommandOutcome>
///     {
///         let payload = payload_json.to_owned();
///         Box::pin(async move { CommandOutcome::Result(payload) })
///     }
/// }
/// ```
pub trait Executor: Send + Sync + 'static {
    /// Sends the CALL `action` with `payload_json` to the charge point `identity` and resolves
    /// to its answer, or to [`CommandOutcome::Timeout`] after `timeout`.
    fn execute(
        &self,
        identity: &str,
        action: &str,
        payload_json: &str,
        timeout: Duration,
    ) -> BoxFuture<CommandOutcome>;
}

impl<F> Executor for F
where
    F: Fn(&str, &str, &str, Duration) -> BoxFuture<CommandOutcome> + Send + Sync + 'static,
{
    fn execute(
        &self,
        identity: &str,
        action: &str,
        payload_json: &str,
        timeout: Duration,
    ) -> BoxFuture<CommandOutcome> {
        self(identity, action, payload_json, timeout)
    }
}
