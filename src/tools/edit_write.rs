//! What `edit_file` and its tolerant tiers (`edit_tolerant`) share once
//! the file is read: the file and what the edit is to replace in it
//! ([`Edit`]), writing the new text ([`write`]) and what a made edit
//! returns ([`Applied`]), the two ways an edit fails ([`fail`],
//! [`made_already`]), and the numbered lines that show the model where
//! ([`line_of`], [`excerpt`], [`near_miss`]). Both build on it, and
//! `edit_file` calls the tiers, never the other way.

use super::confine::Confined;
use super::context::ToolContext;
use super::error::ToolError;

/// The file as read, and what the edit is to replace in it (`old`, `new`:
/// with the file's CRLF line endings where it has them).
pub(super) struct Edit<'a> {
    pub target: &'a Confined,
    pub shown: &'a str,
    pub content: &'a str,
    pub crlf: bool,
    pub old: &'a str,
    pub new: &'a str,
}

/// What a successful edit returns: the text for the model, the file's new
/// content, its path, and its content before.
pub(super) type Applied = (String, String, std::path::PathBuf, String);

/// Writes `updated` over the file that held `before`; when they are the
/// same bytes (a tolerant tier made the edit a no-op) nothing is written.
pub(super) fn write(
    ctx: &ToolContext,
    target: &Confined,
    before: &str,
    updated: &str,
    shown: &str,
) -> Result<(), ToolError> {
    if updated == before {
        return Ok(());
    }
    ctx.write_text(target, updated).map_err(|e| ToolError::Failed(format!("{shown}: write failed: {e}")))
}

/// `Err(ToolError::Failed(message))`.
pub(super) fn fail<T>(message: impl Into<String>) -> Result<T, ToolError> {
    Err(ToolError::Failed(message.into()))
}

/// `Err(ToolError::MadeAlready { path, message })`: the edit looks made in `path`.
pub(super) fn made_already<T>(path: std::path::PathBuf, message: String) -> Result<T, ToolError> {
    Err(ToolError::MadeAlready { path, message })
}

/// 1-based line number of byte offset `at`.
pub(super) fn line_of(content: &str, at: usize) -> usize {
    content.as_bytes()[..at].iter().filter(|b| **b == b'\n').count() + 1
}

/// Lines `first-2 ..= first+count+1`, numbered.
pub(super) fn excerpt(content: &str, first: usize, count: usize) -> String {
    let from = first.saturating_sub(2).max(1);
    let to = first + count + 1;
    content
        .lines()
        .enumerate()
        .skip(from - 1)
        .take(to - from + 1)
        .map(|(i, l)| format!("{:>6}\t{}\n", i + 1, l.trim_end_matches('\r')))
        .collect()
}

/// Names the file line closest to the first line of `old`.
pub(super) fn near_miss(content: &str, old: &str) -> String {
    let Some(needle) = old.lines().map(str::trim).find(|l| !l.is_empty()) else {
        return "old_string has only whitespace".to_owned();
    };
    let mut best: Option<(f64, usize, &str)> = None;
    for (i, line) in content.lines().enumerate().take(50_000) {
        let t = line.trim();
        if t.is_empty() || t.len() > needle.len() * 3 + 16 || needle.len() > t.len() * 3 + 16 {
            continue;
        }
        let score = if t == needle { 1.0 } else { strsim::normalized_levenshtein(t, needle) };
        if best.is_none_or(|(s, _, _)| score > s) {
            best = Some((score, i + 1, line));
        }
        if score == 1.0 {
            break;
        }
    }
    match best {
        Some((score, n, line)) if score >= 0.5 => {
            let line: String = line.trim_end_matches('\r').chars().take(200).collect();
            if score == 1.0 {
                format!(
                    "Line {n} matches its first line apart from indentation or the lines around it: {line:?}. Read the file and copy the text exactly."
                )
            } else {
                format!(
                    "The closest line is {n}: {line:?} ({:.0}% similar). Read the file and copy the text exactly.",
                    score * 100.0
                )
            }
        }
        _ => "No similar line found; read the file first.".to_owned(),
    }
}
