//! The OCMF record (`OCMF|{payload}|{signature}`), its payload, readings and signature, and the
//! check of its signature.

use ocpp_messages::DateTime;

use super::fields::{read_payload, read_signature, Fields};
use super::key::{decode_base64, decode_hex, verify_p256, verify_p384};
use super::{
    Curve, MeterPublicKey, MeterStatus, SignatureAlgorithm, SignedMeterError, TimeSync,
    TransactionPoint, OCMF_HEADER,
};
use crate::Decimal;

/// An OCMF record: `OCMF|{payload}|{signature}`, read, with its text kept verbatim.
#[derive(Debug, Clone, PartialEq)]
pub struct OcmfRecord {
    text: String,
    payload_start: usize,
    payload_end: usize,
    /// The payload section, read.
    pub payload: OcmfPayload,
    /// The signature section, read.
    pub signature: OcmfSignature,
}

/// The payload section of an OCMF record: the fields that matter for billing, typed; the
/// others kept as raw JSON text in `other`.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct OcmfPayload {
    /// `FV`: format version (`1.0`).
    pub format_version: Option<String>,
    /// `GI`: gateway (signing component) identification: manufacturer, model.
    pub gateway_id: Option<String>,
    /// `GS`: gateway serial number.
    pub gateway_serial: Option<String>,
    /// `GV`: gateway software version.
    pub gateway_version: Option<String>,
    /// `PG`: pagination (`T12`: transaction context, `F3`: fiscal).
    pub pagination: Option<String>,
    /// `MV`: meter vendor.
    pub meter_vendor: Option<String>,
    /// `MM`: meter model.
    pub meter_model: Option<String>,
    /// `MS`: meter serial number.
    pub meter_serial: Option<String>,
    /// `MF`: meter firmware version.
    pub meter_firmware: Option<String>,
    /// `IS`: whether a user is assigned.
    pub identification_status: Option<bool>,
    /// `IL`: identification level (`NONE`, `HEARSAY`, `TRUSTED`, `VERIFIED`...).
    pub identification_level: Option<String>,
    /// `IF`: identification flags (`RFID_PLAIN`, `OCPP_AUTH`...).
    pub identification_flags: Vec<String>,
    /// `IT`: identification type (`ISO14443`, `EMAID`, `CENTRAL`...).
    pub identification_type: Option<String>,
    /// `ID`: identification data (e.g. an RFID UID in hex).
    pub identification_data: Option<String>,
    /// `TT`: tariff text.
    pub tariff_text: Option<String>,
    /// `CT`: charge point identification type (`EVSEID`, `CBIDC`).
    pub charge_point_id_type: Option<String>,
    /// `CI`: charge point identification.
    pub charge_point_id: Option<String>,
    /// `RD`: the readings, with the fields a reading leaves out taken from the one before it
    /// (OCMF: "fields that have an identical value to the previous reading are omitted").
    pub readings: Vec<OcmfReading>,
    /// The other fields (`CF`, `LC`, vendor extensions `U`..`Z`...), name and raw JSON text,
    /// in the order sent.
    pub other: Vec<(String, String)>,
}

/// One reading of an OCMF record (`RD[i]`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct OcmfReading {
    /// `TM`: when it was read.
    pub time: OcmfTime,
    /// `TX`: why, in relation to the transaction (`None`: fiscal metering).
    pub transaction: Option<TransactionPoint>,
    /// `RV`: the value, exact as written (`None`: an error event without a value).
    pub value: Option<Decimal>,
    /// `RI`: what was read, as an OBIS code (`1-b:1.8.0`).
    pub identification: Option<String>,
    /// `RU`: the unit (`kWh`, `Wh`, `mOhm`, `uOhm`).
    pub unit: Option<String>,
    /// `RT`: the current type (`AC`, `DC`).
    pub current_type: Option<String>,
    /// `CL`: the cumulated loss, in `unit`.
    pub cumulated_loss: Option<Decimal>,
    /// `EF`: error flags (`E`: energy, `t`: time no longer usable for billing).
    pub error_flags: Option<String>,
    /// `ST`: the meter's state.
    pub status: Option<MeterStatus>,
    /// The other fields, name and raw JSON text.
    pub other: Vec<(String, String)>,
}

