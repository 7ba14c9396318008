//! Schema validation of payloads: what a violation is, how bad it is, and the strict and lenient
//! modes.
//!
//! Each generated type implements [`Schema`]: code generated from its JSON schema that checks a
//! parsed JSON value (required properties, JSON types, `maxLength`, `enum`, `minItems`/`maxItems`,
//! `minimum`/`maximum`, `multipleOf`, `format`, `additionalProperties: false`) before the value is
//! turned into the Rust type. No schema is interpreted at run time.

pub mod check;

use alloc::string::String;
use core::fmt;

use serde_json::Value;

/// How a payload breaks its schema; maps onto the OCPP-J error codes (OCPP-J 1.6 §4.2.3,
/// OCPP 2.0.1 part 4 §4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ViolationKind {
    /// A value has the wrong JSON type, e.g. a string where an integer belongs:
    /// `TypeConstraintViolation`.
    Type,
    /// A value is of the right type but outside what is allowed: too long a string, a value
    /// not in the enumeration, a number out of range or not a multiple of its step:
    /// `PropertyConstraintViolation`.
    Property,
    /// A required property is missing, or an array has too few or too many items:
    /// `OccurenceConstraintViolation` (1.6 spelling) / `OccurrenceConstraintViolation` (2.x).
    Occurrence,
    /// The payload does not have the message's structure: not a JSON object, a property the
    /// schema does not allow, or a string that breaks its `format` (date-time, URI):
    /// `FormationViolation` (1.6) / `FormatViolation` (2.x).
    Format,
}

/// One way in which a payload breaks its schema: the kind, where (a field path such as
/// `meterValue[0].sampledValue[1].unit`, empty for the payload itself) and the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{rule}", if path.is_empty() { String::new() } else { alloc::format!("`{path}`: ") })]
pub struct Violation {
    kind: ViolationKind,
    path: String,
    rule: String,
}

impl Violation {
    /// A violation of `kind` at `path` breaking `rule`.
    pub fn new(kind: ViolationKind, path: &Path<'_>, rule: impl Into<String>) -> Self {
        Violation {
            kind,
            path: alloc::format!("{path}"),
            rule: rule.into(),
        }
    }

    /// What kind of violation this is.
    pub fn kind(&self) -> ViolationKind {
        self.kind
    }

    /// Where in the payload: `chargingStation.model`, `meterValue[0].sampledValue[2].value`;
    /// empty for the payload itself.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The rule that was broken, e.g. `longer than maxLength 20 (25 characters)`.
    pub fn rule(&self) -> &str {
        &self.rule
    }
}

/// How strictly a payload is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Mode {
    /// Everything the schema says, including `additionalProperties: false` and enumerations.
    #[default]
    Strict,
    /// For peers that drift from the schema: properties the schema does not know are ignored,
    /// enumeration values it does not list are kept (as `Unrecognized`), and `null` counts as an
    /// absent optional property. All other rules still apply.
    Lenient,
}

/// Where a value sits in a payload, built on the stack while checking and rendered only when
/// a violation is reported.
#[derive(Debug, Clone, Copy)]
pub enum Path<'a> {
    /// The payload itself.
    Root,
    /// A property of an object.
    Field(&'a Path<'a>, &'a str),
    /// An item of an array.
    Index(&'a Path<'a>, usize),
}

impl<'a> Path<'a> {
    /// The path of property `name` below this one.
    pub fn field(&'a self, name: &'a str) -> Path<'a> {
        Path::Field(self, name)
    }

    /// The path of item `index` below this one.
    pub fn index(&'a self, index: usize) -> Path<'a> {
        Path::Index(self, index)
    }
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Root => Ok(()),
            Path::Field(Path::Root, name) => f.write_str(name),
            Path::Field(parent, name) => write!(f, "{parent}.{name}"),
            Path::Index(parent, index) => write!(f, "{parent}[{index}]"),
        }
    }
}

/// A type whose JSON form is described by an OCPP JSON schema; implemented by generated code.
pub trait Schema {
    /// Checks a JSON value against the schema of this type, in `mode`, reporting the first
    /// violation found. `path` is where the value sits in the payload.
    ///
    /// ```
    /// use ocpp_messages::validate::{Mode, Path, Schema, ViolationKind};
    /// use ocpp_messages::v1_6::BootNotificationRequest;
    ///
    /// let value = serde_json::json!({"chargePointVendor": "ACME"});
    /// let err = BootNotificationRequest::check_json(&value, &Path::Root, Mode::Strict).unwrap_err();
    /// assert_eq!(err.kind(), ViolationKind::Occurrence);
    /// assert_eq!(err.path(), "chargePointModel");
    /// ```
    fn check_json(value: &Value, path: &Path<'_>, mode: Mode) -> Result<(), Violation>;

    /// Whether a value serde built straight from a payload also keeps the rules serde does not
    /// enforce: `maxLength`, `format: uri`, numeric bounds and `multipleOf`, `minItems` and
    /// `maxItems`, and in strict mode only listed enumeration values. The one-pass decoder
    /// ([`crate::decode::decode_payload`]) returns such a value without building a
    /// `serde_json::Value` first; anything else goes through [`Schema::check_json`].
    ///
    /// ```
    /// use ocpp_messages::validate::{Mode, Schema};
    /// use ocpp_messages::v1_6::{AuthorizeRequest, ChargePointStatus};
    ///
    /// assert!(AuthorizeRequest::new("TAG-1").conforms(Mode::Strict));
    /// // idTag is at most 20 characters
    /// assert!(!AuthorizeRequest::new("T".repeat(21)).conforms(Mode::Strict));
    /// let unknown = ChargePointStatus::from_wire("Sleeping");
    /// assert!(!unknown.conforms(Mode::Strict) && unknown.conforms(Mode::Lenient));
    /// ```
    fn conforms(&self, mode: Mode) -> bool;
}
