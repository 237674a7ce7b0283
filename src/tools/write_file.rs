//! `write_file {file_path, content}`: create or replace a file atomically.
//!
//! Owns: parent-directory creation, the temp-file-and-rename write (same
//! directory, so the rename is atomic), keeping an existing file's
//! permissions, and two guards against a model destroying a file it meant
//! to extend: an existing file must have been read first, and a rewrite
//! that would drop most of a file's lines is refused once (see
//! [`MOSTLY_DROPPED`]); the same write asked for again goes through. Such a
//! rewrite made only of definitions (and imports) is merged into the file
//! instead ([`super::merge_defs`]), and a partial JSON object changes only
//! the values it gives ([`super::merge_json`]), and so does TOML holding only
//! settings the file has ([`super::merge_toml`]).

use schemars::JsonSchema;
use serde::Deserialize;

use super::confine::Confined;
use super::{ToolContext, ToolError, failed};

/// Arguments as the model sends them (their schema is the tool's `parameters`).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Args {
    /// Path of the file, relative to the workspace or absolute.
    pub file_path: String,
    /// The complete new content of the file.
    pub content: String,
}

/// A rewrite that keeps fewer than this share (percent) of an existing
/// file's non-blank lines, of a file with at least [`GUARDED_LINES`] of
/// them, is refused the first time: "add a function" answered with a file
/// holding only the new function is the commonest way a small model breaks
/// a task.
pub const MOSTLY_DROPPED: usize = 50;
/// Non-blank lines a file needs before [`MOSTLY_DROPPED`] applies.
pub const GUARDED_LINES: usize = 4;
/// How the refusal starts (see [`is_drop_refusal`]).
pub const DROP_REFUSAL: &str = "not written: ";

/// What the model is told the tool does.
pub const DESCRIPTION: &str =
    "Create or overwrite a file in the workspace with the given content. Parent directories are created.";

/// Writes the file. Errors (to the model): outside the workspace, a
/// directory in the way, I/O failures.
pub fn run(args: Args, ctx: &ToolContext) -> Result<String, ToolError> {
    let file_path = args.file_path.clone();
    let done = write(args, ctx)?;
    Ok(done + &super::syntax::after_write(ctx, &file_path))
}

