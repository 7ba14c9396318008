//! A variable of the 2.x device model: its attributes (OCPP 2.0.1 Part 2 §2.2 "VariableAttributeType")
//! and characteristics ("VariableCharacteristicsType"), and the rule that checks a value against
//! them before it is set.

use ocpp_messages::v2_0_1 as m;

use crate::Decimal;

wire_names! {
    /// The data type of a variable's values (`DataEnumType`).
    DataType {
        /// Any text, at most `maxLimit` characters when given.
        String => "string",
        /// An exact decimal number within `minLimit`..=`maxLimit`.
        Decimal => "decimal",
        /// A whole number within `minLimit`..=`maxLimit`.
        Integer => "integer",
        /// An RFC 3339 time.
        DateTime => "dateTime",
        /// `true` or `false`.
        Boolean => "boolean",
        /// One of `valuesList`.
        OptionList => "OptionList",
        /// An ordered list of members of `valuesList`, comma separated, each at most once.
        SequenceList => "SequenceList",
        /// A set of members of `valuesList`, comma separated, each at most once.
        MemberList => "MemberList",
    }
}

wire_names! {
    /// Who may read and write an attribute (`MutabilityEnumType`).
    Mutability {
        /// Read by the CSMS, never set by it.
        ReadOnly => "ReadOnly",
        /// Set by the CSMS, never read back (a password).
        WriteOnly => "WriteOnly",
        /// Read and set.
        ReadWrite => "ReadWrite",
    }
}

wire_names! {
    /// Which value of a variable (`AttributeEnumType`).
    AttributeType {
        /// The value in force.
        Actual => "Actual",
        /// The value aimed at.
        Target => "Target",
        /// The lowest value that may be set.
        MinSet => "MinSet",
        /// The highest value that may be set.
        MaxSet => "MaxSet",
    }
}

impl DataType {
    /// The 2.0.1 wire type.
    pub fn to_v2_0_1(self) -> m::DataEnum {
        match self {
            DataType::String => m::DataEnum::String,
            DataType::Decimal => m::DataEnum::Decimal,
            DataType::Integer => m::DataEnum::Integer,
            DataType::DateTime => m::DataEnum::DateTime,
            DataType::Boolean => m::DataEnum::Boolean,
            DataType::OptionList => m::DataEnum::OptionList,
            DataType::SequenceList => m::DataEnum::SequenceList,
            DataType::MemberList => m::DataEnum::MemberList,
        }
    }
}

impl Mutability {
    /// The 2.0.1 wire type.
    pub fn to_v2_0_1(self) -> m::MutabilityEnum {
        match self {
            Mutability::ReadOnly => m::MutabilityEnum::ReadOnly,
            Mutability::WriteOnly => m::MutabilityEnum::WriteOnly,
            Mutability::ReadWrite => m::MutabilityEnum::ReadWrite,
        }
    }
}

impl AttributeType {
    /// The 2.0.1 wire type.
    pub fn to_v2_0_1(self) -> m::AttributeEnum {
        match self {
            AttributeType::Actual => m::AttributeEnum::Actual,
            AttributeType::Target => m::AttributeEnum::Target,
            AttributeType::MinSet => m::AttributeEnum::MinSet,
            AttributeType::MaxSet => m::AttributeEnum::MaxSet,
        }
    }

    /// Of the 2.0.1 wire type (`None`: a value this version does not define).
    pub fn from_v2_0_1(attribute: &m::AttributeEnum) -> Option<AttributeType> {
        match attribute {
            m::AttributeEnum::Actual => Some(AttributeType::Actual),
            m::AttributeEnum::Target => Some(AttributeType::Target),
            m::AttributeEnum::MinSet => Some(AttributeType::MinSet),
            m::AttributeEnum::MaxSet => Some(AttributeType::MaxSet),
            _ => None,
        }
    }
}

/// Why a value cannot be set: the reason code a SetVariables result carries in its
/// `attributeStatusInfo` (at most 20 characters, OCPP 2.0.1 Part 2 Appendix "Reason codes").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ValueError {
    /// Not a value of the data type (not a number, not `true`/`false`, not in `valuesList`).
    #[error("not a valid {0} value")]
    Invalid(DataType),
    /// Below `minLimit`.
    #[error("below the least value {0}")]
    TooLow(Decimal),
    /// Above `maxLimit`.
    #[error("above the greatest value {0}")]
    TooHigh(Decimal),
    /// A string shorter than `minLimit`.
    #[error("shorter than {0} characters")]
    TooShort(Decimal),
    /// A string longer than `maxLimit`, or a list with a member twice.
    #[error("too long or repeated")]
    TooLarge,
    /// The attribute is read-only or constant.
    #[error("read-only")]
    ReadOnly,
}

