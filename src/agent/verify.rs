//! Verification: the operator's check of a send (`verify_command`, or the
//! send's own). When the model says it is done, run the command; while it
//! fails, give the model its output and its tools again.
//!
//! Owns: running the command like a `bash` call (same sandbox, environment
//! and process-group kill), the note that gives the model its failing
//! output, and the [`Verification`] the result reports. pirn runs only the
//! command the operator configured: never one read out of the request or
//! the repository. It runs at every final answer of a send that has one
//! (the operator asked that every send pass it), at most
//! [`DEFAULT_VERIFY_ROUNDS`](crate::config::DEFAULT_VERIFY_ROUNDS) failures
//! are given back (an answer cut off at the token limit spends a round
//! too: [`super::gates`]'s `CutOff`), and a send that changed files and
//! must stop before the model said it is done (`max_iterations`, a conversation that no longer
//! fits the context window, runaway answers) ends `ok` when the check
//! passes.

use crate::config::SessionConfig;
use crate::tools::{self, ToolContext, ToolError};
use crate::wire::{EditFormat, ErrorCode, ErrorEnvelope, Verification};

/// What follows a verification run.
#[derive(Debug)]
pub enum Checked {
    /// The command passed.
    Passed,
    /// It failed and the model gets another round: the note to give it,
    /// and whether no call since the last failure changed a file or ran a
    /// command (the same code failed again).
    Retry { note: String, unchanged: bool },
    /// It failed with no rounds left.
    Failed(ErrorEnvelope),
}

/// Longest a verification command may run, in ms.
pub const TIMEOUT_MS: u64 = 120_000;
/// Why the send's check (`own`, else the session's `verify_command`)
/// cannot run unasked: the session does not enable `bash`, or its approval
/// policy would not let `bash` run the command without asking. `None` when
/// there is no check or it can run, and in plan mode (never checked).
/// [`super::SendSpec::resolve`] refuses
/// such a send: left unchecked, it would end `ok` on the model's word.
pub fn cannot_run(config: &SessionConfig, own: Option<&str>) -> Option<String> {
    if config.policy.mode == crate::approval::ApprovalMode::Plan {
        return None; // A plan changes nothing and is never checked.
    }
    let command = own.or(config.verify_command.as_deref()).map(str::trim).filter(|c| !c.is_empty())?;
    if !config.tools.iter().any(|t| t == "bash") {
        return Some(format!(
            "the verification command `{command}` runs as bash would, and bash is not among the enabled tools; \
             enable it (it need not be offered to the model: see edit_format) or drop the command"
        ));
    }
    let as_bash = serde_json::json!({ "command": command });
    if config.policy.check("bash", &as_bash, &config.workspace) != crate::approval::PolicyVerdict::Allow {
        return Some(format!(
            "the verification command `{command}` would need approval to run as bash under this session's approval \
             policy, and a check never asks; allow it (a permissions rule) or drop the command"
        ));
    }
    None
}

/// Bytes of a failing command's output the model is shown (its tail).
const SHOWN_BYTES: usize = 3000;
/// Bytes of it shown when it failed the same code again (its tail).
const SAME_SHOWN_BYTES: usize = 400;

/// The check of one send: its command and the failed runs that may still
/// be given back to the model.
#[derive(Debug)]
pub struct Verifier {
    command: String,
    rounds_left: u32,
    /// [`super::facts::Facts::moves`] when the command last failed.
    failed_at: Option<u32>,
    /// How the notes tell the model to fix the cause, in the session's
    /// edit format.
    fix_with: &'static str,
}

impl Verifier {
    /// The send's check: `own` (the send's `verify_command`), else the
    /// session's, given back at most `config.verify_rounds` times. `None`
    /// when there is none, `verify_rounds` is 0, the session does not
    /// enable `bash`, or its approval policy would not let `bash` run the
    /// command unasked: a check never gets round the approval gate (a send's
    /// `verify_command` may come from an HTTP client).
    pub fn for_send(config: &SessionConfig, own: Option<&str>) -> Option<Verifier> {
        if config.verify_rounds == 0 || cannot_run(config, own).is_some() {
            return None;
        }
        let command = own.or(config.verify_command.as_deref()).map(str::trim).filter(|c| !c.is_empty())?;
        let fix_with = match config.edit_format {
            EditFormat::ToolCalls => "fix the cause with edit_file or write_file",
            EditFormat::Whole => {
                "fix the cause: answer with the file's path and its complete new content in a fenced block"
            }
        };
        Some(Verifier { command: command.to_owned(), rounds_left: config.verify_rounds, failed_at: None, fix_with })
    }

