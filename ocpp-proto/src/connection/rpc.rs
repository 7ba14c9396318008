//! OCPP-J over the open WebSocket: frames to RPC messages, calls and their correlation.

use std::time::Instant;

use ocpp_frame::{CloseCode, FrameHeader, Message, Opcode, Utf8Bytes};
use ocpp_messages::envelope::{
    self, Disposition, MessageId, MessageTypeId, ParseError, RpcMessage, SerializeError, Split,
};
use ocpp_messages::error_code::ErrorCode;
use ocpp_messages::version::OcppVersion;

use super::refusal::refuse;
use super::{Connection, OutgoingCall, RefusalReason, Refused};
use crate::timer::Timer;
use crate::{Answer, AnswerError, CallFailure, CloseReason, Event, Request, Response};

/// The description of the CALLERROR that refuses a CALL past the hold limit.
const SURPLUS_CALL: &str = "more CALLs outstanding than allowed (OCPP-J: one at a time)";

/// A peer CALL read from the wire, ready for its turn: delivered to the application, or
/// answered by the core. Decoded once, when it arrives.
#[derive(Debug)]
pub(super) enum Turn {
    /// Decoded and schema-checked: an [`Event::Call`] when its turn comes.
    Deliver {
        id: MessageId<'static>,
        request: Request,
    },
    /// It did not decode: the core answers with this CALLERROR.
    Refuse {
        id: MessageId<'static>,
        code: ErrorCode,
        description: String,
    },
    /// It did not parse as a CALL: the reply the envelope rules ask for.
    Reply {
        id: Option<MessageId<'static>>,
        disposition: Disposition,
    },
}

impl Turn {
    /// The CALL's id, when it could be read.
    #[inline]
    pub(super) fn id(&self) -> Option<&MessageId<'static>> {
        match self {
            Turn::Deliver { id, .. } | Turn::Refuse { id, .. } => Some(id),
            Turn::Reply { id, .. } => id.as_ref(),
        }
    }
}

impl Connection {
    /// Sends a CALL, or queues it behind the one in flight (OCPP-J: one outstanding CALL per
    /// direction). Returns its id; its end comes as [`Event::CallCompleted`] (result, error or
    /// timeout), or in [`crate::Closed::unanswered_outgoing`] if the connection ends first.
    ///
    /// # Errors
    /// [`RefusalReason::NotOpen`], [`RefusalReason::WrongVersion`] or
    /// [`RefusalReason::QueueFull`], with the request handed back.
    pub fn call(
        &mut self,
        now: Instant,
        request: Request,
    ) -> Result<MessageId<'static>, Refused<Request>> {
        self.call_for(now, request, (), None)
            .map_err(|refused| refuse(refused.reason, refused.message.0))
    }

    /// [`Connection::call`] with a deadline that holds wherever the CALL waits: a CALL still
    /// queued behind another at `deadline` ends unsent ([`CallFailure::DeadlinePassed`]: safe
    /// to retry) and is never written after it; once written, its answer must come by
    /// `deadline` or the call timeout, whichever is first ([`CallFailure::Timeout`]: it may
    /// have run). So a caller that gives up at `deadline` knows the CALL will not go out later.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use ocpp_proto::{v1_6, CallFailure, Connection, Event};
    ///
    /// fn remote_start(csms: &mut Connection) {
    ///     let now = Instant::now();
    ///     let request = v1_6::RemoteStartTransactionRequest::new("TAG1");
    ///     let deadline = now + Duration::from_secs(30);
    ///     if let Err(refused) = csms.call_with_deadline(now, request.into(), deadline) {
    ///         eprintln!("not sent: {}", CallFailure::from(refused.reason));
    ///     }
    /// }
    /// ```
    ///
    /// # Errors
    /// As [`Connection::call`], and [`RefusalReason::DeadlinePassed`] when `deadline` is not
    /// after `now`.
    pub fn call_with_deadline(
        &mut self,
        now: Instant,
        request: Request,
        deadline: Instant,
    ) -> Result<MessageId<'static>, Refused<Request>> {
        self.call_for(now, request, (), Some(deadline))
            .map_err(|refused| refuse(refused.reason, refused.message.0))
    }
}

