//! Signed meter values (issue 37): OCMF records signed in the test with a fixed key, read and
//! checked through `SignedMeterValue::read`/`verify`, from 1.6 and 2.x messages as on the wire;
//! every way of getting them wrong gives its own error; a published record from the field is a
//! differential vector.
#![cfg(feature = "signed-meter")]

use base64::Engine as _;
use ocpp_messages::{DecodeOptions, OcppVersion, Request};
use ocpp_model::signed_meter::{
    Curve, KeySource, MeterPublicKey, MeterStatus, OcmfRecord, SignedMeterError, SignedReading,
    TimeSync, TransactionPoint, Wrapping,
};
use ocpp_model::{Decimal, SignedMeterValue, StationEvent};
use p256::ecdsa::signature::hazmat::PrehashSigner;
use p256::ecdsa::signature::Signer;
use proptest::prelude::*;
use sha2::Digest as _;

/// The payload of the record the tests sign: start and end of a transaction, the second
/// reading leaving out what the first one said (RI, RU, RT, ST), an unknown field per level.
const PAYLOAD: &str = r#"{"FV":"1.0","GI":"ACME WB-1","GS":"GW-0042","PG":"T17","MV":"Phoenix Contact","MM":"EEM-350-D-MCB","MS":"BQ27400330016","MF":"1.0","IS":true,"IL":"VERIFIED","IF":["RFID_PLAIN","OCPP_RS_TLS"],"IT":"ISO14443","ID":"1F2D3A4F5506C7","TT":"Tarif 1","LC":{"LN":"cable","LI":1,"LR":2,"LU":"mOhm"},"RD":[{"TM":"2018-07-24T13:22:04,000+0200 S","TX":"B","RV":2935.60,"RI":"1-b:1.8.0","RU":"kWh","RT":"DC","EF":"","ST":"G","XV":52440},{"TM":"2018-07-24T13:26:04,000+0200 S","TX":"E","RV":2965.10,"CL":0.5}]}"#;

/// Hex of the DER SubjectPublicKeyInfo prefix of a P-256 key, up to its point.
const P256_SPKI_PREFIX: &str = "3059301306072A8648CE3D020106082A8648CE3D030107034200";

