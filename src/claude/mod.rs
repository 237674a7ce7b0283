//! Claude Code's headless surface: `pirn -p …`, `pirn --output-format
//! stream-json --input-format stream-json …` (what the official Claude
//! Agent SDKs spawn) and `pirn run` with the same flags.
//!
//! Owns: the process's loop — stdin lines ([`input::In`]: prompts, control
//! requests, permission answers) in, the session's events out as
//! stream-json ([`wire::Out`], built by [`translate`]) — and the control
//! protocol (`initialize`, `interrupt`, `set_permission_mode`,
//! `set_model`, `mcp_status`; `can_use_tool` asked of the SDK, and its hook
//! callbacks called as `hook_callback`, see [`control::SdkHooks`]; its in-process
//! MCP servers reached with `mcp_message`, see [`control::SdkMcp`]). Behind it
//! is one pirn [`Session`], opened as every transport opens one (protocol
//! 0.3.0, the store, approval, MCP servers); there is no second agent
//! loop. The mapping is written down in protocol/claude-code.md.
//!
//! stdout carries only stream-json (or, with `--output-format text|json`,
//! the answer); pirn's logs go to stderr when asked.

pub mod args;
mod checkpoints;
mod control;
pub mod input;
pub mod mapping;
mod open;
mod setup;
mod surface;
mod translate;
mod turns;
pub mod wire;

use std::collections::HashMap;

use tokio::sync::mpsc;

use args::{ArgsError, ClaudeOutputFormat, InputFormat};
pub use args::{ClaudeArgs, is_claude_invocation};
use input::{In, Incoming, read_stdin};
use open::{Opening, opened};
use setup::ClaudeSetup;
use surface::{SdkCall, Surface};
pub use wire::CLAUDE_CODE_VERSION;
use wire::Out;

use crate::environment::Environment;
use crate::session::Ending;
use crate::wire::OutgoingMessage;

/// Serves Claude Code's surface for `argv` (the arguments after the
/// program name, or after `run`); returns the exit code: 0, 2 for a
/// command line pirn refuses, else as `pirn run` (one prompt) or 0 (a
/// stream-json session that ended).
#[allow(clippy::print_stderr)]
pub async fn main(argv: Vec<String>) -> i32 {
    let args = match ClaudeArgs::parse_from_args(&argv) {
        Ok(a) => a,
        Err(ArgsError::Clap(e)) => {
            let _ = e.print();
            return e.exit_code();
        }
        Err(e) => {
            eprintln!("pirn: {e}");
            return 2;
        }
    };
    let mut setup = match ClaudeSetup::from_args(&args) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("pirn: {e}");
            return 2;
        }
    };
    let env = crate::transport::stdio::with_store(Environment::from_process()).await;
    if args.continue_last {
        let here = std::env::current_dir().and_then(|d| d.canonicalize()).ok();
        if let (Some(store), Some(here)) = (&env.store, here) {
            setup.resume = crate::transport::latest::latest_in(store, &here).await;
        }
    }
    if let Some(at) = &args.resume_session_at {
        let found = match (&setup.resume, &env.store) {
            (Some(id), Some(store)) => checkpoints::resume_at(store, id, at).await,
            (None, _) => Err("--resume-session-at needs --resume (or --continue with a stored session)".to_owned()),
            (_, None) => Err("--resume-session-at: sessions are not stored (PIRN_PERSIST=0)".to_owned()),
        };
        match found {
            Ok(n) => setup.resume_at_message = Some(n),
            Err(e) => {
                eprintln!("pirn: {e}");
                return 2;
            }
        }
    }
    let (tx, rx) = mpsc::channel(64);
    let (sdk_tx, sdk_rx) = mpsc::channel(16);
    match args.input_format {
        InputFormat::Text => {
            let prompt = match args.prompt.clone() {
                Some(p) => p,
                None => {
                    let mut s = String::new();
                    let _ = tokio::io::AsyncReadExt::read_to_string(&mut tokio::io::stdin(), &mut s).await;
                    s
                }
            };
            if prompt.trim().is_empty() {
                eprintln!("pirn: no prompt (give it as the argument, on stdin, or use --input-format stream-json)");
                return 2;
            }
            let _ = tx.send(Incoming::Prompt(prompt)).await;
            drop(tx);
        }
        InputFormat::StreamJson => {
            if args.prompt.is_some() {
                eprintln!("pirn: with --input-format stream-json the prompts come on stdin, not as an argument");
                return 2;
            }
            tokio::spawn(read_stdin(tx));
        }
    }
    let surface = Surface {
        output: args.output_format,
        partial: args.include_partial_messages,
        setup,
        env,
        session: None,
        turns: HashMap::new(),
        steers: HashMap::new(),
        sends: 0,
        asks: HashMap::new(),
        rewinds: HashMap::new(),
        replay: args.replay_user_messages,
        last: None,
        last_code: 0,
        sdk_tx,
        sdk_calls: HashMap::new(),
        sdk_seq: 0,
        want_open: false,
        waiting: Vec::new(),
        init_answer: None,
    };
    surface.run(rx, sdk_rx, args.input_format).await
}

