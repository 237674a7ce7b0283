//! `edit_file {file_path, old_string, new_string, replace_all?}`: string
//! replacement that tolerates a small model's copying.
//!
//! Owns: the match tiers, each requiring a unique match (unless
//! `replace_all`, exact only): exact; lines equal once trimmed (re-indented);
//! equal once all whitespace is ignored (only the changed part is spliced in,
//! see [`super::edit_match`]); the same lines with a few file lines left out
//! of `old_string`; then an error saying the send's own earlier write took
//! `old_string` away, or quoting the closest region. Also: keeping the
//! file's line endings (CRLF files get CRLF replacements), the atomic
//! write, and the excerpt that shows the model what changed.

use schemars::JsonSchema;
use serde::Deserialize;

use super::confine::Confined;
use super::read_file::MAX_FILE_BYTES;
use super::{Done, Effect, ToolContext, ToolError};

/// Characters `new_string` needs (trimmed) before an edit whose
/// `old_string` is missing and whose `new_string` is present counts as made.
const MIN_ALREADY_CHARS: usize = 8;

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

/// What the model is told the tool does. It still asks for an exact copy:
/// the tolerant tiers are a safety net, and the prompt the demo model is
/// checked with in CI stays the one it passes with.
pub const DESCRIPTION: &str = "Replace an exact string in a file. old_string must match exactly (including whitespace) and be unique unless replace_all is true.";

/// Applies the edit. Errors (to the model): empty or identical strings, no
/// match (with the closest line), several matches without `replace_all`
/// (with their lines), binary or unreadable files. A rename's result ends
/// with the uses of the old name left in the workspace
/// ([`super::references`]).
pub fn run(args: Args, ctx: &ToolContext) -> Result<Done, ToolError> {
    let renamed = super::references::renamed_in_edit(&args.old_string, &args.new_string);
    let file_path = args.file_path.clone();
    let new_string = args.new_string.clone();
    let (done, updated, path, before) = apply(args, ctx)?;
    if updated == before {
        // "No change" is said only of the same bytes, and then always.
        let shown = ctx.display(&path);
        let around = updated.find(new_string.trim()).map_or_else(String::new, |at| {
            format!(
                " Lines around it:\n{}",
                excerpt(&updated, line_of(&updated, at), new_string.trim().lines().count())
            )
        });
        return Ok(Done {
            text: format!("no change: {shown} already holds what this edit makes, so nothing was written.{around}"),
            effect: Effect::Unchanged { path },
        });
    }
    let note = super::references::still_used(ctx, &renamed, super::references::Why::Renamed).unwrap_or_default();
    Ok(Done {
        text: done + &note + &super::syntax::after_write(ctx, &file_path),
        effect: Effect::Changed { hash: super::content_hash(updated.as_bytes()), path, created: false, relaid: false },
    })
}

/// What a successful edit returns: the text for the model, the file's new
/// content, its path, and its content before.
type Applied = (String, String, std::path::PathBuf, String);

/// Writes `updated` over the file that held `before`; when they are the
/// same bytes (a tolerant tier made the edit a no-op) nothing is written.
fn write(ctx: &ToolContext, target: &Confined, before: &str, updated: &str, shown: &str) -> Result<(), ToolError> {
    if updated == before {
        return Ok(());
    }
    ctx.write_text(target, updated).map_err(|e| ToolError::Failed(format!("{shown}: write failed: {e}")))
}

