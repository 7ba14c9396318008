//! Signed meter values (issue 37): read what a meter signed and check its signature, behind
//! the cargo feature `signed-meter`.
//!
//! Under calibration law (in Germany, Eichrecht) a customer may only be billed for a value the
//! meter signed; a CSMS keeps the signed value verbatim (it does: [`SignedMeterValue`]), says
//! what it is ([`SignedMeterValue::read`]) and checks its signature
//! ([`SignedMeterValue::verify`]).
//!
//! The encoding read is **OCMF**, the Open Charge Metering Format of S.A.F.E. e.V.:
//! `OCMF|{payload}|{signature}`. The signature is ECDSA over the payload section exactly as it
//! appears between the first and the second `|`: never re-serialised, so a reading value such
//! as `2935.60` keeps its digits ([`Decimal`]). `ECDSA-secp256r1-SHA256` (OCMF's default) and
//! the secp384r1 algorithms are checked; brainpool, secp192r1 and the Koblitz curves are named
//! and refused as [`SignedMeterError::Unsupported`], never reported invalid. Other encodings
//! (EDL, SML...) are recognised by their name and refused as
//! [`SignedMeterError::UnsupportedEncoding`].
//!
//! Where the text comes from, per version and per the OCA application note "Signed Meter
//! Values in OCPP" (2025): the 1.6 `SignedData` sample's value or the 2.x `signedMeterData`,
//! either the OCMF text itself or its Base64 (or hex) encoding; the public key is the 2.x
//! `publicKey` or one the CSMS holds (a register, the meter's label), as hex or Base64 of a DER
//! `SubjectPublicKeyInfo` or of a SEC1 point, bare `X‖Y`, or the OCA note's
//! `base64("oca:base16:asn1:<key>")`.
//!
//! ```
//! use ocpp_model::signed_meter::{KeySource, SignedReading};
//! use ocpp_model::SignedMeterValue;
//!
//! // A real record (a KEBA KCP30 wallbox) and its meter's public key, as published in the
//! // test data of the S.A.F.E. transparency software.
//! let ocmf = concat!(
//!     r#"OCMF|{"FV":"1.0","GI":"KEBA_KCP30","GS":"17619300","GV":"2.8.5","PG":"T32","IS":false,"#,
//!     r#""IL":"NONE","IF":["RFID_NONE","OCPP_NONE","ISO15118_NONE","PLMN_NONE"],"IT":"NONE","ID":"","#,
//!     r#""RD":[{"TM":"2019-08-13T10:03:15,000+0000 I","TX":"B","EF":"","ST":"G","RV":0.2596,"#,
//!     r#""RI":"1-b:1.8.0","RU":"kWh"},{"TM":"2019-08-13T10:03:36,000+0000 R","TX":"E","EF":"","#,
//!     r#""ST":"G","RV":0.2597,"RI":"1-b:1.8.0","RU":"kWh"}]}|{"SD":"304502200E2F107C987A300AC1"#,
//!     r#"695CA89EA149A8CDFA16188AF0A33EE64B67964AA943F9022100889A72B6D65364BEA8562E7F6A0253157AC"#,
//!     r#"FF84FE4929A93B5964D23C4265699"}"#,
//! );
//! let key = concat!(
//!     "3059301306072A8648CE3D020106082A8648CE3D030107034200043AEEB45C392357820A58FDFB",
//!     "0857BD77ADA31585C61C430531DFA53B440AFBFDD95AC887C658EA55260F808F55CA948DF235C2",
//!     "108A0D6DC7D4AB1A5E1A7955BE",
//! );
//! // As a 1.6 `SignedData` sample carries it: the text alone.
//! let signed = SignedMeterValue::new(ocmf);
//!
//! // Say what it is...
//! let SignedReading::Ocmf { record, .. } = signed.read()? else { unreachable!() };
//! assert_eq!(record.payload.gateway_serial.as_deref(), Some("17619300"));
//! assert_eq!(record.payload.readings[1].value.map(|v| v.to_string()), Some("0.2597".into()));
//!
//! // ...and check it, with the key the CSMS holds for that meter.
//! let verified = signed.verify(Some(key))?;
//! assert_eq!(verified.algorithm.to_string(), "ECDSA-secp256r1-SHA256");
//! assert_eq!(verified.key_source, KeySource::Given);
//! assert_eq!(verified.readings().len(), 2);
//!
//! // One changed digit, and it is no longer what the meter signed.
//! let forged = SignedMeterValue::new(ocmf.replace("0.2597", "0.2598"));
//! assert!(matches!(
//!     forged.verify(Some(key)),
//!     Err(ocpp_model::signed_meter::SignedMeterError::InvalidSignature)
//! ));
//! # Ok::<(), ocpp_model::signed_meter::SignedMeterError>(())
//! ```

