//! The names Claude Code and pirn give the same things: tool names
//! ([`TOOL_NAMES`]), permission modes and approval modes, permission rules
//! (`Bash(git diff:*)` → `bash(git diff*)`), and `mcpServers` entries.
//!
//! Pure functions; the command line that uses them is in [`super::args`],
//! the stream translation in [`super::translate`].

pub use crate::wire::claude_names::{TOOL_NAMES, claude_tool_name as claude_name, permission_mode_name};
use crate::wire::{ApprovalMode, McpServerConfig};

/// pirn's name of Claude Code tool `name`, when pirn has that tool.
pub fn pirn_name(name: &str) -> Option<String> {
    if let Some((_, p)) = TOOL_NAMES.iter().find(|(c, p)| *c == name || *p == name) {
        return Some((*p).to_owned());
    }
    name.starts_with(crate::mcp::client::PREFIX).then(|| name.to_owned())
}

/// pirn's approval mode for Claude Code's permission mode `mode`.
pub fn approval_mode(mode: &str) -> Result<ApprovalMode, String> {
    match mode {
        "default" | "dontAsk" => Ok(ApprovalMode::Suggest),
        "acceptEdits" => Ok(ApprovalMode::AutoEdit),
        "plan" => Ok(ApprovalMode::Plan),
        "bypassPermissions" => Ok(ApprovalMode::FullAuto),
        other => Err(format!(
            "--permission-mode {other}: pirn knows default, acceptEdits, plan, bypassPermissions and dontAsk"
        )),
    }
}

/// Splits a tool list the way Claude Code does: on commas and spaces
/// outside parentheses.
pub fn split_rules(list: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut cur, mut depth) = (String::new(), 0usize);
    for c in list.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' | ' ' if depth == 0 => {
                if !cur.trim().is_empty() {
                    out.push(cur.trim().to_owned());
                }
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_owned());
    }
    out
}

/// One Claude Code permission rule as pirn's (`None`: a tool pirn lacks).
pub fn pirn_rule(rule: &str) -> Option<String> {
    let (tool, pattern) = match rule.split_once('(') {
        Some((t, rest)) => (t, Some(rest.strip_suffix(')').unwrap_or(rest))),
        None => (rule, None),
    };
    let tool = pirn_name(tool.trim())?;
    Some(match pattern {
        // Claude Code's `prefix:*` is a prefix match: pirn's glob `prefix*`.
        Some(p) => format!("{tool}({})", p.strip_suffix(":*").map_or_else(|| p.to_owned(), |s| format!("{s}*"))),
        None => tool,
    })
}

/// `mcpServers` entries (Claude Code's config: `type` stdio, http, sse or
/// sdk) as pirn's server configs, and the names of the SDK's in-process
/// servers (`sdk`, reached through the control protocol). SSE servers are
/// refused: pirn speaks stdio and Streamable HTTP.
pub fn mcp_servers(
    servers: &serde_json::Map<String, serde_json::Value>,
) -> Result<(Vec<McpServerConfig>, Vec<String>), String> {
    let strings = |v: Option<&serde_json::Value>| -> std::collections::BTreeMap<String, String> {
        v.and_then(|m| m.as_object())
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
            .collect()
    };
    let mut out = Vec::new();
    let mut hosted = Vec::new();
    for (name, s) in servers {
        let kind = s.get("type").and_then(|t| t.as_str()).unwrap_or("stdio");
        match kind {
            "sdk" => hosted.push(name.clone()),
            "stdio" => out.push(McpServerConfig {
                name: name.clone(),
                command: Some(
                    s.get("command").and_then(|c| c.as_str()).ok_or(format!("MCP server {name}: no command"))?.into(),
                ),
                args: s
                    .get("args")
                    .and_then(|a| a.as_array())
                    .into_iter()
                    .flatten()
                    .filter_map(|a| a.as_str().map(str::to_owned))
                    .collect(),
                env: strings(s.get("env")),
                ..McpServerConfig::default()
            }),
            "http" => out.push(McpServerConfig {
                name: name.clone(),
                url: Some(s.get("url").and_then(|c| c.as_str()).ok_or(format!("MCP server {name}: no url"))?.into()),
                headers: strings(s.get("headers")),
                ..McpServerConfig::default()
            }),
            other => {
                return Err(format!(
                    "MCP server {name}: type {other} is not supported by pirn (it speaks stdio, http and sdk servers)"
                ));
            }
        }
    }
    Ok((out, hosted))
}
