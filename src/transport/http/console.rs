//! ACECode's console routes (`../shared/reference/acecode-daemon-api.md`,
//! section 7): `/api/pty` and `WS /ws/pty/{id}?cursor=N`, plus
//! `/api/health` with its `console` entry.
//!
//! Every console route answers 403 to a peer off loopback, token or not: a
//! console runs commands without the approval gate. The WebSocket carries
//! raw bytes both ways; server frames whose first byte is 0x00 are control
//! frames (`{"cursor": N}` after the backlog, `{"exit_code": N}` at the
//! end). A raw output frame never starts with 0x00: leading NUL bytes of a
//! frame (which terminals ignore) are left out of it, and the next
//! `cursor` still counts them.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade, close_code};
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response as HttpResponse};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::{Value, json};

use super::App;
use super::api::{ApiError, json_body};
use crate::terminal::Terminals;
use crate::terminal::console::{BACKEND, Console, ConsoleError};

/// Replay and live output are sent in frames of at most this many bytes.
pub const REPLAY_CHUNK: usize = 64 * 1024;

/// The terminals, for a loopback peer only.
fn local(app: &App, peer: SocketAddr) -> Result<Arc<Terminals>, ApiError> {
    let terminals = app.terminals()?;
    if !super::is_loopback(peer) {
        return Err(ApiError::new(StatusCode::FORBIDDEN, "FORBIDDEN", "console routes answer loopback peers only"));
    }
    Ok(terminals)
}

/// Console `id`, for a loopback peer only.
fn local_console(app: &App, peer: SocketAddr, id: &str) -> Result<Arc<Console>, ApiError> {
    local(app, peer)?.consoles.get(id).ok_or_else(|| ApiError::not_found(format!("no console {id:?}")))
}

/// `GET /api/health`: ACECode's liveness probe, with the console's backend.
pub async fn health(State(app): State<Arc<App>>) -> Json<Value> {
    Json(json!({
        "guid": app.guid,
        "pid": std::process::id(),
        "port": app.port,
        "version": env!("CARGO_PKG_VERSION"),
        "cwd": std::env::current_dir().unwrap_or_default(),
        "uptime_seconds": app.started.elapsed().as_secs(),
        "console": app.console_health(),
    }))
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct CreateBody {
    cwd: Option<String>,
    title: Option<String>,
}

/// `POST /api/pty` → 201 session info; 429 at the limit; 400 bad `cwd`.
pub async fn create(
    State(app): State<Arc<App>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    body: Body,
) -> Result<HttpResponse, ApiError> {
    let terminals = local(&app, peer)?;
    let body: CreateBody = json_body(body).await?;
    let cwd = match body.cwd.filter(|c| !c.is_empty()) {
        Some(c) => c.into(),
        None => std::env::current_dir().map_err(|e| ApiError::bad_request(format!("no daemon cwd: {e}")))?,
    };
    let shell = terminals.options.console_shell.clone();
    match terminals.consoles.create(&shell, &cwd, body.title.as_deref(), &terminals.options.env_passthrough) {
        Ok(c) => Ok((StatusCode::CREATED, Json(c.info())).into_response()),
        Err(e @ ConsoleError::Limit) => {
            Err(ApiError::new(StatusCode::TOO_MANY_REQUESTS, "TOO_MANY_CONSOLES", e.to_string()))
        }
        Err(e @ ConsoleError::Cwd(_)) => Err(ApiError::bad_request(e.to_string())),
        Err(e @ ConsoleError::Spawn(_)) => {
            Err(ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "CONSOLE_FAILED", e.to_string()))
        }
    }
}

/// `GET /api/pty` → `{backend, sessions}`.
pub async fn list(
    State(app): State<Arc<App>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
) -> Result<Json<Value>, ApiError> {
    let terminals = local(&app, peer)?;
    let sessions: Vec<Value> = terminals.consoles.list().iter().map(|c| c.info()).collect();
    Ok(Json(json!({"backend": BACKEND, "sessions": sessions})))
}

/// `DELETE /api/pty/{id}` → 204, the shell killed.
pub async fn delete(
    State(app): State<Arc<App>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let terminals = local(&app, peer)?;
    if terminals.consoles.delete(&id) {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found(format!("no console {id:?}")))
    }
}

