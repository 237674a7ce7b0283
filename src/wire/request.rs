//! Requests: what a client writes to pirn (stdin lines, WebSocket frames),
//! discriminated by `type`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::attempts::RewindRequest;
use super::init_config::InitConfig;

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
    /// Let the running and queued sends finish, answer `shutdown_ok`, exit 0.
    Shutdown(IdOnly),
    /// pirn extension (opt-in with `config.permission_responses`): the
    /// answer to a `permission_request` event.
    PermissionResponse(PermissionResponse),
    /// 0.3.0: summarise the older conversation now (queued like a send;
    /// answered by a `context_compact` event and a `result`).
    Compact(IdOnly),
    /// 0.3.0: put the workspace's files back to how they were before send
    /// `send_id` (queued like a send; answered by one `result` whose
    /// `rewound` lists each file put back).
    Rewind(RewindRequest),
    /// 0.3.0: add text to the running send (answered by `steer_ok`), else
    /// queue it as a send.
    Steer(super::steer::SteerRequest),
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
            Request::Compact(r) => &r.id,
            Request::Rewind(r) => &r.id,
            Request::Steer(r) => &r.id,
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

/// `send`: `{type, id, message}`, and in 0.3.0 the per-send options of
/// [`SendOptions`].
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
pub struct SendRequest {
    pub id: String,
    pub message: String,
    #[serde(flatten)]
    pub options: SendOptions,
}

/// 0.3.0 options of one `send` (each overrides the session's default from
/// `init.config` for this send only). A 0.2.0 session refuses a send that
/// carries any of them.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, utoipa::ToSchema, PartialEq)]
pub struct SendOptions {
    /// A JSON Schema (draft 2020-12) the send's final answer must match:
    /// the answer must be one JSON value valid against it, and the result
    /// then carries it parsed as `structured_output`. A schema that does
    /// not compile is refused with an `invalid_request` result before any
    /// model call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Answers that do not match `output_schema` given back to the model
    /// with the validation errors before the send ends with
    /// `output_invalid` (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_retries: Option<u32>,
    /// This send's token budget (see `init.config.max_total_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_total_tokens: Option<u64>,
    /// This send's tool-call budget (see `init.config.max_tool_calls`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_calls: Option<u32>,
    /// This send's cost budget in US dollars (see `init.config.max_cost_usd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// This send's verification command (see `init.config.verify_command`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_command: Option<String>,
    /// A W3C `traceparent` parenting this send's span (see
    /// `init.config.traceparent`; over HTTP the `traceparent` header).
    /// Accepted from 0.2.0 clients too: it changes nothing on the wire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

impl SendOptions {
    /// True when no option is set (all a 0.2.0 session accepts).
    pub fn is_empty(&self) -> bool {
        SendOptions { traceparent: None, ..self.clone() } == SendOptions::default()
    }
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
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema, utoipa::ToSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Allow,
    Deny,
}
