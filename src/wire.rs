//! Every message of the heddle headless protocol (0.2.0) as Rust types, and
//! the decoder that turns one stdin line into a [`Request`].
//!
//! Owns: the JSON shapes only. Nothing here does I/O; the transports
//! (`transport::stdio`, later `transport::http`) serialise what the session
//! produces and feed it what they read.
//!
//! Source of the shapes: `heddle-headless-protocol.md` (protocol 0.2.0). Where
//! that document is open, the reading chosen here is:
//! - an `event` line carries its payload as an object in the `event` field,
//!   and the payload's own discriminator key is also `event`
//!   (`{"type":"event","event":{"event":"content_delta","text":"…"},…}`);
//! - `session_id` is on every event and result once a session exists;
//! - pirn's additions are optional fields (`call_id`, `is_error`,
//!   `queue_length`, `request_id`, `args`) and the opt-in request
//!   `permission_response`; a 0.2.0 client never has to look at them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// The protocol version this build speaks: the content of `PROTOCOL_VERSION`.
pub const PROTOCOL_VERSION: &str = include_str!("../PROTOCOL_VERSION").trim_ascii();

/// Longest request line accepted on stdin, in bytes (10 MiB). Longer lines are
/// discarded and answered with a `protocol_error` result.
pub const MAX_LINE_BYTES: usize = 10 * 1024 * 1024;

/// Id echoed in a protocol-error result when the offending line carried none.
pub const UNKNOWN_ID: &str = "unknown";

// ---------------------------------------------------------------------------
// Requests (client → pirn)
// ---------------------------------------------------------------------------

/// One request line. Discriminated by `type`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Request {
    /// Start the session. Must come first. (Boxed: the config is large and
    /// the other requests are small.)
    Init(Box<InitRequest>),
    /// A user message: runs the agent loop, answered by events then one result.
    Send(SendRequest),
    /// Ask for the session state, answered at once by `status_ok`.
    Status(IdOnly),
    /// Abort the send whose id is `target_id`.
    Cancel(CancelRequest),
    /// Cancel what runs, answer `shutdown_ok`, exit 0.
    Shutdown(IdOnly),
    /// pirn extension (opt-in with `config.permission_responses`): the
    /// answer to a `permission_request` event.
    PermissionResponse(PermissionResponse),
}

impl Request {
    /// The request's correlation id.
    pub fn id(&self) -> &str {
        match self {
            Request::Init(r) => &r.id,
            Request::Send(r) => &r.id,
            Request::Status(r) | Request::Shutdown(r) => &r.id,
            Request::Cancel(r) => &r.id,
            Request::PermissionResponse(r) => &r.id,
        }
    }
}

/// `init`: `{type, id, protocol_version?, config}`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
pub struct InitRequest {
    pub id: String,
    /// The version the client expects; compatible when the MAJOR matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    pub config: InitConfig,
}

/// `init.config`. The first three fields are required by protocol 0.2.0;
/// everything after `worker_id` is a pirn extension and optional.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
pub struct InitConfig {
    /// Model identifier passed to the chat-completions endpoint.
    pub model: String,
    /// System prompt; the first message of the conversation.
    pub system_prompt: String,
    /// Tools to advertise and allow (`read_file`, `write_file`, `edit_file`,
    /// `glob`, `grep`, `bash`). Others are refused.
    pub tools: Vec<String>,
    /// Model calls allowed per send (default 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_id: Option<String>,
    /// Workspace directory (default: the worker's working directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Longest wait for one chunk of the model stream, in ms (default 180000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_ms: Option<u64>,
    /// Sampling temperature sent to the model (default: the server's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Upper bound on generated tokens per model call (default: the server's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Directories outside the workspace that file tools may reach.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_paths: Option<Vec<String>>,
    /// What the model may do unasked (default `full-auto`, or
    /// `PIRN_APPROVAL_MODE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_mode: Option<ApprovalMode>,
    /// Rules refining the mode; deny beats ask beats allow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<PermissionRules>,
    /// The client answers `permission_request` events with
    /// `permission_response` requests (default false: requests are denied).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_responses: Option<bool>,
    /// How long a call waits for a permission answer, in ms (default 300000;
    /// then it is denied).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_timeout_ms: Option<u64>,
}

/// How much the model may do unasked.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalMode {
    /// Everything in the workspace is allowed (default).
    #[default]
    FullAuto,
    /// File edits allowed; bash needs approval.
    AutoEdit,
    /// Reads allowed; writes and bash need approval.
    Suggest,
    /// Reads only; the model writes a plan, which ends the send.
    Plan,
}

/// `config.permissions`: rule lists, each rule `tool` or `tool(glob)`, e.g.
/// `bash(git push*)`, `write_file(.env*)`, `read_file(secrets/**)`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
pub struct PermissionRules {
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
    #[serde(default)]
    pub ask: Vec<String>,
}

/// `send`: `{type, id, message}`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
pub struct SendRequest {
    pub id: String,
    pub message: String,
}

/// `status` and `shutdown`: `{type, id}`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
pub struct IdOnly {
    pub id: String,
}

