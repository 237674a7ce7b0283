//! Send routes: queue a send (optionally streaming its frames), cancel one,
//! answer a permission request.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::sse::{KeepAlive, Sse};
use axum::response::{IntoResponse, Response as HttpResponse};
use serde::Deserialize;
use serde_json::json;

use super::api::{ApiError, json_body};
use super::events::frame_stream;
use super::{App, HttpSession, KEEPALIVE, MAX_QUEUE};
use crate::approval::AnswerError;
use crate::session::SendRejected;
use crate::wire::{Decision, SendOptions};

#[derive(Deserialize)]
struct SendBody {
    message: String,
    #[serde(default)]
    send_id: Option<String>,
    /// `output_schema`, budgets, `verify_command` (as on a 0.3.0 `send`).
    #[serde(flatten)]
    options: SendOptions,
}

#[derive(Deserialize)]
pub struct SendQuery {
    #[serde(default)]
    stream: Option<String>,
}

/// `POST /v1/sessions/{id}/sends`: 202 `{send_id}`, or with `?stream=1`
/// the SSE frames of that send ending with its result.
pub async fn create_send(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Query(q): Query<SendQuery>,
    body: Body,
) -> Result<HttpResponse, ApiError> {
    let s = app.get(&id)?;
    let body: SendBody = json_body(body).await?;
    let send_id = body.send_id.filter(|i| !i.is_empty()).unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let stream = q.stream.as_deref().is_some_and(|v| v == "1" || v == "true");
    // Subscribe before queueing so the stream misses nothing.
    let live = if stream { s.hub.subscribe(None).ok() } else { None };
    s.session.send_with(send_id.clone(), body.message, &body.options).map_err(|e| match e {
        SendRejected::DuplicateId => ApiError::new(
            StatusCode::CONFLICT,
            "DUPLICATE_SEND_ID",
            format!("send {send_id:?} already exists in this session"),
        ),
        SendRejected::QueueFull => ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "QUEUE_FULL",
            format!("{MAX_QUEUE} sends are already waiting; try again later"),
        ),
        e @ SendRejected::Closing => ApiError::new(StatusCode::CONFLICT, "SESSION_CLOSING", e.to_string()),
        SendRejected::InvalidRequest(message) => ApiError::new(StatusCode::BAD_REQUEST, "INVALID_REQUEST", message),
    })?;
    match live {
        None => Ok((StatusCode::ACCEPTED, axum::Json(json!({"send_id": send_id}))).into_response()),
        Some((_, rx)) => {
            let guard = Withdraw { session: s.clone(), send_id: Some(send_id.clone()) };
            let frames = frame_stream(Vec::new(), rx, Some(Arc::from(send_id.as_str())), Some(guard));
            Ok(Sse::new(frames).keep_alive(KeepAlive::new().interval(KEEPALIVE).text("keepalive")).into_response())
        }
    }
}

/// Withdraws a still-queued send when its `?stream=1` client goes away.
pub struct Withdraw {
    session: Arc<HttpSession>,
    send_id: Option<String>,
}

impl Withdraw {
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

#[derive(Deserialize)]
struct CancelBody {
    send_id: String,
}

/// `POST /v1/sessions/{id}/cancel {send_id}` → 202; the result follows on the streams.
pub async fn cancel(State(app): State<Arc<App>>, Path(id): Path<String>, body: Body) -> Result<HttpResponse, ApiError> {
    let s = app.get(&id)?;
    let body: CancelBody = json_body(body).await?;
    let cancelled = s.session.cancel(&body.send_id).await;
    Ok((StatusCode::ACCEPTED, axum::Json(json!({"send_id": body.send_id, "cancelled": cancelled}))).into_response())
}

/// `POST /v1/sessions/{id}/compact` → 202 `{send_id}`: a manual compaction,
/// queued like a send (429 when the queue is full).
pub async fn compact(State(app): State<Arc<App>>, Path(id): Path<String>) -> Result<HttpResponse, ApiError> {
    let s = app.get(&id)?;
    let send_id = format!("compact-{}", uuid::Uuid::new_v4().simple());
    s.session.compact(send_id.clone()).map_err(|e| match e {
        SendRejected::QueueFull => ApiError::new(StatusCode::TOO_MANY_REQUESTS, "QUEUE_FULL", e.to_string()),
        e => ApiError::new(StatusCode::CONFLICT, "SESSION_CLOSING", e.to_string()),
    })?;
    Ok((StatusCode::ACCEPTED, axum::Json(json!({"send_id": send_id}))).into_response())
}

#[derive(Deserialize)]
struct PermissionBody {
    decision: Decision,
}

/// `POST /v1/sessions/{id}/permissions/{request_id} {decision}` → 204; the
/// first answer wins (409 after it), unknown ids 404.
pub async fn permission(
    State(app): State<Arc<App>>,
    Path((id, request_id)): Path<(String, String)>,
    body: Body,
) -> Result<StatusCode, ApiError> {
    let s = app.get(&id)?;
    let body: PermissionBody = json_body(body).await?;
    match s.session.answer_permission(&request_id, body.decision) {
        Ok(()) => Ok(StatusCode::NO_CONTENT),
        Err(e @ AnswerError::AlreadyAnswered) => {
            Err(ApiError::new(StatusCode::CONFLICT, "ALREADY_ANSWERED", e.to_string()))
        }
        Err(AnswerError::Unknown) => Err(ApiError::not_found(format!("no permission request {request_id:?}"))),
    }
}
