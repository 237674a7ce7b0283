//! [`ToolContext`]: what every tool call may use (the workspace and the
//! extra roots it may reach, cancellation, the result cap, the sandbox and
//! environment `bash` gets, the client's file system), and the per-session
//! and per-send records the file tools share: files seen (and as what), rewrites held
//! back, files written and whether they parsed before (which of them parse
//! no more is [`super::parse_notes`]'), and running file work off the async
//! threads ([`ToolContext::off_thread`]).

use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

use super::cap::MAX_RESULT_BYTES;
use super::confine::{self, PathError};
use super::output::content_hash;
use super::{client_files, syntax};

/// Whether `write_file` may replace an existing file
/// ([`ToolContext::may_overwrite`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overwrite {
    /// Yes: the model has seen the file as it is (or it does not exist).
    Allowed,
    /// No: the model has not read the file in this session.
    Unread,
    /// No: the file's bytes changed since the model last read or wrote it.
    ChangedSinceRead,
}

/// What every tool call may use.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// Canonical workspace root: file tools stay under it.
    pub workspace: PathBuf,
    /// Canonical extra roots the file tools may reach.
    pub allowed_paths: Vec<PathBuf>,
    /// Cancelled when the send is cancelled; long tools poll it.
    pub cancel: CancellationToken,
    /// Most bytes of one result ([`MAX_RESULT_BYTES`], less on a small
    /// context window).
    pub result_cap: usize,
    /// What the model has seen of each file in this session: the
    /// [`content_hash`] of its bytes when a file tool last read it, showed
    /// it or wrote it. When set, `write_file` refuses to replace an existing
    /// file the model never saw, or one whose bytes changed since (a
    /// command, a hook, the user): a whole-file write from an old view would
    /// undo that change unseen ([`ToolContext::may_overwrite`]).
    pub read_files: Option<std::sync::Arc<std::sync::Mutex<std::collections::HashMap<PathBuf, u64>>>>,
    /// Files whose rewrite `write_file` already held back once in this send
    /// (see `write_file::MOSTLY_DROPPED`).
    pub warned: std::sync::Arc<std::sync::Mutex<std::collections::HashSet<PathBuf>>>,
    /// The sandbox `bash` runs under (see [`crate::sandbox`]).
    pub sandbox: std::sync::Arc<crate::sandbox::Sandbox>,
    /// Names of pirn's environment variables that `bash` also gets, beyond
    /// [`crate::sandbox::BASE_ENV`].
    pub env_passthrough: std::sync::Arc<[String]>,
    /// Files `write_file` or `edit_file` went to change in this send, each
    /// as it was before the first such call (see [`FirstWrite`]).
    pub written: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<PathBuf, FirstWrite>>>,
    /// The client's file system, when the transport's client offers one
    /// (see [`client_files`]); file tools read and write text through it.
    pub client_files: Option<std::sync::Arc<dyn client_files::ClientFiles>>,
    /// The whole-file edit format's file in the chat (`file_block_target`,
    /// as the model names it): when set, `write_file` creates new files and
    /// writes this one, and refuses to overwrite any other existing file
    /// (the model was shown only this one; on the Exercism tune sample it
    /// otherwise rewrote the test files it was never shown).
    pub chat_file: Option<String>,
    /// The help the file tools give beyond exact edits and writes (a
    /// profile's switches); all off by default.
    pub help: WriteHelp,
    /// Told before each write to disk and around each command (a send's
    /// file checkpoints, see [`FileWatch`]). `None`: nobody watches.
    pub checkpoint: Option<std::sync::Arc<dyn FileWatch>>,
    /// Where `bash` sends its output while it runs (see [`super::live`]);
    /// `None`: nobody watches.
    pub live: Option<tokio::sync::mpsc::Sender<super::live::OutputDelta>>,
    /// The session's background shells (`bash` `run_in_background`, see
    /// [`super::shells`] and [`super::shell_table`]); `None`: not offered.
    pub shells: Option<std::sync::Arc<super::shell_table::Shells>>,
}

