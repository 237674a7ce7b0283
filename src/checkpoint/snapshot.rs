//! What a command did to the workspace's files: a stat walk before and
//! after it, and copies of the files as they were before it.
//!
//! Owns: [`Walk`] (the workspace's regular files as git would see them:
//! hidden files, `.git` and `.gitignore`d paths skipped, symlinks not
//! followed, at most [`MAX_FILES`]) with [`Walk::differences`] (created,
//! deleted, or changed in size, mtime, inode or mode), and [`Shadow`], a
//! session's private directory of copies, refreshed before each command
//! for the files whose stat changed since their copy. A copy is made
//! through `O_NOFOLLOW`, so a file swapped for a symlink is not followed
//! out of the workspace. The shadow holds at most the send bound's bytes;
//! what does not fit is not copied and, when the command changes it, is
//! recorded as not kept.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// How much a send keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Largest file kept, in bytes (default 8 MiB).
    pub max_file: u64,
    /// Most bytes kept per send, over its files (default 64 MiB).
    pub max_send: u64,
}

impl Default for Bounds {
    fn default() -> Bounds {
        Bounds { max_file: 8 << 20, max_send: 64 << 20 }
    }
}

/// Files walked at most; a workspace with more is walked in part (the
/// files past it are not checkpointed around commands).
pub const MAX_FILES: usize = 50_000;

/// What the walk saw of one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub len: u64,
    pub mtime_ns: i128,
    pub ino: u64,
    pub mode: u32,
}

impl Stat {
    fn of(m: &std::fs::Metadata) -> Stat {
        Stat {
            len: m.len(),
            mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
            ino: m.ino(),
            mode: m.mode() & 0o7777,
        }
    }
}

/// The workspace's files at one moment, by path relative to it.
#[derive(Debug)]
pub struct Walk {
    files: BTreeMap<PathBuf, Stat>,
    /// When the walk began (a file born after it was made since).
    pub started: std::time::SystemTime,
}

impl Walk {
    /// Walks `workspace`.
    pub fn take(workspace: &Path) -> Walk {
        let started = std::time::SystemTime::now();
        let mut files = BTreeMap::new();
        let walker =
            ignore::WalkBuilder::new(workspace).hidden(true).git_ignore(true).require_git(false).parents(false).build();
        for entry in walker.flatten() {
            if files.len() >= MAX_FILES {
                break;
            }
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let (Ok(rel), Ok(m)) = (entry.path().strip_prefix(workspace), entry.metadata()) else { continue };
            files.insert(rel.to_path_buf(), Stat::of(&m));
        }
        Walk { files, started }
    }

    /// What the walk saw of `rel`.
    pub fn get(&self, rel: &Path) -> Option<&Stat> {
        self.files.get(rel)
    }

    /// The paths created, deleted or changed between `self` and `later`.
    pub fn differences(&self, later: &Walk) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> =
            self.files.iter().filter(|(p, s)| later.files.get(*p) != Some(s)).map(|(p, _)| p.clone()).collect();
        out.extend(later.files.keys().filter(|p| !self.files.contains_key(*p)).cloned());
        out
    }
}

/// A session's copies of the workspace's files (a private temp directory,
/// removed with the session).
#[derive(Debug, Default)]
pub struct Shadow {
    dir: Option<tempfile::TempDir>,
    copies: BTreeMap<PathBuf, (Stat, PathBuf)>,
    bytes: u64,
    next: u64,
}

impl Shadow {
    /// Copies every file of `walk` whose copy is missing or stale, within
    /// `bounds` (files over `max_file` are skipped; copies stop at
    /// `max_send` bytes in all); drops copies of files gone.
    pub fn refresh(&mut self, workspace: &Path, walk: &Walk, bounds: &Bounds) {
        let gone: Vec<PathBuf> = self.copies.keys().filter(|p| !walk.files.contains_key(*p)).cloned().collect();
        for p in gone {
            self.drop_copy(&p);
        }
        for (rel, stat) in &walk.files {
            if self.copies.get(rel).is_some_and(|(s, _)| s == stat) {
                continue;
            }
            self.drop_copy(rel);
            if stat.len > bounds.max_file || self.bytes + stat.len > bounds.max_send {
                continue;
            }
            if self.dir.is_none() {
                self.dir = tempfile::Builder::new().prefix("pirn-checkpoint-").tempdir().ok();
            }
            let Some(dir) = &self.dir else { return };
            self.next += 1;
            let copy = dir.path().join(self.next.to_string());
            if copy_nofollow(&workspace.join(rel), &copy).is_ok() {
                self.bytes += stat.len;
                self.copies.insert(rel.clone(), (*stat, copy));
            }
        }
    }

    fn drop_copy(&mut self, rel: &Path) {
        if let Some((stat, path)) = self.copies.remove(rel) {
            self.bytes -= stat.len;
            let _ = std::fs::remove_file(path);
        }
    }

    /// The copy of `rel` as it was when the walk saw `stat`, if one was made.
    pub fn copy_of(&self, rel: &Path, stat: &Stat) -> Option<&Path> {
        self.copies.get(rel).filter(|(s, _)| s == stat).map(|(_, p)| p.as_path())
    }

    /// Why there is no copy of `rel` (for a `FileBefore::Unkept`).
    pub fn why_not(&self, _rel: &Path, stat: &Stat) -> String {
        format!("not copied before the command ({} bytes: over the checkpoint bounds, or unreadable)", stat.len)
    }
}

/// Copies `from` to `to` without following a symlink at `from`.
fn copy_nofollow(from: &Path, to: &Path) -> std::io::Result<()> {
    let mut src = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(from)?;
    let mut dst = std::fs::File::create(to)?;
    std::io::copy(&mut src, &mut dst)?;
    Ok(())
}
