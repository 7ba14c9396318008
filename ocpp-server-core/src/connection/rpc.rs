//! OCPP-J over the open WebSocket: frames to RPC messages, calls and their correlation.

use std::time::Instant;

use bytes::Bytes;
use ocpp_frame::{CloseCode, FrameHeader, Message, Opcode};
use ocpp_messages::envelope::{
    self, Disposition, MessageId, MessageTypeId, ParseError, RpcMessage,
};
use ocpp_messages::error_code::ErrorCode;
use ocpp_messages::version::OcppVersion;

use super::{Connection, HeldCall, OutgoingCall, QueuedCall, State, MAX_REFUSED_IDS};
use crate::timer::Timer;
use crate::typed::{decode_call, decode_result, error_code_for};
use crate::{CallOutcome, CloseReason, Event, Request, Response};

/// Our descriptions in CALLERRORs stay within OCPP 2.x's 255 characters on every version.
const MAX_DESCRIPTION_CHARS: usize = 255;

/// Why [`Connection::call`], [`Connection::respond`] or [`Connection::send`] handed its message
/// back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RefusalReason {
    /// The connection is not open (still in the handshake, closing or closed).
    #[error("the connection is not open")]
    NotOpen,
    /// The payload belongs to another OCPP version than the one negotiated.
    #[error("the payload is of another OCPP version than the connection's")]
    WrongVersion,
    /// The unsent output passed its limit; wait for [`Event::Writable`].
    #[error("the outbound buffer is full")]
    Backpressure,
    /// As many CALLs are queued as the configuration allows; wait for a `CallCompleted`.
    #[error("the call queue is full")]
    QueueFull,
    /// No CALL of the peer with this id awaits an answer.
    #[error("no CALL with this id awaits an answer")]
    UnknownId,
    /// The payload did not serialize as a JSON object.
    #[error("the payload does not serialize to a JSON object")]
    Serialize,
    /// SEND exists only in OCPP 2.1.
    #[error("SEND needs OCPP 2.1")]
    SendNeedsV21,
}

/// A message handed back, with the reason.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{reason}")]
pub struct Refused<T> {
    /// Why.
    pub reason: RefusalReason,
    /// The message, to retry or to fail.
    pub message: T,
}

fn refuse<T>(reason: RefusalReason, message: T) -> Refused<T> {
    Refused { reason, message }
}

