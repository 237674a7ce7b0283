//! `pirn serve`'s flags and the options they make: the HTTP boundary's
//! trust (`--allow-host`, `--allow-origin`, `--allow-mcp-command`,
//! `--allow-hook-command`), the
//! sessions' sandbox and environment, and the terminals.

use pirn::transport::http;

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Address to bind; anything but loopback requires a token.
    #[arg(long, default_value = "127.0.0.1")]
    bind: std::net::IpAddr,
    /// Port (0 picks a free one) [env: PIRN_PORT; default: 3923].
    #[arg(long)]
    port: Option<u16>,
    /// Bearer token required on every request but GET /health [env: PIRN_TOKEN].
    #[arg(long)]
    token: Option<String>,
    /// Seconds a send may wait in its session's queue.
    #[arg(long, default_value_t = 120)]
    queue_timeout_secs: u64,
    /// Most live sessions; creating one more answers 503.
    #[arg(long, default_value_t = 1000)]
    max_sessions: usize,
    /// A live session with no send and no request for this many seconds is
    /// closed (its log kept: it can be resumed).
    #[arg(long, default_value_t = 3600)]
    session_idle_secs: u64,
    /// Sends that may wait behind the running one in a session; one more
    /// answers 429.
    #[arg(long, default_value_t = http::MAX_QUEUE)]
    max_queue: usize,
    /// Join the group of hosts on the same Postgres store (PIRN_STORE),
    /// reached by peers at URL (http://HOST:PORT): any host then serves any
    /// session, forwarding to the one that runs it. A port of 0 stands for
    /// the port bound.
    #[arg(long, value_name = "URL")]
    advertise_url: Option<String>,
    /// How long a group host's claim on a session lasts without renewal;
    /// a dead host's sessions are taken over after it.
    #[arg(long, default_value_t = 10, requires = "advertise_url")]
    lease_secs: u64,
    /// Serve terminals: muti's shell WebSocket and ACECode's console PTYs.
    /// They run commands without the approval gate; off by default.
    #[arg(long)]
    terminals: bool,
    /// Let off-loopback peers open shells (they still need the token);
    /// consoles stay loopback-only.
    #[arg(long, requires = "terminals")]
    terminals_remote: bool,
    /// Commands a shell may run, comma-separated and matched exactly
    /// [default: bash,sh,$SHELL].
    #[arg(long, value_delimiter = ',')]
    shell_allow: Vec<String>,
    /// Password every shell's META must carry [env: PIRN_SHELL_PASSWORD].
    #[arg(long)]
    shell_password: Option<String>,
    /// Most shells open at once.
    #[arg(long, default_value_t = 16)]
    shell_max_sessions: usize,
    /// Shell timeout (seconds) when META gives none.
    #[arg(long, default_value_t = 3600)]
    shell_timeout_secs: u64,
    /// Longest shell timeout (seconds) META may ask for.
    #[arg(long, default_value_t = 86400)]
    shell_max_timeout_secs: u64,
    /// A directory shells may use as work_dir besides their session's
    /// workspace and allowed paths (repeatable).
    #[arg(long)]
    shell_allow_path: Vec<std::path::PathBuf>,
    /// Program consoles run [default: $SHELL].
    #[arg(long)]
    console_shell: Option<String>,
    /// Accept requests whose Host is NAME (besides localhost, 127.0.0.1,
    /// [::1] and the bind address); repeatable.
    #[arg(long = "allow-host", value_name = "NAME")]
    allow_host: Vec<String>,
    /// Accept browser requests from ORIGIN (e.g. http://localhost:5173) and
    /// send it CORS headers; `*` accepts any origin. Repeatable; default none.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origin: Vec<String>,
    /// A command a session's mcp_servers may start over HTTP (exact match);
    /// repeatable. Default none: over HTTP only URL servers.
    #[arg(long = "allow-mcp-command", value_name = "NAME")]
    allow_mcp_command: Vec<String>,
    /// A hook command line a session's `hooks` may run over HTTP (exact
    /// match of the whole command); repeatable. Default none: over HTTP a
    /// session has no hooks.
    #[arg(long = "allow-hook-command", value_name = "COMMAND")]
    allow_hook_command: Vec<String>,
    /// The sandbox of bash and stdio MCP servers: workspace-write, read-only
    /// or off; a session may narrow it, not widen it [env: PIRN_SANDBOX;
    /// default: workspace-write].
    #[arg(long, value_parser = parse_sandbox)]
    sandbox: Option<pirn::sandbox::SandboxMode>,
    /// Children may not use TCP (connect, bind), in every session.
    #[arg(long)]
    no_network: bool,
    /// A variable of pirn's environment that children (bash, MCP servers,
    /// terminals) also get; repeatable or comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "NAME")]
    env_passthrough: Vec<String>,
}

