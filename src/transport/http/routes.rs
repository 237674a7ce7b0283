//! The route table of `pirn serve`: every path and method, the handler
//! that serves it, and the layers every request passes (outermost first:
//! Host and Origin, CORS preflights, CORS, the token, the group's routing).
//! [`ROUTES`] is the same list as data; a test checks it against the
//! generated OpenAPI document.

use std::sync::Arc;

use axum::Router;
use axum::middleware;
use axum::routing::{get, post};

use super::api::ApiError;
use super::facades::{console, inbox, mcp, shell, webkit};
use super::routing::group;
use super::state::App;
use super::{auth, events, guard, history, openapi, sends, sessions, ws};

/// Every route, as `protocol/openapi.json` lists it (checked by a test).
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/health"),
    ("POST", "/shutdown"),
    ("GET", "/openapi.json"),
    ("GET", "/v1/hosts"),
    ("GET", "/v1/sessions"),
    ("POST", "/v1/sessions"),
    ("GET", "/v1/sessions/{id}"),
    ("DELETE", "/v1/sessions/{id}"),
    ("POST", "/v1/sessions/{id}/fork"),
    ("POST", "/v1/sessions/{id}/sends"),
    ("GET", "/v1/sessions/{id}/events"),
    ("GET", "/v1/sessions/{id}/messages"),
    ("POST", "/v1/sessions/{id}/cancel"),
    ("POST", "/v1/sessions/{id}/compact"),
    ("POST", "/v1/sessions/{id}/rewind"),
    ("POST", "/v1/sessions/{id}/steer"),
    ("POST", "/v1/sessions/{id}/permissions/{request_id}"),
    ("GET", "/v1/sessions/{id}/ws"),
    ("GET", "/v1/sessions/{id}/webhook"),
    ("POST", "/v1/sessions/{id}/webhook"),
    ("POST", "/webhook/{token}"),
    ("GET", "/v1/sessions/{id}/inbox"),
    ("POST", "/v1/sessions/{id}/inbox/{event_id}/ack"),
    ("GET", "/v1/events/stream"),
    ("POST", "/agent-webkit/sessions"),
    ("GET", "/agent-webkit/sessions/{id}/stream"),
    ("POST", "/agent-webkit/sessions/{id}/input"),
    ("DELETE", "/agent-webkit/sessions/{id}"),
    ("POST", "/mcp"),
    ("GET", "/mcp"),
    ("DELETE", "/mcp"),
    ("GET", "/agents/{agent_id}/shell"),
    ("GET", "/api/health"),
    ("GET", "/api/pty"),
    ("POST", "/api/pty"),
    ("DELETE", "/api/pty/{id}"),
    ("POST", "/api/pty/{id}/resize"),
    ("POST", "/api/pty/{id}/title"),
    ("GET", "/ws/pty/{id}"),
];

/// The daemon's router over `app`.
pub(super) fn router(app: Arc<App>) -> Router {
    let mut router = Router::new();
    if app.terminals.is_some() {
        router = router
            .route("/agents/{agent_id}/shell", get(shell::shell))
            .route("/api/pty", get(console::list).post(console::create))
            .route("/api/pty/{id}", axum::routing::delete(console::delete))
            .route("/api/pty/{id}/resize", post(console::resize))
            .route("/api/pty/{id}/title", post(console::title))
            .route("/ws/pty/{id}", get(console::websocket));
    }
    router
        .route("/health", get(sessions::health))
        .route("/openapi.json", get(openapi::openapi_json))
        .route("/v1/hosts", get(group::hosts))
        .route("/api/health", get(console::health))
        .route("/shutdown", post(sessions::shutdown))
        .route("/v1/sessions", get(sessions::list_sessions).post(sessions::create_session))
        .route("/v1/sessions/{id}/fork", post(sessions::fork_session))
        .route("/v1/sessions/{id}", get(sessions::session_status).delete(sessions::delete_session))
        .route("/v1/sessions/{id}/sends", post(sends::create_send))
        .route("/v1/sessions/{id}/events", get(events::events))
        .route("/v1/sessions/{id}/messages", get(history::messages))
        .route("/v1/sessions/{id}/cancel", post(sends::cancel))
        .route("/v1/sessions/{id}/compact", post(sends::compact))
        .route("/v1/sessions/{id}/rewind", post(sends::rewind))
        .route("/v1/sessions/{id}/steer", post(sends::steer))
        .route("/v1/sessions/{id}/permissions/{request_id}", post(sends::permission))
        .route("/v1/sessions/{id}/ws", get(ws::websocket))
        .route("/v1/sessions/{id}/webhook", get(inbox::show).post(inbox::rotate))
        .route("/webhook/{token}", post(inbox::post))
        .route("/v1/sessions/{id}/inbox", get(inbox::list))
        .route("/v1/sessions/{id}/inbox/{event_id}/ack", post(inbox::ack))
        .route("/v1/events/stream", get(inbox::stream))
        .route("/agent-webkit/sessions", post(webkit::create))
        .route("/agent-webkit/sessions/{id}", axum::routing::delete(webkit::delete))
        .route("/agent-webkit/sessions/{id}/stream", get(webkit::stream))
        .route("/agent-webkit/sessions/{id}/input", post(webkit::input))
        .route_service("/mcp", mcp::service(app.clone()))
        .fallback(|| async { ApiError::not_found("no such route") })
        // After the token check: only an authorised request is forwarded.
        .layer(middleware::from_fn_with_state(app.clone(), group::route))
        .layer(middleware::from_fn_with_state(app.clone(), auth::require_token))
        .layer(guard::cors(&app.trust))
        .layer(middleware::from_fn(auth::preflight_no_content))
        // Outermost: nothing runs for a foreign Host or Origin.
        .layer(middleware::from_fn_with_state(app.clone(), guard::check))
        .with_state(app)
}
