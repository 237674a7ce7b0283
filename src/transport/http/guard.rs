//! What a web page could make a browser send to `pirn serve`, refused
//! before any route runs.
//!
//! Owns: the middleware ([`check`]) that holds the daemon's [`Trust`]
//! (defined in [`super::trust`]) on every route, WebSocket upgrades, `/mcp`,
//! terminals and consoles included, and the CORS layer ([`cors`]):
//! - **Host** must be a loopback name (`localhost`, `127.0.0.1`, `[::1]`,
//!   any port), the bind address when bound off loopback (any IP address
//!   when bound to all of them), or a name given
//!   with `--allow-host`: a DNS-rebound name reaching a loopback port is
//!   refused (403);
//! - **Origin**, when a request carries one (browsers do; curl, SDKs and
//!   orchestrators do not), must be listed with `--allow-origin` (`*`
//!   allows any, stringd's permissive CORS on purpose): 403 otherwise, and
//!   CORS headers go only to listed origins ([`cors`]);
//! - a **POST body** must be `application/json` (415), except a webhook
//!   delivery (`POST /webhook/{token}`), which takes text as stringd
//!   specifies: a cross-origin "simple request" cannot be JSON.
//!
//! What a trusted client may put in a session's config over HTTP (MCP
//! commands, the sandbox, the environment) is checked where sessions open
//! ([`Trust::admit`]).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tower_http::cors::{AllowHeaders, AllowMethods, AllowOrigin, CorsLayer};

use super::api::ApiError;
use super::state::App;

/// The trust this guard holds, where `serve`'s options name it
/// (`guard::Trust`).
pub use super::trust::Trust;

/// Refuses a request with a foreign Host (403), an unlisted Origin (403)
/// or a POST body that is not JSON (415), before anything runs.
pub async fn check(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    let text = |name: header::HeaderName| headers.get(name).map(|v| v.to_str().unwrap_or("\u{fffd}").to_owned());
    if let Some(host) = text(header::HOST)
        && !app.trust.host_ok(&host, app.bind)
    {
        let msg = format!("Host {host:?} is not this daemon's (start pirn serve with --allow-host NAME to accept it)");
        return ApiError::new(StatusCode::FORBIDDEN, "FORBIDDEN_HOST", msg).into_response();
    }
    if let Some(origin) = text(header::ORIGIN)
        && !app.trust.origin_ok(&origin)
    {
        let msg = format!("Origin {origin:?} is not allowed (start pirn serve with --allow-origin ORIGIN to allow it)");
        return ApiError::new(StatusCode::FORBIDDEN, "FORBIDDEN_ORIGIN", msg).into_response();
    }
    if req.method() == Method::POST && !req.uri().path().starts_with("/webhook/") {
        let has_body = headers.contains_key(header::TRANSFER_ENCODING)
            || text(header::CONTENT_LENGTH).is_some_and(|n| n.trim() != "0");
        let kind = text(header::CONTENT_TYPE);
        let json = kind.as_deref().is_some_and(|k| {
            k.split(';').next().is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
        });
        if (has_body || kind.is_some()) && !json {
            let shown = kind.as_deref().unwrap_or("none");
            let msg = format!("a POST body must be sent with Content-Type: application/json (got {shown})");
            return ApiError::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, "UNSUPPORTED_MEDIA_TYPE", msg).into_response();
        }
    }
    next.run(req).await
}

/// The CORS layer for the allowed origins: none by default (no CORS
/// header is ever sent), the listed ones, or any with `*`.
pub fn cors(trust: &Trust) -> CorsLayer {
    let origins = if trust.any_origin() {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(trust.origins.iter().filter_map(|o| HeaderValue::from_str(o.trim_end_matches('/')).ok()))
    };
    CorsLayer::new()
        .allow_origin(origins)
        .allow_headers(AllowHeaders::list([
            header::CONTENT_TYPE,
            header::AUTHORIZATION,
            header::HeaderName::from_static("last-event-id"),
            header::HeaderName::from_static(super::auth::ACECODE_TOKEN),
            header::HeaderName::from_static("x-agent-id"),
        ]))
        .allow_methods(AllowMethods::list([Method::GET, Method::POST, Method::DELETE, Method::OPTIONS]))
}
