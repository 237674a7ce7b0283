//! What pirn writes: `init_ok`, `event` lines and their payloads,
//! `status_ok`, `shutdown_ok`, and the error envelope they share (the
//! `result` line is [`super::result`]).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::correlation::Correlation;
use super::error::{ErrorCode, ErrorEnvelope};
use super::request::IdOnly;
use super::result::SendResult;
use super::usage::Usage;

/// One line pirn writes (stdout, an SSE `data:`, a WebSocket frame).
/// Discriminated by `type`. (Named apart from HTTP responses; its schema
/// keeps the protocol's name, `Response`.)
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
#[schemars(rename = "Response")]
pub enum OutgoingMessage {
    // The rare, large messages are boxed: every outbox channel holds a
    // block of 32 messages from its start, and an idle session has two.
    InitOk(Box<InitOk>),
    Event(EventMsg),
    Result(Box<SendResult>),
    StatusOk(Box<StatusOk>),
    ShutdownOk(IdOnly),
    /// 0.3.0: the answer to a `steer` a running send took.
    SteerOk(super::steer::SteerOk),
}

/// A file one tool call changed (`tool_end.diff`, 0.3.0).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
pub struct FileDiff {
    /// The file, relative to the workspace (or absolute outside it).
    pub path: String,
    /// Its text before the call; absent for a file the call created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_text: Option<String>,
    /// Its text after the call.
    pub new_text: String,
}

/// `init_ok`. On a version mismatch `session_id` is `""` and `error` is set.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
pub struct InitOk {
    pub id: String,
    pub session_id: String,
    /// The negotiated version: `0.2.0` or `0.3.0` (see [`super::ProtocolVersion`]).
    pub protocol_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorEnvelope>,
    /// pirn extension (0.3.0): the sandbox bash and stdio MCP servers run
    /// under: `workspace-write`, `read-only`, either with `, no network`,
    /// `off`, or `unavailable: <why>` (then bash calls fail, naming it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// pirn extension (0.3.0): the project instruction files appended to
    /// the system prompt (absolute paths, in order); absent when none was
    /// found or `config.instruction_files` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instruction_files: Option<Vec<String>>,
    /// pirn extension (0.3.0): the profile in force, by name (`exact`,
    /// `small`, or one of the operator's model settings; see
    /// `config.profile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
}

/// An `event` line: `{type:"event", event:{event:NAME,…}, event_seq, send_id,
/// session_id, task_id?, worker_id?}`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
pub struct EventMsg {
    pub event: Event,
    /// 0-based, gapless per send; heartbeats share it. Assigned by the single
    /// writer of a transport (see [`Sequencer`]).
    pub event_seq: u64,
    /// The `id` of the originating send.
    pub send_id: Arc<str>,
    /// 0.3.0: the event is a subagent's, started by the parent's `task`
    /// tool call of this id (absent for the send's own events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_call_id: Option<Arc<str>>,
    #[serde(flatten)]
    pub correlation: Correlation,
}

/// Event payloads. Discriminated by `event`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A piece of the model's text, in stream order.
    ContentDelta { text: String },
    /// A tool call is about to run. `args` is the parsed JSON arguments (the
    /// raw string when they were not valid JSON).
    ToolStart {
        name: String,
        args: Value,
        /// pirn extension: the model's tool-call id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
    },
    /// A tool call finished. `result_preview` is at most 500 characters.
    ToolEnd {
        name: String,
        result_preview: String,
        /// 0.3.0: how long the call ran, in ms (approval wait included).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
        /// pirn extension: the model's tool-call id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        /// pirn extension: true when the tool reported a failure to the model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        is_error: Option<bool>,
        /// pirn extension (0.3.0): the file a `write_file` or `edit_file`
        /// call changed, before and after (both at most 64 KiB, else absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        diff: Option<Box<FileDiff>>,
        /// In process only, never on a wire: the call's whole result as the
        /// model got it (bash's output with its `[exit code N]` line, capped
        /// as tool results are), for the surfaces that show it whole
        /// (`pirn exec`'s `aggregated_output`).
        #[serde(skip)]
        output: Option<Arc<str>>,
    },
    /// 0.3.0: a piece of a running command's output (`bash`), at most
    /// 8 KiB, at most four a second; `offset` is the bytes of output before
    /// it (a jump means bytes no piece carried). The whole output is still
    /// in the call's result.
    ToolOutput { call_id: String, offset: u64, text: String },
    /// Token usage of one model call.
    Usage {
        #[serde(flatten)]
        usage: Usage,
        /// 0.3.0: `true` for a call the conversation did not need (a
        /// profile's reading, a compaction's summary: counted in
        /// `result.side_calls`, not `iterations`); absent for a turn. (A
        /// subagent's events, marked `parent_call_id`, are its own
        /// conversation's: its turns are the parent send's side calls.)
        #[serde(default, skip_serializing_if = "Option::is_none")]
        side_call: Option<bool>,
    },
    /// 0.3.0: the session's `model` refused a request (`reason`) that its
    /// `fallback_model` may take: this request and the rest of the send go
    /// to `fallback`; the next send tries `model` again.
    ModelFallback { model: String, fallback: String, reason: String },
    /// A failure; the send's error result follows.
    Error {
        code: ErrorCode,
        message: String,
        retryable: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider: Option<String>,
        details: Option<Value>,
    },
    /// A tool call needs approval.
    PermissionRequest {
        name: String,
        reason: String,
        /// pirn extension: the id to answer with `permission_response`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        request_id: Option<String>,
        /// pirn extension: the call's arguments.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        args: Option<Value>,
    },
    /// A tool call was refused; the model gets the refusal as the result.
    PermissionDenied { name: String, reason: String },
    /// Plan mode finished; `plan` is also the result's `response`.
    PlanComplete { plan: String },
    /// 0.3.0: the model's plan changed (a `todo_write` call): the whole
    /// list as it stands now, in order. A client replaces what it shows.
    Plan { todos: Vec<super::plan::TodoItem> },
    /// Periodic alive signal; `duration_ms` since the send began.
    Heartbeat { duration_ms: u64 },
    /// The conversation was shortened before a model call: the oldest tool
    /// results were replaced by stubs.
    ContextPrune { messages_pruned: u64, tokens_before: u64, tokens_after: u64 },
    /// The older conversation was summarised by the model (0.2.0: no fields).
    ContextCompact {
        /// 0.3.0: estimated prompt tokens before.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tokens_before: Option<u64>,
        /// 0.3.0: estimated prompt tokens after.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tokens_after: Option<u64>,
        /// 0.3.0: tokens of the summary.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary_tokens: Option<u64>,
    },
    /// 0.3.0: a model request failed with a retried status (429/503) and is
    /// sent again after `wait_ms`; `attempt` is the try about to start (2, 3).
    Retry { attempt: u32, wait_ms: u64, status: Option<u16> },
    /// 0.3.0: the session log could not store what led to the result that
    /// follows (disk full, I/O error, database down or past its timeout);
    /// `message` names the cause. The session goes on in memory.
    StoreError { message: String },
    /// 0.3.0: an operator's hook (see `crate::hooks`) starts:
    /// `hook_event_name` is Claude Code's event name (`PreToolUse`, …),
    /// `command` the hook's command line.
    HookStart { hook_event_name: String, command: String },
    /// 0.3.0: the hook ended. `outcome`: `ok` (exit 0), `blocked` (exit 2,
    /// or a JSON answer that blocks or denies), `error` (another exit code,
    /// or it could not start), `timeout` (killed at its timeout). `exit_code`
    /// is absent when it was killed or never started.
    HookEnd {
        hook_event_name: String,
        command: String,
        outcome: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        duration_ms: u64,
    },
}

