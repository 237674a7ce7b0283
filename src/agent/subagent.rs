//! Subagents: a `task` call runs a child send with its own conversation
//! and answers with the child's final answer.
//!
//! Owns: [`run`] — the child's config ([`SessionConfig::for_subagent`]:
//! the operator's definition, never wider than the parent), its budgets
//! (carved out of what the parent send has left, and charged back to it
//! when it ends), its events (the parent send's, each marked with the
//! `task` call's id as `parent_call_id`), and what the parent learns: the
//! answer as the tool result, the files it changed as facts.
//!
//! The child is the same loop ([`crate::agent::run`], handed down as
//! [`CallContext::send_loop`]) under the same approval
//! broker (asks reach the same client), sandbox, hooks and cancellation
//! (the parent's token: cancelling the parent's send kills the child's
//! commands). Depth is one (a child has no `task` tool) and a send starts
//! at most [`MAX_SUBAGENTS`].

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use super::call_context::CallContext;
use super::facts::CallOutcome;
use super::outcome::Outcome;
use super::send_spec::SendSpec;
use super::stats::SendStats;
use crate::conversation::Conversation;
use crate::tools::{self, ToolOutput};

/// Most subagents one send may start.
pub const MAX_SUBAGENTS: u32 = 8;

/// Runs the `task` call `call_id` with `arguments`: the tool result, and
/// (when the child ran) the parent's outcome of the call.
pub async fn run(
    cx: &CallContext<'_>,
    stats: &mut SendStats,
    call_id: &str,
    arguments: &str,
) -> (ToolOutput, Option<CallOutcome>) {
    let agents = &cx.config.agents;
    let args = match tools::task::parse(arguments, agents) {
        Ok(a) => a,
        Err(e) => return (ToolOutput::error(e), None),
    };
    if stats.subagents >= MAX_SUBAGENTS {
        let text = format!("not run: this send already started {MAX_SUBAGENTS} subagents; finish the work here");
        return (ToolOutput::error(text), None);
    }
    stats.subagents += 1;
    let Some(def) = agents.get(&args.subagent_type) else {
        return (ToolOutput::error(format!("there is no subagent {:?}", args.subagent_type)), None);
    };
    let config = cx.config.for_subagent(def);
    let meter = Arc::new(cx.spec.meter.carve(def.max_total_tokens, def.max_tool_calls, def.max_cost_usd));
    let mut spec = SendSpec {
        meter: meter.clone(),
        cancel: cx.tools.cancel.child_token(),
        checkpoint: cx.spec.checkpoint.clone(),
        ..SendSpec::default()
    };
    let mut child = SendStats::default();
    child.meter = meter.clone();
    child.fallback = super::fallback::Fallback::new(config.fallback_model.clone());
    let mut conv = Conversation::new(&config.system_prompt, Arc::new(AtomicU64::new(0)));
    let emit = cx.emit.child(call_id);
    tracing::info!(agent = %args.subagent_type, task = %args.description, "a subagent starts");
    // Boxed (see `SendLoop`): the child's loop is this loop (a tool call of
    // it runs one).
    let outcome = (cx.send_loop)(&config, cx.permissions, &mut conv, &mut child, &emit, &args.prompt, &mut spec).await;
    cx.spec.meter.absorb(&meter);
    // Every model call the child made (its turns and its own side calls)
    // is a side call of this send: none is a turn of its conversation.
    stats.usage.add(&child.usage);
    stats.side_calls.calls += child.iterations + child.side_calls.calls;
    stats.side_calls.usage.add(&child.usage);
    let unseen = child.tool_calls_made.iter().any(|c| !tools::effects_known(&c.name));
    let changed = std::mem::take(&mut child.changed);
    let files: Vec<String> = changed.iter().map(|(p, _)| cx.tools.display(p)).collect();
    let mut output = match outcome {
        Outcome::Ok { response } if response.trim().is_empty() => ToolOutput::ok("(the subagent gave no answer)"),
        Outcome::Ok { response } => ToolOutput::ok(response),
        Outcome::Failed { error, response } => {
            let mut text = format!("the subagent {} stopped: {}", args.subagent_type, error.message);
            if let Some(r) = response.filter(|r| !r.trim().is_empty()) {
                text.push_str(&format!("\nIts last answer:\n{r}"));
            }
            ToolOutput::error(text)
        }
    };
    if !files.is_empty() {
        output.text.push_str(&format!("\n\n[pirn: the subagent changed {}]", files.join(", ")));
    }
    output.text = tools::cap_output(output.text, cx.tools.result_cap);
    (output, Some(CallOutcome::Delegated { changed, unseen }))
}
