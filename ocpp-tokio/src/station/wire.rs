//! One connection of the station and what waits on it (the session handle's commands, the
//! handler's answer, SENDs refused for back-pressure), and the station's side of the shared
//! [`Driver`](crate::driver::Driver): [`StationSide`].

use super::driver::*;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use ocpp_proto::{Closed, Connection, Event};

use crate::charge_point::LinkCommand;
use crate::driver::{DriverSide, Flow, SendRetry};

/// One connection of the station and what waits on it (the core's `Connection` is the
/// driver's).
pub(super) struct Wire {
    /// Once the WebSocket is open.
    pub(super) online: Option<Online>,
    /// The session handle's SENDs refused for back-pressure, retried after the next write.
    pub(super) send_retry: SendRetry,
    /// The handler's answer to the central system's CALL being handled (the core delivers
    /// one at a time), polled by the driver as the server's side polls its own: the CALL's
    /// id, the answer to come.
    pub(super) answer: Option<PendingAnswer>,
    /// The core's end of the connection, for [`Task::ended`].
    pub(super) closed: Option<Box<Closed<CallWaiter>>>,
    /// Once closed: until when the last bytes may take to leave.
    linger: Option<Instant>,
}

impl Wire {
    pub(super) fn new() -> Self {
        Wire {
            online: None,
            send_retry: SendRetry::default(),
            answer: None,
            closed: None,
            linger: None,
        }
    }
}

/// The station's side of one connection, for the shared [`Driver`](crate::driver::Driver):
/// the task's commands and the session handle's, the core's events, the handlers' answers
/// and what is due (boot, heartbeat, held CALLs, the queue's head: [`Task::send_due`]), the
/// station's deadlines. It borrows the task (which owns the queue and the commands across
/// connections) for as long as the connection lasts.
pub(super) struct StationSide<'a> {
    pub(super) task: &'a mut Task,
    pub(super) wire: &'a mut Wire,
}

impl DriverSide for StationSide<'_> {
    type Caller = CallWaiter;

    /// None here: the station's commands come after what was read (see
    /// [`poll_handlers`](Self::poll_handlers)).
    fn poll_commands(
        &mut self,
        _: &mut Context<'_>,
        _: Instant,
        _: &mut Connection<CallWaiter>,
    ) -> Flow {
        Flow::Idle
    }

    fn on_event(
        &mut self,
        now: Instant,
        conn: &mut Connection<CallWaiter>,
        event: Event<CallWaiter>,
    ) {
        match event {
            Event::Closed(closed) => self.wire.closed = Some(closed),
            event => {
                self.task.on_event(self.wire, conn, now, event);
                self.task.publish();
            }
        }
    }

    /// After what was read and its events: the handlers' answers (a CALL a handler caused
    /// goes out after its answer), the station's commands (not once it is closing), the
    /// session handle's, then what is due. A close the application asks for acts after the
    /// bytes already read (the answer to a queued message that came with it counts).
    fn poll_handlers(
        &mut self,
        cx: &mut Context<'_>,
        now: Instant,
        conn: &mut Connection<CallWaiter>,
    ) -> bool {
        let mut progressed = false;
        if let Some((_, answer)) = &mut self.wire.answer {
            if let Poll::Ready(answer) = answer.as_mut().poll(cx) {
                progressed = true;
                if let Some((id, _)) = self.wire.answer.take() {
                    self.task.on_answer(conn, id, answer);
                }
            }
        }
        while !self.task.lifecycle.is_stopping() {
            let Poll::Ready(command) = self.task.commands.poll_recv(cx) else {
                break;
            };
            progressed = true;
            self.task.on_command(conn, command);
        }
        if let Some(on) = &mut self.wire.online {
            progressed |= crate::driver::poll_sends(&mut on.sends, cx);
        }
        if let Some(link) = self.wire.online.as_ref().map(|on| on.link.clone()) {
            while let Some(command) = link.pop(cx.waker()) {
                progressed = true;
                on_link_command(self.task, self.wire, conn, command);
            }
        }
        progressed | self.task.send_due(conn, now)
    }

    /// SENDs refused for back-pressure go again.
    fn on_written(&mut self, now: Instant, conn: &mut Connection<CallWaiter>) -> bool {
        let hook = self.task.message_hook();
        self.wire.send_retry.on_written(conn, hook, now)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.task.deadline()
    }

    /// Back to the higher-priority central systems when it is time (the close goes out with
    /// what is due next, [`Task::send_due`]).
    fn handle_timeout(&mut self, now: Instant, _: &mut Connection<CallWaiter>) {
        self.task.lifecycle.handle_timeout(now);
    }

    fn linger_until(&mut self, now: Instant, linger: Duration) -> Instant {
        *self.wire.linger.get_or_insert(now + linger)
    }
}

/// A command of the session's handle ([`Session::charge_point`](crate::Session::charge_point)):
/// its CALLs go the way of [`Station::call`](super::Station::call)'s, its SENDs the way of a
/// server's ([`SendRetry`]).
pub(super) fn on_link_command(
    task: &mut Task,
    wire: &mut Wire,
    conn: &mut Connection<CallWaiter>,
    command: LinkCommand,
) {
    let now = Instant::now();
    match command {
        LinkCommand::Call {
            request,
            reply,
            deadline,
        } => task.call(conn, request, reply, deadline),
        LinkCommand::Send { request, reply } => {
            let hook = task.message_hook();
            wire.send_retry.send(conn, hook, now, request, reply);
        }
        LinkCommand::Abort => conn.handle_eof(now),
        common => common.apply_common(conn, now),
    }
}
