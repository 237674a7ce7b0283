//! Codex's headless surface: `pirn exec --experimental-json …`, what the
//! Codex SDK (`@openai/codex-sdk`) spawns when `codexPathOverride` names
//! pirn, and `pirn exec PROMPT` for a shell.
//!
//! Owns: the process — its [`args`] (Codex's flags, checked into a
//! [`CodexSetup`]), the prompt (the argument, else stdin to its end, as the SDK
//! writes it), one pirn [`Session`] opened as every transport opens one
//! (protocol 0.3.0, the store, the model endpoint from
//! `--config openai_base_url` and `CODEX_API_KEY` over pirn's own
//! variables), one send, and stdout: Codex's thread events ([`events`],
//! built by [`translate`]) with `--experimental-json`, else the final
//! message alone. There is no second agent loop.
//!
//! Exit codes, as Codex's: 0 the turn completed; 1 it failed (the message
//! also on stderr, which the SDK puts in the error it throws) or pirn
//! refuses the run (a setting it cannot honour, no git repository, no
//! prompt: stderr only); 2 flags that do not parse; 130 cancelled by
//! SIGINT or SIGTERM (the SDK's abort signal; no `turn.failed`, as Codex
//! writes none for an interrupted turn), the turn's bash process groups
//! killed first. The mapping is written down in protocol/codex.md.

pub mod args;
pub mod events;
mod translate;

use std::io::Write;

use tokio::sync::mpsc;

pub use args::ExecArgs;
use args::{CodexSetup, Resume};
use events::ThreadEvent;
use translate::CodexTurn;

use crate::config::Limits;
use crate::environment::Environment;
use crate::session::{Ending, OUTBOX_CAPACITY, Session};
use crate::transport::exit::EXIT_CANCELLED;
use crate::wire::{ErrorCode, OutgoingMessage, PROTOCOL_VERSION, SendOptions, SendResult, Status};

/// Exit code of a turn that failed, or of a run pirn refuses (Codex's).
pub const EXIT_FAILED: i32 = 1;

/// Writes one thread event as a line on stdout and flushes it (the only
/// writer of stdout while the turn runs).
fn write_event(event: &ThreadEvent) {
    let Ok(mut line) = serde_json::to_vec(event) else { return };
    line.push(b'\n');
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(&line);
    let _ = out.flush();
}

/// Refuses the run: the reason on stderr (as Codex's refusals: nothing on
/// stdout). Returns [`EXIT_FAILED`].
#[allow(clippy::print_stderr)]
fn refused(why: &str) -> i32 {
    eprintln!("{why}");
    EXIT_FAILED
}

/// The prompt as Codex reads it: the argument, with piped stdin appended
/// in a `<stdin>` block; without one, all of stdin (not a terminal).
async fn prompt_of(given: Option<String>) -> Result<String, String> {
    use std::io::IsTerminal;
    let piped = !std::io::stdin().is_terminal();
    let read = || async {
        let mut s = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut tokio::io::stdin(), &mut s)
            .await
            .map_err(|e| format!("cannot read the prompt from stdin: {e}"))?;
        Ok::<String, String>(s.trim_start_matches('\u{feff}').to_owned())
    };
    match given {
        Some(p) if piped => {
            let more = read().await?;
            Ok(if more.trim().is_empty() { p } else { format!("{p}\n\n<stdin>\n{}\n</stdin>", more.trim_end()) })
        }
        Some(p) => Ok(p),
        None if !piped => Err("No prompt provided. Give it as an argument, or pipe it into stdin.".to_owned()),
        None => {
            let p = read().await?;
            if p.trim().is_empty() { Err("No prompt provided via stdin.".to_owned()) } else { Ok(p) }
        }
    }
}