impl ValueError {
    /// The reason code (`StatusInfoType.reasonCode`).
    ///
    /// ```
    /// use ocpp_model::device_model::{DataType, ValueError};
    /// assert_eq!(ValueError::Invalid(DataType::Integer).reason_code(), "InvalidValue");
    /// ```
    pub fn reason_code(&self) -> &'static str {
        match self {
            ValueError::Invalid(_) => "InvalidValue",
            ValueError::TooLow(_) => "ValueTooLow",
            ValueError::TooHigh(_) => "ValueTooHigh",
            ValueError::TooShort(_) => "TooShortElement",
            ValueError::TooLarge => "TooLargeElement",
            ValueError::ReadOnly => "ReadOnly",
        }
    }
}

/// What every value of a variable must be (`VariableCharacteristicsType`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Characteristics {
    /// The data type.
    pub data_type: DataType,
    /// The unit (`s`, `W`, `A`, `Wh`...; OCPP 2.0.1 Part 2 "UnitOfMeasureType").
    pub unit: Option<String>,
    /// The least value (numbers) or the least length (strings).
    pub min_limit: Option<Decimal>,
    /// The greatest value (numbers) or the greatest length (strings).
    pub max_limit: Option<Decimal>,
    /// The allowed values of an OptionList, MemberList or SequenceList.
    pub values_list: Vec<String>,
    /// Whether the variable can be monitored (this library does not monitor: `false`).
    pub supports_monitoring: bool,
}

impl Characteristics {
    /// A variable of `data_type`, without unit, limits or list.
    pub fn new(data_type: DataType) -> Self {
        Characteristics {
            data_type,
            unit: None,
            min_limit: None,
            max_limit: None,
            values_list: Vec::new(),
            supports_monitoring: false,
        }
    }

    /// With a unit.
    #[must_use]
    pub fn unit(mut self, unit: &str) -> Self {
        self.unit = Some(unit.to_owned());
        self
    }

    /// With a least value (a least length for strings).
    #[must_use]
    pub fn min(mut self, min: i64) -> Self {
        self.min_limit = Some(Decimal::from(min));
        self
    }

    /// With a greatest value (a greatest length for strings).
    #[must_use]
    pub fn max(mut self, max: i64) -> Self {
        self.max_limit = Some(Decimal::from(max));
        self
    }

    /// With the allowed values of a list type.
    #[must_use]
    pub fn values<'a>(mut self, values: impl IntoIterator<Item = &'a str>) -> Self {
        self.values_list = values.into_iter().map(str::to_owned).collect();
        self
    }

    /// Checks `value` against the data type, the limits and the list (OCPP 2.0.1 B05: a value
    /// that does not fit is `Rejected`).
    ///
    /// ```
    /// use ocpp_model::device_model::{Characteristics, DataType, ValueError};
    /// let interval = Characteristics::new(DataType::Integer).unit("s").min(0);
    /// assert!(interval.check("300").is_ok());
    /// assert_eq!(interval.check("-1").unwrap_err().reason_code(), "ValueTooLow");
    /// assert!(interval.check("3.5").is_err());
    /// ```
    ///
    /// # Errors
    /// [`ValueError`]: why the value does not fit.
    pub fn check(&self, value: &str) -> Result<(), ValueError> {
        let invalid = ValueError::Invalid(self.data_type);
        match self.data_type {
            DataType::String => {
                let length = Decimal::from(value.chars().count() as i64);
                match (self.min_limit, self.max_limit) {
                    (Some(min), _) if length < min => Err(ValueError::TooShort(min)),
                    (_, Some(max)) if length > max => Err(ValueError::TooLarge),
                    _ => Ok(()),
                }
            }
            DataType::Integer => {
                let number: i64 = value.trim().parse().map_err(|_| invalid)?;
                self.in_limits(Decimal::from(number))
            }
            DataType::Decimal => {
                let number: Decimal = value.trim().parse().map_err(|_| invalid)?;
                self.in_limits(number)
            }
            DataType::DateTime => ocpp_messages::DateTime::parse(value)
                .map(|_| ())
                .map_err(|_| invalid),
            DataType::Boolean => match value {
                "true" | "false" => Ok(()),
                _ => Err(invalid),
            },
            DataType::OptionList => match self.listed(value) {
                true => Ok(()),
                false => Err(invalid),
            },
            DataType::SequenceList | DataType::MemberList => {
                let mut seen: Vec<&str> = Vec::new();
                for member in members(value) {
                    if !self.listed(member) {
                        return Err(invalid);
                    }
                    if seen.contains(&member) {
                        return Err(ValueError::TooLarge);
                    }
                    seen.push(member);
                }
                Ok(())
            }
        }
    }

    /// A number within the limits.
    fn in_limits(&self, number: Decimal) -> Result<(), ValueError> {
        match (self.min_limit, self.max_limit) {
            (Some(min), _) if number < min => Err(ValueError::TooLow(min)),
            (_, Some(max)) if number > max => Err(ValueError::TooHigh(max)),
            _ => Ok(()),
        }
    }

    /// Whether `value` is in the values list (an empty list allows anything).
    fn listed(&self, value: &str) -> bool {
        self.values_list.is_empty() || self.values_list.iter().any(|v| v == value)
    }

    /// The 2.0.1 wire type.
    pub fn to_v2_0_1(&self) -> m::VariableCharacteristics {
        let mut out =
            m::VariableCharacteristics::new(self.data_type.to_v2_0_1(), self.supports_monitoring);
        out.unit = self.unit.clone();
        out.min_limit = self.min_limit;
        out.max_limit = self.max_limit;
        if !self.values_list.is_empty() {
            out.values_list = Some(self.values_list.join(","));
        }
        out
    }
}

