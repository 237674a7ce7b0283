//! Why a session cannot open: [`ConfigError`], whose text is the
//! `protocol_error` message a client reads.

use crate::approval::RuleError;
use std::path::PathBuf;

/// Why `init.config` (or the environment it is read with) is unusable. The
/// text is the `protocol_error` message.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config.model must not be empty")]
    EmptyModel,
    #[error("config.max_iterations must be at least 1")]
    ZeroIterations,
    #[error("cannot read the working directory: {0}")]
    WorkingDirectory(std::io::Error),
    #[error("workspace {} is not a directory", .0.display())]
    NotADirectory(PathBuf),
    #[error("PIRN_APPROVAL_MODE={0:?} is not one of full-auto, auto-edit, suggest, plan")]
    ApprovalMode(String),
    #[error(transparent)]
    Rule(#[from] RuleError),
    #[error("allowed path {path:?}: {source}")]
    AllowedPath { path: String, source: std::io::Error },
    /// An extension a 0.2.0 client cannot use (it would never see the ids to answer with).
    #[error("config.{0} needs protocol_version 0.3.0 (this session speaks 0.2.0)")]
    NeedsV0_3(&'static str),
    #[error(transparent)]
    Cassette(#[from] crate::cassette::CassetteError),
    #[error("config.max_tool_calls_per_turn must be at least 1")]
    ZeroToolCalls,
    #[error(transparent)]
    Mcp(#[from] crate::mcp::client::McpError),
    #[error("PIRN_SANDBOX={0:?} is not one of workspace-write, read-only, off")]
    SandboxMode(String),
    #[error("sandbox writable root {path:?}: {source}")]
    WritableRoot { path: String, source: std::io::Error },
    #[error("config.hooks: {0}")]
    Hooks(String),
    #[error("price table (config.prices or PIRN_PRICES): {0}")]
    Prices(String),
    #[error("config.max_cost_usd must be a number of dollars above 0")]
    CostBudget,
    #[error("{var}={value:?} is not one of true, false, 1, 0, on, off")]
    Switch { var: &'static str, value: String },
    #[error("config.file_block_target is set but config.file_blocks is not true (the target is only read with it)")]
    TargetWithoutFileBlocks,
    #[error("config.worktree: {0}")]
    Worktree(String),
    #[error("config.agents: {0}")]
    Agents(String),
    #[error("config.instruction_files is true but config.instruction_sources is set (it decides which files are read)")]
    InstructionConflict,
    #[error("config.{0} needs config.resume_session_id (the stored session to fork or cut)")]
    NeedsResume(&'static str),
    #[error(
        "config.edit_format is \"whole\" but write_file is not among the enabled tools (the model could change nothing)"
    )]
    WholeWithoutWrite,
    #[error("model settings {}: {message}", path.display())]
    ModelSettings { path: PathBuf, message: String },
    #[error("profile {name:?} is not in the model-settings table (it has: {})", known.join(", "))]
    UnknownProfile { name: String, known: Vec<String> },
}
