//! The one-pass decoder: serde builds the typed value straight from the payload text, with no
//! `serde_json::Value` in between, and [`Schema::conforms`] checks what serde does not. It
//! only ever accepts: whatever it cannot vouch for (a `null`, a property the schema does not
//! know in strict mode, an array where an object belongs, a duplicate property, a value out of
//! bounds) makes it give up, and the caller decodes the payload the checked way
//! ([`Schema::check_json`]), which finds the precise violation. So the answer is the same on
//! both paths, and only a payload that breaks the schema (or carries a `null`) pays twice.
//!
//! Two things serde's derived `Deserialize` would let through are caught by [`Shape`], a
//! wrapper around the JSON deserializer: a struct written as a JSON array (serde accepts both
//! forms; the schemas only objects), and properties the struct does not know (serde skips
//! them through `deserialize_ignored_any`, which `Shape` notes).

use core::cell::Cell;
use core::fmt;

use serde::de::{
    DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};

use crate::validate::{Mode, Schema};

/// `T` built from `payload` in one pass, if it certainly conforms to `T`'s schema in `mode`;
/// `None` sends the caller to the checked path.
pub(crate) fn decode<T: Schema + DeserializeOwned>(payload: &str, mode: Mode) -> Option<T> {
    // Strict mode makes `null` a type violation where serde reads an absent optional
    // property; lenient mode reads it as absent, but a `null` where a value is required must
    // still be reported. Payloads with `null` (anywhere, even inside a string) take the
    // checked path: they are rare, and the test is a fast substring search.
    if payload.contains("null") {
        return None;
    }
    let unknown = Cell::new(false);
    let mut json = serde_json::Deserializer::from_str(payload);
    let value = T::deserialize(Shape {
        inner: &mut json,
        unknown: &unknown,
    })
    .ok()?;
    json.end().ok()?;
    if mode == Mode::Strict && unknown.get() {
        return None;
    }
    value.conforms(mode).then_some(value)
}

/// A deserializer that hands every struct a JSON object only, and notes skipped properties.
struct Shape<'u, D> {
    inner: D,
    unknown: &'u Cell<bool>,
}

/// Wraps what the inner deserializer hands back (visitors, seeds, accessors) so that nested
/// values pass through [`Shape`] too.
struct Wrap<'u, T> {
    inner: T,
    unknown: &'u Cell<bool>,
}

impl<'u, T> Wrap<'u, T> {
    fn new(inner: T, unknown: &'u Cell<bool>) -> Self {
        Wrap { inner, unknown }
    }
}

macro_rules! forward {
    ($($method:ident),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
                self.inner.$method(Wrap::new(visitor, self.unknown))
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Shape<'_, D> {
    type Error = D::Error;

    forward!(
        deserialize_any,
        deserialize_bool,
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_i128,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32,
        deserialize_u64,
        deserialize_u128,
        deserialize_f32,
        deserialize_f64,
        deserialize_char,
        deserialize_str,
        deserialize_string,
        deserialize_bytes,
        deserialize_byte_buf,
        deserialize_option,
        deserialize_unit,
        deserialize_seq,
        deserialize_map,
        deserialize_identifier,
    );

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.inner
            .deserialize_unit_struct(name, Wrap::new(visitor, self.unknown))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.inner
            .deserialize_newtype_struct(name, Wrap::new(visitor, self.unknown))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.inner
            .deserialize_tuple(len, Wrap::new(visitor, self.unknown))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.inner
            .deserialize_tuple_struct(name, len, Wrap::new(visitor, self.unknown))
    }

    /// A struct is read as a map: a JSON array is an error here, where serde would take it.
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.inner.deserialize_map(Wrap::new(visitor, self.unknown))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.inner
            .deserialize_enum(name, variants, Wrap::new(visitor, self.unknown))
    }

    /// Serde skips a property the struct does not know: note it.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.unknown.set(true);
        self.inner.deserialize_ignored_any(visitor)
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

