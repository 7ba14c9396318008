//! The CSMS's CALLs read as [`CsmsCommand`]s, and the charge point's [`CommandReply`] to those
//! the model does not answer, per version.
//!
//! What `ocpp_model` reads ([`Command::from_request`]: remote start and stop, reset, trigger, a
//! standard setting...) is answered with an `Outcome` through [`Command::answer`]; what is
//! left is the simulators' own: configuration keys and variables the model does not name,
//! reading them, and DataTransfer.

use ocpp_messages::v1_6;
use ocpp_messages::version::OcppVersion;
use ocpp_model::Command;
use ocpp_proto::{DecodeOptions, Request, Response};
use serde_json::{json, Value};

use super::{CommandReply, CsmsCommand, PayloadError, SettingStatus};

/// Reads a CALL of the CSMS: the model's command if it reads one, the simulators' own else.
pub fn read_command(request: &Request) -> CsmsCommand {
    if let Some(command) = Command::from_request(request) {
        return CsmsCommand::Model(command);
    }
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
    match request {
        R::TriggerMessage(_) => CsmsCommand::OtherTrigger,
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
    let items = |key: &str| json[key].as_array().map(Vec::as_slice).unwrap_or_default();
    match action {
        "TriggerMessage" => CsmsCommand::OtherTrigger,
        "SetVariables" => CsmsCommand::SetVariables(
            items("setVariableData")
                .iter()
                .map(|item| {
                    let (c, v) = names(item);
                    (c, v, text(&item["attributeValue"]))
                })
                .collect(),
        ),
        "GetVariables" => {
            CsmsCommand::GetVariables(items("getVariableData").iter().map(names).collect())
        }
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

/// The response to a command the model does not answer, in `version`.
pub fn response(
    version: OcppVersion,
    action: &str,
    reply: &CommandReply,
) -> Result<Response, PayloadError> {
    match version {
        OcppVersion::V1_6 => response_v16(reply).map(Response::from),
        OcppVersion::V2_0_1 | OcppVersion::V2_1 => {
            // Built as JSON, then checked against the version's schema.
            let payload = response_v2(reply).to_string();
            Response::decode(version, action, &payload, &DecodeOptions::strict())
                .map_err(|e| PayloadError(format!("{action} response: {e}")))
        }
    }
}

fn response_v16(reply: &CommandReply) -> Result<v1_6::Response, PayloadError> {
    Ok(match reply {
        CommandReply::TriggerNotImplemented => v1_6::TriggerMessageResponse {
            status: v1_6::TriggerMessageStatus::NotImplemented,
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
    let component_variable = |c: &str, v: &str| (json!({ "name": c }), json!({ "name": v }));
    match reply {
        CommandReply::TriggerNotImplemented => json!({ "status": "NotImplemented" }),
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
