//! `MessageId`: the string that pairs a CALL with its CALLRESULT or CALLERROR.

use alloc::borrow::Cow;
use alloc::boxed::Box;
use alloc::string::String;
use core::borrow::Borrow;
use core::fmt;
use core::ops::Deref;
use core::str::FromStr;

/// A message id ("UniqueId" in OCPP-J 1.6): a string of at most 36 characters
/// (OCPP-J 1.6 §4.1.4, OCPP 2.0.1 Part 4 §4.1.4, OCPP 2.1 Part 4 §4.1.4).
///
/// Borrowed from the input when parsed (`MessageId<'a>`), owned when built by the application
/// (`MessageId<'static>`). The length limit counts characters (Unicode scalar values), not
/// bytes. Uniqueness is the sender's business: the application picks how ids are generated,
/// [`MessageId::from_counter`] is a cheap way that suits a per-connection counter.
///
/// ```
/// use ocpp_messages::envelope::MessageId;
///
/// let id = MessageId::new("19223201")?;
/// assert_eq!(id.as_str(), "19223201");
/// assert!(MessageId::new("x".repeat(37)).is_err());
/// assert_eq!(MessageId::from_counter(42).as_str(), "42");
/// # Ok::<(), ocpp_messages::envelope::MessageIdError>(())
/// ```
///
/// An owned id of at most [`MessageId::INLINE_BYTES`] bytes (every counter id, and most ids
/// peers send) is kept inside the value: building, cloning and owning it allocate nothing.
#[derive(Clone)]
pub struct MessageId<'a>(Repr<'a>);

/// How the text is held: borrowed from the input, inline, or boxed.
#[derive(Clone)]
enum Repr<'a> {
    Borrowed(&'a str),
    Inline {
        len: u8,
        bytes: [u8; MessageId::INLINE_BYTES],
    },
    Boxed(Box<str>),
}

impl Repr<'static> {
    /// The owned form of `text`: inline when it fits.
    fn owned(text: &str) -> Self {
        let mut bytes = [0; MessageId::INLINE_BYTES];
        match (bytes.get_mut(..text.len()), u8::try_from(text.len())) {
            (Some(prefix), Ok(len)) => {
                prefix.copy_from_slice(text.as_bytes());
                Repr::Inline { len, bytes }
            }
            _ => Repr::Boxed(Box::from(text)),
        }
    }

    /// The owned form of `text`, reusing its allocation when it does not fit inline.
    fn from_string(text: String) -> Self {
        if text.len() <= MessageId::INLINE_BYTES {
            Repr::owned(&text)
        } else {
            Repr::Boxed(text.into_boxed_str())
        }
    }
}

/// Why an id is not a valid [`MessageId`].
///
/// [`MessageId::new`] can only report [`MessageIdError::TooLong`]; the parser also reports a
/// missing id and one that is not a JSON string (an integer id, say, which must never be echoed
/// back as if it were valid).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum MessageIdError {
    /// The frame has no second element.
    #[error("the message id is missing")]
    Missing,
    /// The second element is not a JSON string (e.g. an integer).
    #[error("the message id is not a string")]
    NotAString,
    /// The id is longer than [`MessageId::MAX_CHARS`] characters.
    #[error("the message id is longer than 36 characters")]
    TooLong,
}

impl<'a> MessageId<'a> {
    /// The longest id allowed, in characters.
    pub const MAX_CHARS: usize = 36;

    /// The longest owned id (in bytes) kept inline, without an allocation: 22, so that a
    /// `MessageId` stays 24 bytes, as large as a `String`.
    pub const INLINE_BYTES: usize = 22;

    /// The id `"-1"` that answers a frame whose own id could not be read (OCPP 2.0.1 Part 4
    /// §4.2.3; this crate uses it on every version).
    pub const UNREADABLE: MessageId<'static> = MessageId(Repr::Borrowed("-1"));

    /// Checks and wraps an id.
    ///
    /// # Errors
    /// [`MessageIdError::TooLong`] if `id` has more than 36 characters. Any string up to that
    /// length is accepted, including the empty string: the specifications set no other rule.
    pub fn new(id: impl Into<Cow<'a, str>>) -> Result<MessageId<'a>, MessageIdError> {
        let id = id.into();
        if !is_valid(&id) {
            return Err(MessageIdError::TooLong);
        }
        Ok(MessageId(match id {
            Cow::Borrowed(text) => Repr::Borrowed(text),
            Cow::Owned(text) => Repr::from_string(text),
        }))
    }

    /// An id made of the decimal digits of `counter` (at most 20 characters, so always valid).
    #[must_use]
    pub fn from_counter(counter: u64) -> MessageId<'static> {
        // At most 20 digits: always inline.
        MessageId(Repr::owned(itoa::Buffer::new().format(counter)))
    }

