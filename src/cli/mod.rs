//! The `pirn` command line: parse once into a typed [`Command`], then hand
//! it to the one front-end it names. No behaviour lives here; each file
//! holds one command's flags and the options they make:
//!
//! - no subcommand: the JSONL worker on stdin/stdout (what an orchestrator
//!   spawns), [`pirn::transport::stdio`];
//! - [`run`]: `pirn run [flags] PROMPT`, one send for scripts;
//! - [`serve`]: `pirn serve`, the HTTP daemon;
//! - [`acp`]: `pirn acp`, the Agent Client Protocol;
//! - [`sessions`]: `pirn sessions list|show|export|rm|rewind|fork|worktrees|worktree-rm`;
//! - [`conform`]: `pirn conform` and `pirn transcript diff|normalize`;
//! - [`tools`]: `pirn tool` and `pirn mcp`, the tools without a model;
//! - `pirn exec …`: Codex's headless surface (what the Codex SDK spawns),
//!   [`pirn::codex`];
//! - `pirn -p …`, `pirn --output-format stream-json …`, `pirn run -p …`:
//!   Claude Code's headless surface (what the Claude Agent SDKs spawn),
//!   recognised before clap and handed to [`pirn::claude`].

mod acp;
mod conform;
mod exit;
mod run;
mod serve;
mod sessions;
mod tools;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use exit::{block_on_and_exit, exit_with};
use pirn::logging;

const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (protocol ",
    include_str!("../../PROTOCOL_VERSION"),
    "; serves 0.2.0 and 0.3.0)"
);

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
    Run(run::RunArgs),
    /// The HTTP facade: sessions over HTTP, SSE and WebSocket (see README).
    /// Prints `pirn serve listening on http://ADDR` once bound.
    Serve(serve::ServeArgs),
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
    Transcript(conform::TranscriptCommand),
    /// Stored sessions (PIRN_HOME, default ~/.pirn; or PIRN_STORE). Exit 0
    /// done, 1 no such session, 2 the store cannot be used.
    #[command(subcommand)]
    Sessions(sessions::SessionsCommand),
    /// pirn's tools as an MCP server on stdio (for other agents): the
    /// enabled built-in tools, confined to --cwd. Runs until stdin closes.
    Mcp(tools::McpArgs),
    /// The worker over the Agent Client Protocol (ACP v1, JSON-RPC on
    /// stdin/stdout), for ACP clients such as Zed or JetBrains editors.
    /// Every ACP session is a pirn session (tools, approval, store).
    Acp(acp::AcpArgs),
    /// Run golden cases (input.jsonl, cassette.jsonl, files/, expected.jsonl)
    /// against a worker command; one PASS/FAIL line per case. Exit 0 when
    /// all pass, 1 when one fails, 2 when the cases cannot be run.
    Conform(conform::ConformArgs),
    /// Codex's `codex exec` surface (what the Codex SDK spawns through
    /// `codexPathOverride`): one turn, the prompt as the argument or on
    /// stdin, Codex's thread events as JSONL with --experimental-json.
    /// `pirn exec resume ID|--last` continues a thread. Exit 0 completed,
    /// 1 failed, 2 refused command line, 130 cancelled.
    Exec(pirn::codex::ExecArgs),
}

/// The command line parsed; when it asks for help, `pirn run`'s ends with
/// the profile a run would have ([`run::profile_help`]).
fn parse(argv: &[String]) -> Cli {
    let mut command = Cli::command();
    if argv.iter().any(|a| matches!(a.as_str(), "-h" | "--help" | "help")) {
        let args = argv.iter().position(|a| a == "run").map_or(&argv[..0], |i| &argv[i + 1..]);
        let note = run::profile_help(args);
        command = command.mut_subcommand("run", |run| run.after_help(note));
    }
    let matches = command.get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// The entry point: picks the front-end and never returns.
pub fn main() -> ! {
    // The worker path (no arguments) skips argument parsing entirely.
    if std::env::args_os().len() == 1 {
        let log = logging::init(None);
        block_on_and_exit(pirn::transport::stdio::serve(), log);
    }
    // Claude Code's headless surface: `pirn -p …`, `pirn --output-format
    // stream-json …` (what the Agent SDKs spawn), `pirn run -p …`.
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let claude = if pirn::claude::is_claude_invocation(&argv, false) {
        Some(argv.clone())
    } else if argv.first().map(String::as_str) == Some("run") && pirn::claude::is_claude_invocation(&argv[1..], true) {
        Some(argv[1..].to_vec())
    } else {
        None
    };
    if let Some(argv) = claude {
        let log = logging::init(None);
        block_on_and_exit(pirn::claude::main(argv), log);
    }
    let cli = parse(&argv);
    let log = logging::init(cli.log.as_deref());
    match cli.command {
        None => block_on_and_exit(pirn::transport::stdio::serve(), log),
        Some(Command::Run(args)) => run::main(args, log),
        Some(Command::Tool { name, args }) => block_on_and_exit(tools::tool(name, args), log),
        Some(Command::Sessions(cmd)) => block_on_and_exit(sessions::run(cmd), log),
        Some(Command::Transcript(cmd)) => exit_with(conform::transcript(cmd), log),
        Some(Command::Conform(args)) => conform::conform(args, log),
        Some(Command::Mcp(args)) => tools::mcp(args, log),
        Some(Command::Serve(args)) => block_on_and_exit(pirn::transport::http::serve(args.options()), log),
        Some(Command::Acp(args)) => block_on_and_exit(pirn::acp::serve(args.options()), log),
        Some(Command::Exec(args)) => block_on_and_exit(pirn::codex::main(args), log),
    }
}