fn truncate(text: &str) -> &str {
    match text.char_indices().nth(MAX_DESCRIPTION_CHARS) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

impl Connection {
    /// Sends a CALL, or queues it behind the one in flight (OCPP-J: one outstanding CALL per
    /// direction). Returns its id; its end comes as [`Event::CallCompleted`] (result, error or
    /// timeout), or in [`crate::Closed::unanswered_outgoing`] if the connection ends first.
    pub fn call(&mut self, now: Instant, request: Request) -> Result<String, Refused<Request>> {
        self.now = now;
        if !self.is_open() {
            return Err(refuse(RefusalReason::NotOpen, request));
        }
        if request.version() != self.version {
            return Err(refuse(RefusalReason::WrongVersion, request));
        }
        if self.queued.len() >= self.config.max_queued_calls {
            return Err(refuse(RefusalReason::QueueFull, request));
        }
        let id = self.next_message_id();
        self.queued.push_back(QueuedCall {
            id: id.clone(),
            request,
        });
        self.dispatch_queued_call();
        Ok(id)
    }

    /// Answers the peer's CALL `id` with a CALLRESULT.
    pub fn respond(
        &mut self,
        now: Instant,
        id: &str,
        response: Response,
    ) -> Result<(), Refused<Response>> {
        self.now = now;
        if !self.is_open() {
            return Err(refuse(RefusalReason::NotOpen, response));
        }
        if self.incoming.as_deref() != Some(id) {
            return Err(refuse(RefusalReason::UnknownId, response));
        }
        if response.version() != self.version {
            return Err(refuse(RefusalReason::WrongVersion, response));
        }
        let mut json = Vec::new();
        let message_id = MessageId::new(id).unwrap_or_else(|_| MessageId::from_counter(0));
        if envelope::write_call_result(&mut json, &message_id, &response).is_err() {
            return Err(refuse(RefusalReason::Serialize, response));
        }
        if !self.has_room_for(json.len()) {
            return Err(refuse(RefusalReason::Backpressure, response));
        }
        self.write_text(&json);
        self.incoming = None;
        self.release_held(now);
        Ok(())
    }

    /// Answers the peer's CALL `id` with a CALLERROR, spelled for the negotiated version (e.g.
    /// [`ErrorCode::NotSupported`] for a known action this application does not handle).
    pub fn respond_error(
        &mut self,
        now: Instant,
        id: &str,
        code: ErrorCode,
        description: &str,
    ) -> Result<(), Refused<ErrorCode>> {
        self.now = now;
        if !self.is_open() {
            return Err(refuse(RefusalReason::NotOpen, code));
        }
        if self.incoming.as_deref() != Some(id) {
            return Err(refuse(RefusalReason::UnknownId, code));
        }
        let mut json = Vec::new();
        if self
            .write_call_error(&mut json, id, &code, description)
            .is_err()
        {
            return Err(refuse(RefusalReason::Serialize, code));
        }
        if !self.has_room_for(json.len()) {
            return Err(refuse(RefusalReason::Backpressure, code));
        }
        self.write_text(&json);
        self.incoming = None;
        self.release_held(now);
        Ok(())
    }

    /// Sends a SEND (OCPP 2.1, e.g. NotifyPeriodicEventStream): never answered, never queued.
    pub fn send(&mut self, now: Instant, request: Request) -> Result<String, Refused<Request>> {
        self.now = now;
        if !self.is_open() {
            return Err(refuse(RefusalReason::NotOpen, request));
        }
        if self.version != OcppVersion::V2_1 || request.version() != OcppVersion::V2_1 {
            return Err(refuse(RefusalReason::SendNeedsV21, request));
        }
        let id = self.next_message_id();
        let mut json = Vec::new();
        let message_id = MessageId::new(id.as_str()).unwrap_or_else(|_| MessageId::from_counter(0));
        if envelope::write_send(&mut json, &message_id, request.action(), &request).is_err() {
            return Err(refuse(RefusalReason::Serialize, request));
        }
        if !self.has_room_for(json.len()) {
            return Err(refuse(RefusalReason::Backpressure, request));
        }
        self.write_text(&json);
        Ok(id)
    }

    /// Feeds bytes of the open WebSocket to the frame decoder and handles each message.
    pub(super) fn handle_frames(&mut self, now: Instant, data: &[u8]) {
        self.now = now;
        if let (State::Open, Some(idle)) = (&self.state, self.config.idle_timeout) {
            self.timers.set(Timer::Idle, now + idle);
        }
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
                    self.on_text(now, text.into_bytes());
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

    fn on_text(&mut self, now: Instant, bytes: Bytes) {
        let version = self.version;
        // Parsed once: the message is handled from this parse unless it must wait its turn.
        let parsed = envelope::parse(&bytes, version);
        let call_like = match &parsed {
            Ok(RpcMessage::Call(_)) => true,
            Ok(_) => false,
            Err(error) => is_call_error(error, version),
        };
        if call_like && (self.incoming.is_some() || !self.held.is_empty()) {
            let id = match &parsed {
                Ok(message) => message.id().as_str().to_owned(),
                Err(error) => error
                    .id()
                    .map_or("-1".to_owned(), |id| id.as_str().to_owned()),
            };
            drop(parsed);
            self.hold(now, bytes, id);
        } else {
            self.process_message(now, parsed);
        }
    }

    /// Parses and handles a held message whose turn has come.
    fn process_text(&mut self, now: Instant, bytes: &[u8]) {
        let parsed = envelope::parse(bytes, self.version);
        self.process_message(now, parsed);
    }

    /// Handles one RPC message whose turn it is.
    fn process_message(&mut self, now: Instant, parsed: Result<RpcMessage<'_>, ParseError>) {
        let version = self.version;
        match parsed {
            Ok(RpcMessage::Call(call)) => {
                let options = &self.config.decode_options;
                match decode_call(version, &call.action, call.payload.get(), options) {
                    Ok(request) => {
                        let id = call.id.as_str().to_owned();
                        self.incoming = Some(id.clone());
                        self.events.push_back(Event::Call { id, request });
                    }
                    Err(error) => {
                        let code = error_code_for(&error);
                        self.write_core_error(call.id.as_str(), &code, &error.to_string());
                    }
                }
            }
            Ok(RpcMessage::Send(send)) => {
                let options = &self.config.decode_options;
                // A SEND is never answered (OCPP 2.1 Part 4 §4.2.6): one that does not decode
                // is dropped.
                if let Ok(request) = decode_call(version, &send.action, send.payload.get(), options)
                {
                    let id = send.id.as_str().to_owned();
                    self.events.push_back(Event::Send { id, request });
                }
            }
            Ok(RpcMessage::CallResult(result)) => {
                if !self.is_outgoing(result.id.as_str()) {
                    let id = result.id.as_str().to_owned();
                    self.events.push_back(Event::UnmatchedResponse { id });
                    return;
                }
                let action = self.outgoing.as_ref().map_or("", |c| c.request.action());
                let options = &self.config.decode_options;
                match decode_result(version, action, result.payload.get(), options) {
                    Ok(response) => self.complete_outgoing(now, CallOutcome::Result(response)),
                    Err(error) => {
                        let description = error.to_string();
                        if version == OcppVersion::V2_1 {
                            let code = error_code_for(&error);
                            let mut json = Vec::new();
                            let id = result.id.as_borrowed();
                            if envelope::write_call_result_error(
                                &mut json,
                                &id,
                                &code,
                                truncate(&description),
                                None,
                            )
                            .is_ok()
                            {
                                self.write_text(&json);
                            }
                        }
                        self.complete_outgoing(now, CallOutcome::InvalidResult { description });
                    }
                }
            }
            Ok(RpcMessage::CallError(error)) => {
                if !self.is_outgoing(error.id.as_str()) {
                    let id = error.id.as_str().to_owned();
                    self.events.push_back(Event::UnmatchedResponse { id });
                    return;
                }
                let outcome = CallOutcome::Error {
                    code: error.code.clone(),
                    description: error.description.to_string(),
                    details: error.details_json().to_owned(),
                };
                self.complete_outgoing(now, outcome);
            }
            Ok(RpcMessage::CallResultError(error)) => {
                self.events.push_back(Event::CallResultError {
                    id: error.id.as_str().to_owned(),
                    code: error.code.clone(),
                    description: error.description.to_string(),
                });
            }
            Err(error) => {
                // A broken answer to our CALL still ends it, rather than leaving it to time out.
                let answers_ours = matches!(
                    error.message_type(),
                    Some(MessageTypeId::CallResult | MessageTypeId::CallError)
                ) && error.id().is_some_and(|id| self.is_outgoing(id.as_str()));
                if answers_ours {
                    let description = error.to_string();
                    self.complete_outgoing(now, CallOutcome::InvalidResult { description });
                }
                let disposition = error.respond(version);
                let mut json = Vec::new();
                if let Ok(true) = disposition.write_to(&mut json, version) {
                    self.write_text(&json);
                }
            }
        }
    }

    /// Holds a peer CALL behind the unanswered one, bounded.
    /// `id` is the CALL's id (`"-1"` if unreadable), kept alone past the hold limit.
    fn hold(&mut self, now: Instant, bytes: Bytes, id: String) {
        let limit = self.config.max_held_calls;
        if self.held.len() < limit {
            self.held.push_back(HeldCall::Deliver(bytes));
        } else if self.held.len() < limit + MAX_REFUSED_IDS {
            self.held.push_back(HeldCall::Refuse(id));
        } else {
            self.start_close(
                now,
                CloseCode::POLICY_VIOLATION,
                "too many CALLs at once",
                CloseReason::OcppViolation {
                    code: CloseCode::POLICY_VIOLATION,
                    description: "more CALLs outstanding than the hold limit".into(),
                },
            );
        }
    }

    /// Once the peer's CALL is answered, hands on the next held one (or refuses it in turn).
    fn release_held(&mut self, now: Instant) {
        while self.incoming.is_none() && self.is_open() {
            match self.held.pop_front() {
                None => break,
                Some(HeldCall::Deliver(bytes)) => self.process_text(now, &bytes),
                Some(HeldCall::Refuse(id)) => {
                    let description = "more CALLs outstanding than allowed (OCPP-J: one at a time)";
                    self.write_core_error(&id, &ErrorCode::GenericError, description);
                }
            }
        }
        if self.held.is_empty() && self.held.capacity() > 0 {
            self.held = Default::default();
        }
    }

    fn is_outgoing(&self, id: &str) -> bool {
        self.outgoing.as_ref().is_some_and(|call| call.id == id)
    }

    fn complete_outgoing(&mut self, _now: Instant, outcome: CallOutcome) {
        if let Some(call) = self.outgoing.take() {
            self.timers.stop(Timer::Call);
            self.events.push_back(Event::CallCompleted {
                id: call.id,
                action: call.request.action(),
                outcome,
            });
        }
        self.dispatch_queued_call();
    }

    pub(super) fn call_timed_out(&mut self, now: Instant) {
        self.complete_outgoing(now, CallOutcome::Timeout);
    }

    /// Sends the next queued CALL if none is in flight and the output has room.
    pub(super) fn dispatch_queued_call(&mut self) {
        while self.is_open()
            && self.outgoing.is_none()
            && self.pending_transmit_len() < self.config.max_outbound_bytes
        {
            let Some(call) = self.queued.pop_front() else {
                break;
            };
            let mut json = Vec::new();
            let id =
                MessageId::new(call.id.as_str()).unwrap_or_else(|_| MessageId::from_counter(0));
            let action = call.request.action();
            if envelope::write_call(&mut json, &id, action, &call.request).is_err() {
                self.events.push_back(Event::CallCompleted {
                    id: call.id,
                    action,
                    outcome: CallOutcome::Error {
                        code: ErrorCode::InternalError,
                        description: "the request does not serialize to a JSON object".into(),
                        details: "{}".into(),
                    },
                });
                continue;
            }
            self.write_text(&json);
            self.timers
                .set(Timer::Call, self.now + self.config.call_timeout);
            self.outgoing = Some(OutgoingCall {
                id: call.id,
                request: call.request,
            });
        }
        if self.queued.is_empty() && self.queued.capacity() > 0 {
            self.queued = Default::default();
        }
    }

    /// Writes a CALLERROR the core itself answers with (no back-pressure check: every CALL gets
    /// its answer; these are small and bounded by the hold limits).
    fn write_core_error(&mut self, id: &str, code: &ErrorCode, description: &str) {
        let mut json = Vec::new();
        if self
            .write_call_error(&mut json, id, code, description)
            .is_ok()
        {
            self.write_text(&json);
            self.check_slow_peer();
        }
    }

    fn write_call_error(
        &self,
        json: &mut Vec<u8>,
        id: &str,
        code: &ErrorCode,
        description: &str,
    ) -> Result<(), envelope::SerializeError> {
        let id = MessageId::new(id).unwrap_or_else(|_| MessageId::from_counter(0));
        envelope::write_call_error(json, self.version, &id, code, truncate(description), None)
    }

    /// Whether `len` more payload bytes fit under the outbound limit; remembers a refusal so
    /// that [`Event::Writable`] follows when the output drains.
    fn has_room_for(&mut self, len: usize) -> bool {
        if self.pending_transmit_len() + len + 14 > self.config.max_outbound_bytes {
            self.refused_output = true;
            false
        } else {
            true
        }
    }

    /// Frames a text message (the JSON of an RPC message) into the output, compressed when
    /// permessage-deflate was agreed and the message is not tiny.
    fn write_text(&mut self, json: &[u8]) {
        let key = self.mask_key();
        if let Some(compressor) = self.compressor.as_mut() {
            let written =
                self.encoder
                    .encode_compressed(compressor, Opcode::Text, json, key, &mut self.out);
            if written.is_ok() {
                return;
            }
            // The compressor failed (nothing was written): send the message uncompressed.
        }
        let header = FrameHeader::new(Opcode::Text, 0);
        // Cannot fail: a data frame, and the key matches the role.
        let _ = self.encoder.encode_frame(header, json, key, &mut self.out);
    }

    /// Frames a control frame; control frames bypass the outbound limit.
    pub(super) fn write_control(&mut self, opcode: Opcode, payload: &[u8]) {
        let key = self.mask_key();
        let header = FrameHeader::new(opcode, 0);
        let _ = self
            .encoder
            .encode_frame(header, payload, key, &mut self.out);
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