use core::fmt;

use base64::Engine as _;
use ocpp_messages::DateTime;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use sha2::Digest as _;

use crate::{Decimal, SignedMeterValue};

/// The header of an OCMF record.
pub const OCMF_HEADER: &str = "OCMF";

/// Why a signed meter value could not be read or checked. Each variant says what is wrong;
/// reading never panics, whatever the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignedMeterError {
    /// The data is neither OCMF text nor its Base64 or hex encoding, and no `encodingMethod`
    /// names what it is.
    #[error("signed meter data in an unknown encoding (not OCMF, plain, Base64 or hex, and no encodingMethod)")]
    UnknownEncoding,
    /// The data is in an encoding this reader does not read (named by `encodingMethod`, e.g.
    /// `EDL`).
    #[error("signed meter data encoded as {encoding:?}, which is not supported (only OCMF is)")]
    UnsupportedEncoding {
        /// The encoding, as named.
        encoding: String,
    },
    /// The text does not start with the header `OCMF|`.
    #[error("not an OCMF record: it does not start with \"OCMF|\"")]
    MissingHeader,
    /// A section (`payload` or `signature`) is missing: the text ends before its `|`.
    #[error("OCMF record without its {section} section")]
    MissingSection {
        /// `payload` or `signature`.
        section: &'static str,
    },
    /// A `|` after the signature section (OCMF has exactly three sections).
    #[error("OCMF record with a section after the signature section")]
    ExtraSection,
    /// A section is not a JSON object.
    #[error("OCMF {section} section is not valid JSON (line {line}, column {column}): {message}")]
    Json {
        /// `payload` or `signature`.
        section: &'static str,
        /// The line in the section, from 1.
        line: usize,
        /// The column in the line, from 1.
        column: usize,
        /// What serde_json found.
        message: String,
    },
    /// A required field is missing (e.g. `SD`, `RD`, `RD[0].TM`).
    #[error("OCMF field {field} is missing")]
    MissingField {
        /// The field's path (`RD[1].TM`).
        field: String,
    },
    /// A field appears twice in one object.
    #[error("OCMF field {field} appears twice")]
    DuplicateField {
        /// The field's path.
        field: String,
    },
    /// A field has a value of the wrong type or outside its list.
    #[error("OCMF field {field} is invalid: {problem}")]
    InvalidField {
        /// The field's path (`RD[1].RV`).
        field: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The signature algorithm (`SA`), or the curve of the key, is one this crate does not
    /// check (brainpool, secp192r1, secp192k1, secp256k1, or an unknown name): the signature
    /// may be valid, it was not checked.
    #[error("signature algorithm {algorithm:?} is not supported")]
    Unsupported {
        /// The algorithm, as named (or the key's curve).
        algorithm: String,
    },
    /// The signature data (`SD`) cannot be decoded (bad hex or Base64, not DER, wrong length).
    #[error("OCMF signature data cannot be decoded: {problem}")]
    SignatureEncoding {
        /// What is wrong with it.
        problem: String,
    },
    /// No public key: none given by the caller and none in the message.
    #[error("no public key to check the signature with")]
    MissingPublicKey,
    /// The public key cannot be read.
    #[error("the public key cannot be read: {problem}")]
    PublicKey {
        /// What is wrong with it.
        problem: String,
    },
    /// The key names a curve other than the algorithm's.
    #[error("the public key is on {key} but the record is signed with {algorithm}")]
    KeyCurveMismatch {
        /// The key's curve.
        key: Curve,
        /// The record's algorithm.
        algorithm: String,
    },
    /// The signature does not match the payload and the key: the data is not what the meter
    /// signed, or the key is not the meter's.
    #[error("the signature does not match the signed data and the public key")]
    InvalidSignature,
}

