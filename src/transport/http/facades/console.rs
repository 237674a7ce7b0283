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

use crate::terminal::Terminals;
use crate::terminal::console::{BACKEND, Console, ConsoleError};
use crate::transport::http::api::{ApiError, json_body};
use crate::transport::http::state::App;
use crate::transport::http::trust::is_loopback;
use crate::wire::http::ErrorBody;
use crate::wire::http::console::{
    ConsoleControl, ConsoleInfo, ConsoleList, CreateConsole, DaemonHealth, Resize, Title,
};
use crate::wire::http::to_json;

/// Replay and live output are sent in frames of at most this many bytes.
pub const REPLAY_CHUNK: usize = 64 * 1024;

/// The terminals, for a loopback peer only.
fn local(app: &App, peer: SocketAddr) -> Result<Arc<Terminals>, ApiError> {
    let terminals = app.terminals()?;
    if !is_loopback(peer) {
        return Err(ApiError::new(StatusCode::FORBIDDEN, "FORBIDDEN", "console routes answer loopback peers only"));
    }
    Ok(terminals)
}

/// Console `id`, for a loopback peer only.
fn local_console(app: &App, peer: SocketAddr, id: &str) -> Result<Arc<Console>, ApiError> {
    local(app, peer)?.consoles.get(id).ok_or_else(|| ApiError::not_found(format!("no console {id:?}")))
}

/// `GET /api/health`: ACECode's liveness probe, with the console's backend.
#[utoipa::path(get, path = "/api/health", operation_id = "console_health", tag = "console",
    summary = "ACECode's liveness and identity probe (needs the token when the daemon has one: X-ACECode-Token or Authorization: Bearer)",
    responses((status = 200, description = "health", body = DaemonHealth)))]
pub async fn health(State(app): State<Arc<App>>) -> Json<DaemonHealth> {
    Json(DaemonHealth {
        guid: app.guid.clone(),
        pid: std::process::id(),
        port: app.port,
        version: env!("CARGO_PKG_VERSION").to_owned(),
        cwd: std::env::current_dir().unwrap_or_default().to_string_lossy().into_owned(),
        uptime_seconds: app.started.elapsed().as_secs(),
        console: app.console_health(),
    })
}

/// `POST /api/pty` → 201 session info; 429 at the limit; 400 bad `cwd`.
#[utoipa::path(post, path = "/api/pty", operation_id = "create_console", tag = "console",
    summary = "ACECode console: start $SHELL (or --console-shell) on a new PTY",
    request_body = CreateConsole,
    responses(
        (status = 201, description = "created", body = ConsoleInfo),
        (status = 400, description = "cwd is not an existing directory", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: any peer off loopback, token or not", body = ErrorBody),
        (status = 404, description = "pirn serve runs without --terminals", body = ErrorBody),
        (status = 429, description = "TOO_MANY_CONSOLES: 16 exist (exited ones count until deleted)", body = ErrorBody),
        (status = 500, description = "CONSOLE_FAILED: the shell did not start", body = ErrorBody)))]
pub async fn create(
    State(app): State<Arc<App>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    body: Body,
) -> Result<HttpResponse, ApiError> {
    let terminals = local(&app, peer)?;
    let body: CreateConsole = json_body(body).await?;
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
#[utoipa::path(get, path = "/api/pty", operation_id = "list_consoles", tag = "console", summary = "ACECode console: list consoles",
    responses(
        (status = 200, description = "consoles", body = ConsoleList),
        (status = 403, description = "FORBIDDEN: any peer off loopback, token or not", body = ErrorBody),
        (status = 404, description = "pirn serve runs without --terminals", body = ErrorBody)))]
pub async fn list(
    State(app): State<Arc<App>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
) -> Result<Json<ConsoleList>, ApiError> {
    let terminals = local(&app, peer)?;
    let sessions = terminals.consoles.list().iter().map(|c| c.info()).collect();
    Ok(Json(ConsoleList { backend: BACKEND.to_owned(), sessions }))
}

