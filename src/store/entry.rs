//! The records of a session log and how they are written and read.
//!
//! Owns: the one format both back ends store (a JSONL file line, or a
//! Postgres row's `body` column plus its `seq`/`writer`/`n`/`at_ms`
//! columns), and `pirn sessions export`'s output, which is the same lines.
//!
//! A stored entry is
//! `{"seq":12,"writer":"9f…","n":7,"at_ms":1763870000123,"body":{"kind":"line",…}}`:
//! - `seq`: the entry's place in its session, from 1, gap-free, assigned
//!   by the store;
//! - `writer`, `n`: the entry id. `writer` names one journal (a fresh
//!   UUID per process and session), `n` counts its entries from 0; an
//!   append of an id already stored is a no-op (a retried append);
//! - `at_ms`: Unix time in milliseconds when the entry was made;
//! - `body`: one of [`Body`]'s kinds.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

/// What an entry records (`body.kind`).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Body {
    /// The first entry: the session as `init` opened it. `config` is
    /// `init.config` as given (it holds no secrets: API keys come from the
    /// environment, which is never stored).
    Meta { session_id: String, protocol_version: String, model: String, workspace: String, config: Value },
    /// A process took the session over (`resume_session_id`).
    Resume { pid: u32, host: String },
    /// A conversation message as sent to the model (OpenAI chat format).
    Message { message: Value },
    /// The whole conversation, replacing what came before (after a
    /// compaction, pruning or an edit of the system prompt).
    History { messages: Vec<Value> },
    /// A send (or a `compact`) started running.
    Send {
        send_id: String,
        message: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        compact: bool,
    },
    /// One emitted line: `frame` is its session-wide number (the SSE `id`),
    /// `data` the JSON object written to stdout or SSE.
    Line {
        frame: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        send_id: Option<String>,
        event: String,
        data: Value,
    },
}

/// An entry as read back from a store.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
pub struct Stored {
    pub seq: u64,
    pub writer: String,
    pub n: u64,
    pub at_ms: u64,
    pub body: Body,
}

/// An entry to append: its id (`n`, with the journal's `writer`), time and
/// body, already serialised.
#[derive(Debug, Clone)]
pub struct NewEntry {
    pub n: u64,
    pub at_ms: u64,
    /// `body.kind`, kept apart for a store's index.
    pub kind: &'static str,
    pub body: Box<RawValue>,
}

/// A `line` body borrowing the line already serialised by the writer
/// (writing it does not parse it again).
#[derive(Serialize)]
struct LineRef<'a> {
    kind: &'static str,
    frame: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    send_id: Option<&'a str>,
    event: &'a str,
    data: &'a RawValue,
}

/// The stored form of an entry, for writing.
#[derive(Serialize)]
struct StoredRef<'a> {
    seq: u64,
    writer: &'a str,
    n: u64,
    at_ms: u64,
    body: &'a RawValue,
}

impl NewEntry {
    /// An entry of any kind but `line`.
    pub fn new(n: u64, at_ms: u64, body: &Body) -> Option<NewEntry> {
        let kind = match body {
            Body::Meta { .. } => "meta",
            Body::Resume { .. } => "resume",
            Body::Message { .. } => "message",
            Body::History { .. } => "history",
            Body::Send { .. } => "send",
            Body::Line { .. } => "line",
        };
        let body = serde_json::value::to_raw_value(body).ok()?;
        Some(NewEntry { n, at_ms, kind, body })
    }

    /// A `line` entry for `data`, one JSON object as written (no newline).
    /// `None` when `data` is not JSON (nothing the writers produce).
    pub fn line(n: u64, at_ms: u64, frame: u64, send_id: Option<&str>, event: &str, data: &str) -> Option<NewEntry> {
        let data: &RawValue = serde_json::from_str(data).ok()?;
        let body = serde_json::value::to_raw_value(&LineRef { kind: "line", frame, send_id, event, data }).ok()?;
        Some(NewEntry { n, at_ms, kind: "line", body })
    }

    /// The stored line for this entry at `seq` (no newline).
    pub fn to_line(&self, seq: u64, writer: &str) -> String {
        let stored = StoredRef { seq, writer, n: self.n, at_ms: self.at_ms, body: &self.body };
        serde_json::to_string(&stored).unwrap_or_default()
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_entry_round_trips_without_reparsing_its_data() {
        let e = NewEntry::line(3, 10, 7, Some("2"), "result", r#"{"type":"result","id":"2"}"#).unwrap();
        let text = e.to_line(12, "w");
        assert_eq!(
            text,
            r#"{"seq":12,"writer":"w","n":3,"at_ms":10,"body":{"kind":"line","frame":7,"send_id":"2","event":"result","data":{"type":"result","id":"2"}}}"#
        );
        let back: Stored = serde_json::from_str(&text).unwrap();
        assert!(matches!(back.body, Body::Line { frame: 7, ref event, .. } if event == "result"));
        let send = NewEntry::new(4, 11, &Body::Send { send_id: "3".into(), message: "hi".into(), compact: false });
        let back: Stored = serde_json::from_str(&send.unwrap().to_line(13, "w")).unwrap();
        assert_eq!(back.body, Body::Send { send_id: "3".into(), message: "hi".into(), compact: false });
    }
}
