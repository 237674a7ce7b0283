//! The runner task of a session: one send at a time, in order, each with
//! heartbeats and cancellation, each answered by exactly one result.
//!
//! Owns: turning the agent's [`Outcome`] (or a cancellation, or a panic) into
//! the send's `result` with its figures, and repairing the conversation
//! after a send that did not finish. A panic inside a send is caught: the
//! send gets an `internal_error` result, the message goes to the log, and
//! the session goes on.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use futures_util::FutureExt;

use super::queue::{Job, JobKind, Next};
use super::rewind::worktree_state;
use super::shared::Shared;
use crate::agent::{self, Emitter, Outcome, SendSpec, SendStats};
use crate::checkpoint::{Bounds, SendCheckpoint};
use crate::conversation::Conversation;
use crate::hooks;
use crate::store::Body;
use crate::wire::{
    CheckpointKept, ErrorCode, ErrorEnvelope, Event, OutgoingMessage, SendResult, Status, StopReason, WorktreeCleanup,
};

/// Runs sends until the session closes and its queue is empty, with the
/// operator's `SessionStart` hooks first (their context joins the system
/// prompt) and its `SessionEnd` hooks last.
pub(super) async fn run_queue(shared: Arc<Shared>, mut conv: Conversation) {
    let source = if conv.is_fresh() { "startup" } else { "resume" };
    if let Some(context) = hooks::session_start(&shared.config.hook_scope(), source).await {
        conv.extend_system(&context);
    }
    loop {
        let next = shared.queue().take_next();
        match next {
            Next::Run(job) => {
                // Boxed: an idle session's task does not carry a send's state.
                Box::pin(run_send(&shared, &mut conv, job)).await;
                shared.queue().active = None;
            }
            Next::Wait => shared.wake.notified().await,
            Next::Stop => {
                hooks::session_end(&shared.config.hook_scope(), "other").await;
                if let Some((wt, WorktreeCleanup::RemoveIfUnchanged)) = shared.config.worktree.clone() {
                    let removed = tokio::task::spawn_blocking(move || wt.remove_if_unchanged()).await;
                    if let Ok(Err(e)) = removed {
                        tracing::warn!("the session's worktree could not be removed: {e}");
                    }
                }
                return;
            }
        }
    }
}

/// How a send's agent future ended.
enum Ended {
    Finished(Outcome),
    Cancelled,
    Panicked(String),
}

