//! Subagent definitions: what an operator lets a session's model hand
//! work to (`init.config.agents`, Claude Code's `agents` option and
//! `--agents` JSON).
//!
//! Owns the shape only; running a subagent is `agent::subagent`. Source of
//! the fields: Claude Code's `AgentDefinition` (`description`, `prompt`,
//! `tools`, `model`), as its Agent SDK documentation describes it, plus
//! pirn's budgets. Unknown fields are refused, so a setting pirn would not
//! honour never passes silently.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One subagent the model may start with the `task` tool.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, utoipa::ToSchema, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AgentDefinition {
    /// When to use it: what the model reads in the `task` tool's
    /// description.
    pub description: String,
    /// The child's system prompt.
    pub prompt: String,
    /// The tools it gets, by pirn's or Claude Code's names (`Read`,
    /// `Bash`, `mcp__server__tool`, …); only those the parent session
    /// has (never wider). Absent: all of the parent's but `task`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Tools it must not have, by either name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disallowed_tools: Option<Vec<String>>,
    /// The model it calls (absent or `inherit`: the parent's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Most model calls of one run (default: the parent session's
    /// `max_iterations`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    /// Its own token budget (prompt plus completion), within what the
    /// parent send has left.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_total_tokens: Option<u64>,
    /// Its own tool-call budget, within what the parent send has left.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_calls: Option<u32>,
    /// Its own cost budget in US dollars, within what the parent send has left.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
}

/// Subagents by name (`init.config.agents`).
pub type Agents = BTreeMap<String, AgentDefinition>;
