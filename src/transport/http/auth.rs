//! Who may call `pirn serve`, and what browsers are told.
//!
//! Owns: the token check (every request but `GET /health`, `POST
//! /webhook/{token}` and CORS preflights when a token is set), compared in
//! constant time without revealing the token's length, and preflights
//! answered `204 No Content` (the CORS policy is [`super::guard`]'s).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response as HttpResponse};

use super::api::ApiError;
use super::state::App;

/// Preflights get `204 No Content` (tower-http answers them `200` with an
/// empty body; the API documents 204).
pub async fn preflight_no_content(req: Request, next: Next) -> HttpResponse {
    let preflight = req.method() == Method::OPTIONS;
    let mut resp = next.run(req).await;
    if preflight && resp.status() == StatusCode::OK {
        *resp.status_mut() = StatusCode::NO_CONTENT;
    }
    resp
}

/// Refuses requests without the right token (when one is set). The token
/// may come as `Authorization: Bearer <token>`, as ACECode's
/// `X-ACECode-Token: <token>`, or, on a WebSocket upgrade (browsers cannot
/// set headers there), as `?token=<token>`.
pub async fn require_token(State(app): State<Arc<App>>, req: Request, next: Next) -> HttpResponse {
    let path = req.uri().path();
    // A webhook URL carries its own secret (stringd's local webhook).
    let webhook = req.method() == Method::POST && path.starts_with("/webhook/");
    let open = webhook || (req.method() == Method::GET && path == "/health");
    if open || authorized(app.token.as_deref(), &req) {
        next.run(req).await
    } else {
        ApiError::new(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", "missing or wrong Authorization: Bearer token")
            .into_response()
    }
}

/// True when no token is set or one of the accepted places carries it.
fn authorized(token: Option<&str>, req: &Request) -> bool {
    let Some(token) = token else { return true };
    let headers = req.headers();
    let header = |name| headers.get(name).and_then(|v: &header::HeaderValue| v.to_str().ok());
    let bearer = header(header::AUTHORIZATION.as_str()).and_then(|v| v.strip_prefix("Bearer "));
    let upgrade = header(header::UPGRADE.as_str()).is_some_and(|u| u.eq_ignore_ascii_case("websocket"));
    let query = upgrade.then(|| query_token(req.uri())).flatten();
    [bearer, header(ACECODE_TOKEN), query.as_deref()]
        .into_iter()
        .flatten()
        .any(|given| crate::secret::matches(given.as_bytes(), token.as_bytes()))
}

/// ACECode's token header.
pub(super) const ACECODE_TOKEN: &str = "x-acecode-token";

/// The `token` query parameter, percent-decoded.
fn query_token(uri: &axum::http::Uri) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Q {
        token: Option<String>,
    }
    axum::extract::Query::<Q>::try_from_uri(uri).ok()?.0.token
}
