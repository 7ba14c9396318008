//! The frame encoder, for either role (RFC 6455 §5).

use alloc::vec::Vec;

use crate::frame::{FrameHeader, Role};
use crate::mask::apply_mask;
use crate::{CloseCode, EncodeError, Opcode};

/// Writes frames for a connection in one role.
///
/// The client role masks every frame with a key the caller supplies (RFC 6455 §5.3 asks for a
/// fresh, unpredictable key per frame; this crate has no RNG). The server role never masks. Frames
/// are appended to a `Vec<u8>` the caller owns; the encoder holds no buffer and no state.
///
/// ```
/// use ocpp_frame::{Encoder, Role};
/// let mut out = Vec::new();
/// Encoder::new(Role::Server).encode_text("Hello", None, &mut out).unwrap();
/// assert_eq!(out, [0x81, 0x05, b'H', b'e', b'l', b'l', b'o']);
///
/// out.clear();
/// let key = [0x37, 0xfa, 0x21, 0x3d];
/// Encoder::new(Role::Client).encode_text("Hello", Some(key), &mut out).unwrap();
/// assert_eq!(out, [0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Encoder {
    role: Role,
}

impl Encoder {
    /// An encoder for a connection in `role`.
    pub const fn new(role: Role) -> Self {
        Encoder { role }
    }

    /// The role this encoder writes for.
    pub const fn role(&self) -> Role {
        self.role
    }

    /// Appends one frame: `header`'s FIN, RSV bits and opcode, `payload`, masked with `mask_key`.
    ///
    /// `header.payload_len` and `header.mask` are ignored: they come from `payload` and
    /// `mask_key`. Refuses what a peer would have to refuse: a missing key in the client role, a
    /// key in the server role, a fragmented control frame or one over 125 bytes.
    pub fn encode_frame(
        &self,
        header: FrameHeader,
        payload: &[u8],
        mask_key: Option<[u8; 4]>,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        match (self.role, mask_key) {
            (Role::Client, None) => return Err(EncodeError::MaskKeyRequired),
            (Role::Server, Some(_)) => return Err(EncodeError::UnexpectedMaskKey),
            _ => {}
        }
        if header.opcode.is_control() {
            if !header.fin {
                return Err(EncodeError::FragmentedControlFrame);
            }
            if payload.len() > 125 {
                return Err(EncodeError::ControlFrameTooLong(payload.len()));
            }
        }
        let header = FrameHeader {
            payload_len: payload.len() as u64,
            mask: mask_key,
            ..header
        };
        out.reserve(header.encoded_len() + payload.len());
        header.write_to(out);
        let start = out.len();
        out.extend_from_slice(payload);
        if let Some(key) = mask_key {
            apply_mask(&mut out[start..], key, 0);
        }
        Ok(())
    }

    /// Appends a single-frame data message compressed with permessage-deflate (RFC 7692 §6,
    /// §7.2.1): RSV1 set, the payload deflated by `compressor` with its tail removed.
    ///
    /// A payload under the compressor's [`min_compress_size`](crate::deflate::DeflateConfig::min_compress_size)
    /// goes out uncompressed (RSV1 clear, allowed per message), and so does a control frame
    /// (control frames are never compressed). The frame is written straight into `out`: the
    /// compressed bytes are produced behind room for the longest header, then moved once.
    ///
    /// ```
    /// use ocpp_frame::deflate::{Compressor, DeflateConfig, DeflateParams};
    /// use ocpp_frame::{Encoder, Opcode, Role};
    /// let config = DeflateConfig::default().min_compress_size(0);
    /// let mut compressor = Compressor::new(Role::Server, &DeflateParams::default(), &config);
    /// let mut out = Vec::new();
    /// Encoder::new(Role::Server)
    ///     .encode_compressed(&mut compressor, Opcode::Text, b"Hello", None, &mut out)
    ///     .unwrap();
    /// // RFC 7692 §7.2.3.1.
    /// assert_eq!(out, [0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00]);
    /// ```
    #[cfg(feature = "deflate")]
    pub fn encode_compressed(
        &self,
        compressor: &mut crate::deflate::Compressor,
        opcode: Opcode,
        payload: &[u8],
        mask_key: Option<[u8; 4]>,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        if opcode.is_control() || !compressor.should_compress(payload.len()) {
            return self.encode_frame(FrameHeader::new(opcode, 0), payload, mask_key, out);
        }
        match (self.role, mask_key) {
            (Role::Client, None) => return Err(EncodeError::MaskKeyRequired),
            (Role::Server, Some(_)) => return Err(EncodeError::UnexpectedMaskKey),
            _ => {}
        }
        let start = out.len();
        let body = start + crate::frame::MAX_HEADER_LEN;
        out.resize(body, 0);
        if let Err(error) = compressor.compress(payload, out) {
            out.truncate(start);
            return Err(error);
        }
        frame_in_place(out, start, crate::frame::RSV1, opcode, mask_key);
        Ok(())
    }