wire_names! {
    /// An elliptic curve named by OCMF (its signature methods and public key types).
    Curve {
        /// secp192k1.
        Secp192k1 => "secp192k1",
        /// secp256k1.
        Secp256k1 => "secp256k1",
        /// secp192r1 (NIST P-192).
        Secp192r1 => "secp192r1",
        /// secp256r1 (NIST P-256, prime256v1): OCMF's default.
        Secp256r1 => "secp256r1",
        /// brainpoolP256r1.
        Brainpool256r1 => "brainpool256r1",
        /// secp384r1 (NIST P-384).
        Secp384r1 => "secp384r1",
        /// brainpoolP384r1.
        Brainpool384r1 => "brainpool384r1",
    }
}

wire_names! {
    /// The hash of a signature algorithm.
    HashAlgorithm {
        /// SHA-256.
        Sha256 => "SHA256",
        /// SHA-384.
        Sha384 => "SHA384",
        /// SHA-512.
        Sha512 => "SHA512",
    }
}

wire_names! {
    /// OCMF `TX`: why the meter was read, in relation to the transaction.
    TransactionPoint {
        /// `B`: begin of the transaction.
        Begin => "B",
        /// `C`: during charging.
        Charging => "C",
        /// `X`: an error during charging; time and/or energy unusable from this reading on.
        Exception => "X",
        /// `E`: end of the transaction.
        End => "E",
        /// `L`: ended locally.
        EndedLocally => "L",
        /// `R`: ended remotely.
        EndedRemotely => "R",
        /// `A`: aborted by an error.
        Aborted => "A",
        /// `P`: ended by a power failure.
        PowerFailure => "P",
        /// `S`: suspended (transaction active, not charging).
        Suspended => "S",
        /// `T`: tariff change.
        TariffChange => "T",
    }
}

impl TransactionPoint {
    /// Whether the reading ends the transaction (`E`, `L`, `R`, `A`, `P`).
    ///
    /// ```
    /// use ocpp_model::signed_meter::TransactionPoint;
    /// assert!(TransactionPoint::EndedRemotely.is_end());
    /// assert!(!TransactionPoint::TariffChange.is_end());
    /// ```
    pub fn is_end(self) -> bool {
        matches!(
            self,
            TransactionPoint::End
                | TransactionPoint::EndedLocally
                | TransactionPoint::EndedRemotely
                | TransactionPoint::Aborted
                | TransactionPoint::PowerFailure
        )
    }
}

wire_names! {
    /// OCMF `ST`: the state of the meter when it was read.
    MeterStatus {
        /// `N`: not present.
        NotPresent => "N",
        /// `G`: working correctly (good).
        Good => "G",
        /// `T`: timeout.
        Timeout => "T",
        /// `D`: disconnected from the signing component.
        Disconnected => "D",
        /// `R`: no longer found (removed).
        NotFound => "R",
        /// `M`: manipulation detected.
        Manipulated => "M",
        /// `X`: exchanged (another serial number).
        Exchanged => "X",
        /// `I`: incompatible.
        Incompatible => "I",
        /// `O`: value out of range.
        OutOfRange => "O",
        /// `S`: a substitute value.
        Substitute => "S",
        /// `E`: another error.
        OtherError => "E",
        /// `F`: read error; the value is not valid.
        ReadError => "F",
    }
}

wire_names! {
    /// The synchronisation state of an OCMF time (`TM`'s last letter).
    TimeSync {
        /// `U`: unknown, not synchronised.
        Unknown => "U",
        /// `I`: informative (info clock).
        Informative => "I",
        /// `S`: synchronised.
        Synchronized => "S",
        /// `R`: relative time accounting, legally accurate durations from an info clock.
        Relative => "R",
    }
}