fn write(args: Args, ctx: &ToolContext) -> Result<String, ToolError> {
    let target = ctx.resolve(&args.file_path)?;
    let path = target.path().to_path_buf();
    let shown = ctx.display(&path);
    let old = existing_text(ctx, &target);
    ctx.note_write(&path, old.as_deref());
    if !ctx.may_overwrite(&path) {
        // Shown now, and counted as read: the next write is an informed one
        // (the model had answered with this refusal's own words instead).
        let Some(text) = old.as_deref().filter(|t| t.len() <= SHOWN_UNREAD) else {
            return failed(format!(
                "{shown} already exists and you have not read it: read it with read_file first, then change part \
                 of it with edit_file (or write the complete new content with write_file)"
            ));
        };
        ctx.mark_read(&path);
        return failed(format!(
            "nothing written: {shown} already exists and you had not read it. It holds:\n{}Now change the part \
             that needs changing with edit_file, or call write_file again with the complete new content.",
            numbered_all(text)
        ));
    }
    if let Some(old) = old.as_deref()
        && same_text(old, &args.content)
    {
        ctx.mark_read(&path);
        return Ok(format!(
            "{}{shown} already holds exactly this content (at most trailing spaces or the final newline differ); \
             nothing written. Writing it again changes nothing: if the task needs a change, make that change.",
            super::NO_CHANGE
        ));
    }
    // A TOML rewrite of settings the file has: only the values that differ change.
    if let Some(old) = old.as_deref().filter(|_| path.extension().is_some_and(|e| e == "toml"))
        && let Some((merged, changes)) = super::merge_toml::merge(old, &args.content)
        && merged != args.content
    {
        if changes.is_empty() {
            return Ok(format!(
                "{}{shown} already holds every value your content gives; nothing written. To remove a setting or \
                 change a comment, use edit_file.",
                super::NO_CHANGE
            ));
        }
        let changed: Vec<String> = changes.iter().map(|(path, was, now)| format!("{path} {was} → {now}")).collect();
        return match ctx.write_text(&target, &merged) {
            Ok(()) => Ok(format!(
                "merged into {shown}: your content holds settings it has, so only the values that differ were \
                 changed: {}; every other setting and comment of {shown} is kept.",
                changed.join(", ")
            )),
            Err(e) => failed(format!("{shown}: write failed: {e}")),
        };
    }
    // The same code laid out differently (other quotes, spacing): refused
    // once, since the file already does what it says; asked again, written.
    // (syntax::same_code is gone, issue 36; the lead removes this caller.)
    #[allow(clippy::overly_complex_bool_expr, clippy::nonminimal_bool)]
    if old.is_some()
        && false
        && ctx.warn_once(
            &path.with_file_name(format!(".{}#reformat", path.file_name().unwrap_or_default().to_string_lossy())),
        )
    {
        return failed(format!(
            "{DROP_REFUSAL}your content is the same code as {shown} already holds, only written differently \
             (quotes, spacing, blank lines or comments), so the file is unchanged: it already does what your content \
             does. If the task is to change what the code does, make that change. If the task is this rewrite \
             itself (formatting, comments), call write_file again with the same arguments."
        ));
    }
    if let Some(old) = old.as_deref().filter(|old| mostly_dropped(old, &args.content))
        && let Some((merged, changes)) = super::merge_json::merge(old, &args.content)
    {
        if changes.is_empty() {
            return Ok(format!(
                "no change: {shown} already holds every value your content gives; nothing written. The change is \
                 made: read {shown} to see it."
            ));
        }
        let changed: Vec<String> = changes.iter().map(|(path, was, now)| format!("{path} {was} → {now}")).collect();
        return match ctx.write_text(&target, &merged) {
            Ok(()) => Ok(format!(
                "merged into {shown}: your content holds part of its JSON, so only the values that differ were \
                 changed: {}; the rest of {shown} is kept as it was.",
                changed.join(", ")
            )),
            Err(e) => failed(format!("{shown}: write failed: {e}")),
        };
    }
    if let Some(old) =
        old.as_deref().filter(|old| mostly_dropped(old, &args.content) || drops_definitions(old, &args.content))
        && let Some(m) = super::merge_defs::merge(old, &args.content)
    {
        if m.unchanged() {
            return Ok(format!(
                "no change: {shown} already holds these definitions exactly as given; nothing written. To delete \
                 code, use edit_file."
            ));
        }
        let gone = super::references::lost_definitions(old, &m.content);
        return match ctx.write_text(&target, &m.content) {
            Ok(()) => Ok(merged_report(&shown, &m)
                + &super::references::after_change(ctx, old, &m.content, &gone, super::references::Why::Renamed)
                    .unwrap_or_default()),
            Err(e) => failed(format!("{shown}: write failed: {e}")),
        };
    }
    if let Some(old) = old.as_deref().filter(|old| mostly_dropped(old, &args.content))
        && let Some((merged, lines)) = super::merge_defs::changed_lines(old, &args.content)
    {
        let before: Vec<&str> = old.lines().collect();
        let was: Vec<&str> = lines.iter().filter_map(|n| before.get(n - 1).copied()).collect();
        let renamed = super::references::renamed_in_edit(&was.join("\n"), &args.content);
        let lines: Vec<String> = lines.iter().map(usize::to_string).collect();
        return match ctx.write_text(&target, &merged) {
            Ok(()) => Ok(format!(
                "merged into {shown}: your content holds only lines like its line{} {}, so those were replaced \
                 and the rest of {shown} is kept. Lines now:\n{}{}",
                if lines.len() == 1 { "" } else { "s" },
                lines.join(", "),
                numbered(&merged),
                super::references::after_change(
                    ctx,
                    &was.join("\n"),
                    &args.content,
                    &renamed,
                    super::references::Why::Renamed
                )
                .unwrap_or_default()
            )),
            Err(e) => failed(format!("{shown}: write failed: {e}")),
        };
    }
    // Only lines the file already has, fewer of them: a snippet of the file,
    // never a replacement for it (a small model repeats such a write, and the
    // drop guard would then let it through, leaving the file that snippet).
    if let Some(old) = old.as_deref()
        && let Some(lines) = lines_already_there(old, &args.content)
    {
        ctx.mark_read(&path);
        return Ok(format!(
            "{}every line of your content is already in {shown} (line{} {}); nothing written. To change part of \
             the file, call edit_file with old_string the lines as they are and new_string the lines as they must be.",
            super::NO_CHANGE,
            if lines.len() == 1 { "" } else { "s" },
            lines.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
        ));
    }
    if let Some(refusal) = old.as_deref().and_then(|old| drop_guard(&target, old, &shown, &args.content, ctx)) {
        return failed(refusal);
    }
    let existed = target.exists();
    match ctx.write_text(&target, &args.content) {
        // The model knows what it wrote: it may replace it again unread.
        Ok(()) => {
            ctx.mark_read(&path);
            let note = old
                .as_deref()
                .and_then(|old| {
                    let lost = super::references::lost_definitions(old, &args.content);
                    super::references::after_change(ctx, old, &args.content, &lost, super::references::Why::Undefined)
                })
                .unwrap_or_default();
            Ok(format!(
                "{} {shown}: {} bytes written{note}",
                if existed { "overwrote" } else { "created" },
                args.content.len()
            ))
        }
        Err(e) => failed(format!("{shown}: write failed: {e}")),
    }
}

