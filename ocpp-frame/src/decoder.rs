//! The frame decoder: bytes in, complete messages out (RFC 6455 §5), for either role.

use alloc::boxed::Box;

use bytes::{Buf, BytesMut};

use crate::close::parse_close_payload;
use crate::frame::{FrameHeader, Role, MAX_HEADER_LEN};
use crate::mask::apply_mask;
use crate::utf8::Utf8Validator;
use crate::{Message, Opcode, ProtocolError, Utf8Bytes};

mod failure;
mod inflate;
mod spare;

use failure::Failure;

/// See [`crate::free_spare_buffers`].
pub(crate) fn free_spare_buffers() {
    spare::free();
}

/// Limits and options of a [`Decoder`]. Every limit is on by default.
///
/// ```
/// use ocpp_frame::DecoderConfig;
/// let config = DecoderConfig::default()
///     .max_frame_size(64 * 1024)
///     .max_message_size(256 * 1024)
///     .max_fragments(16);
/// assert_eq!(config.get_max_message_size(), 256 * 1024);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DecoderConfig {
    max_frame_size: u64,
    max_message_size: u64,
    max_fragments: u32,
    allowed_rsv: u8,
}

impl Default for DecoderConfig {
    /// 1 MiB per frame and per message, 1,024 fragments per message, no RSV bits.
    ///
    /// OCPP-J sets no maximum; OCPP 2.1 Part 4 §5.2 notes that 99% of messages fit in 2 kB, so
    /// 1 MiB leaves room for large configuration and certificate messages while bounding what one
    /// of tens of thousands of peers can make the server hold.
    fn default() -> Self {
        DecoderConfig {
            max_frame_size: 1 << 20,
            max_message_size: 1 << 20,
            max_fragments: 1024,
            allowed_rsv: 0,
        }
    }
}

impl DecoderConfig {
    /// The largest payload one frame may declare; checked from the header, before anything of
    /// the payload is buffered. Exceeding it closes with 1009.
    pub fn max_frame_size(mut self, bytes: u64) -> Self {
        self.max_frame_size = bytes;
        self
    }

    /// The largest message, all fragments together; checked at each frame header against the
    /// running total. Exceeding it closes with 1009.
    pub fn max_message_size(mut self, bytes: u64) -> Self {
        self.max_message_size = bytes;
        self
    }

    /// The most frames one message may have (counted per message). Exceeding it closes with 1008.
    pub fn max_fragments(mut self, frames: u32) -> Self {
        self.max_fragments = frames;
        self
    }

    /// The RSV bits an extension negotiated for this connection defines (e.g.
    /// [`RSV1`](crate::frame::RSV1) for permessage-deflate). Others are refused with 1002.
    pub fn allowed_rsv(mut self, bits: u8) -> Self {
        self.allowed_rsv = bits & 0b111;
        self
    }

    /// See [`DecoderConfig::max_frame_size`].
    pub fn get_max_frame_size(&self) -> u64 {
        self.max_frame_size
    }

    /// See [`DecoderConfig::max_message_size`].
    pub fn get_max_message_size(&self) -> u64 {
        self.max_message_size
    }

    /// See [`DecoderConfig::max_fragments`].
    pub fn get_max_fragments(&self) -> u32 {
        self.max_fragments
    }

    /// See [`DecoderConfig::allowed_rsv`].
    pub fn get_allowed_rsv(&self) -> u8 {
        self.allowed_rsv
    }
}

/// What one call to [`Decoder::decode`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "the consumed count says where the next call starts"]
pub struct Decoded {
    /// How many bytes of the input were consumed. When `message` is `None` this is the whole
    /// input: every byte is either decoded or kept as part of an unfinished frame.
    pub consumed: usize,
    /// The message completed by the consumed bytes, if any.
    pub message: Option<Message>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Data,
    Control,
    /// A frame of a compressed message: inflated as it arrives, never buffered.
    Compressed,
}

#[derive(Debug, Clone, Copy)]
struct FrameInProgress {
    header: FrameHeader,
    received: u64,
    target: Target,
}

#[derive(Debug, Clone, Copy)]
struct MessageInProgress {
    text: bool,
    fragments: u32,
    compressed: bool,
}

