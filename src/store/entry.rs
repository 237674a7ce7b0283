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
//! - `body`: one of [`Body`]'s kinds. Emitted lines that arrive together
//!   share one `lines` entry (a long answer's deltas are hundreds of lines
//!   a batch), so an entry's framing is paid per batch, not per line.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What an entry records (`body.kind`).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Body {
    /// The first entry: the session as `init` opened it. `config` is
    /// `init.config` as given (it holds no secrets: API keys come from the
    /// environment, which is never stored).
    Meta {
        session_id: String,
        protocol_version: String,
        model: String,
        workspace: String,
        config: Value,
        /// A fork's origin: `{session_id, at_message}` (see
        /// `session::fork`); absent for a session opened fresh.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        forked_from: Option<ForkedFrom>,
    },
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
    /// Consecutive emitted lines logged together (what a journal batch
    /// held), in frame order.
    Lines { lines: Vec<LineOf> },
    /// What a file was before send `send_id` first changed it (see
    /// `checkpoint`): `path` relative to the workspace.
    Checkpoint { send_id: String, path: String, before: FileBefore },
    /// What send `send_id` left in each file it changed, at its end
    /// (`hash`: [`FileBefore::File`]'s hash of the bytes; absent: no file).
    Left { send_id: String, files: Vec<FileLeft> },
    /// A rewind put back the files of the sends from the one whose `send`
    /// entry is `to_seq` on: those sends' checkpoints are spent.
    Rewind { to_seq: u64, restored: Vec<String> },
    /// The files the model has seen, at the end of a send that changed
    /// what it has seen: each with the hash of the bytes it last read or
    /// wrote. The whole set, replacing the last `seen` entry, so a resumed
    /// session refuses a whole-file write from a stale view as the process
    /// that wrote the entry would have.
    Seen { files: Vec<FileSeen> },
    /// Entries that never reached the store: while it failed, more was
    /// handed in than the journal holds for a retry, and the oldest were
    /// dropped. Written when the store works again, where they were.
    Gap { entries: u64, cause: String },
}

/// Where a forked session came from (its `meta` entry's `forked_from`):
/// the stored session it copies and how many of that session's messages
/// it holds (from 1, the system prompt not counted).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
pub struct ForkedFrom {
    pub session_id: String,
    pub at_message: u64,
}

/// A file as it was before a send changed it (a `checkpoint` entry).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum FileBefore {
    /// There was no file at the path.
    Absent,
    /// A regular file: its permission bits (`st_mode & 0o7777`), its bytes
    /// in standard base64, and the 64-bit FNV-1a hash of the bytes as 16
    /// hex digits.
    File { mode: u32, data: String, hash: String },
    /// There was a file, but it was not kept (over the checkpoint bounds,
    /// or unreadable): a rewind cannot put it back. `reason` says which.
    Unkept { reason: String },
}

/// A file as a send left it (a `left` entry).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
pub struct FileLeft {
    pub path: String,
    /// The hash of its bytes (as in [`FileBefore::File`]); `None`: no file.
    pub hash: Option<String>,
}

/// A file the model has seen (a `seen` entry): `path` relative to the
/// workspace, `hash` the 64-bit FNV-1a hash of the bytes it saw as 16 hex
/// digits (as in [`FileBefore::File`]).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
pub struct FileSeen {
    pub path: String,
    pub hash: String,
}

/// One line of a [`Body::Lines`] entry: the fields of a `line` body.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
pub struct LineOf {
    pub frame: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_id: Option<String>,
    pub event: String,
    pub data: Value,
}

/// An emitted line as read back: `(frame, send_id, event, data)`.
pub type LineRef<'a> = (u64, Option<&'a str>, &'a str, &'a Value);

impl Stored {
    /// The emitted lines this entry holds (none, one or many).
    pub fn lines(&self) -> Vec<LineRef<'_>> {
        match &self.body {
            Body::Line { frame, send_id, event, data } => vec![(*frame, send_id.as_deref(), event, data)],
            Body::Lines { lines } => {
                lines.iter().map(|l| (l.frame, l.send_id.as_deref(), l.event.as_str(), &l.data)).collect()
            }
            _ => Vec::new(),
        }
    }
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
    /// The body's JSON text (valid JSON by construction: built by serde, or
    /// by [`NewEntry::line`] around a line serde wrote).
    pub body: String,
}

impl NewEntry {
    /// An entry of any kind.
    pub fn new(n: u64, at_ms: u64, body: &Body) -> Option<NewEntry> {
        let kind = match body {
            Body::Meta { .. } => "meta",
            Body::Resume { .. } => "resume",
            Body::Message { .. } => "message",
            Body::History { .. } => "history",
            Body::Send { .. } => "send",
            Body::Line { .. } => "line",
            Body::Lines { .. } => "lines",
            Body::Gap { .. } => "gap",
            Body::Checkpoint { .. } => "checkpoint",
            Body::Left { .. } => "left",
            Body::Rewind { .. } => "rewind",
            Body::Seen { .. } => "seen",
        };
        let body = serde_json::to_string(body).ok()?;
        Some(NewEntry { n, at_ms, kind, body })
    }

