//! The tool calls of one model answer, run in order: a call that repeats
//! one of the previous answer is answered with its earlier result, unless
//! the workspace may have changed since; the tool-call budget is charged.
//!
//! Owns: the repeat rule and what counts as a change of the workspace for
//! it. A small model that asks for the same read again needs to hear that
//! the result is the same, not the result a second time; but the same
//! `python3 greet.py` after an edit of greet.py is a new question (the
//! eval's logs showed the old rule answering it with the traceback from
//! before the fix, and the model then undoing a correct fix).

use super::answer_check::Progress;
use super::batch::Turn;
use super::send_spec::SendSpec;
use super::tool_call::{self, CallContext};
use super::{SendStats, budget, loop_guard};
use crate::conversation::Conversation;
use crate::model::ToolCall;
use crate::tools;

/// A call's signature and the result the model read.
pub type Done = (String, String);

/// True when `tool` may change what later calls see: the file writers,
/// `bash`, and any tool that is not one of pirn's read-only ones (an MCP
/// tool may do anything).
pub fn may_change(tool: &str) -> bool {
    !matches!(tool, "read_file" | "glob" | "grep")
}

/// The results of `calls` that a later call may be answered with: those
/// that no later call in the same list may have changed.
pub fn still_valid(calls: &[ToolCall], results: Vec<Done>) -> Vec<Done> {
    let last_change = calls.iter().rposition(|c| may_change(&c.name));
    results.into_iter().enumerate().filter(|(i, _)| last_change.is_none_or(|at| *i > at)).map(|(_, r)| r).collect()
}

/// Runs the calls of `turn` (its `note` goes with the last result), each
/// answered from `previous` when it repeats one there and nothing of this
/// answer ran before it that may have changed the workspace. Returns each
/// call's (signature, result).
pub async fn run(
    cx: &CallContext<'_>,
    conv: &mut Conversation,
    stats: &mut SendStats,
    progress: &mut Progress,
    spec: &mut SendSpec,
    turn: &Turn,
    previous: &[Done],
) -> Vec<Done> {
    let last = turn.run.len().saturating_sub(1);
    let mut results = Vec::with_capacity(turn.run.len());
    let mut changed = false;
    for (i, call) in turn.run.iter().enumerate() {
        let note = if i == last { turn.note.as_deref() } else { None };
        let signature = loop_guard::call_signature(call);
        // A refused rewrite asked for again is the model's confirmation:
        // it runs, where any other repeat is answered with its result.
        let earlier = previous
            .iter()
            .find(|(s, earlier)| *s == signature && !tools::write_file::is_drop_refusal(earlier))
            .filter(|_| !changed);
        match earlier {
            Some((_, earlier)) => {
                tool_call::repeat(conv, call, earlier);
                results.push((signature, earlier.clone()));
            }
            None if !spec.meter.take_tool_call() => {
                let text = budget::not_run(spec.meter.max_tool_calls());
                conv.push_tool_result(&call.id, text.clone());
                results.push((signature, text));
            }
            None => {
                let text = tool_call::run(cx, conv, stats, call, note).await;
                progress.record(&call.name, &text);
                changed |= may_change(&call.name);
                results.push((signature, text));
            }
        }
    }
    results
}

/// True when `results` hold an edit or write that the tools answered "no
/// change" (the change is already in the file) with nothing left to do
/// (no note of remaining uses or a broken parse): the model is redoing
/// work that is done.
pub fn redone(turn: &Turn, results: &[Done]) -> bool {
    turn.run.iter().zip(results).any(|(call, (_, text))| {
        matches!(call.name.as_str(), "edit_file" | "write_file")
            && text.starts_with(tools::NO_CHANGE)
            && !text.contains("\nNote: ")
            && !text.contains("\nWarning: ")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str) -> ToolCall {
        ToolCall { id: name.into(), name: name.into(), arguments: "{}".into() }
    }

    #[test]
    fn results_before_a_change_are_not_kept() {
        let calls = [call("read_file"), call("edit_file"), call("bash"), call("grep")];
        let results: Vec<Done> = calls.iter().map(|c| (c.name.clone(), "r".to_owned())).collect();
        let kept: Vec<String> = still_valid(&calls, results).into_iter().map(|(s, _)| s).collect();
        assert_eq!(kept, ["grep"], "only what no later call may have changed");
        let reads = [call("read_file"), call("glob")];
        let results: Vec<Done> = reads.iter().map(|c| (c.name.clone(), "r".to_owned())).collect();
        assert_eq!(still_valid(&reads, results).len(), 2);
    }
}
