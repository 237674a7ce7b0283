//! Claude Code's command line (`claude -p …`, and what the Agent SDKs pass
//! to the executable they spawn), parsed and mapped onto a pirn session.
//!
//! Owns: [`ClaudeArgs`] (the flags pirn honours), [`is_claude_invocation`]
//! (does an argument vector ask for this surface), the refusal of the
//! flags pirn cannot honour ([`REFUSED`], exit 2 with the reason, never
//! ignored). The names both sides give tools, modes and rules are in
//! [`super::mapping`].

use clap::{Parser, ValueEnum};

use super::mapping::{approval_mode, mcp_servers, pirn_name, pirn_rule, split_rules};

use crate::wire::{ApprovalMode, McpServerConfig, PermissionRules};

/// Flags of Claude Code pirn knows but cannot honour, with the reason
/// given when one is passed (exit 2).
pub const REFUSED: &[(&str, &str)] = &[
    ("--task-budget", "pirn has no task budgets"),
    ("--betas", "pirn speaks OpenAI-compatible chat completions: there are no Anthropic betas"),
    ("--session-id", "pirn chooses its session ids"),
    ("--resume-drops-turn", "pirn resumes a whole session"),
    ("--session-mirror", "pirn stores sessions itself (PIRN_HOME, PIRN_STORE)"),
    ("--plugin-dir", "pirn has no plugins"),
    ("--plugin-dir-no-mcp", "pirn has no plugins"),
    ("--agent", "pirn's main thread is never a subagent (define subagents with --agents; the model starts them)"),
    ("--max-thinking-tokens", "pirn does not ask models for thinking"),
    ("--thinking", "pirn does not ask models for thinking"),
    ("--thinking-display", "pirn does not ask models for thinking"),
    ("--effort", "pirn sends no reasoning effort"),
    ("--include-hook-events", "pirn reports hook runs in its own protocol (hook_start/hook_end), not in stream-json"),
    ("--channels", "pirn has no channels"),
    ("--sdk-url", "pirn speaks stream-json on stdio only"),
    ("--managed-settings", "pirn reads no managed settings"),
    ("--managed-settings-in-initialize", "pirn reads no managed settings"),
    ("--permission-prompts", "pirn asks through --permission-prompt-tool stdio only"),
    ("--initialize-fields", "pirn reads its initialize fields from the request itself"),
    ("--project-config-root", "pirn reads no Claude Code project config"),
    ("--debug-file", "pirn logs to stderr (--log or PIRN_LOG)"),
    ("--system-prompt-file", "pass the prompt itself (--system-prompt)"),
    ("--append-system-prompt-file", "pass the text itself (--append-system-prompt)"),
    ("--ide", "pirn has no IDE integration"),
];

/// `--output-format`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ClaudeOutputFormat {
    /// The final answer only.
    #[default]
    Text,
    /// One `result` object at the end.
    Json,
    /// Every message, one JSON object a line.
    StreamJson,
}

/// `--input-format`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum InputFormat {
    /// The prompt is the argument (or all of stdin).
    #[default]
    Text,
    /// stream-json lines on stdin: prompts and control messages.
    StreamJson,
}

