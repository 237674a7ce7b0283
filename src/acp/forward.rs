//! One ACP session's output: its pirn session's messages, in order, as
//! `session/update` notifications, permission requests to the client, and
//! the answer of each prompt.
//!
//! Owns: [`run`], the one task that reads the session's outbox (so the
//! order the loop emits is the order the client sees), the memory of the
//! last tool call started (a permission request names it), the session's
//! context gauge ([`gauge::update`]), and the "always" answers of the session.

use std::sync::Arc;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, PromptResponse, RequestPermissionOutcome, RequestPermissionRequest,
    SessionNotification, ToolCallId, ToolCallUpdate, ToolCallUpdateFields,
};
use agent_client_protocol::{Client, Error};
use tokio::sync::mpsc;

use super::gauge;
use super::meta::{PromptMeta, pirn};
use super::session::AcpSession;
use super::updates;
use crate::wire::{Decision, Event, OutgoingMessage};

/// The option ids pirn offers on every permission request.
const ALLOW_ONCE: &str = "allow_once";
const ALLOW_ALWAYS: &str = "allow_always";
const REJECT_ONCE: &str = "reject_once";
const REJECT_ALWAYS: &str = "reject_always";

/// Forwards until the session's outbox closes (the session ended).
pub async fn run(s: Arc<AcpSession>, mut rx: mpsc::Receiver<OutgoingMessage>, cx: ConnectionTo<Client>) {
    let workspace = s.session.config().workspace.clone();
    let window = s.session.config().window_known(None);
    let mut last_call: Option<String> = None;
    while let Some(msg) = rx.recv().await {
        match msg {
            OutgoingMessage::Event(e) => {
                match &e.event {
                    Event::ToolStart { call_id, .. } => last_call.clone_from(call_id),
                    Event::PermissionRequest { name, reason, request_id: Some(request_id), args } => {
                        ask(&s, &cx, last_call.clone(), name, reason, request_id, args.clone());
                        continue;
                    }
                    _ => {}
                }
                // A subagent's text is its own (its answer is the task
                // call's result): only its tool calls are shown.
                if e.parent_call_id.is_some() && matches!(e.event, Event::ContentDelta { .. }) {
                    continue;
                }
                let gauged = gauge::update(&e.event, window, e.parent_call_id.is_some());
                for update in updates::from_event(&e.event, &workspace).into_iter().chain(gauged) {
                    if cx.send_notification(SessionNotification::new(s.id.clone(), update)).is_err() {
                        return;
                    }
                }
            }
            OutgoingMessage::Result(result) => {
                let responder = s.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&result.id);
                let Some(responder) = responder else { continue };
                let answered = match updates::stop_reason(&result) {
                    Ok(reason) => {
                        responder.respond(PromptResponse::new(reason).meta(pirn(&PromptMeta::from(&*result))))
                    }
                    Err((code, message)) => {
                        let data = serde_json::json!({"code": code, "message": message, "result": &*result});
                        responder.respond_with_error(Error::internal_error().data(data))
                    }
                };
                if answered.is_err() {
                    return;
                }
            }
            _ => {}
        }
    }
}

/// Answers pirn's permission request `request_id` for tool `name`: at once
/// from an "always" answer the session holds, else by asking the client
/// (`session/request_permission`, in a task of its own: the client's answer
/// arrives through the connection this forwarder must not block).
fn ask(
    s: &Arc<AcpSession>,
    cx: &ConnectionTo<Client>,
    call_id: Option<String>,
    name: &str,
    reason: &str,
    request_id: &str,
    args: Option<serde_json::Value>,
) {
    let remembered = s.always.lock().unwrap_or_else(|p| p.into_inner()).get(name).copied();
    if let Some(allow) = remembered {
        let decision = if allow { Decision::Allow } else { Decision::Deny };
        let _ = s.session.answer_permission(request_id, decision);
        return;
    }
    let args = args.unwrap_or_default();
    let fields = ToolCallUpdateFields::new()
        .title(format!("{} ({reason})", updates::title(name, &args)))
        .kind(updates::kind(name))
        .raw_input(args);
    let call = ToolCallUpdate::new(ToolCallId::new(call_id.unwrap_or_else(|| request_id.to_owned())), fields);
    let options = vec![
        PermissionOption::new(ALLOW_ONCE, "Allow", PermissionOptionKind::AllowOnce),
        PermissionOption::new(ALLOW_ALWAYS, format!("Always allow {name}"), PermissionOptionKind::AllowAlways),
        PermissionOption::new(REJECT_ONCE, "Reject", PermissionOptionKind::RejectOnce),
        PermissionOption::new(REJECT_ALWAYS, format!("Always reject {name}"), PermissionOptionKind::RejectAlways),
    ];
    let request = RequestPermissionRequest::new(s.id.clone(), call, options);
    let (s, cx, name, request_id) = (s.clone(), cx.clone(), name.to_owned(), request_id.to_owned());
    tokio::spawn(async move {
        let chosen = match cx.send_request(request).block_task().await {
            Ok(answer) => match answer.outcome {
                RequestPermissionOutcome::Selected(sel) => Some(sel.option_id.0.to_string()),
                _ => None,
            },
            Err(e) => {
                tracing::info!("the client did not answer a permission request: {e}");
                None
            }
        };
        let decision = match chosen.as_deref() {
            Some(ALLOW_ONCE) => Decision::Allow,
            Some(ALLOW_ALWAYS) => {
                s.always.lock().unwrap_or_else(|p| p.into_inner()).insert(name, true);
                Decision::Allow
            }
            Some(REJECT_ALWAYS) => {
                s.always.lock().unwrap_or_else(|p| p.into_inner()).insert(name, false);
                Decision::Deny
            }
            _ => Decision::Deny,
        };
        let _ = s.session.answer_permission(&request_id, decision);
    });
}