/// The next message of a session's outbox (pending before one opened).
async fn next(rx: &mut Option<mpsc::Receiver<OutgoingMessage>>) -> Option<OutgoingMessage> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

impl Surface {
    async fn run(
        mut self,
        mut rx: mpsc::Receiver<Incoming>,
        mut calls: mpsc::Receiver<SdkCall>,
        input: InputFormat,
    ) -> i32 {
        let mut events: Option<mpsc::Receiver<OutgoingMessage>> = None;
        let mut opening: Option<Opening> = None;
        let mut stdin_open = true;
        let mut signals = crate::transport::signal::shutdown_signal();
        let mut stopping = false;
        loop {
            if self.want_open && opening.is_none() && self.session.is_none() {
                opening = Some(self.open());
            }
            self.want_open = false;
            if !stdin_open
                && self.turns.is_empty()
                && self.steers.is_empty()
                && opening.is_none()
                && self.waiting.is_empty()
            {
                break;
            }
            tokio::select! {
                line = rx.recv(), if stdin_open => match line {
                    None => stdin_open = false,
                    Some(line) => {
                        if let Err(code) = self.input(line).await {
                            return code;
                        }
                    }
                },
                done = opened(&mut opening) => match done {
                    Ok((session, outbox)) => {
                        events = Some(outbox);
                        self.session = Some(session);
                        if let Some((id, answer)) = self.init_answer.take() {
                            self.respond(id, Ok(answer));
                        }
                        for text in std::mem::take(&mut self.waiting) {
                            if let Err(code) = self.prompt(text).await {
                                return code;
                            }
                        }
                    }
                    Err(e) => {
                        if let Some((id, _)) = self.init_answer.take() {
                            self.respond(id, Err(e));
                        }
                        return 2;
                    }
                },
                msg = next(&mut events) => match msg {
                    Some(msg) => self.outgoing(msg),
                    None => break,
                },
                Some(call) = calls.recv() => self.call_sdk(call),
                _ = signals.recv(), if !stopping => {
                    stopping = true;
                    stdin_open = false;
                    match self.session.clone() {
                        Some(s) => { tokio::spawn(async move { s.shutdown().await }); }
                        None => break,
                    }
                }
            }
        }
        if let Some(s) = self.session.take() {
            s.end(Ending::Finish, std::future::pending(), async {}).await;
        }
        drop(events);
        self.finish(input)
    }

