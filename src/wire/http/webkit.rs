//! Bodies of agent-webkit's wire protocol 1.0 under `/agent-webkit`
//! (`../shared/reference/agent-webkit-wire-protocol.md`): the session
//! request, the inbound messages, and the `data:` of each SSE event.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::wire::usage::Usage;

/// `POST /agent-webkit/sessions`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub struct CreateWebkitSession {
    /// The model (default `$PIRN_MODEL`, else `local`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `default` (pirn's `suggest`), `acceptEdits` (`auto-edit`),
    /// `bypassPermissions` (`full-auto`), or a pirn approval mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<String>,
    /// The workspace (default: the daemon's directory).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// pirn's addition: the tools (default all).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// pirn's addition: the system prompt (default pirn's own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
}

/// `POST /agent-webkit/sessions/{id}/input`: one inbound message,
/// discriminated by `type`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Input {
    /// A user turn: queued as a send.
    UserMessage {
        /// A non-empty string, or an array of `{type: "text", text}`
        /// blocks (joined with newlines; other block types: 400).
        content: Value,
    },
    /// Cancels the running send.
    Interrupt,
    /// The answer to a `permission_request` event.
    PermissionResponse {
        /// The event's `correlation_id`.
        correlation_id: String,
        /// `allow` or `deny`.
        behavior: String,
        /// With `deny`: also cancel the running send.
        #[serde(default)]
        interrupt: bool,
    },
    /// pirn asks no questions: always 404.
    QuestionResponse {
        /// The question's id (none exists).
        correlation_id: String,
    },
    /// Sets the approval mode (names as in `permission_mode` of the session request).
    SetPermissionMode {
        /// The new mode.
        mode: String,
    },
    /// Sets the model of later sends (null: back to the session's).
    SetModel {
        /// The model name, or null.
        model: Option<String>,
    },
    /// Cancels a running or queued send by its id (its `message_id`).
    StopTask {
        /// The send's id.
        task_id: String,
    },
}

/// A text content block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TextBlock {
    /// Always `text`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The text.
    pub text: String,
}

impl TextBlock {
    /// A `{type: "text", text}` block.
    pub fn new(text: impl Into<String>) -> Self {
        TextBlock { kind: "text".to_owned(), text: text.into() }
    }
}

/// `session_ready` (id 0, first on a fresh stream).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SessionReady {
    /// The pirn session the stream follows.
    pub session_id: String,
    /// Always `1.0`.
    pub protocol_version: String,
}

/// `message_delta`: a piece of the model's text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct MessageDelta {
    /// The send's id (one assistant message per send).
    pub message_id: String,
    /// The new text.
    pub delta: TextBlock,
}

/// `tool_use`: a tool call starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ToolUse {
    /// The send's id (the assistant message the call belongs to).
    pub message_id: String,
    /// The model's tool-call id.
    pub tool_use_id: Option<String>,
    /// The tool's name (`read_file`, `bash`, …, or `mcp__server__tool`).
    pub tool_name: String,
    /// The call's arguments.
    pub input: Value,
}

/// `tool_result`: a tool call ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ToolResult {
    /// The `tool_use_id` of the call's `tool_use` event.
    pub tool_use_id: Option<String>,
    /// pirn's result preview (at most 500 characters).
    pub output: String,
    /// True when the tool reported a failure to the model.
    pub is_error: Option<bool>,
}

/// `permission_request`: a tool call waits for an answer (an `input`
/// message of type `permission_response`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PermissionRequest {
    /// The id to answer with (pirn's `request_id`).
    pub correlation_id: String,
    /// The tool the call wants to run.
    pub tool_name: String,
    /// The call's arguments.
    pub input: Value,
    /// Why it is asked, and in which message.
    pub context: PermissionContext,
}

/// Why a permission is asked, and in which message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PermissionContext {
    /// Why approval is needed (the approval mode or rule that asks).
    pub reason: String,
    /// The send's id.
    pub message_id: String,
}

/// `message_complete`: the send's final answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct MessageComplete {
    /// The send's id.
    pub message_id: String,
    /// The whole answer.
    pub message: AssistantMessage,
}

/// The assistant message of a send.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AssistantMessage {
    /// The send's id.
    pub id: String,
    /// Always `assistant`.
    pub role: String,
    /// The answer's text, as one block.
    pub content: Vec<TextBlock>,
    /// pirn's `stop_reason` (`end_turn`, …).
    pub stop_reason: Option<String>,
}

/// `error`: the send failed (a `result` follows).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct WebkitError {
    /// pirn's error code (`cancelled`, `model_error`, …).
    pub code: Option<String>,
    /// What went wrong, for a person.
    pub message: Option<String>,
}

/// `result`: the send ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct WebkitResult {
    /// The pirn session.
    pub session_id: Option<String>,
    /// `success`, `error_max_turns` or `error_during_execution`.
    pub subtype: String,
    /// True unless the send ended `ok`.
    pub is_error: bool,
    /// The final answer's text.
    pub result: Option<String>,
    /// pirn's `stop_reason` (`end_turn`, `max_iterations`, `cancelled`, …).
    pub stop_reason: Option<String>,
    /// Model calls of the send.
    pub num_turns: Option<u64>,
    /// Wall time of the send, ms.
    pub duration_ms: Option<u64>,
    /// Tokens over the send's model calls (null when the server reported none).
    pub usage: Option<Usage>,
    /// What the session's sends cost so far in US dollars (as Claude Code's
    /// `total_cost_usd`, cumulative over the session): pirn's
    /// `result.session_cost_usd`; null when the cost is unknown (no
    /// provider figure and no price table), never a made-up 0.
    pub total_cost_usd: Option<f64>,
    /// The send's id.
    pub message_id: String,
}

/// `done`: the session closed; the stream ends.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct WebkitDone {}
