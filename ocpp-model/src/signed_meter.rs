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
//! as `2935.60` keeps its digits ([`Decimal`](crate::Decimal)). `ECDSA-secp256r1-SHA256`
//! (OCMF's default) and the secp384r1 algorithms are checked; brainpool, secp192r1 and the
//! Koblitz curves are named and refused as [`SignedMeterError::Unsupported`], never reported
//! invalid. Other encodings (EDL, SML...) are recognised by their name and refused as
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

use crate::SignedMeterValue;

mod fields;
mod key;
mod record;

use key::{decode_base64, decode_hex};

pub use key::MeterPublicKey;
pub use record::{OcmfPayload, OcmfReading, OcmfRecord, OcmfSignature, OcmfTime};

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
    /// A hash algorithm: the hash of an OCMF signature algorithm (`SA`), and OCPP 2.x
    /// `HashAlgorithmEnumType` (the hash of a certificate's OCSP `CertID`, as in
    /// `OCSPRequestDataType` and `CertificateHashDataType`).
    HashAlgorithm {
        /// SHA-256.
        Sha256 => "SHA256",
        /// SHA-384.
        Sha384 => "SHA384",
        /// SHA-512.
        Sha512 => "SHA512",
    }
}

impl HashAlgorithm {
    /// The digest of `data`.
    ///
    /// ```
    /// use ocpp_model::signed_meter::HashAlgorithm;
    /// assert_eq!(HashAlgorithm::Sha256.digest(b"").len(), 32);
    /// assert_eq!(HashAlgorithm::Sha512.digest(b"abc").len(), 64);
    /// ```
    pub fn digest(self, data: &[u8]) -> Vec<u8> {
        use sha2::Digest as _;
        match self {
            HashAlgorithm::Sha256 => sha2::Sha256::digest(data).to_vec(),
            HashAlgorithm::Sha384 => sha2::Sha384::digest(data).to_vec(),
            HashAlgorithm::Sha512 => sha2::Sha512::digest(data).to_vec(),
        }
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
