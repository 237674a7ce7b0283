//! `bash {command, timeout_ms?, run_in_background?}`: a shell command in its
//! own process group, or in the background ([`super::shells`]): started
//! here and followed by a task here (its pipe read, its end waited for),
//! kept in the session's [`Shells`] table.
//!
//! Owns: spawning `/bin/bash -c` with stdin from /dev/null and the workspace
//! as cwd, one pipe shared by stdout and stderr (so their lines interleave as
//! in a terminal), the head+tail output cap (the pipe is drained to the end
//! so the command never blocks on a full pipe), the timeout, and killing the
//! whole process group — on timeout, on cancellation (dropping the future
//! kills it), and after the shell exits (background jobs do not outlive the
//! call) — and, through a [`super::supervisor`], when pirn itself dies.
//! Pipes held open by a grandchild that left the group stop being read
//! after [`DRAIN_AFTER_EXIT`].

use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use super::context::ToolContext;
use super::error::{ToolError, failed};
use super::shell_table::{Shell, Shells};

/// `timeout_ms` when absent.
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// Largest `timeout_ms` accepted.
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// How long output is still read after the shell exited.
pub const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);
/// Bytes kept from the start and from the end of the output.
const HEAD_BYTES: usize = 20 * 1024;
const TAIL_BYTES: usize = 20 * 1024;

/// Arguments as the model sends them (their schema is the tool's `parameters`).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Args {
    /// The command line.
    pub command: String,
    /// Kill the command after this many milliseconds. Default 120000.
    #[serde(default)]
    #[schemars(range(min = 1, max = 600_000))]
    pub timeout_ms: Option<u64>,
    /// Start the command in the background and return at once with its
    /// shell id (for servers, watchers, long builds); read its output with
    /// bash_output and stop it with kill_shell.
    #[serde(default)]
    pub run_in_background: Option<bool>,
}

/// What the model is told the tool does.
pub const DESCRIPTION: &str = "Run a shell command with /bin/bash -c in the workspace directory. Returns combined stdout and stderr and the exit status. No stdin; background processes are killed when the command ends.";

/// The description when background shells are offered (`run_in_background`).
pub const DESCRIPTION_BACKGROUND: &str = "Run a shell command with /bin/bash -c in the workspace directory. Returns combined stdout and stderr and the exit status. No stdin; processes it leaves behind are killed when the command ends. With run_in_background the command keeps running after the call returns its shell id: read its output with bash_output, stop it with kill_shell.";

/// Kills a process group with SIGKILL when dropped (or when asked).
pub(crate) struct GroupGuard(Option<i32>);

