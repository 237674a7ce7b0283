//! The Codex SDK's thread events: what `codex exec --experimental-json`
//! writes on stdout, one JSON object per line, as the TypeScript SDK
//! (`@openai/codex-sdk`, `ThreadEvent` and `ThreadItem` in its `index.d.ts`,
//! checked at 0.163.0) reads them.
//!
//! Owns: the types of those lines and nothing else; [`super::translate`]
//! builds them from pirn's events. Field names and the `type` tags are the
//! SDK's; pirn adds three fields the SDK ignores: `thread.started`'s
//! `pirn_profile`, `turn.completed`'s `iterations` and `side_calls`.

use serde::Serialize;
use serde_json::Value;

/// One stdout line (`ThreadEvent`).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "type")]
pub enum ThreadEvent {
    /// The first line: the thread's id (pirn's session id, which `resume`
    /// takes).
    #[serde(rename = "thread.started")]
    ThreadStarted {
        thread_id: String,
        /// pirn extension: the profile in force (`exact`, `small`, or one
        /// of the operator's model settings; see `config::profile`).
        pirn_profile: String,
    },
    /// The prompt went to the model.
    #[serde(rename = "turn.started")]
    TurnStarted {},
    /// The turn ended well; `usage` sums every model call of it (side
    /// calls included).
    #[serde(rename = "turn.completed")]
    TurnCompleted {
        usage: ThreadUsage,
        /// pirn extension: the model calls made for the conversation
        /// (pirn's `result.iterations`; side calls not among them).
        iterations: u32,
        /// pirn extension: the side calls (a profile's reading of the
        /// request or answer, a compaction's summary), their count and
        /// usage apart; absent when none was made.
        #[serde(skip_serializing_if = "Option::is_none")]
        side_calls: Option<ThreadSideCalls>,
    },
    /// The turn ended in failure; `error.message` is what the SDK throws.
    #[serde(rename = "turn.failed")]
    TurnFailed { error: ThreadError },
    /// An item began (a command, an MCP call, the to-do list).
    #[serde(rename = "item.started")]
    ItemStarted { item: ThreadItem },
    /// An item changed (a command's output so far, the to-do list).
    #[serde(rename = "item.updated")]
    ItemUpdated { item: ThreadItem },
    /// An item reached its end state.
    #[serde(rename = "item.completed")]
    ItemCompleted { item: ThreadItem },
    /// A failure of the stream itself (the command line, the session).
    #[serde(rename = "error")]
    Error { message: String },
}

/// `ThreadError`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ThreadError {
    pub message: String,
}

/// `Usage` of `turn.completed`, in tokens.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct ThreadUsage {
    /// Prompt tokens, cached ones included.
    pub input_tokens: u64,
    /// Prompt tokens the provider served from its cache.
    pub cached_input_tokens: u64,
    /// Prompt tokens written to the cache (pirn's providers report none: 0).
    pub cache_write_input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Reasoning tokens (not reported apart by chat-completions servers: 0).
    pub reasoning_output_tokens: u64,
}

impl From<&crate::wire::Usage> for ThreadUsage {
    fn from(u: &crate::wire::Usage) -> Self {
        ThreadUsage {
            input_tokens: u.prompt_tokens,
            cached_input_tokens: u.cached_tokens.unwrap_or(0),
            output_tokens: u.completion_tokens,
            ..ThreadUsage::default()
        }
    }
}

/// `turn.completed.side_calls` (pirn's): how many side calls the turn made
/// (one that failed included) and their usage, summed (the calls whose
/// server reported it); that usage is also part of `usage`.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct ThreadSideCalls {
    pub calls: u32,
    pub usage: ThreadUsage,
}

/// One item (`ThreadItem`): its id (`item_N`, in the order items start)
/// and what it is.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ThreadItem {
    pub id: String,
    #[serde(flatten)]
    pub details: ItemDetails,
}

/// The kinds of item pirn produces (the SDK's `reasoning` and
/// `web_search` items have no pirn counterpart).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ItemDetails {
    /// The model's text: between tool calls, and the final answer (the
    /// JSON document when an output schema was given).
    AgentMessage { text: String },
    /// A `bash` call: its command line, its output (stdout and stderr as
    /// the model got them), its exit code once it exits.
    CommandExecution {
        command: String,
        aggregated_output: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        status: ItemStatus,
    },
    /// A `write_file` or `edit_file` call: the file and whether it was
    /// created or changed.
    FileChange { changes: Vec<FileUpdateChange>, status: ItemStatus },
    /// A call of another tool: an MCP server's (`server` its name) or one
    /// of pirn's read-only tools (`server` `pirn`: read_file, glob, grep).
    McpToolCall {
        server: String,
        tool: String,
        arguments: Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<McpResult>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<ThreadError>,
        status: ItemStatus,
    },
    /// The plan (`todo_write`): the whole list each time.
    TodoList { items: Vec<TodoEntry> },
    /// A failure the turn went on from (a retried model request).
    Error { message: String },
}

/// `CommandExecutionStatus`, `PatchApplyStatus`, `McpToolCallStatus`.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ItemStatus {
    InProgress,
    Completed,
    Failed,
}

/// `FileUpdateChange`: a path as the model named it, and `add`, `update`
/// or `delete`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FileUpdateChange {
    pub path: String,
    pub kind: &'static str,
}

/// An MCP call's result: its content blocks (text, as pirn's tools give
/// it).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct McpResult {
    pub content: Vec<Value>,
    pub structured_content: Value,
}

/// `TodoItem`: a step and whether it is done.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TodoEntry {
    pub text: String,
    pub completed: bool,
}
