//! A session's `rewind` job: its files put back to before a send, from the
//! checkpoints in the session's own log.
//!
//! Owns: running a queued rewind (after the sends before it, never beside
//! one: the queue runs one job at a time) and its one `result`: `ok` with
//! `rewound` and `files_changed` naming each file put back, or
//! `rewind_refused` with nothing changed. The rules of what is put back
//! are [`crate::checkpoint::rewind`]'s; here the log is read (once every
//! entry so far is stored) and the `rewind` entry written.

use super::api::Session;
use super::queue::{Job, JobKind, SendRejected};
use super::shared::Shared;
use crate::agent::SendSpec;
use crate::checkpoint::rewind::{RewindError, apply, plan};
use crate::store::Body;
use crate::wire::{ErrorCode, ErrorEnvelope, RewoundFile, SendResult, Status, StopReason, WorktreeState};

/// Runs rewind `job` (its `message` is the send to rewind to).
pub(super) async fn run(shared: &Shared, job: Job) -> SendResult {
    let correlation = shared.config.correlation.clone();
    let refused = |code: ErrorCode, message: String, details: Option<serde_json::Value>| {
        let mut error = ErrorEnvelope::new(code, message);
        error.details = details;
        let mut r = SendResult::error(job.id.clone(), error, correlation.clone());
        r.stop_reason = Some(StopReason::Error);
        r.files_changed = Some(Vec::new());
        r
    };
    let Some(journal) = &shared.journal else {
        return refused(ErrorCode::RewindRefused, "this session is not logged, so it kept no checkpoints".into(), None);
    };
    let _ = journal.durable().await;
    let entries = match journal.store().load(&shared.config.session_id, 0).await {
        Ok(e) => e,
        Err(e) => return refused(ErrorCode::RewindRefused, format!("the session's log cannot be read: {e}"), None),
    };
    let workspace = shared.config.workspace.clone();
    // The checkpoints belong to the tree the log's session worked in: a
    // session resumed elsewhere (another cwd, another host) has none here.
    let logged = crate::store::fold::fold(&entries).workspace;
    if !logged.is_empty() && std::path::Path::new(&logged) != workspace {
        let why = format!("the checkpoints were taken in {logged}, not in {}", workspace.display());
        return refused(ErrorCode::RewindRefused, why, Some(serde_json::json!({ "failed": "workspace" })));
    }
    let to = job.message.clone();
    let dry_run = job.kind == JobKind::RewindPreview;
    let done = tokio::task::spawn_blocking(move || {
        plan(&entries, &to).and_then(|p| apply(&p, &workspace, dry_run).map(|r| (p, r)))
    })
    .await
    .unwrap_or_else(|e| Err(RewindError::Io(format!("the rewind failed internally: {e}"))));
    let (plan, restored) = match done {
        Ok(d) => d,
        Err(e) => {
            let details = match &e {
                RewindError::Unkept(p) => Some(serde_json::json!({ "unkept": p })),
                RewindError::ChangedSince(p) => Some(serde_json::json!({ "changed_since": p })),
                RewindError::Io(m) => Some(serde_json::json!({ "failed": m })),
                RewindError::NoSuchSend(_) => None,
            };
            return refused(ErrorCode::RewindRefused, e.to_string(), details);
        }
    };
    let summary: Vec<String> = restored.iter().map(|r| format!("{} {}", r.action, r.path)).collect();
    let mut result = SendResult::error(job.id, ErrorEnvelope::cancelled(), correlation);
    result.status = Status::Ok;
    result.error = None;
    result.stop_reason = Some(StopReason::EndTurn);
    if dry_run {
        result.response =
            Some(format!("A rewind to before send {:?} would put back: {}.", job.message, summary.join(", ")));
        result.files_changed = Some(Vec::new());
    } else {
        let restored_paths = restored.iter().map(|r| r.path.clone()).collect();
        journal.record(Body::Rewind { to_seq: plan.to_seq, restored: restored_paths });
        let _ = journal.durable().await;
        result.response = Some(format!("Rewound to before send {:?}: {}.", job.message, summary.join(", ")));
        result.files_changed = Some(restored.iter().map(|r| r.path.clone()).collect());
    }
    result.rewound = Some(restored.into_iter().map(|r| RewoundFile { path: r.path, action: r.action }).collect());
    result.worktree = worktree_state(&shared.config).await;
    result
}

impl Session {
    /// Queues a rewind (0.3.0 `rewind`, `POST …/rewind`): it runs in turn
    /// like a send, puts the workspace's files back to how they were before
    /// send `to_send`, and is answered by one `result` with id `id`
    /// (`rewound` lists the files; `rewind_refused` when nothing could be).
    /// `dry_run`: the same checks and list, nothing written.
    pub fn rewind(&self, id: String, to_send: String, dry_run: bool) -> Result<(), SendRejected> {
        let kind = if dry_run { JobKind::RewindPreview } else { JobKind::Rewind };
        self.enqueue(id, to_send, kind, SendSpec::default())
    }
}

/// The session's worktree as a result reports it (`None` without one, or
/// when git cannot say).
pub(super) async fn worktree_state(config: &crate::config::SessionConfig) -> Option<WorktreeState> {
    let (wt, _) = config.worktree.clone()?;
    tokio::task::spawn_blocking(move || {
        let report =
            wt.report().map_err(|e| tracing::warn!("the session's worktree cannot be read: {e}")).unwrap_or_default();
        WorktreeState {
            name: wt.name,
            path: wt.path.display().to_string(),
            branch: wt.branch,
            base: wt.base,
            changed: report.changed,
            diff_stat: report.diff_stat,
        }
    })
    .await
    .ok()
}