impl GroupGuard {
    /// SIGKILLs the group now (once).
    pub(crate) fn kill(&mut self) {
        if let Some(pgid) = self.0.take() {
            // SAFETY: killpg has no memory-safety preconditions.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

enum CommandEnd {
    Exited(ExitStatus),
    TimedOut,
    Cancelled,
}

/// Runs the command. Always reports the exit status (or the timeout); spawn
/// failures are error outputs.
pub async fn run(args: Args, ctx: &ToolContext) -> Result<String, ToolError> {
    if args.command.trim().is_empty() {
        return failed("command is empty");
    }
    if args.run_in_background == Some(true) {
        return match &ctx.shells {
            Some(shells) => start_background(shells, &args.command, ctx),
            None => failed(
                "run_in_background is not offered in this session: run the command in the foreground (timeout_ms up to 600000)",
            ),
        };
    }
    let timeout_ms = args.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS).clamp(1, MAX_TIMEOUT_MS);
    let Started { mut child, mut group, mut pipe } = match start(&args.command, ctx) {
        Ok(s) => s,
        Err(e) => return failed(e),
    };
    let mut out = HeadTail::default();
    let mut live = ctx.live.clone().map(super::live::Live::new);
    let mut tick = tokio::time::interval(super::live::EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut buf = vec![0u8; 64 * 1024];
    let mut eof = false;
    let deadline = tokio::time::sleep(Duration::from_millis(timeout_ms));
    tokio::pin!(deadline);
    let end = loop {
        tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => break CommandEnd::Cancelled,
            _ = &mut deadline => break CommandEnd::TimedOut,
            n = pipe.read(&mut buf), if !eof => match n {
                Ok(0) | Err(_) => eof = true,
                Ok(n) => {
                    out.push(&buf[..n]);
                    if let Some(l) = live.as_mut() {
                        l.push(&buf[..n]);
                    }
                }
            },
            _ = tick.tick(), if live.as_ref().is_some_and(super::live::Live::waiting) => {
                if let Some(l) = live.as_mut().filter(|l| l.due()) {
                    l.flush();
                }
            }
            status = child.wait() => match status {
                Ok(s) => break CommandEnd::Exited(s),
                Err(e) => return failed(format!("cannot wait for the command: {e}")),
            },
        }
    };
    group.kill();
    if matches!(end, CommandEnd::Cancelled) {
        return failed("cancelled");
    }
    let status = match &end {
        CommandEnd::Exited(s) => Some(*s),
        _ => tokio::time::timeout(Duration::from_secs(2), child.wait()).await.ok().and_then(Result::ok),
    };
    // Whatever is still in the pipe, bounded in time.
    let drain_until = tokio::time::Instant::now() + DRAIN_AFTER_EXIT;
    while !eof {
        match tokio::time::timeout_at(drain_until, pipe.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => {
                out.push(&buf[..n]);
                if let Some(l) = live.as_mut() {
                    l.push(&buf[..n]);
                }
            }
            _ => eof = true,
        }
    }
    if let Some(l) = live.as_mut() {
        l.flush();
    }
    let mut text = out.finish();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    match end {
        CommandEnd::TimedOut => {
            text.push_str(&format!("[timed out after {timeout_ms} ms; the process group was killed]\n"));
            failed(text)
        }
        _ => {
            let (line, is_failure) = describe(status);
            text.push_str(&format!("[{line}]\n"));
            if is_failure { failed(text) } else { Ok(text) }
        }
    }
}

/// A command started in its own process group under a supervisor: the
/// supervisor's child handle, the guard that kills the group, and the read
/// end of the pipe its stdout and stderr share.
pub(crate) struct Started {
    pub child: tokio::process::Child,
    pub group: GroupGuard,
    pub pipe: tokio::net::unix::pipe::Receiver,
}

/// Starts `/bin/bash -c command` in the workspace, confined by the
/// session's sandbox and environment. `Err` says why it could not start.
pub(crate) fn start(command: &str, ctx: &ToolContext) -> Result<Started, String> {
    let (reader, writer) = std::io::pipe().map_err(|e| format!("cannot create a pipe: {e}"))?;
    let writer2 = writer.try_clone().map_err(|e| format!("cannot create a pipe: {e}"))?;
    let child = {
        let mut cmd = tokio::process::Command::new("/bin/bash");
        cmd.arg("-c")
            .arg(command)
            .current_dir(&ctx.workspace)
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(writer2)
            .process_group(0)
            .kill_on_drop(true);
        // An allowlisted environment and the sandbox, before the supervisor.
        if let Err(e) = ctx.sandbox.confine(&mut cmd, &ctx.env_passthrough) {
            return Err(format!("not run: the {} sandbox cannot be set up: {e}", ctx.sandbox.mode.name()));
        }
        // The group dies with pirn, even on SIGKILL.
        super::supervisor::supervise(&mut cmd);
        cmd.spawn().map_err(|e| format!("cannot start /bin/bash: {e}"))?
        // `cmd` drops here, closing the parent's copies of the write end.
    };
    let group = GroupGuard(child.id().and_then(|pid| i32::try_from(pid).ok()));
    let pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader))
        .map_err(|e| format!("cannot read the command's output: {e}"))?;
    Ok(Started { child, group, pipe })
}

/// Starts `command` in the background in the session's `shells` (as
/// [`run`] would start it) and returns the text for the model: the shell id
/// and how to read it. Must run inside the tokio runtime. Fails when
/// [`MAX_RUNNING`](super::shell_table::MAX_RUNNING) run already or the
/// command cannot start.
fn start_background(shells: &Shells, command: &str, ctx: &ToolContext) -> Result<String, ToolError> {
    shells.start(
        command,
        || start(command, ctx),
        |shell, started| {
            tokio::spawn(follow(shell, started, ctx.cancel.clone()));
        },
    )
}

