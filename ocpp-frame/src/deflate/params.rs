//! What an endpoint wants of permessage-deflate ([`DeflateConfig`]) and what its handshake agreed
//! ([`DeflateParams`]) (RFC 7692 §7.1).

use crate::Role;

/// The smallest LZ77 window a `*_max_window_bits` parameter may name (RFC 7692 §7.1.2).
pub const MIN_WINDOW_BITS: u8 = 8;
/// The largest LZ77 window, and the one used when a parameter is absent (RFC 7692 §7.1.2).
pub const MAX_WINDOW_BITS: u8 = 15;

/// What this endpoint wants of permessage-deflate: the negotiation's input, on both sides.
///
/// The parameter names are RFC 7692's, so `server_*` is about what the server sends and
/// `client_*` about what the client sends, whichever side uses the config.
///
/// Memory (measured by `tests/deflate_memory.rs`, see `BENCHMARKS.md` at the repository root): with context takeover a
/// connection keeps its compressor (380,176 bytes at 15 window bits, 251,152 at 9) and its
/// decompressor (47,704 bytes) between messages; with `*_no_context_takeover` each is allocated
/// for one message and dropped after it, so an idle connection holds nothing. The default asks
/// for no context takeover both ways: a CSMS holds tens of thousands of mostly idle connections.
///
/// ```
/// use ocpp_frame::deflate::DeflateConfig;
/// let config = DeflateConfig::default()
///     .server_no_context_takeover(false) // keep the server's compressor between messages
///     .server_max_window_bits(10)        // ... with a 1 KiB window
///     .min_compress_size(256);
/// assert_eq!(config.get_server_max_window_bits(), 10);
/// assert_eq!(
///     config.offer(),
///     "permessage-deflate; client_no_context_takeover; server_max_window_bits=10; \
///      client_max_window_bits"
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct DeflateConfig {
    pub(crate) server_no_context_takeover: bool,
    pub(crate) client_no_context_takeover: bool,
    pub(crate) server_max_window_bits: u8,
    pub(crate) client_max_window_bits: u8,
    pub(crate) offer_client_max_window_bits: bool,
    pub(crate) level: u8,
    pub(crate) min_compress_size: usize,
}

impl Default for DeflateConfig {
    /// No context takeover both ways, 15-bit windows, compression level 6 (zlib's default),
    /// messages under 128 bytes sent uncompressed, `client_max_window_bits` offered.
    fn default() -> Self {
        DeflateConfig {
            server_no_context_takeover: true,
            client_no_context_takeover: true,
            server_max_window_bits: MAX_WINDOW_BITS,
            client_max_window_bits: MAX_WINDOW_BITS,
            offer_client_max_window_bits: true,
            level: 6,
            min_compress_size: 128,
        }
    }
}

fn clamp_bits(bits: u8) -> u8 {
    bits.clamp(MIN_WINDOW_BITS, MAX_WINDOW_BITS)
}

impl DeflateConfig {
    /// Whether the server should reset its compression context after each message (RFC 7692
    /// §7.1.1.1). A server with this set always asks for it; a client with it set offers it.
    pub fn server_no_context_takeover(mut self, on: bool) -> Self {
        self.server_no_context_takeover = on;
        self
    }

    /// Whether the client should reset its compression context after each message (RFC 7692
    /// §7.1.1.2). A server with this set includes it in its answer (allowed even when the
    /// client did not offer it); a client with it set offers it.
    pub fn client_no_context_takeover(mut self, on: bool) -> Self {
        self.client_no_context_takeover = on;
        self
    }

    /// The largest LZ77 window (in bits, 8 to 15, clamped) the server may compress with
    /// (RFC 7692 §7.1.2.1): a server's own limit, a client's request.
    ///
    /// zlib cannot compress raw deflate with an 8-bit window; when 8 is agreed for our own
    /// compressor it uses 9 (as other implementations do) and our decompressor always accepts 9.
    pub fn server_max_window_bits(mut self, bits: u8) -> Self {
        self.server_max_window_bits = clamp_bits(bits);
        self
    }

