//! Transcripts: a worker's JSONL output, compared as a golden file.
//!
//! Two runs of the same conversation never print the same bytes: session
//! ids are random, latencies and heartbeats follow the clock, the
//! workspace is a fresh temp directory, a mock server's port is ephemeral.
//! [`Normalizer`] rewrites exactly those parts (and what the caller adds
//! with `ignore_fields` / `ignore_events`) so that everything else must be
//! equal, and [`diff`] shows where it is not.
//!
//! What is normalised, line by line (JSON lines; other lines are compared
//! as text):
//! - `session_id` → `"<session_id>"`; a `perm_…` `request_id` →
//!   `"<request_id>"`;
//! - `duration_ms` and every `*_latency_ms` number → `0`;
//! - `heartbeat` events are dropped (unless `keep_heartbeats`), and
//!   `event_seq` is renumbered per `send_id` so the gap does not show;
//! - in every string: each given workspace path, and any temp directory
//!   named like `tempfile`'s `.tmpXXXXXX` or `mktemp`'s `tmp.XXXXXXXXXX`,
//!   → `$WORKSPACE`; `127.0.0.1:PORT` and `localhost:PORT` → `…:<port>`;
//! - object keys are sorted, so key order never matters.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

/// What [`Normalizer::normalize`] forgives.
#[derive(Debug, Clone, Default)]
pub struct Normalizer {
    /// Workspace paths to write as `$WORKSPACE` (longest first is safest).
    pub workspaces: Vec<String>,
    /// Field names removed wherever they occur.
    pub ignore_fields: Vec<String>,
    /// Event names (`event.event`) whose lines are dropped.
    pub ignore_events: Vec<String>,
    /// Keep `heartbeat` events (their durations are still zeroed).
    pub keep_heartbeats: bool,
}

impl Normalizer {
    /// The normalised form of `text` (JSONL): one line per kept line, JSON
    /// lines re-encoded with sorted keys, blank lines dropped.
    pub fn normalize(&self, text: &str) -> Vec<String> {
        let mut seq: HashMap<String, u64> = HashMap::new();
        let mut out = Vec::new();
        for line in text.lines().map(str::trim_end).filter(|l| !l.trim().is_empty()) {
            let Ok(mut v) = serde_json::from_str::<Value>(line) else {
                out.push(self.text(line));
                continue;
            };
            if let Some(name) = v.pointer("/event/event").and_then(Value::as_str) {
                if (name == "heartbeat" && !self.keep_heartbeats) || self.ignore_events.iter().any(|e| e == name) {
                    continue;
                }
                if v.get("event_seq").is_some_and(Value::is_u64) {
                    let id = v.get("send_id").or_else(|| v.get("id")).and_then(Value::as_str).unwrap_or("").to_owned();
                    let next = seq.entry(id).or_insert(0);
                    v["event_seq"] = json!(*next);
                    *next += 1;
                }
            }
            let v = self.value(v);
            out.push(serde_json::to_string(&v).unwrap_or_default());
        }
        out
    }

    fn value(&self, v: Value) -> Value {
        match v {
            Value::Object(map) => {
                let mut entries: Vec<(String, Value)> = map
                    .into_iter()
                    .filter(|(k, _)| !self.ignore_fields.iter().any(|f| f == k))
                    .map(|(k, val)| {
                        let val = match (k.as_str(), val) {
                            ("session_id", Value::String(s)) if !s.is_empty() => json!("<session_id>"),
                            ("request_id", Value::String(s)) if s.starts_with("perm_") => json!("<request_id>"),
                            (k, Value::Number(_)) if k == "duration_ms" || k.ends_with("_latency_ms") => json!(0),
                            (_, val) => self.value(val),
                        };
                        (k, val)
                    })
                    .collect();
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                Value::Object(entries.into_iter().collect::<Map<String, Value>>())
            }
            Value::Array(items) => Value::Array(items.into_iter().map(|i| self.value(i)).collect()),
            Value::String(s) => Value::String(self.text(&s)),
            other => other,
        }
    }

