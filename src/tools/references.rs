//! After an edit: where a name the edit took away is still used.
//!
//! Owns: finding the names an `edit_file` renamed ([`renamed_in_edit`]) or
//! a `write_file` stopped defining ([`lost_definitions`]), and the note
//! listing their remaining uses in the workspace ([`still_used`]), which
//! the tool appends to its result. The note is information for the model:
//! pirn never edits those uses itself (a library call that shares a
//! renamed name, `json.load`, is the model's to judge).
//!
//! A small model renames a function's definition and stops; the callers in
//! the next file break. An editor's rename refactoring or a compiler would
//! show the broken uses at once; this note is the cheap, language-blind
//! version of that: whole-word occurrences, found with the same `ignore`
//! walk as `grep` (`.gitignore` honoured, hidden files and symlinks
//! skipped), bounded in files, bytes and lines quoted.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use ignore::WalkBuilder;

use super::context::ToolContext;

/// Files looked at, at most, per note.
const MAX_FILES: usize = 2000;
/// Files larger than this (bytes) are not looked at.
const MAX_FILE_BYTES: u64 = 256 * 1024;
/// Uses quoted, at most.
const MAX_USES: usize = 10;
/// Names shorter than this are never reported (too common to mean much).
const MIN_NAME: usize = 3;
/// An edit that takes away more names than this is a rewrite, not a rename.
const MAX_NAMES: usize = 3;

const KEYWORDS: &[&str] = &[
    "def",
    "class",
    "return",
    "import",
    "from",
    "self",
    "None",
    "True",
    "False",
    "for",
    "while",
    "with",
    "pass",
    "lambda",
    "yield",
    "async",
    "await",
    "function",
    "const",
    "let",
    "var",
    "pub",
    "impl",
    "struct",
    "enum",
    "use",
    "mut",
    "int",
    "str",
    "float",
    "bool",
    "dict",
    "list",
    "print",
    "len",
    "not",
    "and",
    "elif",
    "else",
    "try",
    "except",
    "raise",
    "this",
    "new",
    "null",
    "undefined",
    "true",
    "false",
];

/// The identifiers of `s` outside its string literals, in order: a value
/// changed inside quotes (`"level": "info"` to `"debug"`) is data, not a
/// name that something else uses.
fn identifiers(s: &str) -> impl Iterator<Item = &str> {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    // Braces inside a string are code (f-strings, template literals).
    let mut braces = 0u32;
    s.split(move |c: char| {
        let in_string = quote.is_some() && braces == 0;
        match (quote, c) {
            (Some(_), '{') => braces += 1,
            (Some(_), '}') if braces > 0 => braces -= 1,
            (Some(_), _) if braces > 0 => {}
            (Some(_), _) if escaped => escaped = false,
            (Some(_), '\\') => escaped = true,
            (Some(q), c) if c == q => quote = None,
            (None, '"' | '\'' | '`') => quote = Some(c),
            _ => {}
        }
        in_string || (quote.is_some() && braces == 0) || !(c.is_alphanumeric() || c == '_')
    })
    .filter(|t| t.len() >= MIN_NAME && !t.starts_with(|c: char| c.is_ascii_digit()) && !KEYWORDS.contains(t))
}

/// Names an edit replaced by others: identifiers of `old` missing from
/// `new`, when `new` also brings identifiers of its own (a rename, not a
/// deletion) and there are at most [`MAX_NAMES`] of them.
pub fn renamed_in_edit(old: &str, new: &str) -> Vec<String> {
    let before: BTreeSet<&str> = identifiers(old).collect();
    let after: BTreeSet<&str> = identifiers(new).collect();
    let gone: Vec<String> = before.difference(&after).map(|s| s.to_string()).collect();
    if gone.is_empty() || gone.len() > MAX_NAMES || after.difference(&before).next().is_none() {
        return Vec::new();
    }
    gone
}

/// Names `old` defines at top level that `new` no longer mentions at all.
pub fn lost_definitions(old: &str, new: &str) -> Vec<String> {
    let mentioned: BTreeSet<&str> = identifiers(new).collect();
    let lost: Vec<String> =
        defined_names(old).into_iter().filter(|n| n.len() >= MIN_NAME && !mentioned.contains(n.as_str())).collect();
    if lost.len() > MAX_NAMES { Vec::new() } else { lost }
}

/// The names `text` defines at top level: a column-0 line that starts a
/// definition in one of the common languages (`def`, `class`, `function`,
/// `fn`, `func`, `struct`, `enum`, `interface`, `type`, after `export`,
/// `pub` or `async`). Language-blind on purpose: it only names what a
/// change took away, for the note; nothing decides on it.
pub fn defined_names(text: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for line in text.lines() {
        let mut rest = line;
        for prefix in ["export default ", "export ", "pub(crate) ", "pub ", "async ", "unsafe "] {
            rest = rest.strip_prefix(prefix).unwrap_or(rest);
        }
        let Some(rest) = ["def ", "class ", "function ", "fn ", "func ", "struct ", "enum ", "interface ", "type "]
            .iter()
            .find_map(|k| rest.strip_prefix(k))
        else {
            continue;
        };
        let len = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
        if len > 0 && !names.iter().any(|n| n == &rest[..len]) {
            names.push(rest[..len].to_owned());
        }
    }
    names
}

/// True when `name` occurs in `line` as a whole word.
pub fn has_word(line: &str, name: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    line.match_indices(name).any(|(i, _)| {
        !line[..i].chars().next_back().is_some_and(word) && !line[i + name.len()..].chars().next().is_some_and(word)
    })
}

