//! Gate: an answer that changed nothing and rests on search results alone.
//!
//! Reads: that no file changed in the send and no command ran
//! ([`crate::agent::reading::quiet`]), and which of pirn's tools the model
//! looked with ([`crate::agent::facts::Facts::looked_with`]): `grep`, and
//! no successful `read_file`. A search shows the lines that match a
//! pattern, cut from their file (or only their count, or nothing when the
//! pattern misses); a small model answers from them as if it had read the
//! file: a count of the lines it happened to match, a value from a pattern
//! that matched nothing. On Qwen2.5-Coder-1.5B (the tune and tune_2
//! splits, 7e3ac24), 4 of the 5 answers that rested on `grep` alone were
//! wrong, each ending `ok`.
//!
//! May: send the model back once, its next request made with
//! `tool_choice: "required"` ([`Mode::Act`]), asking it to read the file
//! the answer is about. The next answer passes whatever it says: the gate
//! never fails a send and reads no word of the request or the answer.
//! `glob` alone does not fire it: names are what a question about files
//! asks for.
//!
//! On in a profile with `read_before_answer` (`small`, see
//! `config::profile`); `answer_checks: false` turns it off too. Never with
//! a write held back (the `HeldBack` gate speaks to it), in plan mode, with
//! an `output_schema`, or in a wrap-up. No side call: it costs the model
//! call it asks for.

use super::order::Gate;
use super::verdict::Verdict;
use crate::agent::mode::Mode;
use crate::agent::reading::quiet;
use crate::agent::send_state::SendState;

/// What the model is told when its answer rests on search results alone.
pub const NOTE: &str = "Your answer rests on grep results alone: they show only the lines that matched your pattern \
     (or none), not the file. Call read_file on the file your answer is about, then answer from what it holds.";

pub(super) fn review(cx: &mut SendState<'_>) -> Verdict {
    if !cx.config.profile.read_before_answer || !quiet(cx) || !cx.facts.held_back.is_empty() {
        return Verdict::Pass;
    }
    if !searched_only(&cx.facts.looked_with) || !cx.fire_once(Gate::SearchedOnly) {
        return Verdict::Pass;
    }
    Verdict::Again { note: NOTE.to_owned(), mode: Mode::Act }
}

/// True when the tools the send looked with include `grep` and not
/// `read_file`.
fn searched_only(looked_with: &std::collections::BTreeSet<String>) -> bool {
    looked_with.contains("grep") && !looked_with.contains("read_file")
}

#[cfg(test)]
mod tests {
    use super::searched_only;

    #[test]
    fn only_a_grep_without_a_read_counts_as_searched_only() {
        let set = |names: &[&str]| names.iter().map(|n| n.to_string()).collect();
        assert!(searched_only(&set(&["grep"])));
        assert!(searched_only(&set(&["grep", "glob"])));
        assert!(!searched_only(&set(&["grep", "read_file"])));
        assert!(!searched_only(&set(&["glob"])), "names are an answer about files");
        assert!(!searched_only(&set(&[])), "an answer with no look at all is not about the files read");
    }
}
