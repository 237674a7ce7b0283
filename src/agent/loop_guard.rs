//! Loop detection: the same tool calls, iteration after iteration.
//!
//! Owns: the signature of an answer's calls (names and canonical JSON
//! arguments, so key order and spacing do not hide a repeat) and the count
//! of consecutive identical iterations.

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
    fn three_identical_iterations_are_a_loop() {
        let calls = [ToolCall { id: "1".into(), name: "glob".into(), arguments: "{}".into() }];
        let other = [ToolCall { id: "1".into(), name: "grep".into(), arguments: "{}".into() }];
        let mut g = LoopGuard::default();
        assert!(!g.is_loop(&calls, 1) && !g.is_loop(&calls, 1) && !g.is_loop(&other, 1) && !g.is_loop(&other, 1));
        assert!(g.is_loop(&other, 1));
        let mut g = LoopGuard::default();
        assert!(!g.is_loop(&calls, 200), "one answer alone is not a loop");
        assert!(g.is_loop(&calls, 1), "asking again after repeating it in one answer is");
    }
}