/// `cancel`: `{type, id, target_id}`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
pub struct CancelRequest {
    pub id: String,
    /// The `id` of the send to cancel.
    pub target_id: String,
}

/// pirn extension `permission_response`: `{type, id, request_id, decision}`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
pub struct PermissionResponse {
    pub id: String,
    /// The `request_id` of the `permission_request` event being answered.
    pub request_id: String,
    pub decision: Decision,
}

/// A host's answer to a permission request.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Allow,
    Deny,
}

// ---------------------------------------------------------------------------
// Responses (pirn → client)
// ---------------------------------------------------------------------------

/// One line pirn writes (stdout, an SSE `data:`, a WebSocket frame).
/// Discriminated by `type`. (Named apart from HTTP responses; its schema
/// keeps the protocol's name, `Response`.)
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
#[schemars(rename = "Response")]
pub enum OutgoingMessage {
    InitOk(InitOk),
    Event(EventMsg),
    Result(SendResult),
    StatusOk(StatusOk),
    ShutdownOk(IdOnly),
}

/// `init_ok`. On a version mismatch `session_id` is `""` and `error` is set.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
pub struct InitOk {
    pub id: String,
    pub session_id: String,
    /// Always [`PROTOCOL_VERSION`].
    pub protocol_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorEnvelope>,
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
    #[serde(flatten)]
    pub correlation: Correlation,
}

/// The ids echoed on every event and result (reference-counted: cloning
/// them per event costs no allocation).
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
pub struct Correlation {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<Arc<str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<Arc<str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_id: Option<Arc<str>>,
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
        /// pirn extension: the model's tool-call id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        /// pirn extension: true when the tool reported a failure to the model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        is_error: Option<bool>,
    },
    /// Token usage of one model call.
    Usage(Usage),
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
    /// Periodic alive signal; `duration_ms` since the send began.
    Heartbeat { duration_ms: u64 },
}

impl Event {
    /// The payload's `event` name (`content_delta`, …), as SSE frames name it.
    pub fn name(&self) -> &'static str {
        match self {
            Event::ContentDelta { .. } => "content_delta",
            Event::ToolStart { .. } => "tool_start",
            Event::ToolEnd { .. } => "tool_end",
            Event::Usage(_) => "usage",
            Event::Error { .. } => "error",
            Event::PermissionRequest { .. } => "permission_request",
            Event::PermissionDenied { .. } => "permission_denied",
            Event::PlanComplete { .. } => "plan_complete",
            Event::Heartbeat { .. } => "heartbeat",
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
        }
    }
}

/// Token counts, as reported by the model server.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
}

impl Usage {
    /// Adds `other` into `self` (saturating).
    pub fn add(&mut self, other: &Usage) {
        self.prompt_tokens = self.prompt_tokens.saturating_add(other.prompt_tokens);
        self.completion_tokens = self.completion_tokens.saturating_add(other.completion_tokens);
        self.total_tokens = self.total_tokens.saturating_add(other.total_tokens);
    }
}

/// `result`: the one final answer to a send (or to a bad request line).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
pub struct SendResult {
    /// The send's id (or the bad request's id, or `"unknown"`).
    pub id: String,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<String>,
    pub tool_calls_made: Vec<ToolCallMade>,
    /// Sum over every model call of the send.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Number of model calls.
    pub iterations: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorEnvelope>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_latency_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_latency_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_latency_ms: Option<u64>,
    #[serde(flatten)]
    pub correlation: Correlation,
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
}

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
}

// ---------------------------------------------------------------------------
// Decoding and sequencing
// ---------------------------------------------------------------------------

/// Why a line is not a valid request. `id` is the line's id when one could be
/// read, else `"unknown"`; the `Display` text is the protocol error's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct DecodeError {
    pub id: String,
    pub message: String,
}

/// Decodes one request line (without its newline).
///
/// Errors: invalid JSON, a non-object, missing or non-string `type`/`id`, an
/// unknown `type`, missing or mistyped fields. The error keeps the line's `id`
/// whenever the line was a JSON object with a string (or number) `id`.
pub fn decode_request(line: &[u8]) -> Result<Request, DecodeError> {
    let value: Value = serde_json::from_slice(line)
        .map_err(|e| DecodeError { id: UNKNOWN_ID.to_owned(), message: format!("invalid JSON: {e}") })?;
    let Value::Object(map) = &value else {
        return Err(DecodeError { id: UNKNOWN_ID.to_owned(), message: "a request must be a JSON object".to_owned() });
    };
    let id = match map.get("id") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => {
            return Err(DecodeError { id: n.to_string(), message: "field `id` must be a string".to_owned() });
        }
        Some(_) => {
            return Err(DecodeError { id: UNKNOWN_ID.to_owned(), message: "field `id` must be a string".to_owned() });
        }
        None => {
            return Err(DecodeError { id: UNKNOWN_ID.to_owned(), message: "missing field `id`".to_owned() });
        }
    };
    let fail = |message: String| DecodeError { id: id.clone(), message };
    match map.get("type") {
        Some(Value::String(t)) => {
            const KNOWN: [&str; 6] = ["init", "send", "status", "cancel", "shutdown", "permission_response"];
            if !KNOWN.contains(&t.as_str()) {
                return Err(fail(format!("unknown request type {t:?}")));
            }
        }
        Some(_) => return Err(fail("field `type` must be a string".to_owned())),
        None => return Err(fail("missing field `type`".to_owned())),
    }
    serde_json::from_value(value).map_err(|e| fail(format!("invalid request: {e}")))
}

