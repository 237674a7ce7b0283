//! `POST/GET/DELETE /mcp`: `pirn serve` as an MCP server (Streamable HTTP,
//! JSON-RPC 2.0, served by the official SDK's `StreamableHttpService`), so
//! any MCP client can hand pirn a task.
//!
//! Owns: the two tools and how a call becomes a send.
//! - `pirn_run {prompt, cwd?, tools?, model?}` opens a fresh session (the
//!   same sessions as `POST /v1/sessions`, listed and followed the same
//!   way), runs one send, returns its answer and closes the session (its
//!   log is kept);
//! - `pirn_send {session_id, message}` continues a session: a live one
//!   stays live; a stored one is resumed for the send and closed again.
//!
//! While the send runs, its streamed text goes out as
//! `notifications/progress` (when the call carries a progress token); a
//! client's `notifications/cancelled` cancels the send. The answer is the
//! tool result's text; `structuredContent` adds `session_id`, `send_id`
//! and `stop_reason`. A send that ends in an error is an `isError` result.
//! The daemon's token applies as on every route.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, Implementation, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::config::DEFAULT_SYSTEM_PROMPT;
use crate::transport::http::sessions;
use crate::transport::http::state::{App, HttpSession};
use crate::wire::InitConfig;
use crate::wire::http::mcp::RunOutput;

/// `pirn_run`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct McpRunArgs {
    /// The task for the agent.
    pub prompt: String,
    /// Workspace directory (default: the daemon's working directory).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Tools the agent may use (default: all six built-in tools).
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// Model name (default: PIRN_MODEL, else "local").
    #[serde(default)]
    pub model: Option<String>,
}

/// `pirn_send`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SendArgs {
    /// A live session, e.g. the `session_id` a `pirn_run` returned.
    pub session_id: String,
    /// The next user message.
    pub message: String,
}

/// The tower service mounted at `/mcp`.
pub fn service(app: Arc<App>) -> StreamableHttpService<PirnMcp, LocalSessionManager> {
    let mut config = StreamableHttpServerConfig::default();
    // rmcp's own DNS-rebinding check, on the same names as the daemon's
    // guard (which runs first and answers with pirn's JSON error).
    let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    hosts.extend(app.trust.hosts.iter().cloned());
    if !app.bind.is_loopback() {
        hosts.push(app.bind.to_string());
    }
    config = config.with_allowed_hosts(hosts);
    config.cancellation_token = app.shutdown.child_token();
    StreamableHttpService::new(move || Ok(PirnMcp { app: app.clone() }), Arc::default(), config)
}

/// The MCP server handler.
#[derive(Clone)]
pub struct PirnMcp {
    app: Arc<App>,
}

fn tool<A: JsonSchema>(name: &'static str, description: &'static str) -> Tool {
    let Value::Object(schema) = crate::tools::schema_of::<A>() else { unreachable!("object schemas") };
    Tool::new(name, description, Arc::new(schema))
}

impl ServerHandler for PirnMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("pirn", env!("CARGO_PKG_VERSION")))
            .with_instructions("pirn, a coding agent: pirn_run hands it a task in a workspace; pirn_send continues.")
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![
            tool::<McpRunArgs>(
                "pirn_run",
                "Run a coding agent on a task in a fresh session; returns its answer and the session_id to continue with pirn_send.",
            ),
            tool::<SendArgs>("pirn_send", "Send the next message to a pirn session and return the agent's answer."),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        let bad = |e: serde_json::Error| ErrorData::invalid_params(format!("{}: {e}", request.name), None);
        // (session, message, whether this call opened it and closes it after)
        let (session, message, ours) = match &*request.name {
            "pirn_run" => {
                let a: McpRunArgs = serde_json::from_value(args).map_err(bad)?;
                let all = || crate::tools::ALL_TOOLS.iter().map(|t| (*t).to_owned()).collect();
                let config = InitConfig {
                    model: crate::environment::model_or_default(a.model),
                    system_prompt: DEFAULT_SYSTEM_PROMPT.to_owned(),
                    tools: a.tools.unwrap_or_else(all),
                    cwd: a.cwd,
                    // Nobody answers permission requests over MCP.
                    permission_responses: Some(false),
                    ..InitConfig::default()
                };
                let opened = sessions::open_session(&self.app, crate::wire::PROTOCOL_VERSION, config).await;
                (opened.map_err(|e| ErrorData::invalid_params(e.message, None))?, a.prompt, true)
            }
            "pirn_send" => {
                let a: SendArgs = serde_json::from_value(args).map_err(bad)?;
                match self.app.get(&a.session_id) {
                    Ok(s) => (s, a.message, false),
                    Err(_) => {
                        let resumed = sessions::resume_stored(&self.app, &a.session_id).await;
                        (resumed.map_err(|e| ErrorData::invalid_params(e.message, None))?, a.message, true)
                    }
                }
            }
            other => return Err(ErrorData::invalid_params(format!("unknown tool {other:?}"), None)),
        };
        let result = run_send(&session, message, &context).await;
        if ours {
            // A session a call opened ends with the call: no session (and no
            // open log file) is left behind per call.
            let id = session.session.config().session_id.clone();
            drop(session);
            sessions::close_session(&self.app, &id).await;
        }
        Ok(result.into())
    }
}