    /// The command.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// How the notes tell the model to change a file, in the session's edit
    /// format ("fix the cause with edit_file or write_file").
    pub fn fix_with(&self) -> &'static str {
        self.fix_with
    }

    /// Runs the command in the workspace as a `bash` call would (sandbox,
    /// environment, timeout, group kill); it passes when it exits 0.
    /// Returns the report and the output the model reads.
    pub async fn run(&self, ctx: &ToolContext) -> (Verification, String) {
        let args =
            tools::bash::Args { command: self.command.clone(), timeout_ms: Some(TIMEOUT_MS), run_in_background: None };
        let (text, passed) = match tools::bash::run(args, ctx).await {
            Ok(text) => (text, true),
            Err(ToolError::Failed(text)) => (text, false),
            Err(e) => (e.to_string(), false),
        };
        let exit_code = tools::bash::exit_code_of(&text);
        (Verification { command: self.command.clone(), exit_code, passed }, text)
    }

    /// Runs the check after the model said it is done, records its report
    /// in `report`, and says what follows: done, another round for the model
    /// (the note to give it), or the `verification_failed` error. `moves`
    /// is the send's [`super::facts::Facts::moves`] now: when it has not
    /// moved since the command last failed, the note says that nothing has
    /// changed since and shows only the end of the same output.
    pub async fn check(&mut self, ctx: &ToolContext, report: &mut Option<Verification>, moves: u32) -> Checked {
        let (verification, output) = self.run(ctx).await;
        let passed = verification.passed;
        let unchanged = self.failed_at == Some(moves);
        let text = if unchanged {
            unchanged_note(&verification, &output, self.fix_with)
        } else {
            note(&verification, &output, self.fix_with)
        };
        self.failed_at = Some(moves).filter(|_| !passed);
        *report = Some(verification);
        if passed {
            Checked::Passed
        } else if self.take_round() {
            Checked::Retry { note: text, unchanged }
        } else {
            Checked::Failed(ErrorEnvelope::new(
                ErrorCode::VerificationFailed,
                format!("`{}` still fails after the model's fixes; the task is not done", self.command),
            ))
        }
    }

    /// After a failed run: true (and one round fewer) while the failure may
    /// still be given back to the model.
    pub fn take_round(&mut self) -> bool {
        let left = self.rounds_left > 0;
        self.rounds_left = self.rounds_left.saturating_sub(1);
        left
    }

    /// When the send must stop before the model said it is done (`why`:
    /// the limit that stopped it), for a send that changed files: when the
    /// command now passes, the task is done all the same; returns the
    /// verification and the answer, with `account` (pirn's account of what
    /// changed).
    pub async fn at_the_limit(&self, account: &str, why: &str, ctx: &ToolContext) -> Option<(Verification, String)> {
        let (v, _) = self.run(ctx).await;
        if !v.passed {
            return None;
        }
        let answer = format!(
            "Done, checked by `{}`, which now passes ({why} before the model said so). {account}",
            self.command
        );
        Some((v, answer))
    }
}

/// What the model is told after a failed verification.
pub fn note(v: &Verification, output: &str, fix_with: &str) -> String {
    let shown = tail(output, SHOWN_BYTES);
    let how = how(v);
    format!(
        "The task is not done yet: I ran `{}` to check your work and it failed ({how}). Its output:\n{shown}\n\
         Read the error, {fix_with}, then answer again.",
        v.command
    )
}

/// What the model is told when the check fails again and no call since its
/// last failure changed a file or ran a command: the same code failed, so
/// only the end of its output ([`SAME_SHOWN_BYTES`]) is shown again (the
/// whole of it may have been compacted away since).
pub fn unchanged_note(v: &Verification, output: &str, fix_with: &str) -> String {
    format!(
        "The task is not done yet: `{}` still fails ({}). No file has changed since it last failed (no write, no \
         command), so it checked the same code as before. The end of its output:\n{}\nAn answer in words does not \
         change the files: {fix_with}, then answer again.",
        v.command,
        how(v),
        tail(output, SAME_SHOWN_BYTES)
    )
}

/// The last `bytes` of `output` (at a character boundary), trailing space cut.
fn tail(output: &str, bytes: usize) -> &str {
    output[tools::ceil_char_boundary(output, output.len().saturating_sub(bytes))..].trim_end()
}

/// How a run ended, for a note.
fn how(v: &Verification) -> String {
    match v.exit_code {
        Some(code) => format!("exit code {code}"),
        None => "it did not finish".to_owned(),
    }
}
