//! `pirn run [flags] PROMPT`: one send for scripts: init from flags, one
//! send, wait, shut down, printing the events as JSONL or the streamed text.
//!
//! Owns: the flags and the `InitConfig`/`SendOptions` they make, and SIGINT
//! handling (cancel, print the cancelled result, exit 130). The exit codes
//! are [`pirn::transport::exit`]'s.

use clap::ValueEnum;
use pirn::config::{DEFAULT_SYSTEM_PROMPT, Limits};
use pirn::environment::Environment;
use pirn::logging::LogGuard;
use pirn::session::{Ending, SendRejected, Session};
use pirn::transport::exit::{EXIT_OTHER, EXIT_USAGE, exit_code};
use pirn::transport::signal::shutdown_signal;
use pirn::transport::stdio::with_store;
use pirn::transport::tap::JournalSlot;
use pirn::transport::writer::{self, Format};
use pirn::wire::{InitConfig, PROTOCOL_VERSION, SendOptions, WorktreeCleanup, WorktreeSpec};

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Model identifier sent to the endpoint [env: PIRN_MODEL; default: local].
    #[arg(long)]
    model: Option<String>,
    /// Comma-separated tools to enable.
    #[arg(long, value_delimiter = ',', default_value = "read_file,write_file,edit_file,glob,grep,bash")]
    tools: Vec<String>,
    /// Model calls allowed for the send.
    #[arg(long, default_value_t = 20)]
    max_iterations: u32,
    /// Output: the protocol's JSONL events, or the streamed text.
    #[arg(long, value_enum, default_value_t = OutputFormat::Jsonl)]
    format: OutputFormat,
    /// A model on the same server that takes the send's requests once
    /// --model refuses one another model could take (overloaded, failing,
    /// not there) (config `fallback_model`).
    #[arg(long, value_name = "MODEL")]
    fallback_model: Option<String>,
    /// System prompt (default: a short coding-agent prompt).
    #[arg(long)]
    system_prompt: Option<String>,
    /// Workspace directory (default: the current directory).
    #[arg(long)]
    cwd: Option<String>,
    /// Sampling temperature.
    #[arg(long)]
    temperature: Option<f32>,
    /// Write every model exchange to this cassette [env: PIRN_RECORD].
    #[arg(long, conflicts_with = "replay")]
    record: Option<std::path::PathBuf>,
    /// Serve model calls from this cassette, nothing from the network
    /// [env: PIRN_REPLAY; pacing: PIRN_REPLAY_TIMING=instant|recorded].
    #[arg(long)]
    replay: Option<std::path::PathBuf>,
    /// Continue this stored session (`pirn sessions list`) instead of
    /// starting one.
    #[arg(long)]
    resume: Option<String>,
    /// Continue the most recent stored session of this workspace (a new
    /// one when it has none).
    #[arg(long = "continue", short = 'c', conflicts_with = "resume")]
    continue_last: bool,
    /// With --resume or --continue: run in a new session holding a copy of
    /// the stored one's conversation (its own id); the stored session is
    /// left as it is.
    #[arg(long)]
    fork_session: bool,
    /// With --resume or --continue: keep the stored conversation up to and
    /// including its N-th message (from 1, the system prompt not counted);
    /// without --fork-session the stored session itself is cut there.
    #[arg(long, value_name = "N")]
    resume_at: Option<u64>,
    /// Run in a new git worktree of the workspace's repository, on branch
    /// pirn/NAME from HEAD, under $PIRN_HOME/worktrees/ (NAME: pirn-<8 hex>
    /// when not given); the result's `worktree` says where and what changed.
    #[arg(long, value_name = "NAME", num_args = 0..=1, default_missing_value = "")]
    worktree: Option<String>,
    /// At the end, remove the worktree (and its branch) when nothing in it
    /// changed; default: keep it.
    #[arg(long, requires = "worktree")]
    remove_unchanged_worktree: bool,
    /// The sandbox of bash and stdio MCP servers: workspace-write, read-only
    /// or off [env: PIRN_SANDBOX; default: workspace-write].
    #[arg(long, value_parser = super::serve::parse_sandbox)]
    sandbox: Option<pirn::sandbox::SandboxMode>,
    /// Children may not use TCP (connect, bind).
    #[arg(long)]
    no_network: bool,
    /// The help given to the model beyond exact tools, by name from the
    /// model-settings table: `exact` (writes and edits land byte for byte,
    /// no side calls) or `small` (tolerant edits, the large write held back,
    /// parse checks, the request read by the model; for small local models),
    /// or one of PIRN_MODEL_SETTINGS's (config `profile`) [default:
    /// PIRN_PROFILE, else the table's rule for the model (`small` for
    /// Qwen2.5-Coder-1.5B), else exact]. `--help` ends with the one in
    /// force for the model given (or PIRN_MODEL's); `--format text` names it
    /// on stderr.
    #[arg(long, value_name = "NAME")]
    profile: Option<String>,
    /// Offer the plan tool, todo_write (its plan is shown on stderr with
    /// `--format text` and sent as `plan` events with `--format jsonl`)
    /// (config `plan_tool`) [default: on, unless the profile leaves it
    /// out: `small` does].
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL")]
    plan_tool: Option<bool>,
    /// Ask the model whether an answer that changed no file was asked for
    /// a change; if so, send it back once to act, then fail the send if
    /// still nothing changed (one short extra call, shared with
    /// --write-check; config `request_check`) [default: PIRN_REQUEST_CHECK,
    /// else the profile's: on in `small`, off in `exact`].
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL")]
    request_check: Option<bool>,
    /// Hold back every write of a send whose request the model reads as
    /// asking only for information, unless a --verify check runs (it
    /// decides what the send must do) (one short extra call, shared with
    /// --request-check; config `write_check`) [default: PIRN_WRITE_CHECK,
    /// else the profile's: on in `small`, off in `exact`].
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL")]
    write_check: Option<bool>,
    /// Ask the model whether an answer that changed no file says it
    /// changed files; send it back once to make the change, then fail the
    /// send if it says so again (one short extra call per such answer;
    /// config `claim_check`).
    #[arg(long)]
    claim_check: bool,
    /// Let the model make calls in its answer's text: its path on a line
    /// then a fenced block writes that file (aider's "whole" format), a
    /// fenced JSON call is that call; with FILE, the answer's only block
    /// with no path line writes FILE. The system prompt says how. An answer
    /// that puts a path above code it only shows writes that file (config
    /// `file_blocks`, `file_block_target`).
    #[arg(long, num_args = 0..=1, require_equals = true, value_name = "FILE")]
    file_blocks: Option<Option<String>>,
    /// How the model changes files: `tool-calls` (default) or `whole`
    /// (aider's whole-file format for small models: no tool is offered,
    /// the FILE of --file-blocks=FILE is shown to the model, and its answer's
    /// fenced block replaces that file; the default system prompt becomes
    /// the format's own; config `edit_format`).
    #[arg(long, value_enum, default_value_t = EditFormatArg::ToolCalls)]
    edit_format: EditFormatArg,
    /// A variable of pirn's environment that bash also gets (repeatable or
    /// comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "NAME")]
    env_passthrough: Vec<String>,
    /// A command that shows the task is done (e.g. `python3 -m unittest`):
    /// run when the model says it is, and given back to it while it fails.
    #[arg(long, value_name = "CMD")]
    verify: Option<String>,
    /// The final answer must be one JSON value valid against this JSON
    /// Schema (a file, or the schema itself): `--format text` then prints
    /// only that document; exit 0 only when it validated.
    #[arg(long, value_name = "FILE_OR_JSON", value_parser = parse_schema)]
    output_schema: Option<serde_json::Value>,
    /// Answers that miss the schema given back to the model (default 2).
    #[arg(long)]
    output_retries: Option<u32>,
    /// Token budget of the send (prompt plus completion, all model calls);
    /// exit 3 when spent.
    #[arg(long)]
    max_total_tokens: Option<u64>,
    /// Tool calls the send may run; exit 3 when spent.
    #[arg(long)]
    max_tool_calls: Option<u32>,
    /// Hooks in Claude Code's settings format: a settings file, or its JSON
    /// itself (`{"hooks": {"PreToolUse": [...]}}`). Only its `hooks` key is
    /// read.
    #[arg(long, value_name = "FILE_OR_JSON", value_parser = pirn::hooks::settings::hooks_from_settings)]
    settings: Option<pirn::wire::HooksConfig>,
    /// Cost budget of the send in US dollars (the provider's figures, else
    /// --prices); exit 3 when spent.
    #[arg(long, value_name = "DOLLARS")]
    max_budget_usd: Option<f64>,
    /// Price table for providers that send no cost: dollars per million
    /// tokens, `prompt=3,cached=0.3,completion=15` [env: PIRN_PRICES].
    #[arg(long, value_name = "TABLE", value_parser = pirn::wire::Prices::parse)]
    prices: Option<pirn::wire::Prices>,
    /// The user message.
    prompt: String,
}

