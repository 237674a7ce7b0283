//! The bodies of `pirn serve`'s HTTP API: every JSON request and response
//! body, SSE `data:` and WebSocket control frame the daemon serves, as Rust
//! types.
//!
//! Owns: the shapes only. The handlers in `transport::http` build and read
//! these types and nothing else; `transport::http::openapi` derives
//! `protocol/openapi.json` from them (through `utoipa::ToSchema`) and a test
//! checks the committed document against the generated one, as the JSONL
//! schemas are checked against [`crate::wire`]. The JSONL messages an SSE
//! stream or WebSocket carries are not repeated here: they are
//! [`crate::wire::OutgoingMessage`] lines (`protocol/response.schema.json`).
//!
//! One file per surface: [`sessions`] (`/v1/sessions…` and `/health`),
//! [`group`] (`/v1/hosts`),
//! [`inbox`] (the webhook inbox, after stringd), [`mcp`] (`/mcp` tool
//! results), [`console`] (ACECode's
//! console PTYs), [`webkit`] (agent-webkit 1.0).

#![deny(missing_docs)]

pub mod console;
pub mod group;
pub mod inbox;
pub mod mcp;
pub mod sessions;
pub mod webkit;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Every error answer of the HTTP API (but the webhook's, which keeps
/// stringd's [`inbox::WebhookError`]), with a 4xx or 5xx status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ErrorBody {
    /// A stable code: `UNAUTHORIZED`, `FORBIDDEN`, `NOT_FOUND`,
    /// `BAD_REQUEST`, `BODY_TOO_LARGE`, `UNSUPPORTED_MEDIA_TYPE`,
    /// `QUEUE_FULL`, `DUPLICATE_SEND_ID`, `SESSION_CLOSING`, `SESSION_LIVE`,
    /// `SESSION_BUSY`, `CANNOT_RESUME`, `TOO_MANY_SESSIONS`,
    /// `STORE_UNAVAILABLE`, `ALREADY_ANSWERED`, `BAD_LAST_EVENT_ID`,
    /// `EVICTED`, `TOO_MANY_CONSOLES`, `CONSOLE_FAILED`, `protocol_error`,
    /// `protocol_version_mismatch`.
    pub error: String,
    /// What went wrong, for a person (names the session, send or limit).
    pub message: String,
}

/// `{"ok": true}`: the answer of a request that has nothing else to say.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Ok {
    /// Always true.
    pub ok: bool,
}

/// `body` as one line of JSON: an SSE `data:` or a WebSocket frame. The
/// bodies here are plain data (string keys, no maps that could fail), so
/// serialising cannot fail; were it to, the frame is `null`.
pub fn to_json<T: Serialize>(body: &T) -> String {
    serde_json::to_string(body).unwrap_or_else(|_| "null".to_owned())
}
