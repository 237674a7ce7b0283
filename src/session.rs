//! One session: its settings, its conversation, the FIFO queue of sends, the
//! one send that runs at a time, status and cancellation.
//!
//! Owns: the session API both transports drive ([`Session::start`],
//! [`Session::send`], [`Session::status`], [`Session::cancel`],
//! [`Session::finish`], [`Session::shutdown`]), the runner task that takes
//! sends off the queue, heartbeats, and the rule that every accepted send
//! gets exactly one `result` (finished, failed, cancelled while running or
//! while queued).
//!
//! Output goes to an [`Outbox`] (a bounded channel); the transport's single
//! writer serialises it and assigns `event_seq`. Nothing here does I/O but
//! the model call and the tools, through `agent`.

use std::collections::{HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

use crate::agent::{self, Outcome, SendStats};
use crate::approval::{AnswerError, ApprovalMode, PermissionBroker, Policy};
use crate::conversation::Conversation;
use crate::model::Endpoint;
use crate::tools;
use crate::wire::{
    Correlation, Decision, ErrorCode, ErrorEnvelope, Event, EventMsg, InitConfig, Request, Response, SendResult,
    Status, StatusOk,
};

/// Where a session's output goes, in order. Bounded: a reader that stops
/// reading slows the session down instead of growing memory.
pub type Outbox = mpsc::Sender<Response>;

/// Capacity of an outbox channel, in messages.
pub const OUTBOX_CAPACITY: usize = 1024;

/// Default `max_iterations`.
pub const DEFAULT_MAX_ITERATIONS: u32 = 20;
/// Default wait for a permission answer, in ms.
pub const DEFAULT_PERMISSION_TIMEOUT_MS: u64 = 300_000;

/// Appended to the system prompt in plan mode.
const PLAN_INSTRUCTIONS: &str = "\n\nYou are in plan mode: you may read the repository with the read-only tools, \
but you must not change files or run commands. Finish with a numbered, step-by-step plan for the task.";

/// Default heartbeat interval.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_millis(5000);

/// Everything a session needs, validated from `init.config` and the
/// environment.
#[derive(Debug)]
pub struct SessionSettings {
    pub session_id: String,
    pub model: String,
    pub system_prompt: String,
    /// Enabled tool names (known ones only).
    pub tools: Vec<String>,
    /// Chat-completions `tools` entries for the enabled tools.
    /// Built by the first send that needs them ([`SessionSettings::tool_specs`]).
    tool_specs: std::sync::OnceLock<Vec<Value>>,
    pub max_iterations: u32,
    pub correlation: Correlation,
    /// Canonical workspace directory.
    pub workspace: PathBuf,
    /// Canonical extra roots file tools may reach.
    pub allowed_paths: Vec<PathBuf>,
    pub endpoint: Endpoint,
    pub heartbeat: Duration,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
    /// Approval mode and permission rules.
    pub policy: Policy,
    /// The client answers permission requests (pirn extension).
    pub permission_responses: bool,
    /// Longest wait for a permission answer.
    pub permission_timeout: Duration,
    /// Most sends that may wait behind the running one (`None`: no limit).
    pub max_queue: Option<usize>,
    /// Longest a send may wait in the queue before it ends with
    /// `queue_timeout` (`None`: no limit).
    pub queue_timeout: Option<Duration>,
}

impl SessionSettings {
    /// Validates `config` and reads the environment (model endpoint,
    /// `PIRN_HEARTBEAT_INTERVAL` / `HEDDLE_HEARTBEAT_INTERVAL` in ms).
    ///
    /// Errors (a message for a `protocol_error`): empty model, a `cwd` that is
    /// not a directory, `max_iterations` of 0.
    pub fn from_init(config: &InitConfig) -> Result<SessionSettings, String> {
        if config.model.trim().is_empty() {
            return Err("config.model must not be empty".to_owned());
        }
        if config.max_iterations == Some(0) {
            return Err("config.max_iterations must be at least 1".to_owned());
        }
        let workspace = match &config.cwd {
            Some(dir) => PathBuf::from(dir),
            None => std::env::current_dir().map_err(|e| format!("cannot read the working directory: {e}"))?,
        };
        let workspace = workspace
            .canonicalize()
            .ok()
            .filter(|p| p.is_dir())
            .ok_or_else(|| format!("workspace {} is not a directory", workspace.display()))?;
        let mode = match config.approval_mode {
            Some(m) => m,
            None => match std::env::var("PIRN_APPROVAL_MODE").ok().filter(|v| !v.trim().is_empty()) {
                Some(v) => ApprovalMode::parse(&v).ok_or_else(|| {
                    format!("PIRN_APPROVAL_MODE={v:?} is not one of full-auto, auto-edit, suggest, plan")
                })?,
                None => ApprovalMode::default(),
            },
        };
        let policy = Policy::new(mode, &config.permissions.clone().unwrap_or_default())?;
        let mut allowed_paths = Vec::new();
        for p in config.allowed_paths.iter().flatten() {
            let real = PathBuf::from(p).canonicalize().map_err(|e| format!("allowed path {p:?}: {e}"))?;
            allowed_paths.push(real);
        }
        let tools: Vec<String> = config
            .tools
            .iter()
            .filter(|t| tools::ALL_TOOLS.contains(&t.as_str()) && policy.visible(t))
            .cloned()
            .collect();
        for unknown in config.tools.iter().filter(|t| !tools::ALL_TOOLS.contains(&t.as_str())) {
            tracing::warn!(tool = %unknown, "init names a tool pirn does not have; ignored");
        }
        let session_id = uuid::Uuid::new_v4().to_string();
        Ok(SessionSettings {
            correlation: Correlation {
                session_id: Some(Arc::from(session_id.as_str())),
                task_id: config.task_id.as_deref().map(Arc::from),
                worker_id: config.worker_id.as_deref().map(Arc::from),
            },
            session_id,
            model: config.model.clone(),
            system_prompt: if mode == ApprovalMode::Plan {
                format!("{}{PLAN_INSTRUCTIONS}", config.system_prompt)
            } else {
                config.system_prompt.clone()
            },
            tool_specs: std::sync::OnceLock::new(),
            tools,
            max_iterations: config.max_iterations.unwrap_or(DEFAULT_MAX_ITERATIONS),
            workspace,
            allowed_paths,
            endpoint: Endpoint::from_env(config.idle_timeout_ms),
            heartbeat: heartbeat_from_env(),
            temperature: config.temperature,
            max_tokens: config.max_tokens,
            policy,
            permission_responses: config.permission_responses.unwrap_or(false),
            permission_timeout: Duration::from_millis(
                config.permission_timeout_ms.unwrap_or(DEFAULT_PERMISSION_TIMEOUT_MS),
            ),
            max_queue: None,
            queue_timeout: None,
        })
    }
}

impl SessionSettings {
    /// Chat-completions `tools` entries for the enabled tools, built on first
    /// use (nothing tool-related is built before a send needs it).
    pub fn tool_specs(&self) -> &[Value] {
        self.tool_specs.get_or_init(|| tools::specs(&self.tools))
    }
}

fn heartbeat_from_env() -> Duration {
    ["PIRN_HEARTBEAT_INTERVAL", "HEDDLE_HEARTBEAT_INTERVAL"]
        .iter()
        .find_map(|k| std::env::var(k).ok().and_then(|v| v.trim().parse::<u64>().ok()))
        .map(|ms| Duration::from_millis(ms.max(10)))
        .unwrap_or(DEFAULT_HEARTBEAT)
}

/// Emits the events of one send into the outbox.
pub struct Emitter {
    send_id: Arc<str>,
    correlation: Correlation,
    outbox: Outbox,
}

impl Emitter {
    /// Queues `event` for the writer (which numbers it). If the writer is
    /// gone the event is dropped: the host has stopped listening.
    pub async fn emit(&self, event: Event) {
        let msg =
            EventMsg { event, event_seq: 0, send_id: self.send_id.clone(), correlation: self.correlation.clone() };
        let _ = self.outbox.send(Response::Event(msg)).await;
    }
}

/// Why a send was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendRejected {
    #[error("a send with this id was already accepted in this session")]
    DuplicateId,
    #[error("too many sends are waiting")]
    QueueFull,
    #[error("the session is shutting down")]
    Closing,
}

