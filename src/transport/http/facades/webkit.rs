//! agent-webkit's wire protocol 1.0 (`../shared/reference/agent-webkit-wire-protocol.md`),
//! served as it is under `/agent-webkit`, so front-ends built on its client
//! drive pirn unchanged (base URL `http://HOST:PORT/agent-webkit`).
//!
//! Owns: the translation both ways. Sessions are the daemon's own (opened
//! with [`crate::transport::http::sessions::open_session`], their frames from the same
//! [`Hub`](crate::transport::hub::Hub)), so a session started here is also
//! visible at `/v1/sessions`.
//!
//! Event ids: a pirn frame `f` becomes at most three agent-webkit events
//! with ids `4f`, `4f+1`, `4f+2` (a result is `message_complete` or `error`,
//! then `result`); `session_ready` is id 0 and `done` follows the last
//! frame. So ids are numeric and monotonic, and `Last-Event-ID: n` resumes
//! after event `n` from the hub's ring (412 once evicted, 400 when not a
//! non-negative integer).
//!
//! Mapping (pirn → agent-webkit): `content_delta` → `message_delta`
//! (`delta: {type: "text", text}`); `tool_start` → `tool_use`;
//! `tool_end` → `tool_result` (`output` is pirn's result preview);
//! `permission_request` → `permission_request` (`correlation_id` is pirn's
//! `request_id`); a `result` → `message_complete` (or `error`) and `result`
//! (`subtype` `success`, `error_max_turns` or `error_during_execution`).
//! `message_id` is the send's id (one assistant message per send). Other
//! pirn events (heartbeats, usage, compaction) are not forwarded.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response as HttpResponse};
use serde_json::Value;
use tokio::sync::broadcast;

use crate::approval::broker::AnswerError;
use crate::session::SendRejected;
use crate::transport::http::api::{ApiError, json_body};
use crate::transport::http::events::KEEPALIVE;
use crate::transport::http::sessions;
use crate::transport::http::state::{App, HttpSession};
use crate::transport::hub::{Frame, LiveFrames, ReplayError};
use crate::wire::http::ErrorBody;
use crate::wire::http::sessions::SessionCreated;
use crate::wire::http::to_json;
use crate::wire::http::webkit::{
    AssistantMessage, CreateWebkitSession, Input, MessageComplete, MessageDelta, PermissionContext, PermissionRequest,
    SessionReady, TextBlock, ToolResult, ToolUse, WebkitDone, WebkitError, WebkitResult,
};
use crate::wire::{ApprovalMode, Decision, InitConfig, OutgoingMessage, Status};

/// The protocol version this module speaks.
pub const PROTOCOL_VERSION: &str = "1.0";

/// agent-webkit's (the Claude Agent SDK's) permission modes, or pirn's.
fn approval_mode(mode: &str) -> Option<ApprovalMode> {
    match mode {
        "default" => Some(ApprovalMode::Suggest),
        "acceptEdits" => Some(ApprovalMode::AutoEdit),
        "bypassPermissions" => Some(ApprovalMode::FullAuto),
        other => ApprovalMode::parse(other),
    }
}

/// `POST /agent-webkit/sessions` → `{session_id, protocol_version: "1.0"}`.
#[utoipa::path(post, path = "/agent-webkit/sessions", operation_id = "webkit_create_session", tag = "agent-webkit",
    summary = "agent-webkit 1.0: create a session (a pirn session, also visible at /v1/sessions)",
    request_body = CreateWebkitSession,
    responses(
        (status = 200, description = "created (protocol_version is agent-webkit's 1.0)", body = SessionCreated),
        (status = 400, description = "bad permission_mode or config", body = ErrorBody),
        (status = 503, description = "TOO_MANY_SESSIONS", body = ErrorBody)))]
pub async fn create(State(app): State<Arc<App>>, body: Body) -> Result<Json<SessionCreated>, ApiError> {
    let body: CreateWebkitSession = json_body(body).await?;
    let mode = match body.permission_mode.as_deref() {
        None => None,
        Some(m) => {
            Some(approval_mode(m).ok_or_else(|| ApiError::bad_request(format!("unknown permission_mode {m:?}")))?)
        }
    };
    let all = || crate::tools::ALL_TOOLS.iter().map(|t| (*t).to_owned()).collect();
    let config = InitConfig {
        model: crate::environment::model_or_default(body.model),
        system_prompt: body.system_prompt.unwrap_or_else(|| crate::config::DEFAULT_SYSTEM_PROMPT.to_owned()),
        tools: body.tools.unwrap_or_else(all),
        cwd: body.cwd,
        approval_mode: mode,
        permission_responses: Some(true),
        ..InitConfig::default()
    };
    let s = sessions::open_session(&app, crate::wire::PROTOCOL_VERSION, config).await?;
    let session_id = s.session.config().session_id.clone();
    Ok(Json(SessionCreated { session_id, protocol_version: PROTOCOL_VERSION.to_owned() }))
}

