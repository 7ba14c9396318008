//! One hook for every OCPP message in and out (logging, metrics): nothing is built when unset.

use std::io;
use std::sync::Arc;
use std::time::Instant;

use ocpp_messages::{Request, Response};
use ocpp_proto::{Answer, AnswerError, CallOutcome, Connection, ErrorCode, MessageId, Refused};

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

/// The hook of one connection, with the identity its events name.
#[derive(Clone, Copy)]
pub(crate) struct ConnectionHook<'a> {
    pub(crate) hook: &'a Hook,
    pub(crate) identity: &'a str,
}

impl ConnectionHook<'_> {
    /// The hook sees `message`, of the message `id`.
    pub(crate) fn see(self, id: &MessageId<'static>, message: Traffic<'_>) {
        (self.hook)(&MessageEvent {
            identity: self.identity,
            id,
            message,
        });
    }
}

/// Our CALL onto the connection, for `caller` ([`Connection::call_for`]); `hook`, if any, sees
/// it once it went. One path for the server's and the station's drivers.
#[inline]
pub(crate) fn put_call<C>(
    conn: &mut Connection<C>,
    hook: Option<ConnectionHook<'_>>,
    now: Instant,
    request: Request,
    caller: C,
    deadline: Option<Instant>,
) -> Result<MessageId<'static>, Refused<(Request, C)>> {
    let hooked = hook.map(|hook| (hook, request.clone()));
    let sent = conn.call_for(now, request, caller, deadline);
    if let (Ok(id), Some((hook, request))) = (&sent, &hooked) {
        hook.see(id, Traffic::CallOut(request));
    }
    sent
}

/// An answer through the core's answer rule ([`Connection::answer`]); `hook`, if any, sees what
/// went out: the answer, the `InternalError` the rule sent in its place, or nothing. One path
/// for the server's and the station's drivers.
#[inline]
pub(crate) fn put_answer<C>(
    conn: &mut Connection<C>,
    hook: Option<ConnectionHook<'_>>,
    now: Instant,
    id: &MessageId<'static>,
    answer: Answer,
) -> Result<(), AnswerError> {
    let Some(hook) = hook else {
        return conn.answer(now, id, answer);
    };
    let hooked = answer.clone();
    let result = conn.answer(now, id, answer);
    let replaced;
    let message = match (&result, &hooked) {
        (Err(error), _) if error.was_answered() => {
            replaced = error.to_string();
            Traffic::ErrorOut {
                code: &ErrorCode::InternalError,
                description: &replaced,
            }
        }
        (Ok(()), Answer::Result(response)) => Traffic::ResultOut(response),
        (Ok(()), Answer::Error(error)) => Traffic::ErrorOut {
            code: &error.code,
            description: &error.description,
        },
        _ => return result, // nothing went out
    };
    hook.see(id, message);
    result
}

/// The hook of [`ServerBuilder::on_tls_error`](crate::ServerBuilder::on_tls_error).
pub(crate) type TlsErrorHook = Arc<dyn Fn(&io::Error) + Send + Sync>;