impl<C> Connection<C> {
    /// A CALL that carries its caller: `caller` (a reply channel, a job's handle, whatever
    /// waits for the outcome) stays with the CALL, in flight or queued, and comes back with
    /// its end, in [`Event::CallCompleted`] or in [`crate::Closed::unanswered_outgoing`]; so
    /// a driver keeps no table of who waits, and a connection dropped without its `Closed`
    /// event drops its callers (a channel's receiver then learns it). `deadline` as in
    /// [`Connection::call_with_deadline`]; otherwise as [`Connection::call`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Instant;
    /// use ocpp_proto::{
    ///     v1_6, ChargePointIdentity, CloseCode, ConnectTarget, Connection, ConnectionConfig,
    /// };
    ///
    /// // Each CALL tagged with who asked (here a number; a driver gives a reply channel).
    /// let now = Instant::now();
    /// let identity = ChargePointIdentity::new("CP001".into(), true).unwrap();
    /// let target = ConnectTarget::new("csms.example", "/ocpp/CP001", identity);
    /// let config = Arc::new(ConnectionConfig::default());
    /// let mut station: Connection<u32> =
    ///     Connection::connect_with_callers(now, config, &target, [7; 16], 42).unwrap();
    /// // Not open yet: refused, and the caller comes back with the request.
    /// let refused = station
    ///     .call_for(now, v1_6::HeartbeatRequest {}.into(), 7, None)
    ///     .unwrap_err();
    /// assert_eq!(refused.message.1, 7);
    /// station.close(now, CloseCode::NORMAL, "");
    /// ```
    ///
    /// # Errors
    /// As [`Connection::call_with_deadline`] (`DeadlinePassed` only when `deadline` is not
    /// after `now`), with the request and the caller handed back.
    pub fn call_for(
        &mut self,
        now: Instant,
        request: Request,
        caller: C,
        deadline: Option<Instant>,
    ) -> Result<MessageId<'static>, Refused<(Request, C)>> {
        if deadline.is_some_and(|at| at <= now) {
            return Err(refuse(RefusalReason::DeadlinePassed, (request, caller)));
        }
        if !self.is_open() {
            return Err(refuse(RefusalReason::NotOpen, (request, caller)));
        }
        if request.version() != self.version {
            return Err(refuse(RefusalReason::WrongVersion, (request, caller)));
        }
        if self.exchange.queued_len() >= self.config.max_queued_calls {
            return Err(refuse(RefusalReason::QueueFull, (request, caller)));
        }
        let id = self.next_message_id();
        let call = OutgoingCall {
            id: id.clone(),
            request,
            caller,
            deadline,
        };
        // Nothing in flight means nothing queued (the queue is drained as the line frees):
        // send it at once, without passing through the queue.
        if self.exchange.outgoing().is_some() {
            self.exchange.queue_call(call);
            self.arm_queued_timer();
        } else {
            self.send_call(now, call);
        }
        Ok(id)
    }

    /// Answers the peer's CALL `id`: the one way to answer (OCPP-J: every CALL gets exactly one
    /// answer). A CALLRESULT is serialised straight into the output; a CALLERROR is spelled for
    /// the negotiated version (OCPP 2.x descriptions cut to 255 characters).
    ///
    /// An answer that cannot go out as given is the application's bug, and the peer is not
    /// sent a wrong payload: a result of another action than the CALL's, of another version,
    /// or one that does not serialise is replaced by CALLERROR `InternalError`, and the error
    /// says what happened ([`AnswerError::was_answered`] is then true). Never refused for
    /// back-pressure: the core owes at most one answer at a time and stops asking for input
    /// while the output is full ([`Connection::wants_read`]).
    ///
    /// ```
    /// use std::time::Instant;
    /// use ocpp_proto::{v1_6, Answer, Connection, DateTime, Event};
    ///
    /// fn on_event(csms: &mut Connection, event: Event) {
    ///     if let Event::Call { id, request } = event {
    ///         let answer = match request.action() {
    ///             "Heartbeat" => Answer::result(v1_6::HeartbeatResponse::new(DateTime::now())),
    ///             action => Answer::not_supported(action),
    ///         };
    ///         if let Err(error) = csms.answer(Instant::now(), &id, answer) {
    ///             eprintln!("{error}");
    ///         }
    ///     }
    /// }
    /// ```
    ///
    /// # Errors
    /// [`AnswerError::NotOpen`] or [`AnswerError::UnknownId`]: nothing was written.
    /// [`AnswerError::WrongAction`], [`AnswerError::WrongVersion`] or
    /// [`AnswerError::Serialize`]: CALLERROR `InternalError` was written in its place.
    pub fn answer(
        &mut self,
        now: Instant,
        id: &MessageId<'_>,
        answer: Answer,
    ) -> Result<(), AnswerError> {
        let _ = now; // an answer starts no timer; `now` keeps the mutators' shape
        if !self.is_open() {
            return Err(AnswerError::NotOpen);
        }
        let Some(action) = self.exchange.awaited_action(id) else {
            return Err(AnswerError::UnknownId);
        };
        let refused = match answer {
            Answer::Error(error) => {
                self.write_call_error(id, &error.code, &error.description);
                None
            }
            Answer::Result(response) if !same_action(response.action(), action) => {
                Some(AnswerError::WrongAction {
                    call: action,
                    answer: response.action(),
                })
            }
            Answer::Result(response) if response.version() != self.version => {
                Some(AnswerError::WrongVersion {
                    connection: self.version,
                    answer: response.version(),
                })
            }
            Answer::Result(response) => self
                .write_message(|out| envelope::write_call_result(out, id, &response))
                .err()
                .map(|_| AnswerError::Serialize),
        };
        if let Some(error) = &refused {
            let description = error.to_string();
            self.write_call_error(id, &ErrorCode::InternalError, &description);
        }
        self.answered();
        refused.map_or(Ok(()), Err)
    }

    /// The awaited CALL was answered: the next held one takes its turn.
    fn answered(&mut self) {
        self.exchange.answered();
        self.release_held();
    }

    /// Sends a SEND (OCPP 2.1, e.g. NotifyPeriodicEventStream): never answered, never queued.
    ///
    /// # Errors
    /// [`RefusalReason::NotOpen`], [`RefusalReason::SendNeedsV21`],
    /// [`RefusalReason::Backpressure`] (write the output out, then retry) or
    /// [`RefusalReason::Serialize`], with the request handed back.
    pub fn send(
        &mut self,
        now: Instant,
        request: Request,
    ) -> Result<MessageId<'static>, Refused<Request>> {
        let _ = now; // a SEND starts no timer; `now` keeps the mutators' shape
        if !self.is_open() {
            return Err(refuse(RefusalReason::NotOpen, request));
        }
        if self.version != OcppVersion::V2_1 || request.version() != OcppVersion::V2_1 {
            return Err(refuse(RefusalReason::SendNeedsV21, request));
        }
        if self.pending_transmit_len() >= self.config.max_outbound_bytes {
            return Err(refuse(RefusalReason::Backpressure, request));
        }
        let id = self.next_message_id();
        let action = request.action();
        let written = self.write_message(|out| envelope::write_send(out, &id, action, &request));
        if written.is_err() {
            return Err(refuse(RefusalReason::Serialize, request));
        }
        Ok(id)
    }

    /// Writes `text` as one text message, byte for byte (relay mode,
    /// [`ConnectionConfig::relay_text`](crate::ConnectionConfig::relay_text): a message of
    /// the other hop, forwarded unchanged). Nothing checks that it is OCPP-J.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Instant;
    /// use ocpp_proto::{Connection, ConnectionConfig, RefusalReason};
    ///
    /// let config = Arc::new(ConnectionConfig::default().relay_text(true));
    /// let mut csms = Connection::accept_incoming(Instant::now(), config);
    /// // Not open yet: handed back.
    /// let refused = csms.send_text(Instant::now(), "[2,\"1\",\"Heartbeat\",{}]");
    /// assert_eq!(refused, Err(RefusalReason::NotOpen));
    /// ```
    ///
    /// # Errors
    /// [`RefusalReason::NotOpen`], or [`RefusalReason::Backpressure`] while the unsent output
    /// is over [`ConnectionConfig::max_outbound_bytes`](crate::ConnectionConfig::max_outbound_bytes).
    pub fn send_text(&mut self, now: Instant, text: &str) -> Result<(), RefusalReason> {
        let _ = now; // starts no timer; `now` keeps the mutators' shape
        if !self.is_open() {
            return Err(RefusalReason::NotOpen);
        }
        if self.pending_transmit_len() >= self.config.max_outbound_bytes {
            return Err(RefusalReason::Backpressure);
        }
        self.write_message(|out| {
            out.extend_from_slice(text.as_bytes());
            Ok(())
        })
        .map_err(|_| RefusalReason::Serialize)
    }

    /// Feeds bytes of the open WebSocket to the frame decoder and handles each message.
    pub(super) fn handle_frames(&mut self, now: Instant, data: &[u8]) {
        self.timers.note_input(now);
        let mut input = data;
        while !self.is_closed() {
            match self.decoder.decode(input) {
                Ok(decoded) => {
                    input = &input[decoded.consumed..];
                    match decoded.message {
                        Some(message) => self.on_message(now, message),
                        None => return,
                    }
                }
                Err(error) => {
                    // RFC 6455 §7.1.7 "Fail the WebSocket Connection": send a close frame with
                    // the error's code and end without waiting for the peer's.
                    self.fail_connection(error);
                    return;
                }
            }
        }
    }

    fn on_message(&mut self, now: Instant, message: Message) {
        match message {
            Message::Text(text) => {
                if self.is_open() {
                    if self.config.relay_text {
                        self.push_event(Event::Text(text.as_str().to_owned()));
                    } else {
                        self.on_text(now, &text);
                    }
                }
            }
            Message::Binary(_) => {
                if self.is_open() {
                    self.start_close(
                        now,
                        CloseCode::UNSUPPORTED_DATA,
                        "OCPP-J uses text frames",
                        CloseReason::OcppViolation {
                            code: CloseCode::UNSUPPORTED_DATA,
                            description: "binary frame".into(),
                        },
                    );
                }
            }
            Message::Ping(payload) => {
                self.write_control(Opcode::Pong, &payload);
                self.check_slow_peer();
            }
            Message::Pong(_) => self.timers.stop(Timer::Pong),
            Message::Close(frame) => self.on_close_frame(frame),
        }
    }

    /// Handles one text message: parsed once, a CALL decoded once.
    fn on_text(&mut self, now: Instant, text: &Utf8Bytes) {
        if self.on_plain_text(now, text.as_str()) {
            return;
        }
        let version = self.version;
        match envelope::parse_str(text.as_str(), version) {
            Ok(RpcMessage::Call(call)) => {
                let turn = self.read_call(&call.id, &call.action, call.payload.get());
                self.take_turn_or_hold(turn);
            }
            Ok(RpcMessage::Send(send)) => {
                let options = &self.config.decode_options;
                // A SEND is never answered (OCPP 2.1 Part 4 §4.2.6): one that does not decode
                // is dropped.
                if let Ok(request) =
                    Request::decode(version, &send.action, send.payload.get(), options)
                {
                    let id = send.id.into_owned();
                    self.push_event(Event::Send { id, request });
                }
            }
            Ok(RpcMessage::CallResult(result)) => {
                if !self.is_outgoing(&result.id) {
                    let id = result.id.into_owned();
                    self.push_event(Event::UnmatchedResponse { id });
                    return;
                }
                let action = self.outgoing_action();
                let options = &self.config.decode_options;
                match Response::decode(version, action, result.payload.get(), options) {
                    Ok(response) => self.complete_outgoing(now, Ok(response)),
                    Err(error) => {
                        let description = error.to_string();
                        if version == OcppVersion::V2_1 {
                            let code = error.error_code();
                            let id = &result.id;
                            let _ = self.write_message(|out| {
                                envelope::write_call_result_error(
                                    out,
                                    id,
                                    &code,
                                    &description,
                                    None,
                                )
                            });
                        }
                        self.complete_outgoing(
                            now,
                            Err(CallFailure::InvalidResponse { description }),
                        );
                    }
                }
            }
            Ok(RpcMessage::CallError(error)) => {
                if !self.is_outgoing(&error.id) {
                    let id = error.id.into_owned();
                    self.push_event(Event::UnmatchedResponse { id });
                    return;
                }
                let outcome = Err(CallFailure::ErrorResponse {
                    code: error.code.clone(),
                    description: error.description.to_string(),
                    details: error.details_json().to_owned(),
                });
                self.complete_outgoing(now, outcome);
            }
            Ok(RpcMessage::CallResultError(error)) => {
                self.push_event(Event::CallResultError {
                    id: error.id.into_owned(),
                    code: error.code.clone(),
                    description: error.description.to_string(),
                });
            }
            Err(error) if is_call_error(&error, version) => {
                let turn = Turn::Reply {
                    id: error.id().cloned(),
                    disposition: error.respond(version),
                };
                self.take_turn_or_hold(turn);
            }
            Err(error) => {
                // A broken answer to our CALL still ends it, rather than leaving it to time out.
                let answers_ours = matches!(
                    error.message_type(),
                    Some(MessageTypeId::CallResult | MessageTypeId::CallError)
                ) && error.id().is_some_and(|id| self.is_outgoing(id));
                if answers_ours {
                    let description = error.to_string();
                    self.complete_outgoing(now, Err(CallFailure::InvalidResponse { description }));
                }
                self.write_disposition(&error.respond(version));
            }
        }
    }

    /// Decodes a peer CALL with the negotiated version's types.
    /// The fast way for a plain CALL, and a plain CALLRESULT to our CALL in flight
    /// ([`envelope::split`]): the payload is decoded in the one pass over it. Returns `false`,
    /// having changed nothing, for everything else and for a payload that does not decode:
    /// [`Self::on_text`] then reads the frame with [`envelope::parse_str`], whose answer says
    /// precisely what was wrong (`split` promises the same reading whenever the payload decodes).
    fn on_plain_text(&mut self, now: Instant, text: &str) -> bool {
        match envelope::split(text) {
            Some(Split::Call {
                id,
                action,
                payload,
            }) => {
                let turn = self.read_call(&id, action, payload);
                let delivered = matches!(turn, Turn::Deliver { .. });
                if delivered {
                    self.take_turn_or_hold(turn);
                }
                delivered
            }
            Some(Split::CallResult { id, payload }) if self.is_outgoing(&id) => {
                let options = &self.config.decode_options;
                match Response::decode(self.version, self.outgoing_action(), payload, options) {
                    Ok(response) => {
                        self.complete_outgoing(now, Ok(response));
                        true
                    }
                    Err(_) => false,
                }
            }
            _ => false,
        }
    }

    /// The action of our CALL in flight (`""` when none is).
    fn outgoing_action(&self) -> &'static str {
        self.exchange.outgoing().map_or("", |c| c.request.action())
    }

    fn read_call(&self, id: &MessageId<'_>, action: &str, payload: &str) -> Turn {
        let options = &self.config.decode_options;
        let id = id.as_borrowed().into_owned();
        match Request::decode(self.version, action, payload, options) {
            Ok(request) => Turn::Deliver { id, request },
            Err(error) => Turn::Refuse {
                id,
                code: error.error_code(),
                description: error.to_string(),
            },
        }
    }

    /// A CALL's turn comes when no earlier CALL of the peer awaits its answer; until then it is
    /// held, up to the hold limit. Past it, the CALL is refused at once with a CALLERROR
    /// (OCPP-J allows one CALL at a time; every CALL still gets exactly one answer).
    fn take_turn_or_hold(&mut self, turn: Turn) {
        if !self.exchange.awaits_answer() && self.exchange.held_len() == 0 {
            self.take_turn(turn);
        } else if self.exchange.held_len() < self.config.max_held_calls {
            self.exchange.hold(turn);
        } else {
            let id = turn.id().cloned().unwrap_or(MessageId::UNREADABLE);
            self.write_call_error(&id, &ErrorCode::GenericError, SURPLUS_CALL);
            self.check_slow_peer();
        }
    }

    fn take_turn(&mut self, turn: Turn) {
        match turn {
            Turn::Deliver { id, request } => {
                let action = request.action();
                self.exchange.set_incoming(&id, action);
                self.push_event(Event::Call { id, request });
            }
            Turn::Refuse {
                id,
                code,
                description,
            } => {
                self.write_call_error(&id, &code, &description);
                self.check_slow_peer();
            }
            Turn::Reply { disposition, .. } => {
                self.write_disposition(&disposition);
                self.check_slow_peer();
            }
        }
    }

    /// Once the peer's CALL is answered, hands on the next held one (or answers it in turn).
    fn release_held(&mut self) {
        while !self.exchange.awaits_answer() && self.is_open() {
            match self.exchange.next_held() {
                None => break,
                Some(turn) => self.take_turn(turn),
            }
        }
    }

    fn is_outgoing(&self, id: &MessageId<'_>) -> bool {
        self.exchange
            .outgoing()
            .is_some_and(|call| call.id.as_str() == id.as_str())
    }

    fn complete_outgoing(&mut self, now: Instant, outcome: crate::CallOutcome) {
        if let Some(call) = self.exchange.take_outgoing() {
            self.timers.stop(Timer::Call);
            self.push_event(Event::CallCompleted {
                action: call.request.action(),
                id: call.id,
                outcome,
                caller: call.caller,
            });
        }
        self.dispatch_queued_call(now);
    }

    pub(super) fn call_timed_out(&mut self, now: Instant) {
        self.complete_outgoing(now, Err(CallFailure::Timeout));
    }

    /// Sends the next queued CALL if none is in flight. Only ever called at the end of the CALL
    /// in flight (inside a `handle_*`), so output appears only where the drain contract says it
    /// may; `call` sends a CALL itself when the line is free.
    pub(super) fn dispatch_queued_call(&mut self, now: Instant) {
        while self.is_open() && self.exchange.outgoing().is_none() {
            let Some(call) = self.exchange.next_queued() else {
                break;
            };
            // The deadline is checked right before the CALL would be written.
            if call.deadline.is_some_and(|at| at <= now) {
                self.push_event(Event::CallCompleted {
                    action: call.request.action(),
                    id: call.id,
                    outcome: Err(CallFailure::DeadlinePassed),
                    caller: call.caller,
                });
                continue;
            }
            self.send_call(now, call);
        }
        self.arm_queued_timer();
    }

    /// The queued CALLs whose deadline passed end unsent, in their order.
    pub(super) fn expire_queued(&mut self, now: Instant) {
        for call in self.exchange.take_expired(now) {
            self.push_event(Event::CallCompleted {
                action: call.request.action(),
                id: call.id,
                outcome: Err(CallFailure::DeadlinePassed),
                caller: call.caller,
            });
        }
        self.arm_queued_timer();
    }

    /// The queued-deadline timer at the earliest deadline of the queued CALLs (stopped when
    /// none has one).
    fn arm_queued_timer(&mut self) {
        match self.exchange.queued_deadline() {
            Some(at) => self.timers.set(Timer::Queued, at),
            None => self.timers.stop(Timer::Queued),
        }
    }

    /// Writes our CALL and puts it in flight (or completes it with an error if it does not
    /// serialise). The connection is open and no CALL of ours is in flight.
    fn send_call(&mut self, now: Instant, call: OutgoingCall<C>) {
        let action = call.request.action();
        let written =
            self.write_message(|out| envelope::write_call(out, &call.id, action, &call.request));
        if written.is_err() {
            self.push_event(Event::CallCompleted {
                id: call.id,
                action,
                outcome: Err(CallFailure::InvalidRequest {
                    description: "the request does not serialize to a JSON object".into(),
                }),
                caller: call.caller,
            });
            return;
        }
        // Answered by the call timeout, or by the CALL's deadline if that comes first.
        let timeout = now + self.config.call_timeout;
        let deadline = call.deadline.map_or(timeout, |at| at.min(timeout));
        self.timers.set(Timer::Call, deadline);
        self.exchange.set_outgoing(call);
    }

    /// Writes a CALLERROR spelled for the negotiated version (no back-pressure check: every
    /// CALL gets its answer).
    fn write_call_error(&mut self, id: &MessageId<'_>, code: &ErrorCode, description: &str) {
        let version = self.version;
        // Cannot fail: no details object is given.
        let _ = self.write_message(|out| {
            envelope::write_call_error(out, version, id, code, description, None)
        });
    }

    fn write_disposition(&mut self, disposition: &Disposition) {
        if matches!(disposition, Disposition::Ignore) {
            return;
        }
        let version = self.version;
        let _ = self.write_message(|out| disposition.write_to(out, version).map(|_| ()));
    }

    /// Frames one RPC message whose JSON `write` appends to a buffer: straight into the output
    /// (the frame header is written in front of it afterwards), or, with permessage-deflate,
    /// into a scratch buffer that is compressed into the output. Nothing is written if `write`
    /// fails.
    #[inline]
    fn write_message(
        &mut self,
        write: impl FnOnce(&mut Vec<u8>) -> Result<(), SerializeError>,
    ) -> Result<(), SerializeError> {
        let key = self.mask_key();
        if let Some(compressor) = self.deflate.as_mut().map(|d| &mut d.compressor) {
            let mut json = Vec::new();
            write(&mut json)?;
            let out = self.exchange.out();
            let compressed =
                self.encoder
                    .encode_compressed(compressor, Opcode::Text, &json, key, out);
            if compressed.is_err() {
                // The compressor failed (nothing was written): send the message uncompressed.
                let header = FrameHeader::new(Opcode::Text, 0);
                // Cannot fail: a data frame, and the key matches the role.
                let _ = self.encoder.encode_frame(header, &json, key, out);
            }
        } else {
            let out = self.exchange.out();
            let frame = self.encoder.start_frame(out);
            if let Err(error) = write(out) {
                frame.abandon(out);
                // Nothing was written: free the exchange state if this message alone
                // allocated it.
                self.exchange.release_if_idle();
                return Err(error);
            }
            // Cannot fail: a data frame, and the key matches the role.
            let _ = self.encoder.finish_frame(frame, Opcode::Text, key, out);
        }
        self.note_output();
        Ok(())
    }

    /// Frames a control frame; control frames bypass the outbound limit.
    pub(super) fn write_control(&mut self, opcode: Opcode, payload: &[u8]) {
        let key = self.mask_key();
        let header = FrameHeader::new(opcode, 0);
        let _ = self
            .encoder
            .encode_frame(header, payload, key, self.exchange.out());
    }

    pub(super) fn send_ping(&mut self, now: Instant) {
        if !self.is_open() {
            return;
        }
        self.ping_counter = self.ping_counter.wrapping_add(1);
        let payload = self.ping_counter.to_be_bytes();
        self.write_control(Opcode::Ping, &payload);
        if self.timers.get(Timer::Pong).is_none() {
            self.timers.set(Timer::Pong, now + self.config.pong_timeout);
        }
        if let Some(interval) = self.config.ping_interval {
            self.timers.set(Timer::Ping, now + interval);
        }
        self.check_slow_peer();
    }

    /// A peer that stopped reading lets our output grow; past twice the limit it is dropped.
    pub(super) fn check_slow_peer(&mut self) {
        if self.pending_transmit_len() > 2 * self.config.max_outbound_bytes {
            self.clear_output();
            self.finish(CloseReason::SlowPeer);
        }
    }
}

/// Whether two action names are the same: the generated code's names are `'static` literals,
/// the same one for a request and its response in practice, so the pointers usually answer
/// without comparing the bytes.
fn same_action(a: &'static str, b: &'static str) -> bool {
    std::ptr::eq(a, b) || a == b
}

/// Whether a parse error is answered like a CALL (so it must wait its turn).
fn is_call_error(error: &ParseError, version: OcppVersion) -> bool {
    let answers_a_response = matches!(
        error.message_type(),
        Some(
            MessageTypeId::CallResult
                | MessageTypeId::CallError
                | MessageTypeId::CallResultError
                | MessageTypeId::Send
        )
    );
    !answers_a_response && matches!(error.respond(version), Disposition::Reply(_))
}