    /// One emitted line as the fields of a `line` body, `{"frame":…,
    /// "send_id":…,"event":…,"data":…}`, around `data`, one JSON object
    /// exactly as a writer serialised it (not parsed again: the relay of a
    /// long answer logs thousands of lines a second).
    pub fn line_object(frame: u64, send_id: Option<&str>, event: &str, data: &str) -> String {
        let mut obj = String::with_capacity(data.len() + 80);
        obj.push_str("{\"frame\":");
        obj.push_str(&frame.to_string());
        if let Some(id) = send_id {
            obj.push_str(",\"send_id\":");
            push_json_str(&mut obj, id);
        }
        obj.push_str(",\"event\":");
        push_json_str(&mut obj, event);
        obj.push_str(",\"data\":");
        obj.push_str(data);
        obj.push('}');
        obj
    }

    /// The entry for consecutive lines built by [`NewEntry::line_object`]:
    /// a `line` entry for one, a `lines` entry for more.
    pub fn lines(n: u64, at_ms: u64, objects: &[String]) -> NewEntry {
        if let [one] = objects {
            let body = format!("{{\"kind\":\"line\",{}", one.strip_prefix('{').unwrap_or(one));
            return NewEntry { n, at_ms, kind: "line", body };
        }
        let mut body = String::with_capacity(objects.iter().map(|o| o.len() + 1).sum::<usize>() + 32);
        body.push_str("{\"kind\":\"lines\",\"lines\":[");
        for (i, o) in objects.iter().enumerate() {
            if i > 0 {
                body.push(',');
            }
            body.push_str(o);
        }
        body.push_str("]}");
        NewEntry { n, at_ms, kind: "lines", body }
    }

    /// A `line` entry (see [`NewEntry::line_object`]).
    pub fn line(n: u64, at_ms: u64, frame: u64, send_id: Option<&str>, event: &str, data: &str) -> NewEntry {
        NewEntry::lines(n, at_ms, &[NewEntry::line_object(frame, send_id, event, data)])
    }

    /// Appends the stored line for this entry at `seq` to `out` (no
    /// newline); `writer` is the writer id already as a JSON string.
    pub fn write_line(&self, seq: u64, writer_json: &str, out: &mut String) {
        use std::fmt::Write;
        let _ = write!(
            out,
            "{{\"seq\":{seq},\"writer\":{writer_json},\"n\":{},\"at_ms\":{},\"body\":{}}}",
            self.n, self.at_ms, self.body
        );
    }

    /// The stored line for this entry at `seq` (no newline).
    pub fn to_line(&self, seq: u64, writer: &str) -> String {
        let mut out = String::new();
        self.write_line(seq, &json_str(writer), &mut out);
        out
    }
}

/// `s` as a JSON string literal.
pub fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_json_str(&mut out, s);
    out
}

fn push_json_str(out: &mut String, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        out.push_str(&serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned()));
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
        let e = NewEntry::line(3, 10, 7, Some("2"), "result", r#"{"type":"result","id":"2"}"#);
        let text = e.to_line(12, "w");
        assert_eq!(
            text,
            r#"{"seq":12,"writer":"w","n":3,"at_ms":10,"body":{"kind":"line","frame":7,"send_id":"2","event":"result","data":{"type":"result","id":"2"}}}"#
        );
        let back: Stored = serde_json::from_str(&text).unwrap();
        assert!(matches!(back.body, Body::Line { frame: 7, ref event, .. } if event == "result"));
        let odd = NewEntry::line(0, 0, 1, Some("a\"b\n"), "x", "{}").to_line(1, "w\\");
        let back: Stored = serde_json::from_str(&odd).unwrap();
        assert!(matches!(back.body, Body::Line { send_id: Some(ref s), .. } if s == "a\"b\n"));
        assert_eq!(back.writer, "w\\");
        let objects: Vec<String> =
            (1..=3).map(|f| NewEntry::line_object(f, Some("s"), "content_delta", r#"{"x":1}"#)).collect();
        let many: Stored = serde_json::from_str(&NewEntry::lines(5, 0, &objects).to_line(2, "w")).unwrap();
        let frames: Vec<u64> = many.lines().iter().map(|l| l.0).collect();
        assert_eq!(frames, [1, 2, 3]);
        assert_eq!(many.lines()[2].3, &serde_json::json!({"x": 1}));
        let send = NewEntry::new(4, 11, &Body::Send { send_id: "3".into(), message: "hi".into(), compact: false });
        let back: Stored = serde_json::from_str(&send.unwrap().to_line(13, "w")).unwrap();
        assert_eq!(back.body, Body::Send { send_id: "3".into(), message: "hi".into(), compact: false });
    }
}