/// Follows one background command until it ends or is killed.
async fn follow(shell: Arc<Shell>, started: Started, send_cancel: CancellationToken) {
    let Started { mut child, mut group, mut pipe } = started;
    let mut buf = vec![0u8; 64 * 1024];
    let mut eof = false;
    let end = loop {
        tokio::select! {
            biased;
            _ = shell.killed() => break "killed by kill_shell (or the session ended)".to_owned(),
            _ = send_cancel.cancelled() => break "killed: the send that started it was cancelled".to_owned(),
            n = pipe.read(&mut buf), if !eof => match n {
                Ok(0) | Err(_) => eof = true,
                Ok(n) => shell.push(&buf[..n]),
            },
            status = child.wait() => break describe(status.ok()).0,
        }
    };
    group.kill();
    let drain_until = tokio::time::Instant::now() + DRAIN_AFTER_EXIT;
    while !eof {
        match tokio::time::timeout_at(drain_until, pipe.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => shell.push(&buf[..n]),
            _ => eof = true,
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
    shell.end(end);
}

/// The code in the `[exit code N]` line a `bash` result ends with (see
/// [`describe`]); `None` for a timeout, a signal or any other text.
pub fn exit_code_of(result: &str) -> Option<i32> {
    let line = result.lines().rev().find(|l| l.starts_with('['))?;
    line.strip_prefix("[exit code ")?.strip_suffix(']')?.parse().ok()
}

/// Whether a `bash` result is that of a command that ran, and its exit
/// code: `Some(Some(code))` after `[exit code N]`, `Some(None)` after a
/// timeout or a signal, `None` when the command never started (an empty
/// command, a sandbox that could not be set up).
pub fn status_of(result: &str) -> Option<Option<i32>> {
    let line = result.lines().rev().find(|l| l.starts_with('['))?;
    if let Some(code) = exit_code_of(result) {
        return Some(Some(code));
    }
    ["[timed out", "[killed by signal", "[exit status"].iter().any(|p| line.starts_with(p)).then_some(None)
}

/// The status line of an ended command (`exit code N`, `killed by signal
/// N`) and whether it is a failure.
pub(crate) fn describe(status: Option<ExitStatus>) -> (String, bool) {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(s) => match (s.code(), s.signal()) {
            (Some(code), _) => (format!("exit code {code}"), code != 0),
            (None, Some(sig)) => (format!("killed by signal {sig}"), true),
            _ => ("exit status unknown".to_owned(), true),
        },
        None => ("exit status unknown".to_owned(), true),
    }
}

/// Keeps the first [`HEAD_BYTES`] and the last [`TAIL_BYTES`] of a stream,
/// counting what falls between.
#[derive(Default)]
struct HeadTail {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    dropped_bytes: u64,
    dropped_newlines: u64,
}

impl HeadTail {
    fn push(&mut self, mut bytes: &[u8]) {
        if self.head.len() < HEAD_BYTES {
            let take = bytes.len().min(HEAD_BYTES - self.head.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.len() >= TAIL_BYTES {
            let (gone, keep) = bytes.split_at(bytes.len() - TAIL_BYTES);
            self.drop_bytes(self.tail.iter().copied().collect::<Vec<_>>().as_slice());
            self.drop_bytes(gone);
            self.tail.clear();
            self.tail.extend(keep);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(TAIL_BYTES);
        if overflow > 0 {
            let gone: Vec<u8> = self.tail.drain(..overflow).collect();
            self.drop_bytes(&gone);
        }
        self.tail.extend(bytes);
    }

    fn drop_bytes(&mut self, bytes: &[u8]) {
        self.dropped_bytes += bytes.len() as u64;
        self.dropped_newlines += memchr::memchr_iter(b'\n', bytes).count() as u64;
    }

    fn finish(self) -> String {
        let head = String::from_utf8_lossy(&self.head).into_owned();
        let tail: Vec<u8> = self.tail.into_iter().collect();
        let tail = String::from_utf8_lossy(&tail);
        if self.dropped_bytes == 0 {
            return head + &tail;
        }
        format!("{head}\n[... {} lines ({} bytes) omitted ...]\n{tail}", self.dropped_newlines, self.dropped_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_read_from_the_last_status_line() {
        assert_eq!(exit_code_of("out\n[exit code 3]\n"), Some(3));
        assert_eq!(exit_code_of("[timed out after 5 ms; the process group was killed]\n"), None);
    }

    #[test]
    fn head_tail_counts_what_it_drops() {
        let mut ht = HeadTail::default();
        for i in 0..100_000 {
            ht.push(format!("line {i}\n").as_bytes());
        }
        let s = ht.finish();
        assert!(s.starts_with("line 0\n"));
        assert!(s.ends_with("line 99999\n"));
        assert!(s.len() < HEAD_BYTES + TAIL_BYTES + 100);
        assert!(s.contains("lines ("));
    }
}
