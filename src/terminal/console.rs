//! ACECode's console PTYs (`../shared/reference/acecode-daemon-api.md`,
//! section 7): shells on a PTY that outlive their WebSockets.
//!
//! Owns: the table of consoles (ids `pty-` and 32 random hex digits, kept
//! in creation order; at most
//! [`MAX_CONSOLES`]), each console's output [`Backlog`] fed by a pump task,
//! its title and status, and the change signal readers wait on. A console
//! lives until its shell exits *and* it is deleted, or until the daemon
//! stops; an exited console stays listed (with its `exit_code`) until then.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::wire::http::console::ConsoleInfo;
use bytes::Bytes;
use tokio::sync::watch;

use super::backlog::{BACKLOG_BYTES, Backlog};
use super::process::{Events, InputError, Process, ProcessEvent, ProcessOutput, Spec, TerminalMode};

/// Consoles at once (ACECode's limit; exited ones count until deleted).
pub const MAX_CONSOLES: usize = 16;
/// Longest title kept (bytes, cut at a character boundary).
pub const MAX_TITLE: usize = 200;
/// The PTY backend, as `/api/health` and session info name it.
pub const BACKEND: &str = "posix";

/// Why a console was not created.
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    #[error("console limit reached ({MAX_CONSOLES} sessions)")]
    Limit,
    #[error("cwd {0:?} is not an existing directory")]
    Cwd(PathBuf),
    #[error(transparent)]
    Spawn(#[from] super::process::SpawnError),
}

/// The daemon's consoles.
#[derive(Default)]
pub struct Consoles {
    map: Mutex<BTreeMap<u64, Arc<Console>>>,
    next: AtomicU64,
}

impl Consoles {
    /// Starts `shell` on a new 24×80 PTY in `cwd`. Errors: [`ConsoleError`].
    /// `passthrough` names the daemon's variables the shell gets beyond the
    /// allowlist. The console's id is random (122 bits): knowing one id
    /// tells nothing of another.
    pub fn create(
        &self,
        shell: &str,
        cwd: &Path,
        title: Option<&str>,
        passthrough: &[String],
    ) -> Result<Arc<Console>, ConsoleError> {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= MAX_CONSOLES {
            return Err(ConsoleError::Limit);
        }
        let cwd = cwd.canonicalize().ok().filter(|c| c.is_dir()).ok_or_else(|| ConsoleError::Cwd(cwd.into()))?;
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let spec = Spec {
            program: shell.to_owned(),
            args: Vec::new(),
            env: vec![("TERM".into(), "xterm-256color".into())],
            passthrough: passthrough.to_vec(),
            cwd: cwd.clone(),
            mode: TerminalMode::Tty { rows: 24, cols: 80 },
        };
        let (process, output) = Process::spawn(&spec)?;
        let title = title.map(clean_title).filter(|t| !t.is_empty()).unwrap_or_else(|| format!("Terminal {n}"));
        let (changed, _) = watch::channel(());
        let console = Arc::new(Console {
            id: format!("pty-{}", uuid::Uuid::new_v4().simple()),
            shell: shell.to_owned(),
            cwd,
            process,
            title: Mutex::new(title),
            state: Mutex::new(ConsoleState { backlog: Backlog::new(BACKLOG_BYTES), exit_code: None }),
            changed,
        });
        tokio::spawn(pump(console.clone(), output));
        map.insert(n, console.clone());
        Ok(console)
    }

    /// The console named `id`.
    pub fn get(&self, id: &str) -> Option<Arc<Console>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner()).values().find(|c| c.id == id).cloned()
    }

    /// Every console, oldest first.
    pub fn list(&self) -> Vec<Arc<Console>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner()).values().cloned().collect()
    }

    /// Removes `id` and kills its shell; false when there is no such console.
    pub fn delete(&self, id: &str) -> bool {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        let Some(n) = map.iter().find(|(_, c)| c.id == id).map(|(n, _)| *n) else { return false };
        let removed = map.remove(&n);
        drop(map);
        removed.inspect(|c| c.process.kill()).is_some()
    }

    /// Kills every console's shell (the daemon is stopping).
    pub fn kill_all(&self) {
        for c in self.list() {
            c.process.kill();
        }
    }
}

