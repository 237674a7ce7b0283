//! Session routes: create, list, show, delete; and the daemon's own
//! `/health` and `/shutdown`.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response as HttpResponse};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::api::{ApiError, read_body};
use super::state::{App, HttpSession};
use crate::config::Limits;
use crate::session::{OpenError, ResumeError, Session};
use crate::store::StoreError;
use crate::transport::hub::Hub;
use crate::wire::http::ErrorBody;
use crate::wire::http::Ok as Acknowledged;
use crate::wire::http::sessions::{
    CreateSession, ForkSession, Health, SessionCreated, SessionList, SessionListEntry, SessionStatus,
};
use crate::wire::{self, InitConfig, PROTOCOL_VERSION, ProtocolVersion};

#[utoipa::path(get, path = "/health", operation_id = "health", tag = "daemon", summary = "Liveness; never needs a token",
    security(()),
    responses((status = 200, description = "the daemon is up", body = Health)))]
pub async fn health(State(app): State<Arc<App>>) -> axum::Json<Health> {
    let sessions = app.all().len() as u64;
    let group = app.group.as_ref();
    axum::Json(Health {
        ok: true,
        version: env!("CARGO_PKG_VERSION").to_owned(),
        protocol_version: PROTOCOL_VERSION.to_owned(),
        sessions,
        console: app.console_health(),
        host_id: group.map(|g| g.host_id().to_owned()),
        advertise_url: group.map(|g| g.url.clone()),
        sessions_owned: group.map(|_| sessions),
    })
}

/// Answers, then stops the daemon (graceful shutdown finishes this answer).
#[utoipa::path(post, path = "/shutdown", operation_id = "shutdown", tag = "daemon", summary = "Answer, cancel every active send, exit 0",
    responses((status = 200, description = "shutting down", body = crate::wire::http::Ok)))]
pub async fn shutdown(State(app): State<Arc<App>>) -> axum::Json<Acknowledged> {
    app.shutdown.cancel();
    axum::Json(Acknowledged { ok: true })
}

/// `POST /v1/sessions`: `{protocol_version?, …init.config}`; with
/// `resume` (or `resume_session_id`) a stored session is reopened, its
/// stored config the base for any field the body leaves out.
#[utoipa::path(post, path = "/v1/sessions", operation_id = "create_session", tag = "sessions", summary = "Create a session (or resume a stored one)",
    request_body = CreateSession,
    responses(
        (status = 201, description = "created", body = SessionCreated),
        (status = 400, description = "protocol_version_mismatch or protocol_error (a config pirn or this server refuses)", body = ErrorBody),
        (status = 404, description = "resume: no such stored session", body = ErrorBody),
        (status = 409, description = "SESSION_LIVE (already open on this server) or CANNOT_RESUME (held by another process)", body = ErrorBody),
        (status = 413, description = "BODY_TOO_LARGE: body over 10 MiB", body = ErrorBody),
        (status = 503, description = "TOO_MANY_SESSIONS (--max-sessions sessions are live) or STORE_UNAVAILABLE", body = ErrorBody)))]
pub async fn create_session(State(app): State<Arc<App>>, body: Body) -> Result<HttpResponse, ApiError> {
    let bytes = read_body(body).await?;
    let invalid = |e: &dyn std::fmt::Display| {
        ApiError::new(StatusCode::BAD_REQUEST, "protocol_error", format!("invalid session config: {e}"))
    };
    let mut body: Map<String, Value> = serde_json::from_slice(&bytes).map_err(|e| invalid(&e))?;
    let requested = match body.remove("protocol_version") {
        None | Some(Value::Null) => PROTOCOL_VERSION.to_owned(),
        Some(Value::String(v)) => v,
        Some(other) => return Err(invalid(&format!("protocol_version must be a string, not {other}"))),
    };
    if let Some(id) = body.remove("resume") {
        body.insert("resume_session_id".into(), id);
    }
    if let Some(Value::String(id)) = body.get("resume_session_id").cloned() {
        if app.sessions.lock().unwrap_or_else(|p| p.into_inner()).contains_key(&id) {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "SESSION_LIVE",
                format!("session {id:?} is already open here"),
            ));
        }
        body = with_stored_config(&app, &id, body).await?;
    }
    let body: CreateSession = serde_json::from_value(Value::Object(body)).map_err(|e| invalid(&e))?;
    let s = open_session(&app, &requested, body.config).await?;
    let session_id = s.session.config().session_id.clone();
    let protocol_version = s.session.config().version.as_str().to_owned();
    Ok((StatusCode::CREATED, axum::Json(SessionCreated { session_id, protocol_version })).into_response())
}