/// A signature algorithm: `ECDSA-<curve>-<hash>`, as OCMF names it in `SA`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SignatureAlgorithm {
    /// The curve.
    pub curve: Curve,
    /// The hash of the payload.
    pub hash: HashAlgorithm,
}

impl SignatureAlgorithm {
    /// OCMF's default, when `SA` is left out: `ECDSA-secp256r1-SHA256`.
    pub const DEFAULT: SignatureAlgorithm = SignatureAlgorithm {
        curve: Curve::Secp256r1,
        hash: HashAlgorithm::Sha256,
    };

    /// The algorithm of a name (`None` when it is not `ECDSA-<known curve>-<known hash>`).
    ///
    /// ```
    /// use ocpp_model::signed_meter::{Curve, SignatureAlgorithm};
    /// let algorithm = SignatureAlgorithm::from_name("ECDSA-brainpool256r1-SHA256").unwrap();
    /// assert_eq!(algorithm.curve, Curve::Brainpool256r1);
    /// assert!(!algorithm.is_supported());
    /// assert!(SignatureAlgorithm::DEFAULT.is_supported());
    /// ```
    pub fn from_name(name: &str) -> Option<SignatureAlgorithm> {
        let rest = name.strip_prefix("ECDSA-")?;
        let (curve, hash) = rest.split_once('-')?;
        Some(SignatureAlgorithm {
            curve: Curve::from_wire(curve)?,
            hash: HashAlgorithm::from_wire(hash)?,
        })
    }

    /// Whether this crate checks signatures of this algorithm (secp256r1 and secp384r1, with
    /// SHA-256 or SHA-384).
    pub fn is_supported(self) -> bool {
        matches!(self.curve, Curve::Secp256r1 | Curve::Secp384r1)
            && matches!(self.hash, HashAlgorithm::Sha256 | HashAlgorithm::Sha384)
    }
}

impl fmt::Display for SignatureAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ECDSA-{}-{}", self.curve, self.hash)
    }
}

/// How the OCMF text was carried in the signed meter value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Wrapping {
    /// The text itself (`OCMF|...`).
    Plain,
    /// Base64 of the text (the OCA application note's form).
    Base64,
    /// Hex of the text.
    Hex,
}

/// What a signed meter value is, read.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SignedReading {
    /// An OCMF record.
    Ocmf {
        /// The record.
        record: OcmfRecord,
        /// How its text was carried.
        wrapping: Wrapping,
    },
}

/// Where the public key a signature was checked with came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeySource {
    /// Given by the caller (a register the CSMS keeps, the meter's label): the key to trust.
    Given,
    /// Sent by the charging station with the value (2.x `publicKey`): it shows the data was
    /// not changed since it was signed with that key, not that the key is the meter's.
    Sent,
}

/// A signed meter value whose signature was checked: what was signed, by which key.
#[derive(Debug, Clone, PartialEq)]
pub struct Verified {
    /// The record, as read.
    pub record: OcmfRecord,
    /// The algorithm checked.
    pub algorithm: SignatureAlgorithm,
    /// The key it was checked with.
    pub public_key: MeterPublicKey,
    /// Where that key came from.
    pub key_source: KeySource,
}

impl Verified {
    /// The signed readings.
    pub fn readings(&self) -> &[OcmfReading] {
        &self.record.payload.readings
    }

