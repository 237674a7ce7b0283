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
use super::translate::uuid;
use super::wire::{ControlResponseOut, McpServerStatus, Out, OutControl, ResultMsg, SystemInit};
use super::{CLAUDE_CODE_VERSION, Setup, Surface};
use crate::config::SessionConfig;
use crate::hooks::callback::{CallbackFuture, ClientHooks};
use crate::wire::{Decision, OutgoingMessage};

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
pub fn system_init(config: &SessionConfig, setup: &Setup) -> SystemInit {
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
        mcp_servers: setup.mcp.iter().map(|s| McpServerStatus { name: s.name.clone(), status: "connected" }).collect(),
        model: setup.model.clone(),
        permission_mode: permission_mode_name(setup.mode).to_owned(),
        slash_commands: Vec::new(),
        api_key_source: "none",
        claude_code_version: CLAUDE_CODE_VERSION,
        output_style: "default",
        agents: Vec::new(),
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

    /// Answers control request `request` of the SDK. `initialize` opens
    /// the session (returned); a session that cannot open ends the process
    /// (`Err(2)`), after the error answer.
    pub(super) async fn control(
        &mut self,
        request_id: String,
        request: ControlIn,
    ) -> Result<Option<mpsc::Receiver<OutgoingMessage>>, i32> {
        match request {
            ControlIn::Initialize(init) => {
                if self.session.is_some() {
                    self.respond(request_id, Err("the session is already initialized".into()));
                    return Ok(None);
                }
                if let Err(e) = self.setup.apply(&init) {
                    self.respond(request_id, Err(e));
                    return Ok(None);
                }
                let rx = match self.open().await {
                    Ok(rx) => rx,
                    Err(e) => {
                        self.respond(request_id, Err(e));
                        return Err(2);
                    }
                };
                let model = self.setup.model.clone();
                let mut answer = json!({
                    "commands": [],
                    "agents": [],
                    "output_style": "default",
                    "available_output_styles": ["default"],
                    "models": [{"value": model, "displayName": model, "description": "the model pirn was given"}],
                    "account": {},
                    "pid": std::process::id(),
                });
                if init.mcp_servers.is_some() {
                    answer["mcp_servers_applied"] = json!(true);
                }
                self.respond(request_id, Ok(answer));
                Ok(Some(rx))
            }
            ControlIn::Interrupt {} => {
                if let Some(s) = &self.session {
                    s.cancel_running();
                }
                self.respond(request_id, Ok(json!({})));
                Ok(None)
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
                Ok(None)
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
                Ok(None)
            }
            ControlIn::McpStatus {} => {
                let servers: Vec<Value> =
                    self.setup.mcp.iter().map(|s| json!({"name": s.name, "status": "connected"})).collect();
                self.respond(request_id, Ok(json!({"mcpServers": servers})));
                Ok(None)
            }
            ControlIn::RewindFiles { user_message_id, dry_run } => {
                self.rewind_files(request_id, user_message_id, dry_run.unwrap_or(false));
                Ok(None)
            }
            ControlIn::Unsupported => {
                self.respond(request_id, Err("pirn does not support this control request".into()));
                Ok(None)
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

    /// Sends one hook callback call to the SDK as a `hook_callback`
    /// control request; its answer goes back through `answered`. The
    /// tool call's id is the one the SDK saw on the `tool_use` block.
    pub(super) fn call_hook(&mut self, call: HookCall) {
        let HookCall { callback_id, tool_use_id, mut input, reply } = call;
        let tool_use_id =
            tool_use_id.map(|pirn_id| self.turns.values().find_map(|t| t.claude_id_of(&pirn_id)).unwrap_or(pirn_id));
        if let (Some(id), Some(field)) = (&tool_use_id, input.get_mut("tool_use_id")) {
            *field = json!(id);
        }
        self.hook_seq += 1;
        let request_id = format!("pirn_hook_{}", self.hook_seq);
        self.hook_calls.insert(request_id.clone(), reply);
        let request = OutControl::HookCallback { callback_id, input, tool_use_id };
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
        if let Some(reply) = self.hook_calls.remove(&request_id) {
            let _ = reply.send(answer.map(|a| a.unwrap_or_else(|| json!({}))));
            return;
        }
        let answer: Option<super::input::PermissionAnswer> =
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

/// One call of an SDK hook callback, on its way to the SDK.
pub struct HookCall {
    pub callback_id: String,
    /// pirn's id of the tool call it is about (tool events).
    pub tool_use_id: Option<String>,
    pub input: serde_json::Value,
    pub reply: tokio::sync::oneshot::Sender<Result<serde_json::Value, String>>,
}

/// The SDK's hook callbacks, as the session calls them: each call goes to
/// the surface's loop, which writes the control request.
#[derive(Debug)]
pub(super) struct SdkHooks(pub(super) mpsc::Sender<HookCall>);

impl ClientHooks for SdkHooks {
    fn call(&self, callback_id: &str, tool_use_id: Option<&str>, input: serde_json::Value) -> CallbackFuture {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let call =
            HookCall { callback_id: callback_id.to_owned(), tool_use_id: tool_use_id.map(str::to_owned), input, reply };
        let tx = self.0.clone();
        Box::pin(async move {
            tx.send(call).await.map_err(|_| "the SDK is gone".to_owned())?;
            answer.await.map_err(|_| "the SDK is gone".to_owned())?
        })
    }
}
