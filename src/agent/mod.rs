//! The turn loop of one send: call the model, stream its text, run the tools
//! it asks for, feed their results back, until an answer without tools
//! passes the answer gates or a limit stops it.
//!
//! The loop is short on purpose; each step lives in its own module:
//! - [`turn`]: one model call in the send's [`mode::Mode`] (window fitting,
//!   the request, usage, typed recoveries), returning a [`turn::TurnStep`];
//! - [`round`]: one tool round (loop stop, repeats, the tool-call budget,
//!   cycle notes), each call's typed [`facts::CallOutcome`] recorded in
//!   [`facts::Facts`];
//! - [`gates`]: the ordered checks a final answer passes ([`gates::ORDER`]).
//!
//! pirn acts only through the model or the operator: every tool call here
//! is one the model made, and the only command pirn runs itself is the
//! operator's check ([`verify`]). Nothing here reads the user's request or
//! the model's prose to decide what happens next.
//!
//! Knows nothing of stdio or HTTP: events go out through an [`Emitter`].
//! Cancellation is the caller's: it drops this future (which drops the HTTP
//! stream and kills a running tool's process group), then calls
//! [`crate::conversation::Conversation::repair`].

pub mod batch;
pub mod budget;
pub mod call_context;
mod diff;
pub mod emit;
pub mod facts;
pub mod fallback;
pub mod fit;
pub mod gates;
pub mod loop_guard;
pub mod mode;
mod outcome;
mod reading;
pub mod request;
mod request_reading;
pub mod round;
pub mod send_spec;
mod send_state;
mod stats;
pub mod steer;
pub mod structured;
pub mod subagent;
pub mod tool_call;
pub mod turn;
pub mod verify;

pub use fit::{COMPACT_WINDOW_UNKNOWN, compact_now};
pub use outcome::Outcome;
pub(crate) use outcome::fail;
pub use send_spec::SendSpec;
pub use stats::SendStats;
pub use turn::PROBE_FROM_TOKENS;

pub use emit::{Emitter, OUTBOX_CAPACITY, Outbox};
pub use loop_guard::LOOP_REPEATS;

use std::future::Future;
use std::pin::Pin;

use crate::approval::ApprovalMode;
use crate::approval::broker::PermissionBroker;
use crate::config::SessionConfig;
use crate::context;
use crate::conversation::Conversation;
use crate::tools;
use crate::wire::{EditFormat, ErrorCode, ErrorEnvelope, Event};
use budget::{BudgetCall, BudgetPoint};
use gates::Review;
use gates::verdict::Answer;
use send_state::SendState;
use turn::TurnStep;

/// Runs one send to its end. `conv` already holds the earlier turns.
pub async fn run(
    config: &SessionConfig,
    permissions: &PermissionBroker,
    conv: &mut Conversation,
    stats: &mut SendStats,
    emit: &Emitter,
    message: &str,
    spec: &mut SendSpec,
) -> Outcome {
    if config.workspace_listing && conv.is_fresh() {
        // For 0.3.0 its own note before the request: not in the system
        // prompt, so a server's prompt cache keeps the system prompt and the
        // tool specs from one session to the next; not in the request, which
        // stays as the user wrote it. A 0.2.0 session keeps heddle's shape
        // (one system message, the listing at its end).
        let root = config.workspace.clone();
        match tokio::task::spawn_blocking(move || context::workspace::listing(&root)).await {
            Ok(listing) if config.version >= crate::wire::ProtocolVersion::V0_3 => conv.push_note(listing.trim()),
            Ok(listing) => conv.extend_system(&listing),
            Err(e) => tracing::warn!(error = %e, "the workspace listing failed"),
        }
    }
    match &spec.output {
        Some(output) => conv.push_user(&format!("{message}{}", output.instruction())),
        None => conv.push_user(message),
    }
    let mut cx = SendState::new(config, permissions, emit, conv, stats, spec, message, run_boxed);
    if config.edit_format == EditFormat::Whole
        && let Some(note) =
            config.file_block_target.as_deref().and_then(|t| tools::whole_file::chat_file_note(&cx.tools, t))
    {
        // The file in the chat, as it is now, after the request (the
        // model has no tool to read it with).
        cx.conv.push_note(&note);
    }
    loop {
        if let Some(end) = limits(&mut cx).await {
            return end;
        }
        steer(&mut cx).await;
        match turn::next(&mut cx).await {
            TurnStep::Again => {}
            TurnStep::End(outcome) => return outcome,
            TurnStep::Calls(turn) => {
                if let Some(end) = round::run(&mut cx, turn).await {
                    return end;
                }
            }
            // A steer waits and a model call is left for it: the answer
            // is not judged (no check, hook or side call for words the
            // steer supersedes); the model reads the steer next.
            TurnStep::Answer(_) if room(&cx) && cx.spec.steering.waiting() => {}
            TurnStep::Answer(completion) => {
                let cut_off = completion.finish_reason.as_deref() == Some("length");
                match gates::review(&mut cx, Answer { text: completion.text, cut_off }).await {
                    Review::Accept(_) if room(&cx) && !cx.spec.steering.close_if_empty() => {}
                    Review::Accept(response) => {
                        if config.policy.mode == ApprovalMode::Plan {
                            emit.emit(Event::PlanComplete { plan: response.clone() }).await;
                        }
                        return Outcome::Ok { response };
                    }
                    Review::Again { note, mode } => cx.again(&note, mode),
                    Review::Fail { error, answer } => return fail(emit, error, answer, None).await,
                }
            }
        }
    }
}

