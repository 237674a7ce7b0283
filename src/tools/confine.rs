//! Paths the model names, resolved by the operating system beneath a root.
//!
//! Owns: turning a model-given path into a [`Confined`] file location inside
//! the workspace (or an allowed path), the [`PathError`] when it may not be
//! used, and every file-system operation the file tools make through it.
//! Nothing here cleans paths as strings: each root is opened once as a
//! [`cap_std::fs::Dir`] and every lookup below it
//! goes through cap-std, which on Linux uses `openat2(RESOLVE_BENEATH)` (or
//! its own component-by-component walk on older kernels). A symlink, a
//! chain of them, an absolute target or a `..` that would leave the root is
//! refused by the kernel, so `a -> d/x` with `d -> ../outside` cannot make
//! `write_file a` create `../outside/x`.
//!
//! What the model and the repository can still do: name a file through a
//! hard link to a file outside (a hard link is the file itself, and no path
//! check can tell it apart). Absolute symlinks are refused even when they
//! point back inside, as `RESOLVE_BENEATH` does.

use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use cap_std::fs::{Dir, OpenOptions};

/// A path the model gave that a file tool may not use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("path is empty")]
    Empty,
    #[error("path contains a NUL byte")]
    Nul,
    /// Resolves (following symlinks) outside the workspace and every allowed path.
    #[error(
        "path {raw:?} resolves to {} which is outside the workspace {} (and not under an allowed path)",
        resolved.display(),
        workspace.display()
    )]
    Outside { raw: String, resolved: PathBuf, workspace: PathBuf },
    /// The OS refused to follow it beneath the workspace: a symbolic link
    /// (relative or absolute) or a `..` would leave it.
    #[error(
        "path {raw:?} leads outside the workspace {} through a symbolic link or '..'; file tools stay inside it",
        workspace.display()
    )]
    Escapes { raw: String, workspace: PathBuf },
    /// The last component is a symlink whose target does not exist: a
    /// write would create a file wherever the link points.
    #[error("path {raw:?} is a symbolic link to nothing; pirn does not create files through links")]
    DanglingLink { raw: String },
    /// The OS could not look the path up beneath the workspace.
    #[error("path {raw:?} cannot be resolved inside the workspace: {why}")]
    Unresolvable { raw: String, why: String },
}

/// One root a file tool may reach: its canonical path and an open handle.
#[derive(Debug, Clone)]
struct Root {
    path: PathBuf,
    dir: Arc<Dir>,
}

/// A file location that the OS resolved beneath a root. The file itself
/// may not exist yet (`write_file` creates it), but every existing
/// component of its path does and lies inside the root.
#[derive(Debug, Clone)]
pub struct Confined {
    root: Root,
    /// Relative to the root, symlinks already resolved; empty for the root.
    rel: PathBuf,
    /// Absolute: the root's path joined with `rel`.
    real: PathBuf,
}

/// Resolves `raw` (relative to `workspace`, or absolute) beneath the first
/// of `workspace` and `allowed` that holds it. The roots must be canonical.
///
/// Errors: [`PathError::Outside`] when the path is under no root,
/// [`PathError::Escapes`] when the OS refused a link or `..` leaving it, [`PathError::DanglingLink`] when its
/// last existing component is a symlink to nothing (writing would create
/// the target), [`PathError::Unresolvable`] for `..` after a missing
/// directory and I/O errors of the lookup.
pub fn resolve(raw: &str, workspace: &Path, allowed: &[PathBuf]) -> Result<Confined, PathError> {
    if raw.trim().is_empty() {
        return Err(PathError::Empty);
    }
    if raw.contains('\0') {
        return Err(PathError::Nul);
    }
    let joined = if Path::new(raw).is_absolute() { PathBuf::from(raw) } else { workspace.join(raw) };
    let outside =
        |resolved: PathBuf| PathError::Outside { raw: raw.to_owned(), resolved, workspace: workspace.to_path_buf() };
    let Some((root_path, rel)) = std::iter::once(workspace)
        .chain(allowed.iter().map(PathBuf::as_path))
        .find_map(|r| joined.strip_prefix(r).ok().map(|rel| (r, rel.to_path_buf())))
    else {
        return Err(outside(joined));
    };
    let dir = Dir::open_ambient_dir(root_path, cap_std::ambient_authority())
        .map_err(|e| PathError::Unresolvable { raw: raw.to_owned(), why: format!("cannot open the root: {e}") })?;
    let root = Root { path: root_path.to_path_buf(), dir: Arc::new(dir) };
    let escaped = |e: &io::Error| e.kind() == io::ErrorKind::PermissionDenied || e.raw_os_error() == Some(libc::EXDEV);
    // The longest prefix of `rel` that exists, resolved by cap-std.
    let parts: Vec<Component> = rel.components().collect();
    for keep in (0..=parts.len()).rev() {
        let prefix: PathBuf = parts[..keep].iter().collect();
        let lookup = if prefix.as_os_str().is_empty() { Path::new(".") } else { prefix.as_path() };
        match root.dir.canonicalize(lookup) {
            Ok(real_prefix) => {
                let rest = &parts[keep..];
                if let Some(first) = rest.first() {
                    // It did not resolve, yet it is there: a link to nothing.
                    if root.dir.symlink_metadata(real_prefix.join(first)).is_ok() {
                        return Err(PathError::DanglingLink { raw: raw.to_owned() });
                    }
                    if rest.iter().any(|c| !matches!(c, Component::Normal(_))) {
                        return Err(PathError::Unresolvable {
                            raw: raw.to_owned(),
                            why: "it goes up (..) from a directory that does not exist".into(),
                        });
                    }
                }
                let mut rel = real_prefix;
                rel.extend(rest);
                let rel = rel.strip_prefix(".").map(Path::to_path_buf).unwrap_or(rel);
                let real = root.path.join(&rel);
                return Ok(Confined { root, rel, real });
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENOTDIR) => continue,
            Err(e) if escaped(&e) => {
                return Err(PathError::Escapes { raw: raw.to_owned(), workspace: workspace.to_path_buf() });
            }
            Err(e) => return Err(PathError::Unresolvable { raw: raw.to_owned(), why: e.to_string() }),
        }
    }
    Err(outside(joined))
}

