//! A console's rolling output buffer, addressed by a byte cursor.
//!
//! Owns: the last [`BACKLOG_BYTES`] bytes a console printed and the cursor
//! arithmetic of ACECode's `WS /ws/pty/:id?cursor=N`. The cursor counts every
//! byte ever printed (it only grows); the buffer holds bytes
//! `[end - len, end)`. A reader asking for an evicted cursor gets what is
//! left, from the oldest byte kept.

use std::collections::VecDeque;

/// Bytes kept per console (ACECode: 2 MB).
pub const BACKLOG_BYTES: usize = 2 * 1024 * 1024;

/// See the module doc.
#[derive(Debug)]
pub struct Backlog {
    bytes: VecDeque<u8>,
    cap: usize,
    end: u64,
}

impl Backlog {
    pub fn new(cap: usize) -> Backlog {
        Backlog { bytes: VecDeque::new(), cap, end: 0 }
    }

    /// Appends output, evicting the oldest bytes beyond the capacity.
    pub fn push(&mut self, data: &[u8]) {
        self.end += data.len() as u64;
        let data = if data.len() > self.cap { &data[data.len() - self.cap..] } else { data };
        let overflow = (self.bytes.len() + data.len()).saturating_sub(self.cap);
        self.bytes.drain(..overflow);
        self.bytes.extend(data);
    }

    /// Cursor of the next byte to be printed (total bytes printed so far).
    pub fn end(&self) -> u64 {
        self.end
    }

    /// Cursor of the oldest byte kept.
    pub fn start(&self) -> u64 {
        self.end - self.bytes.len() as u64
    }

    /// Up to `max` bytes from `cursor` on (clamped into `[start, end]`), and
    /// the cursor after them.
    pub fn read(&self, cursor: u64, max: usize) -> (Vec<u8>, u64) {
        let from = cursor.clamp(self.start(), self.end);
        let skip = (from - self.start()) as usize;
        let take = max.min(self.bytes.len() - skip);
        let (a, b) = self.bytes.as_slices();
        let mut out = Vec::with_capacity(take);
        if skip < a.len() {
            let n = take.min(a.len() - skip);
            out.extend_from_slice(&a[skip..skip + n]);
            out.extend_from_slice(&b[..take - n]);
        } else {
            out.extend_from_slice(&b[skip - a.len()..skip - a.len() + take]);
        }
        (out, from + take as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::Backlog;

    #[test]
    fn cursors_survive_eviction() {
        let mut b = Backlog::new(8);
        b.push(b"hello");
        assert_eq!(b.read(0, 100), (b"hello".to_vec(), 5));
        assert_eq!(b.read(2, 2), (b"ll".to_vec(), 4));
        b.push(b" world");
        assert_eq!((b.start(), b.end()), (3, 11));
        // An evicted cursor reads from the oldest byte kept.
        assert_eq!(b.read(0, 100), (b"lo world".to_vec(), 11));
        assert_eq!(b.read(9, 100), (b"ld".to_vec(), 11));
        assert_eq!(b.read(50, 100), (Vec::new(), 11));
        // A push larger than the whole buffer keeps its tail.
        b.push(b"0123456789AB");
        assert_eq!(b.read(0, 100), (b"456789AB".to_vec(), 23));
        // Reads across the ring's wrap point.
        for _ in 0..5 {
            b.push(b"xyz");
        }
        let (all, end) = b.read(0, 100);
        assert_eq!((all.as_slice(), end), (&b"yzxyzxyz"[..], 38));
        assert_eq!(b.read(33, 3), (b"yzx".to_vec(), 36));
    }
}