/// `POST /v1/sessions/{id}/fork`: a new live session holding a copy of
/// stored session `id` (see [`ForkSession`]).
#[utoipa::path(post, path = "/v1/sessions/{id}/fork", operation_id = "fork_session", tag = "sessions", summary = "Fork a stored session (at a message) into a new live one",
    params(("id" = String, Path, description = "the stored session to copy")),
    request_body = ForkSession,
    responses(
        (status = 201, description = "the fork, live", body = SessionCreated),
        (status = 400, description = "NO_SUCH_MESSAGE, protocol_error or protocol_version_mismatch", body = ErrorBody),
        (status = 404, description = "no such stored session", body = ErrorBody),
        (status = 503, description = "TOO_MANY_SESSIONS or STORE_UNAVAILABLE", body = ErrorBody)))]
pub async fn fork_session(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    body: Body,
) -> Result<HttpResponse, ApiError> {
    let bytes = read_body(body).await?;
    let fork: ForkSession = if bytes.iter().all(u8::is_ascii_whitespace) {
        ForkSession::default()
    } else {
        serde_json::from_slice(&bytes).map_err(|e| ApiError::bad_request(format!("invalid fork body: {e}")))?
    };
    let mut body = Map::new();
    body.insert("resume_session_id".into(), Value::String(id.clone()));
    body.insert("fork_session".into(), Value::Bool(true));
    if let Some(at) = fork.at_message {
        body.insert("resume_at_message".into(), Value::from(at));
    }
    let body = with_stored_config(&app, &id, body).await?;
    let config: InitConfig = serde_json::from_value(Value::Object(body))
        .map_err(|e| ApiError::bad_request(format!("the stored session's config: {e}")))?;
    let requested = fork.protocol_version.unwrap_or_else(|| PROTOCOL_VERSION.to_owned());
    let s = open_session(&app, &requested, config).await?;
    let session_id = s.session.config().session_id.clone();
    let protocol_version = s.session.config().version.as_str().to_owned();
    Ok((StatusCode::CREATED, axum::Json(SessionCreated { session_id, protocol_version })).into_response())
}

/// Opens a session asking for protocol `requested` and adds it to the live
/// table: the one way every HTTP surface (REST, MCP, agent-webkit) starts
/// one. In 0.3.0, `permission_responses` defaults to true (the HTTP client
/// answers permission requests) unless `config` says otherwise.
pub async fn open_session(app: &App, requested: &str, mut config: InitConfig) -> Result<Arc<HttpSession>, ApiError> {
    let invalid = |e: &dyn std::fmt::Display| {
        ApiError::new(StatusCode::BAD_REQUEST, "protocol_error", format!("invalid session config: {e}"))
    };
    // What a trusted stdio parent may ask for, an HTTP client may not.
    app.trust.admit(&mut config).map_err(|e| invalid(&e))?;
    if wire::negotiate(Some(requested)).is_ok_and(|v| v >= ProtocolVersion::V0_3) {
        config.permission_responses.get_or_insert(true);
    }
    let full = || {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "TOO_MANY_SESSIONS",
            format!("{} sessions are live (--max-sessions); close one or try later", app.max_sessions),
        )
    };
    if app.sessions.lock().unwrap_or_else(|p| p.into_inner()).len() >= app.max_sessions {
        return Err(full());
    }
    let limits = Limits { max_queue: Some(app.max_queue), queue_timeout: Some(app.queue_timeout) };
    let (hub, outbox) = Hub::start();
    let opened = Session::open(Some(requested), &config, &app.env, limits, outbox).await;
    let session = opened.map_err(|e| match e {
        OpenError::Version(e) => ApiError::new(StatusCode::BAD_REQUEST, "protocol_version_mismatch", e.to_string()),
        OpenError::Config(e) => invalid(&e),
        e @ OpenError::Resume { reason: ResumeError::Store(StoreError::NotFound(_)), .. } => {
            ApiError::not_found(e.to_string())
        }
        e @ OpenError::Resume { reason: ResumeError::Store(StoreError::Owned { .. }), .. } => {
            ApiError::new(StatusCode::CONFLICT, "SESSION_OWNED", e.to_string())
        }
        e @ OpenError::Resume { reason: ResumeError::At(_), .. } => {
            ApiError::new(StatusCode::BAD_REQUEST, "NO_SUCH_MESSAGE", e.to_string())
        }
        e @ OpenError::Resume { .. } => ApiError::new(StatusCode::CONFLICT, "CANNOT_RESUME", e.to_string()),
    })?;
    if let Some(j) = session.journal() {
        hub.attach(j.clone());
    }
    let id = session.config().session_id.clone();
    let touched_ms = std::sync::atomic::AtomicU64::new(app.now_ms());
    let s = Arc::new(HttpSession { session, hub, touched_ms });
    let admitted = {
        let mut table = app.sessions.lock().unwrap_or_else(|p| p.into_inner());
        // Sessions opened meanwhile may have filled the table.
        (table.len() < app.max_sessions).then(|| table.insert(id, s.clone()))
    };
    if admitted.is_none() {
        s.close().await;
        return Err(full());
    }
    Ok(s)
}

