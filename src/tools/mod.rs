//! The six tools the model may call, their specs, and the rules they share.
//!
//! Owns: the registry (name → spec + handler), the [`ToolContext`] every
//! handler gets (workspace, allowed paths, cancellation), workspace
//! confinement of paths ([`ToolContext::resolve`]), and the cap on what a
//! tool result may put into the model's context ([`cap_output`]).
//!
//! Each tool's `run` returns `Result<String, ToolError>` (the file writers
//! `Result<Written, ToolError>`, which adds the typed [`Effect`]); [`execute`]
//! turns that into a [`ToolOutput`] once, so no caller reads a result's
//! text back to learn what happened. A tool never fails the send: every
//! failure becomes a [`ToolOutput`] with `is_error: true` that the model
//! reads as the call's result. Each tool's parameter schema for the model is
//! derived from its serde `Args` struct ([`spec`]).

pub mod bash;
pub mod client_files;
pub mod confine;
mod context;
pub mod edit_file;
pub mod edit_made;
pub mod edit_many;
pub mod edit_match;
pub mod edit_overlap;
mod edit_tolerant;
pub mod elsewhere;
pub mod file_blocks;
pub mod glob;
pub mod grep;
pub mod live;
pub mod read_file;
pub mod references;
pub mod shells;
pub mod spec;
pub mod supervisor;
pub mod syntax;
pub mod task;
pub mod todo;
pub mod whole;
pub mod write_file;

use std::path::PathBuf;

pub use context::{FileWatch, ToolContext, WriteHelp};
use serde::de::DeserializeOwned;
pub use spec::{schema_of, specs, specs_for};

/// True for the tools that write a file's text as the model sent it
/// (`write_file`, `edit_file`); `bash` may write files too, unseen.
pub fn writes_text(tool: &str) -> bool {
    matches!(tool, "write_file" | "edit_file")
}

/// True for pirn's own tools, whose effect on the workspace their result
/// says (the six, and the plan and background-shell tools, which have
/// none); an MCP tool may do
/// anything.
pub fn effects_known(tool: &str) -> bool {
    ALL_TOOLS.contains(&tool) || [todo::NAME, shells::OUTPUT, shells::KILL].contains(&tool)
}

/// Every tool pirn knows, in the order they are advertised.
pub const ALL_TOOLS: [&str; 6] = ["read_file", "write_file", "edit_file", "glob", "grep", "bash"];

/// Most bytes of one tool result sent to the model (head and tail kept).
pub const MAX_RESULT_BYTES: usize = 48 * 1024;

/// Longest `tool_end.result_preview`, in characters.
pub const PREVIEW_CHARS: usize = 500;

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
    /// A rewrite that removes most of an existing file was held back, not
    /// written; the same call again writes it (see `write_file`).
    HeldBack { path: PathBuf },
    /// `bash` ran the command; its exit code (`None`: a timeout or a signal).
    Ran { exit_code: Option<i32> },
    /// An `edit_file` whose edit the workspace already shows made, in
    /// `path` (its `old_string` matches only inside `new_string` there, or
    /// the send's own earlier change took `old_string` away or made the
    /// same edit there): nothing was written; the model is told so (an
    /// error result). The `write_file` counterpart is [`Effect::Unchanged`].
    MadeAlready { path: PathBuf },
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

/// A path the model gave that a file tool may not use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("path is empty")]
    Empty,
    #[error("path contains a NUL byte")]
    Nul,
    /// Resolves (following symlinks) outside the workspace and every allowed path.
    #[error(
        "path {raw:?} resolves to {} which is outside the workspace {} (and not under an allowed path)",
        resolved.display(),
        workspace.display()
    )]
    Outside { raw: String, resolved: PathBuf, workspace: PathBuf },
    /// The OS refused to follow it beneath the workspace: a symbolic link
    /// (relative or absolute) or a `..` would leave it.
    #[error(
        "path {raw:?} leads outside the workspace {} through a symbolic link or '..'; file tools stay inside it",
        workspace.display()
    )]
    Escapes { raw: String, workspace: PathBuf },
    /// The last component is a symlink whose target does not exist: a
    /// write would create a file wherever the link points.
    #[error("path {raw:?} is a symbolic link to nothing; pirn does not create files through links")]
    DanglingLink { raw: String },
    /// The OS could not look the path up beneath the workspace.
    #[error("path {raw:?} cannot be resolved inside the workspace: {why}")]
    Unresolvable { raw: String, why: String },
}

