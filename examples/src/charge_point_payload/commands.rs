//! The CSMS's CALLs read as [`CsmsCommand`]s, and the charge point's [`CommandReply`] to each, per version.

use ocpp_messages::v1_6;
use ocpp_messages::version::OcppVersion;
use ocpp_proto::{DecodeOptions, Request, Response};
use serde_json::{json, Value};

use super::{CommandReply, CsmsCommand, PayloadError, SettingStatus, TriggerKind};

/// Reads a CALL of the CSMS.
pub fn read_command(request: &Request) -> CsmsCommand {
    match request {
        Request::V1_6(r) => read_command_v16(r),
        other => read_command_v2(
            other.action(),
            &serde_json::to_value(other).unwrap_or_default(),
        ),
    }
}

fn read_command_v16(request: &v1_6::Request) -> CsmsCommand {
    use v1_6::Request as R;
    let connector = |c: Option<i32>| c.and_then(|c| u32::try_from(c).ok());
    match request {
        R::RemoteStartTransaction(r) => CsmsCommand::RemoteStart {
            id_tag: r.id_tag.clone(),
            connector: connector(r.connector_id),
            remote_start_id: None,
        },
        R::RemoteStopTransaction(r) => CsmsCommand::RemoteStop {
            transaction_id: r.transaction_id.to_string(),
        },
        R::Reset(r) => CsmsCommand::Reset {
            hard: r.r#type == v1_6::ResetType::Hard,
        },
        R::TriggerMessage(r) => CsmsCommand::Trigger {
            message: match r.requested_message {
                v1_6::MessageTrigger::BootNotification => TriggerKind::Boot,
                v1_6::MessageTrigger::Heartbeat => TriggerKind::Heartbeat,
                v1_6::MessageTrigger::StatusNotification => TriggerKind::Status,
                v1_6::MessageTrigger::MeterValues => TriggerKind::Meter,
                _ => TriggerKind::Unsupported,
            },
            connector: connector(r.connector_id),
        },
        R::ChangeConfiguration(r) => CsmsCommand::ChangeConfiguration {
            key: r.key.clone(),
            value: r.value.clone(),
        },
        R::GetConfiguration(r) => CsmsCommand::GetConfiguration {
            keys: r.key.clone(),
        },
        R::DataTransfer(r) => CsmsCommand::DataTransfer {
            vendor_id: r.vendor_id.clone(),
            message_id: r.message_id.clone(),
            data: r.data.clone(),
        },
        other => CsmsCommand::Other(other.action().as_str()),
    }
}

fn read_command_v2(action: &'static str, json: &Value) -> CsmsCommand {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let names = |item: &Value| {
        (
            text(&item["component"]["name"]),
            text(&item["variable"]["name"]),
        )
    };
    match action {
        "RequestStartTransaction" => CsmsCommand::RemoteStart {
            id_tag: text(&json["idToken"]["idToken"]),
            connector: json["evseId"].as_u64().and_then(|c| u32::try_from(c).ok()),
            remote_start_id: json["remoteStartId"]
                .as_i64()
                .and_then(|c| i32::try_from(c).ok()),
        },
        "RequestStopTransaction" => CsmsCommand::RemoteStop {
            transaction_id: text(&json["transactionId"]),
        },
        "Reset" => CsmsCommand::Reset {
            hard: json["type"] == "Immediate",
        },
        "TriggerMessage" => CsmsCommand::Trigger {
            message: match json["requestedMessage"].as_str().unwrap_or_default() {
                "BootNotification" => TriggerKind::Boot,
                "Heartbeat" => TriggerKind::Heartbeat,
                "StatusNotification" => TriggerKind::Status,
                "MeterValues" => TriggerKind::Meter,
                "TransactionEvent" => TriggerKind::TransactionEvent,
                _ => TriggerKind::Unsupported,
            },
            connector: json["evse"]["id"]
                .as_u64()
                .and_then(|c| u32::try_from(c).ok()),
        },
        "SetVariables" => CsmsCommand::SetVariables(
            json["setVariableData"]
                .as_array()
                .map(|items| {
                    items
                        .iter()
                        .map(|item| {
                            let (c, v) = names(item);
                            (c, v, text(&item["attributeValue"]))
                        })
                        .collect()
                })
                .unwrap_or_default(),
        ),
        "GetVariables" => CsmsCommand::GetVariables(
            json["getVariableData"]
                .as_array()
                .map(|items| items.iter().map(names).collect())
                .unwrap_or_default(),
        ),
        "DataTransfer" => CsmsCommand::DataTransfer {
            vendor_id: text(&json["vendorId"]),
            message_id: json["messageId"].as_str().map(str::to_owned),
            data: match &json["data"] {
                Value::Null => None,
                Value::String(s) => Some(s.clone()),
                other => Some(other.to_string()),
            },
        },
        other => CsmsCommand::Other(other),
    }
}

