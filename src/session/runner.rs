//! The runner task of a session: one send at a time, in order, each with
//! heartbeats and cancellation, each answered by exactly one result.
//!
//! Owns: turning the agent's [`Outcome`] (or a cancellation) into the send's
//! `result` with its figures, and repairing the conversation after a send
//! that did not finish.

use std::sync::Arc;
use std::time::Instant;

use super::Shared;
use super::queue::{Job, Next};
use crate::agent::{self, Emitter, Outcome, SendStats};
use crate::conversation::Conversation;
use crate::wire::{ErrorEnvelope, Event, OutgoingMessage, SendResult, Status};

/// Runs sends until the session closes and its queue is empty.
pub(super) async fn run_queue(shared: Arc<Shared>, mut conv: Conversation) {
    loop {
        let next = shared.queue().take_next();
        match next {
            Next::Run(job) => {
                run_send(&shared, &mut conv, job).await;
                shared.queue().active = None;
            }
            Next::Wait => shared.wake.notified().await,
            Next::Stop => return,
        }
    }
}

/// Runs one send with heartbeats and cancellation, then writes its result.
async fn run_send(shared: &Shared, conv: &mut Conversation, job: Job) {
    let config = &shared.config;
    let started = Instant::now();
    let emitter = Emitter::new(Arc::from(job.id.as_str()), config.correlation.clone(), shared.outbox.clone());
    let mut stats = SendStats::default();
    let outcome = {
        let agent =
            agent::run(config, &shared.permissions, conv, &mut stats, &emitter, &job.message, job.cancel.clone());
        tokio::pin!(agent);
        let mut heartbeat = tokio::time::interval_at(tokio::time::Instant::now() + config.heartbeat, config.heartbeat);
        heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                biased;
                _ = job.cancel.cancelled() => break None,
                outcome = &mut agent => break Some(outcome),
                _ = heartbeat.tick() => {
                    emitter.emit(Event::Heartbeat { duration_ms: started.elapsed().as_millis() as u64 }).await;
                }
            }
        }
        // The agent future is dropped here: its HTTP stream closes and a
        // running tool's process group is killed.
    };
    let (status, response, error) = match outcome {
        Some(Outcome::Ok { response }) => (Status::Ok, Some(response), None),
        Some(Outcome::Failed { error, response }) => {
            conv.repair("not run: the send ended with an error");
            (Status::Error, response, Some(error))
        }
        None => {
            conv.repair("cancelled by the user before this tool call finished");
            (Status::Error, None, Some(ErrorEnvelope::cancelled()))
        }
    };
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
        correlation: config.correlation.clone(),
    };
    let _ = shared.outbox.send(OutgoingMessage::Result(result)).await;
}
