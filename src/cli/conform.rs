//! `pirn conform` (golden cases against a worker command) and `pirn
//! transcript diff|normalize` (comparing JSONL transcripts): the tools for
//! the test suites of programs that embed pirn. The flags only; the work is
//! [`pirn::conform`]'s and [`pirn::transcript`]'s.

#[derive(clap::Args, Debug)]
pub struct ConformArgs {
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

/// `pirn conform`: runs the cases and exits 0 (all pass), 1 or 2.
pub fn conform(args: ConformArgs, log: Option<pirn::logging::LogGuard>) -> ! {
    let opts = pirn::conform::Options {
        worker: args.worker,
        dir: args.dir,
        instant: args.instant,
        strict: args.strict,
        env: args.env,
        timeout: std::time::Duration::from_secs(args.timeout_secs),
        normalizer: args.norm.normalizer(),
    };
    super::exit::block_on_and_exit(pirn::conform::run(opts), log)
}

#[derive(clap::Subcommand, Debug)]
pub enum TranscriptCommand {
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

#[derive(clap::Args, Debug, Default)]
pub struct NormalizeArgs {
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

/// `pirn transcript diff|normalize`; returns the exit code.
pub fn transcript(cmd: TranscriptCommand) -> i32 {
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
