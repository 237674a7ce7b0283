//! `write_file {file_path, content}`: create or replace a file atomically.
//!
//! Owns: parent-directory creation, the temp-file-and-rename write (same
//! directory, so the rename is atomic), keeping an existing file's
//! permissions, and two guards against a model destroying a file by
//! mistake: an existing file must have been read first and be as the model
//! last saw it (always: a whole-file write from an old view would undo a
//! change a command, a hook or the user made since), and, in a
//! profile that asks for it, a rewrite that would remove most of a file's
//! lines is held back once with an error that shows what it removes (see
//! [`MOSTLY_DROPPED`]); the same write asked for again lands.
//!
//! What lands is exactly `content`, byte for byte: nothing is merged into
//! it and nothing is kept from the old file. "No change" ([`Effect::Unchanged`])
//! only when the file already holds exactly these bytes.

use schemars::JsonSchema;
use serde::Deserialize;

use super::confine::Confined;
use super::context::{Overwrite, ToolContext};
use super::error::{ToolError, failed};
use super::output::{Effect, Hold, Written, content_hash, same_lines};

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
/// them, is held back the first time: "add a function" answered with a file
/// holding only the new function is the commonest way a small model breaks
/// a file. The same call again is the model's confirmation.
pub const MOSTLY_DROPPED: usize = 50;
/// Non-blank lines a file needs before [`MOSTLY_DROPPED`] applies.
pub const GUARDED_LINES: usize = 4;
/// Removed lines quoted in the held-back error, at most.
const SHOWN_REMOVED: usize = 12;

/// What the model is told the tool does.
pub const DESCRIPTION: &str =
    "Create or overwrite a file in the workspace with the given content. Parent directories are created.";

/// Writes the file. Errors (to the model): outside the workspace, a
/// directory in the way, an unread existing file, a rewrite held back
/// ([`ToolError::HeldBack`]), I/O failures.
pub fn run(args: Args, ctx: &ToolContext) -> Result<Written, ToolError> {
    let file_path = args.file_path.clone();
    let mut done = write(args, ctx)?;
    if matches!(done.effect, Effect::Changed { .. }) {
        done.text.push_str(&super::parse_notes::after_write(ctx, &file_path));
    }
    Ok(done)
}

fn write(args: Args, ctx: &ToolContext) -> Result<Written, ToolError> {
    if args.file_path.ends_with(['/', '\\']) {
        return Err(ToolError::Failed(format!(
            "nothing written: {:?} ends with a path separator, so it names a directory; give the path of a file \
             inside it (parent directories are created)",
            args.file_path
        )));
    }
    let target = ctx.resolve(&args.file_path)?;
    let path = target.path().to_path_buf();
    let shown = ctx.display(&path);
    let old = existing_text(ctx, &target);
    if let Some(chat) = ctx.chat_file.as_deref().filter(|_| path.is_file())
        && ctx.resolve(chat).ok().is_none_or(|c| c.path() != path)
    {
        return Err(ToolError::Failed(format!(
            "nothing written: {shown} is not the file in the chat; in this session only {chat} can be changed (and new \
             files created)"
        )));
    }
    let unchanged = old.as_deref() == Some(args.content.as_str());
    match ctx.may_overwrite(&target) {
        Overwrite::Allowed => {}
        // Writing the bytes the file holds undoes nothing.
        Overwrite::ChangedSinceRead if unchanged => {}
        refused => return Err(super::write_refusal::refuse(ctx, &target, &shown, old.as_deref(), refused)),
    }
    if unchanged {
        ctx.mark_read(&target);
        return Ok(Written {
            text: format!("no change: {shown} already holds exactly this content; nothing written."),
            effect: Effect::Unchanged { path },
        });
    }
    if let Some(message) = old.as_deref().and_then(|old| hold_back(&target, old, &shown, &args.content, ctx)) {
        return Err(ToolError::HeldBack { path, why: Hold::MostlyRemoved, message });
    }
    ctx.note_write(&path, old.as_deref());
    let existed = target.exists();
    if let Err(e) = ctx.write_text(&target, &args.content) {
        // A file where a parent directory must be: say which.
        let blocking = path.ancestors().skip(1).take_while(|a| a.starts_with(&ctx.workspace)).find(|a| a.is_file());
        return match blocking {
            Some(file) => failed(format!(
                "{shown}: nothing written: {} is a file, so it cannot hold {shown}; choose another path",
                ctx.display(file)
            )),
            None => failed(format!("{shown}: write failed: {e}")),
        }
        .map(Written::from);
    }
    let relaid = old.as_deref().is_some_and(|old| same_lines(old, &args.content));
    let note = if relaid {
        " (the same lines as before: only white space at line ends or at the end of the file differs)".to_owned()
    } else {
        old.as_deref()
            .and_then(|old| {
                let lost = super::references::lost_definitions(old, &args.content);
                super::references::still_used(ctx, &lost, super::references::Why::Undefined)
            })
            .unwrap_or_default()
    };
    Ok(Written {
        text: format!(
            "{} {shown}: {} bytes written{note}",
            if existed { "overwrote" } else { "created" },
            args.content.len()
        ),
        effect: Effect::Changed { hash: content_hash(args.content.as_bytes()), path, created: !existed, relaid },
    })
}

