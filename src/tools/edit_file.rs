//! `edit_file {file_path, old_string, new_string, replace_all?}`: exact
//! string replacement, as Claude Code's `Edit` and Codex's `apply_patch`
//! do it.
//!
//! Owns: finding `old_string` (it must occur exactly once, or
//! `replace_all`), replacing exactly that text with exactly `new_string`
//! (nothing re-indented, nothing outside the match touched), the one
//! tolerance of the default (`old_string` as sent is looked for first and
//! its count decides; only when it occurs nowhere is its CRLF form, and
//! then `new_string` is written with CRLF; the result says so, see
//! [`super::edit_write::locate`]), the errors that help the model when the
//! text is missing (the file's last line break or line endings differ,
//! lines that hold it apart from indentation or trailing white space, named,
//! `new_string` already there, the closest region) or occurs several times
//! (how many, on which lines), the atomic write, and the
//! excerpt that shows the model what changed. A profile with
//! `tolerant_edits` adds a small model's help ([`super::edit_tolerant`]).

use schemars::JsonSchema;
use serde::Deserialize;

use super::confine::Confined;
use super::context::ToolContext;
use super::edit_made::MIN_ALREADY_CHARS;
use super::edit_write::{
    Applied, Edit, all_crlf, ending_hint, excerpt, fail, line_of, locate, made_already, near_miss, to_crlf,
    white_space_differences, write,
};
use super::error::ToolError;
use super::output::{Effect, Written, content_hash};
use super::read_file::MAX_FILE_BYTES;

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

/// What the model is told the tool does (the same under every profile).
pub const DESCRIPTION: &str = "Replace an exact string in a file. old_string must match exactly (including whitespace) and be unique unless replace_all is true.";

