//! File checkpoints: what each file was before a send changed it, kept in
//! the session's log, so the workspace can be put back ([`rewind`]).
//!
//! Owns: [`SendCheckpoint`] (the record of one send: before a file tool
//! writes a file, and around each command the model runs, the state of
//! every file about to change or that changed is written to the session's
//! log as a `checkpoint` entry, once per file and send; at the end a
//! `left` entry says what the send left in each), the [`Bounds`] on what
//! is kept, and [`hash_hex`]. It is the file tools' [`FileWatch`]: they
//! know the trait, not this module.
//!
//! What is caught: `write_file`, `edit_file` and file blocks exactly (the
//! tools call [`SendCheckpoint::note_write`] before they write), and
//! what a command (`bash`) did to the files of the workspace that git
//! would see (hidden and `.gitignore`d files are not walked): a stat walk
//! before and after the command finds the files created, changed (bytes
//! or mode) or deleted, and their content before comes from copies kept
//! by [`snapshot::Shadow`]. Renames are a deletion and a creation. MCP
//! tools' effects, files outside the workspace and directories themselves
//! are not caught.
//!
//! Bounds: a file over [`Bounds::max_file`] bytes, or one that would take
//! a send's kept bytes over [`Bounds::max_send`], is recorded as
//! [`FileBefore::Unkept`] (the send's result lists it under
//! `checkpoint.unkept`, and a rewind across it refuses): nothing is lost
//! silently.

pub mod rewind;
pub mod snapshot;

pub use snapshot::Bounds;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use base64::Engine;

use crate::store::{Body, FileBefore, FileLeft, Journal};
use crate::tools::FileWatch;

/// [`crate::tools::content_hash`] (64-bit FNV-1a, stable across builds
/// and machines) as 16 lower-case hex digits: how a checkpoint names content.
pub fn hash_hex(bytes: &[u8]) -> String {
    format!("{:016x}", crate::tools::content_hash(bytes))
}

/// What a send kept, for its result (`result.checkpoint`, 0.3.0).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Kept {
    /// Files whose state before the send is kept.
    pub files: u32,
    /// Bytes of their content kept.
    pub bytes: u64,
    /// Workspace-relative paths the send changed whose state before was
    /// not kept (over the bounds, unreadable): a rewind cannot restore them.
    pub unkept: Vec<String>,
}

#[derive(Debug, Default)]
struct WatchState {
    seen: HashSet<PathBuf>,
    kept: Kept,
}

/// The checkpoint record of one send (shared by its tools).
#[derive(Debug)]
pub struct SendCheckpoint {
    send_id: String,
    workspace: PathBuf,
    journal: Journal,
    bounds: Bounds,
    state: Mutex<WatchState>,
    /// The session's copies of the workspace's files, for commands.
    shadow: Arc<Mutex<snapshot::Shadow>>,
    /// The walk taken before the command running now.
    before_command: Mutex<Option<snapshot::Walk>>,
}

impl SendCheckpoint {
    /// The record of send `send_id` in `workspace` (canonical), written to
    /// `journal`; `shadow` is the session's.
    pub fn new(
        send_id: &str,
        workspace: PathBuf,
        journal: Journal,
        bounds: Bounds,
        shadow: Arc<Mutex<snapshot::Shadow>>,
    ) -> SendCheckpoint {
        SendCheckpoint {
            send_id: send_id.to_owned(),
            workspace,
            journal,
            bounds,
            state: Mutex::default(),
            shadow,
            before_command: Mutex::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, WatchState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `path` relative to the workspace; `None` outside it (an allowed
    /// path: not checkpointed).
    fn relative<'p>(&self, path: &'p Path) -> Option<&'p Path> {
        path.strip_prefix(&self.workspace).ok().filter(|r| !r.as_os_str().is_empty())
    }

    /// Called before a file tool writes `path` (absolute, resolved beneath
    /// the workspace): the first time in the send, what it is now goes to
    /// the log.
    pub fn note_write(&self, path: &Path) {
        let Some(rel) = self.relative(path) else { return };
        if self.state().seen.contains(rel) {
            return;
        }
        let before = match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => FileBefore::Absent,
            Err(e) => FileBefore::Unkept { reason: format!("cannot read it: {e}") },
            Ok(m) if !m.is_file() => FileBefore::Unkept { reason: "not a regular file".into() },
            Ok(m) => self.keep(m.len(), || std::fs::read(path).map(|b| (b, mode_of(&m)))),
        };
        self.record(rel, before);
    }

    /// `bytes` (read by `read`) as a [`FileBefore::File`], or `Unkept` when
    /// over the bounds or unreadable.
    fn keep(&self, len: u64, read: impl FnOnce() -> std::io::Result<(Vec<u8>, u32)>) -> FileBefore {
        let kept = self.state().kept.bytes;
        if len > self.bounds.max_file {
            return FileBefore::Unkept {
                reason: format!("{len} bytes, over the {} byte file bound", self.bounds.max_file),
            };
        }
        if kept + len > self.bounds.max_send {
            return FileBefore::Unkept { reason: format!("the send's {} byte bound is spent", self.bounds.max_send) };
        }
        match read() {
            Ok((bytes, mode)) => file_before(&bytes, mode),
            Err(e) => FileBefore::Unkept { reason: format!("cannot read it: {e}") },
        }
    }

