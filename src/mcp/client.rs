//! MCP servers as tool sources: `init.config.mcp_servers` (0.3.0).
//!
//! Owns: starting each server at init with the official SDK (`rmcp`;
//! reaching one is `connect`'s: a stdio server as a child process in its
//! own process group under pirn's tool supervisor, so it dies with pirn, or
//! a Streamable HTTP server); listing its tools; naming them
//! `mcp__<server>__<tool>` (cut to the 64 characters chat-completions
//! allows); calling them with a per-call timeout and cancellation (a
//! cancelled call sends `notifications/cancelled`); and killing every stdio
//! server when the session ends ([`McpTools`] on drop).
//!
//! A tool is advertised only when an entry of `init.config.tools` names it,
//! exactly or as a glob (`mcp__fs__*`). A server that cannot start or list
//! its tools fails the init with an error naming it.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use globset::{Glob, GlobSetBuilder};
use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, CancelledNotificationParam, ClientRequest, ContentBlock};
use rmcp::service::{PeerRequestOptions, ServiceError};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

pub use super::connect::CALL_TIMEOUT;
use super::connect::{Server, connect, connect_hosted, kill_group};
use crate::tools::ToolOutput;
use crate::wire::McpServerConfig;

/// Prefix of every MCP tool name the model sees.
pub const PREFIX: &str = "mcp__";
/// Longest wait for a server to start and answer `initialize` and
/// `tools/list`.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);
/// chat-completions function names: `^[a-zA-Z0-9_-]{1,64}$`.
const MAX_NAME: usize = 64;

/// Why the MCP servers could not be started (fails the init).
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("config.mcp_servers: {0}")]
    Config(String),
    #[error("MCP server {server:?}: {reason}")]
    Server { server: String, reason: String },
}

/// One advertised MCP tool.
#[derive(Debug, Clone)]
pub struct McpTool {
    server: usize,
    /// The tool's name on its server.
    remote: String,
    /// Its chat-completions `tools` entry.
    spec: Value,
    /// The server marks it read-only (`annotations.readOnlyHint`).
    pub read_only: bool,
}

/// A session's MCP servers and the tools they advertise.
pub struct McpTools {
    servers: Vec<Server>,
    tools: BTreeMap<String, McpTool>,
}

impl std::fmt::Debug for McpTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTools").field("tools", &self.tools.keys().collect::<Vec<_>>()).finish()
    }
}

impl McpTools {
    /// Starts every server (one after the other), lists its tools and keeps
    /// those `enabled` names (exact names or globs). `plan` hides tools not
    /// marked read-only. Errors name the server and what failed.
    /// `hosted`: servers in the client's process (see [`super::bridge`]),
    /// started after `configs`.
    pub async fn start(
        configs: &[McpServerConfig],
        hosted: Option<&super::bridge::ClientServers>,
        enabled: &[String],
        workspace: &Path,
        plan: bool,
        children: (&crate::sandbox::Sandbox, &[String]),
    ) -> Result<McpTools, McpError> {
        let mut patterns = GlobSetBuilder::new();
        for e in enabled.iter().filter(|e| e.starts_with(PREFIX)) {
            patterns.add(Glob::new(e).map_err(|err| McpError::Config(format!("tools entry {e:?}: {err}")))?);
        }
        let patterns = patterns.build().map_err(|e| McpError::Config(e.to_string()))?;
        let mut out = McpTools { servers: Vec::new(), tools: BTreeMap::new() };
        let hosted_names = hosted.map(|h| &h.names[..]).unwrap_or_default();
        let sources = configs.iter().map(Ok).chain(hosted_names.iter().map(Err));
        for source in sources {
            let name = match source {
                Ok(config) => &config.name,
                Err(name) => name,
            };
            check_name(name)?;
            if out.servers.iter().any(|s| s.name == *name) {
                return Err(McpError::Config(format!("two servers are named {name:?}")));
            }
            let fail = |reason: String| McpError::Server { server: name.clone(), reason };
            let connecting = async {
                match (source, hosted) {
                    (Ok(config), _) => connect(config, workspace, children).await,
                    (Err(name), Some(h)) => connect_hosted(name, h).await,
                    (Err(_), None) => Err("no client hosts it".to_owned()),
                }
            };
            let server = tokio::time::timeout(START_TIMEOUT, connecting)
                .await
                .map_err(|_| fail(format!("no answer within {} s", START_TIMEOUT.as_secs())))?
                .map_err(fail)?;
            let listed = tokio::time::timeout(START_TIMEOUT, server.service.peer().list_all_tools()).await;
            let listed = match listed {
                Ok(Ok(tools)) => tools,
                Ok(Err(e)) => return Err(fail(format!("tools/list: {e}"))),
                Err(_) => return Err(fail("tools/list: no answer".into())),
            };
            let index = out.servers.len();
            out.servers.push(server);
            for tool in listed {
                let name = model_name(name, &tool.name);
                let read_only = tool.annotations.as_ref().and_then(|a| a.read_only_hint).unwrap_or(false);
                if !patterns.is_match(&name) || (plan && !read_only) {
                    continue;
                }
                let description = tool.description.as_deref().unwrap_or("").to_owned();
                let spec = json!({"type": "function", "function": {
                    "name": name,
                    "description": description,
                    "parameters": Value::Object((*tool.input_schema).clone()),
                }});
                out.tools.insert(name, McpTool { server: index, remote: tool.name.to_string(), spec, read_only });
            }
        }
        Ok(out)
    }

    /// The advertised tools' chat-completions entries, by name.
    pub fn specs(&self) -> Vec<Value> {
        self.tools.values().map(|t| t.spec.clone()).collect()
    }

    /// The advertised tool named `name` (as the model sees it).
    pub fn get(&self, name: &str) -> Option<&McpTool> {
        self.tools.get(name)
    }

