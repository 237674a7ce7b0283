//! Is the work done? The gates a final answer passes before a send can end
//! `ok`: what pirn can check for itself, whatever the answer says.
//!
//! Owns: [`check`], in this order: a rename the request asks for that is
//! still unfinished at a wrap-up (the tools open once more); a file the send
//! changed that parsed before and does not now (back once, then
//! `verification_failed`); a definition a deletion request names that is
//! still there (back once with the call that deletes it, then
//! `verification_failed`); a rename whose old name is still used where it
//! applies (`verification_failed`); the verification command (see
//! [`super::verify`]). A result never claims what did not happen: a send
//! ends `ok` only past these gates.

use super::answer_check::{Check, Progress};
use super::verify::{self, Verifier};
use super::{SendStats, removal, rename};
use crate::tools::ToolContext;
use crate::wire::{ErrorCode, ErrorEnvelope};

/// What follows an answer.
#[derive(Debug)]
pub enum Gate {
    /// Done as far as pirn can tell; `verified` when the send's check ran and passed.
    Done { verified: bool },
    /// Not yet: the model gets this note and its tools again.
    Again(String),
    /// Not done, and no more rounds: the send ends with this error.
    NotDone(ErrorEnvelope),
}

/// The gates for an answer to `request` (see the module docs). `checks`:
/// the answer checks are on; `wrap_up`: the answer was asked for without tools.
pub async fn check(
    request: &str,
    checks: bool,
    wrap_up: bool,
    progress: &mut Progress,
    tools: &ToolContext,
    verifier: Option<&mut Verifier>,
    stats: &mut SendStats,
) -> Gate {
    if checks {
        if wrap_up
            && let Some(left) = rename::unfinished(request, &tools.workspace)
            && progress.fire_once(Check::UnfinishedRename)
        {
            return Gate::Again(format!("Not finished yet: {left} Then answer."));
        }
        if let Some((file, problem)) = tools.off_thread(|t| t.broken()).await.into_iter().next() {
            if progress.fire_once(Check::BrokenFile) {
                return Gate::Again(format!(
                    "Not finished: {file} does not parse now ({problem}). Fix it, then answer."
                ));
            }
            return Gate::NotDone(ErrorEnvelope::new(
                ErrorCode::VerificationFailed,
                format!("{file} no longer parses: {problem}"),
            ));
        }
        if let Some((file, _, note)) = removal::still_defined(request, &tools.workspace) {
            if progress.fire_once(Check::StillDefined) {
                return Gate::Again(note);
            }
            return Gate::NotDone(ErrorEnvelope::new(
                ErrorCode::VerificationFailed,
                format!("the deletion is not done: what the request names is still defined in {file}"),
            ));
        }
        if let Some(left) = rename::unfinished(request, &tools.workspace) {
            return Gate::NotDone(ErrorEnvelope::new(
                ErrorCode::VerificationFailed,
                format!("the rename is not finished: {left}"),
            ));
        }
    }
    match verifier.filter(|_| progress.wrote()) {
        None => Gate::Done { verified: false },
        Some(v) => match v.check(tools, &mut stats.verification).await {
            verify::Checked::Passed => Gate::Done { verified: true },
            verify::Checked::Retry(note) => Gate::Again(note),
            verify::Checked::Failed(error) => Gate::NotDone(error),
        },
    }
}
