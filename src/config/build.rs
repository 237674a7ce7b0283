//! [`SessionConfig::new`]: `init.config`, the [`Environment`] snapshot and
//! the transport's [`Limits`] validated into a session's configuration,
//! once, when the session opens; and the instruction files it reads.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::defaults::{reading_check, sandbox_of};
use super::error::ConfigError;
use super::profile;
use super::session::*;
use crate::approval::{ApprovalMode, Policy};
use crate::environment::Environment;
use crate::model::Endpoint;
use crate::tools;
use crate::wire::{Correlation, EditFormat, InitConfig, ProtocolVersion};

/// Appended to the system prompt in plan mode.
const PLAN_INSTRUCTIONS: &str = "\n\nYou are in plan mode: you may read the repository with the read-only tools, \
but you must not change files or run commands. Finish with a numbered, step-by-step plan for the task.";

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
            super::subagent::check_agents(agents)?;
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
            base.push_str(&crate::tools::whole_file::instructions(file_block_target.as_deref()));
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
}

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
