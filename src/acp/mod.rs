//! `pirn acp`: the same worker over the Agent Client Protocol (ACP v1,
//! agentclientprotocol.com), JSON-RPC 2.0 on stdin/stdout, so an ACP client
//! (Zed, JetBrains, Gas City, any client built on the ACP SDKs) can embed
//! pirn as its agent.
//!
//! Owns: the connection (the official `agent-client-protocol` crate's
//! builder, v1), the table of ACP sessions and the handlers of `initialize`,
//! `session/new`, `session/load`, `session/fork`, `session/list`, `session/prompt` and
//! `session/cancel`. Each ACP session is a pirn [`Session`], opened as every
//! transport opens one (protocol 0.3.0, the session store, the approval
//! policy, MCP servers); its outbox feeds [`forward`], which turns its
//! events into `session/update` notifications ([`updates`]), asks the
//! client about permissions, and answers each prompt when its send's one
//! result arrives. There is no second agent loop.
//!
//! stdout carries only JSON-RPC messages: pirn's logs go to stderr (and
//! only when `PIRN_LOG` asks), as for every transport.

mod files;
mod forward;
mod load;
mod stdout;
pub mod updates;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, ClientCapabilities, ForkSessionRequest, ForkSessionResponse, Implementation,
    InitializeRequest, InitializeResponse, ListSessionsRequest, ListSessionsResponse, LoadSessionRequest,
    LoadSessionResponse, McpCapabilities, McpServer, NewSessionRequest, NewSessionResponse, PromptCapabilities,
    PromptRequest, PromptResponse, SessionCapabilities, SessionForkCapabilities, SessionId, SessionInfo,
    SessionListCapabilities,
};
use agent_client_protocol::{Agent, Client, Responder, Stdio, V1};

use crate::config::{DEFAULT_SYSTEM_PROMPT, Limits};
use crate::environment::Environment;
use crate::session::{Ending, OUTBOX_CAPACITY, Session};
use crate::wire::{ApprovalMode, InitConfig, McpServerConfig, PROTOCOL_VERSION, SandboxMode};

/// What `pirn acp`'s command line sets for every session it opens.
#[derive(Debug, Clone, Default)]
pub struct AcpOptions {
    /// The model (`--model`, else `PIRN_MODEL`, else the server's default).
    pub model: Option<String>,
    /// `--approval-mode` (default `suggest`: pirn asks the client before
    /// anything but reading; an editor's user approves edits and commands).
    pub approval_mode: Option<ApprovalMode>,
    /// `--max-iterations` (model calls per prompt).
    pub max_iterations: Option<u32>,
    /// `--sandbox` for bash and stdio MCP servers.
    pub sandbox: Option<SandboxMode>,
    /// `--no-network`: bash may not connect or bind TCP sockets.
    pub no_network: bool,
    /// `--profile` (else `PIRN_PROFILE`, else the model-settings table's
    /// rule for the model, else `exact`; see `config::profile`).
    pub profile: Option<String>,
}

/// One ACP session: the pirn session, the prompts waiting for their
/// result (by pirn send id), and the permission answers given "always".
pub(crate) struct AcpSession {
    pub session: Session,
    pub id: SessionId,
    pub pending: Mutex<HashMap<String, Responder<PromptResponse, V1>>>,
    /// Tool name → allowed (true) or rejected (false) for the session.
    pub always: Mutex<HashMap<String, bool>>,
}

/// The state the handlers share.
pub(crate) struct Acp {
    env: Environment,
    options: AcpOptions,
    client: Mutex<ClientCapabilities>,
    sessions: Mutex<HashMap<String, Arc<AcpSession>>>,
    sends: AtomicU64,
}

