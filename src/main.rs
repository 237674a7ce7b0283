//! The `pirn` command line. No behaviour lives here: it picks a transport.
//!
//! - `pirn` — the JSONL worker on stdin/stdout (what an orchestrator spawns);
//! - `pirn run [flags] PROMPT` — one send for scripts;
//! - `pirn serve` — the HTTP facade;
//! - `pirn acp` — the worker over the Agent Client Protocol;
//! - `pirn -p …`, `pirn --output-format stream-json …`, `pirn run -p …` —
//!   Claude Code's headless surface (what the Claude Agent SDKs spawn);
//! - `pirn sessions list|show|export|rm` — stored sessions;
//! - `pirn transcript diff|normalize`, `pirn conform` — golden transcripts
//!   for the test suites of the programs that embed pirn;
//! - `pirn --help`, `pirn --version`.

use clap::{Parser, Subcommand, ValueEnum};
use pirn::logging;
use pirn::transport::{http, run, stdio, writer::Format};
use pirn::wire::InitConfig;
use serve_cli::ServeArgs;

mod serve_cli;

const VERSION: &str =
    concat!(env!("CARGO_PKG_VERSION"), " (protocol ", include_str!("../PROTOCOL_VERSION"), "; serves 0.2.0 and 0.3.0)");

/// `pirn run`'s system prompt (`scripts/eval` gives other workers the same text).
use pirn::config::DEFAULT_SYSTEM_PROMPT;

/// pirn: a headless coding-agent worker (heddle headless protocol).
///
/// Without a subcommand, pirn reads JSONL requests on stdin and writes JSONL
/// responses on stdout. Logs go to stderr only when PIRN_LOG or --log asks.
#[derive(Parser, Debug)]
#[command(name = "pirn", version = VERSION, about)]
struct Cli {
    /// Log filter for stderr (tracing EnvFilter syntax, e.g. `debug`) [env: PIRN_LOG].
    #[arg(long, global = true)]
    log: Option<String>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// One send: init, the prompt, shutdown. Exit codes: 0 ok, 1 provider
    /// error, 2 bad usage, 3 max iterations or loop detected, 4 other
    /// error, 130 cancelled (SIGINT/SIGTERM).
    Run(RunArgs),
    /// The HTTP facade: sessions over HTTP, SSE and WebSocket (see README).
    /// Prints `pirn serve listening on http://ADDR` once bound.
    Serve(ServeArgs),
    /// Run one tool directly in the current directory and print its result
    /// (debugging and benchmarks; no model involved). Exit 0 when the tool
    /// succeeded, 1 when it reported an error.
    Tool {
        /// Tool name (read_file, write_file, edit_file, glob, grep, bash).
        name: String,
        /// The tool's arguments as a JSON object.
        args: String,
    },
    /// Compare or normalise JSONL transcripts of a worker's output (session
    /// ids, latencies, heartbeats, workspace paths and local ports forgiven).
    #[command(subcommand)]
    Transcript(TranscriptCommand),
    /// Stored sessions (PIRN_HOME, default ~/.pirn; or PIRN_STORE). Exit 0
    /// done, 1 no such session, 2 the store cannot be used.
    #[command(subcommand)]
    Sessions(SessionsArgs),
    /// pirn's tools as an MCP server on stdio (for other agents): the
    /// enabled built-in tools, confined to --cwd. Runs until stdin closes.
    Mcp {
        /// Workspace the tools work in (default: the current directory).
        #[arg(long)]
        cwd: Option<std::path::PathBuf>,
        /// Tools to serve, comma-separated (default: all six).
        #[arg(long, value_delimiter = ',')]
        tools: Vec<String>,
        /// Directories outside the workspace the file tools may reach (repeatable).
        #[arg(long)]
        allowed_path: Vec<std::path::PathBuf>,
    },
    /// The worker over the Agent Client Protocol (ACP v1, JSON-RPC on
    /// stdin/stdout), for ACP clients such as Zed or JetBrains editors.
    /// Every ACP session is a pirn session (tools, approval, store).
    Acp(AcpArgs),
    /// Run golden cases (input.jsonl, cassette.jsonl, files/, expected.jsonl)
    /// against a worker command; one PASS/FAIL line per case. Exit 0 when
    /// all pass, 1 when one fails, 2 when the cases cannot be run.
    Conform(ConformArgs),
}

