//! One hook for every OCPP message in and out (logging, metrics): nothing is built when unset.

use std::io;
use std::sync::Arc;

use ocpp_messages::{Request, Response};
use ocpp_proto::{Answer, AnswerError, CallOutcome, ErrorCode, MessageId};

/// The hook's type: see [`ServerBuilder::on_message`](crate::ServerBuilder::on_message).
pub(crate) type Hook = Arc<dyn Fn(&MessageEvent<'_>) + Send + Sync>;

/// One OCPP message of one charge point, as the hook sees it.
#[derive(Debug, Clone, Copy)]
pub struct MessageEvent<'a> {
    /// The charge point.
    pub identity: &'a str,
    /// The message id.
    pub id: &'a MessageId<'static>,
    /// What it is.
    pub message: Traffic<'a>,
}

/// The traffic of a [`MessageEvent`]: which OCPP message went in or out.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Traffic<'a> {
    /// In: a CALL of the charge point, handed to [`Handler::on_call`](crate::Handler::on_call).
    CallIn(&'a Request),
    /// Out: our CALLRESULT to it.
    ResultOut(&'a Response),
    /// Out: our CALLERROR to it.
    ErrorOut {
        /// The code.
        code: &'a ErrorCode,
        /// The description.
        description: &'a str,
    },
    /// In: a SEND of the charge point (OCPP 2.1).
    SendIn(&'a Request),
    /// Out: our CALL.
    CallOut(&'a Request),
    /// In: how our CALL ended, as its caller sees it (a result, a CALLERROR, a timeout, an
    /// answer that does not decode).
    OutcomeIn(&'a CallOutcome),
    /// Out: our SEND (OCPP 2.1).
    SendOut(&'a Request),
}

impl<'a> Traffic<'a> {
    /// What went out for `answer` given to the core's answer rule (`result`): the answer, the
    /// `InternalError` the rule sent in its place (its text kept in `replaced`), or nothing.
    /// One reading for the server's and the station's drivers.
    pub(crate) fn answered(
        result: &Result<(), AnswerError>,
        answer: &'a Answer,
        replaced: &'a mut String,
    ) -> Option<Traffic<'a>> {
        match (result, answer) {
            (Err(error), _) if error.was_answered() => {
                *replaced = error.to_string();
                let replaced: &'a String = replaced;
                Some(Traffic::ErrorOut {
                    code: &ErrorCode::InternalError,
                    description: replaced,
                })
            }
            (Ok(()), Answer::Result(response)) => Some(Traffic::ResultOut(response)),
            (Ok(()), Answer::Error(error)) => Some(Traffic::ErrorOut {
                code: &error.code,
                description: &error.description,
            }),
            _ => None, // nothing went out
        }
    }
}

/// The hook of [`ServerBuilder::on_tls_error`](crate::ServerBuilder::on_tls_error).
pub(crate) type TlsErrorHook = Arc<dyn Fn(&io::Error) + Send + Sync>;
