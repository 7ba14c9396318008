//! One connection of the station and what waits on it: the CALLs the registration holds, the
//! session handle's commands, and what a TriggerMessage asks for.

use super::driver::*;
use std::collections::VecDeque;
use std::future::poll_fn;
use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;

use ocpp_messages::{Request, Response};
use ocpp_proto::station::{is_transaction_message, triggered_action};
use ocpp_proto::{Answer, CallFailure};

use super::queue::Queue;
use super::Cause;
use crate::charge_point::{CallReply, Link, LinkCommand};
use crate::error::SendError;

/// One connection of the station and what waits on it.
pub(super) struct Wire {
    pub(super) conn: Connection,
    /// Once the WebSocket is open.
    pub(super) online: Option<Online>,
    /// The application's CALLs the registration does not allow yet.
    pub(super) held: VecDeque<Held>,
    /// [`Station::close`](super::Station::close) closed it.
    pub(super) closing: bool,
    /// [`Station::reboot`](super::Station::reboot) closed it.
    pub(super) rebooting: bool,
    /// A TriggerMessage(BootNotification) was accepted: boot now.
    pub(super) boot_now: bool,
    /// The station closed it for this reason (the boot went unanswered).
    pub(super) given_up: Option<Cause>,
}

impl Wire {
    pub(super) fn new(conn: Connection) -> Self {
        Wire {
            conn,
            online: None,
            held: VecDeque::new(),
            closing: false,
            rebooting: false,
            boot_now: false,
            given_up: None,
        }
    }

    /// An application's CALL: a transaction message joins the queue; any other waits here
    /// until the registration allows it (also during the handshake), or the connection ends.
    /// Its deadline (by default the call timeout from now) covers it held, queued and in
    /// flight (a held CALL past it ends [`CallFailure::DeadlinePassed`], never sent).
    pub(super) fn call(
        &mut self,
        request: Request,
        reply: CallReply,
        deadline: Option<Instant>,
        queue: &mut Queue,
    ) {
        if is_transaction_message(&request) {
            queue_call(queue, request, reply);
        } else {
            let deadline =
                deadline.unwrap_or_else(|| Instant::now() + self.conn.config().get_call_timeout());
            self.held.push_back(Held {
                request,
                reply,
                deadline,
            });
        }
    }
}

/// An application's CALL that waits for the registration to allow it.
pub(super) struct Held {
    pub(super) request: Request,
    pub(super) reply: CallReply,
    /// Not sent after this; answered by then.
    pub(super) deadline: Instant,
}

/// A command of the session's handle ([`Session::charge_point`](crate::Session::charge_point)):
/// its CALLs go the way of [`Station::call`](super::Station::call)'s.
pub(super) fn on_link_command(wire: &mut Wire, command: LinkCommand, queue: &mut Queue) {
    let now = Instant::now();
    match command {
        LinkCommand::Call {
            request,
            reply,
            deadline,
        } => wire.call(request, reply, deadline, queue),
        LinkCommand::Send { request, reply } => {
            let result = wire
                .conn
                .send(now, request)
                .map(|_| ())
                .map_err(|refused| SendError::from(refused.reason));
            let _ = reply.send(result);
        }
        LinkCommand::Close { code, reason } => wire.conn.close(now, code, &reason),
        LinkCommand::Settings(settings) => {
            let config = settings.apply((**wire.conn.config()).clone());
            wire.conn.set_config(now, Arc::new(config));
        }
        LinkCommand::Abort => wire.conn.handle_eof(now),
    }
}

/// A transaction message through [`Station::call`](super::Station::call): queued, and the
/// caller gets its outcome once delivered.
pub(super) fn queue_call(queue: &mut Queue, request: Request, reply: CallReply) {
    match queue.push(&request, None) {
        Ok((_, outcome)) => {
            tokio::spawn(async move {
                let outcome = outcome.await.unwrap_or(Err(CallFailure::NotConnected));
                reply.send(outcome);
            });
        }
        Err(error) => {
            reply.send(Err(CallFailure::InvalidRequest {
                description: format!("not queued: {error}"),
            }));
        }
    }
}

/// The next command of a session's handle.
pub(super) async fn next_link_command(link: Option<&Link>) -> LinkCommand {
    match link {
        Some(link) => {
            poll_fn(|cx| match link.pop(cx.waker()) {
                Some(command) => Poll::Ready(command),
                None => Poll::Pending,
            })
            .await
        }
        None => std::future::pending().await,
    }
}

/// A TriggerMessage's requested message, as the action it makes the station send.
pub(super) fn requested_by_trigger(request: &Request) -> Option<&'static str> {
    if request.action() != "TriggerMessage" {
        return None;
    }
    let payload = serde_json::to_value(request).ok()?;
    let requested = payload.get("requestedMessage")?.as_str()?;
    triggered_action(request.version(), requested)
}

/// Whether an answer says `"status": "Accepted"`.
pub(super) fn answer_accepted(answer: &Answer) -> bool {
    let Answer::Result(response) = answer else {
        return false;
    };
    let response: &Response = response;
    serde_json::to_value(response)
        .ok()
        .and_then(|v| {
            v.get("status")
                .and_then(|s| s.as_str())
                .map(|s| s == "Accepted")
        })
        .unwrap_or(false)
}