struct Job {
    id: String,
    message: String,
    cancel: CancellationToken,
}

#[derive(Default)]
struct Queue {
    waiting: VecDeque<Job>,
    /// Id and token of the running send.
    active: Option<(String, CancellationToken)>,
    /// No more sends; the runner stops when the queue is empty.
    closing: bool,
    /// Every send id accepted so far (ids are never reused in a session).
    seen: HashSet<String>,
}

impl Queue {
    /// Removes send `id` if it is still waiting.
    fn remove_waiting(&mut self, id: &str) -> Option<Job> {
        let at = self.waiting.iter().position(|j| j.id == id)?;
        self.waiting.remove(at)
    }
}

struct Shared {
    settings: Arc<SessionSettings>,
    outbox: Outbox,
    queue: Mutex<Queue>,
    wake: Notify,
    messages: Arc<AtomicU64>,
    permissions: PermissionBroker,
}

impl Shared {
    fn queue(&self) -> MutexGuard<'_, Queue> {
        // A panic while holding this lock cannot leave the queue half-updated
        // (every critical section is a single push/pop/assignment).
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A running session. Cheap to share behind an `Arc`.
pub struct Session {
    shared: Arc<Shared>,
    /// Cancelled when the runner task has ended (even by a panic).
    stopped: CancellationToken,
}

impl Session {
    /// Starts the session's runner task on the current tokio runtime.
    pub fn start(settings: SessionSettings, outbox: Outbox) -> Session {
        let messages = Arc::new(AtomicU64::new(0));
        let conv = Conversation::new(&settings.system_prompt, messages.clone());
        let shared = Arc::new(Shared {
            settings: Arc::new(settings),
            outbox,
            queue: Mutex::default(),
            wake: Notify::new(),
            messages,
            permissions: PermissionBroker::default(),
        });
        let shared2 = shared.clone();
        let stopped = CancellationToken::new();
        let guard = stopped.clone().drop_guard();
        tokio::spawn(async move {
            let _guard = guard;
            run_queue(shared2, conv).await;
        });
        Session { shared, stopped }
    }

