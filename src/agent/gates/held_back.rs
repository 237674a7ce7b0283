//! Gate: a write the tools held back and the model never confirmed.
//!
//! Reads: [`crate::agent::facts::Facts::held_back`], the rewrites that would
//! have removed most of a file, held back once by `write_file` and neither
//! asked for again nor superseded by a later change of that file. May: send
//! the model back once, saying those files were not written and how to
//! write them; then the answer goes on (what the result reports is what is
//! on disk: those files unchanged).

use super::Verdict;
use crate::agent::cx::SendCx;
use crate::agent::mode::Mode;

pub(super) fn review(cx: &mut SendCx<'_>) -> Verdict {
    if !cx.checks || cx.facts.held_back.is_empty() || !cx.fire_once("held_back") {
        return Verdict::Pass;
    }
    let files: Vec<String> = cx.facts.held_back.iter().map(|p| cx.shown(p)).collect();
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
