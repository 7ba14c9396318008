//! The CSMS's commands to the simulated station: the model's commands answered with an
//! outcome, the rest (configuration keys and variables, DataTransfer) with the simulator's own
//! reply; what a trigger sends, the settings applied, the bench data recorded.

use std::time::Instant;

use ocpp_examples::charge_point_payload::{self as payload, CommandReply, CsmsCommand, Outgoing};
use ocpp_messages::version::OcppVersion;
use ocpp_model::{Command, MessageTrigger, Outcome, ResetKind};
use ocpp_reference_csms::push;
use ocpp_tokio::station::StationStopReason;
use ocpp_tokio::{ErrorAnswer, Reply};
use tracing::{debug, info};

use super::{evse_id, payload_reading, read_meter, statuses, Item, Sim, State, Transaction};
use crate::settings::Changed;

impl Sim {
    /// The outcome of one of the model's commands, in every version.
    pub(super) fn command(&self, version: OcppVersion, command: Command) -> Reply<Outcome> {
        let v16 = version == OcppVersion::V1_6;
        let now = Instant::now();
        let mut st = self.lock();
        self.follow_heartbeat(&mut st);
        Ok(match command {
            Command::RemoteStart {
                evse,
                token,
                remote_start_id,
                ..
            } => {
                let connector = evse.unwrap_or(1);
                let ok = st.transaction.is_none()
                    && (1..=st.settings.connectors).contains(&connector)
                    && !st.reset_requested;
                if ok {
                    // 1.6 has no remoteStartId (the model reads it as 0).
                    let remote_start_id = (!v16).then_some(remote_start_id);
                    let messages =
                        self.begin(&mut st, now, connector, token.value, remote_start_id, true);
                    self.send(messages);
                    self.wake.notify_one();
                }
                payload::accepted(ok)
            }
            Command::RemoteStop { transaction } => {
                // 1.6: the id the CSMS gave (none until it answered); 2.x: the station's.
                let ours = st
                    .transaction
                    .as_ref()
                    .and_then(|t| self.transaction_id(t))
                    .is_some_and(|id| id == transaction.to_string());
                if ours {
                    let messages = self.end_transaction(&mut st, now, StationStopReason::Remote);
                    self.send(messages);
                }
                payload::accepted(ours)
            }
            Command::Reset { kind, .. } => {
                // 1.6 Hard and 2.x Immediate; 1.6 Soft and 2.x OnIdle end the transaction softly.
                let hard = matches!(kind, ResetKind::Immediate | ResetKind::ImmediateAndResume);
                info!(identity = %self.identity, hard, "reset accepted");
                st.reset_requested = true;
                let reason = if hard {
                    StationStopReason::HardReset
                } else {
                    StationStopReason::SoftReset
                };
                let messages = self.end_transaction(&mut st, now, reason);
                self.send(messages);
                self.send([Item::Reboot]);
                Outcome::Accepted
            }
            Command::TriggerMessage { message, evse } => {
                let outcome = match message {
                    MessageTrigger::TransactionEvent => payload::accepted(st.transaction.is_some()),
                    // Boot included: a 2.x station once Accepted never gets that trigger here,
                    // the library rejects it itself (F06.FR.17, `Registration::own_answer`).
                    MessageTrigger::BootNotification
                    | MessageTrigger::Heartbeat
                    | MessageTrigger::StatusNotification
                    | MessageTrigger::MeterValues => Outcome::Accepted,
                    _ => Outcome::NotSupported,
                };
                if outcome == Outcome::Accepted {
                    let messages = self.triggered(&mut st, now, message, evse);
                    self.send(messages);
                }
                outcome
            }
            Command::Configure { setting, value } => {
                let mut changed = Changed::default();
                let status = if v16 {
                    st.settings.set_v16(setting.key_1_6(), &value, &mut changed)
                } else {
                    let (component, variable) = setting.component_variable();
                    st.settings
                        .set_v2(component, variable, &value, &mut changed)
                };
                self.apply(&mut st, now, changed);
                status.into()
            }
            other => return Err(ErrorAnswer::not_supported(other.name())),
        })
    }

