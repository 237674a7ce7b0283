//! What `edit_file` and its tolerant tiers (`edit_tolerant`) share once
//! the file is read: the file and what the edit is to replace in it
//! ([`Edit`]), writing the new text ([`write`]) and what a made edit
//! returns ([`Applied`]), the two ways an edit fails ([`fail`],
//! [`made_already`]), the numbered lines that show the model where
//! ([`line_of`], [`excerpt`], [`near_miss`]) or what differs when the text
//! is there but for its last line break, its line endings or its white
//! space ([`ending_hint`], [`white_space_differences`]), and where `old_string` is
//! with the one line-ending tolerance of the default ([`locate`]: the text
//! as sent first, its CRLF form only when that occurs nowhere). Both build
//! on it, and `edit_file` calls the tiers, never the other way.

use super::confine::Confined;
use super::context::ToolContext;
use super::error::ToolError;

/// The file as read, and what the edit is to replace in it (`old`, `new`:
/// as [`locate`] gives them).
pub(super) struct Edit<'a> {
    pub target: &'a Confined,
    pub shown: &'a str,
    pub content: &'a str,
    /// Every line ending of the file is CRLF ([`all_crlf`]).
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

/// Where `old_string` is in the file, and what replaces it there.
pub(super) struct Located {
    /// Byte offsets of the (non-overlapping) matches of `old`; empty when
    /// it occurs nowhere.
    pub starts: Vec<usize>,
    /// The text looked for: `old_string` as sent, or its CRLF form.
    pub old: String,
    /// The text written: `new_string` as sent, or its CRLF form.
    pub new: String,
    /// The line-ending conversion made, as the result says it ("" for none).
    pub endings: &'static str,
}

/// Finds `old` in `content` as sent first: where it occurs, its count
/// decides (once, or ambiguous). Only when it occurs nowhere is its CRLF
/// form looked for (a CRLF file edited with LF text). `new`'s LF line
/// breaks become CRLF only when the match was found so, or, for an `old`
/// without a line break, when every line ending of the file is CRLF; else
/// `new` lands as sent. With no match at all (what the tolerant tiers
/// look for and splice in), `old` is its CRLF form in a file with any CRLF
/// ending, `new` in a file whose every line ending is CRLF.
pub(super) fn locate(content: &str, old: &str, new: &str) -> Located {
    let at = |needle: &str| -> Vec<usize> { content.match_indices(needle).map(|(i, _)| i).collect() };
    let starts = at(old);
    if !starts.is_empty() {
        let crlf_new = to_crlf(new);
        if !old.contains('\n') && crlf_new != new && all_crlf(content) {
            let endings = " new_string's LF line breaks were written as CRLF, the line endings of the whole file.";
            return Located { starts, old: old.to_owned(), new: crlf_new, endings };
        }
        return Located { starts, old: old.to_owned(), new: new.to_owned(), endings: "" };
    }
    let crlf_old = to_crlf(old);
    let has_crlf = content.contains("\r\n");
    if crlf_old != old && has_crlf {
        let starts = at(&crlf_old);
        if !starts.is_empty() {
            let crlf_new = to_crlf(new);
            let endings = if crlf_new != new {
                " old_string (sent with LF line endings) was matched with the CRLF ones the file has there, and \
                 new_string's LF line breaks were written as CRLF."
            } else {
                " old_string (sent with LF line endings) was matched with the CRLF ones the file has there."
            };
            return Located { starts, old: crlf_old, new: crlf_new, endings };
        }
    }
    let old = if has_crlf { crlf_old } else { old.to_owned() };
    let new = if all_crlf(content) { to_crlf(new) } else { new.to_owned() };
    Located { starts: Vec::new(), old, new, endings: "" }
}

/// `s` with every LF not already after a CR made CRLF.
pub(super) fn to_crlf(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 16);
    let mut after_cr = false;
    for c in s.chars() {
        if c == '\n' && !after_cr {
            out.push('\r');
        }
        out.push(c);
        after_cr = c == '\r';
    }
    out
}