    /// The validated settings.
    pub fn settings(&self) -> &SessionSettings {
        &self.shared.settings
    }

    /// Queues a send (FIFO). Its events and its one result go to the outbox.
    pub fn send(&self, id: String, message: String) -> Result<(), SendRejected> {
        let settings = &self.shared.settings;
        let mut q = self.shared.queue();
        if q.closing {
            return Err(SendRejected::Closing);
        }
        if q.seen.contains(&id) {
            return Err(SendRejected::DuplicateId);
        }
        if settings.max_queue.is_some_and(|max| q.waiting.len() >= max) {
            return Err(SendRejected::QueueFull);
        }
        q.seen.insert(id.clone());
        q.waiting.push_back(Job { id: id.clone(), message, cancel: CancellationToken::new() });
        drop(q);
        self.shared.wake.notify_one();
        if let Some(limit) = settings.queue_timeout {
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
                    let result = SendResult::error(job.id, error, shared.settings.correlation.clone());
                    let _ = shared.outbox.send(Response::Result(result)).await;
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
                self.answer_cancelled(job).await;
                true
            }
            None => false,
        }
    }

    /// The `status_ok` answer for request `id`, at once.
    pub fn status(&self, id: String) -> StatusOk {
        let q = self.shared.queue();
        StatusOk {
            id,
            model: self.shared.settings.model.clone(),
            messages_count: self.shared.messages.load(Ordering::Relaxed),
            session_id: self.shared.settings.session_id.clone(),
            active: q.active.is_some(),
            queue_length: Some(q.waiting.len() as u64),
        }
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

    async fn answer_cancelled(&self, job: Job) {
        let result = SendResult::error(job.id, ErrorEnvelope::cancelled(), self.shared.settings.correlation.clone());
        let _ = self.shared.outbox.send(Response::Result(result)).await;
    }

    /// Handles the in-session requests every transport shares (`send`,
    /// `status`, `cancel`, `permission_response`) and returns the reply that
    /// goes to the requester alone: `status_ok`, or a `protocol_error` result.
    /// `init` and `shutdown` belong to the transport; given here they get
    /// `protocol_error` too.
    pub async fn handle(&self, request: Request) -> Option<Response> {
        let refuse = |id: String, message: String| {
            let error = ErrorEnvelope::new(ErrorCode::ProtocolError, message);
            Some(Response::Result(SendResult::error(id, error, self.shared.settings.correlation.clone())))
        };
        match request {
            Request::Send(s) => self.send(s.id.clone(), s.message).err().and_then(|e| refuse(s.id, e.to_string())),
            Request::Status(r) => Some(Response::StatusOk(self.status(r.id))),
            Request::Cancel(c) => {
                self.cancel(&c.target_id).await;
                None
            }
            Request::PermissionResponse(p) if !self.shared.settings.permission_responses => {
                refuse(p.id, "permission_response needs config.permission_responses: true in init".to_owned())
            }
            Request::PermissionResponse(p) => {
                self.answer_permission(&p.request_id, p.decision).err().and_then(|e| refuse(p.id, e.to_string()))
            }
            Request::Init(r) => refuse(r.id.clone(), "the session is already initialized".to_owned()),
            Request::Shutdown(r) => refuse(r.id, "shutdown is handled by the transport".to_owned()),
        }
    }

    /// Answers a pending `permission_request` (first answer wins).
    pub fn answer_permission(&self, request_id: &str, decision: Decision) -> Result<(), AnswerError> {
        self.shared.permissions.answer(request_id, decision)
    }

    /// Stops taking sends, lets the queued and running ones finish, and waits
    /// for the runner to end. Cancel-safe; may be called again.
    pub async fn finish(&self) {
        self.shared.queue().closing = true;
        self.shared.wake.notify_one();
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
            self.answer_cancelled(job).await;
        }
        self.finish().await;
    }
}

