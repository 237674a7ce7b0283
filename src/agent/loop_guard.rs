//! Loop detection: the same tool calls, iteration after iteration, and
//! cycles of calls whose results no longer change.
//!
//! Owns: the signature of an answer's calls (names and canonical JSON
//! arguments, so key order and spacing do not hide a repeat), the count of
//! consecutive identical iterations ([`LoopGuard`]), and the history of
//! (call, result) pairs across the send in which [`Cycles`] finds a
//! repetition of period two or three: `write a, read a, write a, read a`
//! with the same results each time is work going round, not forward.

use serde_json::Value;

use crate::model::ToolCall;

/// Identical consecutive tool-call iterations that count as a loop.
pub const LOOP_REPEATS: u32 = 3;

/// Counts consecutive iterations with identical tool calls.
#[derive(Debug, Default)]
pub struct LoopGuard {
    last: Option<String>,
    repeats: u32,
}

impl LoopGuard {
    /// Records one answer's (deduplicated) calls; true when this makes
    /// [`LOOP_REPEATS`] identical requests in a row. Repeats inside one
    /// answer count too (`copies`: the most times one call appeared in it),
    /// but one answer alone never makes a loop: its calls run once, and
    /// asking for them again in the next answer does.
    pub fn is_loop(&mut self, calls: &[ToolCall], copies: u32) -> bool {
        let weight = copies.clamp(1, LOOP_REPEATS - 1);
        let signature = signature(calls);
        if self.last.as_deref() == Some(signature.as_str()) {
            self.repeats = self.repeats.saturating_add(weight);
        } else {
            self.repeats = weight;
            self.last = Some(signature);
        }
        self.repeats >= LOOP_REPEATS
    }

    /// The last answer's calls changed a file's bytes: asking for the same
    /// calls again is another step (a line inserted once more), not a loop,
    /// so the count starts afresh. (A rewrite with the bytes a file already
    /// holds changes nothing and still counts.)
    pub fn progressed(&mut self) {
        self.repeats = 0;
        self.last = None;
    }
}

/// Shortest cycle looked for, in calls. The same call with the same result
/// twice in a row is the older guard's: it is answered "not run again"
/// with its earlier result, and three in a row end in the wrap-up. (The
/// eval's tune half showed a note on top of that only confused the model.)
pub const MIN_PERIOD: usize = 2;
/// Longest cycle looked for, in calls.
pub const MAX_PERIOD: usize = 3;

/// (call, result) pairs of one send, to find cycles in: their hashes since
/// the last cycle (at most `2 * MAX_PERIOD` of them are ever compared) and
/// the last [`MAX_PERIOD`] pairs themselves, for the note.
#[derive(Debug, Default)]
pub struct Cycles {
    history: Vec<u64>,
    recent: std::collections::VecDeque<(String, String)>,
    /// Times a cycle was found so far.
    pub found: u32,
}

impl Cycles {
    /// Records one call and the result the model read. Returns the period
    /// ([`MIN_PERIOD`] to [`MAX_PERIOD`]) when the last `period` pairs equal the
    /// `period` pairs before them; the history then starts afresh, so the
    /// same cycle is counted again only once it has gone round once more.
    pub fn record(&mut self, signature: &str, result: &str) -> Option<usize> {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (signature, result).hash(&mut h);
        if self.history.len() == 2 * MAX_PERIOD {
            self.history.remove(0);
        }
        self.history.push(h.finish());
        if self.recent.len() == MAX_PERIOD {
            self.recent.pop_front();
        }
        self.recent.push_back((signature.to_owned(), result.to_owned()));
        let n = self.history.len();
        let period = (MIN_PERIOD..=MAX_PERIOD)
            .find(|&p| n >= 2 * p && self.history[n - p..] == self.history[n - 2 * p..n - p])?;
        self.history.clear();
        self.found += 1;
        Some(period)
    }

    /// The last `period` (call, result) pairs recorded: the round of a cycle.
    pub fn round(&self, period: usize) -> Vec<(String, String)> {
        self.recent.iter().skip(self.recent.len().saturating_sub(period)).cloned().collect()
    }
}

/// What the model is told after a loop, before its last request
/// (`tool_choice: "none"`): answer the request itself, from what the tools
/// showed. (Asked for "what you did", a small model narrated the repeated
/// calls instead of answering.) The request is quoted back, never read.
pub fn wrap_up_note(request: &str) -> String {
    answer_now("the same call gives the same result", " (if you changed files, say what you changed)", request)
}

/// The note with the answer asked for after a write was withheld a second
/// time (`write_check`, [`super::mode::WrapUp::Withheld`]), with the request
/// (up to 300 characters) to answer.
pub fn withheld_note(request: &str) -> String {
    answer_now(
        "no file changes in this send, and writes are not run",
        "; if it needs a change, say what to change and where",
        request,
    )
}

/// The text every wrap-up note shares: why to stop calling tools, the
/// answer asked for in plain text (with `then` after "show"), and the
/// request quoted back (up to 300 characters), never read.
fn answer_now(why: &str, then: &str, request: &str) -> String {
    format!(
        "Stop calling tools: {why}. Now answer the request in plain text, without any JSON block, from what the \
         tool results above show{then}. The request was: {}",
        shorten(request.trim(), 300)
    )
}