    /// The meter's serial number (`MS`), or else the gateway's (`GS`).
    pub fn meter_id(&self) -> Option<&str> {
        let payload = &self.record.payload;
        payload
            .meter_serial
            .as_deref()
            .or(payload.gateway_serial.as_deref())
    }
}

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
    fn verify_as(
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
        let digest = match algorithm.hash {
            HashAlgorithm::Sha256 => sha2::Sha256::digest(message).to_vec(),
            HashAlgorithm::Sha384 => sha2::Sha384::digest(message).to_vec(),
            HashAlgorithm::Sha512 => sha2::Sha512::digest(message).to_vec(),
        };
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

fn key_error(problem: &str) -> SignedMeterError {
    SignedMeterError::PublicKey {
        problem: problem.to_owned(),
    }
}

fn verify_p256(point: &[u8], digest: &[u8], signature: &[u8]) -> Result<(), SignedMeterError> {
    use p256::ecdsa::signature::hazmat::PrehashVerifier;
    let key = p256::ecdsa::VerifyingKey::from_sec1_bytes(point)
        .map_err(|_| key_error("not a point on secp256r1"))?;
    let rs = signature_scalars(signature, 32)?;
    let signature =
        p256::ecdsa::Signature::from_slice(&rs).map_err(|_| SignedMeterError::InvalidSignature)?;
    key.verify_prehash(digest, &signature)
        .map_err(|_| SignedMeterError::InvalidSignature)
}

fn verify_p384(point: &[u8], digest: &[u8], signature: &[u8]) -> Result<(), SignedMeterError> {
    use p384::ecdsa::signature::hazmat::PrehashVerifier;
    let key = p384::ecdsa::VerifyingKey::from_sec1_bytes(point)
        .map_err(|_| key_error("not a point on secp384r1"))?;
    let rs = signature_scalars(signature, 48)?;
    let signature =
        p384::ecdsa::Signature::from_slice(&rs).map_err(|_| SignedMeterError::InvalidSignature)?;
    key.verify_prehash(digest, &signature)
        .map_err(|_| SignedMeterError::InvalidSignature)
}

/// `r‖s`, each `size` bytes, from a DER `ECDSA-Sig-Value` (leniently: an integer with a
/// superfluous leading zero or without the zero that would make it positive is read as the
/// unsigned number it means) or from raw `r‖s`.
fn signature_scalars(bytes: &[u8], size: usize) -> Result<Vec<u8>, SignedMeterError> {
    let problem = |problem: &str| SignedMeterError::SignatureEncoding {
        problem: problem.to_owned(),
    };
    if let Some(rs) = der_signature(bytes, size) {
        return Ok(rs);
    }
    if bytes.len() == 2 * size {
        return Ok(bytes.to_vec());
    }
    Err(problem(&format!(
        "neither a DER ECDSA signature nor {} bytes of r and s ({} bytes)",
        2 * size,
        bytes.len()
    )))
}

fn der_signature(bytes: &[u8], size: usize) -> Option<Vec<u8>> {
    let (tag, body, rest) = der_tlv(bytes)?;
    if tag != 0x30 || !rest.is_empty() {
        return None;
    }
    let mut rs = Vec::with_capacity(2 * size);
    let mut body = body;
    for _ in 0..2 {
        let (tag, integer, rest) = der_tlv(body)?;
        if tag != 0x02 {
            return None;
        }
        let start = integer
            .iter()
            .position(|&b| b != 0)
            .unwrap_or(integer.len());
        let magnitude = &integer[start..];
        if magnitude.len() > size {
            return None;
        }
        rs.extend(core::iter::repeat(0).take(size - magnitude.len()));
        rs.extend_from_slice(magnitude);
        body = rest;
    }
    body.is_empty().then_some(rs)
}

/// One DER tag-length-value: (tag, value, the bytes after it).
fn der_tlv(bytes: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = bytes.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (length, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 2 || rest.len() < count {
            return None;
        }
        let (digits, rest) = rest.split_at(count);
        let length = digits
            .iter()
            .fold(0usize, |acc, &d| (acc << 8) | usize::from(d));
        (length, rest)
    };
    if rest.len() < length {
        return None;
    }
    let (value, rest) = rest.split_at(length);
    Some((tag, value, rest))
}

/// A meter's public key: a SEC1 point, and its curve when the key names one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MeterPublicKey {
    /// The curve named by the key (a DER `SubjectPublicKeyInfo` names it; a bare point does
    /// not, and is then taken to be on the record's curve).
    pub curve: Option<Curve>,
    /// The point, SEC1-encoded (`04‖X‖Y`, or compressed `02|03‖X`).
    pub point: Vec<u8>,
}

