//! One hook command as a child process: `/bin/bash -c COMMAND` in the
//! workspace, its JSON input on stdin, stdout and stderr read apart.
//!
//! Owns: spawning the hook as `bash` spawns a tool (the session's sandbox
//! and allowlisted environment, plus `CLAUDE_PROJECT_DIR` and
//! `PIRN_WORKSPACE`; its own process group under a supervisor, so it dies
//! with pirn), the timeout, and killing the whole group when the hook ends,
//! times out or the send is cancelled (the send's future is dropped, and
//! with it the hook's). A
//! hook that backgrounds a child holding its stdout runs until its
//! timeout. Output beyond [`OUTPUT_CAP`] bytes per stream is dropped.

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

/// Bytes of a hook's stdout, and of its stderr, that are read.
pub const OUTPUT_CAP: u64 = 1024 * 1024;

/// How one hook run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this code.
    Code(i32),
    /// Killed at its timeout.
    TimedOut,
    /// Killed by a signal, or its status is unknown.
    Killed,
    /// It could not start (the message says why).
    NotRun(String),
}

/// What one hook run produced.
#[derive(Debug, Clone)]
pub struct Ran {
    pub exit: Exit,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

/// Kills a process group with SIGKILL when dropped.
struct ProcessGroup(Option<i32>);

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if let Some(pgid) = self.0.take() {
            // SAFETY: killpg has no memory-safety preconditions.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }
}

/// Runs `command` with `input` on stdin, for at most `timeout`, as a child
/// of the session `scope`. Cancellation: drop the future (the group dies).
pub async fn run(scope: &super::table::HookScope<'_>, command: &str, input: &[u8], timeout: Duration) -> Ran {
    let started = Instant::now();
    let ran = |exit: Exit, stdout: String, stderr: String| Ran { exit, stdout, stderr, elapsed: started.elapsed() };
    let mut cmd = tokio::process::Command::new("/bin/bash");
    cmd.arg("-c")
        .arg(command)
        .current_dir(scope.workspace)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Err(e) = scope.sandbox.confine(&mut cmd, scope.env_passthrough) {
        let why = format!("the {} sandbox cannot be set up: {e}", scope.sandbox.mode.name());
        return ran(Exit::NotRun(why), String::new(), String::new());
    }
    cmd.env("CLAUDE_PROJECT_DIR", scope.workspace).env("PIRN_WORKSPACE", scope.workspace);
    crate::tools::supervisor::supervise(&mut cmd);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return ran(Exit::NotRun(format!("cannot start /bin/bash: {e}")), String::new(), String::new()),
    };
    let _group = ProcessGroup(child.id().and_then(|pid| i32::try_from(pid).ok()));
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let input = input.to_vec();
    let work = async {
        let feed = async move {
            if let Some(mut stdin) = stdin {
                // A hook that does not read its input may close stdin early.
                let _ = stdin.write_all(&input).await;
            }
        };
        let (_, out, err, status) = tokio::join!(feed, read_capped(stdout), read_capped(stderr), child.wait());
        (out, err, status)
    };
    match tokio::time::timeout(timeout, work).await {
        Err(_) => ran(Exit::TimedOut, String::new(), String::new()),
        Ok((out, err, status)) => {
            let exit = match status.ok().and_then(|s| s.code()) {
                Some(code) => Exit::Code(code),
                None => Exit::Killed,
            };
            ran(exit, out, err)
        }
    }
}

/// Reads a pipe to its end, keeping the first [`OUTPUT_CAP`] bytes.
async fn read_capped(pipe: Option<impl AsyncRead + Unpin>) -> String {
    let Some(mut pipe) = pipe else { return String::new() };
    let mut kept = Vec::new();
    let _ = (&mut pipe).take(OUTPUT_CAP).read_to_end(&mut kept).await;
    // The rest is read and dropped, so the hook never blocks on a full pipe.
    let mut sink = [0u8; 8192];
    while matches!(pipe.read(&mut sink).await, Ok(n) if n > 0) {}
    String::from_utf8_lossy(&kept).into_owned()
}
