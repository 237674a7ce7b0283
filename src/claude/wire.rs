//! The stream-json lines of Claude Code's headless surface, as Rust types:
//! what pirn writes on stdout ([`Out`]; what it reads on stdin is
//! [`super::input::In`]).
//!
//! Owns: the shapes only. They follow what the official Agent SDKs parse
//! (PyPI `claude-agent-sdk` 0.2.189 `_internal/message_parser.py` and
//! `_internal/query.py`; npm `@anthropic-ai/claude-agent-sdk` 0.3.332
//! `sdk.d.ts`): one JSON object per line, discriminated by `type`, control
//! messages by `request.subtype`. Fields pirn has no value for are left out
//! unless an SDK requires them (then they carry the neutral value: `null`
//! cost, empty lists).

use serde::Serialize;
use serde_json::Value;

/// The version of Claude Code's surface pirn implements, reported as
/// `claude_code_version` (the SDKs compare it with their minimum, 2.0.0).
pub const CLAUDE_CODE_VERSION: &str = "2.1.0";

/// One line pirn writes on stdout.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Out {
    /// `system` (subtype `init`): once per turn, before its first message.
    System(Box<SystemInit>),
    /// `system` (subtype `model_fallback`): the turn's requests go to the
    /// fallback model from here on.
    #[serde(rename = "system")]
    Fallback(Box<SystemFallback>),
    /// An assistant message: one content block (text or `tool_use`).
    Assistant(AssistantMsg),
    /// A user message pirn writes: the `tool_result` of a tool call.
    User(UserMsg),
    /// A partial-message event (`--include-partial-messages`).
    StreamEvent(StreamEventMsg),
    /// The end of a turn.
    Result(Box<ResultMsg>),
    /// A request to the SDK (`can_use_tool`).
    ControlRequest { request_id: String, request: OutControl },
    /// The answer to a control request of the SDK.
    ControlResponse { response: ControlResponseOut },
}

/// `{"type":"system","subtype":"model_fallback","model","fallback_model","reason",…}`.
#[derive(Debug, Clone, Serialize)]
pub struct SystemFallback {
    /// Always `model_fallback`.
    pub subtype: &'static str,
    /// The model that refused the request.
    pub model: String,
    /// The model the rest of the turn uses.
    pub fallback_model: String,
    /// Why (the provider's error).
    pub reason: String,
    pub session_id: String,
    pub uuid: String,
}

/// `{"type":"system","subtype":"init",…}`.
#[derive(Debug, Clone, Serialize)]
pub struct SystemInit {
    /// Always `init`.
    pub subtype: &'static str,
    pub cwd: String,
    pub session_id: String,
    /// Tool names as the model sees them (Claude Code's names for pirn's
    /// six built-ins, `mcp__server__tool` for MCP tools).
    pub tools: Vec<String>,
    pub mcp_servers: Vec<McpServerStatus>,
    pub model: String,
    /// Claude Code's name of the permission mode in force.
    #[serde(rename = "permissionMode")]
    pub permission_mode: String,
    pub slash_commands: Vec<String>,
    #[serde(rename = "apiKeySource")]
    pub api_key_source: &'static str,
    /// The surface version pirn implements (the SDKs warn when absent).
    pub claude_code_version: &'static str,
    pub output_style: &'static str,
    pub agents: Vec<String>,
    pub skills: Vec<String>,
    pub plugins: Vec<String>,
    /// pirn extension: the project instruction files appended to the
    /// system prompt, as paths (see `context::instructions`).
    pub instruction_files: Vec<String>,
    /// pirn extension: pirn's own version.
    pub pirn_version: &'static str,
    /// pirn extension: the profile in force (`exact` unless the operator's
    /// `PIRN_PROFILE` or the model-settings table names another; see
    /// `config::profile`).
    pub pirn_profile: String,
    pub uuid: String,
}

/// One MCP server of `system/init` and `mcp_status`.
#[derive(Debug, Clone, Serialize)]
pub struct McpServerStatus {
    pub name: String,
    /// `connected` (pirn starts every server before the session opens).
    pub status: &'static str,
}

/// A content block of an assistant or user message.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Text { text: String },
    ToolUse { id: String, name: String, input: Value },
    ToolResult { tool_use_id: String, content: String, is_error: bool },
}

/// `{"type":"assistant",…}`.
#[derive(Debug, Clone, Serialize)]
pub struct AssistantMsg {
    pub message: AssistantBody,
    pub parent_tool_use_id: Option<String>,
    pub session_id: String,
    pub uuid: String,
}

/// The Anthropic Messages API message an assistant line carries.
#[derive(Debug, Clone, Serialize)]
pub struct AssistantBody {
    pub id: String,
    /// Always `message`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Always `assistant`.
    pub role: &'static str,
    pub model: String,
    pub content: Vec<Block>,
    pub stop_reason: Option<String>,
    pub stop_sequence: Option<String>,
    pub usage: ClaudeUsage,
}

/// `{"type":"user",…}` carrying tool results.
#[derive(Debug, Clone, Serialize)]
pub struct UserMsg {
    pub message: UserBody,
    pub parent_tool_use_id: Option<String>,
    pub session_id: String,
    pub uuid: String,
}

