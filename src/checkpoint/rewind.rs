//! Putting the workspace back to how it was before a send.
//!
//! Owns: [`plan`] (from a session's log: for every file the sends from the
//! named one on changed, what it was before the first of them changed it,
//! and what the last of them left in it) and [`apply`] (check every file
//! first, then restore). The rules:
//! - The send is named by its id; when a session reused an id, the latest
//!   send with it is meant. Sends already rewound (a `rewind` entry) are
//!   spent and not counted.
//! - Nothing is written unless every file can be put back: a file whose
//!   state before was not kept ([`FileBefore::Unkept`]), or whose bytes
//!   now are not what the last send left in it (someone changed it since),
//!   refuses the whole rewind with the list. A send killed before its end
//!   left no `left` entry; its files are not held against the disk.
//! - Every path resolves beneath the workspace by the OS
//!   (`tools::confine`), as the file tools' do; a file restored gets its
//!   bytes and mode back, a file that did not exist is deleted. Directories
//!   a send created are left (empty ones included).

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::store::{Body, FileBefore, Stored};

/// One file a rewind put back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Restored {
    /// Relative to the workspace.
    pub path: String,
    /// `restored` (its bytes and mode put back) or `deleted` (it did not
    /// exist before the send).
    pub action: String,
}

/// Why a rewind did nothing.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RewindError {
    #[error("no send {0:?} with checkpoints to rewind in this session (or it was rewound already)")]
    NoSuchSend(String),
    #[error("nothing was restored: the state before the send was not kept for {}", .0.join(", "))]
    Unkept(Vec<String>),
    #[error("nothing was restored: changed since the send left them: {}", .0.join(", "))]
    ChangedSince(Vec<String>),
    #[error("nothing was restored: {0}")]
    Io(String),
}

/// What [`apply`] will do: each file and the state it goes back to.
#[derive(Debug, Clone, PartialEq)]
pub struct RewindPlan {
    /// The `seq` of the send's `send` entry (for the `rewind` entry).
    pub to_seq: u64,
    /// path → (state before, what the last send left: `Some(None)` no
    /// file, `None` not known).
    pub files: BTreeMap<String, (FileBefore, Option<Option<String>>)>,
}

#[derive(Default)]
struct SendLog<'a> {
    seq: u64,
    id: &'a str,
    before: Vec<(&'a str, &'a FileBefore)>,
    left: Option<BTreeMap<&'a str, Option<&'a str>>>,
}

/// The plan of a rewind to before send `send_id`, from a session's log.
///
/// Errors: no such send (or it has no checkpoint and no send after it has).
pub fn plan(entries: &[Stored], send_id: &str) -> Result<RewindPlan, RewindError> {
    let mut sends: Vec<SendLog> = Vec::new();
    let mut gaps = Vec::new();
    for e in entries {
        match &e.body {
            Body::Send { send_id, .. } => sends.push(SendLog { seq: e.seq, id: send_id, ..SendLog::default() }),
            Body::Checkpoint { send_id, path, before } => {
                if let Some(s) = sends.last_mut().filter(|s| s.id == send_id) {
                    s.before.push((path, before));
                }
            }
            Body::Left { send_id, files } => {
                if let Some(s) = sends.last_mut().filter(|s| s.id == send_id) {
                    s.left = Some(files.iter().map(|f| (f.path.as_str(), f.hash.as_deref())).collect());
                }
            }
            Body::Rewind { to_seq, .. } => sends.retain(|s| s.seq < *to_seq),
            // Entries lost while the store failed: what a send after this
            // point changed is not known whole.
            Body::Gap { .. } => gaps.push(e.seq),
            _ => {}
        }
    }
    let Some(start) = sends.iter().rposition(|s| s.id == send_id) else {
        return Err(RewindError::NoSuchSend(send_id.to_owned()));
    };
    if gaps.iter().any(|g| *g > sends[start].seq) {
        return Err(RewindError::Io("the session's log lost entries after that send (a gap): not rewound".into()));
    }
    let mut files: BTreeMap<String, (FileBefore, Option<Option<String>>)> = BTreeMap::new();
    for s in &sends[start..] {
        for (path, before) in &s.before {
            let left = s.left.as_ref().map(|l| l.get(path).copied().flatten().map(str::to_owned));
            files
                .entry((*path).to_owned())
                .and_modify(|(_, last)| *last = left.clone())
                .or_insert_with(|| ((*before).clone(), left.clone()));
        }
    }
    if files.is_empty() {
        return Err(RewindError::NoSuchSend(send_id.to_owned()));
    }
    Ok(RewindPlan { to_seq: sends[start].seq, files })
}

