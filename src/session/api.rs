//! [`Session`]: the handle every transport drives — send, steer, status,
//! cancel, answer a permission, drain, shut down — and the rule that every
//! accepted send gets exactly one `result`.
//!
//! Owns: the handle's methods that work on the queue and the shared state;
//! opening ([`super::open`]), rewinding ([`super::rewind`]) and ending
//! ([`super::end`]) a session add their own `impl Session` blocks.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio_util::sync::CancellationToken;

use super::queue::{Job, JobKind, SendRejected};
use super::shared::Shared;
use crate::agent::SendSpec;
use crate::approval::broker::AnswerError;
use crate::config::SessionConfig;
use crate::store::Journal;
use crate::wire::{
    self, Decision, ErrorCode, ErrorEnvelope, OutgoingMessage, ProtocolVersion, Request, SendOptions, SendResult,
    StatusOk, StopReason,
};

/// A running session. Cheap to share behind an `Arc`.
/// A handle on a session; clones are handles on the same session.
#[derive(Clone)]
pub struct Session {
    pub(super) shared: Arc<Shared>,
    /// Cancelled when the runner task has ended (even by a panic).
    pub(super) stopped: CancellationToken,
}

impl Session {
    /// The validated configuration.
    pub fn config(&self) -> &SessionConfig {
        &self.shared.config
    }

    /// The session's journal, when it is logged. The transport hands it to
    /// its output writer (emitted lines) and closes it after the writer
    /// has finished.
    pub fn journal(&self) -> Option<&Journal> {
        self.shared.journal.as_ref()
    }

    /// Queues a send (FIFO). Its events and its one result go to the outbox.
    /// With a queue timeout, a send still waiting when it passes is answered
    /// with a retryable `queue_timeout` error.
    pub fn send(&self, id: String, message: String) -> Result<(), SendRejected> {
        self.send_with(id, message, &SendOptions::default())
    }

    /// As [`Session::send`], with the send's 0.3.0 options. Errors also
    /// [`SendRejected::InvalidRequest`] when they cannot be used (an
    /// `output_schema` that does not compile): nothing is queued.
    pub fn send_with(&self, id: String, message: String, options: &SendOptions) -> Result<(), SendRejected> {
        let spec = SendSpec::resolve(&self.shared.config, options).map_err(SendRejected::InvalidRequest)?;
        self.enqueue(id, message, JobKind::Send, spec)
    }

    /// Queues a manual compaction (0.3.0 `compact`, `POST …/compact`): it
    /// runs in turn like a send and is answered by `context_compact` and one
    /// `result` with id `id`.
    pub fn compact(&self, id: String) -> Result<(), SendRejected> {
        self.enqueue(id, String::new(), JobKind::Compact, SendSpec::default())
    }

    pub(super) fn enqueue(
        &self,
        id: String,
        message: String,
        kind: JobKind,
        spec: SendSpec,
    ) -> Result<(), SendRejected> {
        let limits = self.shared.config.limits;
        {
            let mut q = self.shared.queue();
            q.admit(&id, message, kind, limits.max_queue)?;
            if let Some(job) = q.waiting.back_mut() {
                *job.spec = spec;
            }
        }
        self.shared.wake.notify_one();
        if let Some(limit) = limits.queue_timeout {
            let shared = self.shared.clone();
            tokio::spawn(async move {
                tokio::time::sleep(limit).await;
                let expired = shared.queue().remove_waiting(&id);
                if let Some(job) = expired {
                    let error = ErrorEnvelope {
                        code: ErrorCode::QueueTimeout,
                        message: format!("waited {} ms in the queue without starting", limit.as_millis()),
                        retryable: true,
                        details: None,
                    };
                    shared.answer(job.id, error).await;
                }
            });
        }
        Ok(())
    }

    /// Cancels send `id` only if it is still waiting (a client that gave up
    /// on a queued send). Returns whether it was.
    pub async fn cancel_if_queued(&self, id: &str) -> bool {
        let removed = self.shared.queue().remove_waiting(id);
        self.answer_removed(removed).await
    }

    /// Answers a send taken off the queue with its cancelled result.
    async fn answer_removed(&self, removed: Option<Job>) -> bool {
        match removed {
            Some(job) => {
                self.shared.answer(job.id, ErrorEnvelope::cancelled()).await;
                true
            }
            None => false,
        }
    }

