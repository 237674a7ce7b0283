//! SSE: a session's frames as `id:` / `event:` / `data:` events, with
//! `Last-Event-ID` replay from the hub's ring.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response as HttpResponse};
use futures_util::Stream;
use tokio::sync::broadcast;

use super::api::ApiError;
use super::sends::Withdraw;
use super::{App, KEEPALIVE};
use crate::transport::hub::{Frame, ReplayError};

struct FrameStream {
    replay: VecDeque<Arc<Frame>>,
    live: broadcast::Receiver<Arc<Frame>>,
    only: Option<Arc<str>>,
    done: bool,
    withdraw: Option<Withdraw>,
}

/// SSE frames: the replay, then live frames; only those of `only` (ending
/// with its result) when given. Ends when a subscriber lags too far or the
/// hub closes.
pub fn frame_stream(
    replay: Vec<Arc<Frame>>,
    live: broadcast::Receiver<Arc<Frame>>,
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
/// issued, 412 when evicted).
pub async fn events(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<HttpResponse, ApiError> {
    let s = app.get(&id)?;
    let last = match headers.get("last-event-id") {
        None => None,
        Some(v) => Some(v.to_str().ok().and_then(|v| v.trim().parse::<u64>().ok()).ok_or_else(|| {
            ApiError::new(StatusCode::BAD_REQUEST, "BAD_LAST_EVENT_ID", "Last-Event-ID must be a non-negative integer")
        })?),
    };
    let (replay, live) = s.hub.subscribe(last).map_err(|e| match e {
        ReplayError::Evicted => ApiError::new(StatusCode::PRECONDITION_FAILED, "EVICTED", e.to_string()),
        ReplayError::Future(_) => ApiError::new(StatusCode::BAD_REQUEST, "BAD_LAST_EVENT_ID", e.to_string()),
    })?;
    let frames = frame_stream(replay, live, None, None);
    Ok(Sse::new(frames).keep_alive(KeepAlive::new().interval(KEEPALIVE).text("keepalive")).into_response())
}