/// An OCMF time: `2018-07-24T13:22:04,000+0200 S`, the instant and its synchronisation state.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OcmfTime {
    /// The text, verbatim.
    pub text: String,
    /// The instant, as RFC 3339 (`2018-07-24T13:22:04.000+02:00`).
    pub timestamp: DateTime,
    /// The synchronisation state (`None` when the text has none).
    pub sync: Option<TimeSync>,
}

impl OcmfTime {
    /// Reads `<date>T<time>,<ms><±hhmm> <state>`; a `.` before the milliseconds and an offset
    /// written `±hh:mm` or `Z` are accepted too.
    ///
    /// ```
    /// use ocpp_model::signed_meter::{OcmfTime, TimeSync};
    /// let time = OcmfTime::parse("2018-07-24T13:22:04,000+0200 S").unwrap();
    /// assert_eq!(time.timestamp.as_str(), "2018-07-24T13:22:04.000+02:00");
    /// assert_eq!(time.sync, Some(TimeSync::Synchronized));
    /// ```
    pub fn parse(text: &str) -> Result<OcmfTime, String> {
        let (instant, sync) = match text.rsplit_once(' ') {
            Some((instant, state)) => {
                let sync = TimeSync::from_wire(state)
                    .ok_or_else(|| format!("unknown synchronisation state {state:?}"))?;
                (instant, Some(sync))
            }
            None => (text, None),
        };
        if !instant.is_ascii() {
            return Err(format!("{text:?} is not an OCMF time"));
        }
        let mut rfc3339 = instant.replacen(',', ".", 1);
        // `+0200` -> `+02:00`
        let bytes = rfc3339.as_bytes();
        if bytes.len() >= 5 {
            let at = bytes.len() - 5;
            let offset = &bytes[at..];
            if (offset[0] == b'+' || offset[0] == b'-')
                && offset[1..].iter().all(u8::is_ascii_digit)
            {
                rfc3339.insert(at + 3, ':');
            }
        }
        let timestamp =
            DateTime::parse(&rfc3339).map_err(|e| format!("{text:?} is not an OCMF time: {e}"))?;
        Ok(OcmfTime {
            text: text.to_owned(),
            timestamp,
            sync,
        })
    }
}

/// The signature section of an OCMF record.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct OcmfSignature {
    /// `SA`: the algorithm as named (`None`: the default, `ECDSA-secp256r1-SHA256`).
    pub algorithm: Option<String>,
    /// `SE`: how `data` is encoded (`None`: `hex`; or `base64`).
    pub encoding: Option<String>,
    /// `SM`: what `data` is (`None`: `application/x-der`).
    pub mime_type: Option<String>,
    /// `SD`: the signature, as written.
    pub data: String,
    /// The other fields, name and raw JSON text.
    pub other: Vec<(String, String)>,
}

impl OcmfSignature {
    /// The algorithm, `SA` or its default: [`SignedMeterError::Unsupported`] for a name that
    /// is not `ECDSA-<curve>-<hash>` of OCMF's curves and hashes.
    pub fn algorithm(&self) -> Result<SignatureAlgorithm, SignedMeterError> {
        match &self.algorithm {
            None => Ok(SignatureAlgorithm::DEFAULT),
            Some(name) => {
                SignatureAlgorithm::from_name(name).ok_or_else(|| SignedMeterError::Unsupported {
                    algorithm: name.clone(),
                })
            }
        }
    }

    /// The signature's bytes, `SD` decoded per `SE` (hex or Base64).
    pub fn bytes(&self) -> Result<Vec<u8>, SignedMeterError> {
        let problem = |problem: String| SignedMeterError::SignatureEncoding { problem };
        match self.encoding.as_deref() {
            None | Some("hex") => {
                decode_hex(&self.data).ok_or_else(|| problem("SD is not hex".to_owned()))
            }
            Some("base64") => {
                decode_base64(&self.data).ok_or_else(|| problem("SD is not Base64".to_owned()))
            }
            Some(other) => Err(problem(format!("unknown signature encoding SE {other:?}"))),
        }
    }
}

