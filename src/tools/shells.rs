//! Background shells (0.3.0): a `bash` call with `run_in_background: true`
//! starts its command and returns at once with a shell id; `bash_output
//! {shell_id, wait_ms?}` gives what the command printed since the last read
//! and whether it still runs; `kill_shell {shell_id}` kills its process
//! group. These are Claude Code's `run_in_background`, `BashOutput` (now
//! `TaskOutput`) and `KillShell` (now `TaskStop`), whose names the Claude
//! surface maps onto these.
//!
//! Owns: the session's table of shells, the task that follows each
//! command (reads its pipe, waits for it), the unread output (at most
//! [`UNREAD_BYTES`] per shell; what falls out is counted, never kept), and
//! every way a shell dies: `kill_shell`; a cancel of the send that started
//! it; the end of the session (the table is dropped); pirn's own death (the
//! supervisor, see [`super::supervisor`]); and, as for a foreground
//! command, the end of its shell (what it left behind in its group goes
//! with it). At most [`MAX_RUNNING`] run at once in a session.
//!
//! What a background command changes on disk is not in the send's file
//! checkpoint nor in `files_changed` (it may go on after the send ends).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use super::{ToolContext, ToolError, bash, failed};

/// The tool that reads a background shell.
pub const OUTPUT: &str = "bash_output";
/// The tool that kills one.
pub const KILL: &str = "kill_shell";
/// Background shells that may run at once in one session.
pub const MAX_RUNNING: usize = 8;
/// Unread output kept per shell, in bytes (the newest; older is dropped and counted).
pub const UNREAD_BYTES: usize = 1024 * 1024;
/// Ended shells kept for a last read (the oldest go first).
const KEPT_ENDED: usize = 16;
/// Longest `wait_ms`.
pub const MAX_WAIT_MS: u64 = 600_000;

/// `bash_output`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct OutputArgs {
    /// The id `bash` returned for the background command.
    #[serde(alias = "bash_id", alias = "task_id")]
    pub shell_id: String,
    /// Wait up to this many milliseconds for the command to end before
    /// reading (default 0: read at once).
    #[serde(default)]
    #[schemars(range(min = 0, max = 600_000))]
    pub wait_ms: Option<u64>,
}

/// `kill_shell`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct KillArgs {
    /// The id `bash` returned for the background command.
    #[serde(alias = "bash_id", alias = "task_id")]
    pub shell_id: String,
}

/// `bash_output`'s description for the model.
pub const OUTPUT_DESCRIPTION: &str = "Read a background command's output printed since your last read of it (started with bash run_in_background), and whether it still runs or how it ended.";
/// `kill_shell`'s description for the model.
pub const KILL_DESCRIPTION: &str =
    "Stop a background command (started with bash run_in_background): its whole process group is killed.";

/// The session's background shells. Dropping it kills every one.
#[derive(Default)]
pub struct Shells {
    table: Mutex<Table>,
}

impl std::fmt::Debug for Shells {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = self.lock();
        f.debug_struct("Shells").field("shells", &t.shells.len()).finish()
    }
}

#[derive(Default)]
struct Table {
    next: u32,
    shells: Vec<(String, Arc<Shell>)>,
}

struct Shell {
    command: String,
    /// Cancelled by `kill_shell` and when the table is dropped.
    kill: CancellationToken,
    state: Mutex<ShellState>,
    /// True once the command ended and its output was read to the end.
    ended: tokio::sync::watch::Sender<bool>,
}

#[derive(Default)]
struct ShellState {
    unread: std::collections::VecDeque<u8>,
    /// Bytes that fell out of `unread` since the last read.
    dropped: u64,
    /// How it ended (`exit code 0`, `killed by kill_shell`, …); `None` while it runs.
    end: Option<String>,
}

impl Shell {
    fn push(&self, bytes: &[u8]) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.unread.extend(bytes);
        let over = s.unread.len().saturating_sub(UNREAD_BYTES);
        if over > 0 {
            s.unread.drain(..over);
            s.dropped += over as u64;
        }
    }

    fn running(&self) -> bool {
        !*self.ended.borrow()
    }
}

impl Drop for Shells {
    fn drop(&mut self) {
        for (_, shell) in &self.lock().shells {
            shell.kill.cancel();
        }
    }
}

impl Shells {
    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts `command` in the background (as `bash` would start it) and
    /// returns the text for the model: the shell id and how to read it.
    /// Must run inside the tokio runtime. Fails when [`MAX_RUNNING`] run
    /// already or the command cannot start.
    pub fn start(&self, command: &str, ctx: &ToolContext) -> Result<String, ToolError> {
        let mut t = self.lock();
        let running = t.shells.iter().filter(|(_, s)| s.running()).count();
        if running >= MAX_RUNNING {
            return failed(format!(
                "not started: {running} background commands run already (at most {MAX_RUNNING}); stop one with kill_shell first"
            ));
        }
        let started = bash::start(command, ctx).map_err(ToolError::Failed)?;
        t.next += 1;
        let id = format!("shell_{}", t.next);
        let shell = Arc::new(Shell {
            command: command.to_owned(),
            kill: CancellationToken::new(),
            state: Mutex::default(),
            ended: tokio::sync::watch::Sender::new(false),
        });
        tokio::spawn(follow(shell.clone(), started, ctx.cancel.clone()));
        t.shells.push((id.clone(), shell));
        while t.shells.iter().filter(|(_, s)| !s.running()).count() > KEPT_ENDED {
            if let Some(i) = t.shells.iter().position(|(_, s)| !s.running()) {
                t.shells.remove(i);
            }
        }
        Ok(format!(
            "started in the background as {id}; read its output with bash_output {{\"shell_id\": \"{id}\"}} and stop it with kill_shell {{\"shell_id\": \"{id}\"}}\n"
        ))
    }

