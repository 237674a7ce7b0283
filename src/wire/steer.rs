//! Steering a running send (0.3.0): the `steer` request and its `steer_ok`
//! answer.
//!
//! Owns the shapes only. The behaviour is `Session::steer` and
//! `agent::steer`'s; protocol.md ("steer") says it field by field.
//! Source: Codex's `turn/steer` (input added to the turn in progress),
//! in pirn's request/response style.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `steer`: `{type, id, message, send_id?}`. The text joins the running
/// send (the one named by `send_id`, when given) at its next model call;
/// when no such send runs, the request is queued as a send of its own with
/// this `id` and answered like one.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
pub struct SteerRequest {
    /// The request's id: `steer_ok`'s, or the send's it becomes.
    pub id: String,
    /// The text, as a user message.
    pub message: String,
    /// Only this send may take it (a send that has ended by then does not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_id: Option<String>,
}

/// `steer_ok`: the text was handed to running send `send_id`, which lists
/// `id` in its result's `steered` once its model has read it.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
pub struct SteerOk {
    /// The `steer` request's id.
    pub id: String,
    /// The running send that took the text.
    pub send_id: String,
}
