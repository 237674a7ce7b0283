//! pirn's events and results as ACP (Agent Client Protocol v1) updates and
//! stop reasons, and ACP prompt content as the text of a send.
//!
//! Owns the mapping, and nothing else (no I/O): the table in
//! `protocol/protocol.md` ("Part 8: ACP") is this module in words.
//!
//! | pirn (0.3.0) | ACP `session/update` |
//! |---|---|
//! | `content_delta` | `agent_message_chunk` (text) |
//! | `tool_start` | `tool_call`: `toolCallId` = pirn's `call_id`, `title`, `kind`, `status: in_progress`, `rawInput`, `locations` |
//! | `tool_end` | `tool_call_update`: `completed` or `failed`, the result text as content, and a `diff` for a file it changed |
//! | `usage`, `context_prune`, `context_compact` | `usage_update` (`used`: the conversation's prompt tokens; `size`: the context window), when the window is known; a side call's usage leaves it ([`super::gauge`]) |
//! | `tool_output` | `tool_call_update`: `in_progress`, the piece as its text content (the latest piece shows) |
//! | `plan` | `plan`: every step as an entry with its status (priority `medium`: pirn's plans have none) |

use std::path::Path;

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Diff, EmbeddedResourceResource, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    SessionUpdate, StopReason, TextContent, ToolCall, ToolCallContent, ToolCallId, ToolCallLocation, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use serde_json::Value;

use crate::wire::{ErrorCode, Event, SendResult, Status, TodoStatus};

/// The updates one pirn event becomes (none for events ACP has no place
/// for: heartbeats, retries, errors, which the prompt's answer carries;
/// the context gauge's are [`super::gauge::Gauge`]'s). `workspace`: the
/// session's root, for absolute `locations`.
pub fn from_event(event: &Event, workspace: &Path) -> Vec<SessionUpdate> {
    match event {
        Event::ContentDelta { text } => {
            vec![SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::Text(TextContent::new(
                text.clone(),
            ))))]
        }
        Event::ToolStart { name, args, call_id } => {
            let Some(id) = call_id else { return Vec::new() };
            let call = ToolCall::new(ToolCallId::new(id.clone()), title(name, args))
                .kind(kind(name))
                .status(ToolCallStatus::InProgress)
                .raw_input(args.clone())
                .locations(locations(args, workspace));
            vec![SessionUpdate::ToolCall(call)]
        }
        Event::ToolEnd { result_preview, call_id, is_error, diff, .. } => {
            let Some(id) = call_id else { return Vec::new() };
            let status = if is_error.unwrap_or(false) { ToolCallStatus::Failed } else { ToolCallStatus::Completed };
            let mut content = vec![ToolCallContent::from(result_preview.clone())];
            if let Some(d) = diff {
                content.push(ToolCallContent::from(
                    Diff::new(workspace.join(&d.path), d.new_text.clone()).old_text(d.old_text.clone()),
                ));
            }
            let fields = ToolCallUpdateFields::new().status(status).content(content);
            vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(ToolCallId::new(id.clone()), fields))]
        }
        Event::ToolOutput { call_id, text, .. } => {
            // The latest piece as the call's content while it runs (ACP's
            // content replaces the earlier; the end shows the result).
            let fields = ToolCallUpdateFields::new()
                .status(ToolCallStatus::InProgress)
                .content(vec![ToolCallContent::from(text.clone())]);
            vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(ToolCallId::new(call_id.clone()), fields))]
        }
        Event::Plan { todos } => {
            let entries = todos
                .iter()
                .map(|t| {
                    let status = match t.status {
                        TodoStatus::Pending => PlanEntryStatus::Pending,
                        TodoStatus::InProgress => PlanEntryStatus::InProgress,
                        TodoStatus::Completed => PlanEntryStatus::Completed,
                    };
                    PlanEntry::new(t.content.clone(), PlanEntryPriority::Medium, status)
                })
                .collect();
            vec![SessionUpdate::Plan(Plan::new(entries))]
        }
        _ => Vec::new(),
    }
}

/// A short title for a tool call: the tool and what it works on.
pub fn title(name: &str, args: &Value) -> String {
    let arg = |k: &str| args.get(k).and_then(Value::as_str);
    let what = arg("file_path").or(arg("command")).or(arg("pattern")).unwrap_or("");
    let what: String = what.lines().next().unwrap_or("").chars().take(80).collect();
    if what.is_empty() { name.to_owned() } else { format!("{name} {what}") }
}

