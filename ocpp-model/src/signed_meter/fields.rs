//! Reading an OCMF section's JSON object: its members raw and in order, duplicates refused, each
//! field typed.

use core::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::{
    MeterStatus, OcmfPayload, OcmfReading, OcmfSignature, OcmfTime, SignedMeterError,
    TransactionPoint,
};
use crate::Decimal;

/// The members of a JSON object, raw, in order (duplicates kept, to be refused).
pub(super) struct Fields {
    path: String,
    members: Vec<(String, Box<RawValue>)>,
}

impl<'de> Deserialize<'de> for Fields {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> Visitor<'de> for Members {
            type Value = Vec<(String, Box<RawValue>)>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry::<String, Box<RawValue>>()? {
                    members.push(member);
                }
                Ok(members)
            }
        }
        Ok(Fields {
            path: String::new(),
            members: deserializer.deserialize_map(Members)?,
        })
    }
}

impl Fields {
    pub(super) fn parse(section: &'static str, text: &str) -> Result<Fields, SignedMeterError> {
        let fields: Fields = serde_json::from_str(text).map_err(|e| SignedMeterError::Json {
            section,
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        fields.check_duplicates()?;
        Ok(fields)
    }

    fn check_duplicates(&self) -> Result<(), SignedMeterError> {
        let mut seen = std::collections::BTreeSet::new();
        for (name, _) in &self.members {
            if !seen.insert(name.as_str()) {
                return Err(SignedMeterError::DuplicateField {
                    field: self.field(name),
                });
            }
        }
        Ok(())
    }

    fn field(&self, name: &str) -> String {
        format!("{}{name}", self.path)
    }

    /// Takes the member `name` out (`None` when absent or `null`).
    fn take(&mut self, name: &str) -> Option<Box<RawValue>> {
        let at = self.members.iter().position(|(n, _)| n == name)?;
        let (_, raw) = self.members.remove(at);
        (raw.get() != "null").then_some(raw)
    }

    fn typed<T: for<'de> Deserialize<'de>>(
        &mut self,
        name: &str,
        expected: &str,
    ) -> Result<Option<T>, SignedMeterError> {
        self.take(name)
            .map(|raw| {
                serde_json::from_str(raw.get()).map_err(|_| SignedMeterError::InvalidField {
                    field: self.field(name),
                    problem: format!("expected {expected}, found {}", excerpt(raw.get())),
                })
            })
            .transpose()
    }

    fn string(&mut self, name: &str) -> Result<Option<String>, SignedMeterError> {
        self.typed(name, "a string")
    }

    fn decimal(&mut self, name: &str) -> Result<Option<Decimal>, SignedMeterError> {
        self.typed(name, "a JSON number (kept exact)")
    }

    fn listed<T>(
        &mut self,
        name: &str,
        from_wire: fn(&str) -> Option<T>,
    ) -> Result<Option<T>, SignedMeterError> {
        match self.string(name)? {
            None => Ok(None),
            Some(text) => {
                from_wire(&text)
                    .map(Some)
                    .ok_or_else(|| SignedMeterError::InvalidField {
                        field: self.field(name),
                        problem: format!("{text:?} is not one of OCMF's values"),
                    })
            }
        }
    }

    fn rest(self) -> Vec<(String, String)> {
        self.members
            .into_iter()
            .map(|(name, raw)| (name, raw.get().to_owned()))
            .collect()
    }
}

/// The start of a raw JSON value, for an error message.
fn excerpt(raw: &str) -> String {
    let mut text: String = raw.chars().take(40).collect();
    if text.len() < raw.len() {
        text.push('…');
    }
    text
}

pub(super) fn read_payload(mut fields: Fields) -> Result<OcmfPayload, SignedMeterError> {
    let mut payload = OcmfPayload {
        format_version: fields.string("FV")?,
        gateway_id: fields.string("GI")?,
        gateway_serial: fields.string("GS")?,
        gateway_version: fields.string("GV")?,
        pagination: fields.string("PG")?,
        meter_vendor: fields.string("MV")?,
        meter_model: fields.string("MM")?,
        meter_serial: fields.string("MS")?,
        meter_firmware: fields.string("MF")?,
        identification_status: fields.typed("IS", "true or false")?,
        identification_level: fields.string("IL")?,
        identification_flags: fields
            .typed("IF", "an array of strings")?
            .unwrap_or_default(),
        identification_type: fields.string("IT")?,
        identification_data: fields.string("ID")?,
        tariff_text: fields.string("TT")?,
        charge_point_id_type: fields.string("CT")?,
        charge_point_id: fields.string("CI")?,
        readings: Vec::new(),
        other: Vec::new(),
    };
    let readings: Vec<Fields> = fields.typed("RD", "an array of objects")?.ok_or_else(|| {
        SignedMeterError::MissingField {
            field: "RD".to_owned(),
        }
    })?;
    for (i, mut reading) in readings.into_iter().enumerate() {
        reading.path = format!("RD[{i}].");
        reading.check_duplicates()?;
        let previous = payload.readings.last();
        payload.readings.push(read_reading(reading, previous)?);
    }
    payload.other = fields.rest();
    Ok(payload)
}

/// One reading; the fields it leaves out (other than its value and loss) are the previous
/// reading's.
fn read_reading(
    mut fields: Fields,
    previous: Option<&OcmfReading>,
) -> Result<OcmfReading, SignedMeterError> {
    let time = match fields.string("TM")? {
        Some(text) => OcmfTime::parse(&text).map_err(|problem| SignedMeterError::InvalidField {
            field: fields.field("TM"),
            problem,
        })?,
        None => previous
            .map(|p| p.time.clone())
            .ok_or_else(|| SignedMeterError::MissingField {
                field: fields.field("TM"),
            })?,
    };
    let inherit = |field: Option<String>, from: fn(&OcmfReading) -> &Option<String>| {
        field.or_else(|| previous.and_then(|p| from(p).clone()))
    };
    Ok(OcmfReading {
        time,
        transaction: fields
            .listed("TX", TransactionPoint::from_wire)?
            .or(previous.and_then(|p| p.transaction)),
        value: fields.decimal("RV")?,
        identification: inherit(fields.string("RI")?, |p| &p.identification),
        unit: inherit(fields.string("RU")?, |p| &p.unit),
        current_type: inherit(fields.string("RT")?, |p| &p.current_type),
        cumulated_loss: fields.decimal("CL")?,
        error_flags: inherit(fields.string("EF")?, |p| &p.error_flags),
        status: fields
            .listed("ST", MeterStatus::from_wire)?
            .or(previous.and_then(|p| p.status)),
        other: fields.rest(),
    })
}

pub(super) fn read_signature(mut fields: Fields) -> Result<OcmfSignature, SignedMeterError> {
    Ok(OcmfSignature {
        algorithm: fields.string("SA")?,
        encoding: fields.string("SE")?,
        mime_type: fields.string("SM")?,
        data: fields
            .string("SD")?
            .ok_or_else(|| SignedMeterError::MissingField {
                field: "SD".to_owned(),
            })?,
        other: fields.rest(),
    })
}
