//! A session's configuration: what `init.config`, the environment and the
//! transport say, validated once when the session opens.
//!
//! Owns: [`Limits`], what the transport imposes (queue length, queue
//! timeout); and [`SessionConfig`], built from `init.config`, the
//! [`Environment`] snapshot and the limits by [`SessionConfig::new`] and
//! never patched afterwards.
//!
//! Nothing here does I/O but canonicalising the workspace paths (and
//! opening a cassette, through [`Endpoint::for_session`]). What a config
//! may leave to the operator's environment or the protocol version is in
//! `defaults`; why a config is refused, [`ConfigError`].

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::Value;

mod defaults;
mod error;
pub mod profile;
mod subagent;

pub use error::ConfigError;
pub use profile::Profile;

use defaults::{reading_check, sandbox_of};

use crate::approval::{ApprovalMode, Policy};
use crate::environment::Environment;
use crate::model::Endpoint;
use crate::tools;
use crate::wire::{Correlation, EditFormat, InitConfig, ProtocolVersion};

/// Default `verify_rounds`: failed verifications given back to the model
/// before the send ends (`agent::verify`).
pub const DEFAULT_VERIFY_ROUNDS: u32 = 2;
/// Default `output_retries`: answers that miss the send's `output_schema`
/// sent back to the model (`agent::structured`).
pub const DEFAULT_OUTPUT_RETRIES: u32 = 2;
/// Default `max_iterations`.
pub const DEFAULT_MAX_ITERATIONS: u32 = 20;
/// Default `max_tool_calls_per_turn`: tool calls of one model answer that run.
pub const DEFAULT_MAX_TOOL_CALLS_PER_TURN: usize = 16;
/// Default `max_tokens` of every model request (a runaway answer stops there).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;
/// Default wait for a permission answer, in ms.
pub const DEFAULT_PERMISSION_TIMEOUT_MS: u64 = 300_000;

/// Appended to the system prompt in plan mode.
const PLAN_INSTRUCTIONS: &str = "\n\nYou are in plan mode: you may read the repository with the read-only tools, \
but you must not change files or run commands. Finish with a numbered, step-by-step plan for the task.";

/// What the transport imposes on a session's queue.
#[derive(Debug, Clone, Copy, Default)]
pub struct Limits {
    /// Most sends that may wait behind the running one (`None`: no limit).
    pub max_queue: Option<usize>,
    /// Longest a send may wait before it ends with `queue_timeout`.
    pub queue_timeout: Option<Duration>,
}

/// The system prompt `pirn run` and the MCP endpoint's `pirn_run` use when
/// none is given (`src/default_system_prompt.txt`).
pub const DEFAULT_SYSTEM_PROMPT: &str = include_str!("../default_system_prompt.txt");