fn apply(args: Args, ctx: &ToolContext) -> Result<Applied, ToolError> {
    let target = ctx.resolve(&args.file_path)?;
    let path = target.path().to_path_buf();
    let shown = ctx.display(&path);
    if args.old_string.is_empty() {
        return fail("old_string is empty; use write_file to create a file");
    }
    if args.old_string == args.new_string {
        return fail("old_string and new_string are identical; nothing to change");
    }
    let content = match read_text(ctx, &target) {
        Ok(c) => c,
        Err(e) if !target.exists() => {
            return match super::elsewhere::note(ctx, &path, &args.old_string, &args.new_string) {
                Some(there) => {
                    let message = format!("{shown}: {e}. {}", there.text);
                    match there.made_in {
                        Some(made_in) => made_already(made_in, message),
                        None => fail(message),
                    }
                }
                None => fail(format!("{shown}: {e}. {}", ctx.nearby(&path))),
            };
        }
        Err(e) => return fail(format!("{shown}: {e}")),
    };
    ctx.mark_read(&path);
    ctx.note_write(&path, Some(&content));
    let crlf = content.contains("\r\n");
    let (old, new) = if crlf && !args.old_string.contains("\r\n") {
        (args.old_string.replace('\n', "\r\n"), args.new_string.replace('\n', "\r\n"))
    } else {
        (args.old_string.clone(), args.new_string.clone())
    };
    let starts: Vec<usize> = content.match_indices(&old).map(|(i, _)| i).collect();
    if starts.is_empty() {
        // The edit looks made already (a small model repeats its last call):
        // nothing is written, and the error says where new_string stands.
        let made = content.find(new.trim()).or_else(|| match &loose_matches(&content, &args.new_string)[..] {
            [(from, _, _)] if loose_matches(&content, &args.old_string).is_empty() => Some(*from),
            _ => None,
        });
        if let Some(at) = made.filter(|_| new.trim().len() >= MIN_ALREADY_CHARS) {
            return Err(ToolError::Failed(format!(
                "{shown}: old_string not found, and nothing was written; new_string is already in the file (at \
                 line {}), so this edit looks made already. Go on with the rest of the task.",
                line_of(&content, at)
            )));
        }
        // Same lines but for indentation and trailing spaces: edit them, re-indented.
        if let [(from, to, indent)] = &loose_matches(&content, &args.old_string)[..] {
            let (from, to) = (*from, *to);
            let eol = if crlf { "\r\n" } else { "\n" };
            let replacement = reindent(&args.new_string, indent, &args.old_string, eol);
            let updated = format!("{}{replacement}{}", &content[..from], &content[to..]);
            write(ctx, &target, &content, &updated, &shown)?;
            let first_line = line_of(&content, from);
            let text = format!(
                "edited {shown}: old_string matched lines {first_line}-{} only when ignoring indentation and \
                 trailing spaces; replaced them, re-indented. Lines around the change:\n{}",
                first_line + args.old_string.trim_matches('\n').lines().count() - 1,
                excerpt(&updated, first_line, replacement.lines().count())
            );
            return Ok((text, updated, path, content));
        }
        // The same text in another layout (squeezed onto one line, re-wrapped):
        // only the part that differs from new_string is replaced.
        if let Some(splice) = super::edit_match::squeezed(&content, &old, &new) {
            let updated = format!("{}{}{}", &content[..splice.from], splice.replacement, &content[splice.to..]);
            write(ctx, &target, &content, &updated, &shown)?;
            let (first, last) = splice.lines;
            let changed = &content[splice.from..splice.to];
            let text = format!(
                "edited {shown}: old_string matched lines {first}-{last} only when ignoring whitespace, line \
                 breaks and quotes; replaced {changed:?} with {:?} there and kept the file's layout. Lines around the change:\n{}",
                splice.replacement,
                excerpt(&updated, first, last - first + 1)
            );
            return Ok((text, updated, path, content));
        }
        // The same lines with a few of the file's left out (a docstring, a
        // comment): the lines that differ from new_string change in place.
        if let Some(g) = super::edit_match::gapped(&content, &args.old_string, &args.new_string) {
            write(ctx, &target, &content, &g.updated, &shown)?;
            let (first, last) = g.lines;
            let skipped: Vec<String> = g.skipped.iter().map(usize::to_string).collect();
            let left_out = if skipped.is_empty() {
                "blank lines".to_owned()
            } else {
                format!("line{} {}", if skipped.len() == 1 { "" } else { "s" }, skipped.join(", "))
            };
            let span = (last + g.updated.lines().count()).saturating_sub(content.lines().count());
            let text = format!(
                "edited {shown}: old_string matched lines {first}-{last} with {left_out} left out of it (kept as \
                 they are); changed the lines that differ in new_string. Lines around the change:\n{}",
                excerpt(&g.updated, first, span.saturating_sub(first) + 1)
            );
            return Ok((text, g.updated, path, content));
        }
        // The file held old_string when the send first went to change it:
        // the send's own earlier call changed that part.
        if ctx.held_before(&path, &old) {
            let message = super::edit_made::gone_since(&shown, new.trim().is_empty());
            return if new.trim().is_empty() { made_already(path, message) } else { fail(message) };
        }
        // Another file holds the text as written: the model guessed the file.
        if let Some(there) = super::elsewhere::note(ctx, &path, &args.old_string, &args.new_string) {
            let message = format!("{shown}: old_string not found, and nothing was written. {}", there.text);
            return match there.made_in {
                Some(made_in) => made_already(made_in, message),
                None => fail(message),
            };
        }
        let region = super::edit_match::closest_region(&content, &args.old_string);
        let hint = if region.is_empty() { near_miss(&content, &args.old_string) } else { region };
        return fail(format!(
            "{shown}: old_string not found (not even ignoring whitespace). {}\nCopy old_string exactly from the \
             file (a shorter old_string, one or two whole lines, is safer).",
            hint.trim_end()
        ));
    }
    if starts.len() > 1 && !args.replace_all {
        return fail(super::edit_many::answer(&shown, &content, &starts, &old, &new));
    }
    // new_string runs on with lines the file has right after (or before)
    // the match: they are replaced, not written twice.
    if let [start] = starts[..]
        && !args.replace_all
        && let Some(w) = super::edit_overlap::widen(&content, start, start + old.len(), &old, &new)
    {
        let mut new = new.clone();
        if w.after > 0 && new.ends_with('\n') && content[w.to..].starts_with(['\n', '\r']) {
            new.pop();
        }
        let updated = format!("{}{new}{}", &content[..w.from], &content[w.to..]);
        write(ctx, &target, &content, &updated, &shown)?;
        let first_line = line_of(&updated, w.from);
        let lines = |n: usize| if n == 1 { "1 line".to_owned() } else { format!("{n} lines") };
        let taken = match (w.before, w.after) {
            (0, a) => format!("{} the file already had after old_string", lines(a)),
            (b, 0) => format!("{} the file already had before old_string", lines(b)),
            (b, a) => format!("{} before and {} after old_string that the file already had", lines(b), lines(a)),
        };
        let text = format!(
            "edited {shown}: new_string also held {taken}, so those were replaced too (not written twice). Lines \
             around the change:\n{}",
            excerpt(&updated, first_line, new.matches('\n').count() + 1)
        );
        return Ok((text, updated, path, content));
    }
    if let Some(at) = super::edit_made::inside_new_string(&content, &starts, &old, &new) {
        return made_already(path, super::edit_made::made_again(&shown, line_of(&content, at)));
    }
    // A one-occurrence edit that starts at an indented line's first
    // character: the continuation lines of `new_string` are read relative
    // to that column and get the line's indentation.
    let line_start = content[..starts[0]].rfind('\n').map_or(0, |i| i + 1);
    let indent = &content[line_start..starts[0]];
    let new = if !args.replace_all && !indent.is_empty() && indent.trim().is_empty() && new.contains('\n') {
        let mut lines = new.split('\n');
        let first = lines.next().unwrap_or("").to_owned();
        lines.fold(first, |acc, l| {
            let l2 = if l.trim().is_empty() { l.to_owned() } else { format!("{indent}{l}") };
            format!("{acc}\n{l2}")
        })
    } else {
        new
    };
    let updated = if args.replace_all { content.replace(&old, &new) } else { content.replacen(&old, &new, 1) };
    write(ctx, &target, &content, &updated, &shown)?;
    let first_line = line_of(&content, starts[0]);
    let new_lines = new.matches('\n').count() + 1;
    let text = format!(
        "edited {shown}: replaced {} occurrence{} ({} → {} bytes). Lines around the first change:\n{}",
        starts.len(),
        if starts.len() == 1 { "" } else { "s" },
        content.len(),
        updated.len(),
        excerpt(&updated, first_line, new_lines)
    );
    Ok((text, updated, path, content))
}