    /// Starts a single-frame data message whose payload the caller writes straight into `out`
    /// (e.g. JSON serialised in place), without a buffer of its own: reserves room for the
    /// longest header. Finish with [`Encoder::finish_frame`], or drop what was written with
    /// [`FrameInProgress::abandon`].
    ///
    /// ```
    /// use ocpp_frame::{Encoder, Opcode, Role};
    /// let encoder = Encoder::new(Role::Server);
    /// let mut out = b"earlier frames ".to_vec();
    /// let frame = encoder.start_frame(&mut out);
    /// out.extend_from_slice(b"Hello");
    /// encoder.finish_frame(frame, Opcode::Text, None, &mut out).unwrap();
    /// assert_eq!(&out[15..], [0x81, 0x05, b'H', b'e', b'l', b'l', b'o']);
    /// ```
    pub fn start_frame(&self, out: &mut Vec<u8>) -> FrameInProgress {
        let start = out.len();
        // Room for the header and a typical OCPP message, so that writing the payload does
        // not grow the buffer step by step (one allocation instead of several).
        out.reserve(crate::frame::MAX_HEADER_LEN + TYPICAL_MESSAGE_LEN);
        out.resize(start + crate::frame::MAX_HEADER_LEN, 0);
        FrameInProgress { start }
    }

    /// Frames the payload written into `out` since [`Encoder::start_frame`]: writes the header in
    /// front of it (moving the payload once, by the unused header room) and masks it with
    /// `mask_key`. A control `opcode` or a key that does not fit the role is refused and the
    /// payload removed.
    pub fn finish_frame(
        &self,
        frame: FrameInProgress,
        opcode: Opcode,
        mask_key: Option<[u8; 4]>,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        let refusal = match (self.role, mask_key) {
            (Role::Client, None) => Some(EncodeError::MaskKeyRequired),
            (Role::Server, Some(_)) => Some(EncodeError::UnexpectedMaskKey),
            _ if opcode.is_control() => Some(EncodeError::ControlFrameInPlace),
            _ => None,
        };
        if let Some(error) = refusal {
            frame.abandon(out);
            return Err(error);
        }
        frame_in_place(out, frame.start, 0, opcode, mask_key);
        Ok(())
    }

    /// Appends a single-frame text message.
    pub fn encode_text(
        &self,
        text: &str,
        mask_key: Option<[u8; 4]>,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        let header = FrameHeader::new(Opcode::Text, 0);
        self.encode_frame(header, text.as_bytes(), mask_key, out)
    }

    /// Appends a single-frame binary message.
    pub fn encode_binary(
        &self,
        data: &[u8],
        mask_key: Option<[u8; 4]>,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        let header = FrameHeader::new(Opcode::Binary, 0);
        self.encode_frame(header, data, mask_key, out)
    }

