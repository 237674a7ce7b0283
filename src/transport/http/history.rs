//! A session's past, served from its log: `GET …/messages?since=N` (the
//! ACECode daemon's contract) and SSE replay when the hub cannot serve it
//! (the session is not live on this host, or `Last-Event-ID` fell out of
//! the ring buffer).
//!
//! Owns: following a log: the stored frames after an id, then each new one
//! as the store announces it (in-process for the file store; LISTEN/NOTIFY
//! from any host for Postgres), until the server stops.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::response::sse::Event as SseEvent;
use futures_util::Stream;
use serde::Deserialize;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::api::ApiError;
use super::sessions::store_error;
use super::state::App;
use crate::store::fold::{fold, lines_after};
use crate::store::{Appended, Store, Stored};
use crate::wire::http::ErrorBody;
use crate::wire::http::sessions::{History, HistoryEvent};

#[derive(Deserialize)]
pub struct Since {
    #[serde(default)]
    since: u64,
}

/// `GET /v1/sessions/{id}/messages?since=N`: with `since=0` (the default)
/// `{messages, events}`, the conversation in OpenAI chat format and every
/// emitted line; with `since=N` `{events}` after frame N only. Each event
/// is `{seq, event, data}` (`seq`: the SSE id; `data`: the line's object).
/// 404 when the session is not stored (or persistence is off).
#[utoipa::path(get, path = "/v1/sessions/{id}/messages", operation_id = "session_messages", tag = "sessions",
    summary = "A stored session's history (the ACECode daemon's messages?since=N contract)",
    params(
        ("id" = String, Path, description = "session_id"),
        ("since" = Option<u64>, Query, description = "0 (default): the conversation and every event; N: only the events after frame N")),
    responses(
        (status = 200, description = "since=0: {messages, events}; since=N: {events}", body = History),
        (status = 404, description = "not stored, or persistence is off", body = ErrorBody),
        (status = 503, description = "STORE_UNAVAILABLE", body = ErrorBody)))]
pub async fn messages(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Query(q): Query<Since>,
) -> Result<axum::Json<History>, ApiError> {
    let store = app.env.store.as_ref().ok_or_else(|| ApiError::not_found("persistence is off in this server"))?;
    let entries = store.load(&id, 0).await.map_err(store_error)?;
    let events: Vec<HistoryEvent> = lines_after(&entries, q.since)
        .into_iter()
        .map(|(seq, data, event)| HistoryEvent { seq, event: event.to_owned(), data: data.clone() })
        .collect();
    // The conversation in chat-completions format (async-openai's types).
    let chat = |m| serde_json::to_value(m).unwrap_or(serde_json::Value::Null);
    let messages = (q.since == 0).then(|| fold(&entries).messages.into_iter().map(chat).collect());
    Ok(axum::Json(History { messages, events }))
}

struct HistoryFollow {
    store: Store,
    id: Arc<str>,
    watch: broadcast::Receiver<Appended>,
    pending: VecDeque<(u64, String, String)>,
    last_seq: u64,
    after: u64,
    stop: CancellationToken,
}

/// The frames of `id` after `after` from the log, then new ones as they are
/// stored, as SSE events; ends when `stop` is cancelled.
pub async fn follow(
    store: Store,
    id: &str,
    after: u64,
    stop: CancellationToken,
) -> impl Stream<Item = Result<SseEvent, Infallible>> + use<> {
    // Subscribe first: nothing stored after the load is missed.
    let watch = store.watch().await;
    let state = HistoryFollow { store, id: Arc::from(id), watch, pending: VecDeque::new(), last_seq: 0, after, stop };
    futures_util::stream::unfold(state, |mut st| async move {
        loop {
            if let Some((frame, event, data)) = st.pending.pop_front() {
                let ev = SseEvent::default().id(frame.to_string()).event(event).data(data);
                return Some((Ok(ev), st));
            }
            match st.store.load(&st.id, st.last_seq).await {
                Ok(entries) => st.take(&entries),
                Err(e) => {
                    tracing::warn!(session_id = %st.id, "following the session log: {e}");
                    return None;
                }
            }
            if !st.pending.is_empty() {
                continue;
            }
            loop {
                tokio::select! {
                    _ = st.stop.cancelled() => return None,
                    got = st.watch.recv() => match got {
                        Ok((sid, seq)) if *sid == *st.id && seq > st.last_seq => break,
                        Ok((sid, _)) if *sid == *crate::store::postgres::RESYNC => break,
                        Ok(_) => {}
                        Err(broadcast::error::RecvError::Lagged(_)) => break,
                        Err(broadcast::error::RecvError::Closed) => return None,
                    },
                }
            }
        }
    })
}

impl HistoryFollow {
    fn take(&mut self, entries: &[Stored]) {
        for e in entries {
            self.last_seq = self.last_seq.max(e.seq);
            for (frame, _, event, data) in e.lines() {
                if frame > self.after {
                    self.after = frame;
                    self.pending.push_back((frame, event.to_owned(), data.to_string()));
                }
            }
        }
    }
}