    /// The reply to a CALL the model does not read (`None`: not supported).
    pub(super) fn decide(
        &self,
        version: OcppVersion,
        command: CsmsCommand,
    ) -> Option<CommandReply> {
        let v16 = version == OcppVersion::V1_6;
        let now = Instant::now();
        let mut st = self.lock();
        self.follow_heartbeat(&mut st);
        Some(match command {
            CsmsCommand::OtherTrigger => CommandReply::TriggerNotImplemented,
            CsmsCommand::ChangeConfiguration { key, value } if v16 => {
                let mut changed = Changed::default();
                let status = st.settings.set_v16(&key, &value, &mut changed);
                self.apply(&mut st, now, changed);
                CommandReply::ChangeConfiguration(status)
            }
            CsmsCommand::GetConfiguration { keys } if v16 => {
                let (known, unknown) = match keys.filter(|k| !k.is_empty()) {
                    None => (st.settings.all_v16(), Vec::new()),
                    Some(keys) => {
                        let mut known = Vec::new();
                        let mut unknown = Vec::new();
                        for key in keys {
                            match st.settings.get_v16(&key) {
                                Some((value, ro)) => known.push((key, value, ro)),
                                None => unknown.push(key),
                            }
                        }
                        (known, unknown)
                    }
                };
                CommandReply::GetConfiguration { known, unknown }
            }
            CsmsCommand::SetVariables(items) if !v16 => {
                let mut changed = Changed::default();
                let results = items
                    .into_iter()
                    .map(|(c, v, value)| {
                        let status = st.settings.set_v2(&c, &v, &value, &mut changed);
                        (c, v, status)
                    })
                    .collect();
                self.apply(&mut st, now, changed);
                CommandReply::SetVariables(results)
            }
            CsmsCommand::GetVariables(items) if !v16 => CommandReply::GetVariables(
                items
                    .into_iter()
                    .map(|(c, v)| {
                        let value = st.settings.get_v2(&c, &v);
                        (c, v, value)
                    })
                    .collect(),
            ),
            CsmsCommand::DataTransfer {
                vendor_id,
                message_id,
                data,
            } => {
                if vendor_id == "bench" && message_id.as_deref() == Some("ts") {
                    self.record_bench(&mut st, data.as_deref());
                }
                CommandReply::DataTransfer
            }
            // The router's `on_command` takes the model's commands before this.
            CsmsCommand::Model(_)
            | CsmsCommand::ChangeConfiguration { .. }
            | CsmsCommand::GetConfiguration { .. }
            | CsmsCommand::SetVariables(_)
            | CsmsCommand::GetVariables(_)
            | CsmsCommand::Other(_) => return None,
        })
    }

    /// The interval in force: the boot's answer's, or the CSMS's change since.
    fn follow_heartbeat(&self, st: &mut State) {
        if let Some(station) = self.station.get() {
            st.settings.heartbeat_interval = station.heartbeat_interval();
        }
    }

    /// The messages a TriggerMessage asks for.
    pub(super) fn triggered(
        &self,
        st: &mut State,
        now: Instant,
        message: MessageTrigger,
        connector: Option<u32>,
    ) -> Vec<Item> {
        let v16 = st.version == OcppVersion::V1_6;
        match message {
            MessageTrigger::Heartbeat => vec![Item::Send(Outgoing::Heartbeat)],
            MessageTrigger::StatusNotification => statuses(st, connector),
            MessageTrigger::MeterValues | MessageTrigger::TransactionEvent => {
                let reading = read_meter(st, now);
                match &st.transaction {
                    Some(t) if v16 || message == MessageTrigger::TransactionEvent => {
                        vec![Item::Meter(t.connector, reading.triggered(), t.number)]
                    }
                    _ => vec![Item::Send(Outgoing::Meter {
                        connector: connector.unwrap_or(1),
                        reading: payload_reading(&reading),
                    })],
                }
            }
            // The client sends the BootNotification a trigger asked for.
            _ => Vec::new(),
        }
    }

    /// The transactionId of the simulator's transaction: 2.x the station's, 1.6 the CSMS's
    /// once it answered.
    pub(super) fn transaction_id(&self, t: &Transaction) -> Option<String> {
        self.station.get()?.transaction_id(evse_id(t.connector))
    }

    /// Hands changed settings to the client and the timers.
    fn apply(&self, st: &mut State, now: Instant, changed: Changed) {
        if let Some(station) = self.station.get() {
            if changed.heartbeat {
                station.set_heartbeat_interval(st.settings.heartbeat_interval);
            }
            station.set_back_off(st.settings.back_off);
        }
        if changed.meter {
            let interval = st.settings.meter_interval;
            if let Some(t) = st.transaction.as_mut() {
                t.next_meter = now + interval;
            }
            self.wake.notify_one();
        }
    }

    /// A bench DataTransfer: data `"<seq>:<unix_nanos>"`; latency is the wall clock now minus
    /// the timestamp; a sequence number that skips counts the missing ones as gaps.
    fn record_bench(&self, st: &mut State, data: Option<&str>) {
        let Some((seq, nanos)) = data.and_then(push::read_stamp) else {
            debug!(identity = %self.identity, ?data, "bench DataTransfer without <seq>:<nanos>");
            return;
        };
        let now_ns = push::unix_nanos_now();
        let latency_us = u64::try_from(now_ns.saturating_sub(nanos) / 1000).unwrap_or(u64::MAX);
        let mut stats = self.stats();
        stats.record_latency_us(latency_us);
        if let Some(last) = st.bench_seq {
            if seq > last + 1 {
                stats.sequence_gaps += seq - last - 1;
            }
        }
        st.bench_seq = Some(seq);
    }
}
