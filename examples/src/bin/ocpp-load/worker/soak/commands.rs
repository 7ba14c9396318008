//! The server's commands to a soak charge point: answered at once, then acted on.

use std::time::{Duration, Instant};

use ocpp_examples::charge_point_payload::{CsmsCommand, SettingStatus};
use ocpp_messages::error_code::ErrorCode;
use ocpp_messages::version::OcppVersion;
use ocpp_model::{Command, MessageTrigger, Outcome, Setting, TransactionId};
use ocpp_proto::{MessageId, Request};

use super::{Stage, Then};
use crate::worker::{payload, CommandReply, Kind, LoadPhase, Worker};

impl Worker {
    /// A CALL of the server (an admin command): answered at once, then acted on.
    pub(in crate::worker) fn soak_call(
        &mut self,
        local: usize,
        id: &MessageId<'_>,
        request: &Request,
        now: Instant,
    ) {
        let action = request.action();
        self.stats.add("srv_calls_received", 1);
        self.stats.add(&format!("command_{action}"), 1);
        let booted = self.cps[local].booted;
        let duplicate = self.is_duplicate(local);
        let stage = self.cps[local].soak.stage;
        let soak_phase = matches!(self.phase, LoadPhase::Soak { .. });
        let version = self.options.version;
        let mut then = None;
        let response = match payload::read_command(request) {
            CsmsCommand::Model(command) => {
                let outcome = match &command {
                    Command::RemoteStart { .. } => {
                        let accepted = booted && !duplicate && soak_phase && stage == Stage::Idle;
                        if accepted {
                            then = Some(Then::Start);
                        }
                        Some(payload::accepted(accepted))
                    }
                    Command::RemoteStop { transaction } => {
                        let running = self.cps[local]
                            .soak
                            .tx
                            .as_ref()
                            .and_then(|tx| tx.csms_id)
                            .is_some_and(|id| *transaction == TransactionId::Number(id));
                        let accepted = running && matches!(stage, Stage::Charging { .. });
                        if accepted {
                            self.cps[local].soak.stage = Stage::Charging { meters_left: 0 };
                            self.cps[local].soak.session_at = Some(now);
                        }
                        Some(payload::accepted(accepted))
                    }
                    Command::Reset { .. } => {
                        // Rebooting is a clean close a second later, then a reconnect.
                        if soak_phase && !duplicate {
                            self.cps[local].soak.reset = true;
                            self.cps[local].soak.churn_at = Some(now + Duration::from_secs(1));
                        }
                        Some(Outcome::Accepted)
                    }
                    Command::TriggerMessage { message, .. } => {
                        then = match message {
                            MessageTrigger::Heartbeat => Some(Then::Heartbeat),
                            MessageTrigger::StatusNotification => Some(Then::Status),
                            MessageTrigger::MeterValues => Some(Then::Meter),
                            _ => None,
                        };
                        Some(match message {
                            _ if then.is_some() => Outcome::Accepted,
                            MessageTrigger::BootNotification | MessageTrigger::TransactionEvent => {
                                Outcome::Rejected
                            }
                            _ => Outcome::NotSupported,
                        })
                    }
                    // 1.6 keys are taken, never the Basic password: it would lock the swarm
                    // out; 2.x variables are refused.
                    Command::Configure { setting, .. } => Some(payload::accepted(
                        version == OcppVersion::V1_6 && *setting != Setting::AuthorizationKey,
                    )),
                    _ => None,
                };
                outcome.map(|outcome| command.answer(version, outcome).map_err(|e| e.to_string()))
            }
            other => {
                let reply = match other {
                    CsmsCommand::OtherTrigger => Some(CommandReply::TriggerNotImplemented),
                    CsmsCommand::ChangeConfiguration { .. } => {
                        Some(CommandReply::ChangeConfiguration(SettingStatus::Accepted))
                    }
                    CsmsCommand::GetConfiguration { keys } => Some(self.soak_configuration(keys)),
                    CsmsCommand::SetVariables(items) => Some(CommandReply::SetVariables(
                        items
                            .into_iter()
                            .map(|(c, v, _)| (c, v, SettingStatus::Rejected))
                            .collect(),
                    )),
                    CsmsCommand::GetVariables(items) => Some(CommandReply::GetVariables(
                        items.into_iter().map(|(c, v)| (c, v, None)).collect(),
                    )),
                    CsmsCommand::DataTransfer { .. } => Some(CommandReply::DataTransfer),
                    CsmsCommand::Model(_) | CsmsCommand::Other(_) => None,
                };
                reply.map(|reply| {
                    payload::response(version, action, &reply).map_err(|e| e.to_string())
                })
            }
        };
        let Some(link) = self.cps[local].link.as_mut() else {
            return;
        };
        let answered = match response {
            Some(Ok(response)) => link
                .conn
                .answer(now, id, ocpp_proto::Answer::Result(response))
                .is_ok(),
            Some(Err(e)) => {
                tracing::warn!(action, "answer: {e}");
                link.conn
                    .answer(
                        now,
                        id,
                        ocpp_proto::Answer::error(ErrorCode::InternalError, "load client"),
                    )
                    .is_ok()
            }
            None => link
                .conn
                .answer(
                    now,
                    id,
                    ocpp_proto::Answer::error(ErrorCode::NotSupported, "load client"),
                )
                .is_ok(),
        };
        self.stats.add(
            if answered {
                "srv_calls_answered"
            } else {
                "srv_calls_answer_refused"
            },
            1,
        );
        match then {
            Some(Then::Start) => self.soak_send_start(local, true, now),
            Some(Then::Heartbeat) => {
                let request = self.prebuilt.request(Kind::Heartbeat);
                self.call(local, Kind::Heartbeat, request, now);
            }
            Some(Then::Status) => self.soak_status(local, now),
            Some(Then::Meter) => self.soak_send_meter(local, true, now),
            None => {}
        }
    }

    /// GetConfiguration: the two intervals the swarm runs with.
    fn soak_configuration(&self, keys: Option<Vec<String>>) -> CommandReply {
        let all = [
            ("HeartbeatInterval", self.options.heartbeat()),
            ("MeterValueSampleInterval", self.options.meter()),
        ];
        let value = |d: Option<Duration>| d.map_or(0, |d| d.as_secs()).to_string();
        let (known, unknown) = match keys {
            None => (
                all.iter()
                    .map(|(k, d)| ((*k).to_string(), value(*d), false))
                    .collect(),
                Vec::new(),
            ),
            Some(keys) => {
                let mut known = Vec::new();
                let mut unknown = Vec::new();
                for key in keys {
                    match all.iter().find(|(k, _)| *k == key) {
                        Some((k, d)) => known.push(((*k).to_string(), value(*d), false)),
                        None => unknown.push(key),
                    }
                }
                (known, unknown)
            }
        };
        CommandReply::GetConfiguration { known, unknown }
    }
}
