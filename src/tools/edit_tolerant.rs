//! `edit_file`'s help for small models, on only in a profile with
//! `tolerant_edits` ([`WriteHelp`](super::context::WriteHelp)): what a model that copies badly
//! needs, and what a model that copies exactly must never get (an exact
//! edit would land somewhere else than sent).
//!
//! Owns, for an `old_string` the file does not hold exactly ([`miss`]), the
//! tiers tried in order, each requiring a unique match: `new_string`
//! already in the file (the edit looks made); the same lines once trimmed
//! (replaced re-indented); the same text once all white space is ignored
//! (only the changed part spliced in, [`super::edit_match::squeezed`]); the
//! same lines with a few file lines left out ([`super::edit_match::gapped`]);
//! the send's own earlier change took it away; another file holds it; else
//! the closest region. For an `old_string` found once ([`single`]): a
//! `new_string` that runs on with lines the file has around the match
//! replaces them ([`super::edit_overlap`]), an edit the file already shows
//! made is answered so ([`super::edit_made`]), and continuation lines of a
//! `new_string` that starts at an indented line's first character get that
//! line's indentation.

use super::context::ToolContext;
use super::edit_made::MIN_ALREADY_CHARS;
use super::edit_write::{Applied, Edit, excerpt, fail, line_of, made_already, near_miss, write};
use super::error::ToolError;

/// The tiers for an `old_string` the file does not hold exactly (`old_string`
/// and `new_string` as sent).
pub(super) fn miss(ctx: &ToolContext, old_string: &str, new_string: &str, e: &Edit<'_>) -> Result<Applied, ToolError> {
    let (content, shown, path) = (e.content, e.shown, e.target.path().to_path_buf());
    // The edit looks made already (a small model repeats its last call):
    // nothing is written, and the error says where new_string stands.
    let made = content.find(e.new.trim()).or_else(|| match &loose_matches(content, new_string)[..] {
        [(from, _, _)] if loose_matches(content, old_string).is_empty() => Some(*from),
        _ => None,
    });
    if let Some(at) = made.filter(|_| e.new.trim().len() >= MIN_ALREADY_CHARS) {
        return fail(format!(
            "{shown}: old_string not found, and nothing was written; new_string is already in the file (at line \
             {}), so this edit looks made already. Go on with the rest of the task.",
            line_of(content, at)
        ));
    }
    // Same lines but for indentation and trailing spaces: edit them, re-indented.
    if let [(from, to, indent)] = &loose_matches(content, old_string)[..] {
        let (from, to) = (*from, *to);
        // The line endings the matched lines have (the file's, at its end).
        let crlf = content[to..].starts_with("\r\n") || (to == content.len() && e.crlf);
        let eol = if crlf { "\r\n" } else { "\n" };
        let replacement = reindent(new_string, indent, old_string, eol);
        let updated = format!("{}{replacement}{}", &content[..from], &content[to..]);
        write(ctx, e.target, content, &updated, shown)?;
        let first_line = line_of(content, from);
        let text = format!(
            "edited {shown}: old_string matched lines {first_line}-{} only when ignoring indentation and trailing \
             spaces; replaced them, re-indented. Lines around the change:\n{}",
            first_line + old_string.trim_matches('\n').lines().count() - 1,
            excerpt(&updated, first_line, replacement.lines().count())
        );
        return Ok((text, updated, path, content.to_owned()));
    }
    // The same text in another layout (squeezed onto one line, re-wrapped):
    // only the part that differs from new_string is replaced.
    if let Some(splice) = super::edit_match::squeezed(content, e.old, e.new) {
        let updated = format!("{}{}{}", &content[..splice.from], splice.replacement, &content[splice.to..]);
        write(ctx, e.target, content, &updated, shown)?;
        let (first, last) = splice.lines;
        let changed = &content[splice.from..splice.to];
        let text = format!(
            "edited {shown}: old_string matched lines {first}-{last} only when ignoring whitespace, line breaks and \
             quotes; replaced {changed:?} with {:?} there and kept the file's layout. Lines around the change:\n{}",
            splice.replacement,
            excerpt(&updated, first, last - first + 1)
        );
        return Ok((text, updated, path, content.to_owned()));
    }
    // The same lines with a few of the file's left out (a docstring, a
    // comment): the lines that differ from new_string change in place.
    if let Some(g) = super::edit_match::gapped(content, old_string, new_string) {
        write(ctx, e.target, content, &g.updated, shown)?;
        let (first, last) = g.lines;
        let skipped: Vec<String> = g.skipped.iter().map(usize::to_string).collect();
        let left_out = if skipped.is_empty() {
            "blank lines".to_owned()
        } else {
            format!("line{} {}", if skipped.len() == 1 { "" } else { "s" }, skipped.join(", "))
        };
        let span = (last + g.updated.lines().count()).saturating_sub(content.lines().count());
        let text = format!(
            "edited {shown}: old_string matched lines {first}-{last} with {left_out} left out of it (kept as they \
             are); changed the lines that differ in new_string. Lines around the change:\n{}",
            excerpt(&g.updated, first, span.saturating_sub(first) + 1)
        );
        return Ok((text, g.updated, path, content.to_owned()));
    }
    // The file held old_string when the send first went to change it:
    // the send's own earlier call changed that part.
    if ctx.held_before(&path, e.old) {
        let message = super::edit_made::gone_since(shown, e.new.trim().is_empty());
        return if e.new.trim().is_empty() { made_already(path, message) } else { fail(message) };
    }
    // Another file holds the text as written: the model guessed the file.
    if let Some(there) = super::find_in_files::note(ctx, &path, old_string, new_string) {
        let message = format!("{shown}: old_string not found, and nothing was written. {}", there.text);
        return match there.made_in {
            Some(made_in) => made_already(made_in, message),
            None => fail(message),
        };
    }
    let region = super::edit_match::closest_region(content, old_string);
    let hint = if region.is_empty() { near_miss(content, old_string) } else { region };
    fail(format!(
        "{shown}: old_string not found (not even ignoring whitespace). {}\nCopy old_string exactly from the file (a \
         shorter old_string, one or two whole lines, is safer).",
        hint.trim_end()
    ))
}