/// What wants to know before the file tools change the workspace (the
/// session's file checkpoints): called before a write to disk lands and
/// around each command. Implementations must not fail the call.
pub trait FileWatch: Send + Sync + std::fmt::Debug {
    /// `path` (absolute, beneath the workspace) is about to be written.
    fn before_write(&self, path: &Path);
    /// A command is about to run (blocking work is allowed: this runs on
    /// the blocking pool).
    fn before_command(&self);
    /// The command ended.
    fn after_command(&self);
}

/// What the file tools do beyond exact edits and writes, for models that
/// need it (the switches of a profile, see `config::profile`). All off by
/// default: an edit replaces exactly `old_string` or fails, a write lands
/// as sent, and a result says only what the call did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteHelp {
    /// `edit_file`'s tolerant tiers (see `edit_tolerant`).
    pub tolerant_edits: bool,
    /// A rewrite that removes most of a file is held back once, and the
    /// refusal of a write over an unread file is a hold too (`write_file`).
    pub hold_large_writes: bool,
    /// A written file that no longer parses is named in the result
    /// ([`super::parse_notes::after_write`]).
    pub parse_notes: bool,
    /// Uses of a renamed or removed name are listed in the result (`references::still_used`).
    pub reference_notes: bool,
}

/// A file as it was before a send's first `write_file` or `edit_file` call on it.
#[derive(Debug, Clone)]
pub struct FirstWrite {
    /// It parsed then (or is of a kind [`syntax::problem`] does not know,
    /// or the profile does not check parsing: [`WriteHelp::parse_notes`]).
    pub parsed: bool,
    /// Its text then (at most [`super::read_file::MAX_FILE_BYTES`]: what the
    /// writing tools read); `None` for a file the send created.
    pub text: Option<String>,
}

impl ToolContext {
    /// A context with the default result cap ([`MAX_RESULT_BYTES`]), the
    /// default `workspace-write` sandbox and no extra environment.
    pub fn new(workspace: PathBuf, allowed_paths: Vec<PathBuf>, cancel: CancellationToken) -> ToolContext {
        let sandbox =
            crate::sandbox::Sandbox::new(crate::sandbox::SandboxMode::WorkspaceWrite, true, &workspace, &allowed_paths);
        ToolContext {
            sandbox: std::sync::Arc::new(sandbox),
            env_passthrough: std::sync::Arc::from(Vec::new()),
            workspace,
            allowed_paths,
            cancel,
            result_cap: MAX_RESULT_BYTES,
            read_files: None,
            warned: Default::default(),
            written: Default::default(),
            client_files: None,
            chat_file: None,
            help: WriteHelp::default(),
            checkpoint: None,
            live: None,
            shells: None,
        }
    }

    /// `target`'s text, at most `max` bytes ([`client_files::read_text`]).
    pub fn read_text(&self, target: &confine::Confined, max: u64) -> std::io::Result<String> {
        client_files::read_text(self.client_files.as_deref(), target, max)
    }

    /// The bytes of `target`, unchecked and unbounded ([`client_files::read_bytes`]).
    pub fn read_bytes(&self, target: &confine::Confined) -> std::io::Result<Vec<u8>> {
        client_files::read_bytes(self.client_files.as_deref(), target)
    }

    /// Writes `text` to `target` ([`client_files::write_text`]).
    pub fn write_text(&self, target: &confine::Confined, text: &str) -> std::io::Result<()> {
        let on_disk = self.client_files.as_ref().is_none_or(|c| !c.writes());
        if let Some(cp) = self.checkpoint.as_ref().filter(|_| on_disk) {
            cp.before_write(target.path());
        }
        // The model knows what it wrote, but only on top of what it saw: an
        // edit of a file changed since leaves that change unseen.
        let as_seen = self.seen_as_is(target);
        client_files::write_text(self.client_files.as_deref(), target, text)?;
        if as_seen {
            self.seen(target.path(), text.as_bytes());
        }
        Ok(())
    }