/// Runs `pirn exec` with `args`; returns the exit code.
pub async fn main(args: ExecArgs) -> i32 {
    let sandbox_off = std::env::var("PIRN_SANDBOX").is_ok_and(|v| v.trim() == "off");
    let setup = match args.setup(sandbox_off) {
        Ok(s) => s,
        Err(e) => return refused(&e.to_string()),
    };
    // Codex reads no stdin for a resumed thread's argument prompt.
    let given = setup.prompt.clone();
    let prompt = match (&setup.resume, given) {
        (Resume::New, given) | (_, given @ None) => match prompt_of(given).await {
            Ok(p) => p,
            Err(why) => return refused(&why),
        },
        (_, Some(p)) => p,
    };
    if prompt.trim().is_empty() {
        return refused("No prompt provided.");
    }
    let mut env = crate::transport::stdio::with_store(Environment::from_process()).await;
    if let Some(url) = &setup.base_url {
        env.base_url = Some(url.clone());
    }
    if let Some(key) = std::env::var("CODEX_API_KEY").ok().filter(|k| !k.is_empty()) {
        env.api_key = Some(key);
        env.api_key_var = Some("CODEX_API_KEY");
    }
    let mut config = setup.config.clone();
    match &setup.resume {
        Resume::New => {}
        Resume::Id(id) => config.resume_session_id = Some(id.clone()),
        Resume::Last => {
            let here = config.cwd.as_deref().map(std::path::PathBuf::from).and_then(|d| d.canonicalize().ok());
            config.resume_session_id = match (&env.store, here) {
                (Some(store), Some(here)) => crate::transport::latest::latest_in(store, &here).await,
                _ => None,
            };
            if config.resume_session_id.is_none() {
                return refused("resume --last: no stored thread in this workspace");
            }
        }
    }
    run(setup, config, env, prompt).await
}

/// Opens the session, runs the one send, writes its events; the exit code.
#[allow(clippy::print_stderr)]
async fn run(setup: CodexSetup, config: crate::wire::InitConfig, env: Environment, prompt: String) -> i32 {
    let (outbox, rx) = mpsc::channel(OUTBOX_CAPACITY);
    let session = match Session::open(Some(PROTOCOL_VERSION), &config, &env, Limits::default(), outbox).await {
        Ok(s) => s,
        Err(e) => return refused(&e.to_string()),
    };
    let workspace = session.config().workspace.clone();
    if setup.json {
        let (thread_id, pirn_profile) = (session.config().session_id.clone(), session.config().profile.name.clone());
        write_event(&ThreadEvent::ThreadStarted { thread_id, pirn_profile });
        write_event(&ThreadEvent::TurnStarted {});
    } else {
        eprintln!("pirn exec: thread {} (profile {})", session.config().session_id, session.config().profile.name);
    }
    let options = SendOptions { output_schema: setup.output_schema.clone(), ..SendOptions::default() };
    if let Err(e) = session.send_with("1".to_owned(), prompt, &options) {
        return refused(&e.to_string());
    }
    let writer = tokio::spawn(write_turn(rx, CodexTurn::new(&workspace), setup.json));
    let mut signals = crate::transport::signal::shutdown_signal();
    let interrupt = async {
        signals.recv().await;
    };
    let ended = session.end(Ending::Finish, interrupt, writer).await;
    let Ok((result, message)) = ended else { return EXIT_FAILED };
    let Some(r) = result else {
        eprintln!("pirn exec: the turn ended without a result");
        return EXIT_FAILED;
    };
    // As Codex: only a completed turn writes the file.
    if let (Some(file), Some(text), Status::Ok) = (&setup.last_message_file, &message, r.status)
        && let Err(e) = std::fs::write(file, text)
    {
        eprintln!("pirn exec: --output-last-message {}: {e}", file.display());
    }
    exit_code(&r, setup.json, message.as_deref())
}

/// Reads the session's outbox to its end, writing each event's lines;
/// returns the send's result and the last message.
async fn write_turn(
    mut rx: mpsc::Receiver<OutgoingMessage>,
    mut turn: CodexTurn,
    json: bool,
) -> (Option<SendResult>, Option<String>) {
    let mut result = None;
    while let Some(msg) = rx.recv().await {
        let lines = match msg {
            // A subagent's text is its own (its answer is the task call's).
            OutgoingMessage::Event(e)
                if e.parent_call_id.is_some() && matches!(e.event, crate::wire::Event::ContentDelta { .. }) =>
            {
                continue;
            }
            OutgoingMessage::Event(e) => turn.event(&e.event),
            OutgoingMessage::Result(r) => {
                let lines = turn.finish(&r);
                result = Some(*r);
                lines
            }
            _ => Vec::new(),
        };
        if json {
            lines.iter().for_each(write_event);
        }
    }
    (result, turn.last_message.clone())
}

/// The exit code of the turn's result; in text mode the final message goes
/// to stdout, a failure to stderr.
#[allow(clippy::print_stderr)]
fn exit_code(r: &SendResult, json: bool, message: Option<&str>) -> i32 {
    if r.status == Status::Ok {
        if !json {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{}", message.unwrap_or_default());
            let _ = out.flush();
        }
        return 0;
    }
    let (code, text) = r.error.as_ref().map_or((None, "the turn failed"), |e| (Some(e.code), e.message.as_str()));
    eprintln!("pirn exec: {text}");
    if code == Some(ErrorCode::Cancelled) { EXIT_CANCELLED } else { EXIT_FAILED }
}
