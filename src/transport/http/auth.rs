//! Who may call `pirn serve`, and what browsers are told.
//!
//! Owns: the bearer-token check (every request but `GET /health` and CORS
//! preflights when a token is set), compared in constant time without
//! revealing the token's length, and the CORS policy (tower-http's
//! [`CorsLayer`]: any origin; preflights answered `204 No Content`).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response as HttpResponse};
use subtle::ConstantTimeEq;
use tower_http::cors::{AllowHeaders, AllowMethods, Any, CorsLayer};

use super::App;
use super::api::ApiError;

/// The CORS layer: `Access-Control-Allow-Origin: *` on every answer; the
/// headers and methods the API uses on preflights.
pub fn cors() -> CorsLayer {
    CorsLayer::new()
        .allow_origin(Any)
        .allow_headers(AllowHeaders::list([
            header::CONTENT_TYPE,
            header::AUTHORIZATION,
            header::HeaderName::from_static("last-event-id"),
        ]))
        .allow_methods(AllowMethods::list([Method::GET, Method::POST, Method::DELETE, Method::OPTIONS]))
}

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

/// Refuses requests without the right bearer token (when one is set).
pub async fn require_token(State(app): State<Arc<App>>, req: Request, next: Next) -> HttpResponse {
    let open = req.method() == Method::GET && req.uri().path() == "/health";
    if open || authorized(app.token.as_deref(), req.headers()) {
        next.run(req).await
    } else {
        ApiError::new(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", "missing or wrong Authorization: Bearer token")
            .into_response()
    }
}

/// True when no token is set or `Authorization: Bearer <token>` matches.
fn authorized(token: Option<&str>, headers: &HeaderMap) -> bool {
    let Some(token) = token else { return true };
    let given =
        headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    given.is_some_and(|g| tokens_match(g.as_bytes(), token.as_bytes()))
}

/// Constant-time comparison whose duration depends only on the length of
/// `given` (which the caller knows), never on the secret's length or
/// content: `given` is compared with the secret repeated to its length, and
/// the lengths are compared with `subtle` too.
fn tokens_match(given: &[u8], secret: &[u8]) -> bool {
    if secret.is_empty() {
        return false;
    }
    let expected: Vec<u8> = secret.iter().copied().cycle().take(given.len()).collect();
    let same_len = (given.len() as u64).ct_eq(&(secret.len() as u64));
    (given.ct_eq(&expected) & same_len).into()
}

#[cfg(test)]
mod tests {
    use super::tokens_match;

    #[test]
    fn tokens_match_only_exactly() {
        assert!(tokens_match(b"s3cret", b"s3cret"));
        for wrong in [&b""[..], b"s3cre", b"s3crets", b"s3crets3cret", b"S3cret"] {
            assert!(!tokens_match(wrong, b"s3cret"), "{wrong:?}");
        }
        assert!(!tokens_match(b"", b""));
    }
}