/// The existing file's text, when it is one `read_file` could have shown
/// (it refuses larger ones); `None` for a new, binary or unreadable file.
fn existing_text(ctx: &ToolContext, target: &Confined) -> Option<String> {
    ctx.read_text(target, super::read_file::MAX_FILE_BYTES).ok()
}

/// The 1-based numbers and text of the non-blank lines of `old` that
/// `content` does not keep, and how many non-blank lines `old` has.
///
/// A line is kept when `content` has a line with the same trimmed text, or
/// when its text without white space occurs in `content` without white
/// space: a file laid out anew (JSON put on one line, code re-indented or
/// re-wrapped) keeps its lines, though none is where it was.
fn removed_lines<'a>(old: &'a str, content: &str) -> (Vec<(usize, &'a str)>, usize) {
    let kept: std::collections::HashSet<&str> = content.lines().map(str::trim).collect();
    let squeezed = without_white_space(content);
    let mut total = 0;
    let mut removed = Vec::new();
    for (i, line) in old.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        total += 1;
        if !kept.contains(line.trim()) && !squeezed.contains(&without_white_space(line)) {
            removed.push((i + 1, line));
        }
    }
    (removed, total)
}

/// `text` with every white-space character taken out.
fn without_white_space(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// The error that holds back a rewrite removing most of a guarded file
/// (see [`MOSTLY_DROPPED`]), the first time it is asked for in this send,
/// in a profile that holds large writes ([`super::WriteHelp::hold_large_writes`]):
/// which lines and definitions it removes, and how to go on. `None` lets
/// the write land.
fn hold_back(target: &Confined, old: &str, shown: &str, content: &str, ctx: &ToolContext) -> Option<String> {
    let (removed, total) = removed_lines(old, content);
    let kept = total - removed.len();
    if !ctx.help.hold_large_writes
        || total < GUARDED_LINES
        || kept * 100 >= total * MOSTLY_DROPPED
        || !ctx.warn_once(target.path())
    {
        return None;
    }
    let defs = super::references::defined_names(old);
    let gone: Vec<String> = defs
        .iter()
        .filter(|d| !super::references::defined_names(content).contains(d))
        .map(|d| format!("`{d}`"))
        .collect();
    let what =
        if gone.is_empty() { String::new() } else { format!(", among them the definitions of {}", gone.join(", ")) };
    let quoted: String = removed.iter().take(SHOWN_REMOVED).map(|(n, l)| format!("{n:>6}\t{l}\n")).collect();
    let more = removed.len().saturating_sub(SHOWN_REMOVED);
    let more = if more > 0 { format!("  ({more} more lines)\n") } else { String::new() };
    let head = format!(
        "not written (held back once): this would remove {} of the {total} non-blank lines of {shown}{what}. \
         Lines it removes:\n{quoted}{more}",
        removed.len()
    );
    if let Some(keep) = keeping_the_rest(old, content, &defs, shown) {
        return Some(format!("{head}{keep}"));
    }
    Some(format!(
        "{head}If that is what you mean, call write_file again with the same arguments and it is written exactly as \
         given. To add or change only part of the file, use edit_file instead."
    ))
}

/// An old file up to this size (bytes) is quoted whole in the call that
/// keeps it ([`keeping_the_rest`]).
const KEPT_WHOLE: usize = 4_000;

/// When `content` defines only names the old file did not (`old_defs`)
/// and keeps none of the old file's definitions, so that it reads as "the
/// new part alone": how to go on, with the ready call that writes the old
/// file followed by `content` (separated as the old file separates its
/// blocks, one or two blank lines) beside the call that replaces the file.
/// The model still chooses: nothing is merged unless it sends that call.
/// `None` when the shape does not fit or the old file is over
/// [`KEPT_WHOLE`] bytes.
fn keeping_the_rest(old: &str, content: &str, old_defs: &[String], shown: &str) -> Option<String> {
    let new_defs = super::references::defined_names(content);
    if old_defs.is_empty()
        || old.len() > KEPT_WHOLE
        || new_defs.is_empty()
        || new_defs.iter().any(|d| old_defs.contains(d))
    {
        return None;
    }
    let blank =
        old.lines().fold(
            (0usize, 0usize),
            |(run, most), l| {
                if l.trim().is_empty() { (run + 1, most.max(run + 1)) } else { (0, most) }
            },
        );
    let gap = "\n".repeat(1 + blank.1.clamp(1, 2));
    let both = format!("{}{gap}{}", old.trim_end(), content.trim_start_matches(['\n', '\r']));
    let call = serde_json::json!({"name": "write_file", "arguments": {"file_path": shown, "content": both}});
    let names: Vec<String> = new_defs.iter().map(|d| format!("`{d}`")).collect();
    let names = names.join(", ");
    Some(format!(
        "Your content defines only {names}, which {shown} does not have yet. To add {names} and keep the rest of \
         {shown}, make this call (the file as it is, then your content):\n```json\n{call}\n```\n(Only to replace \
         the whole file with {names} alone, send your own call again.)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removed_lines_are_counted_and_quoted() {
        let old = "import os\n\ndef a():\n    return 1\n\ndef b():\n    return 2\n";
        let (removed, total) = removed_lines(old, "import os\n\ndef a():\n    return 1\n");
        assert_eq!(total, 5);
        assert_eq!(removed, vec![(6, "def b():"), (7, "    return 2")]);
    }

    #[test]
    fn a_file_laid_out_anew_keeps_its_lines() {
        let old = "{\n  \"name\": \"web\",\n  \"port\": \"8O80\",\n  \"debug\": false\n}\n";
        // The same settings on one line, one value changed: one line removed.
        let (removed, total) = removed_lines(old, "{\"name\": \"web\",\"port\": 8080,\"debug\": false}");
        assert_eq!(total, 5);
        assert_eq!(removed, vec![(3, "  \"port\": \"8O80\",")]);
        // A file replaced by one of its values keeps none of it.
        let (removed, _) = removed_lines(old, "8080");
        assert_eq!(removed.len(), 5);
    }

    #[test]
    fn a_write_lands_byte_for_byte_or_is_held_back_once() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let old = "def a():\n    return 1\n\ndef b():\n    return 2\n\ndef c():\n    return 3\n";
        std::fs::write(root.join("m.py"), old).unwrap();
        // By default (no profile's help) the same rewrite lands at once.
        let exact = ToolContext::new(root.clone(), vec![], Default::default());
        let only_a = "def a():\n    return 1\n";
        let done = run(Args { file_path: "m.py".into(), content: only_a.into() }, &exact).unwrap();
        assert!(matches!(done.effect, Effect::Changed { .. }), "{done:?}");
        assert_eq!(std::fs::read_to_string(root.join("m.py")).unwrap(), only_a);
        std::fs::write(root.join("m.py"), old).unwrap();
        let mut ctx = ToolContext::new(root.clone(), vec![], Default::default());
        ctx.help.hold_large_writes = true;
        let args = |c: &str| Args { file_path: "m.py".into(), content: c.into() };
        // Only trailing white space differs: written, not "no change".
        let spaced = format!("{old}\n");
        let done = run(args(&spaced), &ctx).unwrap();
        assert!(matches!(done.effect, Effect::Changed { relaid: true, .. }), "{done:?}");
        assert!(done.text.contains("the same lines as before"), "{}", done.text);
        assert_eq!(std::fs::read_to_string(root.join("m.py")).unwrap(), spaced);
        let same = run(args(&spaced), &ctx).unwrap();
        assert!(matches!(same.effect, Effect::Unchanged { .. }), "{same:?}");
        // Dropping two of three functions: held back, then written as sent.
        match run(args(only_a), &ctx) {
            Err(ToolError::HeldBack { message, .. }) => {
                assert!(message.contains("`b`") && message.contains("`c`") && message.contains("return 3"), "{message}")
            }
            other => panic!("not held back: {other:?}"),
        }
        assert_eq!(std::fs::read_to_string(root.join("m.py")).unwrap(), spaced, "nothing written");
        let done = run(args(only_a), &ctx).unwrap();
        assert!(matches!(done.effect, Effect::Changed { relaid: false, .. }), "{done:?}");
        assert_eq!(std::fs::read_to_string(root.join("m.py")).unwrap(), only_a, "exactly as sent, never merged");
    }

    #[test]
    fn a_directory_path_or_a_file_in_the_way_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("notes"), "a file\n").unwrap();
        let ctx = ToolContext::new(root.clone(), vec![], Default::default());
        let args = |p: &str| Args { file_path: p.into(), content: "x\n".into() };
        let Err(ToolError::Failed(why)) = run(args("newdir/"), &ctx) else { panic!("a directory path was written") };
        assert!(why.contains("names a directory"), "{why}");
        assert!(!root.join("newdir").exists(), "no file named after the directory");
        let Err(ToolError::Failed(why)) = run(args("notes/today.md"), &ctx) else { panic!("written under a file") };
        assert!(why.contains("notes is a file"), "{why}");
        assert_eq!(std::fs::read_to_string(root.join("notes")).unwrap(), "a file\n");
    }

    #[test]
    fn new_definitions_alone_are_offered_the_call_that_keeps_the_file() {
        let old = "def mean(v):\n    return sum(v) / len(v)\n\n\ndef spread(v):\n    return max(v) - min(v)\n";
        let defs = crate::tools::references::defined_names(old);
        let clamp = "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n";
        let keep = keeping_the_rest(old, clamp, &defs, "m.py").expect("offered");
        assert!(keep.contains("defines only `clamp`"), "{keep}");
        let call = keep.split("```json\n").nth(1).and_then(|c| c.split("\n```").next()).expect("a call block");
        assert!(keep.ends_with("send your own call again.)"), "replacing stays possible: {keep}");
        let call: serde_json::Value = serde_json::from_str(call).unwrap();
        assert_eq!(call["name"], "write_file");
        assert_eq!(call["arguments"]["file_path"], "m.py");
        // The old file as it is, its own two-blank-line gap, then the content.
        assert_eq!(call["arguments"]["content"], format!("{old}\n\n{clamp}"));
        // A rewrite of a name the file has is not "new definitions alone".
        assert_eq!(keeping_the_rest(old, "def mean(v):\n    return 0\n", &defs, "m.py"), None);
        // Content that defines nothing is not either.
        assert_eq!(keeping_the_rest(old, "print(1)\n", &defs, "m.py"), None);
    }
}
