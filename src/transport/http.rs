//! `pirn serve`: the same sessions over HTTP, SSE and WebSocket (axum).
//!
//! Owns: binding and trust (loopback by default; a bearer token required
//! off loopback), the JSON error bodies, the body cap, CORS, the routes of
//! `protocol/openapi.json`, and the mapping of session outcomes to HTTP
//! statuses. Every behaviour of a send lives in `session`/`agent`; each HTTP
//! session's output goes through its [`Hub`].

use std::collections::HashMap;
use std::convert::Infallible;
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response as HttpResponse};
use axum::routing::{get, post};
use futures_util::{SinkExt, Stream, StreamExt};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::approval::AnswerError;
use crate::session::{SendRejected, Session, SessionSettings};
use crate::transport::hub::{Frame, Hub, ReplayError};
use crate::wire::{
    self, Decision, ErrorCode, ErrorEnvelope, InitConfig, PROTOCOL_VERSION, Request as WireRequest, SendResult,
};

/// Largest request body accepted (10 MiB); larger ones get 413.
pub const MAX_BODY: usize = 10 * 1024 * 1024;
/// Bytes of an oversized body read (and discarded) before answering 413.
pub const DRAIN_LIMIT: usize = 64 * 1024 * 1024;
/// Sends that may wait behind the running one in a session.
pub const MAX_QUEUE: usize = 5;
/// SSE keepalive comment interval.
pub const KEEPALIVE: Duration = Duration::from_secs(15);

/// Every route, as `protocol/openapi.json` lists it (checked by a test).
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/health"),
    ("POST", "/shutdown"),
    ("GET", "/v1/sessions"),
    ("POST", "/v1/sessions"),
    ("GET", "/v1/sessions/{id}"),
    ("DELETE", "/v1/sessions/{id}"),
    ("POST", "/v1/sessions/{id}/sends"),
    ("GET", "/v1/sessions/{id}/events"),
    ("POST", "/v1/sessions/{id}/cancel"),
    ("POST", "/v1/sessions/{id}/permissions/{request_id}"),
    ("GET", "/v1/sessions/{id}/ws"),
];

/// `pirn serve` options.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub bind: IpAddr,
    /// 0 picks a free port.
    pub port: u16,
    pub token: Option<String>,
    /// How long a send may wait in a session's queue.
    pub queue_timeout: Duration,
}

struct HttpSession {
    session: Session,
    hub: Arc<Hub>,
}

struct App {
    sessions: Mutex<HashMap<String, Arc<HttpSession>>>,
    token: Option<String>,
    shutdown: CancellationToken,
    queue_timeout: Duration,
}

impl App {
    fn get(&self, id: &str) -> Result<Arc<HttpSession>, ApiError> {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
            .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, "NOT_FOUND", format!("no session {id:?}")))
    }

    fn all(&self) -> Vec<Arc<HttpSession>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner()).values().cloned().collect()
    }
}

/// An error answer: `{"error": CODE, "message": "…"}`.
#[derive(Debug)]
struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl ApiError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError { status, code, message: message.into() }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> HttpResponse {
        (self.status, axum::Json(json!({"error": self.code, "message": self.message}))).into_response()
    }
}

