//! Bodies of the session routes (`/v1/sessions…`) and of `/health`.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::wire::init_config::InitConfig;
use crate::wire::request::{Decision, SendOptions};

/// `GET /health`: the daemon is up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Health {
    /// Always true.
    pub ok: bool,
    /// pirn's version (Cargo package version).
    pub version: String,
    /// The newest protocol version this build speaks (`PROTOCOL_VERSION`).
    pub protocol_version: String,
    /// Live sessions on this host.
    pub sessions: u64,
    /// Whether the console routes are on.
    pub console: ConsoleAvailability,
    /// A group host (`--advertise-url`): its id, the `owner` of the
    /// sessions it runs (`hostname:pid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_id: Option<String>,
    /// A group host: how peers reach it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advertise_url: Option<String>,
    /// A group host: the sessions it runs, each under its lease.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions_owned: Option<u64>,
}

/// Whether `pirn serve` runs with `--terminals`, as ACECode's health shows
/// its console.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ConsoleAvailability {
    /// True with `--terminals`; the console and shell routes answer 404 otherwise.
    pub available: bool,
    /// The PTY backend's name (`portable-pty`).
    pub backend: String,
}

/// `POST /v1/sessions`: the stdio `init.config`
/// (`request.schema.json#/$defs/InitConfig`) with two additions. With
/// `resume` the stored session's own config is the base for every field
/// the body leaves out (a body may then repeat the stored `model`,
/// `system_prompt` and `tools`). In 0.3.0 `permission_responses` defaults
/// to true over HTTP: the client answers permission requests at
/// `POST /v1/sessions/{id}/permissions/{request_id}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CreateSession {
    /// The protocol version asked for: `0.2.0` or `0.3.0` (default: the
    /// newest, `0.3.0`). Another major.minor: 400 `protocol_version_mismatch`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// Reopen this stored session (alias of `resume_session_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<String>,
    /// The session's config, as the stdio `init` carries it.
    #[serde(flatten)]
    pub config: InitConfig,
}

/// `POST /v1/sessions/{id}/fork`: open a new live session holding a copy
/// of stored session `id`'s conversation (the stored one is not changed).
/// Its config is the stored session's, with the fields given here over it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ForkSession {
    /// Keep the stored conversation up to and including this message (from
    /// 1, the system prompt not counted; default all). Past the messages
    /// held: 400 `NO_SUCH_MESSAGE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_message: Option<u64>,
    /// As for `POST /v1/sessions` (default `0.3.0`; a fork needs 0.3.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
}

/// `201` to `POST /v1/sessions` (and `POST /agent-webkit/sessions`, whose
/// `protocol_version` is agent-webkit's `1.0`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SessionCreated {
    /// The session's id: the path segment of every other session route.
    pub session_id: String,
    /// The negotiated protocol version of the session's lines.
    pub protocol_version: String,
}

/// `GET /v1/sessions/{id}`: a live session's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SessionStatus {
    /// The session's id.
    pub session_id: String,
    /// The model the session's requests name.
    pub model: String,
    /// Messages in the conversation (system prompt included).
    pub messages_count: u64,
    /// True while a send runs.
    pub active: bool,
    /// Sends waiting behind the running one (at most 5).
    pub queue_length: u64,
    /// A resumed session's sends that were running when its previous
    /// process died (absent when none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<Vec<String>>,
}

/// One entry of `GET /v1/sessions`: a live session (its status fields set)
/// or a stored one not live here (status fields absent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SessionListEntry {
    /// The session's id.
    pub session_id: String,
    /// The model the session's requests name.
    pub model: String,
    /// Live sessions: true (it runs on this host). Stored ones: whether some
    /// process holds it (a killed host's sessions read live until another
    /// host resumes them).
    pub live: bool,
    /// From the log, when persisted: the first send's message, cut at 80
    /// characters (empty before one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// From the log, when persisted: Unix ms of its first entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_ms: Option<u64>,
    /// From the log, when persisted: Unix ms of its last entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_ms: Option<u64>,
    /// Live sessions only: see [`SessionStatus`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages_count: Option<u64>,
    /// Live sessions only: true while a send runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active: Option<bool>,
    /// Live sessions only: sends waiting behind the running one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_length: Option<u64>,
    /// Live sessions only: see [`SessionStatus`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<Vec<String>>,
}

/// `GET /v1/sessions`: the live sessions, then the stored ones not live here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SessionList {
    /// Live sessions first, then stored ones not live on this host.
    pub sessions: Vec<SessionListEntry>,
}

/// `POST /v1/sessions/{id}/sends`: one user message (a stdio `send`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SendBody {
    /// The user message.
    pub message: String,
    /// The send's id (unique in the session; 409 `DUPLICATE_SEND_ID` when
    /// reused). Absent or empty: a UUID is chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_id: Option<String>,
    /// `output_schema`, budgets and `verify_command`, as on a 0.3.0 `send`.
    #[serde(flatten)]
    pub options: SendOptions,
}

/// `202` to a send or a compaction: it is queued; its frames and result
/// follow on the session's streams (SSE, WebSocket, `…/messages`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SendQueued {
    /// The send's id: its result and events carry it (`result.id`, `send_id`).
    pub send_id: String,
}

/// `POST /v1/sessions/{id}/cancel`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CancelBody {
    /// The send to cancel, running or queued.
    pub send_id: String,
}

/// `202` to a cancel: the cancelled send's result follows on the streams.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CancelAccepted {
    /// The send the cancel was for.
    pub send_id: String,
    /// False when the send had already ended or is unknown.
    pub cancelled: bool,
}

/// `POST /v1/sessions/{id}/rewind`: the send whose file changes (and every
/// later send's) are undone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RewindBody {
    /// The send's id (the latest send with it, when the session reused one).
    pub send_id: String,
    /// Only say what would be put back; nothing is written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
}

/// `POST /v1/sessions/{id}/steer`: text for the running send (0.3.0
/// `steer`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SteerBody {
    /// The text, as a user message.
    pub message: String,
    /// Only this send may take it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_id: Option<String>,
}

/// The answer to a steer: `taken` by running send `send_id` (listed in its
/// result's `steered` once read), else queued as send `send_id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SteerAccepted {
    /// The running send that took the text, or the send it became.
    pub send_id: String,
    /// True when a running send took it.
    pub taken: bool,
}

/// `POST /v1/sessions/{id}/permissions/{request_id}`: the answer to a
/// `permission_request` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PermissionAnswer {
    /// `allow` runs the call; `deny` refuses it (the model is told).
    pub decision: Decision,
}

/// `GET /v1/sessions/{id}/messages`: a session's past from its log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct History {
    /// With `since=0` only: the conversation in OpenAI chat-completions
    /// format (`{role, content, tool_calls?, tool_call_id?}` objects).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<Value>>,
    /// Every line the session emitted after frame `since`, oldest first.
    pub events: Vec<HistoryEvent>,
}

/// One emitted line of a session, as its log holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct HistoryEvent {
    /// The frame's number: the SSE `id:` of the same line (session-wide,
    /// increasing).
    pub seq: u64,
    /// The event name (`content_delta`, `tool_start`, …) or `result`.
    pub event: String,
    /// The line's object, as the stdio worker writes it
    /// (`protocol/response.schema.json`).
    pub data: Value,
}
