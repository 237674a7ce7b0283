//! The operator's settings inside `init.config` that have shapes of their
//! own: prices, hooks, the sandbox mode, MCP servers, the approval mode and
//! permission rules. Shapes only; what each means at run time is owned by
//! the module that applies it (`model::cost`, `hooks`, `sandbox`,
//! `mcp`, `approval`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The operator's prices in US dollars per million tokens.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema, utoipa::ToSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    /// Dollars per million prompt tokens not served from the cache.
    pub prompt: f64,
    /// Dollars per million prompt tokens served from the provider's prompt
    /// cache (default: `prompt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached: Option<f64>,
    /// Dollars per million completion tokens.
    pub completion: f64,
}

/// Hooks by event name (`PreToolUse`, `PostToolUse`, `UserPromptSubmit`,
/// `Stop`, `SessionStart`, `SessionEnd`, `PreCompact`), as Claude Code's
/// settings hold them. Other event names are accepted and never run.
pub type HooksConfig = std::collections::BTreeMap<String, Vec<HookMatcher>>;

/// One matcher of an event and the commands it runs.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, utoipa::ToSchema, PartialEq)]
pub struct HookMatcher {
    /// Which tools (PreToolUse, PostToolUse), sources (SessionStart) or
    /// triggers (PreCompact) it applies to: empty or `*` for all, names
    /// joined by `|` (`Write|Edit`), else a regular expression. Tool names
    /// match in Claude Code's spelling (`Bash`, `Write`, `Edit`, `Read`,
    /// `Grep`, `Glob`) and in pirn's (`bash`, `write_file`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// The commands, run in parallel.
    #[serde(default)]
    pub hooks: Vec<HookCommand>,
}

/// One hook: a shell command (`type: "command"`; other types are skipped).
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, utoipa::ToSchema, PartialEq)]
pub struct HookCommand {
    /// `command` (the only type pirn runs).
    #[serde(rename = "type", default)]
    pub kind: String,
    /// Run with `/bin/bash -c` in the workspace, sandboxed like `bash`.
    #[serde(default)]
    pub command: String,
    /// Seconds before it is killed (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
}

/// How much a child may write.
#[derive(
    Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema, utoipa::ToSchema, PartialEq, Eq, PartialOrd, Ord,
)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// No sandbox.
    Off,
    /// Read anywhere; write beneath the workspace and the writable roots.
    #[default]
    WorkspaceWrite,
    /// Read anywhere; write nowhere (but devices such as `/dev/null`).
    ReadOnly,
}

impl SandboxMode {
    /// `off`, `workspace-write` or `read-only`.
    pub fn parse(s: &str) -> Option<SandboxMode> {
        match s.trim() {
            "off" => Some(SandboxMode::Off),
            "workspace-write" => Some(SandboxMode::WorkspaceWrite),
            "read-only" => Some(SandboxMode::ReadOnly),
            _ => None,
        }
    }

    /// The name used in config, flags and status.
    pub fn name(self) -> &'static str {
        match self {
            SandboxMode::Off => "off",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::ReadOnly => "read-only",
        }
    }
}

/// One MCP server (0.3.0): a stdio server (`command`, `args`, `env`) or a
/// Streamable HTTP one (`url`, `headers`).
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, utoipa::ToSchema, PartialEq)]
pub struct McpServerConfig {
    /// Names the server's tools (`mcp__<name>__<tool>`): letters, digits,
    /// `_` and `-`, at most 20.
    pub name: String,
    /// Program of a stdio server (run in the workspace, in its own process
    /// group, killed with the session or pirn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The command's arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Added to the environment of a stdio server.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub env: std::collections::BTreeMap<String, String>,
    /// Endpoint of a Streamable HTTP server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Headers sent with every request to `url` (e.g. `Authorization`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub headers: std::collections::BTreeMap<String, String>,
    /// Longest wait for one tool call, in ms (default 60000); past it the
    /// call is cancelled and the model told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// How much the model may do unasked.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema, utoipa::ToSchema, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalMode {
    /// Everything in the workspace is allowed (default).
    #[default]
    FullAuto,
    /// File edits allowed; bash needs approval.
    AutoEdit,
    /// Reads allowed; writes and bash need approval.
    Suggest,
    /// Reads only; the model writes a plan, which ends the send.
    Plan,
}

/// `config.permissions`: rule lists, each rule `tool` or `tool(glob)`, e.g.
/// `bash(git push*)`, `write_file(.env*)`, `read_file(secrets/**)`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, utoipa::ToSchema, PartialEq)]
pub struct PermissionRules {
    /// Calls that run without asking.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Calls that are refused (the model is told).
    #[serde(default)]
    pub deny: Vec<String>,
    /// Calls that need an answer to a `permission_request`.
    #[serde(default)]
    pub ask: Vec<String>,
}