/// The response to a command, in `version`.
pub fn response(
    version: OcppVersion,
    action: &str,
    reply: &CommandReply,
) -> Result<Response, PayloadError> {
    match version {
        OcppVersion::V1_6 => response_v16(action, reply).map(Response::from),
        OcppVersion::V2_0_1 | OcppVersion::V2_1 => {
            // Built as JSON, then checked against the version's schema.
            let payload = response_v2(reply).to_string();
            Response::decode(version, action, &payload, &DecodeOptions::strict())
                .map_err(|e| PayloadError(format!("{action} response: {e}")))
        }
    }
}

fn response_v16(action: &str, reply: &CommandReply) -> Result<v1_6::Response, PayloadError> {
    let start_stop = |accepted: bool| {
        if accepted {
            v1_6::RemoteStartStopStatus::Accepted
        } else {
            v1_6::RemoteStartStopStatus::Rejected
        }
    };
    Ok(match reply {
        // RemoteStart and RemoteStop answer with the same shape; the action decides the type.
        CommandReply::StartStop { accepted, .. } => {
            if action == "RemoteStopTransaction" {
                v1_6::RemoteStopTransactionResponse {
                    status: start_stop(*accepted),
                }
                .into()
            } else {
                v1_6::RemoteStartTransactionResponse {
                    status: start_stop(*accepted),
                }
                .into()
            }
        }
        CommandReply::Reset { accepted } => v1_6::ResetResponse {
            status: if *accepted {
                v1_6::ResetStatus::Accepted
            } else {
                v1_6::ResetStatus::Rejected
            },
        }
        .into(),
        CommandReply::Trigger {
            accepted,
            implemented,
        } => v1_6::TriggerMessageResponse {
            status: match (implemented, accepted) {
                (false, _) => v1_6::TriggerMessageStatus::NotImplemented,
                (true, true) => v1_6::TriggerMessageStatus::Accepted,
                (true, false) => v1_6::TriggerMessageStatus::Rejected,
            },
        }
        .into(),
        CommandReply::ChangeConfiguration(status) => v1_6::ChangeConfigurationResponse {
            status: match status {
                SettingStatus::Accepted => v1_6::ConfigurationStatus::Accepted,
                SettingStatus::Rejected => v1_6::ConfigurationStatus::Rejected,
                SettingStatus::Unknown => v1_6::ConfigurationStatus::NotSupported,
            },
        }
        .into(),
        CommandReply::GetConfiguration { known, unknown } => v1_6::GetConfigurationResponse {
            configuration_key: Some(
                known
                    .iter()
                    .map(|(key, value, readonly)| v1_6::KeyValue {
                        key: key.clone(),
                        readonly: *readonly,
                        value: Some(value.clone()),
                    })
                    .collect(),
            ),
            unknown_key: (!unknown.is_empty()).then(|| unknown.clone()),
        }
        .into(),
        CommandReply::DataTransfer => v1_6::DataTransferResponse {
            status: v1_6::DataTransferStatus::Accepted,
            data: None,
        }
        .into(),
        CommandReply::SetVariables(_) | CommandReply::GetVariables(_) => {
            return Err(PayloadError(
                "Set/GetVariables do not exist in OCPP 1.6".into(),
            ))
        }
    })
}

fn response_v2(reply: &CommandReply) -> Value {
    let accepted = |yes: bool| if yes { "Accepted" } else { "Rejected" };
    let component_variable = |c: &str, v: &str| (json!({ "name": c }), json!({ "name": v }));
    match reply {
        CommandReply::StartStop {
            accepted: yes,
            transaction_id,
        } => {
            let mut json = json!({ "status": accepted(*yes) });
            if let Some(id) = transaction_id {
                json["transactionId"] = json!(id);
            }
            json
        }
        CommandReply::Reset { accepted: yes } => json!({ "status": accepted(*yes) }),
        CommandReply::Trigger {
            accepted: yes,
            implemented,
        } => json!({
            "status": if *implemented { accepted(*yes) } else { "NotImplemented" },
        }),
        CommandReply::SetVariables(results) => json!({
            "setVariableResult": results.iter().map(|(c, v, status)| {
                let (component, variable) = component_variable(c, v);
                json!({
                    "attributeStatus": match status {
                        SettingStatus::Accepted => "Accepted",
                        SettingStatus::Rejected => "Rejected",
                        SettingStatus::Unknown => "UnknownVariable",
                    },
                    "component": component,
                    "variable": variable,
                })
            }).collect::<Vec<_>>(),
        }),
        CommandReply::GetVariables(results) => json!({
            "getVariableResult": results.iter().map(|(c, v, value)| {
                let (component, variable) = component_variable(c, v);
                let mut result = json!({
                    "attributeStatus": if value.is_some() { "Accepted" } else { "UnknownVariable" },
                    "component": component,
                    "variable": variable,
                });
                if let Some(value) = value {
                    result["attributeValue"] = json!(value);
                }
                result
            }).collect::<Vec<_>>(),
        }),
        CommandReply::DataTransfer => json!({ "status": "Accepted" }),
        CommandReply::ChangeConfiguration(_) | CommandReply::GetConfiguration { .. } => json!({}),
    }
}
