//! The one writer of stdout when stdout is a pipe or a socket (the way an
//! orchestrator runs pirn): a task on the async runtime writing with
//! non-blocking `write(2)` through tokio's `AsyncFd`.
//!
//! Owns: the same framing and numbering as [`super::writer`] (shared through
//! `encode_line`), batching (every line queued when the task runs goes out in
//! one write), and putting stdout back into blocking mode when it ends.
//!
//! Why: on a small machine a separate writer thread competes with the
//! runtime thread for a core and pays a wake-up per batch; on the runtime
//! thread the lines of one network read leave in one write as soon as the
//! agent awaits its next read. A full pipe suspends this task, not the
//! runtime, so cancellation and status keep working while the reader lags.
//! For terminals and files (where flipping `O_NONBLOCK` on a shared
//! description could surprise other processes) the thread writer is used.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use tokio::io::unix::AsyncFd;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::tap::{JournalSlot, Tap};
use super::writer::encode_line;
use crate::session::{OUTBOX_CAPACITY, Outbox};
use crate::wire::{OutgoingMessage, Sequencer};

/// Most bytes gathered into one write.
const BATCH_BYTES: usize = 1 << 20;

/// A running pipe writer.
pub struct PipeWriter {
    pub outbox: Outbox,
    /// Cancelled when a write fails (EPIPE: the reader went away).
    pub stdout_closed: CancellationToken,
    task: JoinHandle<Option<io::Error>>,
    /// stdout's file status flags before `O_NONBLOCK` was added.
    old_flags: libc::c_int,
}

impl PipeWriter {
    /// Starts the writer task when fd 1 is a pipe or a socket; `None`
    /// otherwise (or when it cannot be set up), and the caller uses the thread
    /// writer.
    pub fn spawn_if_pipe(journal: JournalSlot) -> Option<PipeWriter> {
        let (fd, old_flags) = nonblocking_stdout()?;
        let (tx, rx) = mpsc::channel(OUTBOX_CAPACITY);
        let stdout_closed = CancellationToken::new();
        let task = tokio::spawn(write_loop(rx, fd, stdout_closed.clone(), Tap::new(journal)));
        Some(PipeWriter { outbox: tx, stdout_closed, task, old_flags })
    }

    /// Waits until everything queued is written (every outbox clone must be
    /// dropped first), restores stdout's flags, and returns the write error
    /// that stopped it, if any.
    pub async fn close(self) -> Option<io::Error> {
        drop(self.outbox);
        let error = self.task.await.unwrap_or(None);
        // SAFETY: restoring fd 1's original flags.
        unsafe { libc::fcntl(1, libc::F_SETFL, self.old_flags) };
        error
    }
}

/// fd 1 as a non-blocking descriptor registered with the runtime, when it
/// is a pipe or a socket (the way orchestrators and ACP clients run pirn),
/// with its file status flags from before (restore them on fd 1 when done);
/// `None` otherwise, or when it cannot be set up.
pub(crate) fn nonblocking_stdout() -> Option<(AsyncFd<File>, libc::c_int)> {
    // SAFETY: fstat on fd 1 with a properly sized, zeroed buffer.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(1, &mut st) } != 0 {
        return None;
    }
    let kind = st.st_mode & libc::S_IFMT;
    if kind != libc::S_IFIFO && kind != libc::S_IFSOCK {
        return None;
    }
    // SAFETY: fcntl on fd 1; F_DUPFD_CLOEXEC returns a new descriptor we
    // then own.
    let dup = unsafe { libc::fcntl(1, libc::F_DUPFD_CLOEXEC, 3) };
    if dup < 0 {
        return None;
    }
    // SAFETY: `dup` is a fresh descriptor owned by nobody else.
    let file = File::from(unsafe { OwnedFd::from_raw_fd(dup) });
    // SAFETY: plain fcntl flag calls on a descriptor we hold.
    let old_flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
    if old_flags < 0 || unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETFL, old_flags | libc::O_NONBLOCK) } < 0 {
        return None;
    }
    // SAFETY: `file` owns its descriptor, which stays open and unchanged
    // for as long as the AsyncFd (which owns `file`) lives.
    match unsafe { AsyncFd::register_with_interest(file, tokio::io::Interest::WRITABLE) } {
        Ok(fd) => Some((fd, old_flags)),
        Err(_) => {
            // SAFETY: restoring the flags read above.
            unsafe { libc::fcntl(1, libc::F_SETFL, old_flags) };
            None
        }
    }
}

async fn write_loop(
    mut rx: mpsc::Receiver<OutgoingMessage>,
    fd: AsyncFd<File>,
    stdout_closed: CancellationToken,
    mut tap: Tap,
) -> Option<io::Error> {
    let mut seq = Sequencer::default();
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    while let Some(first) = rx.recv().await {
        buf.clear();
        let mut next = Some(first);
        while let Some(mut m) = next.take() {
            tap.room().await;
            let start = buf.len();
            encode_line(&mut seq, &mut m, &mut buf);
            let json = buf[start..].strip_suffix(b"\n").unwrap_or(&buf[start..]);
            // A result leaves only once it is logged durably (it ends the
            // batch), or says it is not.
            if let Some(d) = tap.line(&m, json).1 {
                if let Err(cause) = super::tap::wait(d).await
                    && let Some(mut event) = tap.not_durable(&mut m, &cause)
                {
                    buf.truncate(start);
                    encode_line(&mut seq, &mut event, &mut buf);
                    let json = buf[start..].strip_suffix(b"\n").unwrap_or(&buf[start..]);
                    tap.line(&event, json);
                    super::writer::reencode(&m, &mut buf);
                }
                break;
            }
            if buf.len() < BATCH_BYTES {
                next = rx.try_recv().ok();
            }
        }
        if let Err(e) = write_all(&fd, &buf).await {
            tracing::debug!("stdout closed: {e}");
            stdout_closed.cancel();
            return Some(e);
        }
    }
    None
}

async fn write_all(fd: &AsyncFd<File>, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        let mut ready = fd.writable().await?;
        let attempt = ready.try_io(|f| {
            let mut file: &File = f.get_ref();
            file.write(data)
        });
        match attempt {
            Ok(Ok(0)) => return Err(io::Error::new(io::ErrorKind::WriteZero, "stdout accepted no bytes")),
            Ok(Ok(n)) => data = &data[n..],
            Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
            Ok(Err(e)) => return Err(e),
            Err(_would_block) => {}
        }
    }
    Ok(())
}
