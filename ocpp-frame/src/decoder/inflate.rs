//! permessage-deflate on the decoder's side (RFC 7692 §7.2.2): a compressed frame's payload
//! unmasked through a stack buffer and inflated into the message, its limit checked before
//! anything is stored. Without the `deflate` feature, nothing to do.

#[cfg(feature = "deflate")]
use bytes::BytesMut;

#[cfg(feature = "deflate")]
use crate::mask::apply_mask;
#[cfg(feature = "deflate")]
use crate::utf8::Utf8Validator;
use crate::ProtocolError;

use super::{Decoder, Partial};

/// Unmasks compressed payload through this stack buffer on its way to the inflater: compressed
/// bytes are never buffered on the heap.
#[cfg(feature = "deflate")]
const UNMASK_CHUNK: usize = 4096;

#[cfg(feature = "deflate")]
impl Decoder {
    /// Unmasks and inflates a piece of a compressed frame's payload.
    pub(super) fn inflate_payload(
        &mut self,
        p: &mut Partial,
        chunk: &[u8],
    ) -> Result<(), ProtocolError> {
        let Some(frame) = p.frame.as_mut() else {
            return Ok(());
        };
        let Some(inflate) = self.inflate.as_mut() else {
            return Ok(());
        };
        let text = p.message.is_some_and(|m| m.text);
        let limit = self.config.max_message_size;
        let mut sink = message_sink(&mut p.data, &mut p.utf8, text, limit);
        match frame.header.mask {
            None => {
                frame.received += chunk.len() as u64;
                inflate.inflate(chunk, &mut sink)
            }
            Some(key) => {
                let mut scratch = [0u8; UNMASK_CHUNK];
                for piece in chunk.chunks(UNMASK_CHUNK) {
                    let unmasked = &mut scratch[..piece.len()];
                    unmasked.copy_from_slice(piece);
                    apply_mask(unmasked, key, (frame.received % 4) as usize);
                    frame.received += piece.len() as u64;
                    inflate.inflate(unmasked, &mut sink)?;
                }
                Ok(())
            }
        }
    }

    /// Ends a compressed message: inflates the tail RFC 7692 §7.2.2 appends.
    pub(super) fn finish_inflate(&mut self, p: &mut Partial) -> Result<(), ProtocolError> {
        let Some(inflate) = self.inflate.as_mut() else {
            return Ok(());
        };
        let text = p.message.is_some_and(|m| m.text);
        inflate.finish_message(&mut message_sink(
            &mut p.data,
            &mut p.utf8,
            text,
            self.config.max_message_size,
        ))
    }
}

#[cfg(not(feature = "deflate"))]
impl Decoder {
    pub(super) fn inflate_payload(
        &mut self,
        _p: &mut Partial,
        _chunk: &[u8],
    ) -> Result<(), ProtocolError> {
        Ok(())
    }

    pub(super) fn finish_inflate(&mut self, _p: &mut Partial) -> Result<(), ProtocolError> {
        Ok(())
    }
}

/// Where the inflater's output goes: appended to the message with [`append_inflated`].
#[cfg(feature = "deflate")]
fn message_sink<'a>(
    data: &'a mut BytesMut,
    utf8: &'a mut Utf8Validator,
    text: bool,
    limit: u64,
) -> impl FnMut(&[u8]) -> Result<(), ProtocolError> + 'a {
    move |bytes| append_inflated(data, utf8, text, limit, bytes)
}

/// Appends inflated bytes to the message, refusing them (before storing anything) once the
/// message would pass `limit`, and validating text as it grows. The buffer grows to twice its
/// length at most, and never past the limit.
#[cfg(feature = "deflate")]
fn append_inflated(
    data: &mut BytesMut,
    utf8: &mut Utf8Validator,
    text: bool,
    limit: u64,
    bytes: &[u8],
) -> Result<(), ProtocolError> {
    let len = data.len();
    let size = (len as u64).saturating_add(bytes.len() as u64);
    if size > limit {
        // Invalid text within the limit is reported as such, wherever the inflater's output
        // happened to be cut.
        if text {
            let fits = limit.saturating_sub(len as u64) as usize;
            utf8.feed(bytes.get(..fits).unwrap_or(bytes))
                .map_err(|_| ProtocolError::InvalidUtf8)?;
        }
        return Err(ProtocolError::MessageTooLarge { size, limit });
    }
    if text {
        utf8.feed(bytes).map_err(|_| ProtocolError::InvalidUtf8)?;
    }
    if data.capacity() - len < bytes.len() {
        // `size <= limit`, so the cast is lossless wherever the message fits in memory.
        let wanted = (2 * len).max(len + bytes.len()).max(256) as u64;
        let capacity = wanted.min(limit) as usize;
        let mut grown = BytesMut::with_capacity(capacity);
        grown.extend_from_slice(data);
        *data = grown;
    }
    data.extend_from_slice(bytes);
    Ok(())
}