/// `Err(ToolError::Failed(message))`.
fn fail<T>(message: impl Into<String>) -> Result<T, ToolError> {
    Err(ToolError::Failed(message.into()))
}

/// `Err(ToolError::MadeAlready { path, message })`: the edit looks made in `path`.
fn made_already<T>(path: std::path::PathBuf, message: String) -> Result<T, ToolError> {
    Err(ToolError::MadeAlready { path, message })
}

fn read_text(ctx: &ToolContext, target: &Confined) -> Result<String, String> {
    ctx.read_text(target, MAX_FILE_BYTES).map_err(|e| match e.kind() {
        std::io::ErrorKind::InvalidData if e.to_string() == "binary file" => {
            "binary file; edit_file only edits text".to_owned()
        }
        std::io::ErrorKind::InvalidData | std::io::ErrorKind::FileTooLarge => e.to_string(),
        _ => format!("cannot open: {e}"),
    })
}

/// Regions of `content` whose lines equal the lines of `old` once each
/// side is trimmed (indentation and trailing spaces ignored; blank lines
/// around `old` dropped): `(start, end, indentation of the first line)`,
/// byte offsets of whole lines without the last line ending.
fn loose_matches(content: &str, old: &str) -> Vec<(usize, usize, String)> {
    let wanted: Vec<&str> = old.trim_matches(|c| c == '\n' || c == '\r').lines().map(str::trim).collect();
    if wanted.is_empty() || wanted.iter().all(|l| l.is_empty()) {
        return Vec::new();
    }
    let mut lines = Vec::new(); // (start, end without line ending)
    let mut at = 0;
    for line in content.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        lines.push((at, at + body.len()));
        at += line.len();
    }
    let text = |i: usize| &content[lines[i].0..lines[i].1];
    let mut found = Vec::new();
    for i in 0..lines.len().saturating_sub(wanted.len() - 1) {
        if (0..wanted.len()).all(|j| text(i + j).trim() == wanted[j]) {
            let indent: String = text(i).chars().take_while(|c| c.is_whitespace()).collect();
            found.push((lines[i].0, lines[i + wanted.len() - 1].1, indent));
        }
    }
    found
}