/// Runs the daemon until `POST /shutdown`, SIGTERM or SIGINT; returns the
/// exit code (2 when it refuses to start).
#[allow(clippy::print_stderr)]
pub async fn serve(opts: ServeOptions) -> i32 {
    if !opts.bind.is_loopback() && opts.token.as_deref().is_none_or(str::is_empty) {
        eprintln!(
            "pirn serve: refusing to bind {} without a token: off loopback every request must carry one (--token or PIRN_TOKEN)",
            opts.bind
        );
        return 2;
    }
    let listener = match tokio::net::TcpListener::bind(SocketAddr::new(opts.bind, opts.port)).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("pirn serve: cannot bind {}:{}: {e}", opts.bind, opts.port);
            return 2;
        }
    };
    let addr = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
    let app = Arc::new(App {
        sessions: Mutex::new(HashMap::new()),
        token: opts.token.filter(|t| !t.is_empty()),
        shutdown: CancellationToken::new(),
        queue_timeout: opts.queue_timeout,
    });
    // The one line serve prints: where it listens (scripts read it).
    let mut out = std::io::stdout();
    let _ = writeln!(out, "pirn serve listening on http://{addr}");
    let _ = out.flush();
    let router = router(app.clone());
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    let mut int = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).ok();
    tokio::select! {
        r = axum::serve(listener, router) => {
            if let Err(e) = r {
                eprintln!("pirn serve: {e}");
                return 1;
            }
        }
        _ = app.shutdown.cancelled() => {}
        _ = async { match &mut term { Some(s) => { s.recv().await; } None => std::future::pending().await } } => {}
        _ = async { match &mut int { Some(s) => { s.recv().await; } None => std::future::pending().await } } => {}
    }
    for s in app.all() {
        s.session.shutdown().await;
    }
    // Let the cancelled results reach the streams before the process ends.
    tokio::time::sleep(Duration::from_millis(100)).await;
    0
}

fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/shutdown", post(shutdown))
        .route("/v1/sessions", get(list_sessions).post(create_session))
        .route("/v1/sessions/{id}", get(session_status).delete(delete_session))
        .route("/v1/sessions/{id}/sends", post(create_send))
        .route("/v1/sessions/{id}/events", get(events))
        .route("/v1/sessions/{id}/cancel", post(cancel))
        .route("/v1/sessions/{id}/permissions/{request_id}", post(permission))
        .route("/v1/sessions/{id}/ws", get(websocket))
        .fallback(|| async { ApiError::new(StatusCode::NOT_FOUND, "NOT_FOUND", "no such route") })
        .layer(middleware::from_fn_with_state(app.clone(), guard))
        .with_state(app)
}

/// CORS on every answer, 204 for preflights, and the bearer token.
async fn guard(State(app): State<Arc<App>>, req: Request, next: Next) -> HttpResponse {
    let mut resp = if req.method() == Method::OPTIONS {
        StatusCode::NO_CONTENT.into_response()
    } else if app.token.is_some()
        && !(req.method() == Method::GET && req.uri().path() == "/health")
        && !authorized(&app, req.headers())
    {
        ApiError::new(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", "missing or wrong Authorization: Bearer token")
            .into_response()
    } else {
        next.run(req).await
    };
    let h = resp.headers_mut();
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("Content-Type, Authorization, Last-Event-ID"),
    );
    h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, POST, DELETE, OPTIONS"));
    resp
}

fn authorized(app: &App, headers: &HeaderMap) -> bool {
    let Some(token) = &app.token else { return true };
    let given =
        headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    // Compare without an early exit on the first differing byte.
    given.is_some_and(|g| {
        g.len() == token.len() && g.bytes().zip(token.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    })
}

/// Reads a body of at most [`MAX_BODY`] bytes. A longer one is read on and
/// discarded up to [`DRAIN_LIMIT`] so the client finishes writing and sees
/// the 413 instead of a broken pipe.
async fn read_body(body: Body) -> Result<Vec<u8>, ApiError> {
    let mut stream = body.into_data_stream();
    let mut buf = Vec::new();
    let mut total = 0usize;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk
            .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "BAD_REQUEST", format!("cannot read the body: {e}")))?;
        total += chunk.len();
        if total <= MAX_BODY {
            buf.extend_from_slice(&chunk);
        } else if total > DRAIN_LIMIT {
            break;
        }
    }
    if total > MAX_BODY {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "BODY_TOO_LARGE",
            format!("request bodies are limited to {MAX_BODY} bytes"),
        ));
    }
    Ok(buf)
}