/// [`run`], boxed: the [`call_context::SendLoop`] a send hands down to its
/// tool calls, with which a `task` call runs its child send (the call path
/// does not name the loop that drives it).
fn run_boxed<'a>(
    config: &'a SessionConfig,
    permissions: &'a PermissionBroker,
    conv: &'a mut Conversation,
    stats: &'a mut SendStats,
    emit: &'a Emitter,
    message: &'a str,
    spec: &'a mut SendSpec,
) -> Pin<Box<dyn Future<Output = Outcome> + Send + 'a>> {
    Box::pin(run(config, permissions, conv, stats, emit, message, spec))
}

/// Takes the steering texts that wait (see [`steer`]): each passes the
/// operator's `UserPromptSubmit` hooks as a send's message does (a hook
/// that refuses it leaves it out, with its reason in pirn's log), then joins
/// the conversation as a user message; the send works again with tools.
async fn steer(cx: &mut SendState<'_>) {
    for (id, text) in cx.spec.steering.take() {
        let hook = crate::hooks::user_prompt_submit(&cx.config.hook_scope(), cx.emit, &text).await;
        if let Some(reason) = hook.block.as_ref().or(hook.stop.as_ref()) {
            tracing::info!(steer = %id, %reason, "a UserPromptSubmit hook refused a steer");
            continue;
        }
        match hook.context_text() {
            Some(context) => cx.conv.push_user(&format!("{text}\n\n{context}")),
            None => cx.conv.push_user(&text),
        }
        cx.stats.steered.push(id);
        // A send that must end (a spent tool-call budget, a second cycle)
        // still ends; any other answer mode gives way to work with tools.
        if !matches!(cx.mode, mode::Mode::WrapUp(mode::WrapUp::Budget | mode::WrapUp::SecondCycle)) {
            cx.mode = mode::Mode::Work;
        }
    }
}

/// True when another model call fits the send's limits (a steer may still
/// be read).
fn room(cx: &SendState<'_>) -> bool {
    cx.stats.iterations < cx.config.max_iterations && cx.spec.meter.at(BudgetPoint::BeforeCall, false) == BudgetCall::Go
}

/// The limits checked before each model call: a spent token budget, and
/// `max_iterations` (where a send that changed files ends `ok` when the
/// operator's check now passes). `Some` when the send ends here.
async fn limits(cx: &mut SendState<'_>) -> Option<Outcome> {
    if cx.spec.meter.at(BudgetPoint::BeforeCall, false) == BudgetCall::End {
        let answer = Some(std::mem::take(&mut cx.last_text)).filter(|t| !t.trim().is_empty());
        let error = cx.spec.meter.exceeded();
        return Some(fail(cx.emit, error, answer.or_else(|| Some(cx.account())), None).await);
    }
    let max = cx.config.max_iterations;
    if cx.stats.iterations < max {
        return None;
    }
    // Out of model calls, but the work may be done: the check decides.
    if let Some(done) = cx.checked_anyway(&format!("the model ran out of its {max} model calls")).await {
        return Some(done);
    }
    let error = ErrorEnvelope::new(
        ErrorCode::MaxIterations,
        format!("stopped after {max} model calls (max_iterations); the task is not finished"),
    );
    Some(fail(cx.emit, error, None, None).await)
}