/// True when `result` (a tool result as the model read it) is this
/// tool's refusal of a rewrite that drops most of a file: the same call
/// asked for again must run, not be answered as a repeat.
pub fn is_drop_refusal(result: &str) -> bool {
    result.strip_prefix("Error: ").is_some_and(|e| e.starts_with(DROP_REFUSAL))
}

/// `text` numbered as read_file shows it (first 40 lines).
/// An unread file up to this size (bytes) is shown when a write to it is
/// refused.
const SHOWN_UNREAD: usize = super::read_file::WHOLE_FILE_BYTES as usize;

/// The 1-based lines of `old` that hold the non-blank lines of `content`
/// (compared trimmed), when every one of them is there and `content` has
/// fewer non-blank lines than `old`; `None` otherwise.
fn lines_already_there(old: &str, content: &str) -> Option<Vec<usize>> {
    let wanted: Vec<&str> = content.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let have = old.lines().filter(|l| !l.trim().is_empty()).count();
    if wanted.is_empty() || wanted.len() >= have {
        return None;
    }
    wanted.iter().map(|w| old.lines().position(|l| l.trim() == *w).map(|i| i + 1)).collect()
}

/// True when `a` and `b` differ at most in trailing spaces and final newlines.
fn same_text(a: &str, b: &str) -> bool {
    a.trim_end().lines().map(str::trim_end).eq(b.trim_end().lines().map(str::trim_end))
}

/// Every line of `text`, numbered as `read_file` numbers them.
fn numbered_all(text: &str) -> String {
    text.lines().enumerate().map(|(i, l)| format!("{:>6}\t{l}\n", i + 1)).collect()
}

fn numbered(text: &str) -> String {
    text.lines().take(40).enumerate().map(|(i, l)| format!("{:>6}\t{l}\n", i + 1)).collect()
}

/// The existing file's text, when it is one `read_file` could have shown
/// (it refuses larger ones); `None` for a new, binary or unreadable file.
fn existing_text(ctx: &ToolContext, target: &Confined) -> Option<String> {
    ctx.read_text(target, super::read_file::MAX_FILE_BYTES).ok()
}

/// Non-blank lines of `old` that `content` keeps (trimmed), and how many
/// non-blank lines `old` has.
fn kept_lines(old: &str, content: &str) -> (usize, usize) {
    let old_lines: Vec<&str> = old.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let new_lines: std::collections::HashSet<&str> = content.lines().map(str::trim).collect();
    (old_lines.iter().filter(|l| new_lines.contains(*l)).count(), old_lines.len())
}

/// True when writing `content` over `old` drops most of a guarded file
/// (see [`MOSTLY_DROPPED`]) and is not the same content reformatted.
fn mostly_dropped(old: &str, content: &str) -> bool {
    let (kept, total) = kept_lines(old, content);
    total >= GUARDED_LINES && kept * 100 < total * MOSTLY_DROPPED && !reformatted(old, content)
}