/// Why a tool call failed; the text is what the model reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    #[error(transparent)]
    Path(#[from] PathError),
    /// Any other failure, said for the model (what failed, on which path).
    #[error("{0}")]
    Failed(String),
    /// A rewrite that removes most of `path` was held back once: nothing
    /// was written; `message` shows what it would remove.
    #[error("{message}")]
    HeldBack { path: PathBuf, message: String },
    /// The edit looks made already in `path` ([`Effect::MadeAlready`]):
    /// nothing was written; `message` says where and why.
    #[error("{message}")]
    MadeAlready { path: PathBuf, message: String },
}

/// `Err(ToolError::Failed(message))`: the short form tools use.
pub(crate) fn failed(message: impl Into<String>) -> Result<String, ToolError> {
    Err(ToolError::Failed(message.into()))
}

/// Runs tool `name` with raw JSON `arguments`. Never panics on input: unknown
/// or disabled tools, arguments that are not JSON or miss fields all come
/// back as error outputs for the model. The text is capped at
/// [`MAX_RESULT_BYTES`].
pub async fn execute(name: &str, arguments: &str, enabled: &[String], ctx: &ToolContext) -> ToolOutput {
    if !enabled.iter().any(|e| e == name) || !ALL_TOOLS.contains(&name) {
        let list = if enabled.is_empty() { "none".to_owned() } else { enabled.join(", ") };
        return ToolOutput::error(format!("unknown tool {name:?}: the tools available are {list}"));
    }
    let result: Result<Written, ToolError> = match name {
        "read_file" => blocking(arguments, ctx, read_file::run).await,
        "write_file" => blocking(arguments, ctx, write_file::run).await,
        "edit_file" => blocking(arguments, ctx, edit_file::run).await,
        "glob" => blocking(arguments, ctx, glob::run).await,
        "grep" => blocking(arguments, ctx, grep::run).await,
        _ => {
            let ran = match parse_args::<bash::Args>(arguments) {
                Ok(args) => {
                    let cp = ctx.checkpoint.clone();
                    around(&cp, |c| c.before_command()).await;
                    let ran = bash::run(args, ctx).await;
                    around(&cp, |c| c.after_command()).await;
                    ran
                }
                Err(e) => return ToolOutput::error(cap_output(e.to_string(), ctx.result_cap)),
            };
            // A command that ran and exited non-zero is still a run.
            let (text, is_error) = match ran {
                Ok(text) => (text, false),
                Err(e) => (e.to_string(), true),
            };
            let effect = match bash::status_of(&text) {
                Some(exit_code) => Effect::Ran { exit_code },
                None => Effect::None,
            };
            return ToolOutput { text: cap_output(text, ctx.result_cap), is_error, effect };
        }
    };
    match result {
        Ok(done) => ToolOutput { text: cap_output(done.text, ctx.result_cap), is_error: false, effect: done.effect },
        Err(ToolError::HeldBack { path, message }) => {
            ToolOutput { text: cap_output(message, ctx.result_cap), is_error: true, effect: Effect::HeldBack { path } }
        }
        Err(ToolError::MadeAlready { path, message }) => ToolOutput {
            text: cap_output(message, ctx.result_cap),
            is_error: true,
            effect: Effect::MadeAlready { path },
        },
        Err(e) => ToolOutput::error(cap_output(e.to_string(), ctx.result_cap)),
    }
}

/// Parses the arguments, then runs a blocking file tool off the async
/// threads. A panic inside the tool becomes an error result.
async fn blocking<A, R, F>(arguments: &str, ctx: &ToolContext, f: F) -> Result<Written, ToolError>
where
    A: DeserializeOwned + Send + 'static,
    R: Into<Written> + Send + 'static,
    F: FnOnce(A, &ToolContext) -> Result<R, ToolError> + Send + 'static,
{
    let args = parse_args::<A>(arguments)?;
    let ctx = ctx.clone();
    match tokio::task::spawn_blocking(move || f(args, &ctx).map(Into::into)).await {
        Ok(result) => result,
        Err(e) => Err(ToolError::Failed(format!("tool failed internally: {e}"))),
    }
}