    /// Appends a ping (payload at most 125 bytes).
    pub fn encode_ping(
        &self,
        payload: &[u8],
        mask_key: Option<[u8; 4]>,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        let header = FrameHeader::new(Opcode::Ping, 0);
        self.encode_frame(header, payload, mask_key, out)
    }

    /// Appends a pong (payload at most 125 bytes; answer a ping with its payload).
    pub fn encode_pong(
        &self,
        payload: &[u8],
        mask_key: Option<[u8; 4]>,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        let header = FrameHeader::new(Opcode::Pong, 0);
        self.encode_frame(header, payload, mask_key, out)
    }

    /// Appends a close frame: empty for `None`, else the code and a reason of at most 123 bytes
    /// (RFC 6455 §5.5.1). Codes that may not be sent (1005, 1006, 1015, unassigned) are refused.
    ///
    /// ```
    /// use ocpp_frame::{CloseCode, Encoder, Role};
    /// let mut out = Vec::new();
    /// Encoder::new(Role::Server)
    ///     .encode_close(Some((CloseCode::NORMAL, "bye")), None, &mut out)
    ///     .unwrap();
    /// assert_eq!(out, [0x88, 0x05, 0x03, 0xe8, b'b', b'y', b'e']);
    /// ```
    pub fn encode_close(
        &self,
        close: Option<(CloseCode, &str)>,
        mask_key: Option<[u8; 4]>,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        let header = FrameHeader::new(Opcode::Close, 0);
        let Some((code, reason)) = close else {
            return self.encode_frame(header, &[], mask_key, out);
        };
        if !code.is_valid_on_wire() {
            return Err(EncodeError::InvalidCloseCode(code.as_u16()));
        }
        if reason.len() > 123 {
            return Err(EncodeError::ControlFrameTooLong(reason.len() + 2));
        }
        let mut payload = [0u8; 125];
        payload[..2].copy_from_slice(&code.as_u16().to_be_bytes());
        payload[2..2 + reason.len()].copy_from_slice(reason.as_bytes());
        self.encode_frame(header, &payload[..2 + reason.len()], mask_key, out)
    }
}

/// The payload room `Encoder::start_frame` reserves: most OCPP messages (Heartbeat, status
/// and meter answers) fit, so serialising one grows the buffer once.
const TYPICAL_MESSAGE_LEN: usize = 242;

/// Frames in place the payload that follows `MAX_HEADER_LEN` reserved bytes at `start` of
/// `out`: the header goes in front of the payload, which moves once by the unused header room,
/// and the payload is masked with `mask_key`.
fn frame_in_place(
    out: &mut Vec<u8>,
    start: usize,
    rsv: u8,
    opcode: Opcode,
    mask_key: Option<[u8; 4]>,
) {
    let body = start + crate::frame::MAX_HEADER_LEN;
    let len = out.len().saturating_sub(body);
    let header = FrameHeader {
        fin: true,
        rsv,
        opcode,
        mask: mask_key,
        payload_len: len as u64,
    };
    let mut head = [0u8; crate::frame::MAX_HEADER_LEN];
    let head_len = header.encode(&mut head);
    out.copy_within(body.., start + head_len);
    out.truncate(start + head_len + len);
    out[start..start + head_len].copy_from_slice(&head[..head_len]);
    if let Some(key) = mask_key {
        apply_mask(&mut out[start + head_len..], key, 0);
    }
}

/// A data frame begun with [`Encoder::start_frame`]: its payload is being written into the
/// caller's buffer. Finish it with [`Encoder::finish_frame`] or [`FrameInProgress::abandon`] it.
#[derive(Debug)]
#[must_use = "finish the frame or abandon it, or the buffer keeps a blank header"]
pub struct FrameInProgress {
    start: usize,
}

impl FrameInProgress {
    /// Removes the reserved header room and whatever payload was written since.
    pub fn abandon(self, out: &mut Vec<u8>) {
        out.truncate(self.start);
    }
}