impl MeterPublicKey {
    /// Reads a public key from text in any of the shapes it arrives in: hex or Base64 of a
    /// DER `SubjectPublicKeyInfo`, of a SEC1 point, or of bare `X‖Y`; Base64 of that hex
    /// (the OCA note's example); and `base64("oca:<base16|base64>:<content>:<key>")` (the OCA
    /// note, §3.2.2, where spaces and a `0x` in a base16 key are ignored).
    ///
    /// ```
    /// use ocpp_model::signed_meter::{Curve, MeterPublicKey};
    /// let key = MeterPublicKey::parse(concat!(
    ///     "3059301306072A8648CE3D020106082A8648CE3D030107034200043AEEB45C392357820A58FDFB",
    ///     "0857BD77ADA31585C61C430531DFA53B440AFBFDD95AC887C658EA55260F808F55CA948DF235C2",
    ///     "108A0D6DC7D4AB1A5E1A7955BE",
    /// )).unwrap();
    /// assert_eq!(key.curve, Some(Curve::Secp256r1));
    /// assert_eq!(key.point.len(), 65);
    /// ```
    pub fn parse(text: &str) -> Result<MeterPublicKey, SignedMeterError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(SignedMeterError::MissingPublicKey);
        }
        let bytes = if let Some(bytes) = decode_hex(text) {
            bytes
        } else if let Some(bytes) = decode_base64(text) {
            match core::str::from_utf8(&bytes) {
                Ok(inner) if inner.starts_with("oca:") => return Self::parse_oca(inner),
                Ok(inner) => decode_hex(inner.trim()).unwrap_or(bytes),
                Err(_) => bytes,
            }
        } else {
            return Err(key_error("neither hex nor Base64"));
        };
        Self::from_bytes(&bytes)
    }

    /// `oca:<encoding>:<content-type>:<printed key>`.
    fn parse_oca(text: &str) -> Result<MeterPublicKey, SignedMeterError> {
        let mut parts = text.splitn(4, ':');
        let (_, encoding, _content, key) = (parts.next(), parts.next(), parts.next(), parts.next());
        let key = key.ok_or_else(|| key_error("an \"oca:\" key without its four parts"))?;
        let bytes = match encoding {
            Some("base16") => {
                let key = key.trim();
                let key = key
                    .strip_prefix("0x")
                    .or_else(|| key.strip_prefix("0X"))
                    .unwrap_or(key);
                let digits: String = key.chars().filter(char::is_ascii_hexdigit).collect();
                decode_hex(&digits)
            }
            Some("base64") => decode_base64(key.trim()),
            _ => return Err(key_error("an \"oca:\" key in an unknown encoding")),
        }
        .ok_or_else(|| key_error("an \"oca:\" key that does not decode"))?;
        Self::from_bytes(&bytes)
    }

    /// Reads a key from its bytes: DER `SubjectPublicKeyInfo`, a SEC1 point or bare `X‖Y`.
    pub fn from_bytes(bytes: &[u8]) -> Result<MeterPublicKey, SignedMeterError> {
        match bytes.first() {
            Some(0x30) => spki(bytes),
            Some(0x04) if matches!(bytes.len(), 49 | 65 | 97) => Ok(MeterPublicKey {
                curve: None,
                point: bytes.to_vec(),
            }),
            Some(0x02 | 0x03) if matches!(bytes.len(), 25 | 33 | 49) => Ok(MeterPublicKey {
                curve: None,
                point: bytes.to_vec(),
            }),
            _ if matches!(bytes.len(), 48 | 64 | 96) => {
                let mut point = Vec::with_capacity(bytes.len() + 1);
                point.push(0x04);
                point.extend_from_slice(bytes);
                Ok(MeterPublicKey { curve: None, point })
            }
            _ => Err(key_error(&format!(
                "{} bytes are neither a DER SubjectPublicKeyInfo nor an elliptic-curve point",
                bytes.len()
            ))),
        }
    }
}

