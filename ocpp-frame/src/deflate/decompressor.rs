//! The receiving half of permessage-deflate: inflating as the payload arrives, in bounded
//! output chunks (RFC 7692 §7.2.2).

use alloc::boxed::Box;

use flate2::{Decompress, FlushDecompress, Status};

use super::compressor::{TAIL, ZLIB_MIN_WINDOW_BITS};
use super::params::DeflateParams;
use crate::{ProtocolError, Role};

/// Inflated bytes are handed on in pieces of at most this size (a stack buffer), so a
/// decompression bomb is stopped after at most this many bytes past the limit were produced,
/// and none of them is ever stored past the limit.
pub(crate) const OUTPUT_CHUNK: usize = 8 * 1024;

/// What the zlib-rs decompressor state costs on the heap, at any window size (measured by
/// `tests/deflate_memory.rs`: 47,704 bytes at 15, 12 and 9 bits).
pub const DECOMPRESSOR_HEAP_ESTIMATE: usize = 47_704;

/// Inflates the messages of the peer (RFC 7692 §7.2.2), for the [`Decoder`](crate::Decoder).
#[derive(Debug)]
pub(crate) struct Decompressor {
    no_context_takeover: bool,
    window_bits: u8,
    state: Option<Box<Decompress>>,
    /// The peer ended its DEFLATE stream (a block with BFINAL set): the rest of the message is
    /// ignored and the next message starts a new stream.
    ended: bool,
    /// Whether the current message has brought any compressed byte.
    fed: bool,
}

impl Decompressor {
    /// The decompressor for what the peer of `role` sends.
    pub(crate) fn new(role: Role, params: &DeflateParams) -> Self {
        let peer = match role {
            Role::Server => Role::Client,
            Role::Client => Role::Server,
        };
        let (no_context_takeover, bits) = params.sender(peer);
        Decompressor {
            no_context_takeover,
            // A peer whose zlib could not do the agreed 8 bits compresses with 9.
            window_bits: bits.max(ZLIB_MIN_WINDOW_BITS),
            state: None,
            ended: false,
            fed: false,
        }
    }

    pub(crate) fn is_allocated(&self) -> bool {
        self.state.is_some()
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        if self.state.is_some() {
            DECOMPRESSOR_HEAP_ESTIMATE
        } else {
            0
        }
    }

    /// Inflates a piece of a compressed message, handing the output to `sink` in chunks of at
    /// most [`OUTPUT_CHUNK`] bytes; stops at the first error of `sink` or of the data.
    pub(crate) fn inflate(
        &mut self,
        input: &[u8],
        sink: &mut dyn FnMut(&[u8]) -> Result<(), ProtocolError>,
    ) -> Result<(), ProtocolError> {
        if self.ended || input.is_empty() {
            return Ok(());
        }
        self.fed = true;
        let bits = self.window_bits;
        let state = self
            .state
            .get_or_insert_with(|| Box::new(Decompress::new_with_window_bits(false, bits)));
        let mut out = [0u8; OUTPUT_CHUNK];
        let mut input = input;
        loop {
            let (in_before, out_before) = (state.total_in(), state.total_out());
            let result = state.decompress(input, &mut out, FlushDecompress::None);
            let used = (state.total_in() - in_before) as usize;
            let produced = (state.total_out() - out_before) as usize;
            input = input.get(used..).unwrap_or(&[]);
            // What was inflated before bad data goes to the sink first, so that the outcome
            // (e.g. invalid UTF-8 before the bad data) does not depend on how the payload was
            // split across calls.
            if produced > 0 {
                sink(out.get(..produced).unwrap_or(&[]))?;
            }
            let status = result.map_err(|_| ProtocolError::InvalidCompressedData)?;
            if status == Status::StreamEnd {
                self.ended = true;
                return Ok(());
            }
            if (input.is_empty() && produced < OUTPUT_CHUNK) || (used == 0 && produced == 0) {
                return Ok(());
            }
        }
    }

    /// Ends a message: inflates the `00 00 ff ff` tail (RFC 7692 §7.2.2), then drops the state
    /// when the peer does not take over context (or ended its stream).
    pub(crate) fn finish_message(
        &mut self,
        sink: &mut dyn FnMut(&[u8]) -> Result<(), ProtocolError>,
    ) -> Result<(), ProtocolError> {
        // An empty payload is an empty message: the stream sits at a byte boundary after the
        // previous message's flush, where the tail alone would open a stored block that never
        // ends (so it is not fed; peers that send an empty payload mean "nothing").
        let result = if self.fed {
            self.inflate(&TAIL, sink)
        } else {
            Ok(())
        };
        self.fed = false;
        if self.no_context_takeover || self.ended || result.is_err() {
            self.reset();
        }
        result
    }

    /// Drops the state (after an error, or to release memory).
    pub(crate) fn reset(&mut self) {
        self.state = None;
        self.ended = false;
        self.fed = false;
    }
}
