//! Limits applied while reading a handshake head, on both sides.

/// Caps on what a peer may make us buffer and index before its HTTP head is complete.
///
/// An untrusted peer can send an endless head one byte at a time; these caps bound the memory
/// per connection (RFC 7230 §3.2.5 lets a server answer an oversize head with an error; we use
/// `431 Request Header Fields Too Large`, RFC 6585 §5). The same caps apply to the client's
/// response parser.
///
/// ```
/// use ocpp_frame::handshake::HandshakeConfig;
///
/// let config = HandshakeConfig::default().with_max_header_bytes(8 * 1024).with_max_headers(32);
/// assert_eq!(config.max_header_bytes(), 8192);
/// assert_eq!(config.max_headers(), 32);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct HandshakeConfig {
    max_header_bytes: usize,
    max_headers: usize,
}

impl HandshakeConfig {
    /// Default cap on the head's bytes: 16 KiB, as h11 and most HTTP servers.
    pub const DEFAULT_MAX_HEADER_BYTES: usize = 16 * 1024;
    /// Default cap on the number of header fields.
    pub const DEFAULT_MAX_HEADERS: usize = 64;
    /// Largest accepted byte cap (positions inside a head are stored as `u32`).
    pub const MAX_HEADER_BYTES_LIMIT: usize = u32::MAX as usize;

    /// The defaults: 16 KiB of head, 64 header fields.
    pub const fn new() -> Self {
        HandshakeConfig {
            max_header_bytes: Self::DEFAULT_MAX_HEADER_BYTES,
            max_headers: Self::DEFAULT_MAX_HEADERS,
        }
    }

    /// Sets the cap on the head's bytes, counting everything from the first byte up to and
    /// including the blank line that ends it (RFC 7230 §3). Values above
    /// [`Self::MAX_HEADER_BYTES_LIMIT`] are clamped to it.
    pub const fn with_max_header_bytes(mut self, bytes: usize) -> Self {
        self.max_header_bytes = if bytes > Self::MAX_HEADER_BYTES_LIMIT {
            Self::MAX_HEADER_BYTES_LIMIT
        } else {
            bytes
        };
        self
    }

    /// Sets the cap on the number of header fields (RFC 7230 §3.2), repeated names counting once
    /// per line.
    pub const fn with_max_headers(mut self, headers: usize) -> Self {
        self.max_headers = headers;
        self
    }

    /// The cap on the head's bytes.
    pub const fn max_header_bytes(&self) -> usize {
        self.max_header_bytes
    }

    /// The cap on the number of header fields.
    pub const fn max_headers(&self) -> usize {
        self.max_headers
    }
}

impl Default for HandshakeConfig {
    fn default() -> Self {
        Self::new()
    }
}
