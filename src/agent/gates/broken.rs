//! Gate: a file the send changed that parsed before and does not now; in
//! a profile with `parse_check` only (`config::profile`).
//!
//! Reads: the files `write_file`/`edit_file` changed in this send, each with
//! whether it parsed before its first change, parsed again now in process
//! ([`crate::tools::syntax`]; languages it does not know are never
//! "broken"). May: send the model back once with the parser's message and
//! its tools; a file still broken after that ends the send
//! `verification_failed`.

use super::order::Gate;
use super::verdict::Verdict;
use crate::agent::mode::Mode;
use crate::agent::send_state::SendState;
use crate::wire::{ErrorCode, ErrorEnvelope};

pub(super) async fn review(cx: &mut SendState<'_>) -> Verdict {
    if !cx.checks || !cx.config.profile.parse_check || !cx.facts.wrote() {
        return Verdict::Pass;
    }
    let Some((file, problem)) = cx.tools.off_thread(|t| t.broken()).await.into_iter().next() else {
        return Verdict::Pass;
    };
    if cx.fire_once(Gate::Broken) {
        let note = format!("Not finished: {file} does not parse now ({problem}). Fix it, then answer.");
        return Verdict::Again { note, mode: Mode::Work };
    }
    let error = ErrorEnvelope::new(ErrorCode::VerificationFailed, format!("{file} no longer parses: {problem}"));
    Verdict::Fail { error, answer: None }
}
