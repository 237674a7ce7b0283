//! The six tools the model may call, their specs, and the rules they share.
//!
//! Owns: the dispatch of a call to its tool ([`execute`]) and what is known
//! of a tool by its name ([`writes_text`], [`effects_known`]). The pieces
//! live in their files, lowest first: how a call fails (`error`, and
//! `confine` for a path it may not use), what it returns (`output`), the cap
//! on what a result may put into the model's context (`cap`), the
//! [`ToolContext`] every handler gets (`context`: workspace, allowed paths,
//! cancellation, the send's records), then the tools, and their specs
//! (`spec`).
//!
//! Each tool's `run` returns `Result<String, ToolError>` (the file writers
//! `Result<Written, ToolError>`, which adds the typed [`Effect`]); [`execute`]
//! turns that into a [`ToolOutput`] once, so no caller reads a result's
//! text back to learn what happened. A tool never fails the send: every
//! failure becomes a [`ToolOutput`] with `is_error: true` that the model
//! reads as the call's result. Each tool's parameter schema for the model is
//! derived from its serde `Args` struct ([`spec`]).

pub mod bash;
mod cap;
pub mod client_files;
pub mod confine;
mod context;
pub mod edit_file;
pub mod edit_made;
pub mod edit_many;
pub mod edit_match;
pub mod edit_overlap;
mod edit_tolerant;
mod edit_write;
mod error;
pub mod file_blocks;
pub mod find_in_files;
pub mod glob;
pub mod grep;
pub mod live;
mod output;
pub mod parse_notes;
pub mod read_file;
pub mod references;
pub mod shell_table;
pub mod shells;
pub mod spec;
pub mod supervisor;
pub mod syntax;
pub mod task;
pub mod todo;
pub mod whole_file;
pub mod write_file;
mod write_refusal;

pub use cap::{MAX_RESULT_BYTES, PREVIEW_CHARS, cap_output, preview};
pub(crate) use cap::{ceil_char_boundary, floor_char_boundary};
pub use confine::PathError;
pub use context::{FileWatch, ToolContext, WriteHelp};
pub use error::ToolError;
pub(crate) use error::parse_args;
pub use output::{Effect, Hold, ToolOutput, Written, content_hash, same_lines};
use serde::de::DeserializeOwned;
pub use spec::{ALL_TOOLS, schema_of, specs, specs_for};

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
        Err(ToolError::HeldBack { path, why, message }) => ToolOutput {
            text: cap_output(message, ctx.result_cap),
            is_error: true,
            effect: Effect::HeldBack { path, why },
        },
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