impl Acp {
    fn session(&self, id: &SessionId) -> Option<Arc<AcpSession>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner()).get(&*id.0).cloned()
    }

    /// The init config of a session in `cwd` with `mcp_servers`, from the
    /// command line's options (`resume`: a stored session to continue).
    fn config(&self, cwd: &std::path::Path, mcp: &[McpServer], resume: Option<&str>) -> InitConfig {
        let o = &self.options;
        InitConfig {
            model: o.model.clone().or_else(|| std::env::var("PIRN_MODEL").ok()).unwrap_or_else(|| "local".to_owned()),
            system_prompt: DEFAULT_SYSTEM_PROMPT.to_owned(),
            tools: crate::tools::ALL_TOOLS.iter().map(|t| (*t).to_owned()).collect(),
            max_iterations: o.max_iterations,
            cwd: Some(cwd.to_string_lossy().into_owned()),
            approval_mode: Some(o.approval_mode.unwrap_or(ApprovalMode::Suggest)),
            permission_responses: Some(true),
            sandbox: o.sandbox,
            sandbox_network: o.no_network.then_some(false),
            mcp_servers: Some(mcp.iter().filter_map(mcp_config).collect()).filter(|v: &Vec<_>| !v.is_empty()),
            resume_session_id: resume.map(str::to_owned),
            profile: o.profile.clone(),
            ..InitConfig::default()
        }
    }

    /// Opens a pirn session for ACP session setup and starts its forwarder.
    async fn open(
        self: &Arc<Self>,
        config: &InitConfig,
        connection: &ConnectionTo<Client>,
    ) -> Result<Arc<AcpSession>, agent_client_protocol::Error> {
        let (outbox, rx) = tokio::sync::mpsc::channel(OUTBOX_CAPACITY);
        let caps = self.client.lock().unwrap_or_else(|p| p.into_inner()).fs.clone();
        let files = files::ClientFs::new(connection.clone(), caps).map(Arc::new);
        let shared = files.clone().map(|f| f as Arc<dyn crate::tools::client_files::ClientFiles>);
        let env = &self.env;
        let session = Session::open_with_files(Some(PROTOCOL_VERSION), config, env, Limits::default(), outbox, shared)
            .await
            .map_err(|e| agent_client_protocol::Error::invalid_params().data(serde_json::json!(e.to_string())))?;
        let id = SessionId::new(session.config().session_id.as_str());
        if let Some(f) = &files {
            f.bind(id.clone());
        }
        let acp = Arc::new(AcpSession { session, id: id.clone(), pending: Mutex::default(), always: Mutex::default() });
        self.sessions.lock().unwrap_or_else(|p| p.into_inner()).insert(id.0.to_string(), acp.clone());
        tokio::spawn(forward::run(acp.clone(), rx, connection.clone()));
        Ok(acp)
    }
}

/// A session's MCP server as pirn's config has it (stdio and HTTP; SSE,
/// which pirn does not speak, is left out).
fn mcp_config(server: &McpServer) -> Option<McpServerConfig> {
    let v = serde_json::to_value(server).ok()?;
    let name = v.get("name")?.as_str()?.to_owned();
    let pairs = |key: &str| -> std::collections::BTreeMap<String, String> {
        v.get(key)
            .and_then(|a| a.as_array())
            .into_iter()
            .flatten()
            .filter_map(|e| Some((e.get("name")?.as_str()?.to_owned(), e.get("value")?.as_str()?.to_owned())))
            .collect()
    };
    match v.get("type").and_then(|t| t.as_str()) {
        Some("http") => Some(McpServerConfig {
            name,
            url: Some(v.get("url")?.as_str()?.to_owned()),
            headers: pairs("headers"),
            ..McpServerConfig::default()
        }),
        Some("sse") => None,
        _ => Some(McpServerConfig {
            name,
            command: Some(v.get("command")?.as_str()?.to_owned()),
            args: v
                .get("args")
                .and_then(|a| a.as_array())
                .into_iter()
                .flatten()
                .filter_map(|a| a.as_str().map(str::to_owned))
                .collect(),
            env: pairs("env"),
            ..McpServerConfig::default()
        }),
    }
}

