//! What the model has seen of the workspace's files, kept with a durable
//! session.
//!
//! Owns: turning [`super::Conversation::read_files`] (absolute path → the
//! hash of the bytes the model last read or wrote, kept by the file tools;
//! see `ToolContext::read_files`) into a log's `seen` entry and back.
//! Without it a resumed session would count every file as unread, and a
//! file changed while no process held the session as seen by nobody:
//! `write_file` refuses both the same way, so the model reads again
//! either way, but an entry keeps a stale view refused rather than
//! unread. Claude Code rebuilds the same record on `--resume` from the
//! files its transcript read.
//!
//! The entry is written at the end of a send that changed the set (the
//! whole set, paths relative to the workspace, hashes as 16 hex digits);
//! a resume takes the last one. A fork, or a resume cut back to an earlier
//! message, starts with no views: what the model had seen at that message
//! is not recorded.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::store::FileSeen;

/// The `seen` entry for `read_files` under `workspace` (canonical, as
/// `SessionConfig::workspace` is, like the tools' paths), sorted by path,
/// or `None` when it equals `last` (what was last logged). Files outside
/// the workspace are left out.
pub(super) fn entry(read_files: &HashMap<PathBuf, u64>, workspace: &Path, last: &[FileSeen]) -> Option<Vec<FileSeen>> {
    let mut files: Vec<FileSeen> = read_files
        .iter()
        .filter_map(|(path, hash)| {
            let rel = path.strip_prefix(workspace).ok()?;
            Some(FileSeen { path: rel.to_str()?.to_owned(), hash: format!("{hash:016x}") })
        })
        .collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    (files != last).then_some(files)
}

/// `files` (a `seen` entry) as absolute paths under `workspace`
/// (canonical) with their hashes; an entry whose hash is not 16 hex
/// digits, or whose path leaves the workspace, is skipped.
pub(super) fn restore(files: &[FileSeen], workspace: &Path) -> HashMap<PathBuf, u64> {
    files
        .iter()
        .filter(|f| Path::new(&f.path).components().all(|c| matches!(c, std::path::Component::Normal(_))))
        .filter_map(|f| Some((workspace.join(&f.path), u64::from_str_radix(&f.hash, 16).ok()?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_go_to_an_entry_and_back_and_an_unchanged_set_is_not_logged_again() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let mut seen = HashMap::new();
        seen.insert(root.join("src/app.py"), 0x0123_4567_89ab_cdef_u64);
        seen.insert(root.join("a.txt"), 7);
        seen.insert(PathBuf::from("/elsewhere/b.txt"), 9);
        let files = entry(&seen, &root, &[]).unwrap();
        let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["a.txt", "src/app.py"], "sorted, outside left out");
        assert_eq!(files[1].hash, "0123456789abcdef");
        assert!(entry(&seen, &root, &files).is_none(), "the same set again is not logged");
        seen.remove(&PathBuf::from("/elsewhere/b.txt"));
        assert_eq!(restore(&files, &root), seen);

        let bad = [
            FileSeen { path: "../x".into(), hash: "0000000000000001".into() },
            FileSeen { path: "/etc/passwd".into(), hash: "0000000000000001".into() },
            FileSeen { path: "y".into(), hash: "not hex".into() },
        ];
        assert!(restore(&bad, &root).is_empty(), "a log never names a file outside the workspace");
    }
}