/// The flags of Claude Code's headless mode pirn honours.
#[derive(Parser, Debug, Default, Clone)]
#[command(name = "pirn", no_binary_name = true, version = crate::claude::wire::CLAUDE_CODE_VERSION)]
pub struct ClaudeArgs {
    /// Non-interactive: print the answer and exit (pirn always is).
    #[arg(short = 'p', long = "print")]
    pub print: bool,
    #[arg(long, value_enum, default_value_t)]
    pub output_format: ClaudeOutputFormat,
    #[arg(long, value_enum, default_value_t)]
    pub input_format: InputFormat,
    /// Accepted (stream-json output is always complete).
    #[arg(long)]
    pub verbose: bool,
    /// Accepted: pirn logs to stderr when --log or PIRN_LOG asks.
    #[arg(long, short = 'd')]
    pub debug: bool,
    /// Accepted, as --debug.
    #[arg(long)]
    pub debug_to_stderr: bool,
    #[arg(long)]
    pub model: Option<String>,
    /// Model calls per turn (pirn's max_iterations).
    #[arg(long)]
    pub max_turns: Option<u32>,
    /// Tools (or `Tool(pattern)` rules) that run without asking.
    #[arg(long = "allowedTools", alias = "allowed-tools")]
    pub allowed_tools: Vec<String>,
    /// Tools removed from the model's set (or `Tool(pattern)` rules refused).
    #[arg(long = "disallowedTools", alias = "disallowed-tools")]
    pub disallowed_tools: Vec<String>,
    /// The tools the model gets: `default`, `""` (none) or a list.
    #[arg(long)]
    pub tools: Option<String>,
    /// default, acceptEdits, plan, bypassPermissions, dontAsk.
    #[arg(long)]
    pub permission_mode: Option<String>,
    #[arg(long)]
    pub dangerously_skip_permissions: bool,
    /// Accepted: it only allows switching to bypassPermissions later.
    #[arg(long)]
    pub allow_dangerously_skip_permissions: bool,
    /// Replaces pirn's base system prompt (empty: pirn's base prompt).
    #[arg(long)]
    pub system_prompt: Option<String>,
    #[arg(long)]
    pub append_system_prompt: Option<String>,
    /// The answer must be JSON valid against this schema.
    #[arg(long)]
    pub json_schema: Option<String>,
    /// Continue this stored session.
    #[arg(long, short = 'r')]
    pub resume: Option<String>,
    /// Continue the most recent session of this workspace.
    #[arg(long = "continue", short = 'c')]
    pub continue_last: bool,
    /// With --resume or --continue: a new session holding a copy of the
    /// stored one's conversation; the stored one is left as it is.
    #[arg(long)]
    pub fork_session: bool,
    /// With --resume: keep the stored conversation up to and including
    /// this assistant message (its uuid, as pirn wrote it).
    #[arg(long, value_name = "UUID")]
    pub resume_session_at: Option<String>,
    /// Echo each prompt as a `user` message with its uuid (what
    /// `rewind_files` names).
    #[arg(long)]
    pub replay_user_messages: bool,
    /// `{"mcpServers":{…}}` as JSON or a file holding it (repeatable).
    #[arg(long)]
    pub mcp_config: Vec<String>,
    /// Accepted: pirn reads no other MCP configuration.
    #[arg(long)]
    pub strict_mcp_config: bool,
    #[arg(long)]
    pub include_partial_messages: bool,
    /// `stdio`: ask the SDK (`can_use_tool` control requests).
    #[arg(long)]
    pub permission_prompt_tool: Option<String>,
    /// `user`, `project`, `local`: which instruction files to read.
    #[arg(long)]
    pub setting_sources: Option<String>,
    /// Directories outside the workspace the file tools may reach.
    #[arg(long)]
    pub add_dir: Vec<String>,
    /// The session is not stored.
    #[arg(long)]
    pub no_session_persistence: bool,
    /// Accepted: pirn takes no optional locks.
    #[arg(long)]
    pub no_optional_locks: bool,
    /// Claude Code settings (a file or JSON); only its `hooks` are read:
    /// the operator's hooks, run as `pirn run --settings` runs them.
    #[arg(long)]
    pub settings: Option<String>,
    /// Cost budget of the whole run in US dollars (the provider's figures,
    /// else `PIRN_PRICES`): pirn's `max_cost_usd`.
    #[arg(long)]
    pub max_budget_usd: Option<f64>,
    /// The model a turn's requests go to once `--model` refuses one that
    /// another model could take (pirn's `fallback_model`).
    #[arg(long)]
    pub fallback_model: Option<String>,
    /// Subagents as JSON (`{"name": {"description", "prompt", "tools"?,
    /// "model"?, …}}`): pirn's `config.agents`.
    #[arg(long)]
    pub agents: Option<String>,
    /// Accepted: pirn reads initialize before its first turn anyway.
    #[arg(long)]
    pub await_initialize: bool,
    /// The prompt (text input).
    pub prompt: Option<String>,
}