    fn record(&self, rel: &Path, before: FileBefore) {
        let shown = rel.to_string_lossy().into_owned();
        {
            let mut s = self.state();
            if !s.seen.insert(rel.to_path_buf()) {
                return;
            }
            match &before {
                FileBefore::File { data, .. } => {
                    s.kept.files += 1;
                    let pad = data.bytes().rev().take_while(|b| *b == b'=').count() as u64;
                    s.kept.bytes += (data.len() as u64 / 4) * 3 - pad;
                }
                FileBefore::Absent => s.kept.files += 1,
                FileBefore::Unkept { .. } => s.kept.unkept.push(shown.clone()),
            }
        }
        self.journal.record(Body::Checkpoint { send_id: self.send_id.clone(), path: shown, before });
    }

    /// Called before a command runs: walks the workspace and keeps copies
    /// of its files (see [`snapshot::Shadow`]).
    pub fn note_command_start(&self) {
        let walk = snapshot::Walk::take(&self.workspace);
        self.shadow.lock().unwrap_or_else(|p| p.into_inner()).refresh(&self.workspace, &walk, &self.bounds);
        *self.before_command.lock().unwrap_or_else(|p| p.into_inner()) = Some(walk);
    }

    /// Called after a command ended: every file it created, changed or
    /// deleted is recorded as it was before the command (the first time in
    /// the send).
    pub fn note_command_end(&self) {
        let Some(before) = self.before_command.lock().unwrap_or_else(|p| p.into_inner()).take() else { return };
        let after = snapshot::Walk::take(&self.workspace);
        for rel in before.differences(&after) {
            if self.state().seen.contains(&rel) {
                continue;
            }
            let state = match before.get(&rel) {
                // New to the walk: created by the command, or there before
                // and not walked then (a `.gitignore` the command changed,
                // the walk's file bound): only a file born after the walk
                // began is taken as created, so a rewind never deletes one
                // that was there.
                None if born_after(&self.workspace.join(&rel), before.started) => FileBefore::Absent,
                None => FileBefore::Unkept { reason: "it was not walked before the command (ignored then?)".into() },
                Some(stat) => {
                    let shadow = self.shadow.lock().unwrap_or_else(|p| p.into_inner());
                    match shadow.copy_of(&rel, stat) {
                        Some(path) => self.keep(stat.len, || std::fs::read(path).map(|b| (b, stat.mode))),
                        None => FileBefore::Unkept { reason: shadow.why_not(&rel, stat) },
                    }
                }
            };
            self.record(&rel, state);
        }
    }

    /// Ends the send's record: a `left` entry with what the send left in
    /// each file it recorded. Returns what was kept (`None` when nothing).
    pub fn finish(&self) -> Option<Kept> {
        // A command cut off by a cancel or a timeout ended all the same.
        self.note_command_end();
        let (paths, kept) = {
            let s = self.state();
            let mut paths: Vec<PathBuf> = s.seen.iter().cloned().collect();
            paths.sort();
            (paths, s.kept.clone())
        };
        if paths.is_empty() {
            return None;
        }
        let files = paths
            .iter()
            .map(|rel| FileLeft {
                path: rel.to_string_lossy().into_owned(),
                hash: hash_file(&self.workspace.join(rel)),
            })
            .collect();
        self.journal.record(Body::Left { send_id: self.send_id.clone(), files });
        Some(kept)
    }
}

impl FileWatch for SendCheckpoint {
    fn before_write(&self, path: &Path) {
        self.note_write(path);
    }
    fn before_command(&self) {
        self.note_command_start();
    }
    fn after_command(&self) {
        self.note_command_end();
    }
}

/// The [`hash_hex`] of the regular file at `path`, read in pieces without
/// following a symlink or waiting on a FIFO; `None` when there is none;
/// `Some("not-a-regular-file")` for anything else at the path (a link, a
/// directory, a device), which no kept state matches.
pub fn hash_file(path: &Path) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f =
        match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(_) => return Some(NOT_A_FILE.to_owned()),
        };
    if !f.metadata().is_ok_and(|m| m.is_file()) {
        return Some(NOT_A_FILE.to_owned());
    }
    let mut h = 0xcbf2_9ce4_8422_2325_u64;
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => h = buf[..n].iter().fold(h, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)),
            Err(_) => return Some(NOT_A_FILE.to_owned()),
        }
    }
    Some(format!("{h:016x}"))
}

/// What [`hash_file`] gives for a path that holds no regular file.
pub const NOT_A_FILE: &str = "not-a-regular-file";

/// True when the inode at `path` changed status (was created, renamed,
/// written or chmod-ed) at or after `since`, less a second for the
/// kernel's coarse file clock: a file the command made or moved into
/// place. (Its status-change time, not its birth time: a rename keeps the
/// birth time of a file the command only moved.)
fn born_after(path: &Path, since: std::time::SystemTime) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(m) = std::fs::symlink_metadata(path) else { return false };
    let (Ok(secs), Ok(nanos)) = (u64::try_from(m.ctime()), u32::try_from(m.ctime_nsec())) else { return false };
    let changed = std::time::UNIX_EPOCH + std::time::Duration::new(secs, nanos);
    changed + std::time::Duration::from_secs(1) >= since
}

/// A regular file's permission bits.
pub fn mode_of(m: &std::fs::Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o7777
}

/// The `file` state of `bytes` with `mode`.
pub fn file_before(bytes: &[u8], mode: u32) -> FileBefore {
    FileBefore::File { mode, data: base64::engine::general_purpose::STANDARD.encode(bytes), hash: hash_hex(bytes) }
}
