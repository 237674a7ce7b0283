//! How the binary's front-ends end: run a future on a single-threaded
//! runtime, flush the log and the spans, and exit with its code.

use pirn::logging;

/// Runs `fut` on a single-threaded runtime, then exits with its code without
/// waiting for blocking threads (a stdin read may still be parked in one).
/// The log writer is flushed first (unless stderr would block).
pub(super) fn block_on_and_exit(fut: impl std::future::Future<Output = i32>, log: Option<logging::LogGuard>) -> ! {
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!("cannot start the async runtime: {e}");
            std::process::exit(70);
        }
    };
    let code = rt.block_on(fut);
    rt.shutdown_background();
    // Queued spans get a short flush; an unreachable collector cannot hold the exit.
    pirn::telemetry::shutdown(std::time::Duration::from_secs(2));
    exit_with(code, log)
}

/// Flushes the log writer, then exits with `code`.
pub(super) fn exit_with(code: i32, log: Option<logging::LogGuard>) -> ! {
    if let Some(log) = log {
        log.finish();
    }
    std::process::exit(code);
}
