//! Project instruction files: `AGENTS.md` (or, where a directory has none,
//! `CLAUDE.md`) in every directory from the git root down to the
//! workspace, after the user's own `$PIRN_HOME/AGENTS.md`.
//!
//! Owns: finding and reading them ([`load`]) and the text appended to the
//! system prompt after the base prompt (so the prompt's prefix stays the
//! same across workspaces and the server's prompt cache keeps it).
//!
//! Trust: the repository is not trusted. Each file is opened through
//! cap-std beneath its own directory (`openat2(RESOLVE_BENEATH)` on Linux,
//! as the file tools resolve paths), so a symlinked `AGENTS.md` pointing
//! anywhere outside that directory is not read; only regular files are.
//! What a file says is prompt text only: it cannot change the sandbox, the
//! approval mode, the permission rules or the tool set, which are fixed
//! from `init` before it is read.
//!
//! Bound: [`MAX_BYTES`] in all. The file that crosses it is cut there (on
//! a character boundary) with a line saying so; the files after it are
//! left out, and a log line names them.

use std::io::Read;
use std::path::{Path, PathBuf};

/// The most bytes of instruction text appended, over all files (32 KiB,
/// as Codex bounds its project docs).
pub const MAX_BYTES: usize = 32 * 1024;

/// The names looked for in each directory, in order; the first found wins.
pub const NAMES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// What [`load`] found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Instructions {
    /// The files read, in the order appended (absolute paths).
    pub files: Vec<PathBuf>,
    /// The text to append to the system prompt (empty when none).
    pub text: String,
}

/// Reads the instruction files of `workspace` (a canonical directory):
/// `user_dir`'s `AGENTS.md` first when given, then each directory from the
/// git root (the nearest ancestor holding `.git`; the workspace itself when
/// none does) down to the workspace, when `project`.
pub fn load(workspace: &Path, user_dir: Option<&Path>, project: bool) -> Instructions {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(u) = user_dir {
        dirs.push(u.to_owned());
    }
    if project {
        let root = workspace.ancestors().find(|a| a.join(".git").exists()).unwrap_or(workspace);
        let mut chain: Vec<PathBuf> =
            workspace.ancestors().take_while(|a| a.starts_with(root)).map(Path::to_path_buf).collect();
        chain.reverse();
        dirs.extend(chain);
    }
    let mut out = Instructions::default();
    let mut budget = MAX_BYTES;
    for (i, dir) in dirs.iter().enumerate() {
        let user = user_dir.is_some() && i == 0;
        let names: &[&str] = if user { &NAMES[..1] } else { &NAMES };
        let Some((name, bytes)) = names.iter().find_map(|n| read_beneath(dir, n, budget).map(|b| (*n, b))) else {
            continue;
        };
        if budget == 0 {
            tracing::warn!(file = %dir.join(name).display(), "instruction file left out: the {MAX_BYTES}-byte bound is spent");
            continue;
        }
        let (text, cut) = clip(&bytes, budget);
        budget -= text.len();
        let path = dir.join(name);
        let label = if user { "your own instructions".to_owned() } else { label(&path, workspace) };
        out.text.push_str(&format!("\n\n# Instructions from {label}\n\n{}", text.trim_end()));
        if cut {
            out.text.push_str(&format!("\n\n[pirn: cut here at the {MAX_BYTES}-byte bound of instruction files]"));
            budget = 0;
        }
        out.files.push(path);
    }
    out
}

/// How a file is named in the prompt: relative to the workspace when
/// inside it, else its path.
fn label(path: &Path, workspace: &Path) -> String {
    path.strip_prefix(workspace).map_or_else(|_| path.display().to_string(), |r| r.display().to_string())
}

/// Reads at most `max + 1` bytes of regular file `name` beneath `dir`,
/// resolved by the OS without leaving `dir`; `None` when there is none
/// (or it is not a regular file, or it leaves `dir`).
fn read_beneath(dir: &Path, name: &str, max: usize) -> Option<Vec<u8>> {
    let root = cap_std::fs::Dir::open_ambient_dir(dir, cap_std::ambient_authority()).ok()?;
    let file = root.open(name).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.into_std().take(max as u64 + 1).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// `bytes` as text of at most `max` bytes (cut on a character boundary);
/// whether it was cut.
fn clip(bytes: &[u8], max: usize) -> (String, bool) {
    let text = String::from_utf8_lossy(bytes);
    if text.len() <= max {
        return (text.into_owned(), false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (text[..end].to_owned(), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_md_from_the_git_root_down_then_claude_md_where_absent() {
        let repo = tempfile::tempdir().unwrap();
        let root = repo.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("AGENTS.md"), "root rules\n").unwrap();
        std::fs::write(root.join("CLAUDE.md"), "not read: AGENTS.md is here\n").unwrap();
        std::fs::write(root.join("a/CLAUDE.md"), "a rules\n").unwrap();
        std::fs::write(root.join("a/b/AGENTS.md"), "b rules\n").unwrap();
        let got = load(&root.join("a/b"), None, true);
        assert_eq!(got.files, [root.join("AGENTS.md"), root.join("a/CLAUDE.md"), root.join("a/b/AGENTS.md")]);
        let (r, a, b) = (
            got.text.find("root rules").unwrap(),
            got.text.find("a rules").unwrap(),
            got.text.find("b rules").unwrap(),
        );
        assert!(r < a && a < b, "{}", got.text);
        assert!(!got.text.contains("not read"));
    }

    #[test]
    fn a_symlink_leaving_its_directory_is_not_read() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.md"), "outside text\n").unwrap();
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path().canonicalize().unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.md"), ws.join("AGENTS.md")).unwrap();
        let got = load(&ws, None, true);
        assert_eq!(got, Instructions::default());
    }

    #[test]
    fn past_the_bound_a_file_is_cut_and_the_rest_left_out() {
        let user = tempfile::tempdir().unwrap();
        std::fs::write(user.path().join("AGENTS.md"), "é".repeat(MAX_BYTES)).unwrap();
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path().canonicalize().unwrap();
        std::fs::write(ws.join("AGENTS.md"), "project rules\n").unwrap();
        let got = load(&ws, Some(user.path()), true);
        assert_eq!(got.files.len(), 1, "{:?}", got.files);
        assert!(got.text.contains("cut here"));
        assert!(!got.text.contains("project rules"));
        assert!(got.text.len() < MAX_BYTES + 200);
    }
}
