//! Reading a session log back: the conversation, the sends that never got
//! their result, and the emitted lines.
//!
//! Owns: the rules of resume. The conversation is the last `history`
//! entry plus the `message` entries after it. A `send` entry opens a send;
//! the next `line` that is a `result` with its id closes it; a send still
//! open at the end of the log was interrupted (its process died). A
//! `resume` entry closes the sends open before it (that resume reported
//! them).

use async_openai::types::chat::ChatCompletionRequestMessage;
use serde_json::Value;

use super::entry::{Body, Stored};

/// A session log, folded.
#[derive(Debug, Default)]
pub struct Folded {
    /// `init.config` of the meta entry (`Value::Null` when there is none).
    pub config: Value,
    pub model: String,
    /// The workspace of the first meta entry (empty when there is none).
    pub workspace: String,
    /// The conversation, in model order.
    pub messages: Vec<ChatCompletionRequestMessage>,
    /// Entries that held a message this build cannot read (skipped).
    pub unreadable: usize,
    /// Sends that started and never got a result: `(send_id, message)`.
    pub interrupted: Vec<(String, String)>,
    /// The highest `line` frame number (0 when none).
    pub last_frame: u64,
    /// The last `seq`.
    pub last_seq: u64,
    /// The files the model had seen, from the last `seen` entry.
    pub seen: Vec<super::entry::FileSeen>,
}

/// Folds `entries` (a whole log, in order).
pub fn fold(entries: &[Stored]) -> Folded {
    let mut f = Folded { config: Value::Null, ..Folded::default() };
    let mut raw: Vec<&Value> = Vec::new();
    let mut open: Vec<(String, String)> = Vec::new();
    for e in entries {
        f.last_seq = e.seq;
        match &e.body {
            Body::Meta { config, model, workspace, .. } => {
                if f.config.is_null() {
                    f.config = config.clone();
                    f.workspace.clone_from(workspace);
                }
                f.model = model.clone();
            }
            // A resume reported (and told the model about) the sends open
            // before it: a later resume must not report them again.
            Body::Resume { .. } => open.clear(),
            Body::Message { message } => raw.push(message),
            Body::History { messages } => raw = messages.iter().collect(),
            Body::Send { send_id, message, .. } => open.push((send_id.clone(), message.clone())),
            Body::Seen { files } => f.seen.clone_from(files),
            // What a gap lost is not known; a send whose result was in it
            // reads as interrupted, which is the honest reading.
            Body::Gap { .. } | Body::Checkpoint { .. } | Body::Left { .. } | Body::Rewind { .. } => {}
            Body::Line { .. } | Body::Lines { .. } => {
                for (frame, send_id, event, _) in e.lines() {
                    f.last_frame = f.last_frame.max(frame);
                    if event == "result"
                        && let Some(id) = send_id
                        && let Some(i) = open.iter().position(|(s, _)| s == id)
                    {
                        open.remove(i);
                    }
                }
            }
        }
    }
    for m in raw {
        match serde_json::from_value(m.clone()) {
            Ok(m) => f.messages.push(m),
            Err(_) => f.unreadable += 1,
        }
    }
    f.interrupted = open;
    f
}

/// The emitted lines with a frame number above `after`: `(frame, line)`.
pub fn lines_after(entries: &[Stored], after: u64) -> Vec<(u64, &Value, &str)> {
    entries
        .iter()
        .flat_map(|e| e.lines())
        .filter(|(frame, ..)| *frame > after)
        .map(|(frame, _, event, data)| (frame, data, event))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stored(seq: u64, body: Body) -> Stored {
        Stored { seq, writer: "w".into(), n: seq, at_ms: 0, body }
    }

    #[test]
    fn history_replaces_and_an_unanswered_send_is_interrupted() {
        let user = |t: &str| json!({"role": "user", "content": t});
        let send = |id: &str| Body::Send { send_id: id.into(), message: "m".into(), compact: false };
        let result = |frame, id: &str| Body::Line {
            frame,
            send_id: Some(id.into()),
            event: "result".into(),
            data: json!({"type": "result", "id": id}),
        };
        let log = [
            stored(1, send("1")),
            stored(2, Body::Message { message: user("a") }),
            stored(3, result(1, "1")),
            stored(4, Body::History { messages: vec![user("summary")] }),
            stored(5, send("1")),
            stored(6, Body::Message { message: user("b") }),
            stored(7, Body::Message { message: json!({"role": "nonsense"}) }),
        ];
        let mut resumed = log.to_vec();
        resumed.push(stored(8, Body::Resume { pid: 1, host: "h".into() }));
        assert!(fold(&resumed).interrupted.is_empty(), "reported by the resume that followed");
        let f = fold(&log);
        assert_eq!(f.messages.len(), 2);
        assert_eq!(f.unreadable, 1);
        assert_eq!(f.interrupted, [("1".to_owned(), "m".to_owned())], "the second send of id 1 never ended");
        assert_eq!((f.last_frame, f.last_seq), (1, 7));
        assert_eq!(lines_after(&log, 0).len(), 1);
        assert!(lines_after(&log, 1).is_empty());
    }
}