/// Runs `f` on the send's checkpoint record, if it has one, on the
/// blocking pool (a stat walk of the workspace).
async fn around(cp: &Option<std::sync::Arc<dyn FileWatch>>, f: fn(&dyn FileWatch)) {
    if let Some(cp) = cp.clone() {
        let _ = tokio::task::spawn_blocking(move || f(cp.as_ref())).await;
    }
}

pub(crate) fn parse_args<A: DeserializeOwned>(arguments: &str) -> Result<A, ToolError> {
    let text = if arguments.trim().is_empty() { "{}" } else { arguments };
    serde_json::from_str(text).map_err(|e| {
        ToolError::Failed(format!(
            "invalid arguments: {e}. Arguments must be a JSON object matching the tool's parameters."
        ))
    })
}

/// Cuts `text` to at most `max` bytes keeping its head and tail, with a
/// marker saying how many lines and bytes were left out.
pub fn cap_output(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let half = max / 2;
    let head_end = floor_char_boundary(&text, half);
    let tail_start = ceil_char_boundary(&text, text.len() - half);
    let omitted = &text[head_end..tail_start];
    let lines = omitted.bytes().filter(|b| *b == b'\n').count();
    format!("{}\n[... {lines} lines ({} bytes) omitted ...]\n{}", &text[..head_end], omitted.len(), &text[tail_start..])
}

/// At most [`PREVIEW_CHARS`] characters of a result, for `tool_end`.
pub fn preview(text: &str) -> String {
    match text.char_indices().nth(PREVIEW_CHARS - 14) {
        None => text.to_owned(),
        Some((i, _)) => format!("{} (truncated)", &text[..i]),
    }
}

pub(crate) fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

pub(crate) fn ceil_char_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use tokio_util::sync::CancellationToken;

    use super::*;

    fn ctx(dir: &Path) -> ToolContext {
        ToolContext::new(dir.canonicalize().unwrap(), vec![], CancellationToken::new())
    }

    #[test]
    fn resolve_confines_to_workspace() {
        let tmp = std::env::temp_dir().join(format!("pirn-resolve-{}", std::process::id()));
        std::fs::create_dir_all(tmp.join("sub")).unwrap();
        let c = ctx(&tmp);
        assert!(c.resolve("sub/new.txt").is_ok());
        assert!(c.resolve("sub/../../etc/passwd").is_err());
        assert!(c.resolve("/etc/passwd").is_err());
        std::os::unix::fs::symlink("/etc", tmp.join("link")).unwrap();
        assert!(c.resolve("link/passwd").is_err());
        std::os::unix::fs::symlink("/nonexistent-pirn/x", tmp.join("dangling")).unwrap();
        assert!(c.resolve("dangling").is_err());
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn same_lines_ignores_only_white_space_at_line_ends() {
        assert!(same_lines("a = 1\nb = 2\n", "a = 1\nb = 2"));
        assert!(same_lines("a = 1  \nb = 2\n\n\n", "a = 1\nb = 2\n"));
        assert!(same_lines("a\r\nb\r\n", "a\nb\n"), "line endings are white space at the end");
        assert!(!same_lines("a = 1\nb = 2\n", "a = 1\n  b = 2\n"), "indentation is not");
        assert!(!same_lines("a = 1\nb = 2\n", "a = 1\n\nb = 2\n"), "nor is a blank line inside");
        assert!(!same_lines("a = 1\n", "a = 2\n"));
    }

    #[test]
    fn cap_keeps_head_and_tail() {
        let text: String = (0..10_000).map(|i| format!("line {i}\n")).collect();
        let capped = cap_output(text, 1000);
        assert!(capped.starts_with("line 0\n"));
        assert!(capped.ends_with("line 9999\n"));
        assert!(capped.contains("lines ("));
        assert!(preview(&"é".repeat(2000)).chars().count() <= PREVIEW_CHARS);
    }
}
