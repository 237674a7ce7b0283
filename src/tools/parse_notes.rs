//! Parse notes, given only where the profile asks for them
//! ([`WriteHelp::parse_notes`](super::context::WriteHelp::parse_notes)):
//! the warning after a write that a file no longer parses ([`after_write`]),
//! and the files a send changed that parsed before and do not now
//! ([`ToolContext::broken`]). The parsing itself is [`super::syntax`]'.

use std::path::PathBuf;

use super::context::ToolContext;
use super::read_file::MAX_FILE_BYTES;
use super::syntax::{MAX_BYTES, problem, warning};

/// [`warning`] for the file a tool just wrote, read back through the
/// workspace confinement; empty when there is nothing to say, or when the
/// profile asks for no parse notes
/// ([`WriteHelp::parse_notes`](super::context::WriteHelp::parse_notes)).
pub fn after_write(ctx: &ToolContext, file_path: &str) -> String {
    if !ctx.help.parse_notes {
        return String::new();
    }
    let Ok(target) = ctx.resolve(file_path) else { return String::new() };
    let Ok(content) = ctx.read_text(&target, MAX_BYTES as u64 + 1) else { return String::new() };
    warning(target.path(), &ctx.display(target.path()), &content).unwrap_or_default()
}

impl ToolContext {
    /// The files this send changed that parsed before and do not now
    /// (the kinds [`problem`] knows): `(path as shown, what
    /// the parser says)`.
    pub fn broken(&self) -> Vec<(String, String)> {
        let written: Vec<PathBuf> = {
            let w = self.written.lock().unwrap_or_else(|p| p.into_inner());
            w.iter().filter(|(_, first)| first.parsed).map(|(p, _)| p.clone()).collect()
        };
        let mut out: Vec<(String, String)> = written
            .iter()
            .filter_map(|p| {
                let shown = self.display(p);
                let target = self.resolve(&p.to_string_lossy()).ok()?;
                let text = self.read_text(&target, MAX_FILE_BYTES).ok()?;
                problem(p, &text).map(|problem| (shown, problem))
            })
            .collect();
        out.sort();
        out
    }
}
