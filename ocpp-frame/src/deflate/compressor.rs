//! The sending half of permessage-deflate: one message at a time (RFC 7692 §7.2.1).

use alloc::boxed::Box;
use alloc::vec::Vec;

use flate2::{Compress, Compression, FlushCompress};

use super::params::{DeflateConfig, DeflateParams};
use crate::{EncodeError, Role};

/// The four bytes a sync flush ends with, removed from each message (RFC 7692 §7.2.1).
pub(crate) const TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// The smallest window zlib compresses raw deflate with: an agreed 8 is compressed with 9.
pub(crate) const ZLIB_MIN_WINDOW_BITS: u8 = 9;

/// The part of the zlib-rs compressor state that does not depend on the window (measured by
/// `tests/deflate_memory.rs`: 380,176 bytes at 15 window bits, 265,488 at 12, 251,152 at 9, i.e.
/// this plus `4 << window_bits`).
pub const COMPRESSOR_HEAP_ESTIMATE: usize = 249_104;

/// Compresses the messages one endpoint sends (RFC 7692 §7.2.1): DEFLATE with a sync flush per
/// message, the trailing `00 00 ff ff` removed.
///
/// With context takeover the zlib state (its LZ77 window) lives from the first compressed
/// message to the end of the connection; with no context takeover it is allocated for one
/// message and dropped after it, so an idle connection holds nothing (at the price of an
/// allocation and a state setup per message).
///
/// Frame the output with [`Encoder::encode_compressed`](crate::Encoder::encode_compressed), which
/// calls [`Compressor::compress`] for you.
///
/// ```
/// use ocpp_frame::deflate::{Compressor, DeflateConfig, DeflateParams};
/// use ocpp_frame::Role;
/// let mut compressor = Compressor::new(Role::Server, &DeflateParams::default(), &DeflateConfig::default());
/// let mut out = Vec::new();
/// compressor.compress(b"Hello", &mut out).unwrap();
/// // RFC 7692 §7.2.3.1: "Hello" compressed with the tail removed.
/// assert_eq!(out, [0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00]);
/// assert!(compressor.is_allocated()); // context takeover: kept for the next message
/// ```
#[derive(Debug)]
pub struct Compressor {
    no_context_takeover: bool,
    window_bits: u8,
    level: u8,
    min_size: usize,
    state: Option<Box<Compress>>,
}

impl Compressor {
    /// The compressor for the messages `role` sends, with the agreed `params` and the level and
    /// size threshold of `config`. Allocates nothing until the first message.
    pub fn new(role: Role, params: &DeflateParams, config: &DeflateConfig) -> Self {
        let (no_context_takeover, bits) = params.sender(role);
        let bits = bits.min(config.server_or_client_bits(role));
        Compressor {
            no_context_takeover,
            window_bits: bits.max(ZLIB_MIN_WINDOW_BITS),
            level: config.level,
            min_size: config.min_compress_size,
            state: None,
        }
    }

    /// Whether a payload of `len` bytes is worth compressing (at least
    /// [`DeflateConfig::min_compress_size`]).
    pub fn should_compress(&self, len: usize) -> bool {
        len >= self.min_size
    }

    /// Whether the zlib state is allocated (between messages only with context takeover).
    pub fn is_allocated(&self) -> bool {
        self.state.is_some()
    }

    /// The heap the compressor holds, from the measured figures: [`COMPRESSOR_HEAP_ESTIMATE`]
    /// plus `4 << window_bits` while allocated (380,176 bytes at 15 bits), else 0.
    pub fn heap_bytes(&self) -> usize {
        if self.state.is_some() {
            COMPRESSOR_HEAP_ESTIMATE + (4 << self.window_bits.min(15))
        } else {
            0
        }
    }

    /// The LZ77 window zlib compresses with (the agreed bits, at least 9).
    pub fn window_bits(&self) -> u8 {
        self.window_bits
    }

    /// Appends the compressed `payload` to `out`, without the `00 00 ff ff` tail (RFC 7692
    /// §7.2.1). An empty payload gives one `00` byte (§7.2.3.6).
    pub fn compress(&mut self, payload: &[u8], out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let level = self.level;
        let bits = self.window_bits;
        let state = self.state.get_or_insert_with(|| {
            Box::new(Compress::new_with_window_bits(
                Compression::new(u32::from(level)),
                false,
                bits,
            ))
        });
        let start = out.len();
        let mut input = payload;
        let result = loop {
            if out.capacity() - out.len() < 64 {
                out.reserve(input.len() / 2 + 64);
            }
            let before = state.total_in();
            if state.compress_vec(input, out, FlushCompress::Sync).is_err() {
                break Err(EncodeError::Compression);
            }
            let used = (state.total_in() - before) as usize;
            input = input.get(used..).unwrap_or(&[]);
            // A sync flush is complete once all input is taken and output room is left.
            if input.is_empty() && out.len() < out.capacity() {
                break Ok(());
            }
        };
        if result.is_err() {
            out.truncate(start);
            self.state = None;
            return result;
        }
        if out.len() >= start + 4 && out.ends_with(&TAIL) {
            out.truncate(out.len() - 4);
        }
        if out.len() == start {
            // zlib emits nothing for a sync flush right after another one (an empty message
            // after a message). An empty payload would make the peer inflate the tail alone,
            // which is the start of a stored block and breaks the stream: send the empty
            // stored block of §7.2.3.6 (`00`, the tail completes it) instead.
            out.push(0x00);
        }
        if self.no_context_takeover {
            self.state = None;
        }
        Ok(())
    }
}

impl DeflateConfig {
    /// This endpoint's own wish for the window of what `role` sends.
    fn server_or_client_bits(&self, role: Role) -> u8 {
        match role {
            Role::Server => self.server_max_window_bits,
            Role::Client => self.client_max_window_bits,
        }
    }
}
