//! Gate: the answer asked for after the model went round in circles.
//!
//! Reads: the mode (`WrapUp(SecondCycle)`: the calls went round the same
//! cycle twice), and the answer's shape: a wrap-up answer that is one JSON
//! object with a `name` and `arguments` is a tool call written out, not an
//! answer. May: end the send `loop_detected` (the answer, or pirn's account
//! of what changed, goes with it); a tool call written out by a model that
//! did change files is replaced by pirn's account of those changes, and the
//! later gates (the files on disk, the operator's check) decide.

use super::verdict::{Answer, Verdict, said};
use crate::agent::mode::{Mode, WrapUp};
use crate::agent::send_state::SendState;
use crate::wire::{ErrorCode, ErrorEnvelope};

/// Why a send ends when the wrap-up answer is a tool call written out.
const NO_ANSWER: &str =
    "the model kept calling tools and, asked for its answer, wrote out another tool call instead of answering";

pub(super) fn review(cx: &mut SendState<'_>, answer: &mut Answer) -> Verdict {
    if !cx.mode.is_wrap_up() {
        return Verdict::Pass;
    }
    if is_call_text(&answer.text) {
        if !cx.facts.wrote() {
            let error = ErrorEnvelope::new(ErrorCode::LoopDetected, NO_ANSWER);
            return Verdict::Fail { error, answer: Some(cx.account()) };
        }
        answer.text = cx.account();
    }
    if cx.mode == Mode::WrapUp(WrapUp::SecondCycle) {
        let error = ErrorEnvelope::new(
            ErrorCode::LoopDetected,
            "the model went round the same tool calls twice; stopped after its account of what it did",
        );
        return Verdict::Fail { error, answer: said(&answer.text).or_else(|| Some(cx.account())) };
    }
    Verdict::Pass
}

/// True when `text` is (in a fence or not) one JSON object shaped like a
/// tool call: a `name` string and an `arguments` (or `parameters`) value.
pub(super) fn is_call_text(text: &str) -> bool {
    let t = text.trim();
    let t = t.strip_prefix("```json").or_else(|| t.strip_prefix("```")).unwrap_or(t);
    let t = t.strip_suffix("```").unwrap_or(t).trim();
    let t = t.strip_prefix("<tool_call>").and_then(|r| r.strip_suffix("</tool_call>")).unwrap_or(t).trim();
    match serde_json::from_str::<serde_json::Value>(t) {
        Ok(serde_json::Value::Object(o)) => {
            o.get("name").is_some_and(|n| n.is_string())
                && (o.contains_key("arguments") || o.contains_key("parameters"))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_tool_call_written_out_is_told_by_its_shape() {
        assert!(super::is_call_text(r#"{"name": "read_file", "arguments": {"file_path": "a.py"}}"#));
        assert!(super::is_call_text("```json\n{\"name\": \"bash\", \"arguments\": {}}\n```"));
        assert!(!super::is_call_text("The file defines two functions."));
        assert!(!super::is_call_text(r#"{"name": "Ada", "age": 36}"#));
    }
}