    /// The id as text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Borrowed(text) => text,
            // Whole bytes of a `str` (copied by `Repr::owned`): always UTF-8.
            Repr::Inline { len, bytes } => bytes
                .get(..usize::from(*len))
                .and_then(|text| core::str::from_utf8(text).ok())
                .unwrap_or_default(),
            Repr::Boxed(text) => text,
        }
    }

    /// Heap bytes this id holds (none when borrowed or inline).
    #[must_use]
    pub fn heap_bytes(&self) -> usize {
        match &self.0 {
            Repr::Boxed(text) => text.len(),
            Repr::Borrowed(_) | Repr::Inline { .. } => 0,
        }
    }

    /// Whether this is the `"-1"` placeholder of [`MessageId::UNREADABLE`].
    #[must_use]
    pub fn is_unreadable_placeholder(&self) -> bool {
        self.as_str() == "-1"
    }

    /// A copy that owns its text, independent of the input buffer.
    #[must_use]
    pub fn into_owned(self) -> MessageId<'static> {
        MessageId(match self.0 {
            Repr::Borrowed(text) => Repr::owned(text),
            Repr::Inline { len, bytes } => Repr::Inline { len, bytes },
            Repr::Boxed(text) => Repr::Boxed(text),
        })
    }

    /// A cheap borrowed view of this id.
    #[must_use]
    pub fn as_borrowed(&self) -> MessageId<'_> {
        MessageId(Repr::Borrowed(self.as_str()))
    }

    /// The id as a `Cow`, borrowed when it was borrowed.
    #[must_use]
    pub fn into_inner(self) -> Cow<'a, str> {
        match self.0 {
            Repr::Borrowed(text) => Cow::Borrowed(text),
            Repr::Inline { .. } => Cow::Owned(String::from(self.as_str())),
            Repr::Boxed(text) => Cow::Owned(String::from(text)),
        }
    }
}

/// Whether `id` is at most 36 characters; cheap for the common ASCII case.
pub(crate) fn is_valid(id: &str) -> bool {
    id.len() <= MessageId::MAX_CHARS || id.chars().nth(MessageId::MAX_CHARS).is_none()
}

impl fmt::Display for MessageId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for MessageId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("MessageId").field(&self.as_str()).finish()
    }
}

// Compared, ordered and hashed as the text (as `Borrow<str>` requires), however it is held.
impl PartialEq for MessageId<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for MessageId<'_> {}

impl PartialOrd for MessageId<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for MessageId<'_> {
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl core::hash::Hash for MessageId<'_> {
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl Deref for MessageId<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for MessageId<'_> {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for MessageId<'_> {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq<str> for MessageId<'_> {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for MessageId<'_> {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl<'a> TryFrom<&'a str> for MessageId<'a> {
    type Error = MessageIdError;

    fn try_from(id: &'a str) -> Result<Self, Self::Error> {
        MessageId::new(id)
    }
}

impl TryFrom<String> for MessageId<'static> {
    type Error = MessageIdError;

    fn try_from(id: String) -> Result<Self, Self::Error> {
        MessageId::new(id)
    }
}

impl FromStr for MessageId<'static> {
    type Err = MessageIdError;

    fn from_str(id: &str) -> Result<Self, Self::Err> {
        if !is_valid(id) {
            return Err(MessageIdError::TooLong);
        }
        Ok(MessageId(Repr::owned(id)))
    }
}

impl From<u64> for MessageId<'static> {
    /// Same as [`MessageId::from_counter`].
    fn from(counter: u64) -> Self {
        MessageId::from_counter(counter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn length_counts_characters() {
        assert!(MessageId::new("a".repeat(36)).is_ok());
        assert_eq!(MessageId::new("a".repeat(37)), Err(MessageIdError::TooLong));
        // 36 two-byte characters: 72 bytes but 36 characters.
        assert!(MessageId::new("é".repeat(36)).is_ok());
        assert!(MessageId::new("é".repeat(37)).is_err());
        assert!(MessageId::new("").is_ok());
    }

    #[test]
    fn counter_ids_are_valid() {
        assert_eq!(
            MessageId::from_counter(u64::MAX).as_str(),
            u64::MAX.to_string()
        );
        assert_eq!(MessageId::from(7).as_str(), "7");
    }

    #[test]
    fn owned_ids_up_to_inline_bytes_take_no_heap() {
        assert_eq!(core::mem::size_of::<MessageId<'_>>(), 24);
        assert_eq!(MessageId::from_counter(u64::MAX).heap_bytes(), 0);
        let short = "a".repeat(MessageId::INLINE_BYTES);
        let long = "a".repeat(MessageId::INLINE_BYTES + 1);
        for (text, heap) in [(&short, 0), (&long, long.len())] {
            let built = MessageId::new(text.clone()).unwrap();
            let parsed: MessageId<'static> = text.parse().unwrap();
            let owned = MessageId::new(text.as_str()).unwrap().into_owned();
            for id in [&built, &parsed, &owned, &built.clone()] {
                assert_eq!(id.as_str(), text);
                assert_eq!(id.heap_bytes(), heap);
            }
        }
        // Borrowed ids hold nothing either; the forms compare, order and hash as their text.
        let borrowed = MessageId::new(long.as_str()).unwrap();
        assert_eq!(borrowed.heap_bytes(), 0);
        assert_eq!(borrowed, borrowed.clone().into_owned());
        assert!(MessageId::from_counter(1) < MessageId::new("2").unwrap());
        let mut set = alloc::collections::BTreeSet::new();
        set.insert(MessageId::from_counter(12));
        assert!(set.contains("12"));
        // Multi-byte characters that fit in the inline bytes stay whole.
        let accents = "é".repeat(MessageId::INLINE_BYTES / 2);
        assert_eq!(MessageId::new(accents.clone()).unwrap().as_str(), accents);
        assert_eq!(
            alloc::format!("{:?}", MessageId::from_counter(5)),
            "MessageId(\"5\")"
        );
        assert_eq!(
            MessageId::from_counter(9).into_inner(),
            Cow::<str>::Owned("9".into())
        );
    }

    #[test]
    fn placeholder() {
        assert!(MessageId::UNREADABLE.is_unreadable_placeholder());
        assert_eq!(MessageId::UNREADABLE, "-1");
        let id: MessageId<'static> = "abc".parse().unwrap();
        assert_eq!(id.as_borrowed().into_owned(), id);
    }
}