/// Serves ACP on stdin/stdout until the client closes the connection;
/// then every session ends as pirn's other transports end theirs
/// (running prompts cancelled, logs flushed). Returns the exit code.
pub async fn serve(options: AcpOptions) -> i32 {
    let env = crate::transport::stdio::with_store(Environment::from_process()).await;
    let acp =
        Arc::new(Acp { env, options, client: Mutex::default(), sessions: Mutex::default(), sends: AtomicU64::new(0) });
    let (a1, a2, a3, a4, a5, a6) = (acp.clone(), acp.clone(), acp.clone(), acp.clone(), acp.clone(), acp.clone());
    let a7 = acp.clone();
    let agent = Agent
        .v1()
        .name("pirn")
        .on_receive_request(
            async move |req: InitializeRequest,
                        responder: Responder<InitializeResponse, V1>,
                        _cx: ConnectionTo<Client>| {
                *a1.client.lock().unwrap_or_else(|p| p.into_inner()) = req.client_capabilities.clone();
                let caps = AgentCapabilities::new()
                    .load_session(true)
                    .prompt_capabilities(PromptCapabilities::new().embedded_context(true))
                    .mcp_capabilities(McpCapabilities::new().http(true))
                    .session_capabilities(
                        SessionCapabilities::new()
                            .list(SessionListCapabilities::new())
                            .fork(SessionForkCapabilities::new()),
                    );
                responder.respond(
                    InitializeResponse::new(req.protocol_version)
                        .agent_capabilities(caps)
                        .auth_methods(Vec::new())
                        .agent_info(Implementation::new("pirn", env!("CARGO_PKG_VERSION")).title("pirn")),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: NewSessionRequest,
                        responder: Responder<NewSessionResponse, V1>,
                        cx: ConnectionTo<Client>| {
                let config = a2.config(&req.cwd, &req.mcp_servers, None);
                match a2.open(&config, &cx).await {
                    Ok(s) => responder.respond(NewSessionResponse::new(s.id.clone())),
                    Err(e) => responder.respond_with_error(e),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: LoadSessionRequest,
                        responder: Responder<LoadSessionResponse, V1>,
                        cx: ConnectionTo<Client>| { load::session(&a3, req, responder, cx).await },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ForkSessionRequest,
                        responder: Responder<ForkSessionResponse, V1>,
                        cx: ConnectionTo<Client>| { load::fork(&a7, req, responder, cx).await },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ListSessionsRequest,
                        responder: Responder<ListSessionsResponse, V1>,
                        _cx: ConnectionTo<Client>| {
                responder.respond(ListSessionsResponse::new(load::list(&a4, req.cwd.as_deref()).await))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |req: PromptRequest, responder: Responder<PromptResponse, V1>, _cx: ConnectionTo<Client>| {
                let Some(s) = a5.session(&req.session_id) else {
                    let e = agent_client_protocol::Error::invalid_params().data(serde_json::json!("no such session"));
                    return responder.respond_with_error(e);
                };
                let send_id = format!("acp-{}", a5.sends.fetch_add(1, Ordering::Relaxed) + 1);
                let text = updates::prompt_text(&req.prompt);
                s.pending.lock().unwrap_or_else(|p| p.into_inner()).insert(send_id.clone(), responder);
                let traceparent = req.meta.as_ref().and_then(|m| m.get("traceparent")).and_then(|v| v.as_str());
                let options =
                    crate::wire::SendOptions { traceparent: traceparent.map(str::to_owned), ..Default::default() };
                if let Err(e) = s.session.send_with(send_id.clone(), text, &options) {
                    let responder = s.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&send_id);
                    if let Some(r) = responder {
                        let e = agent_client_protocol::Error::invalid_params().data(serde_json::json!(e.to_string()));
                        return r.respond_with_error(e);
                    }
                }
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: CancelNotification, _cx: ConnectionTo<Client>| {
                if let Some(s) = a6.session(&n.session_id) {
                    let ids: Vec<String> =
                        s.pending.lock().unwrap_or_else(|p| p.into_inner()).keys().cloned().collect();
                    for id in ids {
                        s.session.cancel(&id).await;
                    }
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        );
    let served = match stdout::PipeOut::new() {
        Some(out) => {
            use tokio_util::compat::TokioAsyncReadCompatExt;
            agent.connect_to(agent_client_protocol::ByteStreams::new(out, tokio::io::stdin().compat())).await
        }
        None => agent.connect_to(Stdio::new()).await,
    };
    if let Err(e) = &served {
        tracing::info!("the ACP connection ended: {e}");
    }
    let sessions: Vec<Arc<AcpSession>> =
        acp.sessions.lock().unwrap_or_else(|p| p.into_inner()).drain().map(|(_, s)| s).collect();
    for s in sessions {
        s.session.clone().end(Ending::Cancel, std::future::pending(), async {}).await;
    }
    0
}

/// Sessions as `session/list` shows them (see [`load::list`]).
pub(crate) type Listed = Vec<SessionInfo>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_servers_become_pirn_configs() {
        let servers: Vec<McpServer> = serde_json::from_value(serde_json::json!([
            {"name": "fs", "command": "npx", "args": ["-y", "srv", "."], "env": [{"name": "K", "value": "v"}]},
            {"type": "http", "name": "web", "url": "http://127.0.0.1:9/mcp",
             "headers": [{"name": "Authorization", "value": "Bearer t"}]},
            {"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse", "headers": []},
        ]))
        .unwrap();
        let configs: Vec<McpServerConfig> = servers.iter().filter_map(mcp_config).collect();
        assert_eq!(configs.len(), 2, "SSE is left out: {configs:?}");
        assert_eq!(configs[0].name, "fs");
        assert_eq!(configs[0].command.as_deref(), Some("npx"));
        assert_eq!(configs[0].args, ["-y", "srv", "."]);
        assert_eq!(configs[0].env.get("K").map(String::as_str), Some("v"));
        assert_eq!(configs[1].url.as_deref(), Some("http://127.0.0.1:9/mcp"));
        assert_eq!(configs[1].headers.get("Authorization").map(String::as_str), Some("Bearer t"));
    }
}
