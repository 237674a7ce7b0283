//! MCP servers that live in the client's process (the Claude Agent SDKs'
//! `create_sdk_mcp_server` / `createSdkMcpServer`, `type: "sdk"`): pirn's
//! MCP client speaks to them through the transport that spawned it.
//!
//! Owns: the [`ClientMcp`] trait a transport implements (the Claude
//! surface sends each JSON-RPC message as an `mcp_message` control request
//! and hands back the SDK's `mcp_response`), and [`Bridge`], an rmcp
//! transport over it. Requests go out concurrently; a response comes back
//! into the client as the server's; the SDK's acknowledgement of a
//! notification (a result without an id) is dropped. A client that fails
//! or disappears fails that request (the MCP call then fails for the
//! model, never the session); calls are bounded by the server's timeout
//! like any MCP call.
//!
//! Trust: the servers are the stdio parent's own code; their tools are
//! advertised only as `init.config.tools` names them and run under the
//! session's approval and budgets like every MCP tool.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use serde_json::Value;
use tokio::sync::mpsc;

/// The client's answer to one message: the JSON-RPC response (requests),
/// an acknowledgement (notifications), or why there is none.
pub type ClientMcpFuture = Pin<Box<dyn Future<Output = Result<Value, String>> + Send>>;

/// A client that hosts MCP servers in its own process.
pub trait ClientMcp: Send + Sync + std::fmt::Debug {
    /// Delivers JSON-RPC `message` to the client's server `server`.
    fn send(&self, server: &str, message: Value) -> ClientMcpFuture;
}

/// The servers a client hosts, and the client.
#[derive(Debug, Clone)]
pub struct ClientServers {
    /// Their names (tools are `mcp__<name>__<tool>`).
    pub names: Vec<String>,
    pub client: Arc<dyn ClientMcp>,
}

/// An rmcp client transport to server `server` of `client`.
pub struct Bridge {
    server: String,
    client: Arc<dyn ClientMcp>,
    replies: mpsc::UnboundedSender<RxJsonRpcMessage<RoleClient>>,
    incoming: mpsc::UnboundedReceiver<RxJsonRpcMessage<RoleClient>>,
}

impl Bridge {
    /// A transport to `server` of `client`.
    pub fn new(server: &str, client: Arc<dyn ClientMcp>) -> Bridge {
        let (replies, incoming) = mpsc::unbounded_channel();
        Bridge { server: server.to_owned(), client, replies, incoming }
    }
}

impl rmcp::transport::Transport<RoleClient> for Bridge {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let (client, server, replies) = (self.client.clone(), self.server.clone(), self.replies.clone());
        let message = serde_json::to_value(&item);
        async move {
            let message = message.map_err(std::io::Error::other)?;
            let id = message.get("id").cloned().filter(|_| message.get("method").is_some());
            // The answer may take as long as the tool runs: it comes back on
            // its own task, so other requests (and cancels) go out meanwhile.
            tokio::spawn(async move {
                let answer = client.send(&server, message).await;
                let Some(id) = id else { return };
                let reply = match answer {
                    Ok(v) if v.get("id").is_some() => v,
                    Ok(_) => error_reply(&id, "the client's MCP server sent no response"),
                    Err(why) => error_reply(&id, &why),
                };
                match serde_json::from_value::<RxJsonRpcMessage<RoleClient>>(reply) {
                    Ok(m) => {
                        let _ = replies.send(m);
                    }
                    Err(e) => {
                        let reply = error_reply(&id, &format!("the client's MCP server answered badly: {e}"));
                        if let Ok(m) = serde_json::from_value(reply) {
                            let _ = replies.send(m);
                        }
                    }
                }
            });
            Ok(())
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// A JSON-RPC error response to request `id`.
fn error_reply(id: &Value, why: &str) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": why}})
}
