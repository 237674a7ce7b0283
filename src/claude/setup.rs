//! The pirn session behind Claude Code's surface: its init config, built
//! from the command line and (for the TypeScript SDK, which sends the
//! system prompt, the JSON schema and sometimes MCP servers there) the
//! `initialize` control request.
//!
//! Owns: [`ClaudeSetup`] — what both give, validated before anything runs — and
//! [`ClaudeSetup::init_config`], the one mapping onto pirn's [`InitConfig`].

use super::args::{ArgsError, ClaudeArgs};
use super::input::InitializeIn;
use super::mapping::mcp_servers;
use crate::config::DEFAULT_SYSTEM_PROMPT;
use crate::wire::{ApprovalMode, InitConfig, InstructionSource, McpServerConfig, PermissionRules};

/// Everything the session is opened with.
#[derive(Debug, Clone)]
pub struct ClaudeSetup {
    pub model: String,
    /// `None`: pirn's base prompt.
    pub system_prompt: Option<String>,
    pub append_system_prompt: Option<String>,
    /// pirn's tool names (built-ins; MCP patterns are added per server).
    pub tools: Vec<String>,
    /// `TodoWrite` offered (see [`super::args::ClaudeArgs::plan_tool`]).
    pub plan_tool: Option<bool>,
    /// Background shells offered (see [`super::args::ClaudeArgs::background_shells`]).
    pub background_shells: Option<bool>,
    pub mode: ApprovalMode,
    pub rules: PermissionRules,
    pub mcp: Vec<McpServerConfig>,
    /// The SDK's in-process MCP servers (`type: "sdk"`), by name.
    pub sdk_mcp: Vec<String>,
    pub max_turns: Option<u32>,
    /// The SDK answers permission requests (`--permission-prompt-tool stdio`).
    pub ask_sdk: bool,
    pub json_schema: Option<serde_json::Value>,
    pub resume: Option<String>,
    /// `--fork-session`: the resumed session is copied, not continued.
    pub fork: bool,
    /// `--resume-session-at`, resolved to a message number (see
    /// `super::checkpoints::resume_at`).
    pub resume_at_message: Option<u64>,
    pub persist: bool,
    pub add_dirs: Vec<String>,
    /// `--setting-sources`: whether the user-level and the project
    /// instruction files are read.
    pub instructions: (bool, bool),
    /// `--settings`: the operator's hooks.
    pub hooks: Option<crate::wire::HooksConfig>,
    /// `initialize.hooks`: the SDK's hook callbacks (see
    /// [`crate::hooks::callback`]).
    pub callbacks: Option<crate::hooks::callback::CallbackTable>,
    /// `--settings`' `env.PIRN_PROFILE`: the session's profile (else the
    /// process's `PIRN_PROFILE`, else the model-settings table's rule).
    pub profile: Option<String>,
    /// `--max-budget-usd`.
    pub max_cost_usd: Option<f64>,
    /// `--fallback-model` (the SDKs' `fallback_model`).
    pub fallback_model: Option<String>,
    /// `--agents` and `initialize.agents`: the subagents (see
    /// [`crate::agent::subagent`]); none when the tool set leaves the
    /// `Agent` tool out.
    pub agents: crate::wire::Agents,
    /// The tool set lets the `Agent` tool be offered.
    pub task_tool: bool,
    /// `initialize.forwardSubagentText`: subagents' text reaches the SDK.
    pub forward_subagent_text: bool,
    /// `TRACEPARENT` of the environment: the W3C trace parent of every
    /// turn's span (see [`crate::telemetry`]), as for `pirn run`.
    pub traceparent: Option<String>,
}

impl ClaudeSetup {
    /// The setup the command line asks for (errors: exit 2).
    pub fn from_args(a: &ClaudeArgs) -> Result<ClaudeSetup, ArgsError> {
        let (mcp, sdk_mcp) = a.mcp_servers()?;
        let json_schema = match &a.json_schema {
            None => None,
            Some(s) => {
                Some(serde_json::from_str(s).map_err(|e| ArgsError::Invalid(format!("--json-schema: not JSON: {e}")))?)
            }
        };
        let settings = match &a.settings {
            None => None,
            Some(s) => {
                Some(crate::hooks::settings::read(s).map_err(|e| ArgsError::Invalid(format!("--settings: {e}")))?)
            }
        };
        let agents = match &a.agents {
            None => crate::wire::Agents::default(),
            Some(json) => serde_json::from_str(json).map_err(|e| ArgsError::Invalid(format!("--agents: {e}")))?,
        };
        Ok(ClaudeSetup {
            agents,
            task_tool: a.task_tool(),
            forward_subagent_text: false,
            model: crate::environment::model_or_default(a.model.clone()),
            system_prompt: a.system_prompt.clone().filter(|s| !s.is_empty()),
            append_system_prompt: a.append_system_prompt.clone().filter(|s| !s.is_empty()),
            tools: a.tool_set()?,
            plan_tool: a.plan_tool(),
            background_shells: a.background_shells(),
            mode: a.approval_mode()?,
            rules: a.permission_rules(),
            mcp,
            sdk_mcp,
            max_turns: a.max_turns,
            ask_sdk: a.permission_prompt_tool.as_deref() == Some("stdio"),
            json_schema,
            resume: a.resume.clone(),
            fork: a.fork_session,
            resume_at_message: None,
            persist: !a.no_session_persistence,
            add_dirs: a.add_dir.clone(),
            instructions: a.instruction_sources(),
            hooks: settings.as_ref().map(|s| s.hooks.clone()),
            callbacks: None,
            profile: settings.and_then(|s| s.profile),
            max_cost_usd: a.max_budget_usd,
            fallback_model: a.fallback_model.clone(),
            traceparent: crate::environment::traceparent(),
        })
    }