fn signing_key(seed: u8) -> p256::ecdsa::SigningKey {
    p256::ecdsa::SigningKey::from_bytes(&[seed; 32].into()).unwrap()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The point of a key, SEC1 uncompressed (`04‖X‖Y`).
fn point(key: &p256::ecdsa::SigningKey) -> Vec<u8> {
    key.verifying_key()
        .to_encoded_point(false)
        .as_bytes()
        .to_vec()
}

/// Hex of the key's DER SubjectPublicKeyInfo.
fn spki_hex(key: &p256::ecdsa::SigningKey) -> String {
    format!("{P256_SPKI_PREFIX}{}", hex(&point(key)))
}

/// `OCMF|payload|{"SA":...,"SD":<hex DER>}` signed with `key`.
fn signed_record(key: &p256::ecdsa::SigningKey, payload: &str) -> String {
    let signature: p256::ecdsa::Signature = key.sign(payload.as_bytes());
    format!(
        r#"OCMF|{payload}|{{"SA":"ECDSA-secp256r1-SHA256","SD":"{}"}}"#,
        hex(signature.to_der().as_bytes())
    )
}

fn key() -> p256::ecdsa::SigningKey {
    signing_key(7)
}

fn record() -> String {
    signed_record(&key(), PAYLOAD)
}

#[test]
fn a_record_signed_by_the_meter_verifies_and_says_what_it_is() {
    let signed = SignedMeterValue::new(record());
    let verified = signed.verify(Some(&spki_hex(&key()))).unwrap();
    assert_eq!(verified.key_source, KeySource::Given);
    assert_eq!(verified.algorithm.to_string(), "ECDSA-secp256r1-SHA256");
    assert_eq!(verified.public_key.curve, Some(Curve::Secp256r1));
    assert_eq!(verified.meter_id(), Some("BQ27400330016"));

    let payload = &verified.record.payload;
    assert_eq!(payload.format_version.as_deref(), Some("1.0"));
    assert_eq!(payload.gateway_id.as_deref(), Some("ACME WB-1"));
    assert_eq!(payload.meter_firmware.as_deref(), Some("1.0"));
    assert_eq!(payload.identification_status, Some(true));
    assert_eq!(payload.identification_type.as_deref(), Some("ISO14443"));
    assert_eq!(
        payload.identification_data.as_deref(),
        Some("1F2D3A4F5506C7")
    );
    assert_eq!(payload.identification_flags, ["RFID_PLAIN", "OCPP_RS_TLS"]);
    assert_eq!(payload.tariff_text.as_deref(), Some("Tarif 1"));
    // Unknown fields are kept, raw.
    assert_eq!(
        payload.other,
        [(
            "LC".to_owned(),
            r#"{"LN":"cable","LI":1,"LR":2,"LU":"mOhm"}"#.to_owned()
        )]
    );

    let [begin, end] = verified.readings() else {
        panic!("two readings")
    };
    assert_eq!(begin.transaction, Some(TransactionPoint::Begin));
    assert_eq!(begin.value.unwrap().to_string(), "2935.60"); // digits kept
    assert_eq!(
        begin.time.timestamp.as_str(),
        "2018-07-24T13:22:04.000+02:00"
    );
    assert_eq!(begin.time.sync, Some(TimeSync::Synchronized));
    assert_eq!(begin.other, [("XV".to_owned(), "52440".to_owned())]);
    assert_eq!(end.transaction, Some(TransactionPoint::End));
    assert!(end.transaction.unwrap().is_end());
    assert_eq!(end.value.unwrap().to_string(), "2965.10");
    assert_eq!(end.cumulated_loss, Some(Decimal::new(5, 1)));
    // Left out in the second reading: the first one's.
    assert_eq!(end.identification.as_deref(), Some("1-b:1.8.0"));
    assert_eq!(end.unit.as_deref(), Some("kWh"));
    assert_eq!(end.current_type.as_deref(), Some("DC"));
    assert_eq!(end.status, Some(MeterStatus::Good));
    assert!(end.other.is_empty());
    let energy = end.value.unwrap().checked_sub(begin.value.unwrap());
    assert_eq!(energy.unwrap().to_string(), "29.50");
}

#[test]
fn the_key_is_read_in_every_shape_it_arrives_in() {
    let key = key();
    let point = point(&key);
    let spki = format!("{P256_SPKI_PREFIX}{}", hex(&point));
    let spki_bytes: Vec<u8> = (0..spki.len() / 2)
        .map(|i| u8::from_str_radix(&spki[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let spaced: String = spki
        .as_bytes()
        .chunks(4)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect::<Vec<_>>()
        .join(" ");
    let shapes = [
        spki.clone(),
        spki.to_lowercase(),
        base64(&spki_bytes),
        hex(&point),
        base64(&point),
        hex(&point[1..]), // bare X‖Y
        hex(key.verifying_key().to_encoded_point(true).as_bytes()),
        base64(spki.as_bytes()), // Base64 of the hex (the OCA note's example)
        base64(format!("oca:base16:asn1:0x{spaced}").as_bytes()), // the OCA note's envelope
        base64(format!("oca:base64:asn1:{}", base64(&spki_bytes)).as_bytes()),
    ];
    let signed = SignedMeterValue::new(record());
    for shape in shapes {
        let verified = signed.verify(Some(&shape));
        assert!(verified.is_ok(), "{shape}: {verified:?}");
    }
}

#[test]
fn the_2_x_form_verifies_with_the_key_it_carries_and_the_1_6_form_base64_wrapped() {
    let key = key();
    // 2.0.1 MeterValues, decoded from the wire: signedMeterValue with all four fields.
    let json = serde_json::json!({
        "evseId": 1,
        "meterValue": [{
            "timestamp": "2018-07-24T11:26:04Z",
            "sampledValue": [{
                "value": 2965.1,
                "signedMeterValue": {
                    "signedMeterData": base64(record().as_bytes()),
                    "signingMethod": "",
                    "encodingMethod": "OCMF",
                    "publicKey": base64(spki_hex(&key).as_bytes()),
                }
            }]
        }]
    });
    let signed = signed_of(OcppVersion::V2_0_1, &json.to_string());
    assert_eq!(signed.encoding_method.as_deref(), Some("OCMF"));
    let SignedReading::Ocmf { wrapping, .. } = signed.read().unwrap() else {
        panic!("OCMF")
    };
    assert_eq!(wrapping, Wrapping::Base64);
    let verified = signed.verify(None).unwrap();
    assert_eq!(verified.key_source, KeySource::Sent);
    // The caller's key wins over the one sent: a key not the meter's does not verify.
    assert_eq!(
        signed.verify(Some(&spki_hex(&signing_key(8)))),
        Err(SignedMeterError::InvalidSignature)
    );

    // 1.6 MeterValues: a SignedData sample, its value Base64 of the OCMF text, folded into
    // the plain sample it signs; no key in the message.
    let json = serde_json::json!({
        "connectorId": 1,
        "transactionId": 17,
        "meterValue": [{
            "timestamp": "2018-07-24T11:26:04Z",
            "sampledValue": [
                {"value": "2965.10", "unit": "kWh", "context": "Transaction.End"},
                {"value": base64(record().as_bytes()), "format": "SignedData", "unit": "kWh", "context": "Transaction.End"}
            ]
        }]
    });
    let signed = signed_of(OcppVersion::V1_6, &json.to_string());
    assert_eq!(signed.verify(None), Err(SignedMeterError::MissingPublicKey));
    let verified = signed.verify(Some(&spki_hex(&key))).unwrap();
    assert_eq!(verified.readings()[1].value, Some(Decimal::new(296510, 2)));

    // Plain text and hex work too.
    for data in [record(), hex(record().as_bytes())] {
        let signed = SignedMeterValue::new(data);
        assert!(signed.verify(Some(&spki_hex(&key))).is_ok());
    }
}

/// The first signed value of a MeterValues request decoded from `json`.
fn signed_of(version: OcppVersion, json: &str) -> SignedMeterValue {
    let request = Request::decode(version, "MeterValues", json, &DecodeOptions::strict()).unwrap();
    let readings = match StationEvent::from_request(&request) {
        StationEvent::MeterReadings(m) => m.readings,
        StationEvent::TransactionUpdated(u) => u.readings,
        other => panic!("{other:?}"),
    };
    readings
        .into_iter()
        .find_map(|r| r.signed)
        .expect("a signed value")
}

#[test]
fn a_changed_byte_or_another_key_is_an_invalid_signature() {
    let key = key();
    let record = record();
    let spki = spki_hex(&key);
    // The value, re-written with the same numeric value: not what was signed.
    for (from, to) in [
        ("2965.10", "2965.11"),
        ("2965.10", "2965.1"),
        (r#""TX":"E""#, r#""TX":"R""#),
        (r#""FV":"1.0","#, r#""FV":"1.0", "#),
        ("BQ27400330016", "BQ27400330017"),
    ] {
        let changed = SignedMeterValue::new(record.replacen(from, to, 1));
        assert_eq!(
            changed.verify(Some(&spki)),
            Err(SignedMeterError::InvalidSignature),
            "{from} -> {to}"
        );
    }
    // Every single byte of the payload changed: never verifies (an invalid signature, or a
    // record that no longer reads).
    let start = "OCMF|".len();
    for at in start..start + PAYLOAD.len() {
        let mut bytes = record.clone().into_bytes();
        bytes[at] = if bytes[at].is_ascii_digit() {
            b'0' + (bytes[at] - b'0' + 1) % 10
        } else {
            bytes[at] ^ 0x01
        };
        let changed = SignedMeterValue::new(String::from_utf8(bytes).unwrap());
        assert!(changed.verify(Some(&spki)).is_err(), "byte {at}");
    }
    // Another key.
    assert_eq!(
        SignedMeterValue::new(record.clone()).verify(Some(&spki_hex(&signing_key(9)))),
        Err(SignedMeterError::InvalidSignature)
    );
    // The signature section is not signed: an added field there changes nothing.
    let annotated = record.replacen(r#"|{"SA""#, r#"|{"UX":1,"SA""#, 1);
    assert!(SignedMeterValue::new(annotated).verify(Some(&spki)).is_ok());
}

#[test]
fn raw_and_base64_signatures_and_the_default_algorithm() {
    let key = key();
    let signature: p256::ecdsa::Signature = key.sign(PAYLOAD.as_bytes());
    let spki = spki_hex(&key);
    for section in [
        // raw r‖s, hex; SA left out (the default)
        format!(r#"{{"SD":"{}"}}"#, hex(&signature.to_bytes())),
        // DER, Base64
        format!(
            r#"{{"SA":"ECDSA-secp256r1-SHA256","SE":"base64","SD":"{}"}}"#,
            base64(signature.to_der().as_bytes())
        ),
        // the high-s twin of the signature verifies too (as real meters produce it)
        format!(r#"{{"SD":"{}"}}"#, hex(&high_s(&signature).to_bytes()),),
    ] {
        let text = format!("OCMF|{PAYLOAD}|{section}");
        let verified = SignedMeterValue::new(text).verify(Some(&spki));
        assert!(verified.is_ok(), "{section}: {verified:?}");
    }
}

/// `(r, n - s)`: the other valid signature of the same message.
fn high_s(signature: &p256::ecdsa::Signature) -> p256::ecdsa::Signature {
    let (r, s) = signature.split_scalars();
    p256::ecdsa::Signature::from_scalars(r.to_bytes(), (-*s).to_bytes()).unwrap()
}

#[test]
fn secp384r1_with_sha384_and_with_sha256() {
    let key = p384::ecdsa::SigningKey::from_bytes(&[5u8; 48].into()).unwrap();
    let point = key.verifying_key().to_encoded_point(false);
    let spki = format!(
        "3076301006072A8648CE3D020106052B81040022036200{}",
        hex(point.as_bytes())
    );
    let sha384: p384::ecdsa::Signature = key.sign(PAYLOAD.as_bytes());
    let sha256: p384::ecdsa::Signature = key
        .sign_prehash(&sha2::Sha256::digest(PAYLOAD.as_bytes()))
        .unwrap();
    for (algorithm, signature) in [
        ("ECDSA-secp384r1-SHA384", sha384),
        ("ECDSA-secp384r1-SHA256", sha256),
    ] {
        let text = format!(
            r#"OCMF|{PAYLOAD}|{{"SA":"{algorithm}","SD":"{}"}}"#,
            hex(signature.to_der().as_bytes())
        );
        let verified = SignedMeterValue::new(text.clone()).verify(Some(&spki));
        assert_eq!(verified.unwrap().algorithm.to_string(), algorithm);
        // Without SA in the record, the 2.x signingMethod says which algorithm it is.
        let without_sa = text.replacen(&format!(r#""SA":"{algorithm}","#), "", 1);
        let mut signed = SignedMeterValue::new(without_sa);
        assert!(matches!(
            signed.verify(Some(&spki)),
            Err(SignedMeterError::KeyCurveMismatch { .. })
        ));
        signed.signing_method = Some(algorithm.to_owned());
        assert_eq!(
            signed.verify(Some(&spki)).unwrap().algorithm.to_string(),
            algorithm
        );
        let changed = SignedMeterValue::new(text.replacen("2965.10", "2965.20", 1));
        assert_eq!(
            changed.verify(Some(&spki)),
            Err(SignedMeterError::InvalidSignature)
        );
        // A P-256 key for a P-384 record: the curves differ, said as such.
        assert!(matches!(
            SignedMeterValue::new(text).verify(Some(&spki_hex(&signing_key(7)))),
            Err(SignedMeterError::KeyCurveMismatch {
                key: Curve::Secp256r1,
                ..
            })
        ));
    }
}

#[test]
fn other_algorithms_and_encodings_are_unsupported_not_invalid() {
    let spki = spki_hex(&key());
    for algorithm in [
        "ECDSA-brainpool256r1-SHA256",
        "ECDSA-secp192r1-SHA256",
        "ECDSA-secp256k1-SHA256",
        "RSA-PSS-SHA256",
    ] {
        let text = format!(r#"OCMF|{PAYLOAD}|{{"SA":"{algorithm}","SD":"3006020101020101"}}"#);
        assert_eq!(
            SignedMeterValue::new(text).verify(Some(&spki)),
            Err(SignedMeterError::Unsupported {
                algorithm: algorithm.to_owned()
            })
        );
    }
    let mut edl = SignedMeterValue::new("PD94bWwgdmVyc2lvbj0iMS4wIj8+");
    edl.encoding_method = Some("EDL".to_owned());
    assert_eq!(
        edl.verify(Some(&spki)),
        Err(SignedMeterError::UnsupportedEncoding {
            encoding: "EDL".to_owned()
        })
    );
    // OCMF data under another name: not guessed.
    let mut misnamed = SignedMeterValue::new(record());
    misnamed.encoding_method = Some("SML".to_owned());
    assert!(matches!(
        misnamed.read(),
        Err(SignedMeterError::UnsupportedEncoding { .. })
    ));
    assert_eq!(
        SignedMeterValue::new("not signed data").read(),
        Err(SignedMeterError::UnknownEncoding)
    );
    // Named OCMF but not OCMF: the reader says why.
    let mut named = SignedMeterValue::new("OCMF{}");
    named.encoding_method = Some("OCMF".to_owned());
    assert_eq!(named.read(), Err(SignedMeterError::MissingHeader));
}

#[test]
fn truncated_or_garbled_records_give_precise_errors() {
    let record = record();
    // Every prefix fails to read, none panics.
    for end in 0..record.len() {
        assert!(OcmfRecord::parse(&record[..end]).is_err(), "prefix {end}");
    }
    let payload_end = "OCMF|".len() + PAYLOAD.len();
    assert_eq!(
        OcmfRecord::parse("OCMX|{}|{}"),
        Err(SignedMeterError::MissingHeader)
    );
    assert_eq!(
        OcmfRecord::parse(&record[..payload_end]),
        Err(SignedMeterError::MissingSection {
            section: "signature"
        })
    );
    assert_eq!(
        OcmfRecord::parse(&record[..payload_end + 1]),
        Err(SignedMeterError::MissingSection {
            section: "signature"
        })
    );
    assert_eq!(
        OcmfRecord::parse(r#"OCMF||{"SD":"00"}"#),
        Err(SignedMeterError::MissingSection { section: "payload" })
    );
    assert_eq!(
        OcmfRecord::parse(&format!("{record}|{{}}")),
        Err(SignedMeterError::ExtraSection)
    );
    let Err(SignedMeterError::Json {
        section: "payload",
        line: 1,
        column,
        ..
    }) = OcmfRecord::parse(&format!("OCMF|{}|{{\"SD\":\"00\"}}", &PAYLOAD[..40]))
    else {
        panic!("a JSON error in the payload")
    };
    assert_eq!(column, 40);
    assert!(matches!(
        OcmfRecord::parse(r#"OCMF|{"RD":[]}|{"SD":"00""#),
        Err(SignedMeterError::Json {
            section: "signature",
            ..
        })
    ));

    let field = |payload: &str| OcmfRecord::parse(&format!(r#"OCMF|{payload}|{{"SD":"00"}}"#));
    let invalid = |error: &SignedMeterError, path: &str| matches!(error, SignedMeterError::InvalidField { field, .. } if field == path);
    assert_eq!(
        field(r#"{"MS":"1"}"#),
        Err(SignedMeterError::MissingField {
            field: "RD".to_owned()
        })
    );
    assert_eq!(
        field(r#"{"RD":[{"RV":1}]}"#),
        Err(SignedMeterError::MissingField {
            field: "RD[0].TM".to_owned()
        })
    );
    assert_eq!(
        field(r#"{"MS":"1","MS":"2","RD":[]}"#),
        Err(SignedMeterError::DuplicateField {
            field: "MS".to_owned()
        })
    );
    assert_eq!(
        field(r#"{"RD":[{"TM":"2018-07-24T13:22:04,000+0200 S","RV":1,"RV":2}]}"#),
        Err(SignedMeterError::DuplicateField {
            field: "RD[0].RV".to_owned()
        })
    );
    let reading = r#"{"TM":"2018-07-24T13:22:04,000+0200 S"}"#;
    for (payload, path) in [
        (
            format!(r#"{{"RD":[{reading},{{"TM":"2018-07-24T13:22:04,000+0200 S","RV":"1.5"}}]}}"#),
            "RD[1].RV",
        ),
        (
            r#"{"RD":[{"TM":"2018-07-24T13:22:04,000+0200 S","TX":"Q"}]}"#.to_owned(),
            "RD[0].TX",
        ),
        (
            r#"{"RD":[{"TM":"2018-07-24T13:22:04,000+0200 S","ST":"GOOD"}]}"#.to_owned(),
            "RD[0].ST",
        ),
        (r#"{"RD":[{"TM":"yesterday S"}]}"#.to_owned(), "RD[0].TM"),
        (
            r#"{"RD":[{"TM":"2018-07-24T13:22:04,000+0200 Q"}]}"#.to_owned(),
            "RD[0].TM",
        ),
        (r#"{"IS":"yes","RD":[]}"#.to_owned(), "IS"),
        (r#"{"IF":"RFID_PLAIN","RD":[]}"#.to_owned(), "IF"),
        (r#"{"MS":7,"RD":[]}"#.to_owned(), "MS"),
        (r#"{"RD":{}}"#.to_owned(), "RD"),
    ] {
        let error = field(&payload).unwrap_err();
        assert!(invalid(&error, path), "{payload}: {error:?}");
        // The message names the field.
        assert!(error.to_string().contains(path), "{error}");
    }
    assert_eq!(
        OcmfRecord::parse(r#"OCMF|{"RD":[]}|{"SA":"ECDSA-secp256r1-SHA256"}"#),
        Err(SignedMeterError::MissingField {
            field: "SD".to_owned()
        })
    );
    // Signature data that does not decode.
    let spki = spki_hex(&key());
    for (sd, se) in [
        ("XYZ", "hex"),
        ("3045", "hex"),
        ("@@", "base64"),
        ("00", "pem"),
    ] {
        let text = format!(r#"OCMF|{PAYLOAD}|{{"SE":"{se}","SD":"{sd}"}}"#);
        assert!(
            matches!(
                SignedMeterValue::new(text).verify(Some(&spki)),
                Err(SignedMeterError::SignatureEncoding { .. })
            ),
            "{sd} {se}"
        );
    }
    // Keys that do not read.
    for key in ["", "zz", "3059", &hex(&[4; 10]), "b2NhOnJvdDEzOng6eQ=="] {
        let verified = SignedMeterValue::new(record.clone()).verify(Some(key));
        assert!(
            matches!(
                verified,
                Err(SignedMeterError::PublicKey { .. } | SignedMeterError::MissingPublicKey)
            ),
            "{key:?}: {verified:?}"
        );
    }
    // A point that is not on the curve.
    let mut off_curve = point(&key());
    off_curve[64] ^= 1;
    assert!(matches!(
        MeterPublicKey::from_bytes(&off_curve)
            .and_then(|k| OcmfRecord::parse(&record).unwrap().verify(&k)),
        Err(SignedMeterError::PublicKey { .. })
    ));
}

/// A record from the field, with its meter's public key: KEBA KCP30 (gateway serial
/// 17619300), from the test data of the S.A.F.E. e.V. transparency software
/// (`test_ocmf_keba_kcp30.xml`), as also used by the tests of the Python package `pyocmf`
/// (`tests/test_cli.py`). Its signature's `s` is above n/2, as real meters produce it.
const KEBA_RECORD: &str = concat!(
    r#"OCMF|{"FV":"1.0","GI":"KEBA_KCP30","GS":"17619300","GV":"2.8.5","PG":"T32","IS":false,"#,
    r#""IL":"NONE","IF":["RFID_NONE","OCPP_NONE","ISO15118_NONE","PLMN_NONE"],"IT":"NONE","ID":"","#,
    r#""RD":[{"TM":"2019-08-13T10:03:15,000+0000 I","TX":"B","EF":"","ST":"G","RV":0.2596,"#,
    r#""RI":"1-b:1.8.0","RU":"kWh"},{"TM":"2019-08-13T10:03:36,000+0000 R","TX":"E","EF":"","#,
    r#""ST":"G","RV":0.2597,"RI":"1-b:1.8.0","RU":"kWh"}]}|{"SD":"304502200E2F107C987A300AC1"#,
    r#"695CA89EA149A8CDFA16188AF0A33EE64B67964AA943F9022100889A72B6D65364BEA8562E7F6A0253157AC"#,
    r#"FF84FE4929A93B5964D23C4265699"}"#,
);
const KEBA_KEY: &str = concat!(
    "3059301306072A8648CE3D020106082A8648CE3D030107034200043AEEB45C392357820A58FDFB",
    "0857BD77ADA31585C61C430531DFA53B440AFBFDD95AC887C658EA55260F808F55CA948DF235C2",
    "108A0D6DC7D4AB1A5E1A7955BE",
);

#[test]
fn a_published_record_from_the_field_verifies() {
    let verified = SignedMeterValue::new(KEBA_RECORD)
        .verify(Some(KEBA_KEY))
        .unwrap();
    assert_eq!(verified.meter_id(), Some("17619300"));
    let [begin, end] = verified.readings() else {
        panic!()
    };
    assert_eq!(begin.time.sync, Some(TimeSync::Informative));
    assert_eq!(end.time.sync, Some(TimeSync::Relative));
    assert_eq!(begin.value.unwrap().to_string(), "0.2596");
    assert_eq!(end.value.unwrap().to_string(), "0.2597");
    assert_eq!(
        verified.record.payload.identification_data.as_deref(),
        Some("")
    );

    // As the OCA note carries it in 2.x: Base64 data, Base64 key in the message.
    let mut signed = SignedMeterValue::new(base64(KEBA_RECORD.as_bytes()));
    signed.encoding_method = Some("OCMF".to_owned());
    signed.public_key = Some(base64(format!("oca:base16:asn1:{KEBA_KEY}").as_bytes()));
    assert_eq!(signed.verify(None).unwrap().key_source, KeySource::Sent);

    // Tampered, as in pyocmf's own negative test: the start value changed.
    let tampered = SignedMeterValue::new(KEBA_RECORD.replacen("0.2596", "999.9999", 1));
    assert_eq!(
        tampered.verify(Some(KEBA_KEY)),
        Err(SignedMeterError::InvalidSignature)
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Arbitrary text never panics the reader, as data, as key, or as both.
    #[test]
    fn arbitrary_text_never_panics(text in any::<String>(), encoding in proptest::option::of("OCMF|EDL|")) {
        let mut signed = SignedMeterValue::new(text.clone());
        signed.encoding_method = encoding;
        let _ = signed.read();
        let _ = signed.verify(Some(&text));
        let _ = signed.verify(Some(KEBA_KEY));
        let _ = OcmfRecord::parse(&text);
        let _ = MeterPublicKey::parse(&text);
    }

    /// Text shaped like OCMF (its header, JSON punctuation, field names) reaches deeper.
    #[test]
    fn ocmf_shaped_text_never_panics(body in r#"[{}\[\]":, |.0-9A-Z+,TMRVSDX-]{0,120}"#) {
        let text = format!("OCMF|{body}");
        let _ = OcmfRecord::parse(&text);
        let _ = SignedMeterValue::new(text).verify(Some(KEBA_KEY));
    }

    /// A valid record with bytes replaced anywhere never panics, and never verifies once a
    /// payload byte changed.
    #[test]
    fn mutated_records_never_panic(changes in proptest::collection::vec((any::<prop::sample::Index>(), 0x20u8..0x7f), 1..4)) {
        let original = KEBA_RECORD.as_bytes();
        let mut bytes = original.to_vec();
        for (at, byte) in changes {
            let at = at.index(bytes.len());
            bytes[at] = byte;
        }
        let payload = 5..KEBA_RECORD.find("}|{").unwrap() + 1;
        let payload_changed = bytes[payload.clone()] != original[payload];
        let text = String::from_utf8(bytes).unwrap();
        let verified = SignedMeterValue::new(text).verify(Some(KEBA_KEY));
        if payload_changed {
            prop_assert!(verified.is_err());
        }
    }
}