#[derive(Deserialize)]
pub struct ResizeBody {
    cols: u64,
    rows: u64,
}

/// `POST /api/pty/{id}/resize` `{cols, rows}`, each 2..=1000 → 204.
pub async fn resize(
    State(app): State<Arc<App>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
    body: Body,
) -> Result<StatusCode, ApiError> {
    let c = local_console(&app, peer, &id)?;
    let ResizeBody { cols, rows } = json_body(body).await?;
    if !(2..=1000).contains(&cols) || !(2..=1000).contains(&rows) {
        return Err(ApiError::bad_request(format!("cols and rows must be 2..1000, not {cols}x{rows}")));
    }
    c.resize(rows as u16, cols as u16);
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize)]
pub struct TitleBody {
    title: String,
}

/// `POST /api/pty/{id}/title` `{title}` → 204 (blank titles ignored).
pub async fn title(
    State(app): State<Arc<App>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
    body: Body,
) -> Result<StatusCode, ApiError> {
    let c = local_console(&app, peer, &id)?;
    let TitleBody { title } = json_body(body).await?;
    c.set_title(&title);
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize)]
pub struct CursorQuery {
    cursor: Option<i64>,
}

/// `WS /ws/pty/{id}?cursor=N`: replay from N (0 when absent, none for -1),
/// `{"cursor": end}`, then live output; input bytes go to the shell.
pub async fn websocket(
    State(app): State<Arc<App>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
    Query(q): Query<CursorQuery>,
    ws: WebSocketUpgrade,
) -> Result<HttpResponse, ApiError> {
    let c = local_console(&app, peer, &id)?;
    let shutdown = app.shutdown.clone();
    Ok(ws.on_upgrade(move |socket| attach(socket, c, q.cursor.unwrap_or(0), shutdown)))
}

async fn attach(mut socket: WebSocket, c: Arc<Console>, cursor: i64, shutdown: tokio_util::sync::CancellationToken) {
    let mut changed = c.subscribe();
    changed.mark_changed();
    let mut cursor = u64::try_from(cursor).unwrap_or_else(|_| c.end());
    let mut synced = false;
    loop {
        tokio::select! {
            woke = changed.changed() => {
                if woke.is_err() {
                    break;
                }
                // Everything up to now, then (once) where that ends.
                loop {
                    let chunk = c.read(cursor, REPLAY_CHUNK);
                    cursor = chunk.cursor;
                    if !chunk.bytes.is_empty() && !send_output(&mut socket, &chunk.bytes).await {
                        return;
                    }
                    if chunk.bytes.len() == REPLAY_CHUNK {
                        continue;
                    }
                    if !synced {
                        synced = true;
                        if !send_control(&mut socket, json!({"cursor": cursor})).await {
                            return;
                        }
                    }
                    if let Some(code) = chunk.exit_code {
                        send_control(&mut socket, json!({"exit_code": code})).await;
                        let _ = socket.send(Message::Close(None)).await;
                        return;
                    }
                    break;
                }
            }
            msg = socket.recv() => match msg {
                Some(Ok(Message::Binary(b))) => input(&c, b),
                Some(Ok(Message::Text(t))) => input(&c, Bytes::copy_from_slice(t.as_bytes())),
                Some(Ok(_)) => {}
                None | Some(Err(_)) => return,
            },
            () = shutdown.cancelled() => break,
        }
    }
    let _ = socket
        .send(Message::Close(Some(axum::extract::ws::CloseFrame { code: close_code::AWAY, reason: "".into() })))
        .await;
}

fn input(c: &Console, bytes: Bytes) {
    if let Err(e) = c.input(bytes) {
        tracing::debug!("console {}: input dropped: {e}", c.id);
    }
}

async fn send_output(socket: &mut WebSocket, bytes: &[u8]) -> bool {
    let start = bytes.iter().position(|b| *b != 0).unwrap_or(bytes.len());
    start == bytes.len() || socket.send(Message::Binary(Bytes::copy_from_slice(&bytes[start..]))).await.is_ok()
}

async fn send_control(socket: &mut WebSocket, body: Value) -> bool {
    let mut frame = vec![0u8];
    frame.extend_from_slice(body.to_string().as_bytes());
    socket.send(Message::Binary(frame.into())).await.is_ok()
}
