//! The control protocol of Claude Code's surface, both ways.
//!
//! Owns: the answers to the SDK's control requests (`initialize` — which
//! opens the session, since the TypeScript SDK sends the system prompt and
//! schema there —, `interrupt`, `set_permission_mode`, `set_model`,
//! `mcp_status`; anything else answered with an error naming it), the
//! `can_use_tool` requests pirn sends for its permission requests and
//! the mapping of their answers onto pirn's decisions, the
//! `hook_callback` requests of the SDK's hook callbacks, and the `system`
//! `init` message.

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::input::{ControlIn, ControlResponseIn, UserContent};
use super::mapping::{approval_mode, claude_name, permission_mode_name};
use super::setup::ClaudeSetup;
use super::surface::{SdkCall, Surface};
use super::translate::uuid;
use super::wire::CLAUDE_CODE_VERSION;
use super::wire::{ControlResponseOut, McpServerStatus, Out, OutControl, ResultMsg, SystemInit};
use crate::config::SessionConfig;
use crate::hooks::callback::{CallbackFuture, ClientHooks};
use crate::mcp::bridge::{ClientMcp, ClientMcpFuture};
use crate::wire::{Decision, SendResult, Status};

/// The text of a prompt: a string, or its text blocks joined. Other blocks
/// (images, documents) are refused by kind: pirn sends text only.
pub fn prompt_text(content: &UserContent) -> Result<String, String> {
    match content {
        UserContent::Text(t) => Ok(t.clone()),
        UserContent::Blocks(blocks) => {
            let mut parts = Vec::new();
            for b in blocks {
                match (b.kind.as_str(), &b.text) {
                    ("text", Some(t)) => parts.push(t.clone()),
                    (kind, _) => return Err(format!("content blocks of type {kind} are not supported by pirn")),
                }
            }
            Ok(parts.join("\n"))
        }
    }
}

/// `system`/`init` for a session with `config`; the model and permission
/// mode are those in force now (`setup`, which `set_model` and
/// `set_permission_mode` keep current).
pub fn system_init(config: &SessionConfig, setup: &ClaudeSetup) -> SystemInit {
    let tools = config
        .tool_specs()
        .iter()
        .filter_map(|s| s.pointer("/function/name").and_then(|n| n.as_str()))
        .map(|n| claude_name(n).to_owned())
        .collect();
    SystemInit {
        subtype: "init",
        cwd: config.workspace.to_string_lossy().into_owned(),
        session_id: config.session_id.clone(),
        tools,
        mcp_servers: setup
            .mcp
            .iter()
            .map(|s| &s.name)
            .chain(&setup.sdk_mcp)
            .map(|name| McpServerStatus { name: name.clone(), status: "connected" })
            .collect(),
        model: setup.model.clone(),
        permission_mode: permission_mode_name(setup.mode).to_owned(),
        slash_commands: Vec::new(),
        api_key_source: "none",
        claude_code_version: CLAUDE_CODE_VERSION,
        output_style: "default",
        agents: config.agents.keys().cloned().collect(),
        skills: Vec::new(),
        plugins: Vec::new(),
        instruction_files: config.instruction_files.iter().map(|f| f.display().to_string()).collect(),
        pirn_version: env!("CARGO_PKG_VERSION"),
        pirn_profile: config.profile.name.clone(),
        uuid: uuid(),
    }
}

/// The result of a turn that could not start (`why`).
pub fn refused_result(session_id: &str, why: String) -> ResultMsg {
    ResultMsg {
        subtype: "error_during_execution",
        is_error: true,
        duration_ms: 0,
        duration_api_ms: 0,
        num_turns: 0,
        result: None,
        session_id: session_id.to_owned(),
        total_cost_usd: None,
        usage: Default::default(),
        model_usage: Default::default(),
        permission_denials: Vec::new(),
        structured_output: None,
        errors: vec![why],
        stop_reason: None,
        side_calls: None,
        uuid: uuid(),
    }
}

impl Surface {
    pub(super) fn respond(&self, request_id: String, answer: Result<Value, String>) {
        let response = match answer {
            Ok(response) => ControlResponseOut::Success { request_id, response },
            Err(error) => ControlResponseOut::Error { request_id, error },
        };
        self.emit(&Out::ControlResponse { response });
    }

