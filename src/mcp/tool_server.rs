//! `pirn mcp`: pirn's own tools served to other agents as an MCP server on
//! stdio (rmcp).
//!
//! Owns: the tool list (the enabled built-in tools with the schemas the
//! model sees, `read_file`, `glob` and `grep` marked read-only) and tool
//! calls, run exactly as in a session (workspace confinement, caps). A
//! client's `notifications/cancelled` cancels the call (a `bash` call's
//! process group is killed).

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, Implementation, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;

use crate::tools::{self, ToolContext};

/// The server: which tools, and where they work.
#[derive(Clone)]
pub struct ToolServer {
    enabled: Vec<String>,
    workspace: PathBuf,
    allowed_paths: Vec<PathBuf>,
}

impl ToolServer {
    /// Serves `enabled` built-in tools (all six when empty) on `workspace`
    /// (canonicalised; errors when it is not a directory).
    pub fn new(enabled: &[String], workspace: PathBuf, allowed_paths: Vec<PathBuf>) -> std::io::Result<ToolServer> {
        let workspace = workspace.canonicalize()?;
        let enabled = if enabled.is_empty() {
            tools::ALL_TOOLS.iter().map(|t| (*t).to_owned()).collect()
        } else {
            enabled.iter().filter(|t| tools::ALL_TOOLS.contains(&t.as_str())).cloned().collect()
        };
        Ok(ToolServer { enabled, workspace, allowed_paths })
    }

    fn list(&self) -> Vec<Tool> {
        tools::specs(&self.enabled)
            .into_iter()
            .filter_map(|spec| {
                let f = &spec["function"];
                let name = f["name"].as_str()?.to_owned();
                let Value::Object(schema) = f["parameters"].clone() else { return None };
                let read_only = matches!(name.as_str(), "read_file" | "glob" | "grep");
                let description = f["description"].as_str().unwrap_or("").to_owned();
                Some(
                    Tool::new(name, description, Arc::new(schema))
                        .with_annotations(ToolAnnotations::default().read_only(read_only)),
                )
            })
            .collect()
    }
}

impl ServerHandler for ToolServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("pirn", env!("CARGO_PKG_VERSION")))
            .with_instructions("pirn's coding tools, confined to one workspace directory.")
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.list()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        if !self.enabled.iter().any(|t| *t == request.name) {
            return Err(ErrorData::invalid_params(format!("unknown tool {:?}", request.name), None));
        }
        let args = Value::Object(request.arguments.unwrap_or_default()).to_string();
        let ctx = ToolContext::new(self.workspace.clone(), self.allowed_paths.clone(), context.ct.clone());
        let out = tools::execute(&request.name, &args, &self.enabled, &ctx).await;
        let content = vec![ContentBlock::text(out.text)];
        Ok(if out.is_error { CallToolResult::error(content) } else { CallToolResult::success(content) }.into())
    }
}

/// Runs `pirn mcp` until the client closes stdin; returns the exit code.
pub async fn serve_stdio(server: ToolServer) -> i32 {
    match server.serve(rmcp::transport::stdio()).await {
        Ok(running) => match running.waiting().await {
            Ok(_) => 0,
            Err(e) => {
                tracing::error!("pirn mcp: {e}");
                1
            }
        },
        Err(e) => {
            tracing::error!("pirn mcp: initialize failed: {e}");
            1
        }
    }
}
