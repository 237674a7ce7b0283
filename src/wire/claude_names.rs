//! The names Claude Code gives things pirn also has, for the two places
//! that speak Claude Code's formats: the stream-json surface
//! (`crate::claude`) and the operator hooks (`crate::hooks`).
//!
//! Source: Claude Code's tool names (`Read`, `Write`, …) and permission
//! modes (`default`, `acceptEdits`, `plan`, `bypassPermissions`), as its
//! Agent SDKs' types spell them. Pure data; no I/O.

use super::policy::ApprovalMode;

/// Claude Code's names of pirn's six built-in tools, its plan tool, its
/// subagent tool (`Agent`, which Claude Code called `Task` before; both
/// read) and its background-shell tools (`BashOutput` and `KillShell`,
/// later `TaskOutput` and `TaskStop`; all read), as (Claude, pirn). The arguments stay pirn's own (see
/// protocol/claude-code.md), but for the plan's, which the surface shows
/// in Claude Code's shape (`activeForm`).
pub const TOOL_NAMES: [(&str, &str); 13] = [
    ("Read", "read_file"),
    ("Write", "write_file"),
    ("Edit", "edit_file"),
    ("Glob", "glob"),
    ("Grep", "grep"),
    ("Bash", "bash"),
    ("TodoWrite", "todo_write"),
    ("Agent", "task"),
    ("Task", "task"),
    ("BashOutput", "bash_output"),
    ("KillShell", "kill_shell"),
    ("TaskOutput", "bash_output"),
    ("TaskStop", "kill_shell"),
];

/// Claude Code's name of pirn tool `name`; MCP tools (`mcp__server__tool`,
/// the same on both) and unknown names are returned as they are.
pub fn claude_tool_name(name: &str) -> &str {
    TOOL_NAMES.iter().find(|(_, p)| *p == name).map_or(name, |(c, _)| c)
}

/// Claude Code's name of approval mode `mode`.
pub fn permission_mode_name(mode: ApprovalMode) -> &'static str {
    match mode {
        ApprovalMode::Suggest => "default",
        ApprovalMode::AutoEdit => "acceptEdits",
        ApprovalMode::Plan => "plan",
        ApprovalMode::FullAuto => "bypassPermissions",
    }
}