    /// Takes what `initialize` adds. Errors name what pirn cannot honour
    /// (an agent field pirn does not know, callbacks for events pirn never
    /// fires): the SDK then fails the connection rather than running
    /// without them.
    pub fn apply(&mut self, init: &InitializeIn) -> Result<(), String> {
        let present = |v: &Option<serde_json::Value>| {
            v.as_ref().is_some_and(|v| !v.is_null() && v.as_object().is_none_or(|o| !o.is_empty()))
        };
        if let Some(hooks) = init.hooks.as_ref().filter(|_| present(&init.hooks)) {
            self.callbacks = Some(crate::hooks::callback::table(hooks)?);
        }
        if let Some(agents) = init.agents.as_ref().filter(|_| present(&init.agents)) {
            let agents: crate::wire::Agents =
                serde_json::from_value(agents.clone()).map_err(|e| format!("agents: {e}"))?;
            self.agents.extend(agents);
        }
        if let Some(on) = init.forward_subagent_text {
            self.forward_subagent_text = on;
        }
        for name in init.sdk_mcp_servers.iter().flatten() {
            if !self.sdk_mcp.contains(name) {
                self.sdk_mcp.push(name.clone());
            }
        }
        if let Some(schema) = &init.json_schema {
            self.json_schema = Some(schema.clone());
        }
        if let Some(p) = init.system_prompt.as_ref().map(|p| p.text()).filter(|p| !p.is_empty()) {
            self.system_prompt = Some(p);
        }
        if let Some(p) = init.append_system_prompt.clone().filter(|p| !p.is_empty()) {
            self.append_system_prompt = Some(p);
        }
        if let Some(servers) = &init.mcp_servers {
            let (servers, hosted) = mcp_servers(servers)?;
            self.mcp.extend(servers);
            self.sdk_mcp.extend(hosted);
        }
        Ok(())
    }

    /// pirn's init config for this setup.
    pub fn init_config(&self) -> InitConfig {
        let mut system = self.system_prompt.clone().unwrap_or_else(|| DEFAULT_SYSTEM_PROMPT.to_owned());
        if let Some(more) = &self.append_system_prompt {
            system.push_str("\n\n");
            system.push_str(more);
        }
        let mut tools = self.tools.clone();
        let servers = self.mcp.iter().map(|s| &s.name).chain(&self.sdk_mcp);
        tools.extend(servers.map(|name| format!("{}{name}__*", crate::mcp::client::PREFIX)));
        let rules = self.rules.clone();
        let has_rules = !rules.allow.is_empty() || !rules.deny.is_empty() || !rules.ask.is_empty();
        InitConfig {
            model: self.model.clone(),
            system_prompt: system,
            tools,
            plan_tool: self.plan_tool,
            background_shells: self.background_shells,
            max_iterations: self.max_turns,
            approval_mode: Some(self.mode),
            permissions: has_rules.then_some(rules),
            permission_responses: Some(self.ask_sdk),
            mcp_servers: Some(self.mcp.clone()).filter(|m| !m.is_empty()),
            resume_session_id: self.resume.clone(),
            fork_session: (self.fork && self.resume.is_some()).then_some(true),
            resume_at_message: self.resume_at_message.filter(|_| self.resume.is_some()),
            persist: (!self.persist).then_some(false),
            allowed_paths: Some(self.add_dirs.clone()).filter(|d| !d.is_empty()),
            instruction_sources: Some(
                [(self.instructions.0, InstructionSource::User), (self.instructions.1, InstructionSource::Project)]
                    .into_iter()
                    .filter_map(|(on, s)| on.then_some(s))
                    .collect(),
            ),
            hooks: self.hooks.clone(),
            profile: self.profile.clone(),
            max_cost_usd: self.max_cost_usd,
            fallback_model: self.fallback_model.clone(),
            traceparent: self.traceparent.clone(),
            agents: Some(self.agents.clone()).filter(|a| self.task_tool && !a.is_empty()),
            ..InitConfig::default()
        }
    }
}
