//! A git worktree per session: isolation for many workers on one
//! repository.
//!
//! Owns: making a worktree for a session that asks for one
//! (`init.config.worktree`, `pirn run --worktree`), what its results say
//! about it ([`Worktree::report`]), removing it at the end when the caller
//! asked for that and nothing changed, and the listing and removal behind
//! `pirn sessions worktrees` / `worktree-rm`.
//!
//! Where: `$PIRN_HOME/worktrees/<repo>-<hash>/<name>`, outside any tree an
//! operator works in (`<repo>` is the repository's directory name, `<hash>`
//! eight hex digits of its path), on a new branch `pirn/<name>` from the
//! repository's `HEAD`; beside it, `<name>.json` records the session, the
//! repository, the branch, the base commit and the pid that made it (what
//! the listing reads after a worker was killed). The session's workspace is
//! the same directory inside the worktree as it was inside the repository.
//!
//! Git is driven through the `git` CLI (`git worktree add -b`, `status`,
//! `diff --shortstat`, `worktree remove`), never by writing `.git` files.
//! `git worktree add` run by several processes at once on one repository
//! can fail (it reads the others' half-made admin directories), so pirn's
//! workers take turns on a lock file beside their worktrees
//! (`.add.lock`), for the `add` only.
//!
//! Trust: the repository's config may have been written by the model
//! (`.git` is inside the workspace), so no program it names runs on pirn's
//! account: hooks are off (`core.hooksPath=/dev/null`), and so are
//! `core.fsmonitor`, the global attributes file, every filter driver's
//! smudge, clean and process commands and every diff driver's textconv and
//! command ([`neutral`]; `diff` runs with `--no-ext-diff --no-textconv`);
//! git gets the children's allowlisted environment (no keys).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

/// A session's worktree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Worktree {
    pub name: String,
    /// The worktree's root.
    pub path: PathBuf,
    /// The repository's root (the main working tree).
    pub repo: PathBuf,
    /// `pirn/<name>`.
    pub branch: String,
    /// The commit the branch started from.
    pub base: String,
    /// The session that made it.
    pub session_id: String,
    /// The process that made it.
    pub pid: u32,
}

/// Why a worktree cannot be made or removed.
#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    #[error("{0} is not inside a git repository (a worktree needs one)")]
    NotARepository(PathBuf),
    #[error("worktree name {0:?}: use 1 to 64 of A-Z a-z 0-9 . _ - (not starting with . or -)")]
    BadName(String),
    #[error("git {args}: {message}")]
    Git { args: String, message: String },
    #[error("{0}")]
    Io(String),
}

/// Runs `git` with `args` in `dir`, with no program of the repository's
/// (see [`neutral`]) and the children's allowlisted environment; stdout.
fn git(dir: &Path, args: &[&str]) -> Result<String, WorktreeError> {
    let overrides = neutral(dir);
    git_raw(dir, &overrides, args)
}

fn git_raw(dir: &Path, overrides: &[String], args: &[&str]) -> Result<String, WorktreeError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.attributesFile=/dev/null"])
        .args(overrides.iter().flat_map(|o| ["-c", o.as_str()]))
        .args(args)
        .env_clear()
        .envs(crate::sandbox::child_env(&[]))
        .output()
        .map_err(|e| WorktreeError::Git { args: args.join(" "), message: format!("cannot run git: {e}") })?;
    if !out.status.success() {
        let message = String::from_utf8_lossy(&out.stderr).trim().to_owned();
        return Err(WorktreeError::Git { args: args.join(" "), message });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `-c` overrides that empty every program the repository's config names
/// for a checkout or a diff: `filter.<driver>.smudge|clean|process` (and
/// `required` off, so an emptied driver passes the bytes through) and
/// `diff.<driver>.textconv|command`. The config is only read for this
/// (`git config --get-regexp`, which runs nothing); the model can write
/// `.git/config`, so what it names is never run on pirn's account.
fn neutral(dir: &Path) -> Vec<String> {
    let listed = git_raw(
        dir,
        &[],
        &[
            "config",
            "--name-only",
            "--get-regexp",
            r"^(filter|diff)\..*\.(smudge|clean|process|required|textconv|command)$",
        ],
    )
    .unwrap_or_default();
    listed
        .lines()
        .map(|key| if key.ends_with(".required") { format!("{key}=false") } else { format!("{key}=") })
        .collect()
}

/// Checks a worktree name.
pub fn check_name(name: &str) -> Result<(), WorktreeError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with(['.', '-'])
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok { Ok(()) } else { Err(WorktreeError::BadName(name.to_owned())) }
}

/// The directory of `repo`'s worktrees under `home`.
pub fn repo_dir(home: &Path, repo: &Path) -> PathBuf {
    let base = repo.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "repo".into());
    let hash = crate::tools::content_hash(repo.as_os_str().as_encoded_bytes());
    home.join("worktrees").join(format!("{base}-{:08x}", hash as u32))
}

