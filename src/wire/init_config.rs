//! `init.config`: the session's settings a client sends once, in `init`
//! (stdin, `POST /sessions`, the ACP and Claude front-ends build one too),
//! and the two choices it names by enum ([`EditFormat`],
//! [`InstructionSource`]). The first three fields are protocol 0.2.0's; the
//! rest are pirn's extensions, each optional.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::attempts::{WorktreeCleanup, WorktreeSpec};
use super::policy::{ApprovalMode, HooksConfig, McpServerConfig, PermissionRules, Prices, SandboxMode};

/// `init.config`. The first three fields are required by protocol 0.2.0;
/// everything after `worker_id` is a pirn extension and optional.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, utoipa::ToSchema, PartialEq)]
pub struct InitConfig {
    /// Model identifier passed to the chat-completions endpoint.
    pub model: String,
    /// System prompt; the first message of the conversation.
    pub system_prompt: String,
    /// Tools to advertise and allow (`read_file`, `write_file`, `edit_file`,
    /// `glob`, `grep`, `bash`). Others are refused.
    pub tools: Vec<String>,
    /// Model calls allowed per send (default 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<u32>,
    /// The orchestrator's task id, echoed on every event and result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The orchestrator's worker id, echoed on every event and result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_id: Option<String>,
    /// Workspace directory (default: the worker's working directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Longest wait for one chunk of the model stream, in ms (default 180000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_ms: Option<u64>,
    /// Sampling temperature sent to the model (default: the server's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Upper bound on generated tokens per model call (default 4096).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// The model's context window in tokens (default: `PIRN_CONTEXT_WINDOW`,
    /// else asked from the server, else learned from a context error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u32>,
    /// Model that summarises the conversation when it must be compacted
    /// (default: `model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compact_model: Option<String>,
    /// A model on the same server that takes a send's requests once
    /// `model` refuses one that another model could take (overloaded or
    /// failing: 429, 5xx, 529; a model the server lacks: 404; no answer in
    /// time), for the rest of that send (Claude Code's `--fallback-model`).
    /// Each switch is a 0.3.0 `model_fallback` event. Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_model: Option<String>,
    /// Subagents the model may start with the `task` tool (0.3.0): each
    /// runs a child send with its own conversation, the tools and budgets
    /// its definition allows within the parent's, and answers the call
    /// with its final answer. Default: none (no `task` tool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<super::agents::Agents>,
    /// Most tool calls of one model answer that run (default 16); the rest
    /// are answered "not run" to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_calls_per_turn: Option<u32>,
    /// Put the workspace's path and files (at most 60; else its top level
    /// and file count) before the first send's request (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_listing: Option<bool>,
    /// 0.3.0: offer the plan tool, `todo_write`, whose every change is a
    /// `plan` event (default true in 0.3.0 unless the profile leaves it
    /// out; 0.2.0 refuses it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_tool: Option<bool>,
    /// 0.3.0: offer background shells: `bash` takes `run_in_background`
    /// and the model reads and stops such commands with `bash_output` and
    /// `kill_shell` (default true in 0.3.0 when `bash` is offered, unless
    /// the profile leaves them out; 0.2.0 refuses it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background_shells: Option<bool>,
    /// The profile: which help pirn gives the model beyond exact tools
    /// (tolerant edits, the large write held back, parse checks, the
    /// readings of the request), by name from the model-settings table
    /// (default: the operator's `PIRN_PROFILE`, else the table's rule for
    /// `model`, else `exact`: writes and edits land byte for byte, and no
    /// side call is made). `init_ok.profile` says which is in force.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Before an answer is accepted, check the facts of the send: a write
    /// the tools held back (profiles with `hold_large_writes`) and the model
    /// never confirmed sends the model back once, then fails the send; a
    /// file the send changed that parsed before and does not now (profiles
    /// with `parse_check`) sends the model back once (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_checks: Option<bool>,
    /// When the model answers without any file having changed in the send,
    /// ask the model (one short extra call, its answer held to a JSON
    /// schema, only the request shown) whether the request asks for files
    /// to change; when it says so, send the model back once to make the
    /// change, and end the send `verification_failed` if a later answer
    /// still changed nothing (with `verify_command`, the check decides
    /// instead) (default: the profile's switch in a 0.3.0 session: on in `small`, off in
    /// `exact`; off in 0.2.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_check: Option<bool>,
    /// Before the first `write_file` or `edit_file` of a send that has
    /// changed no file and whose `verify_command` does not run (one that
    /// runs decides what the send must do) runs, ask the model (the same short extra call as
    /// `request_check`, made at most once per send) whether the request
    /// asks for files to change; when it says not, that call and every
    /// later write of the send are not run, each with a failed result
    /// saying why (default: the profile's switch in a 0.3.0 session: on in `small`, off in
    /// `exact`; off in 0.2.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_check: Option<bool>,
    /// When the model answers without any file having changed in the send,
    /// ask the model (one short extra call, its answer held to a JSON
    /// schema, only the answer shown) whether its answer says files were
    /// changed; when it says so, send the model back once to make the
    /// change, and end the send `verification_failed` if a later answer
    /// says so again with still nothing changed (default: the profile's
    /// switch, off in the built-in profiles).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_check: Option<bool>,
    /// Let the model make a call in its answer's text: a fenced block that
    /// is one JSON call `{"name", "arguments"}` of an enabled tool is that
    /// call, and a line holding only a relative path followed by a fenced
    /// block is a `write_file` of exactly the block's lines (approval, hooks
    /// and checks as for any call); the system prompt says how. For models
    /// that write code better in a fence than in a tool call's JSON; a
    /// "show me" answer with a path line above its code writes that file,
    /// so it is off unless asked for (default false; no effect without
    /// `write_file`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_blocks: Option<bool>,
    /// With `file_blocks`: the file an answer's only fenced block writes
    /// when no path line names one (aider's one file in the chat), a path
    /// beneath the workspace. Unset: such a block writes nothing. Set
    /// without `file_blocks: true`, init fails (it would do nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_block_target: Option<String>,
    /// How the model makes its changes: `"tool_calls"` (default: the
    /// enabled tools are offered as functions) or `"whole"`, aider's
    /// whole-file format for small models that write code well in a fence
    /// and badly inside a tool call's JSON: no function is offered, file
    /// blocks are on (as `file_blocks: true`), and the file
    /// `file_block_target` names is shown to the model, whole, before each
    /// send's request. Needs `write_file` enabled (init fails otherwise);
    /// the model can then only answer and write files, and the session's
    /// `verify_command` still runs as `bash` would.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edit_format: Option<EditFormat>,
    /// Removed: pirn makes no tool calls of its own (it once read the files
    /// a request named and ran the command it named before the model's
    /// first answer). Accepted so older clients still start; has no effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preflight: Option<bool>,
    /// Directories outside the workspace that file tools may reach.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_paths: Option<Vec<String>>,
    /// What the model may do unasked (default `full-auto`, or
    /// `PIRN_APPROVAL_MODE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_mode: Option<ApprovalMode>,
    /// Rules refining the mode; deny beats ask beats allow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<PermissionRules>,
    /// The client answers `permission_request` events with
    /// `permission_response` requests (default false: requests are denied).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_responses: Option<bool>,
    /// How long a call waits for a permission answer, in ms (default 300000;
    /// then it is denied).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_timeout_ms: Option<u64>,
    /// Log the session durably so it can be resumed (default true; the
    /// environment's `PIRN_PERSIST=0` turns it off for every session).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persist: Option<bool>,
    /// Append the project instruction files (`AGENTS.md`, else
    /// `CLAUDE.md`, from the git root down to the workspace, after
    /// `$PIRN_HOME/AGENTS.md`) to the system prompt (default: true for
    /// 0.3.0 sessions, false for 0.2.0 ones). Prompt text only: they
    /// change no sandbox, approval or tool setting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instruction_files: Option<bool>,
    /// Which instruction files are read (0.3.0; Claude Code's
    /// `--setting-sources`): `user` (`$PIRN_HOME/AGENTS.md`) and/or
    /// `project` (the workspace's chain). Set, it decides alone (an empty
    /// list reads none) and `instruction_files` must not be `true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instruction_sources: Option<Vec<InstructionSource>>,
    /// Continue this stored session (0.3.0): its conversation is loaded and
    /// `init_ok.session_id` is this id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_session_id: Option<String>,
    /// With `resume_session_id` (0.3.0): open a new session, with its own
    /// id, holding a copy of the stored session's conversation (up to
    /// `resume_at_message` when set), instead of continuing that session;
    /// the stored session is not changed and both go on independently.
    /// Without `resume_session_id`, init fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_session: Option<bool>,
    /// With `resume_session_id` (0.3.0): keep the stored conversation up to
    /// and including its N-th message (from 1, the system prompt not
    /// counted: `status_ok.messages_count` less one), dropping the later ones;
    /// a kept tool call whose result was dropped gets a "no result" result.
    /// Without `fork_session` the session itself is cut there (a `history`
    /// entry in its log; the earlier entries stay). Default: all. A number
    /// above the messages held fails init, naming how many there are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_at_message: Option<u64>,
    /// Keep what each file was before a send changed it, in the session's
    /// log, so `rewind` can put it back (0.3.0; default true in a logged
    /// session; nothing is kept when the session is not logged). Caught:
    /// `write_file`, `edit_file`, file blocks, and what `bash` did to the
    /// files git would see; bounded per file and per send (see
    /// `result.checkpoint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoints: Option<bool>,
    /// Run the session in a git worktree of the workspace's repository
    /// (0.3.0): `true` (named `pirn-<8 hex>`) or a name (`[A-Za-z0-9._-]`,
    /// up to 64). pirn makes it under `$PIRN_HOME/worktrees/` on a new
    /// branch `pirn/<name>` from `HEAD`, and the session works in it (at
    /// the same place inside as `cwd` is in the repository); each `result`
    /// names it (`result.worktree`). `false` or absent: no worktree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<WorktreeSpec>,
    /// What happens to the worktree when the session ends: `keep` (default)
    /// or `remove_if_unchanged` (removed, with its branch, when nothing in
    /// it differs from where it started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree_cleanup: Option<WorktreeCleanup>,
    /// MCP servers whose tools the model may call (0.3.0), started at init.
    /// Their tools are named `mcp__<server>__<tool>` and are enabled by
    /// `tools` entries (exact names or globs such as `mcp__fs__*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_servers: Option<Vec<McpServerConfig>>,
    /// The OS sandbox of `bash` and stdio MCP servers (default
    /// `workspace-write`, or `PIRN_SANDBOX`). Accepted from 0.2.0 clients
    /// too: it changes nothing on the wire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxMode>,
    /// False: children may not open or accept TCP connections (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_network: Option<bool>,
    /// More directories children may write beneath in `workspace-write`
    /// mode (each must exist).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_writable_roots: Option<Vec<String>>,
    /// Names of pirn's environment variables that children also get,
    /// beyond PATH, HOME, USER, LOGNAME, SHELL, LANG, LC_*, TERM, TMPDIR
    /// and TZ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_passthrough: Option<Vec<String>>,
    /// A shell command that shows the task is done (e.g. `python3 -m
    /// unittest`), set by the operator: at each final answer pirn runs it
    /// (as `bash` would, when the approval policy allows that unasked) and
    /// gives the model its output while it fails. pirn never takes a
    /// command from the request or the repository. Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_command: Option<String>,
    /// Failed verifications given back to the model before the send ends
    /// with `verification_failed` (default 2; 0 turns verification off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_rounds: Option<u32>,
    /// The session's default token budget per send: prompt plus completion
    /// tokens over the send's model calls (the provider's usage, or pirn's
    /// estimate when a call reports none). The call that crosses it is the
    /// send's last; the send then ends with `budget_exceeded`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_total_tokens: Option<u64>,
    /// The session's default budget of tool executions per send; calls
    /// beyond it are not run (the model is told) and the send ends with
    /// `budget_exceeded`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_calls: Option<u32>,
    /// The session's default cost budget per send, in US dollars, over the
    /// send's model calls (see `result.usage.cost_usd`). The call that
    /// reaches it is the send's last, and a call that would pass it at the
    /// cheapest price in `prices` is not made; the send then ends with
    /// `budget_exceeded`. A call whose cost is unknown (no provider figure,
    /// no `prices`) spends it: the budget cannot hold without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// Hooks in Claude Code's settings format (0.3.0): the value of its
    /// `hooks` key, `{"PreToolUse": [{"matcher": "Write|Edit", "hooks":
    /// [{"type": "command", "command": "…", "timeout": 60}]}], …}` (see
    /// `crate::hooks`). From the operator only: the stdio parent, `pirn run
    /// --settings`; over HTTP only commands `pirn serve
    /// --allow-hook-command` lists. Never read from the repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks: Option<HooksConfig>,
    /// A W3C `traceparent` (`00-<trace id>-<span id>-<flags>`) that parents
    /// the OpenTelemetry span of each send of the session (unless the send
    /// names its own); see `crate::telemetry`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// The operator's price table in US dollars per million prompt, cached
    /// and completion tokens, for providers that send no cost of their own
    /// (default: `PIRN_PRICES`, `prompt=3,cached=0.3,completion=15`). No
    /// built-in prices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prices: Option<Prices>,
    /// The session's default for how often an answer that does not match a
    /// send's `output_schema` is sent back to the model (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_retries: Option<u32>,
}

/// How the model makes its changes (`config.edit_format`).
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema, utoipa::ToSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum EditFormat {
    /// The enabled tools are offered as functions (default).
    #[default]
    ToolCalls,
    /// No function is offered: the model writes a file by answering with
    /// its path on a line and its complete new content in a fenced block
    /// (aider's "whole" format; see `tools::file_blocks`).
    Whole,
}

/// Where instruction files come from (`config.instruction_sources`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum InstructionSource {
    /// `$PIRN_HOME/AGENTS.md`: the operator's own.
    User,
    /// `AGENTS.md` (else `CLAUDE.md`) from the git root down to the workspace.
    Project,
}
