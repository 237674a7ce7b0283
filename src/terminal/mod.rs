//! Terminals served next to the agent by `pirn serve --terminals`: muti's
//! shell WebSocket ([`shell`]) and ACECode's console PTYs ([`console`]).
//!
//! A terminal runs what its user types **without** the agent's approval
//! gate, so terminals are off unless the daemon is started with
//! `--terminals`, and they answer loopback peers only: the console always
//! (as ACECode does), the shell unless `--terminals-remote` is given too
//! (which, off loopback, the daemon's token already guards).
//!
//! Owns: the terminal options ([`TerminalOptions`]), the table of live
//! terminals with its session limit ([`Terminals`], [`ShellSlot`]), and the
//! daemon-stop kill of every terminal process. Processes themselves live in
//! [`process`]; the HTTP and WebSocket sides in `transport::http::facades::{shell,
//! console}`.

pub mod backlog;
pub mod console;
pub mod leader;
pub mod process;
pub mod shell;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use process::Killer;

/// How `pirn serve` runs terminals (its `--terminals` and `--shell-*` flags).
#[derive(Debug, Clone)]
pub struct TerminalOptions {
    /// Serve muti's shell off loopback too (the daemon's token still applies).
    pub remote: bool,
    /// Commands a shell may run, compared exactly with META's `command`.
    pub allow: Vec<String>,
    /// Password every shell META must carry (compared in constant time).
    pub password: Option<String>,
    /// Most shells open at once.
    pub max_shells: usize,
    /// Shell timeout when META gives none.
    pub default_timeout: Duration,
    /// Longest timeout META may ask for (longer asks are cut to it).
    pub max_timeout: Duration,
    /// Directories a shell's `work_dir` may be in, besides its session's
    /// workspace and allowed paths (canonical).
    pub allowed_paths: Vec<PathBuf>,
    /// Program a console runs (ACECode's `console.shell`; default `$SHELL`).
    pub console_shell: String,
    /// The daemon's variables terminals get beyond the allowlist
    /// (`--env-passthrough`).
    pub env_passthrough: Vec<String>,
}

impl TerminalOptions {
    /// The default allowlist: `bash`, `sh` and `$SHELL`.
    pub fn default_allow() -> Vec<String> {
        let mut allow = vec!["bash".to_owned(), "sh".to_owned()];
        if let Ok(shell) = std::env::var("SHELL")
            && !shell.is_empty()
            && !allow.contains(&shell)
        {
            allow.push(shell);
        }
        allow
    }

    /// `$SHELL`, else `/bin/bash` when present, else `/bin/sh`.
    pub fn default_console_shell() -> String {
        match std::env::var("SHELL") {
            Ok(s) if !s.is_empty() => s,
            _ if std::path::Path::new("/bin/bash").exists() => "/bin/bash".to_owned(),
            _ => "/bin/sh".to_owned(),
        }
    }
}

/// The daemon's live terminals; see the module doc.
pub struct Terminals {
    pub options: TerminalOptions,
    pub consoles: console::Consoles,
    shells: Mutex<HashMap<u64, Option<Killer>>>,
    next_shell: AtomicU64,
}

impl Terminals {
    pub fn new(options: TerminalOptions) -> Arc<Terminals> {
        Arc::new(Terminals {
            options,
            consoles: console::Consoles::default(),
            shells: Mutex::new(HashMap::new()),
            next_shell: AtomicU64::new(1),
        })
    }

    /// Takes one of the `max_shells` places, or `None` when all are taken.
    pub fn claim_shell(self: &Arc<Self>) -> Option<ShellSlot> {
        let mut shells = self.shells.lock().unwrap_or_else(|p| p.into_inner());
        if shells.len() >= self.options.max_shells {
            return None;
        }
        let id = self.next_shell.fetch_add(1, Ordering::Relaxed);
        shells.insert(id, None);
        Some(ShellSlot { terminals: self.clone(), id })
    }

    /// Shells open now.
    pub fn shells_open(&self) -> usize {
        self.shells.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Kills every terminal process (the daemon is stopping).
    pub fn kill_all(&self) {
        for killer in self.shells.lock().unwrap_or_else(|p| p.into_inner()).values().flatten() {
            killer.kill();
        }
        self.consoles.kill_all();
    }
}

/// One shell's place in [`Terminals`]; dropping it frees the place.
pub struct ShellSlot {
    terminals: Arc<Terminals>,
    id: u64,
}

impl ShellSlot {
    /// Registers the shell's process, so a daemon stop kills it.
    pub fn hold(&self, killer: Killer) {
        let mut shells = self.terminals.shells.lock().unwrap_or_else(|p| p.into_inner());
        shells.insert(self.id, Some(killer));
    }
}

impl Drop for ShellSlot {
    fn drop(&mut self) {
        self.terminals.shells.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.id);
    }
}
