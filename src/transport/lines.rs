//! Newline-delimited input, framed with a bound: what the JSONL worker and
//! Claude Code's stream-json surface both read from stdin. No I/O here: the
//! caller reads into [`LineFramer::buffer`] and takes [`LineFrame`]s out.

use bytes::BytesMut;
use tokio_util::codec::{Decoder, LinesCodec, LinesCodecError};

use crate::wire::MAX_LINE_BYTES;

/// How much the buffer grows before each read, in bytes.
const READ_CHUNK: usize = 64 * 1024;

/// One item of the input.
#[derive(Debug, PartialEq, Eq)]
pub enum LineFrame {
    /// A complete line, without its `\n` (or `\r\n`).
    Line(String),
    /// A line longer than [`MAX_LINE_BYTES`]: discarded up to its end;
    /// the lines after it are read as usual.
    TooLong,
    /// A line that is not UTF-8: discarded; the text says why.
    NotUtf8(String),
}

/// Frames lines of at most [`MAX_LINE_BYTES`] out of bytes as they arrive,
/// so a line without an end never holds more than that in memory.
pub struct LineFramer {
    codec: LinesCodec,
    buf: BytesMut,
}

impl Default for LineFramer {
    fn default() -> Self {
        Self { codec: LinesCodec::new_with_max_length(MAX_LINE_BYTES), buf: BytesMut::with_capacity(READ_CHUNK) }
    }
}

impl LineFramer {
    /// The buffer to read into (for `AsyncReadExt::read_buf`), with room
    /// for another chunk.
    pub fn buffer(&mut self) -> &mut BytesMut {
        self.buf.reserve(READ_CHUNK);
        &mut self.buf
    }

    /// The next frame of what was read so far; `None` when more input is
    /// needed. With `eof` set, a last line without `\n` is a line too.
    pub fn next_frame(&mut self, eof: bool) -> Option<LineFrame> {
        let item = if eof { self.codec.decode_eof(&mut self.buf) } else { self.codec.decode(&mut self.buf) };
        match item {
            Ok(line) => line.map(LineFrame::Line),
            Err(LinesCodecError::MaxLineLengthExceeded) => Some(LineFrame::TooLong),
            Err(LinesCodecError::Io(e)) => Some(LineFrame::NotUtf8(e.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_a_long_line_and_bad_utf8_each_come_out_as_frames() {
        let mut f = LineFramer::default();
        f.buffer().extend_from_slice(b"one\n");
        f.buffer().extend_from_slice(&vec![b'x'; MAX_LINE_BYTES + 1]);
        f.buffer().extend_from_slice(b"\n\xff\xfe\ntwo");
        assert_eq!(f.next_frame(false), Some(LineFrame::Line("one".into())));
        assert_eq!(f.next_frame(false), Some(LineFrame::TooLong));
        assert!(matches!(f.next_frame(false), Some(LineFrame::NotUtf8(_))));
        assert_eq!(f.next_frame(false), None, "no end yet");
        assert_eq!(f.next_frame(true), Some(LineFrame::Line("two".into())));
        assert_eq!(f.next_frame(true), None);
    }
}