    /// The `status_ok` answer for request `id`, at once. `messages_count`
    /// counts every message of the conversation, the system prompt included
    /// (as heddle does: 1 right after `init`).
    pub fn status(&self, id: String) -> StatusOk {
        let q = self.shared.queue();
        let system = u64::from(!self.shared.config.system_prompt.is_empty());
        let model = self.shared.overrides.lock().unwrap_or_else(|p| p.into_inner()).model.clone();
        StatusOk {
            id,
            model: model.unwrap_or_else(|| self.shared.config.model.clone()),
            messages_count: self.shared.messages.load(Ordering::Relaxed) + system,
            session_id: self.shared.config.session_id.clone(),
            active: q.active.is_some(),
            queue_length: Some(q.waiting.len() as u64),
            interrupted: Some(self.shared.interrupted.clone()).filter(|i| !i.is_empty()),
            sandbox: Some(self.shared.config.sandbox.describe()),
            store: self
                .shared
                .journal
                .as_ref()
                .map(|j| if j.failure().is_some() { "degraded" } else { "ok" }.to_owned()),
            budget: self.shared.meter.lock().unwrap_or_else(|p| p.into_inner()).as_ref().map(|m| m.status()),
            plan: Some(self.shared.plan.lock().unwrap_or_else(|p| p.into_inner()).clone()).filter(|p| !p.is_empty()),
        }
    }

    /// True while a send runs or waits.
    pub fn busy(&self) -> bool {
        let q = self.shared.queue();
        q.active.is_some() || !q.waiting.is_empty()
    }

    /// Cancels send `target`: a running one stops at once (its result follows
    /// from the runner); a queued one is removed and answered with a cancelled
    /// result here. Unknown or finished sends are ignored. Returns whether
    /// something was cancelled.
    pub async fn cancel(&self, target: &str) -> bool {
        // One lock for both checks: the runner cannot move the send from the
        // queue to active in between.
        let removed = {
            let mut q = self.shared.queue();
            if let Some((_, token)) = q.active.as_ref().filter(|(id, _)| id == target) {
                token.cancel();
                return true;
            }
            q.remove_waiting(target)
        };
        self.answer_removed(removed).await
    }

    /// Handles the in-session requests every transport shares (`send`,
    /// `status`, `cancel`, `permission_response`) and returns the reply that
    /// goes to the requester alone: `status_ok`, or a `protocol_error` result.
    /// `init` and `shutdown` belong to the transport; given here they get
    /// `protocol_error` too.
    pub async fn handle(&self, request: Request) -> Option<OutgoingMessage> {
        let mut reply = self.reply(request).await?;
        wire::shape(&mut reply, self.shared.config.version).then_some(reply)
    }

    async fn reply(&self, request: Request) -> Option<OutgoingMessage> {
        let refuse = |id: String, message: &dyn std::fmt::Display| {
            let result = SendResult::protocol_error(id, message, self.shared.config.correlation.clone());
            Some(OutgoingMessage::Result(Box::new(result)))
        };
        match request {
            Request::Send(s) if !s.options.is_empty() && self.shared.config.version < ProtocolVersion::V0_3 => {
                refuse(s.id, &"send options (output_schema, budgets, verify_command) need protocol_version 0.3.0")
            }
            Request::Send(s) => match self.send_with(s.id.clone(), s.message, &s.options) {
                Ok(()) => None,
                Err(SendRejected::InvalidRequest(message)) => {
                    let error = ErrorEnvelope::new(ErrorCode::InvalidRequest, message);
                    let mut result = SendResult::error(s.id, error, self.shared.config.correlation.clone());
                    result.stop_reason = Some(StopReason::Error);
                    Some(OutgoingMessage::Result(Box::new(result)))
                }
                Err(e) => refuse(s.id, &e),
            },
            Request::Status(r) => Some(OutgoingMessage::StatusOk(Box::new(self.status(r.id)))),
            Request::Cancel(c) => {
                self.cancel(&c.target_id).await;
                None
            }
            Request::PermissionResponse(p) if !self.shared.config.permission_responses => refuse(
                p.id,
                &"permission_response needs protocol_version 0.3.0 and config.permission_responses: true in init",
            ),
            Request::PermissionResponse(p) => {
                self.answer_permission(&p.request_id, p.decision).err().and_then(|e| refuse(p.id, &e))
            }
            Request::Compact(r) if self.shared.config.version < ProtocolVersion::V0_3 => {
                refuse(r.id, &"compact needs protocol_version 0.3.0")
            }
            Request::Compact(r) => self.compact(r.id.clone()).err().and_then(|e| refuse(r.id, &e)),
            Request::Rewind(r) if self.shared.config.version < ProtocolVersion::V0_3 => {
                refuse(r.id, &"rewind needs protocol_version 0.3.0")
            }
            Request::Rewind(r) => {
                let dry_run = r.dry_run.unwrap_or(false);
                self.rewind(r.id.clone(), r.send_id, dry_run).err().and_then(|e| refuse(r.id, &e))
            }
            Request::Steer(r) if self.shared.config.version < ProtocolVersion::V0_3 => {
                refuse(r.id, &"steer needs protocol_version 0.3.0")
            }
            Request::Steer(r) => match self.steer(r.id.clone(), r.message, r.send_id.as_deref()) {
                Ok(Some(send_id)) => Some(OutgoingMessage::SteerOk(crate::wire::SteerOk { id: r.id, send_id })),
                Ok(None) => None,
                Err(e) => refuse(r.id, &e),
            },
            Request::Init(r) => refuse(r.id.clone(), &"the session is already initialized"),
            Request::Shutdown(r) => refuse(r.id, &"shutdown is handled by the transport"),
        }
    }