/// One console; see the module doc.
pub struct Console {
    pub id: String,
    pub shell: String,
    pub cwd: PathBuf,
    process: Process,
    title: Mutex<String>,
    state: Mutex<ConsoleState>,
    changed: watch::Sender<()>,
}

struct ConsoleState {
    backlog: Backlog,
    /// Set once the shell has exited and all its output is in the backlog.
    exit_code: Option<i32>,
}

/// What a reader gets: bytes from its cursor, where they end, and the exit
/// code once the console has finished and the reader has caught up.
#[derive(Debug)]
pub struct Chunk {
    pub bytes: Vec<u8>,
    pub cursor: u64,
    pub exit_code: Option<i32>,
}

impl Console {
    /// Session info, as ACECode shows it (`exit_code` only once exited).
    pub fn info(&self) -> ConsoleInfo {
        let exit_code = self.state.lock().unwrap_or_else(|p| p.into_inner()).exit_code;
        ConsoleInfo {
            id: self.id.clone(),
            title: self.title.lock().unwrap_or_else(|p| p.into_inner()).clone(),
            shell: self.shell.clone(),
            cwd: self.cwd.to_string_lossy().into_owned(),
            status: if exit_code.is_some() { "exited" } else { "running" }.to_owned(),
            pid: self.process.pid(),
            backend: BACKEND.to_owned(),
            exit_code,
        }
    }

    /// Sets the title; blank titles are ignored, long ones cut to
    /// [`MAX_TITLE`] bytes.
    pub fn set_title(&self, title: &str) {
        let title = clean_title(title);
        if !title.is_empty() {
            *self.title.lock().unwrap_or_else(|p| p.into_inner()) = title;
        }
    }

    /// Keyboard bytes for the shell.
    pub fn input(&self, bytes: Bytes) -> Result<(), InputError> {
        self.process.write(bytes)
    }

    pub fn resize(&self, rows: u16, cols: u16) {
        self.process.resize(rows, cols);
    }

    /// The next bytes from `cursor` (at most `max`); a cursor older than the
    /// backlog reads from its start, one past its end from the end.
    pub fn read(&self, cursor: u64, max: usize) -> Chunk {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (bytes, cursor) = state.backlog.read(cursor, max);
        let exit_code = state.exit_code.filter(|_| cursor == state.backlog.end());
        Chunk { bytes, cursor, exit_code }
    }

    /// Where the output ends now.
    pub fn end(&self) -> u64 {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).backlog.end()
    }

    /// A receiver that wakes on new output or the exit.
    pub fn subscribe(&self) -> watch::Receiver<()> {
        self.changed.subscribe()
    }
}

/// Moves the shell's output into the backlog, then records its exit.
async fn pump(console: Arc<Console>, mut events: Events) {
    while let Some(event) = events.next().await {
        let mut state = console.state.lock().unwrap_or_else(|p| p.into_inner());
        match event {
            ProcessEvent::Output(ProcessOutput::Stdout(b) | ProcessOutput::Stderr(b)) => state.backlog.push(&b),
            ProcessEvent::Exit(code) => state.exit_code = Some(code),
        }
        drop(state);
        console.changed.send_replace(());
    }
}

/// Trims and cuts a title to [`MAX_TITLE`] bytes at a character boundary.
fn clean_title(title: &str) -> String {
    let title = title.trim();
    let mut end = title.len().min(MAX_TITLE);
    while !title.is_char_boundary(end) {
        end -= 1;
    }
    title[..end].to_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn titles_are_cut_at_char_boundaries() {
        assert_eq!(super::clean_title("  x  "), "x");
        let long = "é".repeat(150);
        let cut = super::clean_title(&long);
        assert_eq!((cut.len(), cut.chars().count()), (200, 100));
    }
}
