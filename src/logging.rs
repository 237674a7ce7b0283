//! Where pirn's own logs go: stderr, through a lossy non-blocking writer, so
//! logging can never stop the worker.
//!
//! Owns: the log filter (`--log`, else `PIRN_LOG`; an inherited `RUST_LOG`
//! is ignored, since orchestrators set it for themselves), the writer
//! (tracing-appender's `non_blocking` in lossy mode: when stderr is a full
//! pipe nobody reads, lines are dropped and counted, the worker never
//! waits), the panic hook (a panic message goes to the log, never a
//! blocking stderr write), and the report at exit ("N log lines dropped",
//! only if stderr can take it without blocking).

use std::io::Write;
use std::sync::OnceLock;

use tracing_appender::non_blocking::{ErrorCounter, NonBlockingBuilder, WorkerGuard};

/// Log lines buffered for stderr before further lines are dropped.
pub const BUFFERED_LINES: usize = 16_384;

/// Set once logging is on: the panic hook then logs instead of writing.
static LOGGING: OnceLock<()> = OnceLock::new();

/// Keeps the writer thread; [`LogGuard::finish`] flushes it at exit.
pub struct LogGuard {
    guard: WorkerGuard,
    dropped: ErrorCounter,
}

/// Turns logging on when `flag` (from `--log`) or `PIRN_LOG` names a filter
/// (tracing `EnvFilter` syntax, e.g. `debug` or `pirn=trace`), and installs
/// the panic hook either way. Returns the guard to finish at exit.
pub fn init(flag: Option<&str>) -> Option<LogGuard> {
    install_panic_hook();
    let from_env = std::env::var("PIRN_LOG").ok().filter(|v| !v.trim().is_empty());
    let filter = flag.map(str::to_owned).or(from_env)?;
    let (writer, guard) = NonBlockingBuilder::default()
        .lossy(true)
        .buffered_lines_limit(BUFFERED_LINES)
        .thread_name("pirn-log")
        .finish(std::io::stderr());
    let dropped = writer.error_counter();
    let installed = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(writer)
        .with_ansi(false)
        .try_init();
    if installed.is_ok() {
        let _ = LOGGING.set(());
    }
    Some(LogGuard { guard, dropped })
}

impl LogGuard {
    /// Flushes the queued lines and says how many were dropped, but only
    /// when stderr accepts bytes right now: a full pipe nobody reads must not
    /// hold the exit.
    pub fn finish(self) {
        if !stderr_writable() {
            // Lines still queued are lost, as any lossy line is.
            std::mem::forget(self.guard);
            return;
        }
        let dropped = self.dropped.dropped_lines();
        drop(self.guard);
        if dropped > 0 && stderr_writable() {
            let _ = writeln!(std::io::stderr(), "pirn: {dropped} log lines were dropped (stderr was not read)");
        }
    }
}

/// True when a write to stderr would not block now (`poll` with no wait).
fn stderr_writable() -> bool {
    let mut fd = libc::pollfd { fd: 2, events: libc::POLLOUT, revents: 0 };
    // SAFETY: poll on one valid pollfd struct with a zero timeout.
    let n = unsafe { libc::poll(&mut fd, 1, 0) };
    n == 1 && fd.revents & libc::POLLOUT != 0 && fd.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) == 0
}

/// A panic's message goes to the log when logging is on, else to stderr
/// only if that cannot block. (A panic inside a send also ends that send
/// with an `internal_error` result carrying the message.)
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        if LOGGING.get().is_some() {
            tracing::error!("panic: {info}");
        } else if stderr_writable() {
            let _ = writeln!(std::io::stderr(), "pirn: panic: {info}");
        }
    }));
}
