//! The `result` line: the one final answer to a send (or to a bad request
//! line), with its status, usage, latencies, why it stopped, the
//! operator's check, and the files the send changed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::attempts::{CheckpointKept, RewoundFile, WorktreeState};
use super::correlation::Correlation;
use super::error::{ErrorCode, ErrorEnvelope};
use super::usage::Usage;

/// `result`: the one final answer to a send (or to a bad request line).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
pub struct SendResult {
    /// The send's id (or the bad request's id, or `"unknown"`).
    pub id: String,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<String>,
    pub tool_calls_made: Vec<ToolCallMade>,
    /// Sum over every model call of the send (side calls included; their
    /// part is `side_calls.usage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Number of the send's turns: model calls made for the conversation,
    /// each counted once made (a call the provider refused, a retry after a
    /// context error, an answer asked for again included). Side calls are
    /// not among them (`side_calls`).
    pub iterations: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorEnvelope>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_latency_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_latency_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_latency_ms: Option<u64>,
    /// 0.3.0: why the send ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    /// 0.3.0: the last run of the send's verification command, when one
    /// ran (the operator's `config.verify_command` or the send's `verify_command`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<Verification>,
    /// 0.3.0: the final answer parsed as JSON, present when the send had an
    /// `output_schema` and the answer is valid against it (`response` keeps
    /// the raw text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<Value>,
    /// 0.3.0: the files this send's `write_file`/`edit_file` calls changed
    /// (workspace-relative paths, sorted; `[]` when none did), as the tools
    /// reported them: a fact an orchestrator can check an `ok` against
    /// (changes made by `bash` or MCP tools are not known to pirn and not
    /// listed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files_changed: Option<Vec<String>>,
    /// 0.3.0: what the session's sends cost so far in US dollars, this one
    /// included; absent when the cost of any of their model calls is
    /// unknown (see [`Usage::cost_usd`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_cost_usd: Option<f64>,
    /// 0.3.0: the model calls the conversation did not need (a profile's
    /// reading of the request or answer, a compaction's summary, a
    /// subagent's calls): how many and their usage; absent when none was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side_calls: Option<SideCalls>,
    /// 0.3.0: what the session's log kept of the files this send changed,
    /// so `rewind` can put them back; absent when it changed none (or
    /// checkpoints are off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<CheckpointKept>,
    /// 0.3.0: the ids of the `steer` requests whose text this send took
    /// (in order); absent when none. A steer acknowledged with `steer_ok`
    /// that the send ended before taking is not listed: it runs next as a
    /// send of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steered: Option<Vec<String>>,
    /// 0.3.0, the result of a `rewind`: each file put back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewound: Option<Vec<RewoundFile>>,
    /// 0.3.0, in a session that runs in a git worktree
    /// (`config.worktree`): where it is and what changed in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<WorktreeState>,
    /// 0.3.0: `false` when the session is logged and the log could not
    /// store this send's entries (a `store_error` event names why); absent
    /// otherwise: a logged session's result leaves only once durable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub durable: Option<bool>,
    /// Model calls that returned a completion (`iterations` counts every
    /// call started). Not on the wire: a 0.2.0 client's `iterations` is
    /// this number, as heddle counts.
    #[serde(skip)]
    #[schemars(skip)]
    pub calls_completed: u32,
    #[serde(flatten)]
    pub correlation: Correlation,
}

/// 0.3.0 `result.side_calls`: the model calls of a send that were not
/// turns of its conversation (readings, a compaction's summary, and every
/// call a subagent made).
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
pub struct SideCalls {
    /// Side calls made (one that failed included).
    pub calls: u32,
    /// Their usage, summed (the calls whose server reported it).
    pub usage: Usage,
}

/// 0.3.0 `result.verification`: the command pirn ran to check that the
/// send's work is done, and how it ended.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub struct Verification {
    /// The shell command, run with `/bin/bash -c` in the workspace.
    pub command: String,
    /// Its exit code; absent when it timed out or was killed by a signal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// True when it exited 0.
    pub passed: bool,
}

/// 0.3.0 `result.stop_reason`: why a send ended.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model answered without asking for tools.
    EndTurn,
    /// `max_iterations` model calls were made.
    MaxIterations,
    /// The model repeated the same tool calls.
    LoopDetected,
    /// Cancelled by `cancel`, `shutdown`, a signal or the queue timing out.
    Cancelled,
    /// The send's `max_total_tokens` or `max_tool_calls` was spent.
    BudgetExhausted,
    /// Any other error (see `error`).
    Error,
}

impl SendResult {
    /// A `protocol_error` result answering request `id` (or `"unknown"`):
    /// the one constructor every transport uses for a refused line.
    pub fn protocol_error(id: impl Into<String>, message: impl std::fmt::Display, correlation: Correlation) -> Self {
        SendResult::error(id, ErrorEnvelope::new(ErrorCode::ProtocolError, message.to_string()), correlation)
    }

    /// An error result with nothing run: protocol errors and sends cancelled
    /// or refused before they started.
    pub fn error(id: impl Into<String>, error: ErrorEnvelope, correlation: Correlation) -> Self {
        SendResult {
            id: id.into(),
            status: Status::Error,
            response: None,
            tool_calls_made: Vec::new(),
            usage: None,
            iterations: 0,
            error: Some(error),
            model_latency_ms: None,
            tool_latency_ms: None,
            total_latency_ms: None,
            stop_reason: None,
            verification: None,
            structured_output: None,
            durable: None,
            side_calls: None,
            checkpoint: None,
            steered: None,
            rewound: None,
            worktree: None,
            session_cost_usd: None,
            files_changed: None,
            calls_completed: 0,
            correlation,
        }
    }
}

/// `"ok"` or `"error"`.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Error,
}

/// One entry of `tool_calls_made`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
pub struct ToolCallMade {
    pub name: String,
    pub args: Value,
}