/// `--sandbox`'s values.
pub fn parse_sandbox(s: &str) -> Result<pirn::sandbox::SandboxMode, String> {
    pirn::sandbox::SandboxMode::parse(s).ok_or_else(|| format!("{s:?} is not one of workspace-write, read-only, off"))
}

impl ServeArgs {
    /// What `pirn serve` runs with: the flags, then `PIRN_PORT`,
    /// `PIRN_TOKEN` and `PIRN_SANDBOX`. Exits 2 on a bad value.
    #[allow(clippy::print_stderr)]
    pub fn options(&self) -> http::ServeOptions {
        let port =
            self.port.or_else(|| std::env::var("PIRN_PORT").ok().and_then(|p| p.trim().parse().ok())).unwrap_or(3923);
        let sandbox = match (self.sandbox, std::env::var("PIRN_SANDBOX").ok().filter(|v| !v.trim().is_empty())) {
            (Some(m), _) => m,
            (None, Some(v)) => parse_sandbox(&v).unwrap_or_else(|e| {
                eprintln!("pirn serve: PIRN_SANDBOX: {e}");
                std::process::exit(2)
            }),
            (None, None) => pirn::sandbox::SandboxMode::default(),
        };
        let env_passthrough: Vec<String> =
            self.env_passthrough.iter().map(|n| n.trim().to_owned()).filter(|n| !n.is_empty()).collect();
        let mut terminals = terminal_options(self);
        if let Some(t) = &mut terminals {
            t.env_passthrough = env_passthrough.clone();
        }
        http::ServeOptions {
            bind: self.bind,
            port,
            token: self.token.clone().or_else(|| std::env::var("PIRN_TOKEN").ok()),
            queue_timeout: std::time::Duration::from_secs(self.queue_timeout_secs),
            max_sessions: self.max_sessions,
            max_queue: self.max_queue.max(1),
            advertise_url: self.advertise_url.as_ref().map(|u| u.trim_end_matches('/').to_owned()),
            lease: std::time::Duration::from_secs(self.lease_secs.max(1)),
            session_idle: std::time::Duration::from_secs(self.session_idle_secs.max(1)),
            terminals,
            trust: http::guard::Trust {
                hosts: self.allow_host.iter().map(|h| h.trim().trim_end_matches('.').to_ascii_lowercase()).collect(),
                origins: self.allow_origin.iter().map(|o| o.trim().to_owned()).collect(),
                mcp_commands: self.allow_mcp_command.clone(),
                hook_commands: self.allow_hook_command.clone(),
                sandbox,
                sandbox_network: !self.no_network,
                env_passthrough,
            },
        }
    }
}

/// The terminal options of `pirn serve`, when `--terminals` is given.
#[allow(clippy::print_stderr)]
fn terminal_options(args: &ServeArgs) -> Option<pirn::terminal::TerminalOptions> {
    use pirn::terminal::TerminalOptions;
    if !args.terminals {
        return None;
    }
    let mut allowed_paths = Vec::new();
    for p in &args.shell_allow_path {
        match p.canonicalize() {
            Ok(real) => allowed_paths.push(real),
            Err(e) => {
                eprintln!("pirn serve: --shell-allow-path {}: {e}", p.display());
                std::process::exit(2);
            }
        }
    }
    let allow: Vec<String> = args.shell_allow.iter().map(|c| c.trim().to_owned()).filter(|c| !c.is_empty()).collect();
    let password = args.shell_password.clone().or_else(|| std::env::var("PIRN_SHELL_PASSWORD").ok());
    Some(TerminalOptions {
        remote: args.terminals_remote,
        allow: if allow.is_empty() { TerminalOptions::default_allow() } else { allow },
        password: password.filter(|p| !p.is_empty()),
        max_shells: args.shell_max_sessions,
        default_timeout: std::time::Duration::from_secs(args.shell_timeout_secs.max(1)),
        max_timeout: std::time::Duration::from_secs(args.shell_max_timeout_secs.max(1)),
        allowed_paths,
        console_shell: args.console_shell.clone().unwrap_or_else(TerminalOptions::default_console_shell),
        env_passthrough: Vec::new(),
    })
}