    /// Answers control request `request` of the SDK. `initialize` has the
    /// session opened and is answered once it is (a session that cannot
    /// open ends the process, exit 2, after the error answer).
    pub(super) async fn control(&mut self, request_id: String, request: ControlIn) -> Result<(), i32> {
        match request {
            ControlIn::Initialize(init) => {
                if self.session.is_some() || self.want_open || self.init_answer.is_some() {
                    self.respond(request_id, Err("the session is already initialized".into()));
                    return Ok(());
                }
                if let Err(e) = self.setup.apply(&init) {
                    self.respond(request_id, Err(e));
                    return Ok(());
                }
                self.want_open = true;
                let model = self.setup.model.clone();
                let mut answer = json!({
                    "commands": [],
                    "agents": self.setup.agents.iter().filter(|_| self.setup.task_tool).map(|(name, a)| json!({
                        "name": name, "description": a.description, "model": a.model.as_deref().unwrap_or("inherit"),
                    })).collect::<Vec<_>>(),
                    "output_style": "default",
                    "available_output_styles": ["default"],
                    "models": [{"value": model, "displayName": model, "description": "the model pirn was given"}],
                    "account": {},
                    "pid": std::process::id(),
                });
                if init.mcp_servers.is_some() {
                    answer["mcp_servers_applied"] = json!(true);
                }
                if init.hooks.is_some() {
                    // The callbacks are registered with the session (and a
                    // failed one blocks as its `onFailure` says).
                    answer["hooks_applied"] = json!(true);
                    answer["hook_on_failure_supported"] = json!(true);
                }
                self.init_answer = Some((request_id, answer));
                Ok(())
            }
            ControlIn::Interrupt {} => {
                if let Some(s) = &self.session {
                    s.cancel_running();
                }
                self.respond(request_id, Ok(json!({})));
                Ok(())
            }
            ControlIn::SetPermissionMode { mode } => {
                let answer = approval_mode(&mode).map(|m| {
                    if let Some(s) = &self.session {
                        s.set_approval_mode(m);
                    }
                    self.setup.mode = m;
                    json!({})
                });
                self.respond(request_id, answer);
                Ok(())
            }
            ControlIn::SetModel { model } => {
                match &self.session {
                    Some(s) => {
                        s.set_model(model.clone());
                        self.setup.model = model.unwrap_or_else(|| s.config().model.clone());
                    }
                    None => self.setup.model = model.unwrap_or_else(|| self.setup.model.clone()),
                }
                self.respond(request_id, Ok(json!({})));
                Ok(())
            }
            ControlIn::McpStatus {} => {
                let names = self.setup.mcp.iter().map(|s| &s.name).chain(&self.setup.sdk_mcp);
                let servers: Vec<Value> = names.map(|name| json!({"name": name, "status": "connected"})).collect();
                self.respond(request_id, Ok(json!({"mcpServers": servers})));
                Ok(())
            }
            ControlIn::RewindFiles { user_message_id, dry_run } => {
                self.rewind_files(request_id, user_message_id, dry_run.unwrap_or(false));
                Ok(())
            }
            ControlIn::Unsupported => {
                self.respond(request_id, Err("pirn does not support this control request".into()));
                Ok(())
            }
        }
    }

    /// pirn's permission request `rid` (tool `name`, `args`) of send
    /// `send_id`: asked of the SDK when it answers permissions, else
    /// denied (Claude Code's headless mode denies what it cannot ask).
    pub(super) fn ask(&mut self, send_id: &str, name: &str, reason: &str, rid: &str, args: Value) {
        let Some(session) = &self.session else { return };
        if !self.setup.ask_sdk {
            let _ = session.answer_permission(rid, Decision::Deny);
            return;
        }
        let tool_use_id = self.turns.get(send_id).map(|t| t.last_call_id()).unwrap_or_default();
        let request_id = format!("pirn_perm_{rid}");
        let request = OutControl::CanUseTool {
            tool_name: claude_name(name).to_owned(),
            input: args.clone(),
            tool_use_id,
            permission_suggestions: Vec::new(),
            decision_reason: reason.to_owned(),
        };
        self.asks.insert(request_id.clone(), (rid.to_owned(), args));
        self.emit(&Out::ControlRequest { request_id, request });
    }

    /// Sends one call of the session's to the SDK as a control request
    /// (`hook_callback`, `mcp_message`); its answer goes back through
    /// `answered`. A hook callback's tool call id becomes the one the SDK
    /// saw on the `tool_use` block.
    pub(super) fn call_sdk(&mut self, call: SdkCall) {
        let SdkCall { mut request, reply } = call;
        if let OutControl::HookCallback { tool_use_id, input, .. } = &mut request {
            let turns = &self.turns;
            *tool_use_id = tool_use_id
                .take()
                .map(|pirn_id| turns.values().find_map(|t| t.claude_id_of(&pirn_id)).unwrap_or(pirn_id));
            if let (Some(id), Some(field)) = (tool_use_id.as_ref(), input.get_mut("tool_use_id")) {
                *field = json!(id);
            }
        }
        self.sdk_seq += 1;
        let request_id = format!("pirn_call_{}", self.sdk_seq);
        // Calls whose waiter gave up (a callback's timeout, a cancelled MCP
        // call) are never answered by a silent SDK: forget them here.
        self.sdk_calls.retain(|_, waiting| !waiting.is_closed());
        self.sdk_calls.insert(request_id.clone(), reply);
        self.emit(&Out::ControlRequest { request_id, request });
    }

