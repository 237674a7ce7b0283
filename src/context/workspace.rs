//! The workspace listing: the files a model is shown before its first tool
//! call, so it does not guess paths.
//!
//! A small model that has never looked at the repository invents the paths
//! of the projects it was trained on (`src/main.rs`, `src/lib.rs`) and
//! answers from them; the eval's lookup tasks failed that way. One short
//! list of the real files, given at the first send as pirn's note right
//! before the request, removes the guess; a larger workspace gets its top
//! level and file count instead. It is not in the system prompt, so a
//! server's prompt cache keeps the system prompt and the tool specs (which
//! a template puts after it) from one session to the next; and not after
//! the request (the 1.5B model then failed the read-only eval questions).
//! Big models lose nothing: the list is capped at [`MAX_LISTED`] paths (a
//! few hundred tokens).
//!
//! Owns: the walk (`ignore::WalkBuilder`, `.gitignore` honoured even outside
//! a git repository, hidden files and [`SKIPPED_DIRS`] left out, at most
//! [`MAX_VISITED`] entries looked at, so a huge tree costs milliseconds),
//! the choice of what to show and its text.

use std::path::Path;

use ignore::WalkBuilder;

/// Paths shown at most.
pub const MAX_LISTED: usize = 60;
/// Directory entries looked at at most.
pub const MAX_VISITED: usize = 5_000;
/// Directories never listed (build output and dependencies, usually ignored
/// by `.gitignore`, but not in every workspace).
pub const SKIPPED_DIRS: &[&str] = &["node_modules", "target", "__pycache__", "dist", "build", "vendor"];

/// The listing given before the first request: the workspace path and, when
/// it holds at most [`MAX_LISTED`] files, all of them relative to it, one
/// per line, sorted. A larger workspace is shown by its top-level entries
/// (directories with a `/`) and its file count: a partial file list reads
/// as the whole one to a small model, which then picks the nearest listed
/// file instead of looking. An empty workspace says so.
pub fn listing(workspace: &Path) -> String {
    let mut files: Vec<String> = Vec::new();
    let mut top: Vec<String> = Vec::new();
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
        let Ok(rel) = entry.path().strip_prefix(workspace) else { continue };
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        if entry.depth() == 1 && top.len() < MAX_LISTED {
            top.push(format!("{}{}", rel.to_string_lossy(), if is_dir { "/" } else { "" }));
        }
        if entry.file_type().is_some_and(|t| t.is_file()) {
            files.push(rel.to_string_lossy().into_owned());
        }
    }
    let mut text = format!("\n\nThe workspace is {}.", workspace.display());
    if files.is_empty() {
        text.push_str(" It has no files yet.");
        return text;
    }
    if files.len() <= MAX_LISTED && !truncated {
        text.push_str(" Its files (paths relative to it):\n");
        text.push_str(&files.join("\n"));
    } else {
        let count = if truncated { format!("over {}", files.len()) } else { files.len().to_string() };
        text.push_str(&format!(
            " It holds {count} files; use glob or grep to find the ones you need. Its top level:\n{}",
            top.join("\n")
        ));
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
        assert!(text.ends_with("\nconfig.py\nsrc/net/protocol.py"), "{text}");
        assert!(!text.contains("index.js") && !text.contains(".env"), "{text}");

        for i in 0..MAX_LISTED + 5 {
            std::fs::write(root.join(format!("src/net/m{i:03}.py")), "").unwrap();
        }
        let text = listing(root);
        assert!(text.contains("It holds 67 files"), "{text}");
        assert!(text.ends_with("Its top level:\nconfig.py\nsrc/"), "{text}");
    }

    #[test]
    fn an_empty_workspace_says_so() {
        let dir = tempfile::tempdir().unwrap();
        assert!(listing(dir.path()).ends_with("It has no files yet."));
    }
}
