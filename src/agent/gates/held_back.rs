//! Gate: a write the tools held back and the model never made.
//!
//! Reads: [`crate::agent::facts::Facts::held_back`], the `write_file` calls
//! a profile's help held back ([`Hold`]: a rewrite that would have removed
//! most of a file, or a write over a file the model had not read or that
//! changed since it read it) and that
//! were neither asked for again nor superseded by a later change of that
//! file (only a profile with `hold_large_writes` holds any). May: send the
//! model back once, saying which files were not written, why, and how to
//! write them; an answer after that with a write still held ends the send
//! `verification_failed`, naming the files: a send whose model meant a
//! write that never landed is not `ok` (its `files_changed` stays what is
//! on disk).

use super::order::Gate;
use super::verdict::Verdict;
use crate::agent::mode::Mode;
use crate::agent::send_state::SendState;
use crate::tools::Hold;
use crate::wire::{ErrorCode, ErrorEnvelope};

pub(super) fn review(cx: &mut SendState<'_>) -> Verdict {
    if !cx.checks || cx.facts.held_back.is_empty() {
        return Verdict::Pass;
    }
    let held: Vec<(String, Hold)> = cx.facts.held_back.iter().map(|(p, why)| (cx.shown(p), *why)).collect();
    let files = |hold: Hold| -> Vec<String> { held.iter().filter(|h| h.1 == hold).map(|h| h.0.clone()).collect() };
    let (removing, unread, changed) = (files(Hold::MostlyRemoved), files(Hold::NotRead), files(Hold::ChangedSinceRead));
    if unread.is_empty() && changed.is_empty() {
        // Only rewrites held back: the texts measured since issue 68.
        let files = removing.join(", ");
        if !cx.fire_once(Gate::HeldBack) {
            let message = format!(
                "the write_file to {files} was held back because it removes most of the file, and was never \
                 confirmed: the file is unchanged"
            );
            return Verdict::Fail { error: ErrorEnvelope::new(ErrorCode::VerificationFailed, message), answer: None };
        }
        return Verdict::Again {
            note: format!(
                "Not written: your write_file to {files} was held back because it removes most of the file, and \
                 the file is unchanged. If removing that is what the task needs, call write_file again with the \
                 same arguments; if not, leave it. Then answer."
            ),
            mode: Mode::Work,
        };
    }
    let mut why = Vec::new();
    if !removing.is_empty() {
        why.push(format!(
            "your write_file to {} was held back because it removes most of the file",
            removing.join(", ")
        ));
    }
    if !unread.is_empty() {
        why.push(format!(
            "your write_file to {} was refused because you had not read the file first",
            unread.join(", ")
        ));
    }
    if !changed.is_empty() {
        why.push(format!(
            "your write_file to {} was refused because the file had changed since you read it",
            changed.join(", ")
        ));
    }
    let why = why.join("; ");
    if !cx.fire_once(Gate::HeldBack) {
        let message = format!(
            "{}, and never made again: the file is unchanged",
            why.replace("your write_file", "the write_file")
        );
        return Verdict::Fail { error: ErrorEnvelope::new(ErrorCode::VerificationFailed, message), answer: None };
    }
    Verdict::Again {
        note: format!(
            "Not written: {why}, and the file is unchanged (it was shown to you then). If the task needs that \
             change, make it now: change the part that needs changing with edit_file, or call write_file again \
             with the complete new content. If not, leave it. Then answer."
        ),
        mode: Mode::Work,
    }
}
