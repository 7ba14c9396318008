//! Complete messages as the decoder hands them out.

use bytes::Bytes;

use crate::CloseFrame;

/// Bytes that are known to be valid UTF-8: the payload of a text message or a close reason.
///
/// Cloning is cheap (a reference count); [`Utf8Bytes::as_str`] costs nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Utf8Bytes(Bytes);

impl Utf8Bytes {
    /// An empty string.
    pub const fn new() -> Self {
        Utf8Bytes(Bytes::new())
    }

    /// Wraps a static string without copying.
    pub const fn from_static(s: &'static str) -> Self {
        Utf8Bytes(Bytes::from_static(s.as_bytes()))
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        // SAFETY: every constructor of `Utf8Bytes` establishes that `self.0` is valid UTF-8:
        // `TryFrom<Bytes>` checks it with `core::str::from_utf8`, `from_static` and `From<String>`
        // start from `str`/`String`, and `from_validated` is only called by the decoder after its
        // `Utf8Validator` accepted every byte of the payload and `finish` found no unfinished
        // character (see `decoder.rs`). The bytes are immutable (`Bytes`). The decoder's property
        // tests and the `frame_decoder` fuzz target compare `as_str()` with `from_utf8` of the
        // same bytes.
        #[allow(unsafe_code)]
        unsafe {
            core::str::from_utf8_unchecked(&self.0)
        }
    }

    /// The underlying bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The underlying reference-counted bytes.
    pub fn into_bytes(self) -> Bytes {
        self.0
    }

    /// The length in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the string is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Wraps bytes the decoder has validated as UTF-8 in full.
    pub(crate) fn from_validated(bytes: Bytes) -> Self {
        debug_assert!(core::str::from_utf8(&bytes).is_ok());
        Utf8Bytes(bytes)
    }
}

impl TryFrom<Bytes> for Utf8Bytes {
    type Error = core::str::Utf8Error;

    fn try_from(bytes: Bytes) -> Result<Self, Self::Error> {
        core::str::from_utf8(&bytes)?;
        Ok(Utf8Bytes(bytes))
    }
}

impl From<alloc::string::String> for Utf8Bytes {
    fn from(s: alloc::string::String) -> Self {
        Utf8Bytes(Bytes::from(s))
    }
}

impl From<&str> for Utf8Bytes {
    fn from(s: &str) -> Self {
        Utf8Bytes(Bytes::copy_from_slice(s.as_bytes()))
    }
}

impl core::ops::Deref for Utf8Bytes {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Utf8Bytes {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq<str> for Utf8Bytes {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Utf8Bytes {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl core::fmt::Display for Utf8Bytes {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A complete message or control frame received from the peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// A text message, reassembled from its fragments and validated as UTF-8.
    Text(Utf8Bytes),
    /// A binary message, reassembled from its fragments.
    Binary(Bytes),
    /// A ping; answer it with a pong carrying the same payload (RFC 6455 §5.5.2).
    Ping(Bytes),
    /// A pong.
    Pong(Bytes),
    /// A close frame: `None` when it carried no status code. Answer with a close frame and stop
    /// sending (RFC 6455 §5.5.1); the decoder ignores whatever follows it.
    Close(Option<CloseFrame>),
}
