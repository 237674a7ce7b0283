//! Send routes: queue a send (optionally streaming its frames), cancel one,
//! answer a permission request.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::sse::{KeepAlive, Sse};
use axum::response::{IntoResponse, Response as HttpResponse};
use serde::Deserialize;

use super::api::{ApiError, json_body};
use super::events::KEEPALIVE;
use super::events::{Withdraw, frame_stream};
use super::state::App;
use crate::approval::broker::AnswerError;
use crate::session::SendRejected;
use crate::wire::http::ErrorBody;
use crate::wire::http::sessions::{
    CancelAccepted, CancelBody, PermissionAnswer, RewindBody, SendBody, SendQueued, SteerAccepted, SteerBody,
};

#[derive(Deserialize)]
pub struct SendQuery {
    #[serde(default)]
    stream: Option<String>,
}

/// `POST /v1/sessions/{id}/sends`: 202 `{send_id}`, or with `?stream=1`
/// the SSE frames of that send ending with its result.
#[utoipa::path(post, path = "/v1/sessions/{id}/sends", operation_id = "create_send", tag = "sessions",
    summary = "Queue a send (one runs at a time; up to 5 wait; one that waits past the queue timeout ends with a queue_timeout result)",
    params(
        ("id" = String, Path, description = "session_id"),
        ("stream" = Option<String>, Query, description = "`1` or `true`: answer with an SSE stream of this send's frames, ending with its result (see GET …/events for the frame format). A client that disconnects while the send is queued withdraws it.")),
    request_body = SendBody,
    responses(
        (status = 202, description = "queued; its frames and result follow on the session's streams", body = SendQueued),
        (status = 200, description = "with ?stream=1: the send's SSE frames (`id:` frame number, `event:` name, `data:` a response.schema.json line), ending with its result", content_type = "text/event-stream", body = String),
        (status = 400, description = "bad body (INVALID_REQUEST for an output_schema that does not compile)", body = ErrorBody),
        (status = 404, description = "unknown session", body = ErrorBody),
        (status = 409, description = "DUPLICATE_SEND_ID, or SESSION_CLOSING", body = ErrorBody),
        (status = 413, description = "BODY_TOO_LARGE", body = ErrorBody),
        (status = 429, description = "QUEUE_FULL: 5 sends wait already", body = ErrorBody)))]
pub async fn create_send(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Query(q): Query<SendQuery>,
    headers: axum::http::HeaderMap,
    body: Body,
) -> Result<HttpResponse, ApiError> {
    let s = app.get(&id)?;
    let mut body: SendBody = json_body(body).await?;
    if let Some(tp) = headers.get("traceparent").and_then(|v| v.to_str().ok()) {
        body.options.traceparent.get_or_insert_with(|| tp.to_owned());
    }
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
            format!("{} sends are already waiting; try again later", app.max_queue),
        ),
        e @ SendRejected::Closing => ApiError::new(StatusCode::CONFLICT, "SESSION_CLOSING", e.to_string()),
        SendRejected::InvalidRequest(message) => ApiError::new(StatusCode::BAD_REQUEST, "INVALID_REQUEST", message),
    })?;
    match live {
        None => Ok((StatusCode::ACCEPTED, axum::Json(SendQueued { send_id })).into_response()),
        Some((_, rx)) => {
            let guard = Withdraw::new(s.clone(), send_id.clone());
            let frames = frame_stream(Vec::new(), rx, Some(Arc::from(send_id.as_str())), Some(guard));
            Ok(Sse::new(frames).keep_alive(KeepAlive::new().interval(KEEPALIVE).text("keepalive")).into_response())
        }
    }
}

/// `POST /v1/sessions/{id}/cancel {send_id}` → 202; the result follows on the streams.
#[utoipa::path(post, path = "/v1/sessions/{id}/cancel", operation_id = "cancel_send", tag = "sessions",
    summary = "Cancel a send, running or queued; its cancelled result arrives on the streams",
    params(("id" = String, Path, description = "session_id")),
    request_body = CancelBody,
    responses(
        (status = 202, description = "accepted", body = CancelAccepted),
        (status = 400, description = "bad body", body = ErrorBody),
        (status = 404, description = "unknown session", body = ErrorBody)))]
pub async fn cancel(State(app): State<Arc<App>>, Path(id): Path<String>, body: Body) -> Result<HttpResponse, ApiError> {
    let s = app.get(&id)?;
    let body: CancelBody = json_body(body).await?;
    let cancelled = s.session.cancel(&body.send_id).await;
    Ok((StatusCode::ACCEPTED, axum::Json(CancelAccepted { send_id: body.send_id, cancelled })).into_response())
}

/// `POST /v1/sessions/{id}/compact` → 202 `{send_id}`: a manual compaction,
/// queued like a send (429 when the queue is full).
#[utoipa::path(post, path = "/v1/sessions/{id}/compact", operation_id = "compact_session", tag = "sessions",
    summary = "Summarise the session's older conversation now (queued like a send); a context_compact event and a result with the returned id follow on the streams",
    params(("id" = String, Path, description = "session_id")),
    responses(
        (status = 202, description = "queued", body = SendQueued),
        (status = 404, description = "unknown session", body = ErrorBody),
        (status = 409, description = "SESSION_CLOSING", body = ErrorBody),
        (status = 429, description = "QUEUE_FULL", body = ErrorBody)))]
