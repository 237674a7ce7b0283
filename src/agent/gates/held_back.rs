//! Gate: a write the tools held back and the model never confirmed.
//!
//! Reads: [`crate::agent::facts::Facts::held_back`], the rewrites that would
//! have removed most of a file, held back once by `write_file` and neither
//! asked for again nor superseded by a later change of that file (only a
//! profile with `hold_large_writes` holds any). May: send the model back
//! once, saying those files were not written and how to write them; an
//! answer after that with a write still held ends the send
//! `verification_failed`, naming the files: a send whose model meant a
//! write that never landed is not `ok` (its `files_changed` stays what is
//! on disk).

use super::order::Gate;
use super::verdict::Verdict;
use crate::agent::mode::Mode;
use crate::agent::send_state::SendState;
use crate::wire::{ErrorCode, ErrorEnvelope};

pub(super) fn review(cx: &mut SendState<'_>) -> Verdict {
    if !cx.checks || cx.facts.held_back.is_empty() {
        return Verdict::Pass;
    }
    let files: Vec<String> = cx.facts.held_back.iter().map(|p| cx.shown(p)).collect();
    if !cx.fire_once(Gate::HeldBack) {
        let message = format!(
            "the write_file to {} was held back because it removes most of the file, and was never confirmed: \
             the file is unchanged",
            files.join(", ")
        );
        return Verdict::Fail { error: ErrorEnvelope::new(ErrorCode::VerificationFailed, message), answer: None };
    }
    Verdict::Again {
        note: format!(
            "Not written: your write_file to {} was held back because it removes most of the file, and the file \
             is unchanged. If removing that is what the task needs, call write_file again with the same arguments; \
             if not, leave it. Then answer.",
            files.join(", ")
        ),
        mode: Mode::Work,
    }
}
