//! The plan a model keeps while it works (0.3.0): the `todo_write` tool's
//! list of steps and the `plan` event that carries it.
//!
//! Owns the shapes only: [`TodoItem`] and [`TodoStatus`]. The tool is
//! `tools::todo`, where the plan lives is `conversation` (it is the last
//! `todo_write` call the conversation holds), and how each surface shows it
//! is in protocol.md ("plan"): ACP's `plan` session update, a `TodoWrite`
//! tool use on the Claude surface, the HTTP event stream as it is.
//!
//! Source: the plan tools of the field agree on this shape: Claude Code's
//! `TodoWrite` (`content`, `status`, `activeForm`), Codex's `update_plan`
//! (`step`, `status`), ACP's plan entries (`content`, `status`). The three
//! statuses are theirs.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where one step of a plan stands.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on now (a plan has at most one at a time, by its
    /// authors' convention; pirn does not enforce it).
    InProgress,
    /// Done.
    Completed,
}

/// One step of the model's plan, as `todo_write` received it.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub struct TodoItem {
    /// The step, in the imperative ("Run the tests"); 1 to 500 characters.
    pub content: String,
    /// Where it stands.
    pub status: TodoStatus,
    /// The step as it is being done ("Running the tests"), for a client's
    /// spinner; absent when the model gave none. The tool takes Claude
    /// Code's spelling, `activeForm`, too.
    #[serde(default, alias = "activeForm", skip_serializing_if = "Option::is_none")]
    pub active_form: Option<String>,
}