pub async fn compact(State(app): State<Arc<App>>, Path(id): Path<String>) -> Result<HttpResponse, ApiError> {
    let s = app.get(&id)?;
    let send_id = format!("compact-{}", uuid::Uuid::new_v4().simple());
    s.session.compact(send_id.clone()).map_err(|e| match e {
        SendRejected::QueueFull => ApiError::new(StatusCode::TOO_MANY_REQUESTS, "QUEUE_FULL", e.to_string()),
        e => ApiError::new(StatusCode::CONFLICT, "SESSION_CLOSING", e.to_string()),
    })?;
    Ok((StatusCode::ACCEPTED, axum::Json(SendQueued { send_id })).into_response())
}

/// `POST /v1/sessions/{id}/rewind {send_id}` → 202: queued like a send;
/// its `result` (id in the answer) lists the files put back.
#[utoipa::path(post, path = "/v1/sessions/{id}/rewind", operation_id = "rewind", tag = "sessions",
    summary = "Put the workspace's files back to before a send (queued; answered by a result event)",
    params(("id" = String, Path, description = "session_id")),
    request_body = RewindBody,
    responses(
        (status = 202, description = "queued; the result event with this send_id says what was put back", body = SendQueued),
        (status = 400, description = "bad body", body = ErrorBody),
        (status = 404, description = "unknown session", body = ErrorBody),
        (status = 409, description = "SESSION_CLOSING", body = ErrorBody),
        (status = 429, description = "QUEUE_FULL", body = ErrorBody)))]
pub async fn rewind(State(app): State<Arc<App>>, Path(id): Path<String>, body: Body) -> Result<HttpResponse, ApiError> {
    let s = app.get(&id)?;
    let body: RewindBody = json_body(body).await?;
    let send_id = format!("rewind-{}", uuid::Uuid::new_v4().simple());
    s.session.rewind(send_id.clone(), body.send_id, body.dry_run.unwrap_or(false)).map_err(|e| match e {
        SendRejected::QueueFull => ApiError::new(StatusCode::TOO_MANY_REQUESTS, "QUEUE_FULL", e.to_string()),
        e => ApiError::new(StatusCode::CONFLICT, "SESSION_CLOSING", e.to_string()),
    })?;
    Ok((StatusCode::ACCEPTED, axum::Json(SendQueued { send_id })).into_response())
}

/// `POST /v1/sessions/{id}/steer {message, send_id?}` → 202: the text
/// joins the running send at its next model call, else it is queued as a
/// send of its own (`taken: false`, its id in `send_id`).
#[utoipa::path(post, path = "/v1/sessions/{id}/steer", operation_id = "steer", tag = "sessions",
    summary = "Add text to the running send (at its next model call), else queue it as a send",
    params(("id" = String, Path, description = "session_id")),
    request_body = SteerBody,
    responses(
        (status = 202, description = "taken by the running send, or queued as a send", body = SteerAccepted),
        (status = 400, description = "bad body", body = ErrorBody),
        (status = 404, description = "unknown session", body = ErrorBody),
        (status = 409, description = "SESSION_CLOSING", body = ErrorBody),
        (status = 429, description = "QUEUE_FULL", body = ErrorBody)))]
pub async fn steer(State(app): State<Arc<App>>, Path(id): Path<String>, body: Body) -> Result<HttpResponse, ApiError> {
    let s = app.get(&id)?;
    let body: SteerBody = json_body(body).await?;
    if s.session.config().version < crate::wire::ProtocolVersion::V0_3 {
        return Err(ApiError::new(StatusCode::BAD_REQUEST, "NEEDS_0_3", "steer needs protocol_version 0.3.0"));
    }
    let steer_id = format!("steer-{}", uuid::Uuid::new_v4().simple());
    let taken = s.session.steer(steer_id.clone(), body.message, body.send_id.as_deref()).map_err(|e| match e {
        SendRejected::QueueFull => ApiError::new(StatusCode::TOO_MANY_REQUESTS, "QUEUE_FULL", e.to_string()),
        e => ApiError::new(StatusCode::CONFLICT, "SESSION_CLOSING", e.to_string()),
    })?;
    let answer = match taken {
        Some(send_id) => SteerAccepted { send_id, taken: true },
        None => SteerAccepted { send_id: steer_id, taken: false },
    };
    Ok((StatusCode::ACCEPTED, axum::Json(answer)).into_response())
}

/// `POST /v1/sessions/{id}/permissions/{request_id} {decision}` → 204; the
/// first answer wins (409 after it), unknown ids 404.
#[utoipa::path(post, path = "/v1/sessions/{id}/permissions/{request_id}", operation_id = "answer_permission", tag = "sessions",
    summary = "Answer a permission_request event; the first answer wins",
    params(
        ("id" = String, Path, description = "session_id"),
        ("request_id" = String, Path, description = "the permission_request event's request_id")),
    request_body = PermissionAnswer,
    responses(
        (status = 204, description = "taken"),
        (status = 400, description = "bad body", body = ErrorBody),
        (status = 404, description = "unknown session or request", body = ErrorBody),
        (status = 409, description = "ALREADY_ANSWERED", body = ErrorBody)))]
pub async fn permission(
    State(app): State<Arc<App>>,
    Path((id, request_id)): Path<(String, String)>,
    body: Body,
) -> Result<StatusCode, ApiError> {
    let s = app.get(&id)?;
    let body: PermissionAnswer = json_body(body).await?;
    match s.session.answer_permission(&request_id, body.decision) {
        Ok(()) => Ok(StatusCode::NO_CONTENT),
        Err(e @ AnswerError::AlreadyAnswered) => {
            Err(ApiError::new(StatusCode::CONFLICT, "ALREADY_ANSWERED", e.to_string()))
        }
        Err(AnswerError::Unknown) => Err(ApiError::not_found(format!("no permission request {request_id:?}"))),
    }
}