impl OcmfRecord {
    /// Reads an OCMF record from its text.
    ///
    /// ```
    /// use ocpp_model::signed_meter::{OcmfRecord, SignedMeterError, TransactionPoint};
    ///
    /// let record = OcmfRecord::parse(
    ///     r#"OCMF|{"FV":"1.0","MS":"BQ27400330016","IS":true,"IT":"ISO14443","ID":"1F2D3A4F5506C7","RD":[{"TM":"2018-07-24T13:22:04,000+0200 S","TX":"B","RV":2935.60,"RI":"1-b:1.8.0","RU":"kWh","ST":"G"},{"TM":"2018-07-24T13:26:04,000+0200 S","TX":"E","RV":2965.10}]}|{"SD":"3045"}"#,
    /// )?;
    /// let end = &record.payload.readings[1];
    /// assert_eq!(end.transaction, Some(TransactionPoint::End));
    /// assert_eq!(end.value.unwrap().to_string(), "2965.10");
    /// assert_eq!(end.unit.as_deref(), Some("kWh")); // left out: the previous reading's
    /// assert!(record.payload_text().starts_with(r#"{"FV":"1.0""#));
    ///
    /// assert_eq!(
    ///     OcmfRecord::parse("OCMF|{}").unwrap_err(),
    ///     SignedMeterError::MissingSection { section: "signature" }
    /// );
    /// # Ok::<(), SignedMeterError>(())
    /// ```
    pub fn parse(text: &str) -> Result<OcmfRecord, SignedMeterError> {
        let (header, rest) = text
            .split_once('|')
            .ok_or(SignedMeterError::MissingHeader)?;
        if header.trim() != OCMF_HEADER {
            return Err(SignedMeterError::MissingHeader);
        }
        let payload_start = header.len() + 1;
        let (payload_text, signature_text) =
            rest.split_once('|')
                .ok_or(SignedMeterError::MissingSection {
                    section: "signature",
                })?;
        if signature_text.contains('|') {
            return Err(SignedMeterError::ExtraSection);
        }
        if payload_text.trim().is_empty() {
            return Err(SignedMeterError::MissingSection { section: "payload" });
        }
        if signature_text.trim().is_empty() {
            return Err(SignedMeterError::MissingSection {
                section: "signature",
            });
        }
        let payload = read_payload(Fields::parse("payload", payload_text)?)?;
        let signature = read_signature(Fields::parse("signature", signature_text)?)?;
        Ok(OcmfRecord {
            text: text.to_owned(),
            payload_start,
            payload_end: payload_start + payload_text.len(),
            payload,
            signature,
        })
    }

    /// The record's text, verbatim.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The payload section exactly as it appears between the first and the second `|`: the
    /// bytes that were signed.
    pub fn payload_text(&self) -> &str {
        self.text
            .get(self.payload_start..self.payload_end)
            .unwrap_or_default()
    }

    /// Checks the signature with `key`: `Ok` with the algorithm checked, or
    /// [`SignedMeterError::InvalidSignature`], [`SignedMeterError::Unsupported`]...
    pub fn verify(&self, key: &MeterPublicKey) -> Result<SignatureAlgorithm, SignedMeterError> {
        self.verify_as(self.signature.algorithm()?, key)
    }

    /// Checks the signature as made with `algorithm`.
    pub(super) fn verify_as(
        &self,
        algorithm: SignatureAlgorithm,
        key: &MeterPublicKey,
    ) -> Result<SignatureAlgorithm, SignedMeterError> {
        if !algorithm.is_supported() {
            return Err(SignedMeterError::Unsupported {
                algorithm: algorithm.to_string(),
            });
        }
        if let Some(curve) = key.curve {
            if curve != algorithm.curve {
                return Err(SignedMeterError::KeyCurveMismatch {
                    key: curve,
                    algorithm: algorithm.to_string(),
                });
            }
        }
        let signature = self.signature.bytes()?;
        let message = self.payload_text().as_bytes();
        let digest = algorithm.hash.digest(message);
        match algorithm.curve {
            Curve::Secp256r1 => verify_p256(&key.point, &digest, &signature),
            Curve::Secp384r1 => verify_p384(&key.point, &digest, &signature),
            _ => Err(SignedMeterError::Unsupported {
                algorithm: algorithm.to_string(),
            }),
        }?;
        Ok(algorithm)
    }
}