    fn get(&self, id: &str) -> Result<Arc<Shell>, ToolError> {
        let t = self.lock();
        match t.shells.iter().find(|(i, _)| i == id.trim()) {
            Some((_, s)) => Ok(s.clone()),
            None => {
                let ids: Vec<&str> = t.shells.iter().map(|(i, _)| i.as_str()).collect();
                let known = if ids.is_empty() { "none".to_owned() } else { ids.join(", ") };
                Err(ToolError::Failed(format!("there is no background shell {id:?}; the shells are: {known}")))
            }
        }
    }

    /// `bash_output`: the output since the last read and the shell's state.
    /// Waits up to `wait_ms` for the command to end (cancel-aware).
    pub async fn read(&self, args: OutputArgs, cancel: &CancellationToken) -> Result<String, ToolError> {
        let shell = self.get(&args.shell_id)?;
        let wait = Duration::from_millis(args.wait_ms.unwrap_or(0).min(MAX_WAIT_MS));
        if !wait.is_zero() {
            let mut ended = shell.ended.subscribe();
            tokio::select! {
                _ = cancel.cancelled() => return failed("cancelled"),
                _ = tokio::time::timeout(wait, ended.wait_for(|e| *e)) => {}
            }
        }
        let (bytes, dropped, end) = {
            let mut s = shell.state.lock().unwrap_or_else(|p| p.into_inner());
            let bytes: Vec<u8> = s.unread.drain(..).collect();
            (bytes, std::mem::take(&mut s.dropped), s.end.clone())
        };
        let mut text = String::new();
        if dropped > 0 {
            text.push_str(&format!("[... {dropped} earlier bytes were not kept ...]\n"));
        }
        text.push_str(&String::from_utf8_lossy(&bytes));
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        let id = args.shell_id.trim();
        match end {
            None => text.push_str(&format!("[{id} is still running: {}]\n", shell.command)),
            Some(end) => text.push_str(&format!("[{id} ended: {end}]\n")),
        }
        Ok(text)
    }

    /// `kill_shell`: kills the shell's process group and waits (a moment)
    /// for its task to see it.
    pub async fn kill(&self, args: KillArgs) -> Result<String, ToolError> {
        let shell = self.get(&args.shell_id)?;
        let id = args.shell_id.trim();
        if !shell.running() {
            let end = shell.state.lock().unwrap_or_else(|p| p.into_inner()).end.clone().unwrap_or_default();
            return Ok(format!("{id} had already ended: {end}\n"));
        }
        shell.kill.cancel();
        let mut ended = shell.ended.subscribe();
        let _ = tokio::time::timeout(Duration::from_secs(2), ended.wait_for(|e| *e)).await;
        Ok(format!("{id} was killed (its whole process group)\n"))
    }

    /// Ids of the shells still running.
    pub fn running(&self) -> Vec<String> {
        self.lock().shells.iter().filter(|(_, s)| s.running()).map(|(i, _)| i.clone()).collect()
    }
}

/// Follows one background command until it ends or is killed.
async fn follow(shell: Arc<Shell>, started: bash::Started, send_cancel: CancellationToken) {
    let bash::Started { mut child, mut group, mut pipe } = started;
    let mut buf = vec![0u8; 64 * 1024];
    let mut eof = false;
    let end = loop {
        tokio::select! {
            biased;
            _ = shell.kill.cancelled() => break "killed by kill_shell (or the session ended)".to_owned(),
            _ = send_cancel.cancelled() => break "killed: the send that started it was cancelled".to_owned(),
            n = pipe.read(&mut buf), if !eof => match n {
                Ok(0) | Err(_) => eof = true,
                Ok(n) => shell.push(&buf[..n]),
            },
            status = child.wait() => break bash::describe(status.ok()).0,
        }
    };
    group.kill();
    let drain_until = tokio::time::Instant::now() + bash::DRAIN_AFTER_EXIT;
    while !eof {
        match tokio::time::timeout_at(drain_until, pipe.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => shell.push(&buf[..n]),
            _ => eof = true,
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
    shell.state.lock().unwrap_or_else(|p| p.into_inner()).end = Some(end);
    shell.ended.send_replace(true);
}

/// Runs a `bash_output` or `kill_shell` call (`name`) with raw JSON
/// `arguments`; every failure is an error output for the model.
pub async fn execute(name: &str, arguments: &str, ctx: &ToolContext) -> super::ToolOutput {
    let Some(shells) = ctx.shells.as_ref() else {
        return super::ToolOutput::error(format!("{name} is not offered in this session"));
    };
    let result = if name == KILL {
        match super::parse_args::<KillArgs>(arguments) {
            Ok(args) => shells.kill(args).await,
            Err(e) => Err(e),
        }
    } else {
        match super::parse_args::<OutputArgs>(arguments) {
            Ok(args) => shells.read(args, &ctx.cancel).await,
            Err(e) => Err(e),
        }
    };
    match result {
        Ok(text) => super::ToolOutput::ok(super::cap_output(text, ctx.result_cap)),
        Err(e) => super::ToolOutput::error(super::cap_output(e.to_string(), ctx.result_cap)),
    }
}