/// For an `old_string` found once at `start`: `Some` when the help decides
/// the call (a widened replacement written, or an edit made already);
/// else `None`, with `new` re-indented where it starts at an indented
/// line's first character.
pub(super) fn single(
    ctx: &ToolContext,
    e: &Edit<'_>,
    start: usize,
    new: &mut String,
) -> Option<Result<Applied, ToolError>> {
    let (content, shown, path) = (e.content, e.shown, e.target.path().to_path_buf());
    // new_string runs on with lines the file has right after (or before)
    // the match: they are replaced, not written twice.
    if let Some(w) = super::edit_overlap::widen(content, start, start + e.old.len(), e.old, new) {
        if w.after > 0 && new.ends_with('\n') && content[w.to..].starts_with(['\n', '\r']) {
            new.pop();
        }
        let updated = format!("{}{new}{}", &content[..w.from], &content[w.to..]);
        if let Err(err) = write(ctx, e.target, content, &updated, shown) {
            return Some(Err(err));
        }
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
        return Some(Ok((text, updated, path, content.to_owned())));
    }
    if let Some(at) = super::edit_made::inside_new_string(content, &[start], e.old, new) {
        return Some(made_already(path, super::edit_made::made_again(shown, line_of(content, at))));
    }
    // A one-occurrence edit that starts at an indented line's first
    // character: the continuation lines of `new_string` are read relative
    // to that column and get the line's indentation.
    let line_start = content[..start].rfind('\n').map_or(0, |i| i + 1);
    let indent = &content[line_start..start];
    if !indent.is_empty() && indent.trim().is_empty() && new.contains('\n') {
        let mut lines = new.split('\n');
        let first = lines.next().unwrap_or("").to_owned();
        *new = lines.fold(first, |acc, l| {
            let l2 = if l.trim().is_empty() { l.to_owned() } else { format!("{indent}{l}") };
            format!("{acc}\n{l2}")
        });
    }
    None
}

/// Regions of `content` whose lines equal the lines of `old` once each
/// side is trimmed (indentation and trailing spaces ignored; blank lines
/// around `old` dropped): `(start, end, indentation of the first line)`,
/// byte offsets of whole lines without the last line ending.
pub(super) fn loose_matches(content: &str, old: &str) -> Vec<(usize, usize, String)> {
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