/// True when `content` leaves out definitions `old` has (a small model
/// "fixing" one function writes that function alone).
fn drops_definitions(old: &str, content: &str) -> bool {
    let given: Vec<String> = super::merge_defs::blocks(content).into_iter().map(|b| b.name).collect();
    !given.is_empty() && super::merge_defs::blocks(old).iter().any(|b| !given.contains(&b.name))
}

/// What the model is told after a merge.
fn merged_report(shown: &str, m: &super::merge_defs::Merged) -> String {
    let mut did = Vec::new();
    if !m.added.is_empty() {
        did.push(format!("added {}", m.added.join(", ")));
    }
    if !m.replaced.is_empty() {
        did.push(format!("replaced the old {}", m.replaced.join(", ")));
    }
    if m.imports > 0 {
        did.push(format!("added {} import line{}", m.imports, if m.imports == 1 { "" } else { "s" }));
    }
    format!(
        "merged into {shown}: your content holds only definitions, so it was merged instead of replacing the file: \
         {}; the rest of {shown} is kept ({} lines now). To delete code, use edit_file.",
        did.join("; "),
        m.content.lines().count()
    )
}

/// The refusal of a rewrite that would drop most of an existing file's
/// lines, the first time it is asked for in this send.
fn drop_guard(target: &Confined, old: &str, shown: &str, content: &str, ctx: &ToolContext) -> Option<String> {
    let (kept, total) = kept_lines(old, content);
    if !mostly_dropped(old, content) || !ctx.warn_once(target.path()) {
        return None;
    }
    // Nothing of the old file kept: most likely code meant to be added. A
    // small model copies a complete call better than it follows advice.
    // Data (JSON and the like) is never "added at the end".
    let data = |t: &str| t.trim_start().starts_with(['{', '[']);
    let how = match unique_tail(old).filter(|_| kept == 0 && !data(old) && !data(content)) {
        Some(last) => {
            let call = serde_json::json!({"name": "edit_file", "arguments": {
                "file_path": shown,
                "old_string": last,
                "new_string": format!("{last}\n\n\n{}", content.trim_end()),
            }});
            format!("To add your code at the end of {shown}, keeping what is there, make this call:\n{call}\n")
        }
        None => "To add or change part of a file, use edit_file (old_string: the lines to change or the line to \
                 add after; new_string: them with your change). "
            .to_owned(),
    };
    Some(format!(
        "{DROP_REFUSAL}this would remove {} of the {} lines of {shown}. {how}To replace the whole file anyway, call \
         write_file again with the same arguments.",
        total - kept,
        total
    ))
}

/// The last non-blank lines of `old`, as few as occur only once in it (at
/// most five), joined as they are in the file.
fn unique_tail(old: &str) -> Option<String> {
    let lines: Vec<&str> = old.trim_end().lines().collect();
    let mut from = lines.iter().rposition(|l| !l.trim().is_empty())?;
    let last = from;
    loop {
        let tail = lines[from..=last].join("\n");
        if old.matches(&tail).count() == 1 || last - from >= 4 || from == 0 {
            return Some(tail);
        }
        from -= 1;
    }
}

/// True when `new` keeps at least [`REFORMAT_KEPT`] percent of the distinct
/// words and numbers of `old`: the same content in another layout (a JSON
/// file written compactly), not a file replaced by something else.
fn reformatted(old: &str, new: &str) -> bool {
    let tokens = |s: &str| -> std::collections::HashSet<String> {
        s.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|t| !t.is_empty()).map(str::to_owned).collect()
    };
    let (before, after) = (tokens(old), tokens(new));
    !before.is_empty() && before.iter().filter(|t| after.contains(*t)).count() * 100 >= before.len() * REFORMAT_KEPT
}

/// See [`reformatted`].
pub const REFORMAT_KEPT: usize = 80;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snippet_of_the_file_is_told_apart() {
        let old = "prices = [1]\n\ntotal = 0\nfor p in prices:\n    total = str(total) + p\n";
        assert_eq!(lines_already_there(old, "total = str(total) + p"), Some(vec![5]));
        assert_eq!(lines_already_there(old, "total = int(total) + p"), None);
        assert_eq!(lines_already_there("a\nb\n", "b\na\n"), None, "as many lines: a rewrite");
    }
}
