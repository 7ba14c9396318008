//! `MessageId`: the string that pairs a CALL with its CALLRESULT or CALLERROR.

use alloc::borrow::Cow;
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
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MessageId<'a>(Cow<'a, str>);

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

    /// The id `"-1"` that answers a frame whose own id could not be read (OCPP 2.0.1 Part 4
    /// §4.2.3; this crate uses it on every version).
    pub const UNREADABLE: MessageId<'static> = MessageId(Cow::Borrowed("-1"));

    /// Checks and wraps an id.
    ///
    /// # Errors
    /// [`MessageIdError::TooLong`] if `id` has more than 36 characters. Any string up to that
    /// length is accepted, including the empty string: the specifications set no other rule.
    pub fn new(id: impl Into<Cow<'a, str>>) -> Result<MessageId<'a>, MessageIdError> {
        let id = id.into();
        if is_valid(&id) {
            Ok(MessageId(id))
        } else {
            Err(MessageIdError::TooLong)
        }
    }

    /// An id made of the decimal digits of `counter` (at most 20 characters, so always valid).
    #[must_use]
    pub fn from_counter(counter: u64) -> MessageId<'static> {
        MessageId(Cow::Owned(String::from(
            itoa::Buffer::new().format(counter),
        )))
    }

    /// The id as text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this is the `"-1"` placeholder of [`MessageId::UNREADABLE`].
    #[must_use]
    pub fn is_unreadable_placeholder(&self) -> bool {
        self.as_str() == "-1"
    }

    /// A copy that owns its text, independent of the input buffer.
    #[must_use]
    pub fn into_owned(self) -> MessageId<'static> {
        MessageId(Cow::Owned(self.0.into_owned()))
    }

    /// A cheap borrowed view of this id.
    #[must_use]
    pub fn as_borrowed(&self) -> MessageId<'_> {
        MessageId(Cow::Borrowed(&self.0))
    }

    /// The id as a `Cow`, borrowed when it was borrowed.
    #[must_use]
    pub fn into_inner(self) -> Cow<'a, str> {
        self.0
    }
}

/// Whether `id` is at most 36 characters; cheap for the common ASCII case.
pub(crate) fn is_valid(id: &str) -> bool {
    id.len() <= MessageId::MAX_CHARS || id.chars().nth(MessageId::MAX_CHARS).is_none()
}

impl fmt::Display for MessageId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Deref for MessageId<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for MessageId<'_> {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for MessageId<'_> {
    fn borrow(&self) -> &str {
        &self.0
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
        MessageId::new(String::from(id))
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
    fn placeholder() {
        assert!(MessageId::UNREADABLE.is_unreadable_placeholder());
        assert_eq!(MessageId::UNREADABLE, "-1");
        let id: MessageId<'static> = "abc".parse().unwrap();
        assert_eq!(id.as_borrowed().into_owned(), id);
    }
}
