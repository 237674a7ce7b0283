//! The stream-json lines of Claude Code's headless surface, as Rust types:
//! what pirn reads on stdin ([`In`]) and writes on stdout ([`Out`]).
//!
//! Owns: the shapes only. They follow what the official Agent SDKs parse
//! (PyPI `claude-agent-sdk` 0.2.189 `_internal/message_parser.py` and
//! `_internal/query.py`; npm `@anthropic-ai/claude-agent-sdk` 0.3.332
//! `sdk.d.ts`): one JSON object per line, discriminated by `type`, control
//! messages by `request.subtype`. Fields pirn has no value for are left out
//! unless an SDK requires them (then they carry the neutral value: `null`
//! cost, empty lists).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One line pirn writes on stdout.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Out {
    /// `system` (subtype `init`): once per turn, before its first message.
    System(Box<SystemInit>),
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
    MessageDelta { delta: MessageDelta, usage: ClaudeUsage },
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
pub struct MessageDelta {
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
    pub uuid: String,
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
}

/// The `response` of a `control_response` pirn writes.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub enum ControlResponseOut {
    Success { request_id: String, response: Value },
    Error { request_id: String, error: String },
}

/// One line the SDK writes to pirn's stdin.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum In {
    /// A prompt.
    User(UserIn),
    /// A request of the SDK.
    ControlRequest { request_id: String, request: ControlIn },
    /// The SDK's answer to one of pirn's requests.
    ControlResponse { response: ControlResponseIn },
    /// The SDK gave up on one of its own requests (nothing to do: pirn
    /// answers each at once).
    ControlCancelRequest {},
    /// Liveness only.
    KeepAlive {},
}

/// A `user` line: `message.content` is a string or content blocks.
#[derive(Debug, Clone, Deserialize)]
pub struct UserIn {
    pub message: UserInBody,
    #[serde(default)]
    pub session_id: Option<String>,
}

/// The message of a [`UserIn`].
#[derive(Debug, Clone, Deserialize)]
pub struct UserInBody {
    pub content: UserContent,
}

/// A prompt's content.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum UserContent {
    Text(String),
    Blocks(Vec<InBlock>),
}

/// A content block of a prompt: text is taken; any other kind (images,
/// documents) is refused by name.
#[derive(Debug, Clone, Deserialize)]
pub struct InBlock {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub text: Option<String>,
}

/// Control requests the SDKs send (subtype-tagged). Unknown subtypes are
/// answered with an error naming them.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub enum ControlIn {
    Initialize(Box<InitializeIn>),
    Interrupt {},
    SetPermissionMode {
        mode: String,
    },
    SetModel {
        #[serde(default)]
        model: Option<String>,
    },
    McpStatus {},
    /// Put the files back to before the turn of user message
    /// `user_message_id` (see `super::checkpoints`).
    RewindFiles {
        user_message_id: String,
        #[serde(default)]
        dry_run: Option<bool>,
    },
    #[serde(other)]
    Unsupported,
}

/// `initialize`: the fields pirn reads. The TypeScript SDK sends the
/// system prompt and the JSON schema here rather than on the command line.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeIn {
    #[serde(default)]
    pub hooks: Option<Value>,
    #[serde(default)]
    pub agents: Option<Value>,
    #[serde(default)]
    pub sdk_mcp_servers: Option<Vec<String>>,
    #[serde(default)]
    pub json_schema: Option<Value>,
    #[serde(default)]
    pub system_prompt: Option<SystemPromptIn>,
    #[serde(default)]
    pub append_system_prompt: Option<String>,
    #[serde(default)]
    pub mcp_servers: Option<serde_json::Map<String, Value>>,
}

/// `initialize.systemPrompt`: one string or several, joined.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum SystemPromptIn {
    One(String),
    Many(Vec<String>),
}

impl SystemPromptIn {
    /// The prompt's text (parts joined by blank lines).
    pub fn text(&self) -> String {
        match self {
            SystemPromptIn::One(s) => s.clone(),
            SystemPromptIn::Many(v) => v.join("\n\n"),
        }
    }
}

/// The `response` of a `control_response` the SDK writes.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
pub enum ControlResponseIn {
    Success {
        request_id: String,
        /// A [`PermissionAnswer`] for `can_use_tool`; a hook's answer
        /// (the JSON a command hook prints) for `hook_callback`.
        #[serde(default)]
        response: Option<Value>,
    },
    Error {
        request_id: String,
        #[serde(default)]
        error: Option<String>,
    },
}

/// The SDK's answer to `can_use_tool`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionAnswer {
    /// `allow` or `deny`.
    pub behavior: String,
    #[serde(default)]
    pub updated_input: Option<Value>,
    #[serde(default)]
    pub message: Option<String>,
    /// Deny and stop the turn.
    #[serde(default)]
    pub interrupt: Option<bool>,
}