/// `SubjectPublicKeyInfo { AlgorithmIdentifier { id-ecPublicKey, namedCurve }, BIT STRING }`.
fn spki(bytes: &[u8]) -> Result<MeterPublicKey, SignedMeterError> {
    const EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
    let not_spki = || key_error("not a DER SubjectPublicKeyInfo of an elliptic-curve key");
    let (tag, info, rest) = der_tlv(bytes).ok_or_else(not_spki)?;
    if tag != 0x30 || !rest.is_empty() {
        return Err(not_spki());
    }
    let (tag, algorithm, rest) = der_tlv(info).ok_or_else(not_spki)?;
    if tag != 0x30 {
        return Err(not_spki());
    }
    let (tag, bits, rest) = der_tlv(rest).ok_or_else(not_spki)?;
    if tag != 0x03 || !rest.is_empty() {
        return Err(not_spki());
    }
    let (tag, oid, rest) = der_tlv(algorithm).ok_or_else(not_spki)?;
    if tag != 0x06 || oid != EC_PUBLIC_KEY {
        return Err(not_spki());
    }
    let (tag, curve, _) = der_tlv(rest).ok_or_else(not_spki)?;
    if tag != 0x06 {
        return Err(key_error("an elliptic-curve key without a named curve"));
    }
    let curve = match curve {
        [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07] => Curve::Secp256r1,
        [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x01] => Curve::Secp192r1,
        [0x2b, 0x81, 0x04, 0x00, 0x22] => Curve::Secp384r1,
        [0x2b, 0x81, 0x04, 0x00, 0x0a] => Curve::Secp256k1,
        [0x2b, 0x81, 0x04, 0x00, 0x1f] => Curve::Secp192k1,
        [0x2b, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01, 0x07] => Curve::Brainpool256r1,
        [0x2b, 0x24, 0x03, 0x03, 0x02, 0x08, 0x01, 0x01, 0x0b] => Curve::Brainpool384r1,
        _ => return Err(key_error("a key on a curve OCMF does not name")),
    };
    match bits.split_first() {
        Some((0, point)) if !point.is_empty() => Ok(MeterPublicKey {
            curve: Some(curve),
            point: point.to_vec(),
        }),
        _ => Err(not_spki()),
    }
}

/// The bytes of an even number of hex digits (either case), or `None`.
fn decode_hex(text: &str) -> Option<Vec<u8>> {
    let digits = text.as_bytes();
    if digits.is_empty() || digits.len() % 2 != 0 {
        return None;
    }
    let nibble = |d: u8| char::from(d).to_digit(16);
    digits
        .chunks_exact(2)
        .map(|pair| Some((nibble(pair[0])? * 16 + nibble(pair[1])?) as u8))
        .collect()
}

/// The bytes of standard Base64 (padded or not), or `None`.
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    engine.decode(text).ok().filter(|bytes| !bytes.is_empty())
}

impl SignedMeterValue {
    /// Says what the signed value is: the encoding recognised (2.x `encodingMethod` `OCMF`,
    /// or the `OCMF|` header of the data, plain, Base64 or hex, as 1.6 `SignedData` and 2.x
    /// carry it) and the record read. Another `encodingMethod` (e.g. `EDL`) is
    /// [`SignedMeterError::UnsupportedEncoding`].
    ///
    /// ```
    /// use ocpp_model::signed_meter::{SignedMeterError, SignedReading, Wrapping};
    /// use ocpp_model::SignedMeterValue;
    ///
    /// // Base64 of `OCMF|{"MS":"M1","RD":[]}|{"SD":"00"}`, as the OCA note sends it.
    /// let signed = SignedMeterValue::new("T0NNRnx7Ik1TIjoiTTEiLCJSRCI6W119fHsiU0QiOiIwMCJ9");
    /// let SignedReading::Ocmf { record, wrapping } = signed.read()? else { unreachable!() };
    /// assert_eq!(wrapping, Wrapping::Base64);
    /// assert_eq!(record.payload.meter_serial.as_deref(), Some("M1"));
    ///
    /// let mut edl = SignedMeterValue::new("<edl/>");
    /// edl.encoding_method = Some("EDL".into());
    /// assert_eq!(
    ///     edl.read().unwrap_err(),
    ///     SignedMeterError::UnsupportedEncoding { encoding: "EDL".into() }
    /// );
    /// # Ok::<(), SignedMeterError>(())
    /// ```
    pub fn read(&self) -> Result<SignedReading, SignedMeterError> {
        let named = self
            .encoding_method
            .as_deref()
            .map(str::trim)
            .filter(|name| !name.is_empty());
        let ocmf_named = named.is_some_and(|name| name.eq_ignore_ascii_case(OCMF_HEADER));
        let data = self.signed_meter_data.trim();
        match unwrap_ocmf(data) {
            Some((text, wrapping)) => {
                if let Some(name) = named.filter(|_| !ocmf_named) {
                    // The data is OCMF but the message names another encoding: say so
                    // rather than guess which of the two is wrong.
                    return Err(SignedMeterError::UnsupportedEncoding {
                        encoding: name.to_owned(),
                    });
                }
                let record = OcmfRecord::parse(&text)?;
                Ok(SignedReading::Ocmf { record, wrapping })
            }
            None if ocmf_named => Err(OcmfRecord::parse(data)
                .err()
                .unwrap_or(SignedMeterError::MissingHeader)),
            None => Err(match named {
                Some(name) => SignedMeterError::UnsupportedEncoding {
                    encoding: name.to_owned(),
                },
                None => SignedMeterError::UnknownEncoding,
            }),
        }
    }