/// Turns the bytes of a connection into messages, for either role (RFC 6455 §5-§8).
///
/// Sans-IO: it never reads or writes a socket. Give it the bytes you read, in pieces of any size;
/// it returns at most one message per call and says how many bytes it consumed. It reassembles
/// fragmented messages (with control frames in between), validates UTF-8 as it arrives (fail fast,
/// at most 3 bytes carried), checks close payloads, masking, RSV bits, opcodes, control frame
/// rules and the limits of its [`DecoderConfig`]. Any [`ProtocolError`] is final: close the
/// connection with [`ProtocolError::close_code`]; later calls return the same error.
///
/// Memory: an idle decoder is small (at most 56 bytes on 64-bit targets) and holds no heap. The state of
/// an unfinished frame or message (a split header, the buffers, the UTF-8 state) is boxed only
/// while a call ends inside one; a whole frame in the input is decoded without it. A partial frame
/// keeps only the bytes that have arrived (the buffer grows with them, at most doubling), never
/// what the header announced.
///
/// ```
/// use ocpp_frame::{Decoder, DecoderConfig, Message, Role};
/// // RFC 6455 §5.7: a masked "Hello" from a client, in two pieces.
/// let wire = [0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58];
/// let mut decoder = Decoder::new(Role::Server, DecoderConfig::default());
/// let first = decoder.decode(&wire[..4]).unwrap();
/// assert_eq!((first.consumed, first.message), (4, None));
/// let second = decoder.decode(&wire[4..]).unwrap();
/// assert_eq!(second.message, Some(Message::Text("Hello".into())));
/// ```
#[derive(Debug)]
pub struct Decoder {
    config: DecoderConfig,
    /// The state of an unfinished frame or message; `None` whenever the decoder is idle.
    partial: Option<Box<Partial>>,
    #[cfg(feature = "deflate")]
    inflate: Option<Box<crate::deflate::Decompressor>>,
    /// The number the error carries besides a limit of `config` (see [`Failure`]).
    error_value: u64,
    /// The error every call returns once one was returned.
    error: Option<Failure>,
    role: Role,
    closed: bool,
}

/// What a decoder holds only while a frame or a message is unfinished: boxed in
/// [`Decoder::partial`] when a call ends inside one, dropped as soon as the decoder is idle
/// again. A call that starts idle works on one on its stack, so a whole frame in the input
/// never allocates it.
#[derive(Debug)]
struct Partial {
    /// A header split across calls, carried in a fixed array.
    header: [u8; MAX_HEADER_LEN],
    header_len: u8,
    frame: Option<FrameInProgress>,
    message: Option<MessageInProgress>,
    utf8: Utf8Validator,
    data: BytesMut,
    /// `data` came from this thread's spare buffers (`spare`): its message is split off it and
    /// the buffer goes back.
    data_spare: bool,
    control: BytesMut,
}

impl Partial {
    fn new() -> Self {
        Partial {
            header: [0; MAX_HEADER_LEN],
            header_len: 0,
            frame: None,
            message: None,
            utf8: Utf8Validator::new(),
            data: BytesMut::new(),
            data_spare: false,
            control: BytesMut::new(),
        }
    }

    /// Between frames and between messages: nothing in here is needed any more (the buffers
    /// are handed out or reset when the frame or message that used them ends).
    fn is_idle(&self) -> bool {
        self.header_len == 0 && self.frame.is_none() && self.message.is_none()
    }

    fn buffer(&mut self, target: Target) -> &mut BytesMut {
        match target {
            Target::Data | Target::Compressed => &mut self.data,
            Target::Control => &mut self.control,
        }
    }

    /// Reads a header from `rest`, carrying a partial header across calls in a fixed array.
    /// Returns the bytes used and the header once complete (all of `rest` is used otherwise).
    fn read_header(&mut self, rest: &[u8]) -> Result<(usize, Option<FrameHeader>), ProtocolError> {
        if self.header_len == 0 {
            if let Some((header, used)) = FrameHeader::parse(rest)? {
                return Ok((used, Some(header)));
            }
        }
        let mut used = 0;
        let mut have = usize::from(self.header_len);
        // First the two bytes that announce the header's length, then the rest of it.
        for _ in 0..2 {
            let need = if have < 2 {
                2
            } else {
                FrameHeader::len_from_prefix([self.header[0], self.header[1]])
            };
            let take = (need - have).min(rest.len() - used);
            self.header[have..have + take].copy_from_slice(&rest[used..used + take]);
            have += take;
            used += take;
            if have < need {
                self.header_len = have as u8;
                return Ok((used, None));
            }
        }
        self.header_len = 0;
        match FrameHeader::parse(&self.header[..have])? {
            Some((header, _)) => Ok((used, Some(header))),
            // Unreachable: `have` is the length the prefix announces.
            None => Ok((used, None)),
        }
    }