/// The line `pirn run --help` ends with: the profile a run with the
/// command line `args` (the words after `run`) would have, from its
/// `--model` (else `PIRN_MODEL`, else `local`) and `--profile` (else
/// `PIRN_PROFILE`, else the model-settings table's rule for the model, else
/// `exact`), and where it comes from.
pub fn profile_help(args: &[String]) -> String {
    let flag = |name: &str| {
        let eq = format!("{name}=");
        args.iter().enumerate().find_map(|(i, a)| match a.strip_prefix(&eq) {
            Some(v) => Some(v.to_owned()),
            None if a == name => args.get(i + 1).cloned(),
            None => None,
        })
    };
    let env = Environment::from_process();
    let model = pirn::environment::model_or_default(flag("--model"));
    let asked = flag("--profile").filter(|p| !p.trim().is_empty());
    let from = if asked.is_some() {
        "--profile"
    } else if env.profile.as_deref().is_some_and(|p| !p.trim().is_empty()) {
        "PIRN_PROFILE"
    } else {
        "the model-settings table's rule for the model; exact when none matches"
    };
    match pirn::config::profile::choose(asked.as_deref(), &env, &model) {
        Ok(p) => format!("Profile in force for model `{model}`: {} (from {from}).", p.name),
        Err(e) => format!("Profile in force for model `{model}`: none, the run would be refused: {e}"),
    }
}

