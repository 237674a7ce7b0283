//! `write_file {file_path, content}`: create or replace a file atomically.
//!
//! Owns: parent-directory creation, the temp-file-and-rename write (same
//! directory, so the rename is atomic), keeping an existing file's
//! permissions.

use std::io::Write;
use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;

use super::{ToolContext, ToolError, failed};

/// Arguments as the model sends them (their schema is the tool's `parameters`).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Args {
    /// Path of the file, relative to the workspace or absolute.
    pub file_path: String,
    /// The complete new content of the file.
    pub content: String,
}

/// What the model is told the tool does.
pub const DESCRIPTION: &str =
    "Create or overwrite a file in the workspace with the given content. Parent directories are created.";

/// Writes the file. Errors (to the model): outside the workspace, a
/// directory in the way, I/O failures.
pub fn run(args: Args, ctx: &ToolContext) -> Result<String, ToolError> {
    let path = ctx.resolve(&args.file_path)?;
    let shown = ctx.display(&path);
    if !ctx.may_overwrite(&path) {
        return failed(format!(
            "{shown} already exists and you have not read it: read it with read_file first, then change part of it \
             with edit_file (or write the complete new content with write_file)"
        ));
    }
    let existed = path.exists();
    match write_atomic(&path, args.content.as_bytes()) {
        Ok(()) => Ok(format!(
            "{} {shown}: {} bytes written",
            if existed { "overwrote" } else { "created" },
            args.content.len()
        )),
        Err(e) => failed(format!("{shown}: write failed: {e}")),
    }
}

/// Writes `bytes` to a temp file beside `path`, fsyncs it, gives it the old
/// file's permissions (if any) and renames it over `path`.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().ok_or_else(|| std::io::Error::other("path has no parent directory"))?;
    std::fs::create_dir_all(dir)?;
    if path.is_dir() {
        return Err(std::io::Error::other("a directory exists at that path"));
    }
    let old_perms = std::fs::symlink_metadata(path).ok().filter(|m| m.is_file()).map(|m| m.permissions());
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.pirn-{}-{}.tmp", std::process::id(), uuid::Uuid::new_v4().simple()));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        if let Some(p) = old_perms {
            std::fs::set_permissions(&tmp, p)?;
        }
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