impl Event {
    /// The payload's `event` name (`content_delta`, …), as SSE frames name it.
    pub fn name(&self) -> &'static str {
        match self {
            Event::ContentDelta { .. } => "content_delta",
            Event::ToolStart { .. } => "tool_start",
            Event::ToolEnd { .. } => "tool_end",
            Event::ToolOutput { .. } => "tool_output",
            Event::Usage { .. } => "usage",
            Event::ModelFallback { .. } => "model_fallback",
            Event::Error { .. } => "error",
            Event::PermissionRequest { .. } => "permission_request",
            Event::PermissionDenied { .. } => "permission_denied",
            Event::PlanComplete { .. } => "plan_complete",
            Event::Plan { .. } => "plan",
            Event::Heartbeat { .. } => "heartbeat",
            Event::Retry { .. } => "retry",
            Event::StoreError { .. } => "store_error",
            Event::HookStart { .. } => "hook_start",
            Event::HookEnd { .. } => "hook_end",
            Event::ContextPrune { .. } => "context_prune",
            Event::ContextCompact { .. } => "context_compact",
        }
    }
}

impl OutgoingMessage {
    /// The name of the line: the event's name for events, else the `type`.
    pub fn name(&self) -> &'static str {
        match self {
            OutgoingMessage::InitOk(_) => "init_ok",
            OutgoingMessage::Event(e) => e.event.name(),
            OutgoingMessage::Result(_) => "result",
            OutgoingMessage::StatusOk(_) => "status_ok",
            OutgoingMessage::ShutdownOk(_) => "shutdown_ok",
            OutgoingMessage::SteerOk(_) => "steer_ok",
        }
    }
}

/// `status_ok`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
pub struct StatusOk {
    pub id: String,
    pub model: String,
    /// Messages in the conversation, system prompt excluded.
    pub messages_count: u64,
    pub session_id: String,
    /// True while a send runs.
    pub active: bool,
    /// pirn extension: sends waiting behind the active one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_length: Option<u64>,
    /// pirn extension: ids of the sends of a resumed session that were
    /// running when its previous process died (never answered; absent when
    /// there were none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<Vec<String>>,
    /// pirn extension (0.3.0): the sandbox in force, as in `init_ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// pirn extension (0.3.0): the running send's usage against its
    /// budgets (absent while no send runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetStatus>,
    /// pirn extension (0.3.0): the session log, when the session is logged:
    /// `ok`, or `degraded` while the store fails (the session goes on in
    /// memory; the log catches up, or records a gap, when it works again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
    /// pirn extension (0.3.0): the model's plan as its last `todo_write`
    /// left it (absent when there is none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Vec<super::plan::TodoItem>>,
}

/// 0.3.0 `status_ok.budget`: what the running send has spent so far.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
pub struct BudgetStatus {
    /// Prompt plus completion tokens of the send's model calls so far.
    pub total_tokens: u64,
    /// The send's token budget, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_total_tokens: Option<u64>,
    /// Tool calls run so far.
    pub tool_calls: u32,
    /// The send's tool-call budget, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_calls: Option<u32>,
    /// US dollars the send's model calls cost so far; absent when one's cost
    /// is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// The send's cost budget in US dollars, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
}