macro_rules! visit {
    ($($method:ident: $ty:ty),* $(,)?) => {
        $(
            fn $method<E: serde::de::Error>(self, v: $ty) -> Result<Self::Value, E> {
                self.inner.$method(v)
            }
        )*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    visit!(
        visit_bool: bool,
        visit_i8: i8,
        visit_i16: i16,
        visit_i32: i32,
        visit_i64: i64,
        visit_i128: i128,
        visit_u8: u8,
        visit_u16: u16,
        visit_u32: u32,
        visit_u64: u64,
        visit_u128: u128,
        visit_f32: f32,
        visit_f64: f64,
        visit_char: char,
        visit_str: &str,
        visit_borrowed_str: &'de str,
        visit_string: alloc::string::String,
        visit_bytes: &[u8],
        visit_borrowed_bytes: &'de [u8],
        visit_byte_buf: alloc::vec::Vec<u8>,
    );

    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        self.inner.visit_none()
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        self.inner.visit_some(Shape {
            inner: deserializer,
            unknown: self.unknown,
        })
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        self.inner.visit_newtype_struct(Shape {
            inner: deserializer,
            unknown: self.unknown,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_seq(Wrap::new(seq, self.unknown))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_map(Wrap::new(map, self.unknown))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_enum(Wrap::new(data, self.unknown))
    }
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Wrap<'_, S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        self.inner.deserialize(Shape {
            inner: deserializer,
            unknown: self.unknown,
        })
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Wrap<'_, A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Self::Error> {
        self.inner.next_element_seed(Wrap::new(seed, self.unknown))
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Wrap<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        self.inner.next_key_seed(Wrap::new(seed, self.unknown))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Self::Error> {
        self.inner.next_value_seed(Wrap::new(seed, self.unknown))
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

impl<'de, 'u, A: EnumAccess<'de>> EnumAccess<'de> for Wrap<'u, A> {
    type Error = A::Error;
    type Variant = Wrap<'u, A::Variant>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Self::Variant), Self::Error> {
        let unknown = self.unknown;
        let (value, variant) = self.inner.variant_seed(Wrap::new(seed, unknown))?;
        Ok((value, Wrap::new(variant, unknown)))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Wrap<'_, A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), Self::Error> {
        self.inner.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<T::Value, Self::Error> {
        self.inner
            .newtype_variant_seed(Wrap::new(seed, self.unknown))
    }

    fn tuple_variant<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.inner
            .tuple_variant(len, Wrap::new(visitor, self.unknown))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.inner
            .struct_variant(fields, Wrap::new(visitor, self.unknown))
    }
}

#[cfg(all(test, feature = "v1_6"))]
mod tests {
    use super::*;
    use crate::decode::{decode_checked, decode_payload};
    use crate::v1_6::{AuthorizeResponse, BootNotificationResponse, MeterValuesRequest};

    /// The one-pass decoder declines `payload` for `T` in `mode`, and the checked path's
    /// answer stands (whatever it is).
    fn declined<T: Schema + DeserializeOwned + PartialEq + fmt::Debug>(payload: &str, mode: Mode) {
        assert!(decode::<T>(payload, mode).is_none(), "{payload}");
        assert_eq!(
            decode_payload::<T>(payload, mode),
            decode_checked::<T>(payload, mode)
        );
    }

    #[test]
    fn reads_a_conforming_payload_in_one_pass() {
        let text = r#"{"meterValue":[{"timestamp":"2025-01-01T00:00:00Z","sampledValue":[{"value":"1.5","measurand":"Energy.Active.Import.Register"}]}],"connectorId":1}"#;
        let one: MeterValuesRequest = decode(text, Mode::Strict).expect("one pass");
        assert_eq!(Ok(one), decode_checked(text, Mode::Strict));
    }

    #[test]
    fn an_object_written_as_an_array_is_declined() {
        // serde's derived Deserialize takes `["Accepted"]` for `{"status":"Accepted"}`.
        declined::<AuthorizeResponse>(r#"{"idTagInfo":["Accepted"]}"#, Mode::Strict);
        declined::<AuthorizeResponse>(r#"{"idTagInfo":["Accepted"]}"#, Mode::Lenient);
        declined::<AuthorizeResponse>(r#"["Accepted"]"#, Mode::Lenient);
    }

    #[test]
    fn unknown_properties_are_declined_in_strict_mode_only() {
        let text = r#"{"idTagInfo":{"status":"Accepted","extra":{"deep":[1,2]}}}"#;
        declined::<AuthorizeResponse>(text, Mode::Strict);
        assert!(decode::<AuthorizeResponse>(text, Mode::Lenient).is_some());
        assert_eq!(
            decode_payload::<AuthorizeResponse>(text, Mode::Lenient),
            decode_checked::<AuthorizeResponse>(text, Mode::Lenient)
        );
    }

    #[test]
    fn null_duplicates_bounds_and_enumerations_are_declined() {
        declined::<AuthorizeResponse>(
            r#"{"idTagInfo":{"status":"Accepted","parentIdTag":null}}"#,
            Mode::Strict,
        );
        declined::<AuthorizeResponse>(
            r#"{"idTagInfo":{"status":"Accepted","parentIdTag":null}}"#,
            Mode::Lenient,
        );
        declined::<AuthorizeResponse>(
            r#"{"idTagInfo":{"status":"Accepted","status":"Blocked"}}"#,
            Mode::Strict,
        );
        // parentIdTag: maxLength 20
        declined::<AuthorizeResponse>(
            r#"{"idTagInfo":{"status":"Accepted","parentIdTag":"123456789012345678901"}}"#,
            Mode::Strict,
        );
        declined::<AuthorizeResponse>(r#"{"idTagInfo":{"status":"Asleep"}}"#, Mode::Strict);
        assert!(
            decode::<AuthorizeResponse>(r#"{"idTagInfo":{"status":"Asleep"}}"#, Mode::Lenient)
                .is_some()
        );
        // interval: an integer; 1.5 is not one, nor is "2"
        let boot = r#"{"status":"Accepted","currentTime":"2025-01-01T00:00:00Z","interval":1.5}"#;
        declined::<BootNotificationResponse>(boot, Mode::Strict);
        declined::<BootNotificationResponse>(&boot.replace("1.5", "\"2\""), Mode::Strict);
        // trailing bytes after the object
        declined::<BootNotificationResponse>(&boot.replace("1.5", "2}"), Mode::Strict);
    }
}