/// The user message of a [`UserMsg`].
#[derive(Debug, Clone, Serialize)]
pub struct UserBody {
    /// Always `user`.
    pub role: &'static str,
    pub content: Vec<Block>,
}

/// Token counts as the Messages API names them (pirn's `prompt_tokens`
/// is `input_tokens`, `cached_tokens` is `cache_read_input_tokens`).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct ClaudeUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_input_tokens: u64,
    pub cache_creation_input_tokens: u64,
}

impl From<&crate::wire::Usage> for ClaudeUsage {
    fn from(u: &crate::wire::Usage) -> Self {
        ClaudeUsage {
            input_tokens: u.prompt_tokens,
            output_tokens: u.completion_tokens,
            cache_read_input_tokens: u.cached_tokens.unwrap_or(0),
            cache_creation_input_tokens: 0,
        }
    }
}

/// `{"type":"stream_event",…}`.
#[derive(Debug, Clone, Serialize)]
pub struct StreamEventMsg {
    pub uuid: String,
    pub session_id: String,
    pub event: StreamEvent,
    pub parent_tool_use_id: Option<String>,
}

/// The Messages API streaming events pirn sends (text only: tool calls
/// arrive whole, as assistant messages).
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    MessageStart { message: AssistantBody },
    ContentBlockStart { index: u32, content_block: Block },
    ContentBlockDelta { index: u32, delta: TextDelta },
    ContentBlockStop { index: u32 },
    ClaudeMessageDelta { delta: ClaudeMessageDelta, usage: ClaudeUsage },
    MessageStop,
}

/// `{"type":"text_delta","text":…}`.
#[derive(Debug, Clone, Serialize)]
pub struct TextDelta {
    /// Always `text_delta`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub text: String,
}

/// The `delta` of `message_delta`.
#[derive(Debug, Clone, Serialize)]
pub struct ClaudeMessageDelta {
    pub stop_reason: Option<String>,
    pub stop_sequence: Option<String>,
}

/// `{"type":"result",…}`: how a turn ended.
#[derive(Debug, Clone, Serialize)]
pub struct ResultMsg {
    /// `success`, `error_max_turns`, `error_max_structured_output_retries`
    /// or `error_during_execution`.
    pub subtype: &'static str,
    pub is_error: bool,
    pub duration_ms: u64,
    /// Time spent in model calls.
    pub duration_api_ms: u64,
    /// Model calls of the turn.
    pub num_turns: u32,
    /// The final answer (absent on errors).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    pub session_id: String,
    /// Always `null`: pirn knows no prices yet.
    pub total_cost_usd: Option<f64>,
    pub usage: ClaudeUsage,
    #[serde(rename = "modelUsage")]
    pub model_usage: serde_json::Map<String, Value>,
    pub permission_denials: Vec<PermissionDenial>,
    /// The answer parsed as JSON when `--json-schema` was given and it
    /// matched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<Value>,
    /// Why the turn failed (error subtypes only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// `end_turn`, `max_turns`, `cancelled`, … (pirn's stop reason).
    pub stop_reason: Option<String>,
    /// pirn extension: the model calls the conversation did not need (a
    /// profile's reading of the request or answer, a compaction's
    /// summary), apart from `num_turns`; their tokens are also in `usage`.
    /// Absent when none was made (pirn's 0.3.0 `result.side_calls`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub side_calls: Option<ClaudeSideCalls>,
    pub uuid: String,
}

/// `result.side_calls`: how many side calls the turn made (one that failed
/// included) and their usage, summed (the calls whose server reported it).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct ClaudeSideCalls {
    pub calls: u32,
    pub usage: ClaudeUsage,
}

impl From<&crate::wire::SideCalls> for ClaudeSideCalls {
    fn from(s: &crate::wire::SideCalls) -> Self {
        ClaudeSideCalls { calls: s.calls, usage: ClaudeUsage::from(&s.usage) }
    }
}

/// A tool call refused by the permission mode, rules or the SDK.
#[derive(Debug, Clone, Serialize)]
pub struct PermissionDenial {
    pub tool_name: String,
    pub tool_use_id: String,
    pub tool_input: Value,
}

/// Control requests pirn sends.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub enum OutControl {
    /// Asks the SDK's `can_use_tool` callback about one tool call.
    CanUseTool {
        tool_name: String,
        input: Value,
        tool_use_id: String,
        permission_suggestions: Vec<Value>,
        /// pirn's reason for asking (e.g. `suggest mode`).
        decision_reason: String,
    },
    /// Calls one of the SDK's hook callbacks (registered in `initialize`)
    /// with the hook's input; the answer is what a command hook prints.
    HookCallback {
        callback_id: String,
        input: Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        tool_use_id: Option<String>,
    },
    /// Carries one JSON-RPC message to one of the SDK's in-process MCP
    /// servers; the answer's `mcp_response` is the server's reply.
    McpMessage { server_name: String, message: Value },
}

/// The `response` of a `control_response` pirn writes.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub enum ControlResponseOut {
    Success { request_id: String, response: Value },
    Error { request_id: String, error: String },
}
