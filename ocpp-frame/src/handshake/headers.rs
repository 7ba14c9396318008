//! Header fields of a parsed head, stored as positions into its raw bytes, and the RFC 7230
//! helpers both sides share: list elements (§7), tokens (§3.2.6), field values (§3.2) and the
//! writing of header lines.

use alloc::vec::Vec;

/// A byte range inside a head's raw bytes; `u32` keeps a stored field at 8 bytes per position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Span {
    start: u32,
    end: u32,
}

impl Span {
    /// The range `part` occupies inside `raw`, if `part` is a sub-slice of it. Empty parts map to
    /// an empty span wherever they point.
    pub(crate) fn within(raw: &[u8], part: &[u8]) -> Option<Span> {
        if part.is_empty() {
            return Some(Span::default());
        }
        let start = (part.as_ptr() as usize).checked_sub(raw.as_ptr() as usize)?;
        let end = start.checked_add(part.len())?;
        if end > raw.len() {
            return None;
        }
        Some(Span {
            start: u32::try_from(start).ok()?,
            end: u32::try_from(end).ok()?,
        })
    }

    /// The bytes this span covers in `raw` (empty if out of range, which cannot happen for spans
    /// made by [`Span::within`] on the same `raw`).
    pub(crate) fn bytes<'a>(&self, raw: &'a [u8]) -> &'a [u8] {
        raw.get(self.start as usize..self.end as usize)
            .unwrap_or(&[])
    }

    /// The bytes as text; spans are only made over ASCII or validated UTF-8.
    pub(crate) fn str<'a>(&self, raw: &'a [u8]) -> &'a str {
        core::str::from_utf8(self.bytes(raw)).unwrap_or("")
    }

    /// Whether the span covers no byte.
    pub(crate) fn is_empty(&self) -> bool {
        self.start >= self.end
    }
}

/// One header field line: name and value (without surrounding whitespace, as `httparse` gives it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Field {
    pub(crate) name: Span,
    pub(crate) value: Span,
}

impl Field {
    /// The fields `httparse` parsed out of `raw`, as positions into it; `None` if one is not a
    /// sub-slice of `raw` (which `httparse` never gives).
    pub(crate) fn all_within(raw: &[u8], headers: &[httparse::Header<'_>]) -> Option<Vec<Field>> {
        headers
            .iter()
            .map(|h| {
                Some(Field {
                    name: Span::within(raw, h.name.as_bytes())?,
                    value: Span::within(raw, h.value)?,
                })
            })
            .collect()
    }
}

/// A complete HTTP head: the raw bytes (start line, fields, blank line) and its fields in order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Head {
    pub(crate) raw: Vec<u8>,
    pub(crate) fields: Vec<Field>,
}

impl Head {
    /// Every field in order, as (name, value).
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &[u8])> + '_ {
        self.fields
            .iter()
            .map(move |f| (f.name.str(&self.raw), f.value.bytes(&self.raw)))
    }

    /// The values of every field called `name` (ASCII case-insensitive, RFC 7230 §3.2), in order.
    pub(crate) fn values<'a, 'n>(&'a self, name: &'n str) -> Values<'a, 'n> {
        Values {
            raw: &self.raw,
            fields: self.fields.iter(),
            name,
        }
    }

    /// The first value of the field called `name`.
    pub(crate) fn first(&self, name: &str) -> Option<&[u8]> {
        self.values(name).next()
    }

    /// How many lines carry the field called `name`.
    pub(crate) fn count(&self, name: &str) -> usize {
        self.values(name).count()
    }

    /// Whether any element of the comma-separated lists in the fields called `name` equals
    /// `token`, ASCII case-insensitively (RFC 7230 §7, §6.1, §6.7).
    pub(crate) fn has_token(&self, name: &str, token: &str) -> bool {
        self.values(name)
            .flat_map(list_elements)
            .any(|e| e.eq_ignore_ascii_case(token.as_bytes()))
    }

    /// The span of `part`, a sub-slice of the raw head.
    pub(crate) fn span_of(&self, part: &[u8]) -> Option<Span> {
        Span::within(&self.raw, part)
    }
}

/// The values of the fields with one name, in order (see [`Head::values`]).
#[derive(Debug, Clone)]
pub(crate) struct Values<'a, 'n> {
    raw: &'a [u8],
    fields: core::slice::Iter<'a, Field>,
    name: &'n str,
}

impl<'a> Iterator for Values<'a, '_> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let raw = self.raw;
        self.fields
            .by_ref()
            .find(|f| f.name.str(raw).eq_ignore_ascii_case(self.name))
            .map(|f| f.value.bytes(raw))
    }
}

/// Strips optional whitespace (SP / HTAB, RFC 7230 §3.2.3) from both ends.
pub(crate) fn trim_ows(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}

/// The non-empty elements of a `#rule` list (RFC 7230 §7): split at commas, whitespace trimmed,
/// empty elements (`a,,b`) skipped as the RFC requires of recipients.
pub(crate) fn list_elements(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(trim_ows)
        .filter(|e| !e.is_empty())
}

/// `tchar` of RFC 7230 §3.2.6.
pub(crate) fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A non-empty `token` (RFC 7230 §3.2.6): header names, methods, subprotocol names (RFC 6455 §4.1).
pub(crate) fn is_token(s: &[u8]) -> bool {
    !s.is_empty() && s.iter().all(|&b| is_tchar(b))
}

/// A `field-value` we are willing to write (RFC 7230 §3.2): no control byte but HTAB, so a value
/// can never end a line or inject another header, and no surrounding whitespace.
pub(crate) fn is_field_value(v: &[u8]) -> bool {
    v.iter().all(|&b| b == b'\t' || (b >= 0x20 && b != 0x7f)) && trim_ows(v).len() == v.len()
}

/// Whether `name` is one of `reserved` (ASCII case-insensitive).
pub(crate) fn is_one_of(name: &str, reserved: &[&str]) -> bool {
    reserved.iter().any(|r| r.eq_ignore_ascii_case(name))
}

/// Appends `name: value\r\n`.
pub(crate) fn push_field(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// Appends `n` in decimal without going through `core::fmt`.
pub(crate) fn push_decimal(out: &mut Vec<u8>, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(digits.get(at..).unwrap_or(&[]));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_trim_and_skip_empty_elements() {
        let elements: Vec<&[u8]> = list_elements(b" keep-alive ,, Upgrade\t,").collect();
        assert_eq!(elements, [&b"keep-alive"[..], b"Upgrade"]);
        assert_eq!(list_elements(b" , ,").count(), 0);
    }

    #[test]
    fn tokens_and_values() {
        assert!(is_token(b"ocpp2.0.1"));
        assert!(!is_token(b"ocpp 1.6"));
        assert!(!is_token(b""));
        assert!(is_field_value(b"Basic realm=\"x\""));
        assert!(!is_field_value(b"a\r\nInjected: 1"));
        assert!(!is_field_value(b" padded"));
    }

    #[test]
    fn decimals() {
        for n in [0usize, 7, 10, 431, 65535, usize::MAX] {
            let mut out = Vec::new();
            push_decimal(&mut out, n);
            assert_eq!(out, alloc::format!("{n}").into_bytes());
        }
    }

    #[test]
    fn spans_only_cover_sub_slices() {
        let raw = b"abcdef".to_vec();
        let other = b"xyz".to_vec();
        let span = Span::within(&raw, &raw[2..4]).unwrap();
        assert_eq!(span.bytes(&raw), b"cd");
        assert!(Span::within(&raw, &other).is_none());
        assert!(Span::within(&raw, &raw[..0]).unwrap().is_empty());
    }
}
