//! `pirn acp`: the same worker over the Agent Client Protocol (ACP v1,
//! agentclientprotocol.com), JSON-RPC 2.0 on stdin/stdout, so an ACP client
//! (Zed, JetBrains, Gas City, any client built on the ACP SDKs) can embed
//! pirn as its agent.
//!
//! Owns: the connection (the official `agent-client-protocol` crate's
//! builder, v1) and the handlers of `initialize`,
//! `session/new`, `session/load`, `session/fork`, `session/list`, `session/prompt` and
//! `session/cancel`; the state they share (options, client capabilities,
//! the table of ACP sessions) is [`state`]'s. Each ACP session is a pirn [`Session`](crate::session::Session), opened as every
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
mod gauge;
mod load;
mod meta;
mod session;
mod state;
mod stdout;
pub mod updates;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, ForkSessionRequest, ForkSessionResponse, Implementation, InitializeRequest,
    InitializeResponse, ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, LoadSessionResponse,
    McpCapabilities, NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest, PromptResponse,
    SessionCapabilities, SessionForkCapabilities, SessionListCapabilities,
};
use agent_client_protocol::{Agent, Client, Responder, Stdio, V1};

pub use state::AcpOptions;

use crate::environment::Environment;
use crate::session::Ending;
use session::AcpSession;
use state::Acp;

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
                        .agent_info(Implementation::new("pirn", env!("CARGO_PKG_VERSION")).title("pirn"))
                        .meta(a1.profile().map(|profile| meta::pirn(&meta::ProfileMeta { profile }))),
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
                    Ok(s) => responder.respond(NewSessionResponse::new(s.id.clone()).meta(s.profile_meta())),
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
