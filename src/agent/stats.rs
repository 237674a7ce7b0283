//! The figures of one send that end up in its result: model calls, tool
//! calls, usage, time spent waiting on the model and on tools, and what
//! the loop learned (the verification run, the structured answer).

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::wire::{ToolCallMade, Usage};

/// Figures of one send, reported in its result (also when it is cancelled:
/// a model call or tool cut off by the cancel counts up to that moment).
#[derive(Debug, Default)]
pub struct SendStats {
    /// Turns: model calls made for the conversation (see `SendResult::iterations`).
    pub iterations: u32,
    /// Side calls: model calls the conversation did not need (a reading, a
    /// compaction's summary), and their usage (also in `usage`).
    pub side_calls: crate::wire::SideCalls,
    pub tool_calls_made: Vec<ToolCallMade>,
    pub usage: Usage,
    pub model_latency: Duration,
    pub tool_latency: Duration,
    /// The last verification run (`verify`), for the result.
    pub verification: Option<crate::wire::Verification>,
    /// Model calls that returned a completion.
    pub calls_completed: u32,
    /// The final answer parsed, when the send had an `output_schema`.
    pub structured_output: Option<Value>,
    /// The send's budget meter (the runner's `SendSpec::meter`): what a
    /// compaction's model call cost is charged to it too.
    pub meter: std::sync::Arc<super::budget::Meter>,
    /// The send's fallback model and whether it switched to it (set by
    /// the runner from `config.fallback_model`).
    pub fallback: super::fallback::Fallback,
    /// The files the send's `write_file`/`edit_file` calls changed,
    /// workspace-relative, in path order: the facts behind the result's
    /// `files_changed` (filled when the send's loop ends, however it ends).
    pub files_changed: Vec<String>,
    /// A Stop hook kept this send going (Claude Code's `stop_hook_active`,
    /// see [`crate::hooks::on_stop`]).
    pub stop_hook_active: bool,
    /// Ids of the `steer` requests whose text the send took, in order.
    pub steered: Vec<String>,
    /// The files the send's writes changed, with the hash of what the
    /// last write left (`None`: a command or MCP tool may have changed it
    /// since): what a subagent's parent learns of its run.
    pub changed: Vec<(std::path::PathBuf, Option<u64>)>,
    /// Subagents this send started (`task` calls that ran).
    pub subagents: u32,
    /// Start of the model call in flight.
    model_since: Option<Instant>,
    /// Start of the tool call in flight.
    tool_since: Option<Instant>,
}

impl SendStats {
    /// A model call starts.
    pub fn begin_model(&mut self) {
        self.model_since = Some(Instant::now());
    }

    /// The model call in flight ended; its time is counted.
    pub fn end_model(&mut self) {
        if let Some(t) = self.model_since.take() {
            self.model_latency += t.elapsed();
        }
    }

    /// A tool call starts.
    pub fn begin_tool(&mut self) {
        self.tool_since = Some(Instant::now());
    }

    /// The tool call in flight ended; its time is counted. Returns it.
    pub fn end_tool(&mut self) -> Duration {
        let spent = self.tool_since.take().map(|t| t.elapsed()).unwrap_or_default();
        self.tool_latency += spent;
        spent
    }

    /// Counts what was in flight when the send was cut off (cancel, panic).
    pub fn close_interrupted(&mut self) {
        self.end_model();
        self.end_tool();
    }
}