/// Makes a worktree named `name` (a fresh `pirn-<8 hex>` when `None`) of
/// the repository holding `cwd` (canonical), for session `session_id`.
/// Returns it and the session's workspace inside it (`cwd`'s place).
///
/// Errors: `cwd` is in no repository, the repository has no commit, the
/// name is bad or taken, git fails.
pub fn create(
    home: &Path,
    cwd: &Path,
    name: Option<&str>,
    session_id: &str,
) -> Result<(Worktree, PathBuf), WorktreeError> {
    let name = match name {
        Some(n) => n.to_owned(),
        None => format!("pirn-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]),
    };
    check_name(&name)?;
    let top = git(cwd, &["rev-parse", "--show-toplevel"]).map_err(|_| WorktreeError::NotARepository(cwd.into()))?;
    let repo = PathBuf::from(top.trim());
    let inside = cwd.strip_prefix(&repo).unwrap_or(Path::new("")).to_path_buf();
    let base = git(&repo, &["rev-parse", "--verify", "HEAD^{commit}"])?.trim().to_owned();
    let dir = repo_dir(home, &repo);
    std::fs::create_dir_all(&dir).map_err(|e| WorktreeError::Io(format!("create {}: {e}", dir.display())))?;
    let path = dir.join(&name);
    let branch = format!("pirn/{name}");
    let target = path.to_string_lossy().into_owned();
    // Workers started together on one repository: git's `worktree add`
    // reads the other worktrees' admin directories while it makes its own,
    // and fails on one half made ("failed to read .git/worktrees/…/commondir"),
    // so pirn's workers take turns on a lock of their own (held until this
    // returns); a lock file of git's held by something else is waited out.
    let lock = std::fs::File::create(dir.join(".add.lock"))
        .map_err(|e| WorktreeError::Io(format!("create {}: {e}", dir.join(".add.lock").display())))?;
    // SAFETY: flock on a descriptor this function owns; released on close.
    unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) };
    let mut tries = 0;
    loop {
        match git(&repo, &["worktree", "add", "-b", &branch, &target, &base]) {
            Ok(_) => break,
            Err(WorktreeError::Git { message, .. }) if message.contains(".lock") && tries < 20 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(50 * tries));
            }
            Err(e) => return Err(e),
        }
    }
    let wt = Worktree {
        name: name.clone(),
        path: path.canonicalize().unwrap_or(path),
        repo,
        branch,
        base,
        session_id: session_id.to_owned(),
        pid: std::process::id(),
    };
    wt.save_record();
    let workspace = wt.path.join(inside);
    Ok((wt, workspace))
}

/// What a result says of a worktree: the files changed against its base
/// (tracked and untracked, committed or not) and git's short diff stat of
/// the tracked ones.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Report {
    pub changed: Vec<String>,
    pub diff_stat: String,
}

impl Worktree {
    /// Writes `<name>.json` beside the worktree (what [`list`] reads).
    pub fn save_record(&self) {
        if let Some(dir) = self.path.parent() {
            let record = serde_json::to_vec_pretty(self).unwrap_or_default();
            let _ = std::fs::write(dir.join(format!("{}.json", self.name)), record);
        }
    }

    /// The worktree's changes against its base (see [`Report`]).
    pub fn report(&self) -> Result<Report, WorktreeError> {
        let mut changed: Vec<String> =
            git(&self.path, &["diff", "--no-ext-diff", "--no-textconv", "--name-only", &self.base])?
                .lines()
                .map(str::to_owned)
                .collect();
        changed.extend(git(&self.path, &["ls-files", "--others", "--exclude-standard"])?.lines().map(str::to_owned));
        changed.sort();
        changed.dedup();
        let diff_stat =
            git(&self.path, &["diff", "--no-ext-diff", "--no-textconv", "--shortstat", &self.base])?.trim().to_owned();
        Ok(Report { changed, diff_stat })
    }

    /// Removes the worktree (and its branch) when nothing in it differs
    /// from its base; returns whether it did.
    pub fn remove_if_unchanged(&self) -> Result<bool, WorktreeError> {
        let head = git(&self.path, &["rev-parse", "HEAD"])?;
        if !self.report()?.changed.is_empty() || head.trim() != self.base {
            return Ok(false);
        }
        remove(&self.repo, &self.path, true)?;
        let _ = git(&self.repo, &["branch", "-D", &self.branch]);
        Ok(true)
    }
}

/// Removes the worktree at `path` of `repo` (`force`: even with changes),
/// and its record. The branch stays.
pub fn remove(repo: &Path, path: &Path, force: bool) -> Result<(), WorktreeError> {
    let target = path.to_string_lossy().into_owned();
    let mut args = vec!["worktree", "remove"];
    if force {
        args.push("--force");
    }
    args.push(&target);
    git(repo, &args)?;
    if let (Some(dir), Some(name)) = (path.parent(), path.file_name()) {
        let _ = std::fs::remove_file(dir.join(format!("{}.json", name.to_string_lossy())));
    }
    Ok(())
}

/// Every worktree pirn made under `home`, from their records, with
/// whether the process that made it is still running.
pub fn list(home: &Path) -> Vec<(Worktree, bool)> {
    let mut out = Vec::new();
    let Ok(repos) = std::fs::read_dir(home.join("worktrees")) else { return out };
    for repo in repos.flatten() {
        let Ok(records) = std::fs::read_dir(repo.path()) else { continue };
        for r in records.flatten() {
            if r.path().extension().is_none_or(|e| e != "json") {
                continue;
            }
            let Some(wt) = std::fs::read(r.path()).ok().and_then(|b| serde_json::from_slice::<Worktree>(&b).ok())
            else {
                continue;
            };
            // SAFETY: kill with signal 0 only checks that the pid exists.
            let live = unsafe { libc::kill(wt.pid as libc::pid_t, 0) } == 0;
            out.push((wt, live));
        }
    }
    out.sort_by(|a, b| a.0.path.cmp(&b.0.path));
    out
}