    /// Unmasks and validates the bytes of the current frame's buffer from `start` on.
    fn payload_added(&mut self, start: usize) -> Result<(), ProtocolError> {
        let Some(frame) = self.frame.as_mut() else {
            return Ok(());
        };
        let buffer = match frame.target {
            Target::Data | Target::Compressed => &mut self.data,
            Target::Control => &mut self.control,
        };
        let added = &mut buffer[start..];
        if let Some(key) = frame.header.mask {
            apply_mask(added, key, (frame.received % 4) as usize);
        }
        frame.received += added.len() as u64;
        if frame.target == Target::Data && self.message.is_some_and(|m| m.text) {
            self.utf8
                .feed(added)
                .map_err(|_| ProtocolError::InvalidUtf8)?;
        }
        Ok(())
    }
}

impl Decoder {
    /// A decoder for a connection in `role`.
    pub fn new(role: Role, config: DecoderConfig) -> Self {
        Decoder {
            config,
            partial: None,
            #[cfg(feature = "deflate")]
            inflate: None,
            error_value: 0,
            error: None,
            role,
            closed: false,
        }
    }

    /// Turns on permessage-deflate with the parameters the handshake agreed (RFC 7692): RSV1
    /// becomes allowed on the first frame of a data message, and such messages are inflated as
    /// their payload arrives. The size limits apply to the inflated bytes, checked in bounded
    /// chunks while inflating (a decompression bomb stops at the limit: 1009); UTF-8 is checked
    /// on the inflated text (1007); RSV1 on a control or continuation frame is refused (1002);
    /// data that does not inflate closes with 1007.
    ///
    /// Memory: without context takeover of the peer (`*_no_context_takeover` for its role) the
    /// inflate state exists only while a compressed message is arriving; with it, from the first
    /// compressed message on.
    ///
    /// ```
    /// use ocpp_frame::deflate::DeflateParams;
    /// use ocpp_frame::{Decoder, DecoderConfig, Message, ProtocolError, Role};
    /// let mut decoder = Decoder::new(Role::Client, DecoderConfig::default());
    /// decoder.set_deflate(&DeflateParams::default());
    /// // RFC 7692 §7.2.3.1: "Hello", compressed, in one frame.
    /// let wire = [0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00];
    /// assert_eq!(decoder.decode(&wire).unwrap().message, Some(Message::Text("Hello".into())));
    /// // RSV1 on a ping is a protocol error.
    /// assert_eq!(decoder.decode(&[0xc9, 0x00]), Err(ProtocolError::CompressedControlFrame));
    /// ```
    #[cfg(feature = "deflate")]
    pub fn set_deflate(&mut self, params: &crate::deflate::DeflateParams) {
        self.config.allowed_rsv |= crate::frame::RSV1;
        self.inflate = Some(Box::new(crate::deflate::Decompressor::new(
            self.role, params,
        )));
    }

    /// [`Decoder::set_deflate`] in builder form.
    #[cfg(feature = "deflate")]
    pub fn with_deflate(mut self, params: &crate::deflate::DeflateParams) -> Self {
        self.set_deflate(params);
        self
    }

    /// Whether permessage-deflate is on ([`Decoder::set_deflate`]).
    pub fn is_deflate(&self) -> bool {
        #[cfg(feature = "deflate")]
        {
            self.inflate.is_some()
        }
        #[cfg(not(feature = "deflate"))]
        {
            false
        }
    }

    /// The role this decoder was made for.
    pub fn role(&self) -> Role {
        self.role
    }

    /// The configuration.
    pub fn config(&self) -> &DecoderConfig {
        &self.config
    }

    /// Changes the RSV bits an extension defines, e.g. after permessage-deflate was negotiated.
    pub fn set_allowed_rsv(&mut self, bits: u8) {
        self.config.allowed_rsv = bits & 0b111;
    }

    /// Whether a close frame was received; what follows it is ignored.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Whether the decoder is between frames and between messages (nothing partial held).
    pub fn is_idle(&self) -> bool {
        self.partial.as_deref().is_none_or(Partial::is_idle)
    }