impl Confined {
    /// The resolved absolute path (for display, rules and bookkeeping).
    pub fn path(&self) -> &Path {
        &self.real
    }

    fn rel_or_dot(&self) -> &Path {
        if self.rel.as_os_str().is_empty() { Path::new(".") } else { &self.rel }
    }

    /// Opens the file for reading, beneath the root.
    pub fn open_read(&self) -> io::Result<std::fs::File> {
        Ok(self.root.dir.open(self.rel_or_dot())?.into_std())
    }

    /// True when something exists at the path (a directory included).
    pub fn exists(&self) -> bool {
        self.root.dir.metadata(self.rel_or_dot()).is_ok()
    }

    /// True when the path is a directory.
    pub fn is_dir(&self) -> bool {
        self.root.dir.metadata(self.rel_or_dot()).is_ok_and(|m| m.is_dir())
    }

    /// Gives the file the permission bits `mode` (`& 0o7777`).
    pub fn set_mode(&self, mode: u32) -> io::Result<()> {
        use cap_std::fs::PermissionsExt;
        self.root.dir.set_permissions(&self.rel, cap_std::fs::Permissions::from_mode(mode & 0o7777))
    }

    /// Deletes the file (not a directory).
    pub fn remove_file(&self) -> io::Result<()> {
        self.root.dir.remove_file(&self.rel)
    }

    /// Writes `bytes` to a temp file beside the target (creating parent
    /// directories beneath the root), fsyncs it, gives it the old file's
    /// permissions and renames it over the target: readers never see a
    /// half-written file. Errors: a directory in the way, I/O failures.
    pub fn write_atomic(&self, bytes: &[u8]) -> io::Result<()> {
        use std::io::Write;
        let name = self.rel.file_name().ok_or_else(|| io::Error::other("the path names a directory"))?;
        let parent_rel = self.rel.parent().filter(|p| !p.as_os_str().is_empty());
        let parent = match parent_rel {
            Some(p) => {
                self.root.dir.create_dir_all(p)?;
                self.root.dir.open_dir(p)?
            }
            None => self.root.dir.try_clone()?,
        };
        let old = parent.symlink_metadata(name).ok();
        if old.as_ref().is_some_and(|m| m.is_dir()) {
            return Err(io::Error::other("a directory exists at that path"));
        }
        let old_perms = match &old {
            Some(m) if m.is_file() => Some(parent.open(name)?.into_std().metadata()?.permissions()),
            _ => None,
        };
        let tmp =
            format!(".{}.pirn-{}-{}.tmp", name.to_string_lossy(), std::process::id(), uuid::Uuid::new_v4().simple());
        let result = (|| {
            let mut f = parent.open_with(&tmp, OpenOptions::new().write(true).create_new(true))?.into_std();
            f.write_all(bytes)?;
            f.sync_all()?;
            if let Some(p) = old_perms {
                f.set_permissions(p)?;
            }
            parent.rename(&tmp, &parent, name)
        })();
        if result.is_err() {
            let _ = parent.remove_file(&tmp);
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn setup() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::fs::create_dir_all(tmp.path().join("outside")).unwrap();
        std::fs::write(tmp.path().join("outside/secret.txt"), "s").unwrap();
        (tmp, ws.canonicalize().unwrap())
    }

    #[test]
    fn inside_paths_resolve_and_write() {
        let (_t, ws) = setup();
        let c = resolve("sub/new/deeper.txt", &ws, &[]).unwrap();
        assert_eq!(c.path(), ws.join("sub/new/deeper.txt"));
        c.write_atomic(b"hi").unwrap();
        assert_eq!(std::fs::read_to_string(ws.join("sub/new/deeper.txt")).unwrap(), "hi");
        symlink("sub", ws.join("s")).unwrap();
        assert_eq!(resolve("s/new/deeper.txt", &ws, &[]).unwrap().path(), ws.join("sub/new/deeper.txt"));
        assert_eq!(resolve(".", &ws, &[]).unwrap().path(), ws);
        assert_eq!(resolve("sub/../sub/x", &ws, &[]).unwrap().path(), ws.join("sub/x"));
    }

    #[test]
    fn escapes_are_refused_and_nothing_is_created() {
        let (t, ws) = setup();
        symlink("../outside", ws.join("d")).unwrap();
        symlink("d/target.txt", ws.join("a")).unwrap();
        symlink("/etc", ws.join("etc")).unwrap();
        symlink(ws.join("sub"), ws.join("abs")).unwrap();
        symlink("missing.txt", ws.join("dangling")).unwrap();
        for raw in ["a", "d/x", "d/secret.txt", "etc/passwd", "abs/x", "../outside/x", "/etc/passwd", "dangling"] {
            assert!(resolve(raw, &ws, &[]).is_err(), "{raw} resolved");
        }
        assert!(resolve("nope/../../x", &ws, &[]).is_err());
        assert!(!t.path().join("outside/target.txt").exists());
    }
}