    /// The largest LZ77 window (in bits, 8 to 15, clamped) the client may compress with
    /// (RFC 7692 §7.1.2.2): a client's own limit, a server's request. A server can only ask for
    /// it when the client's offer has `client_max_window_bits`; otherwise the client may use 15.
    pub fn client_max_window_bits(mut self, bits: u8) -> Self {
        self.client_max_window_bits = clamp_bits(bits);
        self
    }

    /// Whether a client's offer includes `client_max_window_bits` (default: yes), which lets the
    /// server limit the client's window. Without it, a server's answer naming the parameter is
    /// refused ([`NegotiationError::NotOffered`](crate::deflate::NegotiationError::NotOffered)).
    pub fn offer_client_max_window_bits(mut self, on: bool) -> Self {
        self.offer_client_max_window_bits = on;
        self
    }

    /// The zlib compression level, 0 (store) to 9 (best), clamped; default 6.
    pub fn compression_level(mut self, level: u8) -> Self {
        self.level = level.min(9);
        self
    }

    /// Messages shorter than this are sent uncompressed (RSV1 clear, which RFC 7692 §6 allows
    /// per message): tiny messages do not shrink. 0 compresses every data message.
    pub fn min_compress_size(mut self, bytes: usize) -> Self {
        self.min_compress_size = bytes;
        self
    }

    /// See [`DeflateConfig::server_no_context_takeover`].
    pub fn get_server_no_context_takeover(&self) -> bool {
        self.server_no_context_takeover
    }

    /// See [`DeflateConfig::client_no_context_takeover`].
    pub fn get_client_no_context_takeover(&self) -> bool {
        self.client_no_context_takeover
    }

    /// See [`DeflateConfig::server_max_window_bits`].
    pub fn get_server_max_window_bits(&self) -> u8 {
        self.server_max_window_bits
    }

    /// See [`DeflateConfig::client_max_window_bits`].
    pub fn get_client_max_window_bits(&self) -> u8 {
        self.client_max_window_bits
    }

    /// See [`DeflateConfig::offer_client_max_window_bits`].
    pub fn get_offer_client_max_window_bits(&self) -> bool {
        self.offer_client_max_window_bits
    }

    /// See [`DeflateConfig::compression_level`].
    pub fn get_compression_level(&self) -> u8 {
        self.level
    }

    /// See [`DeflateConfig::min_compress_size`].
    pub fn get_min_compress_size(&self) -> usize {
        self.min_compress_size
    }
}

/// The parameters a handshake agreed on (RFC 7692 §7.1), the same on both ends.
///
/// Made by [`DeflateConfig::accept_offer`] (server) or [`DeflateConfig::check_response`]
/// (client); give them to [`Decoder::set_deflate`](crate::Decoder::set_deflate) and
/// [`Compressor::new`](crate::deflate::Compressor::new).
///
/// ```
/// use ocpp_frame::deflate::DeflateParams;
/// use ocpp_frame::Role;
/// let params = DeflateParams { server_max_window_bits: 10, ..DeflateParams::default() };
/// // What the server sends is compressed with at most 10 window bits.
/// assert_eq!(params.sender(Role::Server), (false, 10));
/// assert_eq!(params.sender(Role::Client), (false, 15));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeflateParams {
    /// The server resets its compression context after each message.
    pub server_no_context_takeover: bool,
    /// The client resets its compression context after each message.
    pub client_no_context_takeover: bool,
    /// The largest window the server compresses with (8 to 15).
    pub server_max_window_bits: u8,
    /// The largest window the client compresses with (8 to 15).
    pub client_max_window_bits: u8,
}

impl Default for DeflateParams {
    /// Plain `permessage-deflate`: context takeover both ways, 15-bit windows.
    fn default() -> Self {
        DeflateParams {
            server_no_context_takeover: false,
            client_no_context_takeover: false,
            server_max_window_bits: MAX_WINDOW_BITS,
            client_max_window_bits: MAX_WINDOW_BITS,
        }
    }
}

impl DeflateParams {
    /// For the messages that `role` sends: (no context takeover, max window bits).
    pub fn sender(&self, role: Role) -> (bool, u8) {
        match role {
            Role::Server => (self.server_no_context_takeover, self.server_max_window_bits),
            Role::Client => (self.client_no_context_takeover, self.client_max_window_bits),
        }
    }
}
