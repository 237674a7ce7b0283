//! The workspace listing: the files a model is shown before its first tool
//! call, so it does not guess paths.
//!
//! A small model that has never looked at the repository invents the paths
//! of the projects it was trained on (`src/main.rs`, `src/lib.rs`) and
//! answers from them; the eval's lookup tasks failed that way. One short
//! list of the real files, added to the system prompt at the first send,
//! removes the guess. Big models lose nothing: the list is capped at
//! [`MAX_LISTED`] paths (a few hundred tokens).
//!
//! Owns: the walk (`ignore::WalkBuilder`, `.gitignore` honoured even outside
//! a git repository, hidden files and [`SKIPPED_DIRS`] left out, at most
//! [`MAX_VISITED`] entries looked at, so a huge tree costs milliseconds),
//! the choice of what to show (shallowest paths first) and its text.

use std::path::Path;

use ignore::WalkBuilder;

/// Paths shown at most.
pub const MAX_LISTED: usize = 60;
/// Directory entries looked at at most.
pub const MAX_VISITED: usize = 5_000;
/// Directories never listed (build output and dependencies, usually ignored
/// by `.gitignore`, but not in every workspace).
pub const SKIPPED_DIRS: &[&str] = &["node_modules", "target", "__pycache__", "dist", "build", "vendor"];

/// The listing appended to the system prompt: the workspace path and up to
/// [`MAX_LISTED`] files relative to it, one per line, sorted; the shallowest
/// files win when there are more (the rest are counted, not named). An
/// empty workspace says so.
pub fn listing(workspace: &Path) -> String {
    let mut files: Vec<String> = Vec::new();
    let mut visited = 0usize;
    let mut truncated = false;
    let walk = WalkBuilder::new(workspace)
        .require_git(false)
        .hidden(true)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|e| !(e.depth() > 0 && SKIPPED_DIRS.iter().any(|d| e.file_name() == *d)))
        .build();
    for entry in walk.flatten() {
        visited += 1;
        if visited > MAX_VISITED {
            truncated = true;
            break;
        }
        if entry.file_type().is_some_and(|t| t.is_file())
            && let Ok(rel) = entry.path().strip_prefix(workspace)
        {
            files.push(rel.to_string_lossy().into_owned());
        }
    }
    let total = files.len();
    if total > MAX_LISTED {
        files.sort_by_key(|f| (f.matches('/').count(), f.clone()));
        files.truncate(MAX_LISTED);
        files.sort();
    }
    let mut text = format!("\n\nThe workspace is {}.", workspace.display());
    if files.is_empty() {
        text.push_str(" It has no files yet.");
        return text;
    }
    text.push_str(" Its files (paths relative to it):\n");
    for f in &files {
        text.push_str(f);
        text.push('\n');
    }
    if total > files.len() || truncated {
        let more = if truncated { "more".to_owned() } else { format!("{} more", total - files.len()) };
        text.push_str(&format!("… and {more} files: use glob or grep to find them.\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_files_skips_dependencies_and_caps() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/net")).unwrap();
        std::fs::create_dir_all(root.join("node_modules/x")).unwrap();
        std::fs::write(root.join("src/net/protocol.py"), "").unwrap();
        std::fs::write(root.join("config.py"), "").unwrap();
        std::fs::write(root.join("node_modules/x/index.js"), "").unwrap();
        std::fs::write(root.join(".env"), "").unwrap();
        let text = listing(root);
        assert!(text.contains("\nconfig.py\nsrc/net/protocol.py\n"), "{text}");
        assert!(!text.contains("index.js") && !text.contains(".env"), "{text}");

        for i in 0..MAX_LISTED + 5 {
            std::fs::write(root.join(format!("src/net/m{i:03}.py")), "").unwrap();
        }
        let text = listing(root);
        assert!(text.contains("\nconfig.py\n"), "the shallow file stays: {text}");
        assert_eq!(text.lines().filter(|l| l.ends_with(".py")).count(), MAX_LISTED);
        assert!(text.contains("… and 7 more files"), "{text}");
    }

    #[test]
    fn an_empty_workspace_says_so() {
        let dir = tempfile::tempdir().unwrap();
        assert!(listing(dir.path()).ends_with("It has no files yet."));
    }
}