    /// Adds `message` (request `id`) to the running send (the one named
    /// `send_id`, when given), which takes it at its next model call:
    /// `Ok(Some(send id))`. When no such send runs or it is ending, the
    /// message is queued as a send of its own with id `id`: `Ok(None)` (its
    /// result follows as any send's). Errors: the queue refused it.
    pub fn steer(&self, id: String, message: String, send_id: Option<&str>) -> Result<Option<String>, SendRejected> {
        if self.shared.queue().used(&id) {
            return Err(SendRejected::DuplicateId);
        }
        let running = self.shared.steering.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some((running_id, inbox)) = running.filter(|(r, _)| send_id.is_none_or(|s| s == r))
            && inbox.offer(id.clone(), message.clone())
        {
            self.shared.queue().note_id(&id);
            return Ok(Some(running_id));
        }
        self.send_with(id, message, &SendOptions::default()).map(|()| None)
    }

    /// Cancels the send that is running, if any (queued ones stay).
    /// Returns whether one was.
    pub fn cancel_running(&self) -> bool {
        let q = self.shared.queue();
        q.active.as_ref().inspect(|(_, token)| token.cancel()).is_some()
    }

    /// Uses `model` (`None`: the one `init` named) from the next send on.
    pub fn set_model(&self, model: Option<String>) {
        self.shared.overrides.lock().unwrap_or_else(|p| p.into_inner()).model = model.filter(|m| !m.trim().is_empty());
    }

    /// Uses approval `mode` from the next send on. The tools advertised stay
    /// those of `init` (plan mode's refusals still apply to every write).
    pub fn set_approval_mode(&self, mode: crate::wire::ApprovalMode) {
        self.shared.overrides.lock().unwrap_or_else(|p| p.into_inner()).mode = Some(mode);
    }

    /// Answers a pending `permission_request` (first answer wins).
    pub fn answer_permission(&self, request_id: &str, decision: Decision) -> Result<(), AnswerError> {
        self.shared.permissions.answer(request_id, decision)
    }

    /// Stops taking sends; the queued and running ones still finish.
    pub fn close(&self) {
        self.shared.queue().closing = true;
        self.shared.wake.notify_one();
    }

    /// Stops taking sends, lets the queued and running ones finish, and waits
    /// for the runner to end. Cancel-safe; may be called again.
    pub async fn drain(&self) {
        self.close();
        self.finished().await;
    }

    /// Resolves once the runner has ended (after [`Session::close`] and the
    /// last send). Cancel-safe.
    pub async fn finished(&self) {
        self.stopped.cancelled().await;
    }

    /// Cancels the running send and every queued one (each gets its cancelled
    /// result), then waits for the runner to end. After this returns nothing
    /// more is written for this session.
    pub async fn shutdown(&self) {
        let queued: Vec<Job> = {
            let mut q = self.shared.queue();
            q.closing = true;
            if let Some((_, token)) = &q.active {
                token.cancel();
            }
            q.waiting.drain(..).collect()
        };
        for job in queued {
            self.shared.answer(job.id, ErrorEnvelope::cancelled()).await;
        }
        self.drain().await;
    }
}