/// The members of a comma-separated list (`""`: none), trimmed.
pub(crate) fn members(value: &str) -> impl Iterator<Item = &str> {
    value
        .split(',')
        .map(str::trim)
        .filter(|member| !member.is_empty())
}

/// One attribute of a variable (`VariableAttributeType`): its value and who may change it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attribute {
    /// Which attribute.
    pub kind: AttributeType,
    /// Its value (`None`: not known, e.g. a clock the application reads itself).
    pub value: Option<String>,
    /// Who may read and write it.
    pub mutability: Mutability,
    /// Whether its value survives a reboot (kept in the station's state directory when set by
    /// the CSMS).
    pub persistent: bool,
    /// Whether it never changes.
    pub constant: bool,
}

impl Attribute {
    /// An attribute of `kind`, `mutability`, with `value`, persistent and not constant.
    pub fn new(kind: AttributeType, mutability: Mutability, value: Option<&str>) -> Self {
        Attribute {
            kind,
            value: value.map(str::to_owned),
            mutability,
            persistent: true,
            constant: false,
        }
    }

    /// The 2.0.1 wire type, for a report (a WriteOnly value is never reported).
    pub fn to_v2_0_1(&self) -> m::VariableAttribute {
        m::VariableAttribute {
            r#type: Some(self.kind.to_v2_0_1()),
            value: match self.mutability {
                Mutability::WriteOnly => None,
                _ => self.value.clone(),
            },
            mutability: Some(self.mutability.to_v2_0_1()),
            persistent: Some(self.persistent),
            constant: Some(self.constant),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_and_decimals_respect_limits() {
        let c = Characteristics::new(DataType::Integer).min(1).max(10);
        assert_eq!(c.check("1"), Ok(()));
        assert_eq!(c.check("10"), Ok(()));
        assert_eq!(c.check("0"), Err(ValueError::TooLow(Decimal::from(1))));
        assert_eq!(c.check("11"), Err(ValueError::TooHigh(Decimal::from(10))));
        assert_eq!(c.check("x"), Err(ValueError::Invalid(DataType::Integer)));
        assert_eq!(c.check("1.0"), Err(ValueError::Invalid(DataType::Integer)));
        let d = Characteristics::new(DataType::Decimal).min(0).max(1);
        assert_eq!(d.check("0.25"), Ok(()));
        assert!(d.check("1.01").is_err());
    }

    #[test]
    fn booleans_are_lowercase_words() {
        let c = Characteristics::new(DataType::Boolean);
        assert_eq!(c.check("true"), Ok(()));
        assert_eq!(c.check("false"), Ok(()));
        assert!(c.check("True").is_err());
        assert!(c.check("1").is_err());
    }

    #[test]
    fn lists_take_listed_members_once() {
        let option = Characteristics::new(DataType::OptionList).values(["LRU", "FIFO"]);
        assert_eq!(option.check("LRU"), Ok(()));
        assert!(option.check("LRU,FIFO").is_err());
        let member = Characteristics::new(DataType::MemberList).values(["A", "B", "C"]);
        assert_eq!(member.check("A,C"), Ok(()));
        assert_eq!(member.check(""), Ok(()));
        assert_eq!(member.check("A,A"), Err(ValueError::TooLarge));
        assert!(member.check("A,D").is_err());
        let sequence = Characteristics::new(DataType::SequenceList).values(["0", "1"]);
        assert_eq!(sequence.check("1,0"), Ok(()));
    }

    #[test]
    fn strings_and_times() {
        let s = Characteristics::new(DataType::String).min(2).max(3);
        assert_eq!(s.check("abc"), Ok(()));
        assert_eq!(s.check("a"), Err(ValueError::TooShort(Decimal::from(2))));
        assert_eq!(s.check("abcd"), Err(ValueError::TooLarge));
        let t = Characteristics::new(DataType::DateTime);
        assert_eq!(t.check("2025-01-02T03:04:05Z"), Ok(()));
        assert!(t.check("yesterday").is_err());
    }
}
