//! The `structuredContent` of `/mcp`'s tool results (`pirn_run`,
//! `pirn_send`), beside the result's text.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// What a `pirn_run` or `pirn_send` call ended with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RunOutput {
    /// The session the send ran in (pass it to `pirn_send` to continue).
    pub session_id: String,
    /// The send's id in that session.
    pub send_id: String,
    /// The send's `result.status`: `ok` or `error`.
    pub status: Option<String>,
    /// The send's `result.stop_reason` (`end_turn`, `max_iterations`, …).
    pub stop_reason: Option<String>,
    /// The final answer's text (absent on an error).
    pub response: Option<String>,
}