/// Reads a JSON body (see [`read_body`]); an empty body reads as `{}`.
async fn json_body<T: DeserializeOwned>(body: Body) -> Result<T, ApiError> {
    let bytes = read_body(body).await?;
    let bytes = if bytes.iter().all(u8::is_ascii_whitespace) { &b"{}"[..] } else { &bytes[..] };
    serde_json::from_slice(bytes)
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "BAD_REQUEST", format!("invalid JSON body: {e}")))
}

async fn health(State(app): State<Arc<App>>) -> axum::Json<Value> {
    axum::Json(json!({
        "ok": true,
        "version": env!("CARGO_PKG_VERSION"),
        "protocol_version": PROTOCOL_VERSION,
        "sessions": app.all().len(),
    }))
}

async fn shutdown(State(app): State<Arc<App>>) -> axum::Json<Value> {
    let app2 = app.clone();
    tokio::spawn(async move {
        // Answer first, then stop.
        tokio::time::sleep(Duration::from_millis(50)).await;
        app2.shutdown.cancel();
    });
    axum::Json(json!({"ok": true}))
}

#[derive(Deserialize)]
struct CreateSession {
    #[serde(default)]
    protocol_version: Option<String>,
    #[serde(flatten)]
    config: InitConfig,
}

async fn create_session(State(app): State<Arc<App>>, body: Body) -> Result<HttpResponse, ApiError> {
    let bytes = read_body(body).await?;
    let req: CreateSession = serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::new(StatusCode::BAD_REQUEST, "protocol_error", format!("invalid session config: {e}"))
    })?;
    if let Some(v) = &req.protocol_version
        && let Err(message) = wire::check_version(v)
    {
        return Err(ApiError::new(StatusCode::BAD_REQUEST, "protocol_version_mismatch", message));
    }
    let mut config = req.config;
    config.permission_responses.get_or_insert(true);
    let mut settings = SessionSettings::from_init(&config).map_err(|e| {
        ApiError::new(StatusCode::BAD_REQUEST, "protocol_error", format!("invalid session config: {e}"))
    })?;
    settings.max_queue = Some(MAX_QUEUE);
    settings.queue_timeout = Some(app.queue_timeout);
    let id = settings.session_id.clone();
    let (hub, outbox) = Hub::start();
    let session = Session::start(settings, outbox);
    app.sessions.lock().unwrap_or_else(|p| p.into_inner()).insert(id.clone(), Arc::new(HttpSession { session, hub }));
    Ok((StatusCode::CREATED, axum::Json(json!({"session_id": id, "protocol_version": PROTOCOL_VERSION})))
        .into_response())
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

async fn list_sessions(State(app): State<Arc<App>>) -> axum::Json<Value> {
    let sessions: Vec<Value> = app.all().iter().map(|s| status_json(s)).collect();
    axum::Json(json!({"sessions": sessions}))
}

async fn session_status(State(app): State<Arc<App>>, Path(id): Path<String>) -> Result<axum::Json<Value>, ApiError> {
    let s = app.get(&id)?;
    Ok(axum::Json(status_json(&s)))
}

async fn delete_session(State(app): State<Arc<App>>, Path(id): Path<String>) -> Result<StatusCode, ApiError> {
    let removed = app.sessions.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
    let s = removed.ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, "NOT_FOUND", format!("no session {id:?}")))?;
    s.session.shutdown().await;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize)]
struct SendBody {
    message: String,
    #[serde(default)]
    send_id: Option<String>,
}

#[derive(Deserialize)]
struct SendQuery {
    #[serde(default)]
    stream: Option<String>,
}

async fn create_send(
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
    s.session.send(send_id.clone(), body.message).map_err(|e| match e {
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
struct Withdraw {
    session: Arc<HttpSession>,
    send_id: Option<String>,
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
    replay: std::collections::VecDeque<Arc<Frame>>,
    live: broadcast::Receiver<Arc<Frame>>,
    only: Option<Arc<str>>,
    done: bool,
    withdraw: Option<Withdraw>,
}

/// SSE frames: the replay, then live frames; only those of `only` (ending
/// with its result) when given. Ends when a subscriber lags too far.
fn frame_stream(
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
                        w.send_id = None;
                    }
                }
            }
            let ev = SseEvent::default().id(frame.id.to_string()).event(frame.event).data(frame.data.as_str());
            return Some((Ok(ev), st));
        }
    })
}

