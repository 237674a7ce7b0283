//! What a web page could make a browser send to `pirn serve`, refused
//! before any route runs.
//!
//! Owns: the [`Trust`] of the daemon's HTTP boundary and the middleware
//! ([`check`]) that holds it on every route, WebSocket upgrades, `/mcp`,
//! terminals and consoles included:
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

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tower_http::cors::{AllowHeaders, AllowMethods, AllowOrigin, CorsLayer};

use super::App;
use super::api::ApiError;
use crate::sandbox::SandboxMode;
use crate::wire::InitConfig;

/// Who may reach the daemon over HTTP and what its sessions may ask for.
#[derive(Debug, Clone, Default)]
pub struct Trust {
    /// Host names accepted besides the loopback ones (`--allow-host`),
    /// lower-case, without port.
    pub hosts: Vec<String>,
    /// Origins accepted (`--allow-origin`); `*` accepts any.
    pub origins: Vec<String>,
    /// Commands a session's `mcp_servers` may start (`--allow-mcp-command`,
    /// exact match).
    pub mcp_commands: Vec<String>,
    /// Hook command lines a session's `hooks` may run
    /// (`--allow-hook-command`, exact match).
    pub hook_commands: Vec<String>,
    /// The sessions' default sandbox (`--sandbox`), which a session may
    /// narrow but not widen.
    pub sandbox: SandboxMode,
    /// False (`--no-network`): no session's children may use TCP.
    pub sandbox_network: bool,
    /// Names a session may list in `env_passthrough` (`--env-passthrough`).
    pub env_passthrough: Vec<String>,
}

impl Trust {
    /// True when `host` (a `Host` header value) names this daemon.
    fn host_ok(&self, host: &str, bind: IpAddr) -> bool {
        let name = host_name(host);
        let bound = match bind {
            IpAddr::V6(v6) => format!("[{v6}]"),
            v4 => v4.to_string(),
        };
        matches!(name.as_str(), "localhost" | "127.0.0.1" | "[::1]")
            || (!bind.is_loopback() && name == bound)
            // Bound to every address: any address of this machine, named
            // as an IP (a rebound DNS name is still refused).
            || (bind.is_unspecified() && name.trim_matches(['[', ']']).parse::<IpAddr>().is_ok())
            || self.hosts.contains(&name)
    }

    fn any_origin(&self) -> bool {
        self.origins.iter().any(|o| o == "*")
    }

    fn origin_ok(&self, origin: &str) -> bool {
        self.any_origin() || self.origins.iter().any(|o| o.eq_ignore_ascii_case(origin.trim_end_matches('/')))
    }

    /// Checks and completes a session config that arrived over HTTP: an
    /// MCP server `command` must be listed in [`Trust::mcp_commands`], a
    /// hook's command in [`Trust::hook_commands`];
    /// the sandbox defaults to the daemon's and may only be narrowed
    /// (`off` < `workspace-write` < `read-only`; network only when the
    /// daemon allows it; no extra writable roots); `env_passthrough` names
    /// only what the daemon passes. Errors: the message of a 400.
    pub fn admit(&self, config: &mut InitConfig) -> Result<(), String> {
        if let Some(hooks) = &config.hooks {
            for command in crate::hooks::Hooks::commands(hooks) {
                if !self.hook_commands.iter().any(|c| c == command) {
                    return Err(format!(
                        "hooks: running the command {command:?} over HTTP needs pirn serve --allow-hook-command {command:?}"
                    ));
                }
            }
        }
        for server in config.mcp_servers.iter().flatten() {
            if let Some(command) = &server.command
                && !self.mcp_commands.iter().any(|c| c == command)
            {
                return Err(format!(
                    "mcp_servers[{:?}]: starting the command {command:?} over HTTP needs pirn serve \
                     --allow-mcp-command {command:?}",
                    server.name
                ));
            }
        }
        match config.sandbox {
            None => config.sandbox = Some(self.sandbox),
            Some(asked) if asked < self.sandbox => {
                return Err(format!(
                    "sandbox {:?} is looser than this daemon's {:?}; over HTTP a session may only narrow it",
                    asked.name(),
                    self.sandbox.name()
                ));
            }
            Some(_) => {}
        }
        match config.sandbox_network {
            Some(true) if !self.sandbox_network => {
                return Err("sandbox_network: this daemon runs with --no-network".to_owned());
            }
            None => config.sandbox_network = Some(self.sandbox_network),
            _ => {}
        }
        if config.sandbox_writable_roots.as_ref().is_some_and(|r| !r.is_empty()) {
            return Err("sandbox_writable_roots cannot be set over HTTP (it widens the sandbox)".to_owned());
        }
        for name in config.env_passthrough.iter().flatten() {
            if !self.env_passthrough.contains(name) {
                return Err(format!("env_passthrough {name:?} needs pirn serve --env-passthrough {name}"));
            }
        }
        Ok(())
    }
}

/// The name part of a `Host` value, lower-case: `[::1]:80` → `[::1]`,
/// `LocalHost.:3923` → `localhost`.
pub(crate) fn host_name(host: &str) -> String {
    let host = host.trim();
    let name = if host.starts_with('[') {
        host.find(']').map_or(host, |end| &host[..=end])
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
            _ => host,
        }
    };
    name.trim_end_matches('.').to_ascii_lowercase()
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names() {
        assert_eq!(host_name("127.0.0.1:3923"), "127.0.0.1");
        assert_eq!(host_name("[::1]:80"), "[::1]");
        assert_eq!(host_name("LocalHost."), "localhost");
        let t = Trust { hosts: vec!["pirn.internal".into()], ..Trust::default() };
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        assert!(t.host_ok("localhost:1", lo) && t.host_ok("pirn.internal:9", lo));
        assert!(!t.host_ok("attacker.example:3923", lo) && !t.host_ok("127.0.0.1.nip.io", lo));
        assert!(t.host_ok("10.0.0.5:1", "10.0.0.5".parse().unwrap()));
    }

    #[test]
    fn sandbox_may_only_narrow_over_http() {
        let t = Trust { sandbox: SandboxMode::WorkspaceWrite, sandbox_network: true, ..Trust::default() };
        let mut c = InitConfig { sandbox: Some(SandboxMode::Off), ..InitConfig::default() };
        assert!(t.admit(&mut c).is_err());
        let mut c = InitConfig { sandbox: Some(SandboxMode::ReadOnly), ..InitConfig::default() };
        assert!(t.admit(&mut c).is_ok());
        let mut c = InitConfig::default();
        t.admit(&mut c).unwrap();
        assert_eq!(c.sandbox, Some(SandboxMode::WorkspaceWrite));
    }
}