    /// Calls `name` with JSON `arguments`. Never fails the send: an unknown
    /// tool, bad arguments, a server error, a timeout or a cancel all come
    /// back as error outputs for the model. A cancel (or the timeout) sends
    /// the server `notifications/cancelled`.
    ///
    /// With `live`, the call asks the server for progress and each
    /// notification goes there as a line (see [`super::progress`]).
    pub async fn call(
        &self,
        name: &str,
        arguments: &str,
        cancel: &CancellationToken,
        live: Option<tokio::sync::mpsc::Sender<crate::tools::live::OutputDelta>>,
    ) -> ToolOutput {
        let Some(tool) = self.tools.get(name) else {
            return ToolOutput::error(format!("unknown tool {name:?}"));
        };
        let server = &self.servers[tool.server];
        let arguments = match serde_json::from_str::<Value>(if arguments.trim().is_empty() { "{}" } else { arguments })
        {
            Ok(Value::Object(map)) => map,
            Ok(_) | Err(_) => return ToolOutput::error("invalid arguments: send a JSON object"),
        };
        let mut params = CallToolRequestParams::new(tool.remote.clone());
        params.arguments = Some(arguments);
        let request = ClientRequest::CallToolRequest(rmcp::model::Request::new(params));
        let peer = server.service.peer();
        let handle =
            match peer.send_cancellable_request(request, PeerRequestOptions::with_timeout(server.timeout)).await {
                Ok(h) => h,
                Err(e) => return ToolOutput::error(format!("MCP server {:?}: {e}", server.name)),
            };
        // However this call ends early (a cancel, or the send's future
        // dropped), the server hears `notifications/cancelled`.
        let mut guard = CancelOnDrop(Some((handle.peer.clone(), handle.id.clone())));
        // rmcp gives every request a progress token.
        let updates = match live {
            Some(tx) => Some((server.service.service().dispatcher.subscribe(handle.progress_token.clone()).await, tx)),
            None => None,
        };
        let answer = tokio::select! {
            answer = super::progress::follow(handle.await_response(), updates) => answer,
            () = cancel.cancelled() => return ToolOutput::error("cancelled"),
        };
        guard.0 = None;
        match answer {
            Ok(rmcp::model::ServerResult::CallToolResult(result)) => {
                let text = result.content.iter().map(content_text).collect::<Vec<_>>().join("\n");
                let text = match (&result.structured_content, text.is_empty()) {
                    (Some(structured), true) => structured.to_string(),
                    _ => text,
                };
                if result.is_error == Some(true) { ToolOutput::error(text) } else { ToolOutput::ok(text) }
            }
            Ok(other) => ToolOutput::error(format!("MCP server {:?} answered {other:?}", server.name)),
            Err(ServiceError::Timeout { timeout }) => {
                let ms = timeout.as_millis();
                ToolOutput::error(format!("MCP tool {name} did not answer within {ms} ms, so it was cancelled"))
            }
            Err(ServiceError::McpError(e)) => ToolOutput::error(format!("MCP tool {name}: {}", e.message)),
            Err(e) => ToolOutput::error(format!("MCP server {:?}: {e}", server.name)),
        }
    }

    /// Kills every stdio server's process group (idempotent; also on drop).
    pub fn shutdown(&self) {
        for s in &self.servers {
            s.service.cancellation_token().cancel();
            kill_group(s.group);
        }
    }
}

impl Drop for McpTools {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Sends `notifications/cancelled` for a request still in flight when
/// dropped (see [`McpTools::call`]).
struct CancelOnDrop(Option<(rmcp::Peer<RoleClient>, rmcp::model::RequestId)>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some((peer, id)) = self.0.take()
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            rt.spawn(async move {
                let note = CancelledNotificationParam::new(Some(id), Some("cancelled".into()));
                if let Err(e) = peer.notify_cancelled(note).await {
                    tracing::debug!("MCP cancel notification not sent: {e}");
                }
            });
        }
    }
}

/// Server names: 1 to 20 of `[A-Za-z0-9_-]`, so tool names stay legible.
fn check_name(name: &str) -> Result<(), McpError> {
    let ok = !name.is_empty()
        && name.len() <= 20
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !name.contains("__");
    if ok {
        Ok(())
    } else {
        Err(McpError::Config(format!("server name {name:?} must be 1 to 20 letters, digits, '_' or '-' (no \"__\")")))
    }
}

/// `mcp__<server>__<tool>`, characters outside `[A-Za-z0-9_-]` as `_`, at
/// most 64 characters.
pub fn model_name(server: &str, tool: &str) -> String {
    let clean: String = tool.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    let mut name = format!("{PREFIX}{server}__{clean}");
    name.truncate(MAX_NAME);
    name
}

/// What the model reads of one content block.
fn content_text(block: &ContentBlock) -> String {
    match serde_json::to_value(block) {
        Ok(v) if v["type"] == "text" => v["text"].as_str().unwrap_or("").to_owned(),
        Ok(v) => match v["type"].as_str() {
            Some("image") | Some("audio") => {
                format!("[{} content, {}]", v["type"], v["mimeType"].as_str().unwrap_or("?"))
            }
            Some("resource") => v["resource"]["text"]
                .as_str()
                .map_or_else(|| format!("[resource {}]", v["resource"]["uri"].as_str().unwrap_or("?")), str::to_owned),
            Some("resource_link") => format!("[resource link {}]", v["uri"].as_str().unwrap_or("?")),
            _ => v.to_string(),
        },
        Err(e) => format!("[unreadable content: {e}]"),
    }
}

/// Shared handle kept by the session's configuration.
pub type SharedMcpTools = Arc<McpTools>;

#[cfg(test)]
mod tests;