async fn events(
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
    let (replay, live) = s.hub.subscribe(last).map_err(|ReplayError::Evicted| {
        ApiError::new(
            StatusCode::PRECONDITION_FAILED,
            "EVICTED",
            "the frames after Last-Event-ID were evicted from the replay buffer",
        )
    })?;
    let frames = frame_stream(replay, live, None, None);
    Ok(Sse::new(frames).keep_alive(KeepAlive::new().interval(KEEPALIVE).text("keepalive")).into_response())
}

#[derive(Deserialize)]
struct CancelBody {
    send_id: String,
}

async fn cancel(State(app): State<Arc<App>>, Path(id): Path<String>, body: Body) -> Result<HttpResponse, ApiError> {
    let s = app.get(&id)?;
    let body: CancelBody = json_body(body).await?;
    let cancelled = s.session.cancel(&body.send_id).await;
    Ok((StatusCode::ACCEPTED, axum::Json(json!({"send_id": body.send_id, "cancelled": cancelled}))).into_response())
}

#[derive(Deserialize)]
struct PermissionBody {
    decision: Decision,
}

async fn permission(
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
        Err(AnswerError::Unknown) => {
            Err(ApiError::new(StatusCode::NOT_FOUND, "NOT_FOUND", format!("no permission request {request_id:?}")))
        }
    }
}

async fn websocket(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    ws: WebSocketUpgrade,
) -> Result<HttpResponse, ApiError> {
    let s = app.get(&id)?;
    Ok(ws.max_message_size(MAX_BODY).on_upgrade(move |socket| ws_session(socket, s)))
}

/// The stdio protocol over one WebSocket: requests in, every frame of the
/// session out, plus this socket's own `status_ok` and protocol errors.
async fn ws_session(socket: WebSocket, s: Arc<HttpSession>) {
    let (mut tx, mut rx) = socket.split();
    let Ok((_, mut live)) = s.hub.subscribe(None) else { return };
    loop {
        tokio::select! {
            frame = live.recv() => match frame {
                Ok(f) => if tx.send(Message::Text(f.data.clone().into())).await.is_err() { return },
                Err(_) => { let _ = tx.send(Message::Close(None)).await; return }
            },
            msg = rx.next() => {
                let text = match msg {
                    Some(Ok(Message::Text(t))) => t,
                    Some(Ok(Message::Binary(b))) => match String::from_utf8(b.to_vec()) { Ok(t) => t.into(), Err(_) => continue },
                    Some(Ok(_)) => continue,
                    _ => return,
                };
                if let Some(reply) = ws_request(&s, text.as_bytes()).await
                    && tx.send(Message::Text(reply.into())).await.is_err()
                {
                    return;
                }
            }
        }
    }
}

/// Handles one WebSocket request; returns the direct reply, if any.
async fn ws_request(s: &HttpSession, line: &[u8]) -> Option<String> {
    let correlation = s.session.settings().correlation.clone();
    let error = |id: String, message: &str| {
        let r = SendResult::error(id, ErrorEnvelope::new(ErrorCode::ProtocolError, message), correlation.clone());
        serde_json::to_string(&wire::Response::Result(r)).ok()
    };
    let req = match wire::decode_request(line) {
        Ok(r) => r,
        Err(e) => return error(e.id, &e.message),
    };
    match req {
        WireRequest::Init(r) => error(r.id.clone(), "the session is created with POST /v1/sessions"),
        WireRequest::Shutdown(r) => error(r.id, "end the session with DELETE /v1/sessions/{id}"),
        other => s.session.handle(other).await.and_then(|reply| serde_json::to_string(&reply).ok()),
    }
}