/// The note after a repeated look in a send whose operator's check will
/// judge the files and no file has changed yet.
pub const REPEAT_TO_CHECK: &str = "You already have that result: it is above, and nothing has changed since. No \
     file has changed in this send yet, and the task is checked by running a command on the files, so an answer in \
     words cannot finish it. Make the change now with edit_file or write_file.";

/// The note for the first cycle of a send: which calls went round and
/// what to do instead.
pub fn cycle_note(calls: &[(String, String)]) -> String {
    let names: Vec<String> = calls.iter().map(|(sig, _)| shorten(sig, 120)).collect();
    format!(
        "You are going round in circles: {} gave exactly the same results as the same calls just before. \
         Repeating them changes nothing. If the task is done, stop calling tools and answer. If it is not, do \
         something different: read the error, change another line, or run the command that shows the problem.",
        names.join(", then ")
    )
}

fn shorten(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

/// Names and canonical arguments (keys sorted, no whitespace) of an
/// iteration's tool calls.
pub fn signature(calls: &[ToolCall]) -> String {
    calls.iter().map(call_signature).collect::<Vec<_>>().join("\u{1f}")
}

/// `name(canonical arguments)` of one call.
pub fn call_signature(c: &ToolCall) -> String {
    let args =
        serde_json::from_str::<Value>(&c.arguments).map(|v| canonical(&v)).unwrap_or_else(|_| c.arguments.clone());
    format!("{}({args})", c.name)
}

/// JSON text with object keys sorted at every level, whatever order the
/// map type keeps (serde_json's `preserve_order` may be on in a build).
fn canonical(v: &Value) -> String {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let parts: Vec<String> =
                keys.iter().map(|k| format!("{}:{}", Value::String((*k).clone()), canonical(&map[*k]))).collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(canonical).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_ignores_key_order_and_spacing() {
        let a = [ToolCall { id: "1".into(), name: "grep".into(), arguments: r#"{"pattern":"x","path":"src"}"#.into() }];
        let b = [ToolCall {
            id: "2".into(),
            name: "grep".into(),
            arguments: r#"{ "path": "src", "pattern": "x" }"#.into(),
        }];
        assert_eq!(signature(&a), signature(&b));
    }

    #[test]
    fn cycles_of_period_one_to_three_are_found_once_per_round() {
        let mut c = Cycles::default();
        let steps = [("w", "ok"), ("r", "1"), ("w", "ok"), ("r", "1")];
        let found: Vec<Option<usize>> = steps.iter().map(|(s, r)| c.record(s, r)).collect();
        assert_eq!(found, [None, None, None, Some(2)]);
        let mut c = Cycles::default();
        assert_eq!(c.record("r", "1"), None);
        assert_eq!(c.record("r", "1"), None, "period one is the older guard's");
        assert_eq!(c.record("w", "2"), None);
        assert_eq!(c.record("r", "1"), None);
        assert_eq!(c.record("w", "3"), None, "a changed result is progress");
        let mut c = Cycles::default();
        let abc = [("a", "1"), ("b", "2"), ("c", "3")];
        let found: Vec<Option<usize>> = abc.iter().chain(abc.iter()).map(|(s, r)| c.record(s, r)).collect();
        assert_eq!(found.last(), Some(&Some(3)));
        assert!(cycle_note(&[("read_file({})".into(), "1 x".into())]).contains("read_file({})"));
    }

    #[test]
    fn the_wrap_up_notes_quote_the_request_after_why_to_stop() {
        assert_eq!(
            wrap_up_note(" Fix a.py "),
            "Stop calling tools: the same call gives the same result. Now answer the request in plain text, \
             without any JSON block, from what the tool results above show (if you changed files, say what you \
             changed). The request was: Fix a.py"
        );
        assert_eq!(
            withheld_note("What does f do?"),
            "Stop calling tools: no file changes in this send, and writes are not run. Now answer the request in \
             plain text, without any JSON block, from what the tool results above show; if it needs a change, say \
             what to change and where. The request was: What does f do?"
        );
    }

    #[test]
    fn three_identical_iterations_are_a_loop() {
        let calls = [ToolCall { id: "1".into(), name: "glob".into(), arguments: "{}".into() }];
        let other = [ToolCall { id: "1".into(), name: "grep".into(), arguments: "{}".into() }];
        let mut g = LoopGuard::default();
        assert!(!g.is_loop(&calls, 1) && !g.is_loop(&calls, 1) && !g.is_loop(&other, 1) && !g.is_loop(&other, 1));
        assert!(g.is_loop(&other, 1));
        let mut g = LoopGuard::default();
        assert!(!g.is_loop(&calls, 200), "one answer alone is not a loop");
        assert!(g.is_loop(&calls, 1), "asking again after repeating it in one answer is");
        let mut g = LoopGuard::default();
        assert!(!g.is_loop(&calls, 1) && !g.is_loop(&calls, 1));
        g.progressed();
        assert!(!g.is_loop(&calls, 1), "calls that changed a file start the count afresh");
        assert!(!g.is_loop(&calls, 1) && g.is_loop(&calls, 1));
    }
}