/// Takes session `id` off the live table (its webhook with it), cancels
/// what runs and ends its streams; `None` when it was not live.
pub async fn close_session(app: &App, id: &str) -> Option<Arc<HttpSession>> {
    let removed = app.sessions.lock().unwrap_or_else(|p| p.into_inner()).remove(id);
    app.inbox.remove(id);
    if let Some(s) = &removed {
        s.close().await;
    }
    removed
}

/// Opens stored session `id` again here, with its own `init.config` (404
/// when not stored): how `/mcp`'s `pirn_send` continues a session that is
/// not live.
pub async fn resume_stored(app: &App, id: &str) -> Result<Arc<HttpSession>, ApiError> {
    let mut body = Map::new();
    body.insert("resume_session_id".into(), Value::String(id.to_owned()));
    let body = with_stored_config(app, id, body).await?;
    let config: InitConfig = serde_json::from_value(Value::Object(body))
        .map_err(|e| ApiError::bad_request(format!("the stored session's config: {e}")))?;
    open_session(app, PROTOCOL_VERSION, config).await
}

/// `body` over the stored session's `init.config` (404 when not stored).
async fn with_stored_config(app: &App, id: &str, body: Map<String, Value>) -> Result<Map<String, Value>, ApiError> {
    let store = app.env.store.as_ref().ok_or_else(|| ApiError::not_found("persistence is off in this server"))?;
    let entries = store.load(id, 0).await.map_err(store_error)?;
    let mut base = match crate::store::fold::fold(&entries).config {
        Value::Object(m) if !m.is_empty() => m,
        // Claimed, but its creation never reached the log (the creating
        // process died first, or a peer's write is still on its way).
        _ => {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "SESSION_BUSY",
                format!("session {id:?} has no stored configuration (its creation is not in the log); try again"),
            ));
        }
    };
    // A workspace that is not on this host: the server's own directory.
    if base.get("cwd").and_then(Value::as_str).is_some_and(|d| !std::path::Path::new(d).is_dir()) {
        base.remove("cwd");
    }
    base.extend(body);
    Ok(base)
}

/// A store error as an HTTP answer.
pub fn store_error(e: StoreError) -> ApiError {
    match e {
        StoreError::NotFound(_) => ApiError::not_found(e.to_string()),
        StoreError::InvalidId(_) => ApiError::bad_request(e.to_string()),
        StoreError::Busy(_) | StoreError::Superseded(_) => {
            ApiError::new(StatusCode::CONFLICT, "SESSION_BUSY", e.to_string())
        }
        StoreError::Owned { .. } => ApiError::new(StatusCode::CONFLICT, "SESSION_OWNED", e.to_string()),
        _ => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "STORE_UNAVAILABLE", e.to_string()),
    }
}

