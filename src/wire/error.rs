//! The error envelope of results, `init_ok` and `error` events, and the
//! protocol's error codes (0.2.0's six, then pirn's).
//!
//! Owns: [`ErrorEnvelope`] and [`ErrorCode`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The error envelope shared by results, `init_ok` and `error` events.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
pub struct ErrorEnvelope {
    pub code: ErrorCode,
    pub message: String,
    pub retryable: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl ErrorEnvelope {
    /// A non-retryable error without details.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorEnvelope { code, message: message.into(), retryable: false, details: None }
    }

    /// The envelope of a cancelled send: `{code:"cancelled", message:"cancelled", retryable:false}`.
    pub fn cancelled() -> Self {
        ErrorEnvelope::new(ErrorCode::Cancelled, "cancelled")
    }
}

/// Error codes. The first six are protocol 0.2.0's; `max_iterations` is
/// pirn's (the issue that specifies the limit names it).
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    ProviderError,
    ProtocolError,
    ProtocolVersionMismatch,
    ToolError,
    LoopDetected,
    Cancelled,
    MaxIterations,
    /// HTTP facade: the send waited too long in its session's queue.
    QueueTimeout,
    /// A bug in pirn (a panic) ended the send; the session goes on.
    InternalError,
    /// The request does not fit the model's context window even after
    /// pruning and compaction (the system prompt, tool specs, user messages
    /// and the model's own calls are never cut).
    ContextOverflow,
    /// Replay (`PIRN_REPLAY`): the model request is not the recorded one.
    ReplayMismatch,
    /// 0.3.0: the verification command still failed after the rounds the
    /// model was given to fix it (0.2.0 clients see `tool_error`).
    VerificationFailed,
    /// 0.3.0: the final answer still did not match the send's
    /// `output_schema` after `output_retries`; `details.errors` lists the
    /// validation errors.
    OutputInvalid,
    /// A budget (`max_total_tokens`, `max_cost_usd`, `max_tool_calls`) was spent before the
    /// task was done (0.2.0 clients see `max_iterations`, the nearest limit
    /// heddle knows).
    BudgetExceeded,
    /// 0.3.0: the request is well-formed JSON but unusable (an
    /// `output_schema` that does not compile); nothing was run.
    InvalidRequest,
    /// 0.3.0: an operator's hook refused the send (`UserPromptSubmit`) or
    /// the compaction (`PreCompact`); the message carries its reason
    /// (0.2.0 clients see `tool_error`).
    HookBlocked,
    /// 0.3.0: a `rewind` put nothing back: a file's state before was not
    /// kept, or it changed since the send left it; `details` lists them
    /// (`{"unkept": […]}` or `{"changed_since": […]}`) (0.2.0 clients see
    /// `tool_error`).
    RewindRefused,
}
