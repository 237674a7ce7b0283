//! The state `pirn acp`'s handlers share: the command line's options, the
//! client's capabilities, the table of ACP sessions, and how a session is
//! opened (its init config from the options and the client's `cwd` and MCP
//! servers, then a pirn session and its forwarder).
//!
//! Owns: [`AcpOptions`], [`Acp`] and the translation of ACP's MCP server
//! descriptions into pirn's [`McpServerConfig`].

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{ClientCapabilities, McpServer, SessionId};

use super::files;
use super::forward;
use super::session::AcpSession;
use crate::config::{DEFAULT_SYSTEM_PROMPT, Limits};
use crate::environment::Environment;
use crate::session::{OUTBOX_CAPACITY, Session};
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

/// The state the handlers share.
pub(crate) struct Acp {
    pub env: Environment,
    pub options: AcpOptions,
    pub client: Mutex<ClientCapabilities>,
    pub sessions: Mutex<HashMap<String, Arc<AcpSession>>>,
    pub sends: AtomicU64,
}

impl Acp {
    pub fn session(&self, id: &SessionId) -> Option<Arc<AcpSession>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner()).get(&*id.0).cloned()
    }

    /// The init config of a session in `cwd` with `mcp_servers`, from the
    /// command line's options (`resume`: a stored session to continue).
    pub fn config(&self, cwd: &std::path::Path, mcp: &[McpServer], resume: Option<&str>) -> InitConfig {
        let o = &self.options;
        InitConfig {
            model: crate::environment::model_or_default(o.model.clone()),
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

    /// The profile a session opened now would get: the command line's
    /// `--profile`, else `PIRN_PROFILE`, else the model-settings table's
    /// rule for its model (see `config::profile::choose`); `None` when that
    /// names no profile (the session would be refused).
    pub fn profile(&self) -> Option<String> {
        let model = crate::environment::model_or_default(self.options.model.clone());
        crate::config::profile::choose(self.options.profile.as_deref(), &self.env, &model).ok().map(|p| p.name)
    }

    /// Opens a pirn session for ACP session setup and starts its forwarder.
    pub async fn open(
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

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::McpServer;

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
