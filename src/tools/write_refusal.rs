//! What `write_file` answers when it will not replace an existing file
//! because the model has not seen it as it is now: never read in this
//! session ([`Overwrite::Unread`]), or changed since the model last read or
//! wrote it ([`Overwrite::ChangedSinceRead`]: a command, a hook or the user
//! changed it, and a whole-file write from the old view would undo that
//! change unseen). Claude Code's `Write` refuses in both cases too.
//!
//! A file small enough to show ([`SHOWN_UNREAD`]) is shown in the answer
//! and counts as read from then on, so the next write is an informed one
//! and lands as sent. Nothing is written either way.

use super::confine::Confined;
use super::context::{Overwrite, ToolContext};
use super::error::ToolError;
use super::output::Hold;

/// A file up to this size (bytes) is shown when a write to it is refused.
const SHOWN_UNREAD: usize = super::read_file::WHOLE_FILE_BYTES as usize;

/// Why one kind of refusal happened, as the model is told.
fn reason(shown: &str, why: Overwrite) -> String {
    match why {
        Overwrite::ChangedSinceRead => format!(
            "{shown} changed since you last read it (a command, a hook or someone else changed it), and your \
             content would undo that change"
        ),
        _ => format!("{shown} already exists and you had not read it"),
    }
}

/// The error for a `write_file` to `target` (shown as `shown`, holding
/// `old` when it is text) refused for `why` ([`Overwrite::Unread`] or
/// [`Overwrite::ChangedSinceRead`]). A profile that holds writes back
/// (`hold_large_writes`) counts the refusal as a held write: a send that
/// never makes it is not `ok` (the `HeldBack` gate).
pub fn refuse(ctx: &ToolContext, target: &Confined, shown: &str, old: Option<&str>, why: Overwrite) -> ToolError {
    let Some(text) = old.filter(|t| t.len() <= SHOWN_UNREAD) else {
        return ToolError::Failed(format!(
            "nothing written: {}: read it with read_file first, then change part of it with edit_file (or write the \
             complete new content with write_file)",
            reason(shown, why)
        ));
    };
    // Shown now, and counted as read: the next write is an informed one.
    ctx.mark_read(target);
    let holds = if why == Overwrite::ChangedSinceRead { "It now holds" } else { "It holds" };
    let message = format!(
        "nothing written: {}. {holds}:\n{}Now change the part that needs changing with edit_file, or call write_file \
         again with the complete new content.",
        reason(shown, why),
        numbered_all(text)
    );
    match ctx.help.hold_large_writes {
        true => {
            let hold = if why == Overwrite::ChangedSinceRead { Hold::ChangedSinceRead } else { Hold::NotRead };
            ToolError::HeldBack { path: target.path().to_path_buf(), why: hold, message }
        }
        false => ToolError::Failed(message),
    }
}

/// Every line of `text`, numbered as `read_file` numbers them.
fn numbered_all(text: &str) -> String {
    text.lines().enumerate().map(|(i, l)| format!("{:>6}\t{l}\n", i + 1)).collect()
}

#[cfg(test)]
mod tests {
    use super::super::write_file::{Args, run};
    use super::*;
    use crate::tools::Effect;

    fn write(ctx: &ToolContext, content: &str) -> Result<crate::tools::Written, ToolError> {
        run(Args { file_path: "cfg.py".into(), content: content.into() }, ctx)
    }

    #[test]
    fn a_file_changed_since_it_was_read_is_shown_not_overwritten_then_the_same_write_lands() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let file = root.join("cfg.py");
        std::fs::write(&file, "TIMEOUT = 10\n").unwrap();
        let mut ctx = ToolContext::new(root, vec![], Default::default());
        ctx.read_files = Some(Default::default());
        let Err(ToolError::Failed(unread)) = write(&ctx, "TIMEOUT = 30\n") else {
            panic!("an unread file was replaced")
        };
        assert!(unread.starts_with("nothing written: cfg.py already exists and you had not read it. It holds:\n"));
        // Shown, so read: the model's write lands; its own write counts as seen.
        assert!(matches!(write(&ctx, "TIMEOUT = 30\n").unwrap().effect, Effect::Changed { .. }));
        assert!(matches!(write(&ctx, "TIMEOUT = 31\n").unwrap().effect, Effect::Changed { .. }));
        // Someone else changes the file: a write from the old view would undo it.
        std::fs::write(&file, "TIMEOUT = 31\nRETRIES = 3\n").unwrap();
        let Err(ToolError::Failed(changed)) = write(&ctx, "TIMEOUT = 60\n") else { panic!("overwrote a change") };
        assert!(changed.contains("cfg.py changed since you last read it"), "{changed}");
        assert!(changed.contains("It now holds:\n     1\tTIMEOUT = 31\n     2\tRETRIES = 3\n"), "{changed}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "TIMEOUT = 31\nRETRIES = 3\n", "nothing written");
        // The bytes the file holds undo nothing: "no change", not a refusal.
        std::fs::write(&file, "TIMEOUT = 31\nRETRIES = 4\n").unwrap();
        let same = write(&ctx, "TIMEOUT = 31\nRETRIES = 4\n").unwrap();
        assert!(matches!(same.effect, Effect::Unchanged { .. }), "{same:?}");
        // Rewritten with the same bytes (only touched): still as seen.
        std::fs::write(&file, "TIMEOUT = 31\nRETRIES = 4\n").unwrap();
        assert!(matches!(write(&ctx, "TIMEOUT = 5\n").unwrap().effect, Effect::Changed { .. }));
        // Shown when refused, so the same write again is an informed one.
        std::fs::write(&file, "TIMEOUT = 7\n").unwrap();
        assert!(write(&ctx, "TIMEOUT = 60\n").is_err());
        assert!(matches!(write(&ctx, "TIMEOUT = 60\n").unwrap().effect, Effect::Changed { .. }));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "TIMEOUT = 60\n");
        // An edit of a file changed since it was read lands (its old_string
        // matched), but leaves that change unseen: a whole write is refused.
        std::fs::write(&file, "TIMEOUT = 60\nRETRIES = 9\n").unwrap();
        let edit = super::super::edit_file::Args {
            file_path: "cfg.py".into(),
            old_string: "TIMEOUT = 60".into(),
            new_string: "TIMEOUT = 61".into(),
            replace_all: false,
        };
        super::super::edit_file::run(edit, &ctx).unwrap();
        assert!(write(&ctx, "TIMEOUT = 61\n").is_err(), "RETRIES = 9 undone");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "TIMEOUT = 61\nRETRIES = 9\n");
    }

    #[test]
    fn under_a_profile_that_holds_writes_the_refusal_is_a_held_write() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("cfg.py"), "A = 1\n").unwrap();
        let mut ctx = ToolContext::new(root.clone(), vec![], Default::default());
        ctx.read_files = Some(Default::default());
        ctx.help.hold_large_writes = true;
        ctx.mark_read(&ctx.resolve("cfg.py").unwrap());
        std::fs::write(root.join("cfg.py"), "A = 2\n").unwrap();
        match write(&ctx, "A = 3\n") {
            Err(ToolError::HeldBack { why: Hold::ChangedSinceRead, message, .. }) => {
                assert!(message.contains("It now holds:\n     1\tA = 2\n"), "{message}")
            }
            other => panic!("not held: {other:?}"),
        }
    }
}