/// A client's `protocol_version` that this build cannot serve. The text is
/// phrased as in the protocol document (`Client requested 1.0.0, server is
/// 0.2.0`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    /// A different MAJOR version.
    #[error("Client requested {requested}, server is {server}")]
    Incompatible { requested: String, server: String },
    /// Not `MAJOR.MINOR.PATCH`.
    #[error("Client requested {requested:?}, which is not a semver version ({reason}); server is {server}")]
    NotSemver { requested: String, reason: String, server: String },
}

impl From<&VersionError> for ErrorEnvelope {
    fn from(e: &VersionError) -> Self {
        ErrorEnvelope::new(ErrorCode::ProtocolVersionMismatch, e.to_string())
    }
}

/// Parses a protocol version and checks it against [`PROTOCOL_VERSION`]:
/// compatible when the MAJOR numbers match (semver).
pub fn check_version(requested: &str) -> Result<(), VersionError> {
    let server = PROTOCOL_VERSION.to_owned();
    let ours = semver::Version::parse(PROTOCOL_VERSION).unwrap_or(semver::Version::new(0, 0, 0));
    match semver::Version::parse(requested.trim()) {
        Ok(theirs) if theirs.major == ours.major => Ok(()),
        Ok(_) => Err(VersionError::Incompatible { requested: requested.to_owned(), server }),
        Err(e) => Err(VersionError::NotSemver { requested: requested.to_owned(), reason: e.to_string(), server }),
    }
}

/// Assigns `event_seq`: 0-based and gapless per send, in the order lines are
/// written. Owned by the one task that writes a transport's output, so the
/// numbers follow the written order whatever task produced the event.
#[derive(Debug, Default)]
pub struct Sequencer {
    /// `(send_id, next_seq)` for sends that have events but no result yet.
    /// At most one send runs at a time, so this stays tiny.
    open: Vec<(Arc<str>, u64)>,
}

impl Sequencer {
    /// Stamps `message` in place: events get the next number of their send;
    /// a result closes its send's counter.
    pub fn stamp(&mut self, message: &mut OutgoingMessage) {
        match message {
            OutgoingMessage::Event(ev) => {
                let slot = match self.open.iter().position(|(id, _)| *id == ev.send_id) {
                    Some(i) => i,
                    None => {
                        self.open.push((ev.send_id.clone(), 0));
                        self.open.len() - 1
                    }
                };
                ev.event_seq = self.open[slot].1;
                self.open[slot].1 += 1;
            }
            OutgoingMessage::Result(r) => self.open.retain(|(id, _)| **id != *r.id),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_keeps_id_on_missing_field() {
        let e = decode_request(br#"{"type":"send","id":"7"}"#).unwrap_err();
        assert_eq!(e.id, "7");
        assert!(e.message.contains("message"), "{}", e.message);
    }

    #[test]
    fn decode_rejects_unknown_type_and_garbage() {
        assert_eq!(decode_request(br#"{"type":"nope","id":"x"}"#).unwrap_err().id, "x");
        assert_eq!(decode_request(b"{not json").unwrap_err().id, "unknown");
        assert_eq!(decode_request(b"[1,2]").unwrap_err().id, "unknown");
        assert_eq!(decode_request(br#"{"id":"q"}"#).unwrap_err().message, "missing field `type`");
    }

    #[test]
    fn version_check_is_major_only() {
        assert!(check_version("0.2.0").is_ok());
        assert!(check_version("0.9.1").is_ok());
        assert!(check_version("1.0.0").is_err());
        assert!(check_version("banana").is_err());
        assert!(semver::Version::parse(PROTOCOL_VERSION).is_ok(), "PROTOCOL_VERSION is not semver");
    }

    #[test]
    fn sequencer_is_per_send_and_gapless() {
        let ev = |id: &str| {
            OutgoingMessage::Event(EventMsg {
                event: Event::Heartbeat { duration_ms: 0 },
                event_seq: 99,
                send_id: id.into(),
                correlation: Correlation::default(),
            })
        };
        let mut s = Sequencer::default();
        let mut seqs = vec![];
        for id in ["a", "a", "b", "a"] {
            let mut r = ev(id);
            s.stamp(&mut r);
            if let OutgoingMessage::Event(e) = r {
                seqs.push(e.event_seq);
            }
        }
        assert_eq!(seqs, vec![0, 1, 0, 2]);
        let mut done =
            OutgoingMessage::Result(SendResult::error("a", ErrorEnvelope::cancelled(), Correlation::default()));
        s.stamp(&mut done);
        let mut again = ev("a");
        s.stamp(&mut again);
        assert!(matches!(again, OutgoingMessage::Event(EventMsg { event_seq: 0, .. })));
    }
}
