//! A session's log at open: a new log for a new session, or a stored one
//! loaded and continued (`config.resume_session_id`).
//!
//! Owns: the rules of resume. The conversation is the stored one (its
//! system prompt included, logged when the session starts, so the new
//! `init`'s prompt does not replace it; a log without one gets the new
//! `init`'s); a send that was running when the old process died is answered to
//! the model ("no result") where it stopped, and the model is told in a note
//! before the next send. A new session whose log cannot be created runs
//! without one (a warning is logged): persistence never stops a worker.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use super::fork::{CUT_RESULT, ForkMeta, cut, fork_stored};
use super::open_error::{OpenError, ResumeError};
use crate::config::SessionConfig;
use crate::conversation::Conversation;
use crate::environment::Environment;
use crate::store::fold::fold;
use crate::store::{Body, Journal};
use crate::wire::InitConfig;
use crate::wire::ProtocolVersion::V0_3;

/// What [`open_log`] set up.
pub(super) struct Opened {
    pub conv: Conversation,
    pub journal: Option<Journal>,
    /// Ids of the sends the previous process never answered.
    pub interrupted: Vec<String>,
}

fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_owned()).unwrap_or_default()
}

/// Opens the log for `config` (and switches `config` to the resumed
/// session's id). `count` is the session's message counter.
///
/// Errors (resume only): persistence is off, the session is not stored,
/// or another process holds it.
pub(super) async fn open_log(
    config: &mut SessionConfig,
    init: &InitConfig,
    env: &Environment,
    count: Arc<AtomicU64>,
) -> Result<Opened, OpenError> {
    let store = env.store.clone().filter(|_| init.persist != Some(false));
    let Some(id) = init.resume_session_id.clone() else {
        let mut conv = Conversation::new(&config.system_prompt, count);
        let Some(store) = store else { return Ok(Opened { conv, journal: None, interrupted: Vec::new() }) };
        let journal = match store.claim(&config.session_id).await {
            Ok(epoch) => Journal::start(store, &config.session_id, epoch, 0).reporting(config.version >= V0_3),
            Err(e) => {
                tracing::warn!(session_id = %config.session_id, "the session will not be logged: {e}");
                return Ok(Opened { conv, journal: None, interrupted: Vec::new() });
            }
        };
        let mut stored = init.clone();
        stored.persist = None;
        journal.record(Body::Meta {
            session_id: config.session_id.clone(),
            protocol_version: config.version.as_str().to_owned(),
            model: config.model.clone(),
            workspace: config.workspace.display().to_string(),
            config: serde_json::to_value(&stored).unwrap_or_default(),
            forked_from: None,
        });
        conv.start_log(journal.clone());
        return Ok(Opened { conv, journal: Some(journal), interrupted: Vec::new() });
    };
    let Some(store) = store else { return Err(resume_error(&id)(ResumeError::PersistenceOff)) };
    // A fork is a new log holding a copy (see `fork`), then resumed as any
    // stored session: the session it copies is only read.
    let (id, at) = if init.fork_session == Some(true) {
        let mut stored = init.clone();
        (stored.persist, stored.resume_session_id, stored.fork_session, stored.resume_at_message) =
            (None, None, None, None);
        let meta = ForkMeta {
            protocol_version: config.version.as_str().to_owned(),
            model: config.model.clone(),
            workspace: config.workspace.display().to_string(),
            config: serde_json::to_value(&stored).unwrap_or_default(),
        };
        let new_id = config.session_id.clone();
        fork_stored(&store, &id, init.resume_at_message, &new_id, Some(meta))
            .await
            .map_err(|e| resume_error(&id)(e.into()))?;
        (new_id, None)
    } else {
        (id, init.resume_at_message)
    };
    let entries = store.load(&id, 0).await.map_err(|e| resume_error(&id)(e.into()))?;
    let mut folded = fold(&entries);
    if folded.config.is_null() {
        return Err(resume_error(&id)(ResumeError::NoMeta));
    }
    let held = folded.messages.len();
    folded.messages = cut(std::mem::take(&mut folded.messages), at).map_err(|e| resume_error(&id)(e.into()))?;
    let was_cut = folded.messages.len() < held;
    if was_cut {
        // What was cut away is no longer the conversation; a send open in
        // it is not the model's to hear about.
        folded.interrupted.clear();
    }
    let epoch = store.claim(&id).await.map_err(|e| resume_error(&id)(e.into()))?;
    config.session_id = id.clone();
    config.correlation.session_id = Some(Arc::from(id.as_str()));
    let journal = Journal::start(store, &id, epoch, folded.last_frame).reporting(config.version >= V0_3);
    journal.record(Body::Resume { pid: std::process::id(), host: host() });
    if folded.unreadable > 0 {
        tracing::warn!(session_id = %id, skipped = folded.unreadable, "stored messages this build cannot read");
    }
    let mut conv = Conversation::restore(folded.messages, count);
    // What the model had seen is known at the log's end only: a resume cut
    // back to an earlier message starts with no views.
    if !was_cut {
        conv.restore_seen(&folded.seen, &config.workspace);
    }
    if was_cut {
        conv.start_log(journal.clone());
        conv.repair(CUT_RESULT);
    } else {
        conv.log_to(journal.clone());
    }
    // A log written without its system prompt (before pirn logged it at
    // once) gets the resuming init's.
    conv.ensure_system(&config.system_prompt);
    let interrupted: Vec<String> = folded.interrupted.iter().map(|(id, _)| id.clone()).collect();
    if let Some((_, message)) = folded.interrupted.last() {
        conv.repair("no result: the worker stopped before this tool call's result was stored (it may have run, in part or whole; check its effects)");
        let mut request: String = message.chars().take(200).collect();
        if message.chars().nth(200).is_some() {
            request.push('…');
        }
        conv.push_note(&format!(
            "The previous request was interrupted: the worker stopped before finishing it (request: {request:?}). \
             Files may be partly changed; check before relying on them."
        ));
    }
    Ok(Opened { conv, journal: Some(journal), interrupted })
}

fn resume_error(id: &str) -> impl FnOnce(ResumeError) -> OpenError + '_ {
    move |reason| OpenError::Resume { id: id.to_owned(), reason }
}
