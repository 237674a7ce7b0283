//! When an `edit_file`'s `old_string` is not in the file it names: the
//! other files of the workspace that hold that text as written.
//!
//! Owns: the search ([`holders`]) and the sentence the edit's error leads
//! with ([`note`]): where the text is, or, when no file holds it still to
//! change, which file this send's own earlier change made that edit in.
//! A small model asked to fix a line it was quoted, with no file named,
//! edits the file it guessed (a README for a banner's typo) and, told the
//! text is not there, reads the same file and repeats the same edit. An
//! editor's "find in files" would show where the text is; this is that,
//! for the model: information in the error, never an edit (nothing is
//! written, the model chooses the file). It reads facts only, the bytes of
//! the files, the same for every language.
//!
//! Bounded as [`super::references`]' walk is (files, bytes, `.gitignore`,
//! hidden files and symlinks skipped, cancellation), and only run on an
//! edit that already failed.

use std::path::{Path, PathBuf};

use super::context::ToolContext;

/// Text shorter than this (bytes, once trimmed) is not looked for: too
/// common to point at one file.
const MIN_TEXT: usize = 4;
/// Files named, at most.
const MAX_NAMED: usize = 3;

/// The files under `root` other than `except` whose text holds `old`
/// (trimmed of white space at both ends) as written, somewhere the edit to
/// `new` is not made already (see [`super::edit_made::inside_new_string`]):
/// `(path, 1-based line of the first such occurrence)`, sorted by path, at
/// most [`MAX_NAMED`], and how many files in all. Empty for text shorter
/// than [`MIN_TEXT`].
pub fn holders(
    root: &Path,
    except: &Path,
    old: &str,
    new: &str,
    cancelled: &dyn Fn() -> bool,
) -> (Vec<(PathBuf, usize)>, usize) {
    let (needle, new) = (old.trim(), new.trim());
    if needle.len() < MIN_TEXT {
        return (Vec::new(), 0);
    }
    let mut found = Vec::new();
    super::references::walk_texts(root, &[], cancelled, &mut |path, body| {
        let made = |at: usize| super::edit_made::inside_new_string(body, &[at], needle, new).is_some();
        if path != except
            && let Some((at, _)) = body.match_indices(needle).find(|&(at, _)| !made(at))
        {
            found.push((path.to_path_buf(), body[..at].matches('\n').count() + 1));
        }
    });
    found.sort();
    let total = found.len();
    found.truncate(MAX_NAMED);
    (found, total)
}

/// The sentence for an edit of `path` from `old_string` to `new_string`
/// whose `old_string` that file does not hold: where else it is, e.g.
/// "That text is in app/banner.py (line 2), not in README.md; ...", or,
/// when no other file holds it still to change, where this send's own
/// earlier change made the edit already ([`made_by_send`]). `None` when
/// neither.
pub fn note(ctx: &ToolContext, path: &Path, old_string: &str, new_string: &str) -> Option<Note> {
    let (found, total) = holders(&ctx.workspace, path, old_string, new_string, &|| ctx.cancel.is_cancelled());
    if found.is_empty() {
        return made_by_send(ctx, path, old_string, new_string);
    }
    let named: Vec<String> = found.iter().map(|(p, line)| format!("{} (line {line})", ctx.display(p))).collect();
    let more = if total > named.len() { format!(" and {} more files", total - named.len()) } else { String::new() };
    let text = format!(
        "That text is in {}{more}, not in {}; if that is the file you mean, edit it there.",
        named.join(", "),
        ctx.display(path)
    );
    Some(Note { text, made_in: None })
}

/// What [`note`] tells the model, and where the edit looks made already.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// The sentence the edit's error goes on with.
    pub text: String,
    /// The file this send's own earlier change made the edit in
    /// ([`made_by_send`]); `None` when the note names files still to edit.
    pub made_in: Option<PathBuf>,
}

