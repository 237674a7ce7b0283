//! Claude Code's message uuids, file rewind and resume-at, on pirn's fork
//! and checkpoints.
//!
//! Owns: the uuid of each message pirn writes on this surface where a
//! later request can name it, and what such a request then does (the
//! `rewind_files` control request itself is answered in [`super::control`]):
//! - A user message's uuid is the pirn send id of its turn (a fresh v4
//!   uuid), echoed with `--replay-user-messages`; `rewind_files
//!   {user_message_id}` is then pirn's `rewind` to before that send, and
//!   the control answer is the SDK's `RewindFilesResult` (`canRewind`,
//!   `filesChanged`, `error`). pirn keeps checkpoints in every logged
//!   session, so `enable_file_checkpointing` needs no switch here (and a
//!   rewind also puts back what `bash` changed, which Claude Code's does
//!   not). `dry_run` is answered with what would be put back, nothing written.
//! - An assistant message's uuid is derived (uuid v5) from the session id,
//!   the turn's send id and what the message stands for in the
//!   conversation (a tool call's id, text before that call, or the turn's
//!   final answer), so `--resume-session-at UUID` finds the place again in
//!   the stored log, in another process, without a table and whatever ran
//!   meanwhile: it becomes `resume_at_message` (the conversation kept up
//!   to and including that message).

use crate::store::Store;

/// The namespace of pirn's assistant message uuids (a v5 uuid of
/// "pirn.claude.messages" in the URL namespace).
fn namespace() -> uuid::Uuid {
    uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_URL, b"pirn.claude.messages")
}

/// The uuid of the assistant message of session `session_id`'s send
/// `send_id` that stands for `anchor` in the conversation: `call:<id>`
/// (a tool call's message), `text:<id>` (text the model wrote before that
/// call, in the same message) or `final` (the turn's last answer).
pub fn assistant_uuid(session_id: &str, send_id: &str, anchor: &str) -> String {
    uuid::Uuid::new_v5(&namespace(), format!("{session_id}:{send_id}:{anchor}").as_bytes()).to_string()
}

/// Every anchored place of a session's log: `(send id, anchor, the
/// conversation's length with that message, system prompt counted)`.
fn places(entries: &[crate::store::Stored]) -> Vec<(String, String, u64)> {
    use crate::store::Body;
    let mut out = Vec::new();
    let (mut len, mut send, mut last) = (0u64, String::new(), None::<u64>);
    let close = |out: &mut Vec<(String, String, u64)>, send: &str, last: Option<u64>| {
        if let Some(at) = last {
            out.push((send.to_owned(), "final".to_owned(), at));
        }
    };
    for e in entries {
        match &e.body {
            Body::History { messages } => len = messages.len() as u64,
            Body::Send { send_id, .. } => {
                close(&mut out, &send, last.take());
                send.clone_from(send_id);
            }
            Body::Message { message } => {
                len += 1;
                if message["role"] == "assistant" {
                    last = Some(len);
                    for call in message["tool_calls"].as_array().into_iter().flatten() {
                        let id = call["id"].as_str().unwrap_or_default();
                        out.push((send.clone(), format!("call:{id}"), len));
                        out.push((send.clone(), format!("text:{id}"), len));
                    }
                }
            }
            _ => {}
        }
    }
    close(&mut out, &send, last);
    out
}

/// The `resume_at_message` that assistant message `uuid` of stored session
/// `session_id` names (or of a session it was forked from, at a message
/// the fork holds): the conversation up to and including that message.
///
/// Errors: not stored, or no message of it has this uuid.
pub async fn resume_at(store: &Store, session_id: &str, uuid: &str) -> Result<u64, String> {
    let mut id = session_id.to_owned();
    let mut bound: Option<u64> = None;
    for _ in 0..16 {
        let entries = store.load(&id, 0).await.map_err(|e| format!("--resume-session-at: {e}"))?;
        for (send, anchor, len) in places(&entries) {
            if assistant_uuid(&id, &send, &anchor) == uuid && bound.is_none_or(|b| len <= b) {
                // `len` counted the system prompt.
                return Ok(len.saturating_sub(1).max(1));
            }
        }
        let origin = entries.iter().find_map(|e| match &e.body {
            crate::store::Body::Meta { forked_from: Some(f), .. } => Some(f.clone()),
            _ => None,
        });
        let Some(origin) = origin else { break };
        id = origin.session_id;
        bound = Some(origin.at_message + 1);
    }
    Err(format!("--resume-session-at: no message {uuid} in session {session_id}"))
}
