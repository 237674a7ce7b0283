//! Session routes: create, list, show, delete; and the daemon's own
//! `/health` and `/shutdown`.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response as HttpResponse};
use serde::Deserialize;
use serde_json::{Value, json};

use super::api::{ApiError, read_body};
use super::{App, HttpSession, MAX_QUEUE};
use crate::config::Limits;
use crate::session::{OpenError, Session};
use crate::transport::hub::Hub;
use crate::wire::{self, InitConfig, PROTOCOL_VERSION, ProtocolVersion};

pub async fn health(State(app): State<Arc<App>>) -> axum::Json<Value> {
    axum::Json(json!({
        "ok": true,
        "version": env!("CARGO_PKG_VERSION"),
        "protocol_version": PROTOCOL_VERSION,
        "sessions": app.all().len(),
    }))
}

/// Answers, then stops the daemon (graceful shutdown finishes this answer).
pub async fn shutdown(State(app): State<Arc<App>>) -> axum::Json<Value> {
    app.shutdown.cancel();
    axum::Json(json!({"ok": true}))
}

#[derive(Deserialize)]
struct CreateSession {
    #[serde(default)]
    protocol_version: Option<String>,
    #[serde(flatten)]
    config: InitConfig,
}

pub async fn create_session(State(app): State<Arc<App>>, body: Body) -> Result<HttpResponse, ApiError> {
    let bytes = read_body(body).await?;
    let req: CreateSession = serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::new(StatusCode::BAD_REQUEST, "protocol_error", format!("invalid session config: {e}"))
    })?;
    // pirn's own API: a client that names no version gets the newest, and
    // answers permission requests over HTTP unless it says otherwise.
    let requested = req.protocol_version.as_deref().unwrap_or(PROTOCOL_VERSION);
    let mut config = req.config;
    if wire::negotiate(Some(requested)).is_ok_and(|v| v >= ProtocolVersion::V0_3) {
        config.permission_responses.get_or_insert(true);
    }
    let limits = Limits { max_queue: Some(MAX_QUEUE), queue_timeout: Some(app.queue_timeout) };
    let (hub, outbox) = Hub::start();
    let session = Session::open(Some(requested), &config, &app.env, limits, outbox).map_err(|e| match e {
        OpenError::Version(e) => ApiError::new(StatusCode::BAD_REQUEST, "protocol_version_mismatch", e.to_string()),
        OpenError::Config(e) => {
            ApiError::new(StatusCode::BAD_REQUEST, "protocol_error", format!("invalid session config: {e}"))
        }
    })?;
    let id = session.config().session_id.clone();
    let version = session.config().version.as_str();
    app.sessions.lock().unwrap_or_else(|p| p.into_inner()).insert(id.clone(), Arc::new(HttpSession { session, hub }));
    Ok((StatusCode::CREATED, axum::Json(json!({"session_id": id, "protocol_version": version}))).into_response())
}

fn status_json(s: &HttpSession) -> Value {
    let st = s.session.status(String::new());
    json!({
        "session_id": st.session_id,
        "model": st.model,
        "messages_count": st.messages_count,
        "active": st.active,
        "queue_length": st.queue_length,
    })
}

pub async fn list_sessions(State(app): State<Arc<App>>) -> axum::Json<Value> {
    let sessions: Vec<Value> = app.all().iter().map(|s| status_json(s)).collect();
    axum::Json(json!({"sessions": sessions}))
}

pub async fn session_status(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
) -> Result<axum::Json<Value>, ApiError> {
    let s = app.get(&id)?;
    Ok(axum::Json(status_json(&s)))
}

/// Cancels what runs and queues (their results reach the streams), then
/// frees the session.
pub async fn delete_session(State(app): State<Arc<App>>, Path(id): Path<String>) -> Result<StatusCode, ApiError> {
    let removed = app.sessions.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
    let s = removed.ok_or_else(|| ApiError::not_found(format!("no session {id:?}")))?;
    s.close().await;
    Ok(StatusCode::NO_CONTENT)
}