/// Restores `plan` in `workspace` (canonical): checks every file, then
/// writes (`dry_run`: checks only, and says what it would do). Returns
/// each file put back, in path order.
///
/// Errors: see the module doc; on any error nothing was written (an I/O
/// failure midway is reported with the files restored before it).
pub fn apply(plan: &RewindPlan, workspace: &Path, dry_run: bool) -> Result<Vec<Restored>, RewindError> {
    let mut unkept = Vec::new();
    let mut changed = Vec::new();
    let mut targets = BTreeMap::new();
    for (path, (before, left)) in &plan.files {
        if matches!(before, FileBefore::Unkept { .. }) {
            unkept.push(path.clone());
        }
        // Resolved beneath the workspace before anything is written: a
        // path that now leads out of it (a directory swapped for a
        // symlink) refuses the whole rewind.
        let target = crate::tools::confine::resolve(path, workspace, &[])
            .map_err(|e| RewindError::Io(format!("{path}: {e} (nothing was restored)")))?;
        // What is at the path itself (a symlink is not followed, a FIFO not
        // waited on): anything but a regular file or nothing is refused,
        // so a restore never acts on a link's target.
        let now = super::hash_file(&workspace.join(path));
        let odd = now.as_deref() == Some(super::NOT_A_FILE);
        if odd || left.as_ref().is_some_and(|left| *left != now) {
            changed.push(path.clone());
        }
        let bytes = match before {
            FileBefore::File { data, .. } => Some(
                base64::engine::general_purpose::STANDARD
                    .decode(data)
                    .map_err(|e| RewindError::Io(format!("{path}: the kept content is not base64: {e}")))?,
            ),
            _ => None,
        };
        targets.insert(path.as_str(), (target, bytes));
    }
    if !unkept.is_empty() {
        return Err(RewindError::Unkept(unkept));
    }
    if !changed.is_empty() {
        return Err(RewindError::ChangedSince(changed));
    }
    let mut done = Vec::new();
    for (path, (before, _)) in &plan.files {
        if dry_run {
            let action = if matches!(before, FileBefore::Absent) { "deleted" } else { "restored" };
            done.push(Restored { path: path.clone(), action: action.to_owned() });
            continue;
        }
        let Some((target, bytes)) = targets.get(path.as_str()) else { continue };
        let io = |e: std::io::Error| RewindError::Io(format!("{path}: {e} (restored before it: {})", names(&done)));
        let action = match before {
            FileBefore::File { mode, .. } => {
                target.write_atomic(bytes.as_deref().unwrap_or_default()).map_err(io)?;
                target.set_mode(*mode).map_err(io)?;
                "restored"
            }
            FileBefore::Absent => {
                if target.exists() {
                    target.remove_file().map_err(io)?;
                }
                "deleted"
            }
            FileBefore::Unkept { .. } => continue,
        };
        done.push(Restored { path: path.clone(), action: action.to_owned() });
    }
    Ok(done)
}

fn names(done: &[Restored]) -> String {
    if done.is_empty() {
        "none".to_owned()
    } else {
        done.iter().map(|r| r.path.as_str()).collect::<Vec<_>>().join(", ")
    }
}
