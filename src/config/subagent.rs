//! A subagent's session config: the parent's, narrowed by the operator's
//! agent definition.
//!
//! Owns: [`check_agents`] (definitions read once when the session opens)
//! and [`SessionConfig::for_subagent`]. What a child may do is never wider
//! than its parent: the same workspace, sandbox, approval policy, hooks and
//! client; a subset of the parent's tools; no `task` tool of its own (depth
//! one) and no plan tool (the plan is the session's).

use std::sync::{Arc, OnceLock};

use super::error::ConfigError;
use super::session::SessionConfig;
use crate::wire::{AgentDefinition, Agents};

/// Checks `agents` (errors name the agent and the field).
pub(super) fn check_agents(agents: &Agents) -> Result<(), ConfigError> {
    for (name, a) in agents {
        let bad = |what: &str| ConfigError::Agents(format!("{name}: {what}"));
        if name.trim().is_empty() || name.len() > 64 {
            return Err(ConfigError::Agents(format!("{name:?}: a name of 1 to 64 characters")));
        }
        if a.description.trim().is_empty() {
            return Err(bad("description is empty"));
        }
        if a.prompt.trim().is_empty() {
            return Err(bad("prompt is empty"));
        }
        for t in a.tools.iter().chain(&a.disallowed_tools).flatten() {
            if pirn_tool(t).is_none() {
                return Err(bad(&format!("no tool {t:?} (pirn's or Claude Code's names, or mcp__server__tool)")));
            }
        }
        if a.max_turns == Some(0) || a.max_tool_calls == Some(0) || a.max_total_tokens == Some(0) {
            return Err(bad("a budget of 0"));
        }
        if let Some(m) = a.model.as_deref().filter(|m| CLAUDE_ALIASES.contains(&m.trim())) {
            return Err(bad(&format!(
                "model {m:?} is a Claude Code alias, which an OpenAI-compatible server does not know: name the model, or \"inherit\""
            )));
        }
        if a.max_cost_usd.is_some_and(|c| !c.is_finite() || c <= 0.0) {
            return Err(bad("max_cost_usd must be a number of dollars above 0"));
        }
    }
    Ok(())
}

/// Claude Code's model aliases, which mean nothing to pirn's servers.
const CLAUDE_ALIASES: [&str; 4] = ["sonnet", "opus", "haiku", "fable"];

/// pirn's name of tool `name` (pirn's or Claude Code's), MCP names as they are.
fn pirn_tool(name: &str) -> Option<String> {
    let name = name.trim();
    if name.starts_with(crate::mcp::client::PREFIX) {
        return Some(name.to_owned());
    }
    crate::wire::claude_names::TOOL_NAMES.iter().find(|(c, p)| *c == name || *p == name).map(|(_, p)| (*p).to_owned())
}

impl SessionConfig {
    /// The config of a run of subagent `def`: the parent's with the
    /// agent's prompt as the system prompt, its model (unless `inherit`),
    /// the parent's tools it lists (all of them when it lists none) minus
    /// those it disallows, MCP tools only when it lists none or names one,
    /// its `max_turns`, and no `task` or plan tool.
    pub fn for_subagent(&self, def: &AgentDefinition) -> SessionConfig {
        let listed: Option<Vec<String>> = def.tools.as_ref().map(|l| l.iter().filter_map(|t| pirn_tool(t)).collect());
        let denied: Vec<String> = def.disallowed_tools.iter().flatten().filter_map(|t| pirn_tool(t)).collect();
        let keep = |t: &String| listed.as_ref().is_none_or(|l| l.contains(t)) && !denied.contains(t);
        let mut child = self.clone();
        child.system_prompt = def.prompt.clone();
        child.instruction_files = Vec::new();
        child.tools = self.tools.iter().filter(|t| keep(t)).cloned().collect();
        let mcp_wanted = listed.as_ref().is_none_or(|l| l.iter().any(|t| t.starts_with(crate::mcp::client::PREFIX)));
        if !mcp_wanted {
            child.mcp = None;
            child.mcp_patterns = Vec::new();
        }
        child.plan_tool = false;
        child.agents = Arc::default();
        if let Some(model) = def.model.as_deref().map(str::trim).filter(|m| !m.is_empty() && *m != "inherit") {
            child.model = model.to_owned();
            child.fallback_model = self.fallback_model.clone().filter(|f| f != model);
        }
        child.max_iterations = def.max_turns.unwrap_or(self.max_iterations);
        child.workspace_listing = false;
        // The operator's check is of the parent's send, which runs it.
        child.verify_command = None;
        child.tool_specs = OnceLock::new();
        child.tool_spec_bytes = OnceLock::new();
        child
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_of_either_side_read_and_unknown_ones_are_refused() {
        assert_eq!(pirn_tool("Read").as_deref(), Some("read_file"));
        assert_eq!(pirn_tool("bash").as_deref(), Some("bash"));
        assert_eq!(pirn_tool("mcp__fs__read").as_deref(), Some("mcp__fs__read"));
        assert_eq!(pirn_tool("WebFetch"), None);
        let agents = Agents::from([(
            "r".to_owned(),
            AgentDefinition {
                description: "d".into(),
                prompt: "p".into(),
                tools: Some(vec!["WebFetch".into()]),
                ..Default::default()
            },
        )]);
        assert!(check_agents(&agents).unwrap_err().to_string().contains("WebFetch"));
    }
}
