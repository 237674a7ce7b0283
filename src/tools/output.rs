//! What a tool call returns: [`ToolOutput`] (the text the model reads and
//! whether the call failed), the typed [`Effect`] it had on the workspace,
//! [`Written`] (what a file-writing tool returns), and the two facts an
//! effect is told by: [`content_hash`] of the bytes written and
//! [`same_lines`] for a rewrite that changed only white space at line ends.

use std::path::PathBuf;

/// What a tool call returns to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub text: String,
    /// True when the call failed; the text says why.
    pub is_error: bool,
    /// What the call did to the workspace, as the tool itself knows it.
    pub effect: Effect,
}

/// What one tool call did to the workspace: the fact the agent loop reads
/// (see `agent::facts`), never the result's text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Effect {
    /// Nothing that pirn's tools know of: a read, a search, a failed call,
    /// or a tool that is not pirn's (an MCP tool may do anything).
    #[default]
    None,
    /// The file now holds exactly the bytes the call wrote; `hash` is
    /// [`content_hash`] of them, `created` when the file did not exist,
    /// `relaid` when a `write_file` over an existing file kept every line
    /// and changed only white space at line ends or at the end of the
    /// file ([`same_lines`]).
    Changed { path: PathBuf, hash: u64, created: bool, relaid: bool },
    /// The file already held exactly these bytes: nothing was written.
    Unchanged { path: PathBuf },
    /// A `write_file` was held back, not written, for the reason `why`;
    /// the same call again writes it (see `write_file`).
    HeldBack { path: PathBuf, why: Hold },
    /// `bash` ran the command; its exit code (`None`: a timeout or a signal).
    Ran { exit_code: Option<i32> },
    /// An `edit_file` whose edit the workspace already shows made, in
    /// `path` (its `old_string` matches only inside `new_string` there, or
    /// the send's own earlier change took `old_string` away or made the
    /// same edit there): nothing was written; the model is told so (an
    /// error result). The `write_file` counterpart is [`Effect::Unchanged`].
    MadeAlready { path: PathBuf },
}

/// Why a profile's help held a `write_file` back ([`Effect::HeldBack`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// The rewrite would remove most of the file's lines
    /// (`write_file::MOSTLY_DROPPED`).
    MostlyRemoved,
    /// The file exists and the model had not read it: it was shown in the
    /// result and counts as read from then on.
    NotRead,
    /// The file changed since the model last read or wrote it (a command, a
    /// hook, the user): the write would have undone that change. It was
    /// shown in the result and counts as read from then on.
    ChangedSinceRead,
}

/// What a file-writing tool returns: the text for the model and its effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub text: String,
    pub effect: Effect,
}

impl From<String> for Written {
    fn from(text: String) -> Written {
        Written { text, effect: Effect::None }
    }
}

/// True when `old` and `new` hold the same lines once white space at the
/// end of each line and blank lines at the end are left out: a rewrite
/// that only drops a final newline or trailing spaces.
pub fn same_lines(old: &str, new: &str) -> bool {
    let lines = |t| {
        let mut v: Vec<&str> = str::lines(t).map(str::trim_end).collect();
        while v.last().is_some_and(|l| l.is_empty()) {
            v.pop();
        }
        v
    };
    lines(old) == lines(new)
}

/// A stable 64-bit hash of a file's bytes (FNV-1a), to tell later whether
/// the file still holds what a call wrote.
pub fn content_hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(text: impl Into<String>) -> Self {
        ToolOutput { text: text.into(), is_error: false, effect: Effect::None }
    }

    /// A failed result; `text` is what the model reads.
    pub fn error(text: impl Into<String>) -> Self {
        ToolOutput { text: text.into(), is_error: true, effect: Effect::None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_lines_ignores_only_white_space_at_line_ends() {
        assert!(same_lines("a = 1\nb = 2\n", "a = 1\nb = 2"));
        assert!(same_lines("a = 1  \nb = 2\n\n\n", "a = 1\nb = 2\n"));
        assert!(same_lines("a\r\nb\r\n", "a\nb\n"), "line endings are white space at the end");
        assert!(!same_lines("a = 1\nb = 2\n", "a = 1\n  b = 2\n"), "indentation is not");
        assert!(!same_lines("a = 1\nb = 2\n", "a = 1\n\nb = 2\n"), "nor is a blank line inside");
        assert!(!same_lines("a = 1\n", "a = 2\n"));
    }
}