    /// The heap bytes this decoder holds: while a frame or message is partial, its boxed state
    /// and the capacity of its buffers; and an estimate of the inflate state while it is
    /// allocated. Zero whenever it is idle, unless permessage-deflate keeps the peer's context
    /// between messages.
    pub fn heap_bytes(&self) -> usize {
        let inflate = {
            #[cfg(feature = "deflate")]
            {
                self.inflate.as_ref().map_or(0, |d| d.heap_bytes())
            }
            #[cfg(not(feature = "deflate"))]
            {
                0
            }
        };
        let partial = self.partial.as_deref().map_or(0, |p| {
            core::mem::size_of::<Partial>() + p.data.capacity() + p.control.capacity()
        });
        partial + inflate
    }

    /// Whether the inflate state of permessage-deflate is allocated right now.
    pub fn is_inflate_allocated(&self) -> bool {
        #[cfg(feature = "deflate")]
        {
            self.inflate.as_ref().is_some_and(|d| d.is_allocated())
        }
        #[cfg(not(feature = "deflate"))]
        {
            false
        }
    }

    /// Decodes from `input`: consumes bytes until one message is complete or the input ends.
    ///
    /// Call it again with `&input[consumed..]` while it returns a message. The payload of a
    /// message is copied out of `input` once (and unmasked in place); use
    /// [`Decoder::decode_buf`] to hand out payloads without copying when you own a `BytesMut`.
    pub fn decode(&mut self, input: &[u8]) -> Result<Decoded, ProtocolError> {
        if input.is_empty() && self.error.is_none() {
            // No byte, no progress: answered without setting up the partial state (a caller
            // that loops until a call returns no message ends with an empty input).
            return Ok(Decoded {
                consumed: 0,
                message: None,
            });
        }
        self.with_partial(|decoder, partial| decoder.decode_slice(partial, input))
    }

    /// Decodes from a buffer the caller owns and advances it past what was consumed.
    ///
    /// When a whole unfragmented frame sits at the front of `buf`, its payload is split off
    /// `buf` and unmasked in place: the message shares `buf`'s allocation and nothing is copied.
    /// Otherwise behaves like [`Decoder::decode`]. Returns `Ok(None)` once `buf` is empty.
    ///
    /// ```
    /// use bytes::BytesMut;
    /// use ocpp_frame::{Decoder, DecoderConfig, Message, Role};
    /// let mut buf = BytesMut::from(&[0x81, 0x02, b'h', b'i', 0x89, 0x00][..]);
    /// let mut decoder = Decoder::new(Role::Client, DecoderConfig::default());
    /// assert_eq!(decoder.decode_buf(&mut buf).unwrap(), Some(Message::Text("hi".into())));
    /// assert_eq!(decoder.decode_buf(&mut buf).unwrap(), Some(Message::Ping(Default::default())));
    /// assert_eq!(decoder.decode_buf(&mut buf).unwrap(), None);
    /// ```
    pub fn decode_buf(&mut self, buf: &mut BytesMut) -> Result<Option<Message>, ProtocolError> {
        if buf.is_empty() && self.error.is_none() {
            return Ok(None);
        }
        self.with_partial(|decoder, partial| decoder.decode_owned(partial, buf))
    }

    /// Runs one call on the partial state: the boxed one a call before left, or else a fresh
    /// one on the stack, which is boxed only if the call ends inside a frame or message. The
    /// boxed one is dropped once the decoder is idle. An error is final (see [`Decoder::fail`]).
    fn with_partial<T>(
        &mut self,
        call: impl FnOnce(&mut Self, &mut Partial) -> Result<T, ProtocolError>,
    ) -> Result<T, ProtocolError> {
        if let Some(failure) = self.error {
            return Err(failure.join(self.error_value, &self.config));
        }
        let result = match self.partial.take() {
            Some(mut partial) => {
                let result = call(self, &mut partial);
                if result.is_ok() && !partial.is_idle() {
                    self.partial = Some(partial);
                }
                result
            }
            None => {
                let mut partial = Partial::new();
                let result = call(self, &mut partial);
                if result.is_ok() && !partial.is_idle() {
                    self.partial = Some(Box::new(partial));
                }
                result
            }
        };
        result.map_err(|e| self.fail(e))
    }

    /// Keeps `error` for every later call and drops everything partial.
    fn fail(&mut self, error: ProtocolError) -> ProtocolError {
        let (failure, value) = Failure::split(&error);
        self.error = Some(failure);
        self.error_value = value;
        self.partial = None;
        #[cfg(feature = "deflate")]
        if let Some(inflate) = &mut self.inflate {
            inflate.reset();
        }
        error
    }