/// `--output-schema`: the schema's JSON itself, or a file holding it.
fn parse_schema(arg: &str) -> Result<serde_json::Value, String> {
    let text = if arg.trim_start().starts_with(['{', '[']) || arg == "true" || arg == "false" {
        arg.to_owned()
    } else {
        std::fs::read_to_string(arg).map_err(|e| format!("cannot read {arg}: {e}"))?
    };
    serde_json::from_str(&text).map_err(|e| format!("{arg}: not JSON: {e}"))
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum EditFormatArg {
    ToolCalls,
    Whole,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum OutputFormat {
    Jsonl,
    Text,
}

/// `pirn run`: builds the session's config and the send's options from the
/// flags, runs the send, and exits with its code.
pub fn main(args: RunArgs, log: Option<LogGuard>) -> ! {
    let config = InitConfig {
        model: pirn::environment::model_or_default(args.model),
        system_prompt: args.system_prompt.unwrap_or_else(|| match args.edit_format {
            EditFormatArg::ToolCalls => DEFAULT_SYSTEM_PROMPT.to_owned(),
            EditFormatArg::Whole => pirn::tools::whole_file::SYSTEM_PROMPT.to_owned(),
        }),
        tools: args.tools.into_iter().map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()).collect(),
        max_iterations: Some(args.max_iterations),
        cwd: args.cwd,
        temperature: args.temperature,
        resume_session_id: args.resume,
        fork_session: args.fork_session.then_some(true),
        resume_at_message: args.resume_at,
        worktree: args.worktree.map(|n| match n.as_str() {
            "" => WorktreeSpec::Switch(true),
            _ => WorktreeSpec::Name(n),
        }),
        worktree_cleanup: args.remove_unchanged_worktree.then_some(WorktreeCleanup::RemoveIfUnchanged),
        sandbox: args.sandbox,
        verify_command: args.verify,
        sandbox_network: args.no_network.then_some(false),
        profile: args.profile,
        plan_tool: args.plan_tool,
        request_check: args.request_check,
        write_check: args.write_check,
        claim_check: args.claim_check.then_some(true),
        file_blocks: args.file_blocks.is_some().then_some(true),
        file_block_target: args.file_blocks.clone().flatten(),
        edit_format: (args.edit_format == EditFormatArg::Whole).then_some(pirn::wire::EditFormat::Whole),
        env_passthrough: (!args.env_passthrough.is_empty()).then_some(args.env_passthrough),
        max_cost_usd: args.max_budget_usd,
        hooks: args.settings,
        traceparent: pirn::environment::traceparent(),
        prices: args.prices,
        fallback_model: args.fallback_model,
        ..InitConfig::default()
    };
    let format = match args.format {
        OutputFormat::Jsonl => Format::Jsonl,
        OutputFormat::Text if args.output_schema.is_some() => Format::Document,
        OutputFormat::Text => Format::Text,
    };
    let options = pirn::wire::SendOptions {
        output_schema: args.output_schema,
        output_retries: args.output_retries,
        max_total_tokens: args.max_total_tokens,
        max_tool_calls: args.max_tool_calls,
        max_cost_usd: None,
        verify_command: None,
        traceparent: None,
    };
    let cassette = CassetteFlags { record: args.record, replay: args.replay, continue_last: args.continue_last };
    super::exit::block_on_and_exit(run(config, args.prompt, options, format, cassette), log)
}

/// Runs `prompt` once with `config`; returns the exit code. `cassette`
/// overrides `PIRN_RECORD`/`PIRN_REPLAY` (`--record`, `--replay`).
#[allow(clippy::print_stderr)]
async fn run(config: InitConfig, prompt: String, options: SendOptions, format: Format, cassette: CassetteFlags) -> i32 {
    let journal = JournalSlot::default();
    let w = writer::spawn(std::io::stdout(), format, journal.clone());
    let mut env = with_store(Environment::from_process()).await;
    if cassette.record.is_some() || cassette.replay.is_some() {
        env.record = cassette.record;
        env.replay = cassette.replay;
    }
    let mut config = config;
    if cassette.continue_last
        && config.resume_session_id.is_none()
        && let Some(store) = &env.store
    {
        let dir = config.cwd.clone().map_or_else(std::env::current_dir, |d| Ok(std::path::PathBuf::from(d)));
        if let Ok(dir) = dir.and_then(|d| d.canonicalize()) {
            config.resume_session_id = pirn::transport::latest::latest_in(store, &dir).await;
        }
        // Nothing to continue: a new session, which has nothing to fork.
        if config.resume_session_id.is_none() {
            config.fork_session = None;
        }
    }
    // pirn's own command speaks the newest protocol: its JSONL carries
    // `stop_reason`, `is_error` and the other 0.3.0 fields.
    let opened = Session::open(Some(PROTOCOL_VERSION), &config, &env, Limits::default(), w.outbox.clone()).await;
    let session = match opened {
        Ok(s) => s,
        Err(e) => {
            eprintln!("pirn run: {e}");
            return EXIT_USAGE;
        }
    };
    if format != Format::Jsonl {
        eprintln!("pirn: profile {}", session.config().profile.name);
    }
    if let Some(j) = session.journal() {
        let _ = journal.set(j.clone());
        if format != Format::Jsonl {
            eprintln!("pirn: session {}", j.session_id());
        }
    }
    match session.send_with("1".to_owned(), prompt, &options) {
        Ok(()) => {}
        Err(SendRejected::InvalidRequest(e)) => {
            eprintln!("pirn run: {e}");
            return EXIT_USAGE;
        }
        Err(_) => return EXIT_OTHER,
    }
    let mut signals = shutdown_signal();
    let stdout_closed = w.stdout_closed.clone();
    let interrupt = async {
        tokio::select! {
            _ = signals.recv() => {}
            _ = stdout_closed.cancelled() => {}
        }
    };
    let report = session.end(Ending::Finish, interrupt, w.finish()).await;
    match &report.last_result {
        Some(r) => {
            if format != Format::Jsonl
                && let Some(e) = &r.error
            {
                eprintln!("pirn: {:?}: {}", e.code, e.message);
            }
            exit_code(r)
        }
        None => EXIT_OTHER,
    }
}

/// `pirn run --record FILE` / `--replay FILE`, and `--continue`.
#[derive(Debug, Default)]
pub struct CassetteFlags {
    pub record: Option<std::path::PathBuf>,
    pub replay: Option<std::path::PathBuf>,
    /// `--continue`: resume the most recent session of the workspace (a
    /// new one when it has none).
    pub continue_last: bool,
}
