//! What a replayed request may differ in, and where two JSON values differ.
//!
//! A replayed session runs in another workspace (a fresh temp directory in
//! most tests), so every string holding the recorded workspace path is
//! compared with that path as `$WORKSPACE`. Nothing else is forgiven: ids in
//! the requests come from the recorded answers and are the same on replay,
//! and pirn puts no clock in a request.

use serde_json::{Value, json};

/// What stands for the workspace path in compared values.
pub const WORKSPACE: &str = "$WORKSPACE";

/// `value` with every occurrence of `workspace` in its strings (keys
/// included) replaced by [`WORKSPACE`].
pub fn without_workspace(value: &Value, workspace: Option<&str>) -> Value {
    let Some(ws) = workspace.filter(|w| !w.is_empty()) else { return value.clone() };
    match value {
        Value::String(s) => Value::String(s.replace(ws, WORKSPACE)),
        Value::Array(items) => Value::Array(items.iter().map(|i| without_workspace(i, Some(ws))).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.replace(ws, WORKSPACE), without_workspace(v, Some(ws)))).collect())
        }
        other => other.clone(),
    }
}

/// Where `recorded` and `sent` first differ (depth first, keys in order):
/// `{"path": JSON pointer, "recorded": …, "sent": …}` with long strings cut
/// to the region around their first differing character. `None`: equal.
pub fn first_difference(recorded: &Value, sent: &Value) -> Option<Value> {
    diff_at(recorded, sent, String::new())
}

fn diff_at(a: &Value, b: &Value, path: String) -> Option<Value> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| {
                let here = format!("{path}/{}", k.replace('~', "~0").replace('/', "~1"));
                match (x.get(k), y.get(k)) {
                    (Some(va), Some(vb)) => diff_at(va, vb, here),
                    (va, vb) => Some(json!({"path": here, "recorded": va, "sent": vb})),
                }
            })
        }
        (Value::Array(x), Value::Array(y)) => (0..x.len().max(y.len())).find_map(|i| match (x.get(i), y.get(i)) {
            (Some(va), Some(vb)) => diff_at(va, vb, format!("{path}/{i}")),
            (va, vb) => Some(json!({"path": format!("{path}/{i}"), "recorded": va, "sent": vb})),
        }),
        (Value::String(x), Value::String(y)) if x != y => {
            let (rx, ry) = around_difference(x, y);
            Some(json!({"path": path, "recorded": rx, "sent": ry}))
        }
        _ if a != b => Some(json!({"path": path, "recorded": a, "sent": b})),
        _ => None,
    }
}

/// Characters kept on each side of a string's first difference.
const CONTEXT_CHARS: usize = 60;

/// The two strings cut to the region around their first differing
/// character (`…` marks a cut).
fn around_difference(x: &str, y: &str) -> (String, String) {
    let same = x.chars().zip(y.chars()).take_while(|(a, b)| a == b).count();
    let cut = |s: &str| {
        let start = same.saturating_sub(CONTEXT_CHARS);
        let total = s.chars().count();
        let end = (same + CONTEXT_CHARS).min(total);
        let mut out: String = s.chars().skip(start).take(end - start).collect();
        if start > 0 {
            out.insert(0, '…');
        }
        if end < total {
            out.push('…');
        }
        out
    };
    (cut(x), cut(y))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_is_forgiven_and_differences_are_located() {
        let a = json!({"messages": [{"content": "in /tmp/a/x.py"}]});
        let b = json!({"messages": [{"content": "in /tmp/b/x.py"}]});
        assert_eq!(without_workspace(&a, Some("/tmp/a")), without_workspace(&b, Some("/tmp/b")));
        let d = first_difference(&json!({"m": [1, {"c": "hello world"}]}), &json!({"m": [1, {"c": "hello there"}]}));
        assert_eq!(d, Some(json!({"path": "/m/1/c", "recorded": "hello world", "sent": "hello there"})));
        let d = first_difference(&json!({"a": [1]}), &json!({"a": [1, 2]})).unwrap();
        assert_eq!(d["path"], "/a/1");
        assert_eq!(d["recorded"], Value::Null);
        let long_a = format!("{}A{}", "x".repeat(200), "y".repeat(200));
        let long_b = format!("{}B{}", "x".repeat(200), "y".repeat(200));
        let d = first_difference(&json!(long_a), &json!(long_b)).unwrap();
        assert!(d["recorded"].as_str().unwrap().starts_with('…') && d["recorded"].as_str().unwrap().len() < 140);
        assert_eq!(first_difference(&a, &a), None);
    }
}
