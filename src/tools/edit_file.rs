//! `edit_file {file_path, old_string, new_string, replace_all?}`: exact
//! string replacement.
//!
//! Owns: match counting (unique unless `replace_all`), the near-miss hint
//! when nothing matches, keeping the file's line endings (CRLF files get
//! CRLF replacements), the atomic write, and the excerpt that shows the model
//! what changed.

use schemars::JsonSchema;
use serde::Deserialize;

use super::read_file::{MAX_FILE_BYTES, open_nofollow};
use super::write_file::write_atomic;
use super::{ToolContext, ToolError, failed};

/// Arguments as the model sends them (their schema is the tool's `parameters`).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Args {
    /// Path of the file to edit.
    pub file_path: String,
    /// The exact text to replace.
    pub old_string: String,
    /// The replacement text.
    pub new_string: String,
    /// Replace every occurrence. Default false.
    #[serde(default)]
    pub replace_all: bool,
}

/// What the model is told the tool does.
pub const DESCRIPTION: &str = "Replace an exact string in a file. old_string must match exactly (including whitespace) and be unique unless replace_all is true.";

/// Applies the edit. Errors (to the model): empty or identical strings, no
/// match (with the closest line), several matches without `replace_all`
/// (with their lines), binary or unreadable files.
pub fn run(args: Args, ctx: &ToolContext) -> Result<String, ToolError> {
    let path = ctx.resolve(&args.file_path)?;
    let shown = ctx.display(&path);
    if args.old_string.is_empty() {
        return failed("old_string is empty; use write_file to create a file");
    }
    if args.old_string == args.new_string {
        return failed("old_string and new_string are identical; nothing to change");
    }
    let content = match read_text(&path) {
        Ok(c) => c,
        Err(e) if !path.exists() => return failed(format!("{shown}: {e}. {}", ctx.nearby(&path))),
        Err(e) => return failed(format!("{shown}: {e}")),
    };
    ctx.mark_read(&path);
    let crlf = content.contains("\r\n");
    let (old, new) = if crlf && !args.old_string.contains("\r\n") {
        (args.old_string.replace('\n', "\r\n"), args.new_string.replace('\n', "\r\n"))
    } else {
        (args.old_string.clone(), args.new_string.clone())
    };
    let starts: Vec<usize> = content.match_indices(&old).map(|(i, _)| i).collect();
    if starts.is_empty() {
        return failed(format!("{shown}: old_string not found. {}", near_miss(&content, &args.old_string)));
    }
    if starts.len() > 1 && !args.replace_all {
        let lines: Vec<String> = starts.iter().take(20).map(|&i| line_of(&content, i).to_string()).collect();
        return failed(format!(
            "{shown}: old_string matches {} times (lines {}); add surrounding context to make it unique, or set replace_all",
            starts.len(),
            lines.join(", ")
        ));
    }
    let updated = if args.replace_all { content.replace(&old, &new) } else { content.replacen(&old, &new, 1) };
    if let Err(e) = write_atomic(&path, updated.as_bytes()) {
        return failed(format!("{shown}: write failed: {e}"));
    }
    let first_line = line_of(&content, starts[0]);
    let new_lines = new.matches('\n').count() + 1;
    Ok(format!(
        "edited {shown}: replaced {} occurrence{} ({} → {} bytes). Lines around the first change:\n{}",
        starts.len(),
        if starts.len() == 1 { "" } else { "s" },
        content.len(),
        updated.len(),
        excerpt(&updated, first_line, new_lines)
    ))
}

fn read_text(path: &std::path::Path) -> Result<String, String> {
    use std::io::Read;
    let mut f = open_nofollow(path).map_err(|e| format!("cannot open: {e}"))?;
    let len = f.metadata().map_err(|e| e.to_string())?.len();
    if len > MAX_FILE_BYTES {
        return Err(format!("{len} bytes, over the {MAX_FILE_BYTES} byte limit"));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    f.read_to_end(&mut bytes).map_err(|e| format!("cannot read: {e}"))?;
    if bytes[..bytes.len().min(8192)].contains(&0) {
        return Err("binary file; edit_file only edits text".to_owned());
    }
    String::from_utf8(bytes).map_err(|_| "not valid UTF-8 text".to_owned())
}

/// 1-based line number of byte offset `at`.
fn line_of(content: &str, at: usize) -> usize {
    content.as_bytes()[..at].iter().filter(|b| **b == b'\n').count() + 1
}

/// Lines `first-2 ..= first+count+1`, numbered.
fn excerpt(content: &str, first: usize, count: usize) -> String {
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
fn near_miss(content: &str, old: &str) -> String {
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