/// How the names of a note went away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// An edit replaced them with other names (a rename).
    Renamed,
    /// A rewrite of the file no longer defines them.
    Undefined,
}

/// Where `names` occur as whole words under `root`: `(path, 1-based line,
/// line text)` for the first `limit` lines, and how many lines in all.
/// Bounded: at most [`MAX_FILES`] regular files of at most
/// [`MAX_FILE_BYTES`], `.gitignore` honoured, hidden files skipped, and
/// each file opened without following a symlink (one swapped in after the
/// walk is not read). Stops early when `cancelled` says so.
pub fn find_uses(
    root: &Path,
    names: &[String],
    limit: usize,
    cancelled: &dyn Fn() -> bool,
) -> (Vec<(PathBuf, usize, String)>, usize) {
    find_uses_in(root, &[], names, limit, cancelled)
}

/// [`find_uses`] in the files of `scope` only (absolute paths under
/// `root`; all of `root` when empty).
pub fn find_uses_in(
    root: &Path,
    scope: &[PathBuf],
    names: &[String],
    limit: usize,
    cancelled: &dyn Fn() -> bool,
) -> (Vec<(PathBuf, usize, String)>, usize) {
    let mut uses = Vec::new();
    let mut total = 0;
    walk_texts(root, scope, cancelled, &mut |path, text| {
        for (n, line) in text.lines().enumerate() {
            if names.iter().any(|name| has_word(line, name)) {
                total += 1;
                if uses.len() < limit {
                    uses.push((path.to_path_buf(), n + 1, line.trim().to_owned()));
                }
            }
        }
    });
    (uses, total)
}

/// Calls `visit` with each text file under `root` (in `scope` only, when
/// it is not empty) and its text, in walk order: at most [`MAX_FILES`]
/// regular files of at most [`MAX_FILE_BYTES`], `.gitignore` honoured,
/// hidden files skipped, each opened without following a symlink; stops
/// early when `cancelled` says so. Shared with [`super::find_in_files`].
pub(super) fn walk_texts(
    root: &Path,
    scope: &[PathBuf],
    cancelled: &dyn Fn() -> bool,
    visit: &mut dyn FnMut(&Path, &str),
) {
    let walk = WalkBuilder::new(root).require_git(false).max_filesize(Some(MAX_FILE_BYTES)).build();
    let files = walk
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .filter(|e| scope.is_empty() || scope.iter().any(|s| s == e.path()));
    for entry in files.take(MAX_FILES) {
        if cancelled() {
            break;
        }
        if let Some(text) = read_no_follow(entry.path()) {
            visit(entry.path(), &text);
        }
    }
}

/// A regular file's text, opened with `O_NOFOLLOW`, at most
/// [`MAX_FILE_BYTES`]; `None` for a symlink, a non-UTF-8 or larger file.
fn read_no_follow(path: &Path) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(path).ok()?;
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1).read_to_string(&mut text).ok()?;
    (text.len() as u64 <= MAX_FILE_BYTES).then_some(text)
}

/// The note naming where `names` are still used in the workspace (the
/// edited file included), or `None` when they are not or the profile asks
/// for no such notes ([`super::WriteHelp::reference_notes`]).
pub fn still_used(ctx: &ToolContext, names: &[String], why: Why) -> Option<String> {
    if names.is_empty() || !ctx.help.reference_notes {
        return None;
    }
    let (found, total) = find_uses(&ctx.workspace, names, MAX_USES, &|| ctx.cancel.is_cancelled());
    if found.is_empty() {
        return None;
    }
    let uses: Vec<String> =
        found.iter().map(|(path, n, line)| format!("{}:{n}: {}", ctx.display(path), clip(line))).collect();
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    let more = if total > uses.len() { format!("\n  ({} more)", total - uses.len()) } else { String::new() };
    let (what, advice) = match why {
        Why::Renamed => ("this change took away", "If it was renamed, change these too."),
        Why::Undefined => (
            "this file no longer defines",
            "If you did not mean to remove it, put its definition back (the code that uses it is right).",
        ),
    };
    Some(format!(
        "\nNote: {what} {}, which is still used here:\n  {}{more}\n{advice}",
        quoted.join(", "),
        uses.join("\n  ")
    ))
}

fn clip(line: &str) -> String {
    if line.chars().count() <= 120 {
        line.to_owned()
    } else {
        format!("{}…", line.chars().take(120).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rename_is_told_apart_from_a_deletion() {
        assert_eq!(renamed_in_edit("def get_total(prices):", "def compute_total(prices):"), ["get_total"]);
        assert!(renamed_in_edit("return total / len(values)", "return 0.0").is_empty(), "nothing new: a deletion");
        assert!(renamed_in_edit("x = 1", "x = 2").is_empty());
        assert_eq!(lost_definitions("def calc(a):\n    return a\n", "def compute(a):\n    return a\n"), ["calc"]);
        assert!(lost_definitions("def calc(a):\n    return a\n", "def calc(a):\n    return 2 * a\n").is_empty());
        assert!(has_word("x = get_total(p)", "get_total") && !has_word("x = get_totals(p)", "get_total"));
        assert_eq!(
            defined_names("pub fn a() {}\nexport function b() {}\nfunc c() {}\n    def d(): pass\n"),
            ["a", "b", "c"]
        );
    }
}