    /// Records that `path` is about to change; `before` is its text (none
    /// for a new file). Only the first change of a send is kept.
    pub fn note_write(&self, path: &Path, before: Option<&str>) {
        let mut written = self.written.lock().unwrap_or_else(|p| p.into_inner());
        if !written.contains_key(path) {
            // Parsed only where the profile checks it (`parse_notes`).
            let parsed = !self.help.parse_notes || before.is_none_or(|text| syntax::problem(path, text).is_none());
            written.insert(path.to_path_buf(), FirstWrite { parsed, text: before.map(str::to_owned) });
        }
    }

    /// True when `path` held `needle` before this send's first
    /// `write_file` or `edit_file` call on it: a later call of the send
    /// that finds `needle` gone finds the send's own change.
    pub fn held_before(&self, path: &Path, needle: &str) -> bool {
        let written = self.written.lock().unwrap_or_else(|p| p.into_inner());
        written.get(path).and_then(|w| w.text.as_deref()).is_some_and(|text| text.contains(needle))
    }

    /// The files other than `except` that this send went to change and
    /// that held `needle` before its first such call on them, sorted: where
    /// the send's own earlier change may have made an edit already.
    pub fn changed_from(&self, except: &Path, needle: &str) -> Vec<PathBuf> {
        let written = self.written.lock().unwrap_or_else(|p| p.into_inner());
        let mut paths: Vec<PathBuf> = written
            .iter()
            .filter(|(p, w)| p.as_path() != except && w.text.as_deref().is_some_and(|t| t.contains(needle)))
            .map(|(p, _)| p.clone())
            .collect();
        paths.sort();
        paths
    }

    /// Records that the model has seen `target` as it is now (read, or shown
    /// whole in a result): its current bytes' hash, read through
    /// [`ToolContext::read_bytes`]. A file that cannot be read is left as it
    /// was.
    pub fn mark_read(&self, target: &confine::Confined) {
        if self.read_files.is_some()
            && let Ok(bytes) = self.read_bytes(target)
        {
            self.seen(target.path(), &bytes);
        }
    }

    /// Records `target` as seen unless the model has a view of it already:
    /// an edit of a file never read counts as reading it (the model knew
    /// its text), but must not make a file changed since look as seen.
    pub fn mark_read_unless_seen(&self, target: &confine::Confined) {
        let known = self
            .read_files
            .as_ref()
            .is_some_and(|map| map.lock().unwrap_or_else(|p| p.into_inner()).contains_key(target.path()));
        if !known {
            self.mark_read(target);
        }
    }

    /// True unless the model has a view of `target` and its bytes are no
    /// longer those (false too when nothing records views).
    fn seen_as_is(&self, target: &confine::Confined) -> bool {
        let Some(map) = &self.read_files else { return false };
        let Some(seen) = map.lock().unwrap_or_else(|p| p.into_inner()).get(target.path()).copied() else {
            return true;
        };
        self.read_bytes(target).map_or(true, |bytes| content_hash(&bytes) == seen)
    }

    /// Records that the model has seen `path` holding `bytes`.
    fn seen(&self, path: &Path, bytes: &[u8]) {
        if let Some(map) = &self.read_files {
            map.lock().unwrap_or_else(|p| p.into_inner()).insert(path.to_path_buf(), content_hash(bytes));
        }
    }

    /// True the first time it is asked about `path` (see [`ToolContext::warned`]).
    pub fn warn_once(&self, path: &Path) -> bool {
        self.warned.lock().unwrap_or_else(|p| p.into_inner()).insert(path.to_path_buf())
    }