    fn decode_owned(
        &mut self,
        p: &mut Partial,
        buf: &mut BytesMut,
    ) -> Result<Option<Message>, ProtocolError> {
        loop {
            if self.closed {
                buf.clear();
                return Ok(None);
            }
            if p.header_len == 0 && p.frame.is_none() {
                if let Some((header, header_len)) = FrameHeader::parse(buf)? {
                    let available = (buf.len() - header_len) as u64;
                    if available >= header.payload_len {
                        let target = self.begin_frame(p, header)?;
                        // Only a frame that is a whole message (or a control frame) is handed
                        // out as a slice of `buf`. A fragment is copied: kept as a slice, it
                        // would pin the caller's whole read buffer until the message ends.
                        let whole = header.fin
                            && header.opcode != Opcode::Continuation
                            && target != Target::Compressed;
                        buf.advance(header_len);
                        // `payload_len <= available`, which is a `usize`.
                        let payload = buf.split_to(header.payload_len as usize);
                        if whole {
                            *p.buffer(target) = payload;
                            p.payload_added(0)?;
                        } else {
                            self.add_payload(p, &payload)?;
                        }
                        if let Some(message) = self.end_frame(p)? {
                            return Ok(Some(message));
                        }
                        continue;
                    }
                }
            }
            if buf.is_empty() {
                return Ok(None);
            }
            let decoded = self.decode_slice(p, buf)?;
            buf.advance(decoded.consumed);
            if decoded.message.is_some() || buf.is_empty() {
                return Ok(decoded.message);
            }
        }
    }

    fn decode_slice(&mut self, p: &mut Partial, input: &[u8]) -> Result<Decoded, ProtocolError> {
        let mut pos = 0;
        loop {
            if self.closed {
                return Ok(Decoded {
                    consumed: input.len(),
                    message: None,
                });
            }
            let rest = &input[pos..];
            let Some(frame) = p.frame else {
                match p.read_header(rest)? {
                    (used, Some(header)) => {
                        pos += used;
                        self.begin_frame(p, header)?;
                        continue;
                    }
                    (_, None) => {
                        return Ok(Decoded {
                            consumed: input.len(),
                            message: None,
                        })
                    }
                }
            };
            let remaining = frame.header.payload_len - frame.received;
            // `take <= rest.len()`, so the cast back to usize is lossless.
            let take = remaining.min(rest.len() as u64) as usize;
            if take > 0 {
                self.add_payload(p, &rest[..take])?;
                pos += take;
            }
            if take as u64 == remaining {
                if let Some(message) = self.end_frame(p)? {
                    return Ok(Decoded {
                        consumed: pos,
                        message: Some(message),
                    });
                }
            } else {
                return Ok(Decoded {
                    consumed: pos,
                    message: None,
                });
            }
        }
    }

    /// Checks a header against the role, the extensions and the limits, and sets up its frame.
    fn begin_frame(&self, p: &mut Partial, header: FrameHeader) -> Result<Target, ProtocolError> {
        if header.rsv & !self.config.allowed_rsv != 0 {
            return Err(ProtocolError::ReservedBits(header.rsv));
        }
        // RFC 7692 §6.1: with permessage-deflate, RSV1 marks the first frame of a compressed
        // data message and nothing else.
        let rsv1 = self.is_deflate() && header.rsv & crate::frame::RSV1 != 0;
        if rsv1 && header.opcode.is_control() {
            return Err(ProtocolError::CompressedControlFrame);
        }
        if rsv1 && header.opcode == Opcode::Continuation {
            return Err(ProtocolError::CompressedContinuation);
        }
        match (self.role, header.mask.is_some()) {
            (Role::Server, false) => return Err(ProtocolError::UnmaskedClientFrame),
            (Role::Client, true) => return Err(ProtocolError::MaskedServerFrame),
            _ => {}
        }
        let target = if header.opcode.is_control() {
            if !header.fin {
                return Err(ProtocolError::FragmentedControlFrame);
            }
            if header.payload_len > 125 {
                return Err(ProtocolError::ControlFrameTooLong(header.payload_len));
            }
            Target::Control
        } else {
            if header.payload_len > self.config.max_frame_size {
                return Err(ProtocolError::FrameTooLarge {
                    size: header.payload_len,
                    limit: self.config.max_frame_size,
                });
            }
            // A compressed message's limit is on its inflated size, checked while inflating.
            let compressed = rsv1 || p.message.is_some_and(|m| m.compressed);
            let total = (p.data.len() as u64).saturating_add(header.payload_len);
            if !compressed && total > self.config.max_message_size {
                return Err(ProtocolError::MessageTooLarge {
                    size: total,
                    limit: self.config.max_message_size,
                });
            }
            match (header.opcode, &mut p.message) {
                (Opcode::Continuation, None) => return Err(ProtocolError::UnexpectedContinuation),
                (Opcode::Continuation, Some(message)) => {
                    message.fragments = message.fragments.saturating_add(1);
                    if message.fragments > self.config.max_fragments {
                        return Err(ProtocolError::TooManyFragments {
                            limit: self.config.max_fragments,
                        });
                    }
                }
                (_, Some(_)) => return Err(ProtocolError::ExpectedContinuation),
                (opcode, None) => {
                    p.message = Some(MessageInProgress {
                        text: opcode == Opcode::Text,
                        fragments: 1,
                        compressed: rsv1,
                    });
                }
            }
            if compressed {
                Target::Compressed
            } else {
                Target::Data
            }
        };
        p.frame = Some(FrameInProgress {
            header,
            received: 0,
            target,
        });
        Ok(target)
    }