/// `DELETE /api/pty/{id}` → 204, the shell killed.
#[utoipa::path(delete, path = "/api/pty/{id}", operation_id = "delete_console", tag = "console", summary = "ACECode console: kill the shell and forget the console",
    params(("id" = String, Path, description = "console id (pty-…)")),
    responses(
        (status = 204, description = "deleted"),
        (status = 403, description = "FORBIDDEN: any peer off loopback, token or not", body = ErrorBody),
        (status = 404, description = "unknown console, or terminals off", body = ErrorBody)))]
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

/// `POST /api/pty/{id}/resize` `{cols, rows}`, each 2..=1000 → 204.
#[utoipa::path(post, path = "/api/pty/{id}/resize", operation_id = "resize_console", tag = "console", summary = "ACECode console: set the window size (the shell gets SIGWINCH)",
    params(("id" = String, Path, description = "console id (pty-…)")),
    request_body = Resize,
    responses(
        (status = 204, description = "resized"),
        (status = 400, description = "cols or rows outside 2..1000", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: any peer off loopback, token or not", body = ErrorBody),
        (status = 404, description = "unknown console, or terminals off", body = ErrorBody)))]
pub async fn resize(
    State(app): State<Arc<App>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
    body: Body,
) -> Result<StatusCode, ApiError> {
    let c = local_console(&app, peer, &id)?;
    let Resize { cols, rows } = json_body(body).await?;
    if !(2..=1000).contains(&cols) || !(2..=1000).contains(&rows) {
        return Err(ApiError::bad_request(format!("cols and rows must be 2..1000, not {cols}x{rows}")));
    }
    c.resize(rows as u16, cols as u16);
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /api/pty/{id}/title` `{title}` → 204 (blank titles ignored).
#[utoipa::path(post, path = "/api/pty/{id}/title", operation_id = "set_console_title", tag = "console", summary = "ACECode console: set the title (blank ignored; cut to 200 bytes at a character boundary)",
    params(("id" = String, Path, description = "console id (pty-…)")),
    request_body = Title,
    responses(
        (status = 204, description = "set"),
        (status = 403, description = "FORBIDDEN: any peer off loopback, token or not", body = ErrorBody),
        (status = 404, description = "unknown console, or terminals off", body = ErrorBody)))]
pub async fn title(
    State(app): State<Arc<App>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
    body: Body,
) -> Result<StatusCode, ApiError> {
    let c = local_console(&app, peer, &id)?;
    let Title { title } = json_body(body).await?;
    c.set_title(&title);
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize)]
pub struct CursorQuery {
    cursor: Option<i64>,
}

/// `WS /ws/pty/{id}?cursor=N`: replay from N (0 when absent, none for -1),
/// `{"cursor": end}`, then live output; input bytes go to the shell.
#[utoipa::path(get, path = "/ws/pty/{id}", operation_id = "console_websocket", tag = "console",
    summary = "ACECode console WebSocket: raw bytes both ways; server frames starting with 0x00 are control frames (ConsoleControl JSON): {cursor} after the replay, {exit_code} when the shell exits; replay in frames of at most 64 KiB",
    params(
        ("id" = String, Path, description = "console id (pty-…)"),
        ("cursor" = Option<i64>, Query, description = "byte cursor to replay from (an evicted one replays the whole 2 MB buffer); -1 skips the backlog"),
        ("token" = Option<String>, Query, description = "the daemon's token, for clients that cannot set headers on a WebSocket")),
    responses(
        (status = 101, description = "switching protocols"),
        (status = 403, description = "FORBIDDEN: any peer off loopback, token or not", body = ErrorBody),
        (status = 404, description = "unknown console, or terminals off", body = ErrorBody)))]
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
                        if !send_control(&mut socket, ConsoleControl::Cursor { cursor }).await {
                            return;
                        }
                    }
                    if let Some(code) = chunk.exit_code {
                        send_control(&mut socket, ConsoleControl::Exit { exit_code: code }).await;
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

async fn send_control(socket: &mut WebSocket, body: ConsoleControl) -> bool {
    let mut frame = vec![0u8];
    frame.extend_from_slice(to_json(&body).as_bytes());
    socket.send(Message::Binary(frame.into())).await.is_ok()
}