    /// The end of the process: the answer for text and json output.
    #[allow(clippy::print_stderr)]
    fn finish(&self, input: InputFormat) -> i32 {
        match (self.output, &self.last) {
            (ClaudeOutputFormat::StreamJson, _) => {}
            (ClaudeOutputFormat::Json, Some(r)) => write_line(&Out::Result(Box::new(r.clone()))),
            (ClaudeOutputFormat::Text, Some(r)) => {
                use std::io::Write;
                if r.is_error {
                    eprintln!("pirn: {}: {}", r.subtype, r.errors.join("; "));
                }
                let mut out = std::io::stdout().lock();
                let text = r.result.clone().unwrap_or_default();
                let _ = writeln!(out, "{text}");
                let _ = out.flush();
            }
            (_, None) => {}
        }
        if input == InputFormat::Text { self.last_code } else { 0 }
    }

    /// Writes `msg` when the output format shows it (stream-json shows
    /// everything; the others only control messages, here).
    fn emit(&self, msg: &Out) {
        let control = matches!(msg, Out::ControlRequest { .. } | Out::ControlResponse { .. });
        if self.output == ClaudeOutputFormat::StreamJson || control {
            write_line(msg);
        }
    }

    /// One line of input. `Err(code)`: the process must exit.
    async fn input(&mut self, input: Incoming) -> Result<(), i32> {
        match input {
            Incoming::Bad(why) => {
                tracing::warn!("stdin: not a stream-json message pirn reads: {why}");
                #[allow(clippy::print_stderr)]
                {
                    eprintln!("pirn: ignored a stdin line that is not a stream-json message: {why}");
                }
                Ok(())
            }
            Incoming::BadControl { request_id, why } => {
                self.respond(request_id, Err(format!("pirn cannot read this control request: {why}")));
                Ok(())
            }
            Incoming::Prompt(text) => self.prompt(text).await,
            Incoming::Line(line) => match *line {
                In::User(u) => {
                    let text = match control::prompt_text(&u.message.content) {
                        Ok(t) => t,
                        Err(why) => {
                            self.refuse_turn(why);
                            return Ok(());
                        }
                    };
                    if matches!(u.priority.as_deref(), Some("now" | "next")) && !self.turns.is_empty() {
                        self.steer(text);
                        return Ok(());
                    }
                    self.prompt(text).await
                }
                In::ControlRequest { request_id, request } => self.control(request_id, request).await,
                In::ControlResponse { response } => {
                    self.answered(response);
                    Ok(())
                }
                In::ControlCancelRequest {} | In::KeepAlive {} => Ok(()),
            },
        }
    }

    /// One message of the session's outbox.
    fn outgoing(&mut self, msg: OutgoingMessage) {
        match msg {
            OutgoingMessage::Event(e) => {
                if let crate::wire::Event::PermissionRequest { name, reason, request_id: Some(rid), args } = &e.event {
                    self.ask(&e.send_id, name, reason, rid, args.clone().unwrap_or_default());
                    return;
                }
                self.adopt(&e.send_id);
                let lines = match (self.turns.get_mut(&*e.send_id), e.parent_call_id.as_deref()) {
                    (Some(turn), Some(parent)) => turn.nested_event(parent, &e.event),
                    (Some(turn), None) => turn.event(&e.event),
                    (None, _) => return,
                };
                for line in &lines {
                    self.emit(line);
                }
            }
            OutgoingMessage::Result(r) => {
                if self.rewound(&r) {
                    return;
                }
                self.adopt(&r.id);
                for taken in r.steered.iter().flatten() {
                    self.steers.remove(taken);
                }
                let Some(turn) = self.turns.remove(&r.id) else { return };
                let (lines, result) = turn.finish(&r);
                for line in &lines {
                    self.emit(line);
                }
                self.emit(&Out::Result(Box::new(result.clone())));
                self.last_code = crate::transport::exit::exit_code(&r);
                self.last = Some(result);
            }
            _ => {}
        }
    }
}

/// Writes one line on stdout and flushes it.
fn write_line(msg: &Out) {
    use std::io::Write;
    let Ok(mut line) = serde_json::to_vec(msg) else { return };
    line.push(b'\n');
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(&line);
    let _ = out.flush();
}
