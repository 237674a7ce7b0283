//! A command's output while it runs, for the client (0.3.0 `tool_output`
//! events): bounded, rate-limited pieces with their byte offsets.
//!
//! Owns [`Live`], which `bash` feeds every byte it reads and which hands
//! [`OutputDelta`]s to the send through a channel the agent drains
//! ([`ToolContext::live`](super::ToolContext)). At most one piece per
//! [`EVERY`], each at most [`MAX_PIECE`] bytes: when more arrived in
//! between, the piece is the latest bytes and its `offset` says how many
//! came before it, so a client sees the gap. The channel is never waited
//! on: a client too slow to take a piece loses it, never the command its
//! time. The tool result still holds the whole output (head and tail), as
//! before; the pieces are a view, not the record.

use std::time::{Duration, Instant};

use tokio::sync::mpsc::Sender;

/// Shortest time between two pieces.
pub const EVERY: Duration = Duration::from_millis(250);

/// Most bytes of one piece.
pub const MAX_PIECE: usize = 8 * 1024;

/// One piece of a command's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputDelta {
    /// Bytes of output the command wrote before this piece.
    pub offset: u64,
    /// The piece (UTF-8; a character cut by the piece's end waits for the
    /// next one, bytes that are not UTF-8 become U+FFFD, so `text.len()`
    /// may differ from the raw bytes `offset` counts).
    pub text: String,
}

/// See the module doc.
#[derive(Debug)]
pub struct Live {
    tx: Sender<OutputDelta>,
    /// Bytes read so far.
    read: u64,
    /// The bytes not yet sent (at most [`MAX_PIECE`], the latest) and the
    /// offset of the first of them.
    pending: Vec<u8>,
    pending_at: u64,
    last: Option<Instant>,
}

impl Live {
    /// Pieces go to `tx`.
    pub fn new(tx: Sender<OutputDelta>) -> Live {
        Live { tx, read: 0, pending: Vec::new(), pending_at: 0, last: None }
    }

    /// Takes bytes the command wrote; sends a piece when one is due.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.pending.is_empty() {
            self.pending_at = self.read;
        }
        self.read += bytes.len() as u64;
        self.pending.extend_from_slice(bytes);
        if self.pending.len() > MAX_PIECE {
            // The latest bytes, from a character's first byte.
            let mut cut = self.pending.len() - MAX_PIECE;
            while cut < self.pending.len()
                && self.pending[cut] & 0xC0 == 0x80
                && cut < self.pending.len() - MAX_PIECE + 3
            {
                cut += 1;
            }
            self.pending.drain(..cut);
            self.pending_at += cut as u64;
        }
        if self.due() {
            self.flush();
        }
    }

    /// True when bytes wait and the last piece is at least [`EVERY`] old.
    pub fn due(&self) -> bool {
        !self.pending.is_empty() && self.last.is_none_or(|t| t.elapsed() >= EVERY)
    }

    /// True when bytes wait.
    pub fn waiting(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Sends what waits now (a character cut at the end stays for later).
    pub fn flush(&mut self) {
        let valid = self.pending.len() - incomplete_tail(&self.pending);
        if valid == 0 {
            return;
        }
        let bytes: Vec<u8> = self.pending.drain(..valid).collect();
        let delta = OutputDelta { offset: self.pending_at, text: String::from_utf8_lossy(&bytes).into_owned() };
        self.pending_at += valid as u64;
        self.last = Some(Instant::now());
        // Never waited on: a full channel drops the piece.
        let _ = self.tx.try_send(delta);
    }
}

/// Bytes at the end of `bytes` that begin a UTF-8 character they do not
/// finish (0 to 3): they wait for the next piece.
fn incomplete_tail(bytes: &[u8]) -> usize {
    for back in 1..=3.min(bytes.len()) {
        let b = bytes[bytes.len() - back];
        if b & 0xC0 != 0x80 {
            // A lead byte: how long its character is.
            let len = match b {
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                0xF0..=0xF7 => 4,
                _ => 1,
            };
            return if len > back { back } else { 0 };
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_bounded_keep_their_offsets_and_never_cut_a_character() {
        let (tx, mut rx) = tokio::sync::mpsc::channel(16);
        let mut live = Live::new(tx);
        live.push(b"first\n");
        let a = rx.try_recv().unwrap();
        assert_eq!((a.offset, a.text.as_str()), (0, "first\n"), "the first piece goes at once");
        live.push(&vec![b'x'; 20_000]);
        live.push("é".as_bytes().split_at(1).0);
        assert!(rx.try_recv().is_err(), "not before EVERY");
        std::thread::sleep(EVERY);
        live.flush();
        let b = rx.try_recv().unwrap();
        assert_eq!(b.text.len(), MAX_PIECE - 1, "the latest bytes, without the half character");
        assert_eq!(b.offset, 6 + 20_000 + 1 - MAX_PIECE as u64);
        live.push("é".as_bytes().split_at(1).1);
        live.flush();
        let c = rx.try_recv().unwrap();
        assert_eq!((c.offset, c.text.as_str()), (6 + 20_000, "é"));
        assert_eq!(incomplete_tail("aé".as_bytes()), 0);
        assert_eq!(incomplete_tail(&"a€".as_bytes()[..3]), 2);
        assert_eq!(incomplete_tail(b"a\xff"), 0, "not UTF-8 at all: sent as U+FFFD");
    }
}
