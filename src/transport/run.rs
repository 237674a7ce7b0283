//! `pirn run`: one send for scripts — init from flags, one send, wait,
//! shut down — printing the events as JSONL or the streamed text.
//!
//! Owns: the mapping from the send's result to the exit code ([`exit_code`]),
//! and SIGINT handling (cancel, print the cancelled result, exit 130).

use crate::config::Limits;
use crate::environment::Environment;
use crate::session::{Ending, OpenError, SendRejected, Session};
use crate::transport::signal::shutdown_signal;
use crate::transport::stdio::with_store;
use crate::transport::tap::JournalSlot;
use crate::transport::writer::{self, Format};
use crate::wire::{ErrorCode, InitConfig, PROTOCOL_VERSION, SendOptions, SendResult, Status};

/// The send succeeded.
pub const EXIT_OK: i32 = 0;
/// Provider error (model server failed or unreachable).
pub const EXIT_PROVIDER: i32 = 1;
/// Bad usage (clap's code for bad flags; also an invalid workspace).
pub const EXIT_USAGE: i32 = 2;
/// Stopped by `max_iterations`, loop detection or a spent budget.
pub const EXIT_LIMIT: i32 = 3;
/// Any other error (tool or protocol).
pub const EXIT_OTHER: i32 = 4;
/// Cancelled by SIGINT or SIGTERM (128 + SIGINT).
pub const EXIT_CANCELLED: i32 = 130;

/// Runs `prompt` once with `config`; returns the exit code. `cassette`
/// overrides `PIRN_RECORD`/`PIRN_REPLAY` (`--record`, `--replay`).
#[allow(clippy::print_stderr)]
pub async fn run(
    config: InitConfig,
    prompt: String,
    options: SendOptions,
    format: Format,
    cassette: CassetteFlags,
) -> i32 {
    let journal = JournalSlot::default();
    let w = writer::spawn(std::io::stdout(), format, journal.clone());
    let mut env = with_store(Environment::from_process()).await;
    if cassette.record.is_some() || cassette.replay.is_some() {
        env.record = cassette.record;
        env.replay = cassette.replay;
    }
    let mut config = config;
    if cassette.continue_last
        && config.resume_session_id.is_none()
        && let Some(store) = &env.store
    {
        let dir = config.cwd.clone().map_or_else(std::env::current_dir, |d| Ok(std::path::PathBuf::from(d)));
        if let Ok(dir) = dir.and_then(|d| d.canonicalize()) {
            config.resume_session_id = crate::transport::latest::latest_in(store, &dir).await;
        }
    }
    // pirn's own command speaks the newest protocol: its JSONL carries
    // `stop_reason`, `is_error` and the other 0.3.0 fields.
    let opened = Session::open(Some(PROTOCOL_VERSION), &config, &env, Limits::default(), w.outbox.clone()).await;
    let session = match opened {
        Ok(s) => s,
        Err(OpenError::Config(e)) => {
            eprintln!("pirn run: {e}");
            return EXIT_USAGE;
        }
        Err(e) => {
            eprintln!("pirn run: {e}");
            return EXIT_USAGE;
        }
    };
    if let Some(j) = session.journal() {
        let _ = journal.set(j.clone());
        if format != Format::Jsonl {
            eprintln!("pirn: session {}", j.session_id());
        }
    }
    match session.send_with("1".to_owned(), prompt, &options) {
        Ok(()) => {}
        Err(SendRejected::InvalidRequest(e)) => {
            eprintln!("pirn run: {e}");
            return EXIT_USAGE;
        }
        Err(_) => return EXIT_OTHER,
    }
    let mut signals = shutdown_signal();
    let stdout_closed = w.stdout_closed.clone();
    let interrupt = async {
        tokio::select! {
            _ = signals.recv() => {}
            _ = stdout_closed.cancelled() => {}
        }
    };
    let report = session.end(Ending::Finish, interrupt, w.finish()).await;
    match &report.last_result {
        Some(r) => {
            if format != Format::Jsonl
                && let Some(e) = &r.error
            {
                eprintln!("pirn: {:?}: {}", e.code, e.message);
            }
            exit_code(r)
        }
        None => EXIT_OTHER,
    }
}

/// `pirn run --record FILE` / `--replay FILE`, and `--continue`.
#[derive(Debug, Default)]
pub struct CassetteFlags {
    pub record: Option<std::path::PathBuf>,
    pub replay: Option<std::path::PathBuf>,
    /// `--continue`: resume the most recent session of the workspace (a
    /// new one when it has none).
    pub continue_last: bool,
}

/// Exit code of a send's result (see the constants).
pub fn exit_code(result: &SendResult) -> i32 {
    match (result.status, result.error.as_ref().map(|e| e.code)) {
        (Status::Ok, _) => EXIT_OK,
        (_, Some(ErrorCode::ProviderError)) => EXIT_PROVIDER,
        (_, Some(ErrorCode::MaxIterations | ErrorCode::LoopDetected | ErrorCode::BudgetExceeded)) => EXIT_LIMIT,
        (_, Some(ErrorCode::Cancelled)) => EXIT_CANCELLED,
        _ => EXIT_OTHER,
    }
}

/// `pirn tool NAME ARGS`: runs one tool in the current directory, prints its
/// output on stdout; exit 0 on success, 1 when the tool reported an error,
/// 2 when the working directory is unusable.
#[allow(clippy::print_stderr)]
pub async fn tool(name: String, args: String) -> i32 {
    use std::io::Write;
    let workspace = match std::env::current_dir().and_then(|d| d.canonicalize()) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("pirn tool: {e}");
            return EXIT_USAGE;
        }
    };
    let mut ctx = crate::tools::ToolContext::new(workspace, Vec::new(), tokio_util::sync::CancellationToken::new());
    if let Some(mode) = std::env::var("PIRN_SANDBOX").ok().and_then(|v| crate::sandbox::SandboxMode::parse(&v)) {
        ctx.sandbox = std::sync::Arc::new(crate::sandbox::Sandbox::new(mode, true, &ctx.workspace, &[]));
    }
    let enabled: Vec<String> = crate::tools::ALL_TOOLS.iter().map(|t| t.to_string()).collect();
    let out = crate::tools::execute(&name, &args, &enabled, &ctx).await;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(out.text.as_bytes());
    let _ = stdout.flush();
    if out.is_error { 1 } else { 0 }
}
