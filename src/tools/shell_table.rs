//! The session's table of background shells ([`Shells`]), below the
//! [`ToolContext`](super::context::ToolContext) that holds it: each
//! shell's command, its unread output (at most [`UNREAD_BYTES`] per shell;
//! what falls out is counted, never kept), how it ended, and the switch
//! that kills it. A shell dies by `kill_shell`, by a cancel of the send
//! that started it, when the table is dropped (the end of the session), by
//! pirn's own death (the supervisor, see [`super::supervisor`]) and, as for
//! a foreground command, with the end of its shell. At most
//! [`MAX_RUNNING`] run at once in a session. Starting and following a
//! command is `bash`'s ([`super::bash`]); the tools that read and kill one
//! are [`super::shells`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::error::{ToolError, failed};

/// Background shells that may run at once in one session.
pub const MAX_RUNNING: usize = 8;
/// Unread output kept per shell, in bytes (the newest; older is dropped and counted).
pub const UNREAD_BYTES: usize = 1024 * 1024;
/// Ended shells kept for a last read (the oldest go first).
const KEPT_ENDED: usize = 16;
/// Longest `wait_ms`.
pub const MAX_WAIT_MS: u64 = 600_000;

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

/// One background command as the table keeps it.
pub struct Shell {
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
    /// Keeps `bytes` of the command's output, unread.
    pub fn push(&self, bytes: &[u8]) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.unread.extend(bytes);
        let over = s.unread.len().saturating_sub(UNREAD_BYTES);
        if over > 0 {
            s.unread.drain(..over);
            s.dropped += over as u64;
        }
    }

    /// Resolves when the shell is to die: `kill_shell`, or the table dropped.
    pub fn killed(&self) -> tokio_util::sync::WaitForCancellationFuture<'_> {
        self.kill.cancelled()
    }

    /// Records how the command ended (once its output was read to the end).
    pub fn end(&self, end: String) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).end = Some(end);
        self.ended.send_replace(true);
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

    /// Starts `command` in the background with `spawn` and hands what it
    /// started to `follow` with the new shell, and returns the text for the
    /// model: the shell id and how to read it. Fails when [`MAX_RUNNING`]
    /// run already (then `spawn` is not called) or `spawn` fails.
    pub fn start<S>(
        &self,
        command: &str,
        spawn: impl FnOnce() -> Result<S, String>,
        follow: impl FnOnce(Arc<Shell>, S),
    ) -> Result<String, ToolError> {
        let mut t = self.lock();
        let running = t.shells.iter().filter(|(_, s)| s.running()).count();
        if running >= MAX_RUNNING {
            return failed(format!(
                "not started: {running} background commands run already (at most {MAX_RUNNING}); stop one with kill_shell first"
            ));
        }
        let started = spawn().map_err(ToolError::Failed)?;
        t.next += 1;
        let id = format!("shell_{}", t.next);
        let shell = Arc::new(Shell {
            command: command.to_owned(),
            kill: CancellationToken::new(),
            state: Mutex::default(),
            ended: tokio::sync::watch::Sender::new(false),
        });
        follow(shell.clone(), started);
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

    /// `bash_output`: the output of shell `shell_id` since the last read
    /// and the shell's state. Waits up to `wait_ms` for the command to end
    /// (cancel-aware).
    pub async fn read(
        &self,
        shell_id: &str,
        wait_ms: Option<u64>,
        cancel: &CancellationToken,
    ) -> Result<String, ToolError> {
        let shell = self.get(shell_id)?;
        let wait = Duration::from_millis(wait_ms.unwrap_or(0).min(MAX_WAIT_MS));
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
        let id = shell_id.trim();
        match end {
            None => text.push_str(&format!("[{id} is still running: {}]\n", shell.command)),
            Some(end) => text.push_str(&format!("[{id} ended: {end}]\n")),
        }
        Ok(text)
    }

    /// `kill_shell`: kills shell `shell_id`'s process group and waits (a
    /// moment) for its task to see it.
    pub async fn kill(&self, shell_id: &str) -> Result<String, ToolError> {
        let shell = self.get(shell_id)?;
        let id = shell_id.trim();
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