/// Runs one send on `s` and turns its result into a tool result.
async fn run_send(s: &Arc<HttpSession>, message: String, context: &RequestContext<RoleServer>) -> CallToolResult {
    let send_id = uuid::Uuid::new_v4().to_string();
    let session_id = s.session.config().session_id.clone();
    let Ok((_, mut live)) = s.hub.subscribe(None) else {
        return CallToolResult::error(vec![ContentBlock::text("the session is closing")]);
    };
    if let Err(e) = s.session.send(send_id.clone(), message) {
        return CallToolResult::error(vec![ContentBlock::text(format!("send refused: {e}"))]);
    }
    let progress = context.meta.get_progress_token();
    let (mut step, mut cancelled, mut last) = (0u32, false, 0u64);
    let mut replay = std::collections::VecDeque::new();
    loop {
        let frame = match replay.pop_front() {
            Some(f) => Ok(f),
            None => tokio::select! {
                f = live.recv() => f,
                // The client cancelled the call: cancel the send; its result follows.
                () = context.ct.cancelled(), if !cancelled => {
                    cancelled = true;
                    s.session.cancel(&send_id).await;
                    continue;
                }
            },
        };
        let frame = match frame {
            Ok(f) => f,
            // Too slow for the live feed: pick up after the last frame seen
            // from the hub's ring, so the result cannot be missed.
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => match s.hub.subscribe(Some(last)) {
                Ok((missed, again)) => {
                    (replay, live) = (missed.into(), again);
                    continue;
                }
                Err(e) => {
                    return CallToolResult::error(vec![ContentBlock::text(format!("lost the send's events: {e}"))]);
                }
            },
            Err(_) => return CallToolResult::error(vec![ContentBlock::text("the session closed before the answer")]),
        };
        last = frame.id;
        if frame.send_id.as_deref() != Some(send_id.as_str()) {
            continue;
        }
        let data: Value = serde_json::from_str(&frame.data).unwrap_or(Value::Null);
        if frame.is_result {
            return answer(&data, &session_id, &send_id);
        }
        if frame.event == "content_delta"
            && let (Some(token), Some(text)) = (&progress, data["event"]["text"].as_str())
        {
            step += 1;
            let note = ProgressNotificationParam::new(token.clone(), f64::from(step)).with_message(text);
            let _ = context.peer.notify_progress(note).await;
        }
    }
}

/// The tool result of a send's `result` line.
fn answer(result: &Value, session_id: &str, send_id: &str) -> CallToolResult {
    let ok = result["status"] == "ok";
    let text = if ok {
        result["response"].as_str().unwrap_or("").to_owned()
    } else {
        let e = &result["error"];
        format!("{}: {}", e["code"].as_str().unwrap_or("error"), e["message"].as_str().unwrap_or(""))
    };
    let field = |name: &str| result[name].as_str().map(str::to_owned);
    let structured = RunOutput {
        session_id: session_id.to_owned(),
        send_id: send_id.to_owned(),
        status: field("status"),
        stop_reason: field("stop_reason"),
        response: field("response"),
    };
    let mut out = if ok {
        CallToolResult::success(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::error(vec![ContentBlock::text(text)])
    };
    out.structured_content = serde_json::to_value(structured).ok();
    out
}