    /// Copies a piece of the current frame's payload into its buffer.
    fn add_payload(&mut self, p: &mut Partial, chunk: &[u8]) -> Result<(), ProtocolError> {
        let Some(frame) = p.frame else {
            return Ok(());
        };
        if frame.target == Target::Compressed {
            return self.inflate_payload(p, chunk);
        }
        let frame_left = frame.header.payload_len - frame.received;
        let buffer = p.buffer(frame.target);
        let start = buffer.len();
        if buffer.capacity() - start < chunk.len() {
            // Grow to twice what arrived (at least the chunk), but never past the end of this
            // frame: the whole rest of the frame if it is here, and no more than twice what the
            // peer actually sent otherwise. Allocated exactly (`with_capacity`), not by `reserve`,
            // whose growth may overshoot.
            let end_of_frame = (start as u64).saturating_add(frame_left);
            let wanted = (2 * start).max(start + chunk.len()) as u64;
            let capacity = wanted.min(end_of_frame) as usize;
            // A message that is one frame, all of it in this chunk: it is handed out (and the
            // buffer given back) before this call returns, so a spare never stays with a
            // decoder between calls, where its capacity could exceed what the peer sent.
            let whole_message = frame.header.fin && chunk.len() as u64 == frame_left;
            if start == 0 && frame.target == Target::Data && buffer.capacity() == 0 && whole_message
            {
                // A message's first bytes: a spare buffer of this thread, if one fits.
                *buffer = spare::take(capacity);
                p.data_spare = true;
            } else {
                let mut grown = BytesMut::with_capacity(capacity);
                grown.extend_from_slice(buffer);
                *buffer = grown;
                if frame.target == Target::Data {
                    p.data_spare = false;
                }
            }
        }
        let buffer = p.buffer(frame.target);
        buffer.extend_from_slice(chunk);
        p.payload_added(start)
    }

    /// Completes the current frame; returns the message it completes, if any.
    fn end_frame(&mut self, p: &mut Partial) -> Result<Option<Message>, ProtocolError> {
        let Some(frame) = p.frame.take() else {
            return Ok(None);
        };
        let message = match frame.header.opcode {
            Opcode::Close => {
                let payload = core::mem::take(&mut p.control).freeze();
                let close = parse_close_payload(payload)?;
                self.closed = true;
                p.message = None;
                p.data = BytesMut::new();
                p.data_spare = false;
                Message::Close(close)
            }
            Opcode::Ping => Message::Ping(core::mem::take(&mut p.control).freeze()),
            Opcode::Pong => Message::Pong(core::mem::take(&mut p.control).freeze()),
            Opcode::Text | Opcode::Binary | Opcode::Continuation => {
                if !frame.header.fin {
                    return Ok(None);
                }
                if frame.target == Target::Compressed {
                    self.finish_inflate(p)?;
                }
                let text = p.message.take().is_some_and(|m| m.text);
                let mut buffer = core::mem::take(&mut p.data);
                let payload = if core::mem::take(&mut p.data_spare) && spare::keeps(&buffer) {
                    // The message's bytes leave; the buffer waits for the next message.
                    let payload = buffer.split().freeze();
                    spare::give(buffer);
                    payload
                } else {
                    buffer.freeze()
                };
                if text {
                    p.utf8.finish().map_err(|_| ProtocolError::InvalidUtf8)?;
                    Message::Text(Utf8Bytes::from_validated(payload))
                } else {
                    Message::Binary(payload)
                }
            }
        };
        Ok(Some(message))
    }
}