/// The sentence for an edit no file holds still to make, when a file
/// this send changed (other than `path`) held `old_string` before that
/// change and now holds `new_string` (or, for a deletion, no longer holds
/// `old_string`): the same edit, made already by the send's own earlier
/// call. A small model that fixed the right file goes back to the file
/// it guessed first and repeats the failing edit there until its calls
/// run out (tune_2's t2_typo_no_file: four times, then `max_iterations`,
/// the fix on disk). Facts only: the send's record of what each file held
/// before it changed it, and the file's text now.
fn made_by_send(ctx: &ToolContext, path: &Path, old_string: &str, new_string: &str) -> Option<Note> {
    let (old, new) = (old_string.trim(), new_string.trim());
    if old.len() < MIN_TEXT {
        return None;
    }
    ctx.changed_from(path, old).into_iter().find_map(|p| {
        let shown = ctx.display(&p);
        let now = ctx.read_text(&ctx.resolve(&shown).ok()?, super::read_file::MAX_FILE_BYTES).ok()?;
        let at = |needle: &str| now.find(needle).map(|i| now[..i].matches('\n').count() + 1);
        let text = if new.is_empty() {
            at(old).is_none().then(|| {
                format!(
                    "{shown} held that text before your earlier change in this request, which removed it: this \
                     deletion looks made already. Go on with the rest of the task."
                )
            })?
        } else {
            // Where the file still holds old_string, that is not made
            // (a file the search skips, a hidden one, is checked here).
            let starts: Vec<usize> = now.match_indices(old).map(|(i, _)| i).collect();
            if !starts.is_empty() && super::edit_made::inside_new_string(&now, &starts, old, new).is_none() {
                return None;
            }
            let line = at(new)?;
            format!(
                "{shown} held that text before your earlier change in this request and now reads new_string \
                 there (line {line}): this edit looks made already. Go on with the rest of the task."
            )
        };
        Some(Note { text, made_in: Some(p) })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holders_names_the_other_files_with_the_text_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("app")).unwrap();
        std::fs::write(root.join("README.md"), "# Ledger\n").unwrap();
        std::fs::write(root.join("app/banner.py"), "def banner(u):\n    return f\"Welcom to Ledger, {u}!\"\n").unwrap();
        std::fs::write(root.join("app/other.py"), "welcom\n").unwrap();
        let never = || false;
        let readme = root.join("README.md");
        let (found, total) = holders(root, &readme, "  Welcom to\n", "Welcome to", &never);
        assert_eq!((found, total), (vec![(root.join("app/banner.py"), 2)], 1));
        // The file the edit named is never listed, and short text is not looked for.
        assert_eq!(holders(root, &root.join("app/banner.py"), "Welcom to", "Welcome to", &never).1, 0);
        assert_eq!(holders(root, &readme, " Wel ", "Well", &never).1, 0);
        // Where the edit is made already ("Welcom" inside "Welcome"), the text does not count.
        std::fs::write(root.join("app/banner.py"), "def banner(u):\n    return f\"Welcome to Ledger, {u}!\"\n")
            .unwrap();
        assert_eq!(holders(root, &readme, "Welcom", "Welcome", &never).1, 0);
    }

    #[test]
    fn an_edit_is_said_made_only_where_the_changed_file_holds_no_old_string_still_to_change() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ctx = ToolContext::new(root.clone(), vec![], tokio_util::sync::CancellationToken::new());
        let (readme, hidden) = (root.join("README.md"), root.join(".banner"));
        std::fs::write(&readme, "# Ledger\n").unwrap();
        // A hidden file (the workspace search skips it) that the send
        // changed, made the edit once, and still holds the old text.
        ctx.note_write(&hidden, Some("Welcom to\nWelcom to\n"));
        std::fs::write(&hidden, "Welcome to\nWelcom to\n").unwrap();
        assert_eq!(note(&ctx, &readme, "Welcom to", "Welcome to"), None);
        std::fs::write(&hidden, "Welcome to\nWelcome to\n").unwrap();
        let said = note(&ctx, &readme, "Welcom to", "Welcome to").expect("made");
        assert_eq!(said.made_in, Some(hidden.clone()));
        assert!(said.text.starts_with(".banner held that text before your earlier change"), "{}", said.text);
        // The changed file swapped for a symlink out of the workspace, to a
        // file that reads new_string: not followed, nothing said of it.
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("target"), "SECRET\nWelcome to\n").unwrap();
        std::fs::remove_file(&hidden).unwrap();
        std::os::unix::fs::symlink(outside.path().join("target"), &hidden).unwrap();
        assert_eq!(note(&ctx, &readme, "Welcom to", "Welcome to"), None);
        // A file the send did not change is never said to hold the edit.
        let other = ToolContext::new(root.clone(), vec![], tokio_util::sync::CancellationToken::new());
        assert_eq!(note(&other, &readme, "Welcom to", "Welcome to"), None);
    }
}
