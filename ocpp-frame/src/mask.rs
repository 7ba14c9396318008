//! Client-to-server masking (RFC 6455 §5.3).
//!
//! Masking XORs every payload byte with one byte of a 4-byte key, chosen by the byte's position in
//! the frame payload modulo 4. [`apply_mask`] works a machine word at a time and takes the position
//! of `buf[0]` within the payload (`offset`), so a payload that arrives in pieces is unmasked piece by
//! piece without being buffered first (the shape of gobwas/ws's `Cipher(payload, mask, offset)`).

/// Masking keys for a client's frames, one per frame (RFC 6455 §5.3), from a seeded
/// xorshift64* generator.
///
/// RFC 6455 §10.3 asks keys to be unpredictable so that script in a browser cannot choose the
/// bytes an intermediary sees. A charge point runs no foreign script; a seed from the
/// application's RNG per connection is enough, and the generator costs 8 bytes and no
/// allocation.
///
/// ```
/// use ocpp_frame::mask::MaskKeys;
/// let mut keys = MaskKeys::new(42);
/// let (a, b) = (keys.next_key(), keys.next_key());
/// assert_ne!(a, b);
/// assert_eq!(MaskKeys::new(42).next_key(), a); // the same seed gives the same keys
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaskKeys {
    state: u64,
}

impl MaskKeys {
    /// A generator seeded with `seed` (any value; zero is mapped to a non-zero state).
    pub const fn new(seed: u64) -> Self {
        // xorshift needs a non-zero state.
        MaskKeys { state: seed | 1 }
    }

    /// The next key.
    pub fn next_key(&mut self) -> [u8; 4] {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        let key = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
        ((key >> 32) as u32).to_ne_bytes()
    }
}

/// XORs `buf` with the masking `key`, where `buf[0]` is byte number `offset` of the frame payload.
///
/// Masking is its own inverse: the same call masks and unmasks. Works 16 bytes at a time, then a byte
/// at a time for the tail.
///
/// ```
/// use ocpp_frame::mask::apply_mask;
/// // RFC 6455 §5.7: "Hello" masked with 37 fa 21 3d.
/// let key = [0x37, 0xfa, 0x21, 0x3d];
/// let mut payload = *b"Hello";
/// apply_mask(&mut payload, key, 0);
/// assert_eq!(payload, [0x7f, 0x9f, 0x4d, 0x51, 0x58]);
/// // The same payload unmasked in two pieces.
/// let (head, tail) = payload.split_at_mut(2);
/// apply_mask(head, key, 0);
/// apply_mask(tail, key, 2);
/// assert_eq!(&payload, b"Hello");
/// ```
#[inline]
pub fn apply_mask(buf: &mut [u8], key: [u8; 4], offset: usize) {
    // Rotate the key so that rotated[0] applies to buf[0].
    let shift = offset % 4;
    let rotated = [
        key[shift],
        key[(shift + 1) % 4],
        key[(shift + 2) % 4],
        key[(shift + 3) % 4],
    ];
    let word = u32::from_ne_bytes(rotated);
    let wide = u128::from(word) * 0x0000_0001_0000_0001_0000_0001_0000_0001;
    // `wide` repeats `rotated` in memory order on either endianness because `from_ne_bytes` and
    // `to_ne_bytes` are used on both sides of the XOR.
    let mut chunks = buf.chunks_exact_mut(16);
    for chunk in &mut chunks {
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(chunk);
        let masked = u128::from_ne_bytes(bytes) ^ wide;
        chunk.copy_from_slice(&masked.to_ne_bytes());
    }
    // The tail starts at a multiple of 16, hence of 4: its key index starts at rotated[0].
    for (i, byte) in chunks.into_remainder().iter_mut().enumerate() {
        *byte ^= rotated[i % 4];
    }
}

/// The reference implementation: one byte at a time.
///
/// Kept public for differential tests and for the benchmark that shows what [`apply_mask`] gains.
///
/// ```
/// use ocpp_frame::mask::{apply_mask, apply_mask_bytewise};
/// let mut a = [1u8; 37];
/// let mut b = a;
/// apply_mask(&mut a, [1, 2, 3, 4], 3);
/// apply_mask_bytewise(&mut b, [1, 2, 3, 4], 3);
/// assert_eq!(a, b);
/// ```
pub fn apply_mask_bytewise(buf: &mut [u8], key: [u8; 4], offset: usize) {
    for (i, byte) in buf.iter_mut().enumerate() {
        *byte ^= key[(offset + i) % 4];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn word_matches_bytewise(data in proptest::collection::vec(any::<u8>(), 0..300),
                                 key in any::<[u8; 4]>(), offset in 0usize..64) {
            let mut fast = data.clone();
            let mut slow = data.clone();
            apply_mask(&mut fast, key, offset);
            apply_mask_bytewise(&mut slow, key, offset);
            prop_assert_eq!(&fast, &slow);
            apply_mask(&mut fast, key, offset);
            prop_assert_eq!(&fast, &data);
        }

        #[test]
        fn pieces_match_whole(data in proptest::collection::vec(any::<u8>(), 0..300),
                              key in any::<[u8; 4]>(), cut in 0usize..300) {
            let cut = cut.min(data.len());
            let mut whole = data.clone();
            apply_mask(&mut whole, key, 0);
            let mut pieces = data.clone();
            let (a, b) = pieces.split_at_mut(cut);
            apply_mask(a, key, 0);
            apply_mask(b, key, cut);
            prop_assert_eq!(whole, pieces);
        }
    }
}
