//! `pirn conform`: golden cases run against any worker command that speaks
//! the protocol, judged by their normalised transcripts.
//!
//! A case is a directory (the layout of pirn's own `fixtures/`):
//! - `input.jsonl`: lines written to the worker's stdin, in order, with
//!   directives of the runner: `{"_wait": {…}, "_count": N}` waits until N
//!   (default 1) lines written since the last request contain every field
//!   of the object; `{"_sleep_ms": N}`; `{"_close_stdin": true}`. Other
//!   lines are written verbatim (malformed ones included);
//! - `cassette.jsonl` (optional): the model exchanges, served over HTTP on
//!   127.0.0.1 by [`server`]; the worker finds it through `PIRN_BASE_URL`,
//!   `OPENAI_BASE_URL` and `HEDDLE_BASE_URL`;
//! - `files/` (optional): copied into the workspace, a fresh temp
//!   directory that is the worker's working directory;
//! - `env.json` (optional): `{"NAME": "value"}` for the worker;
//! - `expected.jsonl`: the worker's stdout, compared after
//!   [`Normalizer::normalize`] with the workspace path forgiven.
//!
//! Owns: running one case (spawn in its own process group, feed, wait,
//! collect, kill whatever is left), the report, the exit status.

pub mod server;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::watch;

use crate::cassette::{Player, Timing};
use crate::transcript::{Normalizer, diff};

/// What `pirn conform` was asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// The worker, run with `sh -c` (so `bun run x.ts` works).
    pub worker: String,
    /// A case directory, or a directory of them.
    pub dir: PathBuf,
    /// Serve recorded answers at once instead of at their recorded pace.
    pub instant: bool,
    /// Chat requests must equal the recorded ones (for pirn itself).
    pub strict: bool,
    /// Extra environment for the worker.
    pub env: Vec<(String, String)>,
    /// Longest a case may take.
    pub timeout: Duration,
    /// What the comparison forgives beyond the defaults.
    pub normalizer: Normalizer,
}

/// The cases under `dir`: `dir` itself when it holds `input.jsonl`, else
/// its subdirectories that do, sorted by name.
pub fn cases(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    if dir.join("input.jsonl").is_file() {
        return Ok(vec![dir.to_path_buf()]);
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("input.jsonl").is_file())
        .collect();
    found.sort();
    Ok(found)
}

/// Runs every case and prints one line per case (and the diff of a
/// failure) to stdout. Exit status: 0 all passed, 1 some failed, 2 the
/// runner could not run (no cases, unreadable files).
pub async fn run(opts: Options) -> i32 {
    let mut out = std::io::stdout().lock();
    let all = match cases(&opts.dir) {
        Ok(c) if !c.is_empty() => c,
        Ok(_) => {
            let _ = writeln!(out, "pirn conform: no cases (directories with input.jsonl) under {}", opts.dir.display());
            return 2;
        }
        Err(e) => {
            let _ = writeln!(out, "pirn conform: cannot read {}: {e}", opts.dir.display());
            return 2;
        }
    };
    let mut failed = 0;
    for case in &all {
        let name = case.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        match run_case(case, &opts).await {
            Ok(None) => {
                let _ = writeln!(out, "PASS {name}");
            }
            Ok(Some(d)) => {
                failed += 1;
                let _ = writeln!(out, "FAIL {name}\n{d}");
            }
            Err(e) => {
                failed += 1;
                let _ = writeln!(out, "FAIL {name}: {e}");
            }
        }
        let _ = out.flush();
    }
    let _ = writeln!(out, "{}/{} cases passed", all.len() - failed, all.len());
    i32::from(failed > 0)
}

