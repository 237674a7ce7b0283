//! `tool_end.diff` (0.3.0): the file a `write_file` or `edit_file` call
//! changed, before and after, for clients that show changes (ACP's `diff`
//! tool content, editors over HTTP).
//!
//! Owns: [`before`], read just before the call runs, and [`Before::after`],
//! read just after; both through the workspace confinement, at most
//! [`MAX_DIFF_BYTES`] each (larger files get no diff). A call that changed
//! nothing (refused, "no change") gets none.

use serde_json::Value;

use crate::tools::ToolContext;
use crate::wire::FileDiff;

/// Largest file text a diff carries, per side, in bytes.
pub const MAX_DIFF_BYTES: u64 = 64 * 1024;

/// A file as it was before a call that may change it.
#[derive(Debug)]
pub struct Before {
    path: String,
    text: Option<String>,
}

/// For a `write_file` or `edit_file` call: its file's text now (`None`
/// inside when the file does not exist yet); `None` for other tools, a
/// path that does not resolve, or a file too large.
pub fn before(tool: &str, args: &Value, ctx: &ToolContext) -> Option<Before> {
    if !crate::tools::writes_text(tool) {
        return None;
    }
    let path = args.get("file_path")?.as_str()?.to_owned();
    let text = match read(ctx, &path) {
        Read::Text(t) => Some(t),
        Read::Missing => None,
        Read::Unusable => return None,
    };
    Some(Before { path, text })
}

impl Before {
    /// The diff, when the file's text is now different.
    pub fn after(self, ctx: &ToolContext) -> Option<Box<FileDiff>> {
        let Read::Text(now) = read(ctx, &self.path) else { return None };
        if self.text.as_deref() == Some(now.as_str()) {
            return None;
        }
        let shown = ctx.resolve(&self.path).map(|c| ctx.display(c.path())).unwrap_or(self.path);
        Some(Box::new(FileDiff { path: shown, old_text: self.text, new_text: now }))
    }
}

enum Read {
    Text(String),
    Missing,
    Unusable,
}

fn read(ctx: &ToolContext, path: &str) -> Read {
    let Ok(target) = ctx.resolve(path) else { return Read::Unusable };
    match ctx.read_text(&target, MAX_DIFF_BYTES) {
        Ok(text) => Read::Text(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Read::Missing,
        Err(_) => Read::Unusable,
    }
}