/// `DELETE /agent-webkit/sessions/{id}`: cancels what runs, closes the
/// session; every subscriber gets `done` and its stream ends. 204.
#[utoipa::path(delete, path = "/agent-webkit/sessions/{id}", operation_id = "webkit_delete_session", tag = "agent-webkit",
    summary = "agent-webkit 1.0: cancel and close the session; every subscriber gets done",
    params(("id" = String, Path, description = "session_id")),
    responses(
        (status = 204, description = "closed"),
        (status = 404, description = "unknown session", body = ErrorBody)))]
pub async fn delete(State(app): State<Arc<App>>, Path(id): Path<String>) -> Result<StatusCode, ApiError> {
    match sessions::close_session(&app, &id).await {
        Some(_) => Ok(StatusCode::NO_CONTENT),
        None => Err(ApiError::not_found(format!("no session {id:?}"))),
    }
}

/// `POST /agent-webkit/sessions/{id}/input` → 204; 409 when a permission
/// was already answered; 404 unknown session, request or task; 400 bad
/// message; 429 queue full.
#[utoipa::path(post, path = "/agent-webkit/sessions/{id}/input", operation_id = "webkit_input", tag = "agent-webkit",
    summary = "agent-webkit 1.0 inbound message",
    params(("id" = String, Path, description = "session_id")),
    request_body = Input,
    responses(
        (status = 204, description = "taken"),
        (status = 400, description = "unknown type, image content, empty message, bad mode", body = ErrorBody),
        (status = 404, description = "unknown session, permission request, question or task", body = ErrorBody),
        (status = 409, description = "ALREADY_ANSWERED (first reply wins), or SESSION_CLOSING", body = ErrorBody),
        (status = 429, description = "QUEUE_FULL", body = ErrorBody)))]
pub async fn input(State(app): State<Arc<App>>, Path(id): Path<String>, body: Body) -> Result<StatusCode, ApiError> {
    let s = app.get(&id)?;
    let input: Input = json_body(body).await?;
    match input {
        Input::UserMessage { content } => {
            let text = user_text(&content)?;
            s.session.send(uuid::Uuid::new_v4().to_string(), text).map_err(|e| match e {
                SendRejected::QueueFull => ApiError::new(StatusCode::TOO_MANY_REQUESTS, "QUEUE_FULL", e.to_string()),
                e => ApiError::new(StatusCode::CONFLICT, "SESSION_CLOSING", e.to_string()),
            })?;
        }
        Input::Interrupt => {
            s.session.cancel_running();
        }
        Input::PermissionResponse { correlation_id, behavior, interrupt } => {
            let decision = match behavior.as_str() {
                "allow" if interrupt => return Err(ApiError::bad_request("interrupt may only come with deny")),
                "allow" => Decision::Allow,
                "deny" => Decision::Deny,
                other => return Err(ApiError::bad_request(format!("behavior must be allow or deny, not {other:?}"))),
            };
            match s.session.answer_permission(&correlation_id, decision) {
                Ok(()) => {}
                Err(e @ AnswerError::AlreadyAnswered) => {
                    return Err(ApiError::new(StatusCode::CONFLICT, "ALREADY_ANSWERED", e.to_string()));
                }
                Err(AnswerError::Unknown) => {
                    return Err(ApiError::not_found(format!("no permission request {correlation_id:?}")));
                }
            }
            if interrupt {
                s.session.cancel_running();
            }
        }
        Input::QuestionResponse { correlation_id } => {
            return Err(ApiError::not_found(format!("no question {correlation_id:?}: pirn asks none")));
        }
        Input::SetPermissionMode { mode } => {
            let mode = approval_mode(&mode).ok_or_else(|| ApiError::bad_request(format!("unknown mode {mode:?}")))?;
            s.session.set_approval_mode(mode);
        }
        Input::SetModel { model } => s.session.set_model(model),
        Input::StopTask { task_id } => {
            if !s.session.cancel(&task_id).await {
                return Err(ApiError::not_found(format!("no running or queued task {task_id:?}")));
            }
        }
    }
    Ok(StatusCode::NO_CONTENT)
}