/// The runner: one send at a time, in order.
async fn run_queue(shared: Arc<Shared>, mut conv: Conversation) {
    loop {
        let job = loop {
            {
                let mut q = shared.queue();
                if let Some(job) = q.waiting.pop_front() {
                    q.active = Some((job.id.clone(), job.cancel.clone()));
                    break Some(job);
                }
                if q.closing {
                    break None;
                }
            }
            shared.wake.notified().await;
        };
        let Some(job) = job else { return };
        run_send(&shared, &mut conv, job).await;
        shared.queue().active = None;
    }
}

/// Runs one send with heartbeats and cancellation, then writes its result.
async fn run_send(shared: &Shared, conv: &mut Conversation, job: Job) {
    let settings = &shared.settings;
    let started = Instant::now();
    let emitter = Emitter {
        send_id: Arc::from(job.id.as_str()),
        correlation: settings.correlation.clone(),
        outbox: shared.outbox.clone(),
    };
    let mut stats = SendStats::default();
    let outcome = {
        let agent =
            agent::run(settings, &shared.permissions, conv, &mut stats, &emitter, &job.message, job.cancel.clone());
        tokio::pin!(agent);
        let mut heartbeat =
            tokio::time::interval_at(tokio::time::Instant::now() + settings.heartbeat, settings.heartbeat);
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
        correlation: settings.correlation.clone(),
    };
    let _ = shared.outbox.send(Response::Result(result)).await;
}