/// Why the command line cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum ArgsError {
    #[error(transparent)]
    Clap(#[from] clap::Error),
    #[error("{flag} is not supported by pirn: {reason}")]
    Refused { flag: String, reason: &'static str },
    #[error("{0}")]
    Invalid(String),
}

/// Whether `args` (without the program name) ask for Claude Code's
/// surface: the first is one of its flags, or, after `run`, one of the
/// flags only it has (`--continue` is `pirn run`'s own as well).
pub fn is_claude_invocation(args: &[String], after_run: bool) -> bool {
    const ONLY_CLAUDE: &[&str] = &[
        "-p",
        "--print",
        "--output-format",
        "--input-format",
        "--verbose",
        "--max-turns",
        "--allowedTools",
        "--disallowedTools",
        "--permission-mode",
        "--append-system-prompt",
        "--json-schema",
        "--continue",
        "-c",
        "--mcp-config",
        "--include-partial-messages",
        "--permission-prompt-tool",
        "--dangerously-skip-permissions",
    ];
    let flag = |a: &String| a.split('=').next().unwrap_or(a).to_owned();
    if after_run {
        // `pirn run --continue` is pirn run's own flag too.
        let own = |f: &str| ["--continue", "-c"].contains(&f);
        return args.iter().any(|a| ONLY_CLAUDE.contains(&flag(a).as_str()) && !own(&flag(a)));
    }
    args.first().is_some_and(|a| {
        let f = flag(a);
        f.starts_with('-')
            && !["--log", "--help", "-h", "--version", "-V"].contains(&f.as_str())
            && (ONLY_CLAUDE.contains(&f.as_str())
                || REFUSED.iter().any(|(r, _)| *r == f)
                || ["--model", "--system-prompt", "--resume", "-r", "--tools"].contains(&f.as_str()))
    })
}

impl ClaudeArgs {
    /// Parses `args` (without the program name); flags in [`REFUSED`] are
    /// refused by name.
    pub fn parse_from_args(args: &[String]) -> Result<ClaudeArgs, ArgsError> {
        for a in args {
            let flag = a.split('=').next().unwrap_or(a);
            if let Some((f, reason)) = REFUSED.iter().find(|(f, _)| *f == flag) {
                return Err(ArgsError::Refused { flag: (*f).to_owned(), reason });
            }
        }
        let parsed = ClaudeArgs::try_parse_from(args)?;
        if let Some(tool) = parsed.permission_prompt_tool.as_deref().filter(|t| *t != "stdio") {
            return Err(ArgsError::Refused {
                flag: format!("--permission-prompt-tool {tool}"),
                reason: "pirn asks the SDK over stdio only (--permission-prompt-tool stdio)",
            });
        }
        if parsed.resume.is_some() && parsed.continue_last {
            return Err(ArgsError::Invalid("--resume and --continue exclude each other".into()));
        }
        Ok(parsed)
    }

    /// pirn's approval mode for `--permission-mode` (and
    /// `--dangerously-skip-permissions`).
    pub fn approval_mode(&self) -> Result<ApprovalMode, ArgsError> {
        if self.dangerously_skip_permissions {
            return Ok(ApprovalMode::FullAuto);
        }
        approval_mode(self.permission_mode.as_deref().unwrap_or("default")).map_err(ArgsError::Invalid)
    }

    /// The tools the model gets (pirn's names), before `--disallowedTools`.
    pub fn tool_set(&self) -> Result<Vec<String>, ArgsError> {
        let all = || crate::tools::ALL_TOOLS.iter().map(|t| (*t).to_owned()).collect::<Vec<_>>();
        let mut tools = match self.tools.as_deref() {
            None | Some("default") => all(),
            Some(list) => {
                let mut out = Vec::new();
                for name in split_rules(list) {
                    match pirn_name(&name) {
                        Some(p) => out.push(p),
                        None => {
                            return Err(ArgsError::Invalid(format!(
                                "--tools {name}: pirn has no such tool (it has Read, Write, Edit, Glob, Grep, Bash, TodoWrite and MCP tools)"
                            )));
                        }
                    }
                }
                out
            }
        };
        let removed: Vec<String> =
            self.disallowed_tools.iter().flat_map(|d| split_rules(d)).filter(|r| !r.contains('(')).collect();
        tools.retain(|t| !removed.iter().any(|r| pirn_name(r).as_deref() == Some(t.as_str())));
        let apart = [crate::tools::todo::NAME, crate::tools::task::NAME, "bash_output", "kill_shell"];
        tools.retain(|t| !apart.contains(&t.as_str()));
        Ok(tools)
    }

    /// Whether background shells are offered: never when
    /// `--disallowedTools` names `BashOutput` or `KillShell` (or
    /// `TaskOutput`, `TaskStop`); else pirn's default (they follow `Bash`).
    pub fn background_shells(&self) -> Option<bool> {
        let shells = |n: String| matches!(pirn_name(&n).as_deref(), Some("bash_output" | "kill_shell"));
        self.disallowed_tools.iter().any(|d| split_rules(d).into_iter().any(shells)).then_some(false)
    }

    /// Whether the plan tool (`TodoWrite`) is offered: `None` leaves it to
    /// pirn's default (on unless the profile leaves it out); a `--tools`
    /// list offers it only when it names it, and `--disallowedTools
    /// TodoWrite` never.
    pub fn plan_tool(&self) -> Option<bool> {
        let names = |list: &str| split_rules(list).into_iter().any(|n| pirn_name(&n).as_deref() == Some("todo_write"));
        if self.disallowed_tools.iter().any(|d| names(d)) {
            return Some(false);
        }
        match self.tools.as_deref() {
            None | Some("default") => None,
            Some(list) => Some(names(list)),
        }
    }

    /// Whether the subagent tool (`Agent`, formerly `Task`) may be
    /// offered: not when `--disallowedTools` names it or a `--tools` list
    /// leaves it out.
    pub fn task_tool(&self) -> bool {
        let names = |list: &str| split_rules(list).into_iter().any(|n| pirn_name(&n).as_deref() == Some("task"));
        if self.disallowed_tools.iter().any(|d| names(d)) {
            return false;
        }
        match self.tools.as_deref() {
            None | Some("default") => true,
            Some(list) => names(list),
        }
    }

    /// `--allowedTools` and `--disallowedTools` as pirn's permission rules
    /// (`Bash(git diff:*)` → `bash(git diff*)`). Names of tools pirn lacks
    /// are dropped: allowing or refusing a tool that does not exist changes
    /// nothing.
    pub fn permission_rules(&self) -> PermissionRules {
        let rules = |list: &[String], patterned_only: bool| -> Vec<String> {
            list.iter()
                .flat_map(|d| split_rules(d))
                .filter(|r| !patterned_only || r.contains('('))
                .filter_map(|r| pirn_rule(&r))
                .collect()
        };
        PermissionRules {
            allow: rules(&self.allowed_tools, false),
            deny: rules(&self.disallowed_tools, true),
            ..PermissionRules::default()
        }
    }

    /// The MCP servers of every `--mcp-config`, and the names of the SDK's
    /// in-process ones.
    pub fn mcp_servers(&self) -> Result<(Vec<McpServerConfig>, Vec<String>), ArgsError> {
        let mut out = Vec::new();
        let mut hosted = Vec::new();
        for arg in &self.mcp_config {
            let text = if arg.trim_start().starts_with('{') {
                arg.clone()
            } else {
                std::fs::read_to_string(arg).map_err(|e| ArgsError::Invalid(format!("--mcp-config {arg}: {e}")))?
            };
            let v: serde_json::Value =
                serde_json::from_str(&text).map_err(|e| ArgsError::Invalid(format!("--mcp-config: not JSON: {e}")))?;
            let servers = v.get("mcpServers").and_then(|s| s.as_object()).cloned().unwrap_or_default();
            let (servers, sdk) = mcp_servers(&servers).map_err(ArgsError::Invalid)?;
            out.extend(servers);
            hosted.extend(sdk);
        }
        Ok((out, hosted))
    }

    /// Which instruction files `--setting-sources` lets pirn read: (user,
    /// project). Absent: both.
    pub fn instruction_sources(&self) -> (bool, bool) {
        match &self.setting_sources {
            None => (true, true),
            Some(s) => {
                let list: Vec<&str> = s.split(',').map(str::trim).collect();
                (list.contains(&"user"), list.contains(&"project") || list.contains(&"local"))
            }
        }
    }
}

#[cfg(test)]
mod tests;