#[derive(clap::Args, Debug)]
struct AcpArgs {
    /// Model name sent to the server [env: PIRN_MODEL].
    #[arg(long)]
    model: Option<String>,
    /// What the agent may do without asking the client: full-auto,
    /// auto-edit, suggest (default: it asks before edits and commands) or
    /// plan.
    #[arg(long, value_parser = parse_approval_mode)]
    approval_mode: Option<pirn::wire::ApprovalMode>,
    /// Model calls per prompt (default 20).
    #[arg(long)]
    max_iterations: Option<u32>,
    /// The sandbox of bash and stdio MCP servers: workspace-write, read-only
    /// or off [env: PIRN_SANDBOX; default: workspace-write].
    #[arg(long, value_parser = serve_cli::parse_sandbox)]
    sandbox: Option<pirn::sandbox::SandboxMode>,
    /// Children may not use TCP (connect, bind).
    #[arg(long)]
    no_network: bool,
}

fn parse_approval_mode(s: &str) -> Result<pirn::wire::ApprovalMode, String> {
    serde_json::from_value(serde_json::Value::String(s.to_owned()))
        .map_err(|_| format!("{s:?}: one of full-auto, auto-edit, suggest, plan"))
}

#[derive(Subcommand, Debug)]
enum TranscriptCommand {
    /// Exit 0 when the two transcripts match after normalising, else print
    /// a unified diff and exit 1 (2: a file cannot be read).
    Diff {
        expected: std::path::PathBuf,
        actual: std::path::PathBuf,
        #[command(flatten)]
        norm: NormalizeArgs,
    },
    /// Print the normalised form of a transcript (what to commit as a golden).
    Normalize {
        file: std::path::PathBuf,
        #[command(flatten)]
        norm: NormalizeArgs,
    },
}

#[derive(Subcommand, Debug)]
enum SessionsArgs {
    /// One line per session (id, last activity, live, model, title).
    List {
        /// A JSON array instead.
        #[arg(long)]
        json: bool,
    },
    /// The conversation of a session.
    Show { id: String },
    /// The session's log, one JSON entry per line.
    Export { id: String },
    /// Delete the session's log.
    Rm { id: String },
}

#[derive(clap::Args, Debug, Default)]
struct NormalizeArgs {
    /// A workspace path to write as $WORKSPACE (repeatable).
    #[arg(long = "workspace")]
    workspaces: Vec<String>,
    /// Also ignore this field wherever it occurs (repeatable).
    #[arg(long = "ignore-field")]
    ignore_fields: Vec<String>,
    /// Also drop events of this name (repeatable), e.g. usage.
    #[arg(long = "ignore-event")]
    ignore_events: Vec<String>,
    /// Compare heartbeat events too (dropped by default).
    #[arg(long)]
    keep_heartbeats: bool,
}

impl NormalizeArgs {
    fn normalizer(self) -> pirn::transcript::Normalizer {
        pirn::transcript::Normalizer {
            workspaces: self.workspaces,
            ignore_fields: self.ignore_fields,
            ignore_events: self.ignore_events,
            keep_heartbeats: self.keep_heartbeats,
        }
    }
}

