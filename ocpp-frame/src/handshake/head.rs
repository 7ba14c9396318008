//! Incremental framing of an HTTP head (RFC 7230 §3): finds the blank line that ends it, however
//! the bytes are split, buffering only the unfinished head and never more than the cap.
//!
//! The bytes are scanned once each, so feeding a head one byte at a time costs the same as
//! feeding it whole; `httparse` runs once, on the complete head. That also makes the outcome
//! independent of how the input was split.

use alloc::vec::Vec;

/// Where the scan stands in the head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scan {
    /// Only CR / LF so far: empty lines before the start line, which RFC 7230 §3.5 lets a
    /// recipient ignore (`httparse` skips them). A blank line here does not end the head.
    Leading,
    /// Inside a line.
    Line,
    /// Just after a LF.
    Lf,
    /// After a LF and a CR.
    LfCr,
}

impl Scan {
    /// The state after byte `b`; `None` when `b` ends the head (LF, optional CR, LF: httparse,
    /// like RFC 7230 §3.5, accepts a bare LF as line end).
    fn step(self, b: u8) -> Option<Scan> {
        Some(match (self, b) {
            (Scan::Leading, b'\r' | b'\n') => Scan::Leading,
            (Scan::Lf | Scan::LfCr, b'\n') => return None,
            (Scan::Lf, b'\r') => Scan::LfCr,
            (_, b'\n') => Scan::Lf,
            _ => Scan::Line,
        })
    }
}

/// What a call to [`HeadReader::push`] found.
#[derive(Debug)]
pub(crate) enum HeadRead {
    /// Not complete; the whole input was buffered.
    NeedMore,
    /// Complete: the head's bytes, and how many bytes of this input they took.
    Complete { head: Vec<u8>, consumed: usize },
}

/// Why [`HeadReader::push`] stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeadReadError {
    /// The head would exceed the byte cap; `in_first_line`: before the first line (the request
    /// or status line) ended.
    TooLarge { in_first_line: bool },
    /// The head already completed or failed; the reader takes no more input.
    Finished,
}

/// Accumulates one HTTP head.
#[derive(Debug)]
pub(crate) struct HeadReader {
    buf: Vec<u8>,
    scan: Scan,
    finished: bool,
}

impl HeadReader {
    pub(crate) const fn new() -> Self {
        HeadReader {
            buf: Vec::new(),
            scan: Scan::Leading,
            finished: false,
        }
    }

    /// Bytes buffered from earlier inputs (never more than the cap; zero once finished).
    pub(crate) fn buffered_len(&self) -> usize {
        self.buf.len()
    }

    /// Whether the head completed or failed.
    pub(crate) fn is_finished(&self) -> bool {
        self.finished
    }

    /// Marks the reader finished and drops its buffer.
    fn finish(&mut self) {
        self.finished = true;
        self.buf = Vec::new();
    }

    /// Feeds `data`; `limit` caps the head's total bytes.
    pub(crate) fn push(&mut self, data: &[u8], limit: usize) -> Result<HeadRead, HeadReadError> {
        if self.finished {
            return Err(HeadReadError::Finished);
        }
        let room = limit.saturating_sub(self.buf.len());
        let window = data.get(..room).unwrap_or(data);
        let mut scan = self.scan;
        for (at, &b) in window.iter().enumerate() {
            match scan.step(b) {
                Some(next) => scan = next,
                None => {
                    let consumed = at + 1;
                    let mut head = core::mem::take(&mut self.buf);
                    head.extend_from_slice(window.get(..consumed).unwrap_or(window));
                    self.finish();
                    return Ok(HeadRead::Complete { head, consumed });
                }
            }
        }
        if data.len() > room {
            let in_first_line = !self
                .buf
                .iter()
                .chain(window)
                .skip_while(|&&b| b == b'\r' || b == b'\n')
                .any(|&b| b == b'\n');
            self.finish();
            return Err(HeadReadError::TooLarge { in_first_line });
        }
        self.scan = scan;
        self.buf.extend_from_slice(data);
        Ok(HeadRead::NeedMore)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete(r: Result<HeadRead, HeadReadError>) -> (Vec<u8>, usize) {
        match r {
            Ok(HeadRead::Complete { head, consumed }) => (head, consumed),
            other => panic!("not complete: {other:?}"),
        }
    }

    #[test]
    fn finds_crlf_and_bare_lf_blank_lines() {
        for (input, len) in [
            (&b"GET / HTTP/1.1\r\nA: b\r\n\r\nFRAME"[..], 24),
            (b"GET / HTTP/1.1\nA: b\n\nFRAME", 21),
            (b"\r\n\r\nGET / HTTP/1.1\r\n\r\n", 22),
        ] {
            let mut reader = HeadReader::new();
            let (head, consumed) = complete(reader.push(input, 1024));
            assert_eq!(consumed, len);
            assert_eq!(head, &input[..len]);
            assert_eq!(reader.buffered_len(), 0);
            assert_eq!(
                reader.push(b"x", 1024).unwrap_err(),
                HeadReadError::Finished
            );
        }
    }

    #[test]
    fn split_input_and_cap() {
        let input = b"GET / HTTP/1.1\r\nA: b\r\n\r\n";
        let mut reader = HeadReader::new();
        for &b in &input[..input.len() - 1] {
            assert!(matches!(
                reader.push(&[b], input.len()),
                Ok(HeadRead::NeedMore)
            ));
        }
        assert_eq!(reader.buffered_len(), input.len() - 1);
        let (head, consumed) = complete(reader.push(b"\nrest", input.len()));
        assert_eq!((head.as_slice(), consumed), (&input[..], 1));

        // One byte short of room for the blank line.
        let mut reader = HeadReader::new();
        assert_eq!(
            reader.push(input, input.len() - 1).unwrap_err(),
            HeadReadError::TooLarge {
                in_first_line: false
            }
        );
        let mut reader = HeadReader::new();
        assert_eq!(
            reader.push(b"\r\nGET /aaaaaaaaaa", 8).unwrap_err(),
            HeadReadError::TooLarge {
                in_first_line: true
            }
        );
        assert_eq!(reader.buffered_len(), 0);
    }
}