/// The file has line breaks and every one is CRLF.
pub(super) fn all_crlf(content: &str) -> bool {
    let lf = content.matches('\n').count();
    lf > 0 && content.matches("\r\n").count() == lf
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

/// When `old` (as sent) is in the file but for its line breaks, says so:
/// the file has no final line break where `old` ends with one, or the text
/// is there with other line endings (CRLF against LF). `None` otherwise.
pub(super) fn ending_hint(content: &str, old: &str) -> Option<String> {
    let stem = old.strip_suffix('\n').map(|s| s.strip_suffix('\r').unwrap_or(s));
    if let Some(stem) = stem.filter(|s| !s.trim().is_empty())
        && !content.ends_with('\n')
        && (content.ends_with(stem) || content.ends_with(&to_crlf(stem)))
    {
        return Some(format!(
            "The file does not end with a line break, and old_string does: its last line (line {}) is \
             old_string's last line without the line break after it. Drop that final line break from old_string \
             (and end new_string with one only if the file is to end with one).",
            line_of(content, content.len())
        ));
    }
    let unix = |s: &str| s.replace("\r\n", "\n");
    let (file, wanted) = (unix(content), unix(old));
    if !wanted.contains('\n') {
        return None;
    }
    let at = file.find(&wanted)?;
    let (first, last) = (line_of(&file, at), line_of(&file, at + wanted.len() - 1));
    let breaks = wanted.matches('\n').count();
    let kinds = |lines: &mut dyn Iterator<Item = &str>| {
        let (mut crlf, mut lf) = (false, false);
        for l in lines.filter(|l| l.ends_with('\n')) {
            if l.ends_with("\r\n") { crlf = true } else { lf = true }
        }
        match (crlf, lf) {
            (true, true) => "CRLF and LF",
            (true, false) => "CRLF",
            _ => "LF",
        }
    };
    let in_file = kinds(&mut content.split_inclusive('\n').skip(first - 1).take(breaks));
    let in_old = kinds(&mut old.split_inclusive('\n'));
    Some(format!(
        "Lines {first}-{last} hold old_string's text, but with other line endings: the file's line breaks there \
         are {in_file}, old_string's are {in_old}. Send old_string with the file's line endings (\"\\r\\n\" for CRLF, \
         \"\\n\" for LF), or a shorter old_string within one line."
    ))
}

/// What tells `old` from the file's lines `content[from..to]` (a match
/// that ignores each line's leading and trailing white space): per line,
/// the indentation or the trailing white space that differs, at most four.
pub(super) fn white_space_differences(content: &str, from: usize, to: usize, old: &str) -> Vec<String> {
    let name = |ws: &str| {
        let (spaces, tabs) = (ws.matches(' ').count(), ws.matches('\t').count());
        let count = |n: usize, what: &str| if n == 1 { format!("1 {what}") } else { format!("{n} {what}s") };
        match (spaces, tabs) {
            (0, 0) if ws.is_empty() => "none".to_owned(),
            (0, 0) => format!("{ws:?}"),
            (s, 0) => count(s, "space"),
            (0, t) => count(t, "tab"),
            (s, t) => format!("{} and {}", count(t, "tab"), count(s, "space")),
        }
    };
    let file_lines = content[from..to].split('\n').map(|l| l.trim_end_matches('\r'));
    let old_lines = old.trim_matches(['\n', '\r']).split('\n').map(|l| l.trim_end_matches('\r'));
    let first = line_of(content, from);
    let mut found = Vec::new();
    for (i, (f, o)) in file_lines.zip(old_lines).enumerate().filter(|(_, (f, o))| f != o) {
        let n = first + i;
        if f.trim().is_empty() && o.trim().is_empty() {
            found.push(format!("line {n}'s white space: {} in the file, {} in old_string", name(f), name(o)));
            continue;
        }
        let lead = |l: &'_ str| l.len() - l.trim_start().len();
        let trail = |l: &'_ str| l.len() - l.trim_end().len();
        if f[..lead(f)] != o[..lead(o)] {
            found.push(format!(
                "line {n}'s indentation: {} in the file, {} in old_string",
                name(&f[..lead(f)]),
                name(&o[..lead(o)])
            ));
        }
        if f[f.len() - trail(f)..] != o[o.len() - trail(o)..] {
            found.push(format!(
                "line {n}'s trailing white space: {} in the file, {} in old_string",
                name(&f[f.len() - trail(f)..]),
                name(&o[o.len() - trail(o)..])
            ));
        }
    }
    if found.len() > 4 {
        found.truncate(4);
        found.push("…".to_owned());
    }
    found
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bare_lf_becomes_crlf_and_a_file_is_crlf_when_every_ending_is() {
        assert_eq!(to_crlf("a\nb\r\nc\n"), "a\r\nb\r\nc\r\n");
        assert!(all_crlf("a\r\nb\r\nc") && !all_crlf("a\r\nb\n") && !all_crlf("no break"));
        // As sent first; the CRLF form only when that occurs nowhere.
        let l = locate("a\r\nb\r\nx\na\nb\n", "a\nb", "A\nB");
        assert_eq!((l.starts, l.old.as_str(), l.new.as_str(), l.endings), (vec![8], "a\nb", "A\nB", ""));
        let l = locate("a\r\nb\r\n", "a\nb", "A\nB");
        assert_eq!((l.starts, l.old.as_str(), l.new.as_str()), (vec![0], "a\r\nb", "A\r\nB"));
        assert!(l.endings.contains("CRLF"));
        let l = locate("a\nb\r\n", "a", "a\nz");
        assert_eq!((l.new.as_str(), l.endings), ("a\nz", ""), "not every ending is CRLF");
    }
}