/// `new` with the indentation of `old`'s first line replaced by `indent`,
/// lines joined with `eol`.
fn reindent(new: &str, indent: &str, old: &str, eol: &str) -> String {
    let first_old = old.trim_matches(|c| c == '\n' || c == '\r').lines().next().unwrap_or("");
    let old_indent: String = first_old.chars().take_while(|c| c.is_whitespace()).collect();
    new.trim_matches(|c| c == '\n' || c == '\r')
        .lines()
        .map(|l| {
            let l = l.trim_end_matches('\r');
            if l.trim().is_empty() {
                String::new()
            } else {
                format!("{indent}{}", l.strip_prefix(old_indent.as_str()).unwrap_or(l.trim_start()))
            }
        })
        .collect::<Vec<_>>()
        .join(eol)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indentation_differences_are_tolerated_and_reindented() {
        let content = "def f(values):\n    total = sum(values)\n    return total / len(values)\n";
        let old = "total = sum(values)\nreturn total / len(values)";
        let [(from, to, indent)] = &loose_matches(content, old)[..] else { panic!("one match") };
        assert_eq!(indent, "    ");
        let new = "if not values:\n    return 0.0\ntotal = sum(values)\nreturn total / len(values)";
        let out = format!("{}{}{}", &content[..*from], reindent(new, indent, old, "\n"), &content[*to..]);
        assert_eq!(
            out,
            "def f(values):\n    if not values:\n        return 0.0\n    total = sum(values)\n    return total / len(values)\n"
        );
        assert!(loose_matches("a\nb\na\nb\n", "a\nb").len() == 2, "ambiguous: no loose edit");
    }
}