/// The text of a `user_message`: a string, or the text blocks joined
/// (images are refused: pirn's models are text-only).
fn user_text(content: &Value) -> Result<String, ApiError> {
    match content {
        Value::String(s) if !s.trim().is_empty() => Ok(s.clone()),
        Value::Array(blocks) => {
            let mut text = Vec::new();
            for b in blocks {
                match b["type"].as_str() {
                    Some("text") => text.push(b["text"].as_str().unwrap_or("").to_owned()),
                    Some(other) => return Err(ApiError::bad_request(format!("{other} content is not supported"))),
                    None => return Err(ApiError::bad_request("a content block needs a type")),
                }
            }
            let text = text.join("\n");
            if text.trim().is_empty() { Err(ApiError::bad_request("the message is empty")) } else { Ok(text) }
        }
        _ => Err(ApiError::bad_request("content must be a non-empty string or an array of content blocks")),
    }
}

/// `GET /agent-webkit/sessions/{id}/stream`: SSE, see the module doc.
#[utoipa::path(get, path = "/agent-webkit/sessions/{id}/stream", operation_id = "webkit_stream", tag = "agent-webkit",
    summary = "agent-webkit 1.0 SSE: session_ready (id 0), message_delta, message_complete, tool_use, tool_result, permission_request, error, result, done; ids 4·frame + k (monotonic); :keepalive every 15 s; multi-subscriber",
    params(
        ("id" = String, Path, description = "session_id"),
        ("Last-Event-ID" = Option<String>, Header, description = "resume after this event id (a non-negative integer)")),
    responses(
        (status = 200, description = "SSE; each event's data is the JSON of the schema of its name: SessionReady, MessageDelta, MessageComplete, ToolUse, ToolResult, PermissionRequest, WebkitError (`error`), WebkitResult (`result`), WebkitDone (`done`)", content_type = "text/event-stream", body = String),
        (status = 400, description = "Last-Event-ID is not a non-negative integer", body = ErrorBody),
        (status = 404, description = "unknown session", body = ErrorBody),
        (status = 412, description = "EVICTED: the events after Last-Event-ID left the ring", body = ErrorBody)))]
pub async fn stream(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<HttpResponse, ApiError> {
    let s = app.get(&id)?;
    let last = match headers.get("last-event-id") {
        None => None,
        Some(v) => Some(
            v.to_str()
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .ok_or_else(|| ApiError::bad_request("Last-Event-ID must be a non-negative integer"))?,
        ),
    };
    // Frames from the one holding event `last` on; its earlier events skipped.
    let subscribed = match last {
        None => s.hub.subscribe(None),
        Some(n) => s.hub.subscribe(Some((n / 4).saturating_sub(1))),
    };
    let (replay, live) = match subscribed {
        Ok(sub) => sub,
        Err(ReplayError::Evicted) => {
            return Err(ApiError::new(StatusCode::PRECONDITION_FAILED, "EVICTED", "those events are no longer kept"));
        }
        Err(ReplayError::Future(_)) => s.hub.subscribe(None).map_err(|_| ApiError::not_found("session closed"))?,
    };
    let state = Stream {
        s: s.clone(),
        replay: replay.into(),
        live,
        after: last,
        ready: last.is_none(),
        last_frame: 0,
        pending: Default::default(),
        done: false,
    };
    let events =
        futures_util::stream::unfold(
            state,
            |mut st| async move { st.next().await.map(|e| (Ok::<_, Infallible>(e), st)) },
        );
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(KEEPALIVE).text("keepalive")).into_response())
}

struct Stream {
    s: Arc<HttpSession>,
    replay: std::collections::VecDeque<Arc<Frame>>,
    live: LiveFrames,
    /// Events up to this id were seen by the client.
    after: Option<u64>,
    /// `session_ready` still to send.
    ready: bool,
    last_frame: u64,
    pending: std::collections::VecDeque<SseEvent>,
    done: bool,
}

