//! pirn's tools without a model: `pirn tool NAME ARGS` (one call, for
//! debugging and benchmarks) and `pirn mcp` (the tools as an MCP server on
//! stdio, for other agents).

use pirn::transport::exit::EXIT_USAGE;

/// `pirn mcp`'s flags.
#[derive(clap::Args, Debug)]
pub struct McpArgs {
    /// Workspace the tools work in (default: the current directory).
    #[arg(long)]
    cwd: Option<std::path::PathBuf>,
    /// Tools to serve, comma-separated (default: all six).
    #[arg(long, value_delimiter = ',')]
    tools: Vec<String>,
    /// Directories outside the workspace the file tools may reach (repeatable).
    #[arg(long)]
    allowed_path: Vec<std::path::PathBuf>,
}

/// `pirn mcp`: serves until stdin closes; exit 2 when the workspace is unusable.
pub fn mcp(args: McpArgs, log: Option<pirn::logging::LogGuard>) -> ! {
    let workspace = args.cwd.unwrap_or_else(|| std::path::PathBuf::from("."));
    let allowed: Vec<_> = args.allowed_path.iter().filter_map(|p| p.canonicalize().ok()).collect();
    match pirn::mcp::tool_server::ToolServer::new(&args.tools, workspace.clone(), allowed) {
        Ok(server) => super::exit::block_on_and_exit(pirn::mcp::tool_server::serve_stdio(server), log),
        Err(e) => {
            #[allow(clippy::print_stderr)]
            {
                eprintln!("pirn mcp: workspace {}: {e}", workspace.display());
            }
            std::process::exit(EXIT_USAGE)
        }
    }
}

/// `pirn tool NAME ARGS`: runs one tool in the current directory, prints its
/// output on stdout; exit 0 on success, 1 when the tool reported an error,
/// 2 when the working directory is unusable.
#[allow(clippy::print_stderr)]
pub async fn tool(name: String, args: String) -> i32 {
    use std::io::Write;
    let workspace = match std::env::current_dir().and_then(|d| d.canonicalize()) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("pirn tool: {e}");
            return EXIT_USAGE;
        }
    };
    let mut ctx = pirn::tools::ToolContext::new(workspace, Vec::new(), tokio_util::sync::CancellationToken::new());
    if let Some(mode) = std::env::var("PIRN_SANDBOX").ok().and_then(|v| pirn::sandbox::SandboxMode::parse(&v)) {
        ctx.sandbox = std::sync::Arc::new(pirn::sandbox::Sandbox::new(mode, true, &ctx.workspace, &[]));
    }
    let enabled: Vec<String> = pirn::tools::ALL_TOOLS.iter().map(|t| t.to_string()).collect();
    let out = pirn::tools::execute(&name, &args, &enabled, &ctx).await;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(out.text.as_bytes());
    let _ = stdout.flush();
    if out.is_error { 1 } else { 0 }
}