    /// A string with workspaces, temp directories and local ports replaced.
    pub fn text(&self, s: &str) -> String {
        let mut s = s.to_owned();
        for ws in self.workspaces.iter().filter(|w| !w.is_empty()) {
            s = s.replace(ws.as_str(), "$WORKSPACE");
        }
        let tmp = std::env::temp_dir().display().to_string();
        for prefix in [".tmp", "tmp."] {
            s = replace_components(&s, &format!("{}/{prefix}", tmp.trim_end_matches('/')), "$WORKSPACE");
        }
        for host in ["127.0.0.1:", "localhost:"] {
            s = replace_port(&s, host);
        }
        s
    }
}

/// Replaces each `start` followed by the rest of a path component.
fn replace_components(s: &str, start: &str, with: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(start) {
        out.push_str(&rest[..i]);
        out.push_str(with);
        let after = &rest[i + start.len()..];
        let end =
            after.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-' || c == '.')).unwrap_or(after.len());
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Replaces the digits after each `host` (`127.0.0.1:`) with `<port>`.
fn replace_port(s: &str, host: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(host) {
        out.push_str(&rest[..i + host.len()]);
        let after = &rest[i + host.len()..];
        let digits = after.find(|c: char| !c.is_ascii_digit()).unwrap_or(after.len());
        if digits > 0 {
            out.push_str("<port>");
        }
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

/// A unified diff of two normalised transcripts (`-` expected, `+` actual,
/// two lines of context); `None` when they are equal.
pub fn diff(expected: &[String], actual: &[String]) -> Option<String> {
    if expected == actual {
        return None;
    }
    let e: Vec<&str> = expected.iter().map(String::as_str).collect();
    let a: Vec<&str> = actual.iter().map(String::as_str).collect();
    let text = similar::TextDiff::from_slices(&e, &a)
        .unified_diff()
        .context_radius(2)
        .header("expected", "actual")
        .to_string();
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unstable_parts_are_normalised_and_the_rest_compared() {
        let n = Normalizer { workspaces: vec!["/work/ws1".into()], ..Normalizer::default() };
        let a = r#"{"type":"init_ok","id":"1","session_id":"abc","protocol_version":"0.2.0"}
{"type":"event","send_id":"s","event_seq":0,"event":{"event":"heartbeat","duration_ms":5000}}
{"type":"event","send_id":"s","event_seq":1,"event":{"event":"tool_end","name":"read_file","result_preview":"/work/ws1/a.py: ok","duration_ms":3}}
{"type":"result","id":"s","model_latency_ms":12,"error":{"message":"cannot connect to 127.0.0.1:41234"}}
not json"#;
        let b = r#"{"id":"1","type":"init_ok","session_id":"xyz","protocol_version":"0.2.0"}
{"type":"event","send_id":"s","event_seq":0,"event":{"event":"tool_end","name":"read_file","result_preview":"/tmp/.tmpAb12Cd/a.py: ok","duration_ms":9}}
{"type":"result","id":"s","model_latency_ms":99,"error":{"message":"cannot connect to 127.0.0.1:5555"}}

not json"#;
        let (na, nb) = (n.normalize(a), n.normalize(b));
        assert_eq!(na, nb);
        assert_eq!(diff(&na, &nb), None);
        assert!(na[1].contains(r#""event_seq":0"#) && na[1].contains("$WORKSPACE/a.py"), "{}", na[1]);
        let changed = n.normalize(&b.replace("read_file", "grep"));
        let d = diff(&na, &changed).unwrap();
        assert!(d.contains("-{") && d.contains("+{") && d.contains("grep"), "{d}");
        let ignoring = Normalizer { ignore_fields: vec!["protocol_version".into()], ..n.clone() };
        assert!(!ignoring.normalize(a)[0].contains("protocol_version"));
        let keep = Normalizer { keep_heartbeats: true, ..n };
        assert_eq!(keep.normalize(a).len(), na.len() + 1);
    }
}