/// Everything a session needs, validated. Built once; read-only after.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    pub session_id: String,
    /// The protocol version negotiated at `init`; shapes everything written.
    pub version: ProtocolVersion,
    pub model: String,
    pub system_prompt: String,
    /// The project instruction files appended to `system_prompt`, in
    /// order (see [`crate::context::instructions`]).
    pub instruction_files: Vec<PathBuf>,
    /// Enabled tool names (known built-in ones only).
    pub tools: Vec<String>,
    /// The plan tool (`tools::todo`) is offered: `init.config.plan_tool`,
    /// else on in 0.3.0 when the session has tools and its profile does
    /// not leave it out.
    pub plan_tool: bool,
    /// The session's background shells (`tools::shells`): `Some` when
    /// offered (`init.config.background_shells`, else on in 0.3.0 when
    /// the session has bash and its profile does not leave them out).
    pub shells: Option<Arc<crate::tools::shells::Shells>>,
    /// `tools` entries naming MCP tools (`mcp__…`, exact or glob).
    pub mcp_patterns: Vec<String>,
    /// The session's MCP servers and their advertised tools, once started
    /// (`crate::session::Session::open`).
    pub mcp: Option<Arc<crate::mcp::client::McpTools>>,
    /// Chat-completions `tools` entries, built by the first send that needs
    /// them ([`SessionConfig::tool_specs`]).
    tool_specs: OnceLock<Vec<Value>>,
    tool_spec_bytes: OnceLock<usize>,
    pub max_iterations: u32,
    /// Most tool calls of one model answer that run (the rest are answered "not run").
    pub max_tool_calls_per_turn: usize,
    pub correlation: Correlation,
    /// Canonical workspace directory.
    pub workspace: PathBuf,
    /// Canonical extra roots file tools may reach.
    pub allowed_paths: Vec<PathBuf>,
    pub endpoint: Endpoint,
    pub heartbeat: Duration,
    pub temperature: Option<f32>,
    /// `max_tokens` sent with every model request (never more than the room
    /// left in the context window once that is known).
    pub max_tokens: u32,
    /// The context window as configured (`config.context_window`, else
    /// `PIRN_CONTEXT_WINDOW`); `None`: asked from the server ([`Self::probed_window`]).
    pub context_window: Option<u32>,
    /// What the server said about its window, once the probe is done.
    pub probed_window: Arc<tokio::sync::OnceCell<Option<u32>>>,
    /// Model used to summarise the conversation (default: `model`).
    pub compact_model: Option<String>,
    /// `config.fallback_model` (see [`crate::agent::fallback`]); `None`
    /// when unset, empty or the same as `model`.
    pub fallback_model: Option<String>,
    /// Show the model the workspace's files at the first send
    /// (`config.workspace_listing`, see [`crate::context::workspace`]).
    pub workspace_listing: bool,
    /// The help given to the model beyond exact tools (`config.profile`,
    /// `PIRN_PROFILE`, the model-settings table; see [`profile`]).
    pub profile: Profile,
    /// The fact gates of a final answer: a write held back and not
    /// confirmed, a file the send broke (`config.answer_checks`, see
    /// `agent::gates`).
    pub answer_checks: bool,
    /// Keep file checkpoints of each send in the session's log (see
    /// `crate::checkpoint`; `init.config.checkpoints`, default on in 0.3.0).
    pub checkpoints: bool,
    /// The git worktree the session runs in, and what happens to it at
    /// the end (set by `Session::open` when `init.config.worktree` asks).
    pub worktree: Option<(crate::worktree::Worktree, crate::wire::WorktreeCleanup)>,
    /// Ask the model whether an answer that changed no file was asked for
    /// a change (`config.request_check`, see `agent::gates::asked`).
    pub request_check: bool,
    /// Hold back the first write of a send whose request the model reads
    /// as asking for no change (`config.write_check`, see
    /// `agent::gates::hold_write`).
    pub write_check: bool,
    /// Ask the model whether an answer that changed no file says it
    /// changed files (`config.claim_check`, see `agent::gates::claimed`).
    pub claim_check: bool,
    /// Whether an answer's file blocks are writes (`config.file_blocks`
    /// with `write_file` enabled; see `tools::file_blocks`).
    pub file_blocks: bool,
    /// The file a lone block without a path line writes
    /// (`config.file_block_target`, only with `file_blocks`).
    pub file_block_target: Option<String>,
    /// `config.edit_format`: with [`EditFormat::Whole`] no tool is offered
    /// to the model ([`SessionConfig::tool_specs`] is empty), file blocks
    /// are on, and the target file is shown before each send's request.
    pub edit_format: EditFormat,
    /// The client's file system, when the transport offers one (ACP's
    /// `fs/*`); `None` from an init config. See `tools::client_files`.
    pub client_files: Option<Arc<dyn crate::tools::client_files::ClientFiles>>,
    /// Approval mode and permission rules.
    pub policy: Policy,
    /// The client answers permission requests (pirn extension).
    pub permission_responses: bool,
    /// Longest wait for a permission answer.
    pub permission_timeout: Duration,
    /// The transport's queue limits.
    pub limits: Limits,
    /// The sandbox of `bash` and stdio MCP servers.
    pub sandbox: Arc<crate::sandbox::Sandbox>,
    /// Extra environment names children get (`config.env_passthrough`,
    /// then `PIRN_ENV_PASSTHROUGH`'s).
    pub env_passthrough: Arc<[String]>,
    /// `config.verify_command` (see `agent::verify`).
    pub verify_command: Option<String>,
    /// `config.verify_rounds`, default [`DEFAULT_VERIFY_ROUNDS`].
    pub verify_rounds: u32,
    /// `config.max_total_tokens`: each send's default token budget.
    pub max_total_tokens: Option<u64>,
    /// `config.max_tool_calls`: each send's default tool-call budget.
    pub max_tool_calls: Option<u32>,
    /// `config.max_cost_usd`: each send's default cost budget in dollars.
    pub max_cost_usd: Option<f64>,
    /// `config.traceparent`: the parent of each send's span (see
    /// [`crate::telemetry`]).
    pub traceparent: Option<String>,
    /// `config.hooks`, compiled (see [`crate::hooks`]); `None` without any.
    pub hooks: Option<Arc<crate::hooks::Hooks>>,
    /// `config.prices`, else `PIRN_PRICES` (see [`crate::model::cost`]).
    pub prices: Option<crate::wire::Prices>,
    /// `config.output_retries`, default [`DEFAULT_OUTPUT_RETRIES`].
    pub output_retries: u32,
    /// `config.agents`: the subagents the `task` tool starts (empty: no
    /// `task` tool; always empty in a subagent's own config).
    pub agents: Arc<crate::wire::Agents>,
}

