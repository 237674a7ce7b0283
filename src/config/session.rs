//! [`SessionConfig`], a session's configuration once validated, and what the
//! session asks of it later (the hooks' scope, the tool specs, the context
//! window); [`Limits`], what the transport imposes; and the defaults of
//! `init.config`'s numbers. Built by `build` ([`SessionConfig::new`]).

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::Value;

use super::profile::Profile;
use crate::approval::Policy;
use crate::model::Endpoint;
use crate::tools;
use crate::wire::{Correlation, EditFormat, ProtocolVersion};

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
    pub shells: Option<Arc<crate::tools::shell_table::Shells>>,
    /// `tools` entries naming MCP tools (`mcp__…`, exact or glob).
    pub mcp_patterns: Vec<String>,
    /// The session's MCP servers and their advertised tools, once started
    /// (`crate::session::Session::open`).
    pub mcp: Option<Arc<crate::mcp::client::McpTools>>,
    /// Chat-completions `tools` entries, built by the first send that needs
    /// them ([`SessionConfig::tool_specs`]).
    pub(super) tool_specs: OnceLock<Vec<Value>>,
    pub(super) tool_spec_bytes: OnceLock<usize>,
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
    /// `agent::request_reading::hold_write`).
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