/// Applies the edit. Errors (to the model): empty or identical strings, no
/// match (with the nearest text), several matches without `replace_all`
/// (how many, on which lines), binary or unreadable files. With the
/// profile's notes on, a rename's result ends with the uses of the old name
/// left in the workspace ([`super::references`]) and a file that no longer
/// parses is named ([`super::parse_notes::after_write`]).
pub fn run(args: Args, ctx: &ToolContext) -> Result<Written, ToolError> {
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
        return Ok(Written {
            text: format!("no change: {shown} already holds what this edit makes, so nothing was written.{around}"),
            effect: Effect::Unchanged { path },
        });
    }
    let note = super::references::still_used(ctx, &renamed, super::references::Why::Renamed).unwrap_or_default();
    Ok(Written {
        text: done + &note + &super::parse_notes::after_write(ctx, &file_path),
        effect: Effect::Changed { hash: content_hash(updated.as_bytes()), path, created: false, relaid: false },
    })
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
    let tolerant = ctx.help.tolerant_edits;
    let content = match read_text(ctx, &target) {
        Ok(c) => c,
        Err(e) if !target.exists() => {
            let elsewhere =
                tolerant.then(|| super::find_in_files::note(ctx, &path, &args.old_string, &args.new_string));
            return match elsewhere.flatten() {
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
    ctx.mark_read_unless_seen(&target);
    ctx.note_write(&path, Some(&content));
    // The text as sent is looked for first; only when it occurs nowhere,
    // its CRLF form (a CRLF file edited with LF text). The result says
    // whenever a line ending was converted.
    let found = locate(&content, &args.old_string, &args.new_string);
    let (starts, old, mut new, endings) = (found.starts, found.old, found.new, found.endings);
    let edit =
        Edit { target: &target, shown: &shown, content: &content, crlf: all_crlf(&content), old: &old, new: &new };
    if starts.is_empty() {
        return if tolerant {
            super::edit_tolerant::miss(ctx, &args.old_string, &args.new_string, &edit)
        } else {
            exact_miss(ctx, &args, &edit)
        };
    }
    if starts.len() > 1 && !args.replace_all {
        return fail(if tolerant {
            super::edit_many::answer(&shown, &content, &starts, &old, &new)
        } else {
            several(&shown, &content, &starts)
        });
    }
    if tolerant {
        if let [start] = starts[..]
            && !args.replace_all
        {
            let mut widened = new.clone();
            if let Some(decided) = super::edit_tolerant::single(ctx, &edit, start, &mut widened) {
                return decided;
            }
            new = widened;
        } else if let Some(at) = super::edit_made::inside_new_string(&content, &starts, &old, &new) {
            return made_already(path, super::edit_made::made_again(&shown, line_of(&content, at)));
        }
    }
    let updated = if args.replace_all { content.replace(&old, &new) } else { content.replacen(&old, &new, 1) };
    write(ctx, &target, &content, &updated, &shown)?;
    let first_line = line_of(&content, starts[0]);
    let new_lines = new.matches('\n').count() + 1;
    let text = format!(
        "edited {shown}: replaced {} occurrence{} ({} → {} bytes).{endings} Lines around the first change:\n{}",
        starts.len(),
        if starts.len() == 1 { "" } else { "s" },
        content.len(),
        updated.len(),
        excerpt(&updated, first_line, new_lines)
    );
    Ok((text, updated, path, content))
}

/// The error for an `old_string` the file does not hold exactly (no
/// profile's tolerance): nothing is written, and the model is told where
/// the nearest text is: lines that hold it apart from indentation or
/// trailing white space, `new_string` already in the file, this send's own
/// earlier change of that part, or the closest region.
fn exact_miss(ctx: &ToolContext, args: &Args, e: &Edit<'_>) -> Result<Applied, ToolError> {
    let (content, shown) = (e.content, e.shown);
    let loose = super::edit_tolerant::loose_matches(content, &args.old_string);
    let hint = if let Some(endings) = ending_hint(content, &args.old_string) {
        endings
    } else if let [(from, to, _)] = &loose[..] {
        let (first, last) = (line_of(content, *from), line_of(content, *to));
        let lines = if first == last { format!("Line {first} holds") } else { format!("Lines {first}-{last} hold") };
        let differences = white_space_differences(content, *from, *to, &args.old_string);
        let which = if differences.is_empty() { String::new() } else { format!(" ({})", differences.join("; ")) };
        format!(
            "{lines} the same text apart from indentation or trailing white space{which}:\n{}Copy old_string \
             from them exactly as the file has them, and give new_string the indentation the file should get.",
            excerpt(content, first, last - first + 1)
        )
    } else if loose.len() > 1 {
        let lines: Vec<String> = loose.iter().take(20).map(|(f, _, _)| line_of(content, *f).to_string()).collect();
        format!(
            "The same text apart from indentation is at {} places (lines {}): copy old_string exactly, with \
             enough of the lines around it to pick one.",
            loose.len(),
            lines.join(", ")
        )
    } else if let Some(at) = content.find(e.new.trim()).filter(|_| e.new.trim().len() >= MIN_ALREADY_CHARS) {
        format!("new_string is already in the file at line {}: the edit may be made already.", line_of(content, at))
    } else if ctx.held_before(e.target.path(), &args.old_string)
        || ctx.held_before(e.target.path(), &to_crlf(&args.old_string))
    {
        "It was in the file before this request's earlier change, which changed that part. Read the file to \
         see it as it is now."
            .to_owned()
    } else {
        let region = super::edit_match::closest_region(content, &args.old_string);
        if region.is_empty() { near_miss(content, &args.old_string) } else { region }
    };
    fail(format!("{shown}: old_string was not found in the file, so nothing was changed. {}", hint.trim_end()))
}

/// The error for an `old_string` found more than once without
/// `replace_all` (no profile's tolerance): how many, and on which lines.
fn several(shown: &str, content: &str, starts: &[usize]) -> String {
    let lines: Vec<String> = starts.iter().take(20).map(|&i| line_of(content, i).to_string()).collect();
    let more = if starts.len() > lines.len() { ", …" } else { "" };
    format!(
        "{shown}: old_string occurs {} times (lines {}{more}), so nothing was changed. Include more of the \
         surrounding lines in old_string so that it occurs once, or set replace_all to true to change every \
         occurrence.",
        starts.len(),
        lines.join(", ")
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `file` holding `content` edited with `(old, new, replace_all)` in a
    /// context with `help`: the result (text or error) and the bytes after.
    fn edit(content: &str, old: &str, new: &str, all: bool, help: super::super::WriteHelp) -> (String, String) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("f"), content).unwrap();
        let mut ctx = ToolContext::new(root.clone(), vec![], Default::default());
        ctx.help = help;
        let args = Args { file_path: "f".into(), old_string: old.into(), new_string: new.into(), replace_all: all };
        let said = match run(args, &ctx) {
            Ok(done) => done.text,
            Err(ToolError::Failed(m)) => format!("ERROR {m}"),
            Err(e) => format!("ERROR {e:?}"),
        };
        (said, std::fs::read_to_string(root.join("f")).unwrap())
    }

    #[test]
    fn an_exact_edit_lands_exactly_as_sent_and_the_small_profile_reindents() {
        let py = "def div(x, y):\n    return x / y\n";
        let new = "if y == 0:\n        return 0\n    return x / y";
        let (said, after) = edit(py, "return x / y", new, false, Default::default());
        assert_eq!(after, "def div(x, y):\n    if y == 0:\n        return 0\n    return x / y\n", "{said}");
        let yaml = "services:\n  web:\n    image: nginx\n";
        let (_, after) =
            edit(yaml, "image: nginx", "image: nginx\n    ports:\n      - 80:80", false, Default::default());
        assert_eq!(after, "services:\n  web:\n    image: nginx\n    ports:\n      - 80:80\n");
        let small = super::super::WriteHelp { tolerant_edits: true, ..Default::default() };
        let (_, after) = edit(py, "return x / y", "if y == 0:\n    return 0\nreturn x / y", false, small);
        assert_eq!(after, "def div(x, y):\n    if y == 0:\n        return 0\n    return x / y\n", "relative lines");
    }

    #[test]
    fn a_missing_or_repeated_old_string_fails_saying_where_and_writes_nothing() {
        let py = "def f():\n    total = 1\n    return total\n";
        let (said, after) = edit(py, "total = 1\nreturn total", "total = 2\nreturn total", false, Default::default());
        assert_eq!(after, py);
        assert!(said.starts_with("ERROR") && said.contains("Lines 2-3") && said.contains("indentation"), "{said}");
        let twice = "a = 1\nb = 1\n";
        let (said, after) = edit(twice, "= 1", "= 2", false, Default::default());
        assert_eq!(after, twice);
        assert!(said.contains("occurs 2 times (lines 1, 2)") && said.contains("replace_all"), "{said}");
        let (_, after) = edit(twice, "= 1", "= 2", true, Default::default());
        assert_eq!(after, "a = 2\nb = 2\n");
    }

    #[test]
    fn lf_text_in_a_crlf_file_is_matched_with_crlf_and_the_result_says_so() {
        let crlf = "one\r\ntwo\r\nthree\r\n";
        let (said, after) = edit(crlf, "one\ntwo", "one\n2\ntwo", false, Default::default());
        assert_eq!(after, "one\r\n2\r\ntwo\r\nthree\r\n");
        assert!(said.contains("CRLF"), "{said}");
        // Mixed endings where the LF text occurs as sent: written as sent.
        let mixed = "a\r\nb\nc\n";
        let (said, after) = edit(mixed, "b\nc", "b\nC", false, Default::default());
        assert_eq!(after, "a\r\nb\nC\n");
        assert!(!said.contains("CRLF"), "{said}");
    }

    #[test]
    fn the_text_as_sent_is_matched_before_its_crlf_form_and_counted_alone() {
        // Once as sent (lines 4-5), once in CRLF form (lines 1-2): the one sent is edited.
        let (said, after) = edit("a\r\nb\r\nx\na\nb\n", "a\nb", "A\nB", false, Default::default());
        assert_eq!(after, "a\r\nb\r\nx\nA\nB\n", "{said}");
        assert!(!said.contains("CRLF") && said.contains("replaced 1 occurrence"), "{said}");
        // Twice in CRLF form, once as sent: not ambiguous.
        let mixed = "a\r\nb\r\na\r\nb\r\nx\na\nb\n";
        let (said, after) = edit(mixed, "a\nb", "A\nB", false, Default::default());
        assert_eq!(after, "a\r\nb\r\na\r\nb\r\nx\nA\nB\n", "{said}");
        // Twice as sent: ambiguous on those lines, whatever the CRLF form does.
        let (said, after) = edit("a\r\nb\r\na\nb\na\nb\n", "a\nb", "A\nB", false, Default::default());
        assert!(said.contains("occurs 2 times (lines 3, 5)"), "{said}");
        assert_eq!(after, "a\r\nb\r\na\nb\na\nb\n");
        // Twice only in CRLF form: ambiguous there.
        let (said, _) = edit("a\r\nb\r\na\r\nb\r\n", "a\nb", "A\nB", false, Default::default());
        assert!(said.contains("occurs 2 times (lines 1, 3)"), "{said}");
    }

    #[test]
    fn new_string_gets_crlf_only_from_a_crlf_match_or_an_all_crlf_file() {
        // An LF file with one stray CRLF: new_string lands as sent, nothing said of CRLF.
        let stray = "line1\nline2\r\nline3\nline4\n";
        let (said, after) = edit(stray, "line4", "line4\nline5", false, Default::default());
        assert_eq!(after, "line1\nline2\r\nline3\nline4\nline5\n");
        assert!(!said.contains("CRLF"), "{said}");
        let py = "s = \"a\r\nb\"\ndef f():\n    return 1\n";
        let (said, after) = edit(py, "    return 1", "    x = 1\n    return x", false, Default::default());
        assert_eq!(after, "s = \"a\r\nb\"\ndef f():\n    x = 1\n    return x\n", "{said}");
        // An all-CRLF file and an old_string of one line: new_string's breaks are the file's, said so.
        let (said, after) = edit("a\r\nb\r\n", "b", "b\nc", false, Default::default());
        assert_eq!(after, "a\r\nb\r\nc\r\n");
        assert!(said.contains("written as CRLF"), "{said}");
        // LF old_string, CRLF new_string in a CRLF file: matched, new_string as sent.
        let (said, after) = edit("a\r\nb\r\n", "a\nb", "a\r\nB", false, Default::default());
        assert_eq!(after, "a\r\nB\r\n");
        assert!(said.contains("matched with the CRLF ones") && !said.contains("written as CRLF"), "{said}");
        // The small profile re-indents with the endings the matched lines have.
        let small = || super::super::WriteHelp { tolerant_edits: true, ..Default::default() };
        let (said, after) = edit("s = '\r\n'\nif a:\n    x = 1\n", "x = 1", "x = 1\ny = 2", false, small());
        assert_eq!(after, "s = '\r\n'\nif a:\n    x = 1\n    y = 2\n", "{said}");
        let (old, new) = ("  x = 1\n  z = 3", "  x = 2\n  z = 4");
        let (said, after) = edit("if a:\r\n    x = 1\r\n    z = 3\r\n", old, new, false, small());
        assert_eq!(after, "if a:\r\n    x = 2\r\n    z = 4\r\n", "{said}");
        let (said, after) = edit("s = '\r\n'\nif a:\n    x = 1\n    z = 3\n", old, new, false, small());
        assert_eq!(after, "s = '\r\n'\nif a:\n    x = 2\n    z = 4\n", "{said}");
    }

    #[test]
    fn a_miss_names_a_missing_final_line_break_other_line_endings_or_the_white_space() {
        let (said, after) = edit("a\nb", "b\n", "c\n", false, Default::default());
        assert_eq!(after, "a\nb");
        assert!(said.contains("does not end with a line break") && said.contains("line 2"), "{said}");
        assert!(!said.contains("indentation"), "{said}");
        // CRLF old_string against an LF file.
        let (said, after) = edit("a\nb\nc\n", "a\r\nb", "A\r\nB", false, Default::default());
        assert_eq!(after, "a\nb\nc\n");
        assert!(said.contains("Lines 1-2") && said.contains("there are LF, old_string's are CRLF"), "{said}");
        // A region of mixed endings that neither form matches.
        let (said, _) = edit("a\r\nb\nc\n", "a\nb\nc", "x", false, Default::default());
        assert!(said.contains("there are CRLF and LF, old_string's are LF"), "{said}");
        // Trailing spaces and indentation that differ are named.
        let (said, _) = edit("x = 1  \n    y = 2\n", "x = 1\n  y = 2", "z", false, Default::default());
        assert!(said.contains("line 1's trailing white space: 2 spaces in the file, none in old_string"), "{said}");
        assert!(said.contains("line 2's indentation: 4 spaces in the file, 2 spaces in old_string"), "{said}");
        let (said, _) = edit("\tx = 1\n", "x = 1  ", "z", false, Default::default());
        assert!(said.contains("Line 1 holds") && said.contains("1 tab in the file, none"), "{said}");
    }
}
