//! The code every generated enumeration shares: wire strings, `FromStr`, `Display`, serde and
//! the schema check, written once as a macro so the generated files stay short.

use core::fmt;
use core::marker::PhantomData;

/// The error of `FromStr` on a generated enumeration: the string is not one of its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not a value of this enumeration")]
pub struct UnknownValue;

/// Deserializes any string into `T` with `from_wire` (borrowing when the input allows).
pub(crate) fn deserialize<'de, D, T>(
    deserializer: D,
    from_wire: fn(&str) -> T,
) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
{
    struct Visitor<T>(fn(&str) -> T, PhantomData<T>);
    impl<T> serde::de::Visitor<'_> for Visitor<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string")
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<T, E> {
            Ok((self.0)(v))
        }
    }
    deserializer.deserialize_str(Visitor(from_wire, PhantomData))
}

/// Implements the wire behaviour of a generated enumeration with an `Unrecognized(String)`
/// variant: `wire_enum!(Name { Variant => "Wire", ... });`.
macro_rules! wire_enum {
    ($name:ident { $($variant:ident => $wire:literal),+ $(,)? }) => {
        impl $name {
            /// Every value the schema lists, as on the wire.
            pub const VALUES: &'static [&'static str] = &[$($wire),+];

            /// The value as on the wire.
            pub fn as_str(&self) -> &str {
                match self {
                    $(Self::$variant => $wire,)+
                    Self::Unrecognized(other) => other.as_str(),
                }
            }

            /// The variant for a wire value; a value the schema does not list becomes
            /// `Unrecognized`.
            pub fn from_wire(value: &str) -> Self {
                match value {
                    $($wire => Self::$variant,)+
                    other => Self::Unrecognized(alloc::string::String::from(other)),
                }
            }

            /// False for an `Unrecognized` value.
            pub fn is_recognized(&self) -> bool {
                !matches!(self, Self::Unrecognized(_))
            }
        }

        impl core::str::FromStr for $name {
            type Err = $crate::wire_enum::UnknownValue;

            /// Strict: only the values the schema lists.
            fn from_str(value: &str) -> Result<Self, Self::Err> {
                match value {
                    $($wire => Ok(Self::$variant),)+
                    _ => Err($crate::wire_enum::UnknownValue),
                }
            }
        }

        impl core::fmt::Display for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                $crate::wire_enum::deserialize(deserializer, Self::from_wire)
            }
        }

        #[cfg(feature = "proptest")]
        impl proptest::arbitrary::Arbitrary for $name {
            type Parameters = ();
            type Strategy = proptest::strategy::BoxedStrategy<Self>;

            fn arbitrary_with((): ()) -> Self::Strategy {
                use proptest::strategy::Strategy as _;
                proptest::sample::select(Self::VALUES).prop_map(Self::from_wire).boxed()
            }
        }

        impl $crate::validate::Schema for $name {
            fn check_json(
                value: &serde_json::Value,
                path: &$crate::validate::Path<'_>,
                mode: $crate::validate::Mode,
            ) -> Result<(), $crate::validate::Violation> {
                $crate::validate::check::enum_value(value, path, mode, Self::VALUES)
            }

            fn conforms(&self, mode: $crate::validate::Mode) -> bool {
                mode == $crate::validate::Mode::Lenient || self.is_recognized()
            }
        }
    };
}

pub(crate) use wire_enum;
