//! `session/load`, `session/fork` and `session/list`: pirn's durable
//! sessions as ACP sees them.
//!
//! Owns: the replay of a stored conversation as `session/update`
//! notifications before `session/load` answers (the user's messages as
//! `user_message_chunk`, the model's as `agent_message_chunk`, each tool
//! call as `tool_call` with its final status and result), and the listing.
//! pirn's own notes to the model (`[pirn] …`) are not part of what the
//! user said and are not replayed.

use std::sync::Arc;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, ForkSessionRequest, ForkSessionResponse, LoadSessionRequest, LoadSessionResponse,
    SessionId, SessionInfo, SessionNotification, SessionUpdate, TextContent, ToolCall, ToolCallContent, ToolCallId,
    ToolCallStatus,
};
use agent_client_protocol::{Client, Error, Responder, V1};
use async_openai::types::chat::{
    ChatCompletionMessageToolCalls, ChatCompletionRequestAssistantMessageContent, ChatCompletionRequestMessage,
    ChatCompletionRequestToolMessageContent, ChatCompletionRequestUserMessageContent,
};

use super::state::Acp;
use super::updates;
use crate::conversation::NOTE_MARK;

/// Sessions as `session/list` shows them (see [`list`]).
pub(crate) type Listed = Vec<SessionInfo>;

/// Sessions listed at most.
const MAX_LISTED: usize = 100;

/// Opens stored session `req.session_id` in `req.cwd`, replays it to the
/// client, then answers.
pub async fn session(
    acp: &Arc<Acp>,
    req: LoadSessionRequest,
    responder: Responder<LoadSessionResponse, V1>,
    cx: ConnectionTo<Client>,
) -> Result<(), Error> {
    let id = req.session_id.0.to_string();
    let Some(store) = acp.env.store.clone() else {
        return responder.respond_with_error(Error::invalid_params().data(serde_json::json!("persistence is off")));
    };
    let entries = match store.load(&id, 0).await {
        Ok(e) => e,
        Err(e) => return responder.respond_with_error(Error::invalid_params().data(serde_json::json!(e.to_string()))),
    };
    let messages = crate::store::fold::fold(&entries).messages;
    let config = acp.config(&req.cwd, &req.mcp_servers, Some(&id));
    let s = match acp.open(&config, &cx).await {
        Ok(s) => s,
        Err(e) => return responder.respond_with_error(e),
    };
    for update in replay(&messages) {
        cx.send_notification(SessionNotification::new(s.id.clone(), update))?;
    }
    responder.respond(LoadSessionResponse::new().meta(s.profile_meta()))
}

/// `session/fork` (ACP's unstable method, offered in
/// `sessionCapabilities.fork`): a new session holding a copy of stored
/// session `req.session_id` (pirn's `fork_session`; the stored one is not
/// changed), in `req.cwd`. Nothing is replayed: the client holds the
/// conversation it forks.
pub async fn fork(
    acp: &Arc<Acp>,
    req: ForkSessionRequest,
    responder: Responder<ForkSessionResponse, V1>,
    cx: ConnectionTo<Client>,
) -> Result<(), Error> {
    let id = req.session_id.0.to_string();
    let mut config = acp.config(&req.cwd, &req.mcp_servers, Some(&id));
    config.fork_session = Some(true);
    match acp.open(&config, &cx).await {
        Ok(s) => responder.respond(ForkSessionResponse::new(s.id.clone()).meta(s.profile_meta())),
        Err(e) => responder.respond_with_error(e),
    }
}

/// The updates that show `messages` (a stored conversation) to a client.
pub fn replay(messages: &[ChatCompletionRequestMessage]) -> Vec<SessionUpdate> {
    let text = |t: &str| ContentChunk::new(ContentBlock::Text(TextContent::new(t.to_owned())));
    let mut out: Vec<SessionUpdate> = Vec::new();
    // Tool calls wait for their result, to be shown with their final status.
    let mut calls: Vec<(String, String, serde_json::Value)> = Vec::new();
    for m in messages {
        match m {
            ChatCompletionRequestMessage::User(u) => {
                if let ChatCompletionRequestUserMessageContent::Text(t) = &u.content
                    && !t.starts_with(NOTE_MARK)
                {
                    out.push(SessionUpdate::UserMessageChunk(text(t)));
                }
            }
            ChatCompletionRequestMessage::Assistant(a) => {
                if let Some(ChatCompletionRequestAssistantMessageContent::Text(t)) = &a.content
                    && !t.trim().is_empty()
                {
                    out.push(SessionUpdate::AgentMessageChunk(text(t)));
                }
                for c in a.tool_calls.iter().flatten() {
                    if let ChatCompletionMessageToolCalls::Function(f) = c {
                        let args = serde_json::from_str(&f.function.arguments).unwrap_or_default();
                        calls.push((f.id.clone(), f.function.name.clone(), args));
                    }
                }
            }
            ChatCompletionRequestMessage::Tool(t) => {
                let Some(at) = calls.iter().position(|(id, _, _)| *id == t.tool_call_id) else { continue };
                let (id, name, args) = calls.remove(at);
                let result = match &t.content {
                    ChatCompletionRequestToolMessageContent::Text(r) => r.clone(),
                    _ => String::new(),
                };
                let status =
                    if result.starts_with("Error:") { ToolCallStatus::Failed } else { ToolCallStatus::Completed };
                let call = ToolCall::new(ToolCallId::new(id), updates::title(&name, &args))
                    .kind(updates::kind(&name))
                    .status(status)
                    .raw_input(args)
                    .content(vec![ToolCallContent::from(crate::tools::preview(&result))]);
                out.push(SessionUpdate::ToolCall(call));
            }
            _ => {}
        }
    }
    out
}

/// The stored sessions, most recent first (at most [`MAX_LISTED`]), those
/// of workspace `cwd` only when it is given.
pub async fn list(acp: &Arc<Acp>, cwd: Option<&std::path::Path>) -> Listed {
    let Some(store) = acp.env.store.clone() else { return Vec::new() };
    let Ok(mut stored) = store.list().await else { return Vec::new() };
    stored.sort_by_key(|s| std::cmp::Reverse(s.updated_ms));
    let mut out = Vec::new();
    for info in stored.into_iter().take(MAX_LISTED) {
        let Ok(entries) = store.load(&info.session_id, 0).await else { continue };
        let folded = crate::store::fold::fold(&entries);
        let workspace = std::path::PathBuf::from(&folded.workspace);
        if cwd.is_some_and(|c| c != workspace) {
            continue;
        }
        let title = Some(info.title.clone()).filter(|t| !t.is_empty());
        out.push(SessionInfo::new(SessionId::new(info.session_id.clone()), workspace).title(title));
    }
    out
}
