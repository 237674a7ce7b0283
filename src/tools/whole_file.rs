//! The whole-file edit format (`config.edit_format: "whole"`, `pirn run
//! --edit-format whole`): aider's "whole" format, for small models that
//! write code well in a Markdown fence and badly inside a tool call's JSON.
//!
//! Owns: what the model is told in that format (the default system prompt
//! of `pirn run` and the format's instructions) and the note that shows it
//! the file in the chat ([`chat_file_note`]). The requests carry no tools
//! ([`crate::config::SessionConfig::tool_specs`] is empty), and the
//! answer's blocks are read by [`super::file_blocks`]: a block under a
//! path line, or the only block when the operator named a target, is a
//! `write_file` of exactly its lines, run like any call (approval, hooks,
//! events). Nothing here reads the model's words.
//!
//! Why: on four exercises of the Exercism tune sample (two-fer, isogram,
//! etl, series) the 1.5B demo model made no test pass in the tool-call
//! format (30,000 prompt tokens a task) and passed two of them when shown
//! the file and asked for its new content in a fence (under 600 prompt
//! tokens a task); see docs/results-history.md.

use super::context::ToolContext;
use super::read_file;

/// `pirn run`'s system prompt in the whole-file format, when the operator
/// gives none: the format only, no tools.
pub const SYSTEM_PROMPT: &str = "You are pirn, a coding agent working in the user's repository. The file you may \
change is shown below the request. To change a file, answer with its path alone on one line, then a fenced code \
block holding the file's complete new content: every line of it, since what you leave out is removed. To answer a \
question, reply in plain text without a fenced code block.";

/// What the system prompt gains in the whole-file format: which file a
/// block without a path line replaces. (No example: the 1.5B demo model
/// wrote an example file of the prompt's, `src/greet.py`, as its first
/// answer; the file in the chat is shown in the format instead.)
pub fn instructions(target: Option<&str>) -> String {
    match target {
        Some(t) => {
            format!("\n\nA fenced block with no path line, when it is the only one in your answer, replaces {t}.")
        }
        None => String::new(),
    }
}

/// The note that shows the model the file in the chat, `target` (a path
/// beneath the workspace), as it is now: its path, then its content in a
/// fence longer than any run of backticks in it, the form the model
/// answers in. Marks the file read (a write of it needs no `read_file`
/// first). `None` when it cannot be shown (outside the workspace, missing,
/// binary or over [`read_file::MAX_FILE_BYTES`]): the model then writes it
/// new, and the write's result says what happened.
pub fn chat_file_note(ctx: &ToolContext, target: &str) -> Option<String> {
    let confined = ctx.resolve(target).ok()?;
    let text = ctx.read_text(&confined, read_file::MAX_FILE_BYTES).ok()?;
    if text.contains('\0') {
        return None;
    }
    ctx.mark_read(&confined);
    let fence = "`".repeat(longest_backtick_run(&text).max(2) + 1);
    let newline = if text.is_empty() || text.ends_with('\n') { "" } else { "\n" };
    Some(format!(
        "{shown} now holds:\n\n{shown}\n{fence}\n{text}{newline}{fence}\n\nTo change it, answer with its complete new \
         content in one fenced block.",
        shown = ctx.display(confined.path())
    ))
}

/// The longest run of backticks in `text`.
fn longest_backtick_run(text: &str) -> usize {
    text.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::context::Overwrite;
    use tokio_util::sync::CancellationToken;

    #[test]
    fn the_note_shows_the_file_in_a_fence_it_cannot_close_and_marks_it_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.md"), "x\n````\ny").unwrap();
        let root = dir.path().canonicalize().unwrap();
        let mut ctx = ToolContext::new(root, Vec::new(), CancellationToken::new());
        ctx.read_files = Some(Default::default());
        let a = ctx.resolve("a.md").unwrap();
        assert_eq!(ctx.may_overwrite(&a), Overwrite::Unread);
        let note = chat_file_note(&ctx, "a.md").unwrap();
        assert!(note.starts_with("a.md now holds:\n\na.md\n`````\nx\n````\ny\n`````\n\n"), "{note}");
        assert_eq!(ctx.may_overwrite(&a), Overwrite::Allowed, "shown whole, it counts as read");
        assert!(chat_file_note(&ctx, "missing.py").is_none());
        assert!(chat_file_note(&ctx, "../outside.py").is_none());
        assert_eq!(longest_backtick_run("no ticks"), 0);
    }

    #[test]
    fn the_instructions_name_the_target_only_when_there_is_one() {
        assert!(instructions(Some("two_fer.py")).contains("replaces two_fer.py"));
        assert!(instructions(None).is_empty());
    }
}
