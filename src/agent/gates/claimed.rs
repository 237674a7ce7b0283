//! Gate: an answer that reports a change, from a send that changed nothing.
//!
//! Reads: that no file changed in the send (a write held back did not
//! land) and no command ran ([`crate::agent::reading::quiet`]), and the model's
//! own reading of its answer: one short extra call that shows the model
//! only the answer and holds its reply to `{"reports_change": boolean}`. pirn reads no word of the answer
//! itself; the model says what the answer reports and the facts say what
//! is on disk. A send ends `ok` only when what it reports is there.
//!
//! May: the first time, send the model back with that fact, its next
//! request made with `tool_choice: "required"` ([`Mode::Act`]), so it makes
//! the change or looks again; when a later answer of the same send again
//! reports a change and still nothing changed, end the send
//! `verification_failed` (the model's answer is kept in the result).
//!
//! On with `claim_check: true` (off by default; `answer_checks: false`
//! turns it off too), never in plan mode, without `write_file`/`edit_file`,
//! with an `output_schema`, in a wrap-up, or once a command ran (what a
//! command changed pirn cannot see). Any failure of the reading call lets
//! the answer through. Each answer it sees costs one reading.

use super::order::Gate;
use super::verdict::Verdict;
use crate::agent::mode::Mode;
use crate::agent::reading::{Ask, quiet, yes_no};
use crate::agent::send_state::SendState;
use crate::wire::{ErrorCode, ErrorEnvelope};

/// What the model is told when its answer reports a change that is not on
/// disk.
pub const NOTE: &str = "No file has changed in this send, but your last answer (left out here) said files were \
     changed: nothing is written until an edit_file or write_file call succeeds. If the request asks for a change, \
     call edit_file or write_file now to make it. If it does not, read what you need and answer without saying you \
     changed anything.";

/// The reading: the answer alone, asked whether it says files were changed.
const ASK: Ask = Ask {
    system: "You check the final reply of a coding assistant that works in a project's files. Decide whether the \
             reply says the assistant has itself created, changed or deleted files (true), or not (false: it \
             answers a question, explains, shows code the user could use, says what should be done, or says \
             nothing needed to change).",
    label: "Reply",
    question: "Does this reply say the assistant has changed files?",
    key: "reports_change",
    examples: &[],
};

pub(super) async fn review(cx: &mut SendState<'_>, answer: &str) -> Verdict {
    if !cx.config.claim_check || !quiet(cx) || answer.trim().is_empty() {
        return Verdict::Pass;
    }
    let sent_back = cx.fired.contains(&Gate::Claimed);
    if yes_no(cx, ASK, answer).await != Some(true) {
        return Verdict::Pass;
    }
    if !sent_back {
        cx.fire_once(Gate::Claimed);
        return Verdict::Again { note: NOTE.to_owned(), mode: Mode::Act };
    }
    Verdict::Fail {
        error: ErrorEnvelope::new(
            ErrorCode::VerificationFailed,
            "the answer reports a change to files, but no file changed in this send",
        ),
        answer: None,
    }
}