#[derive(clap::Args, Debug)]
struct ConformArgs {
    /// The worker command, run with `sh -c` in each case's workspace.
    #[arg(long)]
    worker: String,
    /// A case directory or a directory of cases.
    #[arg(default_value = "fixtures")]
    dir: std::path::PathBuf,
    /// Serve recorded answers at once instead of at their recorded pace.
    #[arg(long)]
    instant: bool,
    /// Model requests must equal the recorded ones (for pirn itself;
    /// another implementation sends other prompts).
    #[arg(long)]
    strict: bool,
    /// Extra environment for the worker, NAME=VALUE (repeatable).
    #[arg(long = "env", value_parser = parse_env)]
    env: Vec<(String, String)>,
    /// Longest a case may take, in seconds.
    #[arg(long, default_value_t = 60)]
    timeout_secs: u64,
    #[command(flatten)]
    norm: NormalizeArgs,
}

fn parse_env(s: &str) -> Result<(String, String), String> {
    s.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())).ok_or_else(|| format!("{s:?} is not NAME=VALUE"))
}

/// `pirn transcript diff|normalize`; returns the exit code.
fn transcript(cmd: TranscriptCommand) -> i32 {
    use std::io::Write;
    let read = |p: &std::path::Path| {
        std::fs::read_to_string(p).map_err(|e| {
            let _ = writeln!(std::io::stderr(), "pirn transcript: cannot read {}: {e}", p.display());
        })
    };
    let mut out = std::io::stdout().lock();
    match cmd {
        TranscriptCommand::Diff { expected, actual, norm } => {
            let (Ok(e), Ok(a)) = (read(&expected), read(&actual)) else { return 2 };
            let n = norm.normalizer();
            match pirn::transcript::diff(&n.normalize(&e), &n.normalize(&a)) {
                None => 0,
                Some(d) => {
                    let _ = out.write_all(d.as_bytes());
                    1
                }
            }
        }
        TranscriptCommand::Normalize { file, norm } => {
            let Ok(text) = read(&file) else { return 2 };
            for line in norm.normalizer().normalize(&text) {
                let _ = writeln!(out, "{line}");
            }
            0
        }
    }
}

#[derive(clap::Args, Debug)]
struct RunArgs {
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
    /// The sandbox of bash and stdio MCP servers: workspace-write, read-only
    /// or off [env: PIRN_SANDBOX; default: workspace-write].
    #[arg(long, value_parser = serve_cli::parse_sandbox)]
    sandbox: Option<pirn::sandbox::SandboxMode>,
    /// Children may not use TCP (connect, bind).
    #[arg(long)]
    no_network: bool,
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

/// `--output-schema`: the schema's JSON itself, or a file holding it.
fn parse_schema(arg: &str) -> Result<serde_json::Value, String> {
    let text = if arg.trim_start().starts_with(['{', '[']) || arg == "true" || arg == "false" {
        arg.to_owned()
    } else {
        std::fs::read_to_string(arg).map_err(|e| format!("cannot read {arg}: {e}"))?
    };
    serde_json::from_str(&text).map_err(|e| format!("{arg}: not JSON: {e}"))
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum OutputFormat {
    Jsonl,
    Text,
}

/// Runs `fut` on a single-threaded runtime, then exits with its code without
/// waiting for blocking threads (a stdin read may still be parked in one).
/// The log writer is flushed first (unless stderr would block).
fn block_on_and_exit(fut: impl std::future::Future<Output = i32>, log: Option<logging::LogGuard>) -> ! {
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!("cannot start the async runtime: {e}");
            std::process::exit(70);
        }
    };
    let code = rt.block_on(fut);
    rt.shutdown_background();
    // Queued spans get a short flush; an unreachable collector cannot hold the exit.
    pirn::telemetry::shutdown(std::time::Duration::from_secs(2));
    if let Some(log) = log {
        log.finish();
    }
    std::process::exit(code);
}