fn status(s: &HttpSession) -> SessionStatus {
    let st = s.session.status(String::new());
    SessionStatus {
        session_id: st.session_id,
        model: st.model,
        messages_count: st.messages_count,
        active: st.active,
        queue_length: st.queue_length.unwrap_or(0),
        interrupted: st.interrupted,
    }
}

/// `GET /v1/sessions`: the live sessions (with `live: true` and their
/// status), then the stored ones not live here (`live` says whether some
/// process holds them), each with `title`, `model`, `created_ms`,
/// `updated_ms` when stored.
#[utoipa::path(get, path = "/v1/sessions", operation_id = "list_sessions", tag = "sessions", summary = "List live and stored sessions",
    responses(
        (status = 200, description = "the live sessions, then the stored ones not live here", body = SessionList),
        (status = 503, description = "STORE_UNAVAILABLE: the session store cannot be read", body = ErrorBody)))]
pub async fn list_sessions(State(app): State<Arc<App>>) -> Result<axum::Json<SessionList>, ApiError> {
    let stored = match &app.env.store {
        Some(store) => store.list().await.map_err(store_error)?,
        None => Vec::new(),
    };
    let live = app.all();
    let mut sessions = Vec::with_capacity(live.len() + stored.len());
    for s in &live {
        let st = status(s);
        let info = stored.iter().find(|i| i.session_id == st.session_id);
        sessions.push(SessionListEntry {
            session_id: st.session_id,
            model: st.model,
            live: true,
            title: info.map(|i| i.title.clone()),
            created_ms: info.map(|i| i.created_ms),
            updated_ms: info.map(|i| i.updated_ms),
            messages_count: Some(st.messages_count),
            active: Some(st.active),
            queue_length: Some(st.queue_length),
            interrupted: st.interrupted,
        });
    }
    let here = |id: &str| live.iter().any(|s| s.session.config().session_id == id);
    sessions.extend(stored.into_iter().filter(|i| !here(&i.session_id)).map(|i| SessionListEntry {
        session_id: i.session_id,
        model: i.model,
        live: i.live,
        title: Some(i.title),
        created_ms: Some(i.created_ms),
        updated_ms: Some(i.updated_ms),
        messages_count: None,
        active: None,
        queue_length: None,
        interrupted: None,
    }));
    Ok(axum::Json(SessionList { sessions }))
}

#[utoipa::path(get, path = "/v1/sessions/{id}", operation_id = "get_session", tag = "sessions", summary = "A live session's status",
    params(("id" = String, Path, description = "session_id")),
    responses(
        (status = 200, description = "status", body = SessionStatus),
        (status = 404, description = "NOT_FOUND: not live on this server", body = ErrorBody)))]
pub async fn session_status(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<axum::Json<SessionStatus>, ApiError> {
    let s = app.get(&id)?;
    Ok(axum::Json(status(&s)))
}

#[derive(Deserialize)]
pub struct DeleteQuery {
    #[serde(default)]
    purge: bool,
}

/// Cancels what runs and queues (their results reach the streams), then
/// frees the session; its log stays (it can be resumed) unless `?purge=true`.
#[utoipa::path(delete, path = "/v1/sessions/{id}", operation_id = "delete_session", tag = "sessions",
    summary = "Cancel what runs and queues, free the session; its log stays (resumable) unless purge",
    params(
        ("id" = String, Path, description = "session_id"),
        ("purge" = Option<bool>, Query, description = "also delete the stored log (default false: kept, the session can be resumed)")),
    responses(
        (status = 204, description = "closed"),
        (status = 404, description = "neither live nor stored", body = ErrorBody),
        (status = 409, description = "SESSION_BUSY: purge of a log another process holds", body = ErrorBody)))]
pub async fn delete_session(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Query(q): Query<DeleteQuery>,
) -> Result<StatusCode, ApiError> {
    let removed = close_session(&app, &id).await;
    let purged = match (&app.env.store, q.purge) {
        (Some(store), true) => store.delete(&id).await.map_err(store_error)?,
        _ => false,
    };
    if removed.is_none() && !purged {
        return Err(ApiError::not_found(format!("no session {id:?}")));
    }
    Ok(StatusCode::NO_CONTENT)
}
