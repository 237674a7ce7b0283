//! Gate: the operator's check (`verify_command`).
//!
//! Reads: whether the send has a check ([`crate::agent::verify::Verifier`])
//! and the exit code of running it now. It runs at every final answer
//! unless it already passed with no tool call since. May: let a passing
//! answer through (the result reports the verification), send a failing
//! one back with the command's output and the tools open again while
//! rounds last, then end the send `verification_failed`. When no call
//! since the last failure changed a file or ran a command
//! ([`crate::agent::facts::Facts::moves`]), the note says so, with only
//! the end of the same output. When nothing moved since the last failure,
//! or the send has written no file at all, the answer that met the check
//! was words alone: the next request is made with `tool_choice:
//! "required"` ([`Mode::Act`]), since no answer in words can make a
//! failing check pass.

use super::verdict::Verdict;
use crate::agent::mode::Mode;
use crate::agent::send_state::SendState;
use crate::agent::verify::Checked;

pub(super) async fn review(cx: &mut SendState<'_>) -> Verdict {
    if cx.verified {
        return Verdict::Pass;
    }
    let Some(verifier) = cx.verifier.as_mut() else { return Verdict::Pass };
    match verifier.check(&cx.tools, &mut cx.stats.verification, cx.facts.moves).await {
        Checked::Passed => {
            cx.verified = true;
            Verdict::Pass
        }
        // Nothing was written in the send, or nothing moved since the check
        // last failed: the answer was words, and only a change can make the
        // check pass, so the next request must call a tool.
        Checked::Retry { note, unchanged } => {
            let mode = if unchanged || !cx.facts.wrote() { Mode::Act } else { Mode::Work };
            Verdict::Again { note, mode }
        }
        Checked::Failed(error) => Verdict::Fail { error, answer: None },
    }
}
