//! Reaching one MCP server: a stdio server started as a child in its own
//! process group under pirn's supervisor and sandbox (its stderr's tail
//! kept for an init error), a Streamable HTTP server, or a server in the
//! client's own process (`bridge`); and killing a stdio server's group.

use std::path::Path;
use std::time::Duration;

use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};

use crate::wire::McpServerConfig;

/// Default longest wait for one tool call.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// One running server: its name, the rmcp client service, the process
/// group of a stdio server (its supervisor's pid) and its call timeout.
pub(super) struct Server {
    pub(super) name: String,
    pub(super) service: RunningService<RoleClient, super::progress::Listener>,
    /// Process group of a stdio server (its supervisor's pid).
    pub(super) group: Option<i32>,
    pub(super) timeout: Duration,
}

/// SIGKILLs a stdio server's process group (its supervisor's), if any.
pub(super) fn kill_group(group: Option<i32>) {
    if let Some(g) = group {
        // SAFETY: killpg has no memory-safety preconditions.
        unsafe {
            libc::killpg(g, libc::SIGKILL);
        }
    }
}

/// Starts (stdio: under the session's sandbox, from the allowlisted
/// environment plus the server's own `env`) or reaches (HTTP) one server.
pub(super) async fn connect(
    config: &McpServerConfig,
    workspace: &Path,
    (sandbox, passthrough): (&crate::sandbox::Sandbox, &[String]),
) -> Result<Server, String> {
    let timeout = config.timeout_ms.map_or(CALL_TIMEOUT, Duration::from_millis);
    match (&config.command, &config.url) {
        (Some(command), None) => {
            let mut cmd = tokio::process::Command::new(command);
            if let Err(e) = sandbox.confine(&mut cmd, passthrough) {
                return Err(format!("not started: the {} sandbox cannot be set up: {e}", sandbox.mode.name()));
            }
            cmd.envs(&config.env).args(&config.args).current_dir(workspace).process_group(0).kill_on_drop(true);
            crate::tools::supervisor::supervise(&mut cmd);
            let (transport, stderr) = rmcp::transport::TokioChildProcess::builder(cmd)
                .stderr(std::process::Stdio::piped())
                .spawn()
                .map_err(|e| format!("cannot start {command:?}: {e}"))?;
            let tail = stderr.map(|err| keep_tail(err, config.name.clone()));
            let group = transport.id().map(|p| p as i32);
            let served = super::progress::Listener::default().serve(transport).await;
            let service = match served {
                Ok(service) => service,
                Err(e) => {
                    kill_group(group);
                    // What the server said before it failed helps more than "connection closed".
                    let said = match tail {
                        Some(t) => tokio::time::timeout(Duration::from_secs(2), t)
                            .await
                            .ok()
                            .and_then(Result::ok)
                            .unwrap_or_default(),
                        None => String::new(),
                    };
                    let said = said.trim();
                    return Err(if said.is_empty() {
                        format!("initialize: {e}")
                    } else {
                        format!("initialize: {e}; its stderr ends: {said}")
                    });
                }
            };
            Ok(Server { name: config.name.clone(), service, group, timeout })
        }
        (None, Some(url)) => {
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
            let mut headers = std::collections::HashMap::new();
            for (k, v) in &config.headers {
                let name =
                    reqwest::header::HeaderName::from_bytes(k.as_bytes()).map_err(|e| format!("header {k:?}: {e}"))?;
                let value = reqwest::header::HeaderValue::from_str(v).map_err(|e| format!("header {k:?}: {e}"))?;
                headers.insert(name, value);
            }
            let _ = rustls::crypto::ring::default_provider().install_default();
            let client = reqwest::Client::builder().build().map_err(|e| format!("HTTP client: {e}"))?;
            let transport = rmcp::transport::StreamableHttpClientTransport::with_client(
                client,
                StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(headers),
            );
            let service = super::progress::Listener::default()
                .serve(transport)
                .await
                .map_err(|e| format!("initialize at {url}: {e}"))?;
            Ok(Server { name: config.name.clone(), service, group: None, timeout })
        }
        _ => Err("give either command (stdio) or url (Streamable HTTP)".into()),
    }
}

/// Reaches server `name` of the client that hosts it.
pub(super) async fn connect_hosted(name: &str, hosted: &super::bridge::ClientServers) -> Result<Server, String> {
    let transport = super::bridge::Bridge::new(name, hosted.client.clone());
    let service = super::progress::Listener::default()
        .serve(transport)
        .await
        .map_err(|e| format!("initialize (in the client): {e}"))?;
    Ok(Server { name: name.to_owned(), service, group: None, timeout: CALL_TIMEOUT })
}

/// Bytes of a stdio server's stderr kept for an init error.
const STDERR_TAIL: usize = 2048;

/// Reads a stdio server's stderr to its end (so the server never blocks on
/// a full pipe), logging it at debug level; resolves to its last
/// [`STDERR_TAIL`] bytes.
fn keep_tail(mut err: tokio::process::ChildStderr, server: String) -> tokio::task::JoinHandle<String> {
    tokio::spawn(async move {
        use tokio::io::AsyncReadExt;
        let mut tail: Vec<u8> = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = err.read(&mut buf).await {
            tracing::debug!(server, "MCP server stderr: {}", String::from_utf8_lossy(&buf[..n]).trim_end());
            tail.extend_from_slice(&buf[..n]);
            if tail.len() > STDERR_TAIL {
                tail.drain(..tail.len() - STDERR_TAIL);
            }
        }
        String::from_utf8_lossy(&tail).into_owned()
    })
}
