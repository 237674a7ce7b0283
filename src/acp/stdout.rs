//! ACP's transport on pirn's own stdio: stdout written with non-blocking
//! `write(2)` on the runtime thread (as the JSONL worker's pipe writer
//! does), stdin read as the JSONL worker reads it.
//!
//! Why not the SDK's `Stdio`: it moves every line to and from a thread of
//! the `blocking` crate's pool; each `session/update` then waits for a
//! thread handoff, which measured about 0.07 ms per message (scripts/bench
//! section 13). Used when stdout is a pipe or a socket (how ACP clients run
//! agents); otherwise the SDK's `Stdio` is used.

use std::fs::File;
use std::io::Write;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::unix::AsyncFd;

use crate::transport::pipe_writer::nonblocking_stdout;

/// fd 1, non-blocking, as a `futures` byte sink. Restores fd 1's flags
/// when dropped.
pub struct PipeOut {
    fd: AsyncFd<File>,
    old_flags: libc::c_int,
}

impl PipeOut {
    /// `None` unless stdout is a pipe or a socket that could be set up.
    pub fn new() -> Option<PipeOut> {
        nonblocking_stdout().map(|(fd, old_flags)| PipeOut { fd, old_flags })
    }
}

impl futures_util::io::AsyncWrite for PipeOut {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        loop {
            let mut guard = ready!(self.fd.poll_write_ready(cx))?;
            match guard.try_io(|f| f.get_ref().write(buf)) {
                Ok(written) => return Poll::Ready(written),
                Err(_would_block) => continue,
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        // Nothing is buffered here: every byte accepted was written.
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

impl Drop for PipeOut {
    fn drop(&mut self) {
        // SAFETY: restoring fd 1's original file status flags.
        unsafe { libc::fcntl(1, libc::F_SETFL, self.old_flags) };
    }
}