impl SessionConfig {
    /// Validates `config` against `env` for a session speaking `version`;
    /// `limits` come from the transport.
    ///
    /// Errors: an empty model, `max_iterations` or `max_tool_calls_per_turn`
    /// of 0, a workspace that is not a directory, a bad approval mode or
    /// permission rule, an allowed path that does not exist,
    /// `permission_responses` in a 0.2.0 session, a `PIRN_SANDBOX`,
    /// `PIRN_PRICES`, `PIRN_REQUEST_CHECK` or `PIRN_WRITE_CHECK` value that
    /// does not parse.
    pub fn new(
        config: &InitConfig,
        env: &Environment,
        limits: Limits,
        version: ProtocolVersion,
    ) -> Result<SessionConfig, ConfigError> {
        if config.model.trim().is_empty() {
            return Err(ConfigError::EmptyModel);
        }
        if config.max_iterations == Some(0) {
            return Err(ConfigError::ZeroIterations);
        }
        if config.max_tool_calls_per_turn == Some(0) {
            return Err(ConfigError::ZeroToolCalls);
        }
        if config.file_block_target.is_some()
            && config.file_blocks != Some(true)
            && config.edit_format != Some(EditFormat::Whole)
        {
            return Err(ConfigError::TargetWithoutFileBlocks);
        }
        if config.permission_responses == Some(true) && version < ProtocolVersion::V0_3 {
            return Err(ConfigError::NeedsV0_3("permission_responses"));
        }
        if config.resume_session_id.is_some() && version < ProtocolVersion::V0_3 {
            return Err(ConfigError::NeedsV0_3("resume_session_id"));
        }
        if config.resume_session_id.is_none() {
            if config.fork_session == Some(true) {
                return Err(ConfigError::NeedsResume("fork_session"));
            }
            if config.resume_at_message.is_some() {
                return Err(ConfigError::NeedsResume("resume_at_message"));
            }
        }
        if config.worktree.as_ref().is_some_and(|w| w.wanted().is_some()) && version < ProtocolVersion::V0_3 {
            return Err(ConfigError::NeedsV0_3("worktree"));
        }
        if let Some(agents) = config.agents.as_ref().filter(|a| !a.is_empty()) {
            if version < ProtocolVersion::V0_3 {
                return Err(ConfigError::NeedsV0_3("agents"));
            }
            subagent::check_agents(agents)?;
        }
        if config.mcp_servers.as_ref().is_some_and(|s| !s.is_empty()) && version < ProtocolVersion::V0_3 {
            return Err(ConfigError::NeedsV0_3("mcp_servers"));
        }
        let workspace = match &config.cwd {
            Some(dir) => PathBuf::from(dir),
            None => std::env::current_dir().map_err(ConfigError::WorkingDirectory)?,
        };
        let workspace =
            workspace.canonicalize().ok().filter(|p| p.is_dir()).ok_or(ConfigError::NotADirectory(workspace))?;
        let mode = match (config.approval_mode, &env.approval_mode) {
            (Some(m), _) => m,
            (None, Some(v)) => ApprovalMode::parse(v).ok_or_else(|| ConfigError::ApprovalMode(v.clone()))?,
            (None, None) => ApprovalMode::default(),
        };
        let policy = Policy::new(mode, &config.permissions.clone().unwrap_or_default())?;
        let mut allowed_paths = Vec::new();
        for p in config.allowed_paths.iter().flatten() {
            let real = PathBuf::from(p)
                .canonicalize()
                .map_err(|source| ConfigError::AllowedPath { path: p.clone(), source })?;
            allowed_paths.push(real);
        }
        let sandbox = sandbox_of(config, env, &workspace, &allowed_paths)?;
        let known = |t: &String| tools::ALL_TOOLS.contains(&t.as_str());
        let mcp = |t: &String| t.starts_with(crate::mcp::client::PREFIX);
        let tools: Vec<String> = config.tools.iter().filter(|t| known(t) && policy.visible(t)).cloned().collect();
        let mcp_patterns: Vec<String> = config.tools.iter().filter(|t| mcp(t)).cloned().collect();
        for unknown in config.tools.iter().filter(|t| !known(t) && !mcp(t)) {
            tracing::warn!(tool = %unknown, "init names a tool pirn does not have; ignored");
        }
        let prices = match (config.prices, &env.prices) {
            (Some(p), _) => {
                p.check().map_err(ConfigError::Prices)?;
                Some(p)
            }
            (None, Some(text)) => Some(crate::wire::Prices::parse(text).map_err(ConfigError::Prices)?),
            (None, None) => None,
        };
        let hooks = match &config.hooks {
            Some(h) => Some(Arc::new(crate::hooks::Hooks::new(h).map_err(ConfigError::Hooks)?)),
            None => None,
        };
        if config.max_cost_usd.is_some_and(|m| !m.is_finite() || m <= 0.0) {
            return Err(ConfigError::CostBudget);
        }
        let profile = profile::choose(config.profile.as_deref(), env, &config.model)?;
        let request_check = reading_check(
            config.request_check,
            env.request_check.as_deref(),
            "PIRN_REQUEST_CHECK",
            profile.request_check,
            version,
        )?;
        let write_check = reading_check(
            config.write_check,
            env.write_check.as_deref(),
            "PIRN_WRITE_CHECK",
            profile.write_check,
            version,
        )?;
        let claim_check = config.claim_check.unwrap_or(profile.claim_check && version >= ProtocolVersion::V0_3);
        let endpoint = Endpoint::for_session(env, config.idle_timeout_ms, &workspace)?;
        let session_id = uuid::Uuid::new_v4().to_string();
        let instructions = instructions_of(config, &workspace, &env.home, version)?;
        let edit_format = config.edit_format.unwrap_or_default();
        if config.plan_tool == Some(true) && version < ProtocolVersion::V0_3 {
            return Err(ConfigError::NeedsV0_3("plan_tool"));
        }
        let plan_tool = edit_format != EditFormat::Whole
            && config
                .plan_tool
                .unwrap_or(version >= ProtocolVersion::V0_3 && !profile.without_plan_tool && !tools.is_empty());
        if config.background_shells == Some(true) && version < ProtocolVersion::V0_3 {
            return Err(ConfigError::NeedsV0_3("background_shells"));
        }
        let background = edit_format != EditFormat::Whole
            && tools.iter().any(|t| t == "bash")
            && config
                .background_shells
                .unwrap_or(version >= ProtocolVersion::V0_3 && !profile.without_background_shells);
        let can_write = tools.iter().any(|t| t == "write_file");
        if edit_format == EditFormat::Whole && !can_write {
            return Err(ConfigError::WholeWithoutWrite);
        }
        let file_blocks = (config.file_blocks.unwrap_or(false) || edit_format == EditFormat::Whole) && can_write;
        let mut base = config.system_prompt.clone();
        if mode == ApprovalMode::Plan {
            base.push_str(PLAN_INSTRUCTIONS);
        }
        let file_block_target = config
            .file_block_target
            .clone()
            .filter(|t| file_blocks && !t.trim().is_empty())
            .map(|t| t.trim().to_owned());
        if edit_format == EditFormat::Whole {
            base.push_str(&crate::tools::whole::instructions(file_block_target.as_deref()));
        } else if file_blocks {
            base.push_str(&crate::tools::file_blocks::instructions(file_block_target.as_deref()));
        }
        Ok(SessionConfig {
            correlation: Correlation {
                session_id: Some(Arc::from(session_id.as_str())),
                task_id: config.task_id.as_deref().map(Arc::from),
                worker_id: config.worker_id.as_deref().map(Arc::from),
            },
            session_id,
            version,
            model: config.model.clone(),
            system_prompt: base + &instructions.text,
            instruction_files: instructions.files,
            tool_specs: OnceLock::new(),
            tool_spec_bytes: OnceLock::new(),
            tools,
            plan_tool,
            shells: background.then(Arc::default),
            mcp_patterns,
            mcp: None,
            max_iterations: config.max_iterations.unwrap_or(DEFAULT_MAX_ITERATIONS),
            max_tool_calls_per_turn: config
                .max_tool_calls_per_turn
                .map_or(DEFAULT_MAX_TOOL_CALLS_PER_TURN, |n| n as usize),
            workspace,
            allowed_paths,
            endpoint,
            heartbeat: env.heartbeat(),
            temperature: config.temperature,
            max_tokens: config.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS).max(1),
            context_window: config.context_window.filter(|n| *n > 0).or(env.context_window),
            probed_window: Arc::new(tokio::sync::OnceCell::new()),
            compact_model: config.compact_model.clone().filter(|m| !m.trim().is_empty()),
            fallback_model: config.fallback_model.clone().filter(|m| !m.trim().is_empty() && *m != config.model),
            workspace_listing: config.workspace_listing.unwrap_or(true),
            answer_checks: config.answer_checks.unwrap_or(true),
            checkpoints: config.checkpoints.unwrap_or(version >= ProtocolVersion::V0_3),
            worktree: None,
            request_check,
            write_check,
            claim_check,
            profile,
            file_blocks,
            file_block_target,
            edit_format,
            client_files: None,
            policy,
            permission_responses: config.permission_responses.unwrap_or(false),
            permission_timeout: Duration::from_millis(
                config.permission_timeout_ms.unwrap_or(DEFAULT_PERMISSION_TIMEOUT_MS),
            ),
            limits,
            sandbox: Arc::new(sandbox),
            env_passthrough: config.env_passthrough.iter().flatten().chain(&env.env_passthrough).cloned().collect(),
            verify_command: config.verify_command.clone().filter(|c| !c.trim().is_empty()),
            verify_rounds: config.verify_rounds.unwrap_or(DEFAULT_VERIFY_ROUNDS),
            max_total_tokens: config.max_total_tokens,
            max_tool_calls: config.max_tool_calls,
            max_cost_usd: config.max_cost_usd,
            hooks,
            traceparent: config.traceparent.clone(),
            prices,
            output_retries: config.output_retries.unwrap_or(DEFAULT_OUTPUT_RETRIES),
            agents: Arc::new(config.agents.clone().unwrap_or_default()),
        })
    }

    /// What the session's hooks need of it (see [`crate::hooks::HookScope`]).
    pub fn hook_scope(&self) -> crate::hooks::HookScope<'_> {
        crate::hooks::HookScope {
            hooks: self.hooks.as_deref(),
            session_id: &self.session_id,
            workspace: &self.workspace,
            mode: self.policy.mode,
            sandbox: &self.sandbox,
            env_passthrough: &self.env_passthrough,
        }
    }

    /// Chat-completions `tools` entries for the enabled tools, built on first
    /// use (nothing tool-related is built before a send needs it); none in
    /// the whole-file edit format, where the model answers in text.
    pub fn tool_specs(&self) -> &[Value] {
        self.tool_specs.get_or_init(|| {
            if self.edit_format == EditFormat::Whole {
                return Vec::new();
            }
            let mut specs = tools::specs_for(&self.tools, self.shells.is_some());
            specs.extend(self.plan_tool.then(tools::spec::plan_spec));
            specs.extend((!self.agents.is_empty()).then(|| tools::task::spec(&self.agents)));
            specs.extend(self.mcp.iter().flat_map(|m| m.specs()));
            specs
        })
    }

    /// Bytes the tool specs add to every request.
    pub fn tool_spec_bytes(&self) -> usize {
        *self.tool_spec_bytes.get_or_init(|| serde_json::to_string(self.tool_specs()).map_or(0, |s| s.len()))
    }

    /// The context window in tokens as far as known: configured, else learned
    /// from a context error (`learned`), else what the server's probe said.
    /// The probe runs once, at the first call that needs it (so a session
    /// builds no HTTP client before its first send); it bounds each of its
    /// requests by [`crate::context::probe::PROBE_TIMEOUT`], so it always
    /// finishes and is never repeated.
    pub async fn window(&self, learned: Option<u32>) -> Option<u32> {
        if let Some(w) = self.context_window {
            return Some(w);
        }
        self.probed_window.get_or_init(|| crate::context::probe::probe_window(&self.endpoint, &self.model)).await;
        self.window_known(learned)
    }

    /// The context window as far as known without asking the server:
    /// configured, else the smaller of the learned one and an earlier
    /// probe's answer.
    pub fn window_known(&self, learned: Option<u32>) -> Option<u32> {
        if let Some(w) = self.context_window {
            return Some(w);
        }
        let probed = self.probed_window.get().copied().flatten();
        match (learned, probed) {
            (Some(l), Some(p)) => Some(l.min(p)),
            (l, p) => l.or(p),
        }
    }
}

#[cfg(test)]
mod tests;

/// The instruction files `config` asks for (`instruction_sources`, else
/// `instruction_files`, else on for 0.3.0), read.
fn instructions_of(
    config: &InitConfig,
    workspace: &std::path::Path,
    home: &std::path::Path,
    version: ProtocolVersion,
) -> Result<crate::context::instructions::Instructions, ConfigError> {
    use crate::wire::InstructionSource;
    let (user, project) = match &config.instruction_sources {
        Some(_) if version < ProtocolVersion::V0_3 => return Err(ConfigError::NeedsV0_3("instruction_sources")),
        Some(_) if config.instruction_files == Some(true) => return Err(ConfigError::InstructionConflict),
        Some(list) => (list.contains(&InstructionSource::User), list.contains(&InstructionSource::Project)),
        None => {
            let on = config.instruction_files.unwrap_or(version >= ProtocolVersion::V0_3);
            (on, on)
        }
    };
    Ok(match (user, project) {
        (false, false) => crate::context::instructions::Instructions::default(),
        _ => crate::context::instructions::load(workspace, user.then_some(home), project),
    })
}