    /// Whether `write_file` may replace `target` (see
    /// [`ToolContext::read_files`]): always when nothing records reads or
    /// the file does not exist; else only when the model has seen the file
    /// and its bytes are still those it saw (compared by hash, so a file
    /// rewritten with the same bytes, or only touched, still counts as seen).
    pub fn may_overwrite(&self, target: &confine::Confined) -> Overwrite {
        let Some(map) = &self.read_files else { return Overwrite::Allowed };
        if !target.path().is_file() {
            return Overwrite::Allowed;
        }
        let Some(seen) = map.lock().unwrap_or_else(|p| p.into_inner()).get(target.path()).copied() else {
            return Overwrite::Unread;
        };
        match self.read_bytes(target) {
            Ok(bytes) if content_hash(&bytes) != seen => Overwrite::ChangedSinceRead,
            _ => Overwrite::Allowed,
        }
    }

    /// For a path that does not exist: what its nearest existing directory
    /// holds (at most 20 names), so the model can pick a real path.
    pub fn nearby(&self, path: &Path) -> String {
        let mut dir = path.parent();
        while let Some(d) = dir {
            if d.is_dir() && (d.starts_with(&self.workspace) || self.is_allowed(d)) {
                let mut names: Vec<String> = std::fs::read_dir(d)
                    .map(|rd| {
                        rd.filter_map(|e| e.ok())
                            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                            .map(|e| {
                                let name = e.file_name().to_string_lossy().into_owned();
                                if e.path().is_dir() { format!("{name}/") } else { name }
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                names.sort();
                let more = names.len().saturating_sub(20);
                names.truncate(20);
                let tail = if more > 0 { format!(" and {more} more") } else { String::new() };
                let shown = self.display(d);
                return if names.is_empty() {
                    format!("{shown} is empty")
                } else {
                    format!("{shown} contains: {}{tail}", names.join(", "))
                };
            }
            dir = d.parent();
        }
        String::new()
    }

    /// Resolves a model-given path beneath the workspace or an allowed
    /// path, by the OS (see [`confine`]): every existing component is
    /// looked up with symlinks followed only while they stay inside.
    ///
    /// Errors (for the model): empty path, a path that leaves the
    /// workspace (with the location named), a dangling link.
    pub fn resolve(&self, raw: &str) -> Result<confine::Confined, PathError> {
        confine::resolve(raw, &self.workspace, &self.allowed_paths)
    }

    fn is_allowed(&self, p: &Path) -> bool {
        p.starts_with(&self.workspace) || self.allowed_paths.iter().any(|a| p.starts_with(a))
    }

    /// The path as shown to the model: relative to the workspace when inside.
    pub fn display(&self, p: &Path) -> String {
        match p.strip_prefix(&self.workspace) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => p.display().to_string(),
        }
    }

    /// Runs `f`, which may read files through the context, from async
    /// code: directly when files come from disk, on tokio's blocking pool
    /// when they come from the client (whose answers `f` waits for, and
    /// whose connection the current async thread must keep serving).
    pub async fn off_thread<T: Send + 'static>(&self, f: impl FnOnce(&ToolContext) -> T + Send + 'static) -> T {
        if self.client_files.is_none() {
            return f(self);
        }
        let ctx = self.clone();
        match tokio::task::spawn_blocking(move || f(&ctx)).await {
            Ok(v) => v,
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use tokio_util::sync::CancellationToken;

    use super::*;

    fn ctx(dir: &Path) -> ToolContext {
        ToolContext::new(dir.canonicalize().unwrap(), vec![], CancellationToken::new())
    }

    #[test]
    fn resolve_confines_to_workspace() {
        let tmp = std::env::temp_dir().join(format!("pirn-resolve-{}", std::process::id()));
        std::fs::create_dir_all(tmp.join("sub")).unwrap();
        let c = ctx(&tmp);
        assert!(c.resolve("sub/new.txt").is_ok());
        assert!(c.resolve("sub/../../etc/passwd").is_err());
        assert!(c.resolve("/etc/passwd").is_err());
        std::os::unix::fs::symlink("/etc", tmp.join("link")).unwrap();
        assert!(c.resolve("link/passwd").is_err());
        std::os::unix::fs::symlink("/nonexistent-pirn/x", tmp.join("dangling")).unwrap();
        assert!(c.resolve("dangling").is_err());
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