    /// Says what the signed value is and checks its signature: with `public_key` when given
    /// (the key the CSMS holds for the meter, [`KeySource::Given`]), else with the key sent in
    /// the message (2.x `publicKey`, [`KeySource::Sent`]). `Ok` is what was verified: the
    /// record (readings, meter id), the algorithm and the key.
    ///
    /// The algorithm is the record's `SA`; when the record names none, the 2.x
    /// `signingMethod` if given, else OCMF's default (`ECDSA-secp256r1-SHA256`).
    ///
    /// See the [module](self) for an example.
    pub fn verify(&self, public_key: Option<&str>) -> Result<Verified, SignedMeterError> {
        let SignedReading::Ocmf { record, .. } = self.read()?;
        let signing_method = self
            .signing_method
            .as_deref()
            .map(str::trim)
            .filter(|name| !name.is_empty());
        let algorithm = match (&record.signature.algorithm, signing_method) {
            (None, Some(name)) => SignatureAlgorithm::from_name(name).ok_or_else(|| {
                SignedMeterError::Unsupported {
                    algorithm: name.to_owned(),
                }
            })?,
            _ => record.signature.algorithm()?,
        };
        let (text, key_source) = match (public_key, self.public_key.as_deref()) {
            (Some(key), _) => (key, KeySource::Given),
            (None, Some(key)) if !key.trim().is_empty() => (key, KeySource::Sent),
            _ => return Err(SignedMeterError::MissingPublicKey),
        };
        let key = MeterPublicKey::parse(text)?;
        let algorithm = record.verify_as(algorithm, &key)?;
        Ok(Verified {
            record,
            algorithm,
            public_key: key,
            key_source,
        })
    }
}

/// The OCMF text in `data`, and how it was carried.
fn unwrap_ocmf(data: &str) -> Option<(String, Wrapping)> {
    let header = "OCMF|";
    if data.starts_with(header) {
        return Some((data.to_owned(), Wrapping::Plain));
    }
    let compact: String = data.split_whitespace().collect();
    let decoded = [
        (decode_base64(&compact), Wrapping::Base64),
        (decode_hex(&compact), Wrapping::Hex),
    ];
    decoded.into_iter().find_map(|(bytes, wrapping)| {
        let text = String::from_utf8(bytes?).ok()?;
        text.trim_start()
            .starts_with(header)
            .then(|| (text.trim().to_owned(), wrapping))
    })
}

/// The members of a JSON object, raw, in order (duplicates kept, to be refused).
struct Fields {
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
    fn parse(section: &'static str, text: &str) -> Result<Fields, SignedMeterError> {
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

fn read_payload(mut fields: Fields) -> Result<OcmfPayload, SignedMeterError> {
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

fn read_signature(mut fields: Fields) -> Result<OcmfSignature, SignedMeterError> {
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
