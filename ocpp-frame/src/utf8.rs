//! Incremental, fail-fast UTF-8 validation of text messages (RFC 6455 §5.6, §8.1).
//!
//! A text message may be split across frames, and a frame across reads, anywhere, even inside a
//! multi-byte character. [`Utf8Validator`] checks each piece as it arrives and carries at most 3
//! bytes of an unfinished character, so an invalid byte is reported as soon as it is seen, not when
//! the message ends (the Autobahn suite's "fail fast" cases 6.4.x).

use core::str;

/// Validates a UTF-8 stream fed in pieces.
///
/// ```
/// use ocpp_frame::Utf8Validator;
/// let euro = "€".as_bytes(); // e2 82 ac
/// let mut v = Utf8Validator::new();
/// v.feed(&euro[..1]).unwrap();
/// v.feed(&euro[1..]).unwrap();
/// assert!(v.finish().is_ok());
/// // An impossible second byte fails at once, before the character could end.
/// let mut v = Utf8Validator::new();
/// assert!(v.feed(&[0xe2, 0x28]).is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Utf8Validator {
    pending: [u8; 4],
    pending_len: u8,
}

/// The input is not valid UTF-8 (or ends inside a character).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("invalid UTF-8")]
pub struct InvalidUtf8;

impl Utf8Validator {
    /// A validator at the start of a stream.
    pub const fn new() -> Self {
        Utf8Validator {
            pending: [0; 4],
            pending_len: 0,
        }
    }

    /// Whether a character is unfinished (1 to 3 bytes carried).
    pub const fn is_pending(&self) -> bool {
        self.pending_len != 0
    }

    /// Validates the next piece of the stream.
    ///
    /// Fails as soon as the bytes seen so far cannot start valid UTF-8, even if the character they
    /// belong to is not finished.
    pub fn feed(&mut self, mut input: &[u8]) -> Result<(), InvalidUtf8> {
        if self.pending_len != 0 {
            let have = usize::from(self.pending_len);
            let need = sequence_len(self.pending[0]);
            let take = (need - have).min(input.len());
            self.pending[have..have + take].copy_from_slice(&input[..take]);
            let filled = have + take;
            match str::from_utf8(&self.pending[..filled]) {
                Ok(_) => {
                    self.pending_len = 0;
                    input = &input[take..];
                }
                // Still a valid prefix: `take` consumed all of `input`.
                Err(e) if e.error_len().is_none() => {
                    self.pending_len = filled as u8;
                    return Ok(());
                }
                Err(_) => return Err(InvalidUtf8),
            }
        }
        match str::from_utf8(input) {
            Ok(_) => Ok(()),
            Err(e) => match e.error_len() {
                Some(_) => Err(InvalidUtf8),
                None => {
                    // A valid prefix of a character (1 to 3 bytes) ends the input.
                    let rest = &input[e.valid_up_to()..];
                    self.pending[..rest.len()].copy_from_slice(rest);
                    self.pending_len = rest.len() as u8;
                    Ok(())
                }
            },
        }
    }

    /// Ends the stream: fails if it stopped inside a character. Resets the validator.
    pub fn finish(&mut self) -> Result<(), InvalidUtf8> {
        let pending = self.pending_len != 0;
        *self = Utf8Validator::new();
        if pending {
            Err(InvalidUtf8)
        } else {
            Ok(())
        }
    }
}

/// The length of the sequence a lead byte starts; only called on bytes `from_utf8` accepted as a
/// lead of an unfinished sequence (`0xC2..=0xF4`), so 2 to 4.
fn sequence_len(lead: u8) -> usize {
    match lead {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        _ => 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn feed_split(bytes: &[u8], cuts: &[usize]) -> Result<(), InvalidUtf8> {
        let mut v = Utf8Validator::new();
        let mut start = 0;
        for &cut in cuts {
            let cut = cut.clamp(start, bytes.len());
            v.feed(&bytes[start..cut])?;
            start = cut;
        }
        v.feed(&bytes[start..])?;
        v.finish()
    }

    #[test]
    fn carries_at_most_three_bytes() {
        let mut v = Utf8Validator::new();
        v.feed(&[0xF0, 0x9F, 0x98]).unwrap();
        assert_eq!(v.pending_len, 3);
        v.feed(&[0x80]).unwrap();
        assert!(!v.is_pending());
        assert!(v.finish().is_ok());
    }

    #[test]
    fn fails_fast_on_impossible_prefix() {
        // 0xF4 0x90 would be above U+10FFFF: invalid before the 4-byte character ends.
        let mut v = Utf8Validator::new();
        assert!(v.feed(&[0xF4]).is_ok());
        assert_eq!(v.feed(&[0x90]), Err(InvalidUtf8));
        // Surrogates (ED A0..) fail on the second byte too.
        let mut v = Utf8Validator::new();
        assert!(v.feed(&[0xED]).is_ok());
        assert_eq!(v.feed(&[0xA0]), Err(InvalidUtf8));
    }

    #[test]
    fn unfinished_character_fails_at_finish() {
        let mut v = Utf8Validator::new();
        v.feed(&[0xE2, 0x82]).unwrap();
        assert_eq!(v.finish(), Err(InvalidUtf8));
    }

    proptest! {
        #[test]
        fn any_split_agrees_with_std(bytes in proptest::collection::vec(any::<u8>(), 0..64),
                                     cuts in proptest::collection::vec(0usize..64, 0..6)) {
            let mut cuts = cuts;
            cuts.sort_unstable();
            let expected = str::from_utf8(&bytes).is_ok();
            prop_assert_eq!(feed_split(&bytes, &cuts).is_ok(), expected);
        }

        #[test]
        fn valid_text_any_split(text in "\\PC{0,40}", cuts in proptest::collection::vec(0usize..200, 0..8)) {
            let mut cuts = cuts;
            cuts.sort_unstable();
            prop_assert!(feed_split(text.as_bytes(), &cuts).is_ok());
        }
    }
}