/// ACP's kind of a tool: read, edit, search, execute, other.
pub fn kind(name: &str) -> ToolKind {
    match name {
        "read_file" => ToolKind::Read,
        "write_file" | "edit_file" => ToolKind::Edit,
        "glob" | "grep" => ToolKind::Search,
        "bash" | "bash_output" | "kill_shell" => ToolKind::Execute,
        "todo_write" => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

/// The file a call works on, absolute, with its first line when the call
/// names one (`read_file`'s `offset`).
fn locations(args: &Value, workspace: &Path) -> Vec<ToolCallLocation> {
    let Some(path) = args.get("file_path").and_then(Value::as_str) else { return Vec::new() };
    let line = args.get("offset").and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok());
    vec![ToolCallLocation::new(workspace.join(path)).line(line)]
}

/// How a pirn send ended, as ACP's stop reason; `Err` with pirn's error
/// code and message for the ends ACP has no stop reason for (the prompt is
/// then answered with a JSON-RPC error).
pub fn stop_reason(result: &SendResult) -> Result<StopReason, (ErrorCode, String)> {
    if result.status == Status::Ok {
        return Ok(StopReason::EndTurn);
    }
    let Some(e) = &result.error else { return Err((ErrorCode::InternalError, "the send failed".to_owned())) };
    match e.code {
        ErrorCode::Cancelled => Ok(StopReason::Cancelled),
        ErrorCode::MaxIterations | ErrorCode::LoopDetected | ErrorCode::BudgetExceeded => {
            Ok(StopReason::MaxTurnRequests)
        }
        ErrorCode::ProviderError
            if e.details.as_ref().and_then(|d| d.get("finish_reason")).and_then(Value::as_str) == Some("length") =>
        {
            Ok(StopReason::MaxTokens)
        }
        code => Err((code, e.message.clone())),
    }
}

/// The text of a send from ACP prompt content: text blocks as they are, a
/// resource link as `@` and its URI, an embedded text resource as its URI
/// and its text in a fenced block (the file as the editor holds it). Other
/// content (images, audio, binary resources) is left out, as the
/// capabilities pirn announces say.
pub fn prompt_text(blocks: &[ContentBlock]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => parts.push(t.text.clone()),
            ContentBlock::ResourceLink(link) => parts.push(format!("@{}", uri_path(&link.uri))),
            ContentBlock::Resource(embedded) => {
                if let EmbeddedResourceResource::TextResourceContents(r) = &embedded.resource {
                    parts.push(format!("{}:\n```\n{}\n```", uri_path(&r.uri), r.text.trim_end()));
                }
            }
            _ => {}
        }
    }
    parts.join("\n\n")
}

/// A `file://` URI as its path; other URIs as they are.
fn uri_path(uri: &str) -> &str {
    uri.strip_prefix("file://").unwrap_or(uri)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ErrorEnvelope;

    #[test]
    fn events_become_updates() {
        let ws = Path::new("/ws");
        let start = Event::ToolStart {
            name: "read_file".into(),
            args: serde_json::json!({"file_path": "src/a.py", "offset": 3}),
            call_id: Some("c1".into()),
        };
        let v = serde_json::to_value(&from_event(&start, ws)[0]).unwrap();
        assert_eq!(v["sessionUpdate"], "tool_call");
        assert_eq!(v["toolCallId"], "c1");
        assert_eq!(v["kind"], "read");
        assert_eq!(v["status"], "in_progress");
        assert_eq!(v["title"], "read_file src/a.py");
        assert_eq!(v["locations"][0]["path"], "/ws/src/a.py");
        assert_eq!(v["locations"][0]["line"], 3);
        let text = from_event(&Event::ContentDelta { text: "hi".into() }, ws);
        assert_eq!(serde_json::to_value(&text[0]).unwrap()["content"]["text"], "hi");
        assert!(from_event(&Event::Heartbeat { duration_ms: 5 }, ws).is_empty());
    }

    #[test]
    fn how_sends_end() {
        let mut r: SendResult = serde_json::from_value(serde_json::json!({
            "type": "result", "id": "1", "status": "ok", "tool_calls_made": [], "iterations": 1
        }))
        .unwrap();
        assert_eq!(stop_reason(&r), Ok(StopReason::EndTurn));
        r.status = Status::Error;
        r.error = Some(ErrorEnvelope::new(ErrorCode::MaxIterations, "stopped"));
        assert_eq!(stop_reason(&r), Ok(StopReason::MaxTurnRequests));
        r.error = Some(ErrorEnvelope::cancelled());
        assert_eq!(stop_reason(&r), Ok(StopReason::Cancelled));
        r.error = Some(ErrorEnvelope::new(ErrorCode::VerificationFailed, "still fails"));
        assert!(stop_reason(&r).is_err());
    }
}
