//! `glob {pattern, path?}`: files matching a glob, newest first.
//!
//! Owns: the walk (`ignore::WalkBuilder`, parallel, `.gitignore` honoured
//! even outside a git repository, hidden files skipped unless the pattern
//! names a dot-file), matching with `globset` (`*` stops at `/`, `**`
//! crosses directories), sorting by mtime, the result cap.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use globset::GlobBuilder;
use ignore::{WalkBuilder, WalkState};
use schemars::JsonSchema;
use serde::Deserialize;

use super::context::ToolContext;
use super::error::{ToolError, failed};

/// Paths returned at most.
pub const MAX_RESULTS: usize = 1000;

/// Arguments as the model sends them (their schema is the tool's `parameters`).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Args {
    /// Glob relative to `path`, e.g. `**/*.rs`.
    pub pattern: String,
    /// Directory to search. Default: the workspace.
    #[serde(default)]
    pub path: Option<String>,
}

/// What the model is told the tool does.
pub const DESCRIPTION: &str = "Find files by glob pattern, newest first. `*` does not cross `/`; use `**/` to search subdirectories (e.g. `**/*.rs`, `src/**/mod.rs`). Honours .gitignore.";

/// Lists matches. Errors (to the model): bad pattern, path outside the
/// workspace or not a directory.
pub fn run(args: Args, ctx: &ToolContext) -> Result<String, ToolError> {
    let target = ctx.resolve(args.path.as_deref().filter(|p| !p.trim().is_empty()).unwrap_or("."))?;
    let root = target.path().to_path_buf();
    if !target.is_dir() {
        return failed(format!("{} is not a directory", ctx.display(&root)));
    }
    let mut pattern = args.pattern.trim().trim_start_matches("./");
    // `{path: "src", pattern: "src/**/*.py"}`: the model meant the pattern
    // from the workspace; taken relative to `path`, it would match nothing.
    let base = args
        .path
        .as_deref()
        .filter(|p| !p.trim().is_empty())
        .unwrap_or(".")
        .trim()
        .trim_start_matches("./")
        .trim_end_matches('/');
    if !base.is_empty()
        && base != "."
        && let Some(rest) = pattern.strip_prefix(base).and_then(|r| r.strip_prefix('/'))
    {
        pattern = rest;
    }
    let matcher = match GlobBuilder::new(pattern).literal_separator(true).build() {
        Ok(g) => g.compile_matcher(),
        Err(e) => return failed(format!("invalid glob pattern {pattern:?}: {e}")),
    };
    let wants_hidden = pattern.split('/').any(|part| part.starts_with('.') && part != "." && part != "..");
    let found: Mutex<Vec<(SystemTime, PathBuf)>> = Mutex::new(Vec::new());
    let cancelled = AtomicBool::new(false);
    WalkBuilder::new(&root).require_git(false).hidden(!wants_hidden).threads(walk_threads()).build_parallel().run(
        || {
            let matcher = &matcher;
            let found = &found;
            let cancelled = &cancelled;
            let root = &root;
            let cancel = ctx.cancel.clone();
            Box::new(move |entry| {
                if cancel.is_cancelled() {
                    cancelled.store(true, Ordering::Relaxed);
                    return WalkState::Quit;
                }
                let Ok(entry) = entry else {
                    return WalkState::Continue;
                };
                if !entry.file_type().is_some_and(|t| t.is_file() || t.is_symlink()) {
                    return WalkState::Continue;
                }
                // Links are not walked; one is listed only when the OS
                // resolves it to a file inside the workspace.
                if entry.path_is_symlink()
                    && !ctx.resolve(&entry.path().to_string_lossy()).is_ok_and(|t| t.path().is_file())
                {
                    return WalkState::Continue;
                }
                let Ok(rel) = entry.path().strip_prefix(root) else {
                    return WalkState::Continue;
                };
                if matcher.is_match(rel) {
                    let mtime = entry.metadata().ok().and_then(|m| m.modified().ok()).unwrap_or(SystemTime::UNIX_EPOCH);
                    if let Ok(mut f) = found.lock() {
                        f.push((mtime, entry.into_path()));
                    }
                }
                WalkState::Continue
            })
        },
    );
    if cancelled.load(Ordering::Relaxed) {
        return failed("cancelled");
    }
    let mut found = found.into_inner().unwrap_or_default();
    if found.is_empty() {
        let listing = ctx.nearby(&root.join("x"));
        return Ok(format!("no files match {pattern:?} under {}. {listing}", ctx.display(&root)));
    }
    // Newest first; ties (files unpacked together share an mtime) broken by
    // the path's bytes: Path's own ordering walks components and costs more
    // than the walk itself on a large tree.
    use std::os::unix::ffi::OsStrExt;
    found.sort_unstable_by(|a, b| {
        b.0.cmp(&a.0).then_with(|| a.1.as_os_str().as_bytes().cmp(b.1.as_os_str().as_bytes()))
    });
    let total = found.len();
    let mut out = String::new();
    for (_, p) in found.iter().take(MAX_RESULTS) {
        out.push_str(&ctx.display(p));
        out.push('\n');
    }
    if total > MAX_RESULTS {
        out.push_str(&format!(
            "[{total} files match; showing the {MAX_RESULTS} newest. Narrow the pattern or path.]\n"
        ));
    } else {
        // A small model miscounts a list it reads; the count is stated (as grep's is).
        out.push_str(&if total == 1 { "[1 file matches]\n".to_owned() } else { format!("[{total} files match]\n") });
    }
    Ok(out)
}

/// Walker threads: the machine's cores, at most 12 (ripgrep's choice).
pub(crate) fn walk_threads() -> usize {
    std::thread::available_parallelism().map(|n| n.get().min(12)).unwrap_or(2)
}