/// Runs one send with heartbeats and cancellation, then writes its result.
async fn run_send(shared: &Shared, conv: &mut Conversation, mut job: Job) {
    if matches!(job.kind, JobKind::Rewind | JobKind::RewindPreview) {
        let result = super::rewind::run(shared, job).await;
        shared.out(OutgoingMessage::Result(Box::new(result))).await;
        return;
    }
    let changed = shared.effective_config();
    let config = changed.as_ref().unwrap_or(&shared.config);
    let started = Instant::now();
    if let Some(journal) = &shared.journal {
        let compact = matches!(job.kind, JobKind::Compact);
        journal.record(Body::Send { send_id: job.id.clone(), message: job.message.clone(), compact });
        if job.kind == JobKind::Send && config.checkpoints {
            job.spec.checkpoint = Some(Arc::new(SendCheckpoint::new(
                &job.id,
                config.workspace.clone(),
                journal.clone(),
                Bounds::default(),
                shared.shadow.clone(),
            )));
        }
    }
    let trace = crate::telemetry::SendTrace::start(
        &config.session_id,
        &job.id,
        &config.model,
        job.spec.traceparent.as_deref(),
        &job.message,
    );
    let mut emitter =
        Emitter::new(Arc::from(job.id.as_str()), config.correlation.clone(), config.version, shared.outbox.clone())
            .with_trace(trace);
    job.spec.cancel = job.cancel.clone();
    let mut stats = SendStats::default();
    stats.meter = job.spec.meter.clone();
    stats.fallback =
        crate::agent::fallback::Fallback::new(config.fallback_model.clone().filter(|m| *m != config.model));
    *shared.meter.lock().unwrap_or_else(|p| p.into_inner()) = Some(job.spec.meter.clone());
    if job.kind == JobKind::Send {
        *shared.steering.lock().unwrap_or_else(|p| p.into_inner()) = Some((job.id.clone(), job.spec.steering.clone()));
    }
    let ended = {
        let agent = async {
            match job.kind {
                JobKind::Send => {
                    // The operator's UserPromptSubmit hooks may refuse the send or add context.
                    let hook = hooks::user_prompt_submit(&config.hook_scope(), &emitter, &job.message).await;
                    if let Some(reason) = hook.block.as_ref().or(hook.stop.as_ref()) {
                        let error = ErrorEnvelope::new(
                            ErrorCode::HookBlocked,
                            format!("a UserPromptSubmit hook refused the prompt: {reason}"),
                        );
                        agent::fail(&emitter, error, None, None).await
                    } else {
                        let message = match hook.context_text() {
                            Some(context) => std::borrow::Cow::Owned(format!("{}\n\n{context}", job.message)),
                            None => std::borrow::Cow::Borrowed(job.message.as_str()),
                        };
                        agent::run(config, &shared.permissions, conv, &mut stats, &emitter, &message, &mut job.spec)
                            .await
                    }
                }
                JobKind::Compact => agent::compact_now(config, conv, &mut stats, &emitter).await,
                // Run by `super::rewind` before the agent is reached.
                JobKind::Rewind | JobKind::RewindPreview => Outcome::Ok { response: String::new() },
            }
        };
        // A panic anywhere in the loop (a bug) must not swallow the result.
        // Boxed: the loop's state machine is large, and an idle session's
        // runner task should not carry it between sends.
        let mut agent = Box::pin(AssertUnwindSafe(agent).catch_unwind());
        let mut heartbeat = tokio::time::interval_at(tokio::time::Instant::now() + config.heartbeat, config.heartbeat);
        heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                biased;
                _ = job.cancel.cancelled() => break Ended::Cancelled,
                outcome = &mut agent => break match outcome {
                    Ok(outcome) => Ended::Finished(outcome),
                    Err(panic) => Ended::Panicked(panic_message(panic.as_ref())),
                },
                _ = heartbeat.tick() => {
                    emitter.emit(Event::Heartbeat { duration_ms: started.elapsed().as_millis() as u64 }).await;
                }
            }
        }
        // The agent future is dropped here: its HTTP stream closes and a
        // running tool's process group is killed.
    };
    *shared.meter.lock().unwrap_or_else(|p| p.into_inner()) = None;
    *shared.steering.lock().unwrap_or_else(|p| p.into_inner()) = None;
    // Steers the send ended before taking run next, each a send of its own.
    let untaken = job.spec.steering.close();
    if !untaken.is_empty() {
        let mut q = shared.queue();
        for (id, text) in untaken.into_iter().rev() {
            let spec = SendSpec::resolve(config, &crate::wire::SendOptions::default()).unwrap_or_default();
            q.readmit_front(id, text, spec);
        }
    }
    // After the agent future is gone (a command it ran is killed by then).
    let kept = match job.spec.checkpoint.take() {
        // Reads every file the send changed: not on the runtime's threads.
        Some(c) => tokio::task::spawn_blocking(move || c.finish()).await.ok().flatten(),
        None => None,
    };
    conv.log_seen(&config.workspace);
    // A model call or tool cut off by the cancel still counts.
    stats.close_interrupted();
    let (status, response, error, stop) = match ended {
        Ended::Finished(Outcome::Ok { response }) => (Status::Ok, Some(response), None, StopReason::EndTurn),
        Ended::Finished(Outcome::Failed { error, response }) => {
            conv.repair("not run: the send ended with an error");
            let stop = match error.code {
                ErrorCode::MaxIterations => StopReason::MaxIterations,
                ErrorCode::LoopDetected => StopReason::LoopDetected,
                ErrorCode::BudgetExceeded => StopReason::BudgetExhausted,
                _ => StopReason::Error,
            };
            (Status::Error, response, Some(error), stop)
        }
        Ended::Cancelled => {
            conv.repair("cancelled by the user before this tool call finished");
            (Status::Error, None, Some(ErrorEnvelope::cancelled()), StopReason::Cancelled)
        }
        Ended::Panicked(message) => {
            tracing::error!(send_id = %job.id, "the send panicked: {message}");
            conv.repair("not run: the send ended with an internal error");
            let error = ErrorEnvelope::new(ErrorCode::InternalError, format!("internal error in pirn: {message}"));
            (Status::Error, None, Some(error), StopReason::Error)
        }
    };
    // The send's cost is the meter's: every model call is charged there,
    // one whose usage never arrived included (it makes the sum unknown).
    stats.usage.cost_usd = job.spec.meter.cost_usd();
    let session_cost_usd = shared.add_cost(&job.spec.meter);
    let result = SendResult {
        id: job.id,
        status,
        response,
        tool_calls_made: stats.tool_calls_made,
        usage: Some(stats.usage),
        iterations: stats.iterations,
        error,
        model_latency_ms: Some(stats.model_latency.as_millis() as u64),
        tool_latency_ms: Some(stats.tool_latency.as_millis() as u64),
        total_latency_ms: Some(started.elapsed().as_millis() as u64),
        stop_reason: Some(stop),
        verification: stats.verification.take(),
        structured_output: stats.structured_output.take(),
        durable: None,
        side_calls: Some(std::mem::take(&mut stats.side_calls)).filter(|s| s.calls > 0),
        checkpoint: kept.map(|k| CheckpointKept { files: k.files, bytes: k.bytes, unkept: k.unkept }),
        steered: Some(std::mem::take(&mut stats.steered)).filter(|s| !s.is_empty()),
        rewound: None,
        worktree: worktree_state(config).await,
        session_cost_usd,
        files_changed: Some(std::mem::take(&mut stats.files_changed)),
        calls_completed: stats.calls_completed,
        correlation: config.correlation.clone(),
    };
    if let Some(trace) = emitter.take_trace() {
        trace.end(&result);
    }
    shared.out(OutgoingMessage::Result(Box::new(result))).await;
}

/// The text of a panic payload (`&str` or `String`), else a placeholder.
fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panic_in_a_future_is_caught_with_its_message() {
        let fut = async {
            let v: Vec<u8> = Vec::new();
            #[allow(clippy::indexing_slicing)]
            v[3]
        };
        let caught = AssertUnwindSafe(fut).catch_unwind().await.unwrap_err();
        assert!(panic_message(caught.as_ref()).contains("index out of bounds"));
        let s = AssertUnwindSafe(async { std::panic::panic_any(7u8) }).catch_unwind().await.unwrap_err();
        assert_eq!(panic_message(s.as_ref()), "a panic without a message");
    }
}