impl Stream {
    async fn next(&mut self) -> Option<SseEvent> {
        if self.ready {
            self.ready = false;
            let session_id = self.s.session.config().session_id.clone();
            let data = to_json(&SessionReady { session_id, protocol_version: PROTOCOL_VERSION.to_owned() });
            return Some(event(0, "session_ready", &data));
        }
        loop {
            if let Some(e) = self.pending.pop_front() {
                return Some(e);
            }
            if self.done {
                return None;
            }
            let frame = match self.replay.pop_front() {
                Some(f) => f,
                None => match self.live.recv().await {
                    Ok(f) => f,
                    // Too slow: cut off (the client resumes with Last-Event-ID).
                    Err(broadcast::error::RecvError::Lagged(_)) => return None,
                    Err(broadcast::error::RecvError::Closed) => {
                        self.done = true;
                        return Some(event((self.last_frame + 1) * 4, "done", &to_json(&WebkitDone {})));
                    }
                },
            };
            self.last_frame = frame.id;
            for (k, name, data) in translate(&frame) {
                let id = frame.id * 4 + k;
                if self.after.is_none_or(|a| id > a) {
                    self.pending.push_back(event(id, name, &data));
                }
            }
        }
    }
}

fn event(id: u64, name: &str, data: &str) -> SseEvent {
    SseEvent::default().id(id.to_string()).event(name).data(data)
}

/// The agent-webkit events of one pirn frame: (index within the frame,
/// name, data as JSON).
fn translate(frame: &Frame) -> Vec<(u64, &'static str, String)> {
    let Ok(line) = serde_json::from_str::<OutgoingMessage>(&frame.data) else { return Vec::new() };
    let message_id = frame.send_id.as_deref().unwrap_or("").to_owned();
    let event = match line {
        OutgoingMessage::Result(r) => return result_events(&r, message_id),
        // A subagent's text is its own (its answer is the task call's result).
        OutgoingMessage::Event(e)
            if e.parent_call_id.is_some() && matches!(e.event, crate::wire::Event::ContentDelta { .. }) =>
        {
            return Vec::new();
        }
        OutgoingMessage::Event(e) => e.event,
        _ => return Vec::new(),
    };
    let out = match event {
        crate::wire::Event::ContentDelta { text } => {
            ("message_delta", to_json(&MessageDelta { message_id, delta: TextBlock::new(text) }))
        }
        crate::wire::Event::ToolStart { name, args, call_id } => {
            ("tool_use", to_json(&ToolUse { message_id, tool_use_id: call_id, tool_name: name, input: args }))
        }
        crate::wire::Event::ToolEnd { result_preview, call_id, is_error, .. } => {
            ("tool_result", to_json(&ToolResult { tool_use_id: call_id, output: result_preview, is_error }))
        }
        crate::wire::Event::PermissionRequest { name, reason, request_id, args, .. } => {
            let context = PermissionContext { reason, message_id };
            let correlation_id = request_id.unwrap_or_default();
            let input = args.unwrap_or(Value::Null);
            ("permission_request", to_json(&PermissionRequest { correlation_id, tool_name: name, input, context }))
        }
        _ => return Vec::new(),
    };
    vec![(0, out.0, out.1)]
}

/// A pirn `result` as `message_complete` (or `error`), then `result`.
fn result_events(r: &crate::wire::SendResult, message_id: String) -> Vec<(u64, &'static str, String)> {
    let ok = r.status == Status::Ok;
    let stop_reason =
        r.stop_reason.and_then(|s| serde_json::to_value(s).ok()).and_then(|v| v.as_str().map(str::to_owned));
    let subtype = match (ok, stop_reason.as_deref()) {
        (true, _) => "success",
        (false, Some("max_iterations")) => "error_max_turns",
        _ => "error_during_execution",
    };
    let first = if ok {
        let message = AssistantMessage {
            id: message_id.clone(),
            role: "assistant".to_owned(),
            content: vec![TextBlock::new(r.response.clone().unwrap_or_default())],
            stop_reason: stop_reason.clone(),
        };
        ("message_complete", to_json(&MessageComplete { message_id: message_id.clone(), message }))
    } else {
        let e = r.error.as_ref();
        let code = e.and_then(|e| serde_json::to_value(e.code).ok()).and_then(|v| v.as_str().map(str::to_owned));
        ("error", to_json(&WebkitError { code, message: e.map(|e| e.message.clone()) }))
    };
    let result = WebkitResult {
        session_id: r.correlation.session_id.as_deref().map(str::to_owned),
        subtype: subtype.to_owned(),
        is_error: !ok,
        result: r.response.clone(),
        stop_reason,
        num_turns: Some(u64::from(r.iterations)),
        duration_ms: r.total_latency_ms,
        usage: r.usage,
        total_cost_usd: r.session_cost_usd,
        message_id,
    };
    vec![(0, first.0, first.1), (1, "result", to_json(&result))]
}
