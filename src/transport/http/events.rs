//! SSE: a session's frames as `id:` / `event:` / `data:` events, with
//! `Last-Event-ID` replay from the hub's ring, else from the session log
//! ([`super::history`]); and the guard that withdraws a `?stream=1`
//! send still queued when its client leaves ([`Withdraw`]). Every SSE
//! route of the daemon, the facades' included, keeps alive every
//! [`KEEPALIVE`].

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response as HttpResponse};
use futures_util::Stream;
use tokio::sync::broadcast;

use super::api::ApiError;
use super::history::follow;
use super::sessions::store_error;
use super::state::{App, HttpSession};
use crate::store::StoreError;
use crate::store::fold::lines_after;
use crate::transport::hub::{Frame, LiveFrames, ReplayError};
use crate::wire::http::ErrorBody;

/// SSE keepalive comment interval.
pub const KEEPALIVE: Duration = Duration::from_secs(15);

/// Withdraws a still-queued send when its `?stream=1` client goes away.
pub struct Withdraw {
    session: Arc<HttpSession>,
    send_id: Option<String>,
}

impl Withdraw {
    /// Withdraws `send_id` of `session` when dropped before [`Withdraw::disarm`].
    pub fn new(session: Arc<HttpSession>, send_id: String) -> Self {
        Withdraw { session, send_id: Some(send_id) }
    }

    /// The send has its result: nothing to withdraw any more.
    pub fn disarm(&mut self) {
        self.send_id = None;
    }
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        if let Some(id) = self.send_id.take() {
            let s = self.session.clone();
            tokio::spawn(async move {
                s.session.cancel_if_queued(&id).await;
            });
        }
    }
}

struct FrameStream {
    replay: VecDeque<Arc<Frame>>,
    live: LiveFrames,
    only: Option<Arc<str>>,
    done: bool,
    withdraw: Option<Withdraw>,
}

/// SSE frames: the replay, then live frames; only those of `only` (ending
/// with its result) when given. Ends when a subscriber lags too far or the
/// hub closes.
pub fn frame_stream(
    replay: Vec<Arc<Frame>>,
    live: LiveFrames,
    only: Option<Arc<str>>,
    withdraw: Option<Withdraw>,
) -> impl Stream<Item = Result<SseEvent, Infallible>> {
    let state = FrameStream { replay: replay.into(), live, only, done: false, withdraw };
    futures_util::stream::unfold(state, |mut st| async move {
        if st.done {
            return None;
        }
        loop {
            let frame = match st.replay.pop_front() {
                Some(f) => f,
                None => match st.live.recv().await {
                    Ok(f) => f,
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        tracing::debug!(missed = n, "SSE subscriber too slow; disconnected");
                        return None;
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                },
            };
            if let Some(only) = &st.only {
                if frame.send_id.as_deref() != Some(&**only) {
                    continue;
                }
                if frame.is_result {
                    st.done = true;
                    if let Some(w) = st.withdraw.as_mut() {
                        w.disarm();
                    }
                }
            }
            let ev = SseEvent::default().id(frame.id.to_string()).event(frame.event).data(frame.data.as_str());
            return Some((Ok(ev), st));
        }
    })
}

/// `GET /v1/sessions/{id}/events`: every frame of the session; with
/// `Last-Event-ID`, first what followed it (400 when malformed or never
/// issued). The hub's ring serves a live session; the session log serves a
/// session not live on this host and a replay the ring has evicted (412
/// only when neither has it).
#[utoipa::path(get, path = "/v1/sessions/{id}/events", operation_id = "session_events", tag = "sessions",
    summary = "Everything the session emits, for any number of independent subscribers; a stored session not live here is followed through its log (new frames as any host stores them)",
    params(
        ("id" = String, Path, description = "session_id"),
        ("Last-Event-ID" = Option<String>, Header, description = "replay the frames after this id: from the ring buffer (4,096 frames), else from the session log")),
    responses(
        (status = 200, description = "SSE frames: `id:` the session-wide frame number, `event:` the event name (content_delta, tool_start, …, result), `data:` the JSON line the stdio worker would write (protocol/response.schema.json); a `:keepalive` comment every 15 s", content_type = "text/event-stream", body = String),
        (status = 400, description = "BAD_LAST_EVENT_ID: malformed or never issued", body = ErrorBody),
        (status = 404, description = "neither live on this server nor stored", body = ErrorBody),
        (status = 412, description = "EVICTED: the frames after Last-Event-ID are neither in the ring buffer nor in the session log", body = ErrorBody)))]
pub async fn events(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<HttpResponse, ApiError> {
    let last = match headers.get("last-event-id") {
        None => None,
        Some(v) => Some(v.to_str().ok().and_then(|v| v.trim().parse::<u64>().ok()).ok_or_else(|| {
            ApiError::new(StatusCode::BAD_REQUEST, "BAD_LAST_EVENT_ID", "Last-Event-ID must be a non-negative integer")
        })?),
    };
    let keep_alive = || KeepAlive::new().interval(KEEPALIVE).text("keepalive");
    let live = app.get(&id).ok();
    if let Some(s) = &live {
        match s.hub.subscribe(last) {
            Ok((replay, live)) => {
                let frames = frame_stream(replay, live, None, None);
                return Ok(Sse::new(frames).keep_alive(keep_alive()).into_response());
            }
            Err(e @ ReplayError::Future(_)) => {
                return Err(ApiError::new(StatusCode::BAD_REQUEST, "BAD_LAST_EVENT_ID", e.to_string()));
            }
            Err(ReplayError::Evicted) => {}
        }
    }
    let evicted = || ApiError::new(StatusCode::PRECONDITION_FAILED, "EVICTED", ReplayError::Evicted.to_string());
    let Some(store) = app.env.store.clone() else {
        return Err(if live.is_some() { evicted() } else { ApiError::not_found(format!("no session {id:?}")) });
    };
    let entries = match store.load(&id, 0).await {
        Ok(e) => e,
        Err(StoreError::NotFound(_)) if live.is_some() => return Err(evicted()),
        Err(e) => return Err(store_error(e)),
    };
    let frames: Vec<u64> = lines_after(&entries, 0).iter().map(|(f, _, _)| *f).collect();
    let newest = frames.last().copied().unwrap_or(0);
    let after = match last {
        Some(n) if n > newest && live.is_none() => {
            let e = ReplayError::Future(n);
            return Err(ApiError::new(StatusCode::BAD_REQUEST, "BAD_LAST_EVENT_ID", e.to_string()));
        }
        Some(n) => n,
        None => newest,
    };
    if frames.first().is_some_and(|&f| f > after + 1) {
        return Err(evicted());
    }
    let frames = follow(store, &id, after, app.shutdown.clone()).await;
    Ok(Sse::new(frames).keep_alive(keep_alive()).into_response())
}