fn main() {
    // The worker path (no arguments) skips argument parsing entirely.
    if std::env::args_os().len() == 1 {
        let log = logging::init(None);
        block_on_and_exit(stdio::serve(), log);
    }
    // Claude Code's headless surface: `pirn -p …`, `pirn --output-format
    // stream-json …` (what the Agent SDKs spawn), `pirn run -p …`.
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let claude = if pirn::claude::is_claude_invocation(&argv, false) {
        Some(argv)
    } else if argv.first().map(String::as_str) == Some("run") && pirn::claude::is_claude_invocation(&argv[1..], true) {
        Some(argv[1..].to_vec())
    } else {
        None
    };
    if let Some(argv) = claude {
        let log = logging::init(None);
        block_on_and_exit(pirn::claude::main(argv), log);
    }
    let cli = Cli::parse();
    let log = logging::init(cli.log.as_deref());
    match cli.command {
        None => block_on_and_exit(stdio::serve(), log),
        Some(Command::Run(args)) => {
            let config = InitConfig {
                model: args.model.or_else(|| std::env::var("PIRN_MODEL").ok()).unwrap_or_else(|| "local".to_owned()),
                system_prompt: args.system_prompt.unwrap_or_else(|| DEFAULT_SYSTEM_PROMPT.to_owned()),
                tools: args.tools.into_iter().map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()).collect(),
                max_iterations: Some(args.max_iterations),
                cwd: args.cwd,
                temperature: args.temperature,
                resume_session_id: args.resume,
                sandbox: args.sandbox,
                verify_command: args.verify,
                sandbox_network: args.no_network.then_some(false),
                env_passthrough: (!args.env_passthrough.is_empty()).then_some(args.env_passthrough),
                max_cost_usd: args.max_budget_usd,
                hooks: args.settings,
                traceparent: std::env::var("TRACEPARENT").ok().filter(|t| !t.trim().is_empty()),
                prices: args.prices,
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
            let cassette =
                run::CassetteFlags { record: args.record, replay: args.replay, continue_last: args.continue_last };
            block_on_and_exit(run::run(config, args.prompt, options, format, cassette), log)
        }
        Some(Command::Tool { name, args }) => block_on_and_exit(run::tool(name, args), log),
        Some(Command::Sessions(cmd)) => {
            use pirn::transport::sessions_cmd::{SessionsCommand, run};
            let cmd = match cmd {
                SessionsArgs::List { json } => SessionsCommand::List { json },
                SessionsArgs::Show { id } => SessionsCommand::Show { id },
                SessionsArgs::Export { id } => SessionsCommand::Export { id },
                SessionsArgs::Rm { id } => SessionsCommand::Rm { id },
            };
            block_on_and_exit(run(cmd), log)
        }
        Some(Command::Transcript(cmd)) => {
            let code = transcript(cmd);
            if let Some(log) = log {
                log.finish();
            }
            std::process::exit(code)
        }
        Some(Command::Conform(args)) => {
            let opts = pirn::conform::Options {
                worker: args.worker,
                dir: args.dir,
                instant: args.instant,
                strict: args.strict,
                env: args.env,
                timeout: std::time::Duration::from_secs(args.timeout_secs),
                normalizer: args.norm.normalizer(),
            };
            block_on_and_exit(pirn::conform::run(opts), log)
        }
        Some(Command::Mcp { cwd, tools, allowed_path }) => {
            let workspace = cwd.unwrap_or_else(|| std::path::PathBuf::from("."));
            let allowed: Vec<_> = allowed_path.iter().filter_map(|p| p.canonicalize().ok()).collect();
            match pirn::mcp::tool_server::ToolServer::new(&tools, workspace.clone(), allowed) {
                Ok(server) => block_on_and_exit(pirn::mcp::tool_server::serve_stdio(server), log),
                Err(e) => {
                    #[allow(clippy::print_stderr)]
                    {
                        eprintln!("pirn mcp: workspace {}: {e}", workspace.display());
                    }
                    std::process::exit(2)
                }
            }
        }
        Some(Command::Serve(args)) => block_on_and_exit(http::serve(args.options()), log),
        Some(Command::Acp(args)) => {
            let options = pirn::acp::AcpOptions {
                model: args.model,
                approval_mode: args.approval_mode,
                max_iterations: args.max_iterations,
                sandbox: args.sandbox,
                no_network: args.no_network,
            };
            block_on_and_exit(pirn::acp::serve(options), log)
        }
    }
}