    /// The SDK's answer to a `hook_callback` request (handed back to the
    /// waiting hook) or to a `can_use_tool` request. Allowed runs the call
    /// as the model sent it; an answer that changes the arguments
    /// (`updatedInput`) is a denial, since pirn runs a call exactly as
    /// sent or not at all. An error answer denies.
    pub(super) fn answered(&mut self, response: ControlResponseIn) {
        let (request_id, answer) = match response {
            ControlResponseIn::Success { request_id, response } => (request_id, Ok(response)),
            ControlResponseIn::Error { request_id, error } => {
                tracing::info!("the SDK failed control request {request_id}: {error:?}");
                (request_id, Err(error.unwrap_or_else(|| "the SDK answered with an error".to_owned())))
            }
        };
        if let Some(reply) = self.sdk_calls.remove(&request_id) {
            let _ = reply.send(answer.map(|a| a.unwrap_or_else(|| json!({}))));
            return;
        }
        let answer: Option<super::input::CanUseToolAnswer> =
            answer.ok().flatten().and_then(|a| serde_json::from_value(a).ok());
        let Some((rid, args)) = self.asks.remove(&request_id) else { return };
        let Some(session) = &self.session else { return };
        let allowed = answer.as_ref().is_some_and(|a| {
            a.behavior == "allow" && a.updated_input.as_ref().is_none_or(|u| *u == args || u.is_null())
        });
        if answer.as_ref().is_some_and(|a| a.behavior == "allow") && !allowed {
            tracing::warn!("can_use_tool allowed the call with changed arguments: pirn denies it");
        }
        let decision = if allowed { Decision::Allow } else { Decision::Deny };
        let _ = session.answer_permission(&rid, decision);
        if answer.is_some_and(|a| a.interrupt == Some(true)) {
            session.cancel_running();
        }
    }
}

/// Sends `request` to the SDK through the surface's loop; its answer.
async fn ask_sdk(tx: mpsc::Sender<SdkCall>, request: OutControl) -> Result<serde_json::Value, String> {
    let (reply, answer) = tokio::sync::oneshot::channel();
    tx.send(SdkCall { request, reply }).await.map_err(|_| "the SDK is gone".to_owned())?;
    answer.await.map_err(|_| "the SDK is gone".to_owned())?
}

/// The SDK's hook callbacks, as the session calls them.
#[derive(Debug)]
pub(super) struct SdkHooks(pub(super) mpsc::Sender<SdkCall>);

impl ClientHooks for SdkHooks {
    fn call(&self, callback_id: &str, tool_use_id: Option<&str>, input: serde_json::Value) -> CallbackFuture {
        let request = OutControl::HookCallback {
            callback_id: callback_id.to_owned(),
            input,
            tool_use_id: tool_use_id.map(str::to_owned),
        };
        Box::pin(ask_sdk(self.0.clone(), request))
    }
}

/// The SDK's in-process MCP servers (`type: "sdk"`), as the session's MCP
/// client reaches them: each JSON-RPC message an `mcp_message` request,
/// the answer its `mcp_response`.
#[derive(Debug)]
pub(super) struct SdkMcp(pub(super) mpsc::Sender<SdkCall>);

impl ClientMcp for SdkMcp {
    fn send(&self, server: &str, message: serde_json::Value) -> ClientMcpFuture {
        let request = OutControl::McpMessage { server_name: server.to_owned(), message };
        let tx = self.0.clone();
        Box::pin(async move {
            let mut answer = ask_sdk(tx, request).await?;
            match answer.get_mut("mcp_response").map(serde_json::Value::take) {
                Some(response) => Ok(response),
                None => Err("the SDK's answer holds no mcp_response".to_owned()),
            }
        })
    }
}

impl Surface {
    /// `rewind_files {user_message_id, dry_run?}`: queued as pirn's rewind
    /// to before that turn; answered when its result arrives ([`Surface::rewound`]).
    pub(super) fn rewind_files(&mut self, request_id: String, user_message_id: String, dry_run: bool) {
        let Some(session) = &self.session else {
            self.respond(request_id, Err("no session: send a message first".into()));
            return;
        };
        let id = format!("rewind-{}", uuid::Uuid::new_v4().simple());
        match session.rewind(id.clone(), user_message_id, dry_run) {
            Ok(()) => {
                self.rewinds.insert(id, request_id);
            }
            Err(e) => self.respond(request_id, Err(e.to_string())),
        }
    }

    /// Answers the `rewind_files` request whose rewind `r` is; false when
    /// `r` is not one.
    pub(super) fn rewound(&mut self, r: &SendResult) -> bool {
        let Some(request_id) = self.rewinds.remove(&r.id) else { return false };
        let files: Vec<Value> = r.rewound.iter().flatten().map(|f| Value::String(f.path.clone())).collect();
        let answer = match (&r.status, &r.error) {
            (Status::Ok, _) => Ok(json!({"canRewind": true, "filesChanged": files})),
            // No checkpoint of that message: the SDK raises, as Claude Code's does.
            (_, Some(e)) if e.details.is_none() => {
                Err(format!("No file checkpoint found for this message: {}", e.message))
            }
            (_, e) => Ok(json!({
                "canRewind": false,
                "error": e.as_ref().map(|e| e.message.clone()).unwrap_or_default(),
                "filesChanged": [],
            })),
        };
        self.respond(request_id, answer);
        true
    }
}
