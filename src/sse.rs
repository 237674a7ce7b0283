//! Incremental, bounded Server-Sent Events decoder (the `data:` part of the
//! WHATWG EventSource format), as the chat-completions stream uses it.
//!
//! Owns: splitting a byte stream into events (lines end at LF, CRLF or a
//! bare CR). Bytes go in with
//! [`SseDecoder::feed`]; complete events' data come out of
//! [`SseDecoder::next_event`] without copying more than once. Comments
//! (`:`), `event:`, `id:` and `retry:` lines are ignored. A line longer than
//! [`MAX_LINE`] is an error rather than unbounded memory.

use bytes::{Buf, BytesMut};

/// Longest SSE line accepted (32 MiB): several-MB chunks pass, a stream
/// without newlines does not eat the machine.
pub const MAX_LINE: usize = 32 * 1024 * 1024;

/// Decoding failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// A line (or an event's data) grew past the given limit in bytes.
    #[error("SSE line longer than {0} bytes")]
    TooLong(usize),
}

/// See the module doc.
#[derive(Debug, Default)]
pub struct SseDecoder {
    buf: BytesMut,
    /// Data of the event being assembled (`data:` lines joined by `\n`).
    data: Vec<u8>,
    has_data: bool,
    /// Bytes of `buf` already scanned for a newline.
    scanned: usize,
    /// The data of the last returned event is still in `data`; clear it first.
    returned: bool,
    /// No more bytes will come: a trailing CR ends its line.
    at_eof: bool,
}

impl SseDecoder {
    /// An empty decoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends received bytes.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The data of the next complete event, if the buffer holds one.
    pub fn next_event(&mut self) -> Result<Option<&[u8]>, SseError> {
        if self.returned {
            self.data.clear();
            self.has_data = false;
            self.returned = false;
        }
        loop {
            // A line ends at LF, CRLF or a bare CR (the EventSource grammar).
            let Some(pos) = memchr::memchr2(b'\n', b'\r', &self.buf[self.scanned..]) else {
                self.scanned = self.buf.len();
                if self.buf.len() > MAX_LINE {
                    return Err(SseError::TooLong(MAX_LINE));
                }
                return Ok(None);
            };
            let end = self.scanned + pos;
            let consumed = if self.buf[end] == b'\n' {
                end + 1
            } else if end + 1 < self.buf.len() {
                if self.buf[end + 1] == b'\n' { end + 2 } else { end + 1 }
            } else if self.at_eof {
                end + 1
            } else {
                // A CR as the last byte: wait to see whether an LF follows.
                self.scanned = end;
                return Ok(None);
            };
            self.scanned = 0;
            let line = &self.buf[..end];
            if line.is_empty() {
                self.buf.advance(consumed);
                if self.has_data {
                    self.returned = true;
                    return Ok(Some(&self.data));
                }
                continue;
            }
            if let Some(rest) = line.strip_prefix(b"data:") {
                let rest = rest.strip_prefix(b" ").unwrap_or(rest);
                if self.has_data {
                    self.data.push(b'\n');
                }
                if self.data.len() + rest.len() > MAX_LINE {
                    return Err(SseError::TooLong(MAX_LINE));
                }
                self.data.extend_from_slice(rest);
                self.has_data = true;
            }
            self.buf.advance(consumed);
        }
    }

    /// [`SseDecoder::next_event`] without the borrow: true when an event is
    /// ready, whose data [`SseDecoder::current`] then gives.
    pub fn ready(&mut self) -> Result<bool, SseError> {
        self.next_event().map(|e| e.is_some())
    }

    /// The data of the event the last [`SseDecoder::ready`] (or
    /// [`SseDecoder::end_of_input`]) found.
    pub fn current(&self) -> &[u8] {
        if self.returned { &self.data } else { &[] }
    }

    /// At end of input: the pending event (data without its closing blank
    /// line, or a last line without newline), if any.
    pub fn end_of_input(&mut self) -> Result<Option<&[u8]>, SseError> {
        if self.returned {
            self.data.clear();
            self.has_data = false;
            self.returned = false;
        }
        self.at_eof = true;
        if !self.buf.is_empty() {
            self.buf.extend_from_slice(b"\n");
            self.scanned = 0;
        }
        self.buf.extend_from_slice(b"\n");
        self.next_event()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[&[u8]]) -> Vec<String> {
        let mut d = SseDecoder::new();
        let mut out = vec![];
        for part in input {
            d.feed(part);
            while let Some(ev) = d.next_event().unwrap() {
                out.push(String::from_utf8(ev.to_vec()).unwrap());
            }
        }
        if let Some(ev) = d.end_of_input().unwrap() {
            out.push(String::from_utf8(ev.to_vec()).unwrap());
        }
        out
    }

    #[test]
    fn splits_across_feeds_and_crlf() {
        assert_eq!(all(&[b"data: {\"a\"", b":1}\r\n\r\n: comment\n\ndata:x\ndata: y\n\n"]), vec!["{\"a\":1}", "x\ny"]);
    }

    #[test]
    fn a_bare_cr_ends_a_line_even_split_across_feeds() {
        assert_eq!(all(&[b"data: a\r\rdata: b\r", b"\ndata: c\r", b"\r"]), vec!["a", "b\nc"]);
        assert_eq!(all(&[b"data: x\r"]), vec!["x"]);
        // Byte by byte, every ending gives the same events.
        let input = b"data: 1\r\n\r\ndata: 2\r\rdata: 3\n\n";
        let parts: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(all(&parts), vec!["1", "2", "3"]);
    }

    #[test]
    fn last_event_without_blank_line_is_flushed() {
        assert_eq!(all(&[b"data: [DONE]"]), vec!["[DONE]"]);
        assert_eq!(all(&[b"data: 1\n"]), vec!["1"]);
        assert!(all(&[b"event: x\n"]).is_empty());
    }
}