/// Runs one case: `Ok(None)` when the transcript matches, `Ok(Some(diff))`
/// when it does not, `Err` when the case could not be run.
pub async fn run_case(case: &Path, opts: &Options) -> Result<Option<String>, String> {
    let read = |name: &str| std::fs::read_to_string(case.join(name)).map_err(|e| format!("{name}: {e}"));
    let input = read("input.jsonl")?;
    let expected = read("expected.jsonl")?;
    let timing = if opts.instant { Timing::Instant } else { Timing::Recorded };
    let cassette = case.join("cassette.jsonl");
    let player = if cassette.is_file() {
        Player::load(&cassette, timing).map_err(|e| e.to_string())?
    } else {
        Player::empty(timing)
    };
    let workspace = tempfile::Builder::new().prefix(".tmp").tempdir().map_err(|e| format!("temp dir: {e}"))?;
    let ws = workspace.path().canonicalize().map_err(|e| e.to_string())?;
    if case.join("files").is_dir() {
        copy_dir(&case.join("files"), &ws).map_err(|e| format!("files/: {e}"))?;
    }
    let ws_text = ws.display().to_string();
    let server = server::start(Arc::new(player), opts.strict, ws_text.clone()).await.map_err(|e| e.to_string())?;
    let mut env: Vec<(String, String)> = ["PIRN_BASE_URL", "OPENAI_BASE_URL", "HEDDLE_BASE_URL"]
        .iter()
        .map(|k| ((*k).to_owned(), server.base_url()))
        .collect();
    // A golden run leaves no session logs behind (env.json may say otherwise).
    env.push(("PIRN_PERSIST".to_owned(), "0".to_owned()));
    if let Ok(text) = std::fs::read_to_string(case.join("env.json")) {
        let map: serde_json::Map<String, Value> = serde_json::from_str(&text).map_err(|e| format!("env.json: {e}"))?;
        env.extend(map.into_iter().map(|(k, v)| (k, v.as_str().map_or_else(|| v.to_string(), str::to_owned))));
    }
    env.extend(opts.env.iter().cloned());
    let actual = tokio::time::timeout(opts.timeout, drive(&opts.worker, &ws, &env, &input))
        .await
        .map_err(|_| format!("timed out after {} s", opts.timeout.as_secs()))??;
    let normalizer =
        Normalizer { workspaces: vec![ws_text, workspace.path().display().to_string()], ..opts.normalizer.clone() };
    Ok(diff(&normalizer.normalize(&expected), &normalizer.normalize(&actual)))
}

/// Spawns the worker in `ws`, feeds it `input` and returns its stdout once
/// it exits (or 20 s after its stdin closed, when it is killed).
async fn drive(worker: &str, ws: &Path, env: &[(String, String)], input: &str) -> Result<String, String> {
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c").arg(worker).current_dir(ws).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
    for k in
        ["PIRN_RECORD", "PIRN_REPLAY", "PIRN_REPLAY_TIMING", "PIRN_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY"]
    {
        cmd.env_remove(k);
    }
    cmd.envs(env.iter().map(|(k, v)| (k, v))).process_group(0).kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| format!("cannot start the worker `{worker}`: {e}"))?;
    let group = child.id().and_then(|p| i32::try_from(p).ok());
    let _kill = KillGroup(group);
    let mut stdin = child.stdin.take();
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let (tx, mut seen) = watch::channel(Vec::<String>::new());
    let reader = tokio::spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tx.send_modify(|all| all.push(line));
        }
    });
    let mut written_at = 0usize;
    for line in input.lines().filter(|l| !l.trim().is_empty()) {
        let directive: Value = serde_json::from_str(line).unwrap_or(Value::Null);
        if let Some(want) = directive.get("_wait") {
            let count = directive.get("_count").and_then(Value::as_u64).unwrap_or(1) as usize;
            let matched = |all: &Vec<String>| {
                all[written_at.min(all.len())..]
                    .iter()
                    .filter(|l| serde_json::from_str::<Value>(l).is_ok_and(|v| contains(&v, want)))
                    .count()
                    >= count
            };
            if seen.wait_for(matched).await.is_err() {
                return Err(format!("the worker exited before a line matching {want}"));
            }
        } else if let Some(ms) = directive.get("_sleep_ms").and_then(Value::as_u64) {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        } else if directive.get("_close_stdin").is_some() {
            stdin = None;
        } else if let Some(w) = stdin.as_mut() {
            written_at = seen.borrow().len();
            // A worker that stopped reading is part of what is compared.
            let _ = w.write_all(format!("{line}\n").as_bytes()).await;
            let _ = w.flush().await;
        }
    }
    drop(stdin);
    if tokio::time::timeout(Duration::from_secs(20), child.wait()).await.is_err() {
        let _ = child.start_kill();
    }
    let _ = tokio::time::timeout(Duration::from_secs(5), reader).await;
    let lines = seen.borrow().join("\n");
    Ok(lines)
}

/// SIGKILLs a process group when dropped (a worker's leftovers never
/// outlive its case).
struct KillGroup(Option<i32>);

impl Drop for KillGroup {
    fn drop(&mut self) {
        if let Some(pgid) = self.0 {
            // SAFETY: kill(2) with a negative pid signals a process group; no memory is touched.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    }
}

/// True when `line` holds every field of `want`, recursively.
fn contains(line: &Value, want: &Value) -> bool {
    match (line, want) {
        (Value::Object(l), Value::Object(w)) => w.iter().all(|(k, v)| l.get(k).is_some_and(|lv| contains(lv, v))),
        (l, w) => l == w,
    }
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            std::fs::create_dir_all(&target)?;
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}
