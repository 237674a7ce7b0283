//! Background shells (0.3.0): a `bash` call with `run_in_background: true`
//! starts its command and returns at once with a shell id; `bash_output
//! {shell_id, wait_ms?}` gives what the command printed since the last read
//! and whether it still runs; `kill_shell {shell_id}` kills its process
//! group. These are Claude Code's `run_in_background`, `BashOutput` (now
//! `TaskOutput`) and `KillShell` (now `TaskStop`), whose names the Claude
//! surface maps onto these.
//!
//! Owns: the two tools (their names, arguments and descriptions) and
//! running a call of one ([`execute`]). The session's table of shells, the
//! unread output and every way a shell dies are [`super::shell_table`]'s;
//! starting a command and the task that follows it (reads its pipe, waits
//! for it) are [`super::bash`]'s.
//!
//! What a background command changes on disk is not in the send's file
//! checkpoint nor in `files_changed` (it may go on after the send ends).

use schemars::JsonSchema;
use serde::Deserialize;

use super::cap::cap_output;
use super::context::ToolContext;
use super::error::parse_args;
use super::output::ToolOutput;

/// The tool that reads a background shell.
pub const OUTPUT: &str = "bash_output";
/// The tool that kills one.
pub const KILL: &str = "kill_shell";

/// `bash_output`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct OutputArgs {
    /// The id `bash` returned for the background command.
    #[serde(alias = "bash_id", alias = "task_id")]
    pub shell_id: String,
    /// Wait up to this many milliseconds for the command to end before
    /// reading (default 0: read at once).
    #[serde(default)]
    #[schemars(range(min = 0, max = 600_000))]
    pub wait_ms: Option<u64>,
}

/// `kill_shell`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct KillArgs {
    /// The id `bash` returned for the background command.
    #[serde(alias = "bash_id", alias = "task_id")]
    pub shell_id: String,
}

/// `bash_output`'s description for the model.
pub const OUTPUT_DESCRIPTION: &str = "Read a background command's output printed since your last read of it (started with bash run_in_background), and whether it still runs or how it ended.";
/// `kill_shell`'s description for the model.
pub const KILL_DESCRIPTION: &str =
    "Stop a background command (started with bash run_in_background): its whole process group is killed.";

/// Runs a `bash_output` or `kill_shell` call (`name`) with raw JSON
/// `arguments`; every failure is an error output for the model.
pub async fn execute(name: &str, arguments: &str, ctx: &ToolContext) -> ToolOutput {
    let Some(shells) = ctx.shells.as_ref() else {
        return ToolOutput::error(format!("{name} is not offered in this session"));
    };
    let result = if name == KILL {
        match parse_args::<KillArgs>(arguments) {
            Ok(args) => shells.kill(&args.shell_id).await,
            Err(e) => Err(e),
        }
    } else {
        match parse_args::<OutputArgs>(arguments) {
            Ok(args) => shells.read(&args.shell_id, args.wait_ms, &ctx.cancel).await,
            Err(e) => Err(e),
        }
    };
    match result {
        Ok(text) => ToolOutput::ok(cap_output(text, ctx.result_cap)),
        Err(e) => ToolOutput::error(cap_output(e.to_string(), ctx.result_cap)),
    }
}
