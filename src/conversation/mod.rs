//! The conversation of a session: the messages sent to the model on every
//! call, kept across sends (multi-turn).
//!
//! Owns: message construction with async-openai's request types, the message
//! count that `status` reads while a send runs, and [`Conversation::repair`],
//! which keeps the history valid after a cancelled or failed send (every
//! assistant tool call gets a tool result).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_openai::types::chat::{
    ChatCompletionMessageToolCall, ChatCompletionMessageToolCalls, ChatCompletionRequestAssistantMessage,
    ChatCompletionRequestAssistantMessageContent, ChatCompletionRequestMessage, ChatCompletionRequestSystemMessage,
    ChatCompletionRequestSystemMessageContent, ChatCompletionRequestToolMessage,
    ChatCompletionRequestToolMessageContent, ChatCompletionRequestUserMessage, ChatCompletionRequestUserMessageContent,
    FunctionCall,
};

mod plan;
mod views;

pub use plan::{Plan, last_plan};

use crate::model::ToolCall;
use crate::store::{Body, Journal};

/// Messages in model order; the system prompt first.
#[derive(Debug)]
pub struct Conversation {
    messages: Vec<ChatCompletionRequestMessage>,
    /// Bytes of each message as it is sent (text, tool-call arguments, a
    /// small per-message overhead), for the token estimate.
    sizes: Vec<usize>,
    /// Messages other than the system prompt; read by `status` from other tasks.
    count: Arc<AtomicU64>,
    /// Token accounting against the context window.
    pub budget: crate::context::Budget,
    /// Files the model has seen in this session, each with the hash of the
    /// bytes it saw (see `ToolContext::read_files`).
    pub read_files: Arc<std::sync::Mutex<std::collections::HashMap<std::path::PathBuf, u64>>>,
    /// The model's plan (see [`plan`]).
    pub plan: Plan,
    /// Where each committed message is logged (none when not persisted).
    journal: Option<Journal>,
    /// The `seen` entry last logged (see [`views`]).
    seen_logged: Vec<crate::store::FileSeen>,
}

/// Bytes a message costs beyond its text (role, ids, JSON punctuation).
const MESSAGE_OVERHEAD: usize = 16;

/// How a note of pirn's own to the model starts ([`Conversation::push_note`]):
/// a user message that is not a request (a chat template can tell them
/// apart; the demo's does).
pub const NOTE_MARK: &str = "[pirn] ";

/// Longest wait for a tool round to reach the log before the next model
/// call (a store that stalls longer is reported by the journal itself).
pub const COMMIT_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Marks an output replaced by [`Conversation::prune_outputs`] (a note's
/// stub has it after [`NOTE_MARK`]).
pub const PRUNED_MARK: &str = "[pruned: ";

/// What [`Conversation::prune_outputs`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    pub messages: usize,
    pub bytes_freed: usize,
}

impl Conversation {
    /// A conversation holding only `system_prompt` (none when empty).
    pub fn new(system_prompt: &str, count: Arc<AtomicU64>) -> Self {
        let mut messages = Vec::new();
        if !system_prompt.is_empty() {
            messages.push(ChatCompletionRequestMessage::System(ChatCompletionRequestSystemMessage {
                content: ChatCompletionRequestSystemMessageContent::Text(system_prompt.to_owned()),
                name: None,
            }));
        }
        count.store(0, Ordering::Relaxed);
        let sizes = messages.iter().map(message_bytes).collect();
        Conversation {
            messages,
            sizes,
            count,
            budget: crate::context::Budget::default(),
            read_files: Arc::default(),
            plan: Plan::default(),
            journal: None,
            seen_logged: Vec::new(),
        }
    }

    /// A conversation continuing `messages` (a resumed session's history,
    /// system prompt included when it had one).
    pub fn restore(messages: Vec<ChatCompletionRequestMessage>, count: Arc<AtomicU64>) -> Self {
        let mut c = Conversation::new("", count);
        for m in messages {
            c.push(m);
        }
        if matches!(c.messages.first(), Some(ChatCompletionRequestMessage::System(_))) {
            c.count.fetch_sub(1, Ordering::Relaxed);
        }
        if let Some(todos) = last_plan(&c.messages) {
            *c.plan.lock().unwrap_or_else(|p| p.into_inner()) = todos;
        }
        c
    }

    /// Logs the files the model has seen (a `seen` entry, paths relative to
    /// `workspace`) when they changed since last logged; nothing when the
    /// session is not logged. Called at the end of a send.
    pub fn log_seen(&mut self, workspace: &std::path::Path) {
        let Some(journal) = &self.journal else { return };
        let files =
            views::entry(&self.read_files.lock().unwrap_or_else(|p| p.into_inner()), workspace, &self.seen_logged);
        if let Some(files) = files {
            journal.record(Body::Seen { files: files.clone() });
            self.seen_logged = files;
        }
    }

    /// Takes back the files a resumed session's model had seen (its log's
    /// last `seen` entry) under `workspace`.
    pub fn restore_seen(&mut self, files: &[crate::store::FileSeen], workspace: &std::path::Path) {
        *self.read_files.lock().unwrap_or_else(|p| p.into_inner()) = views::restore(files, workspace);
        self.seen_logged = files.to_vec();
    }

    /// Logs every message committed from now on to `journal`.
    pub fn log_to(&mut self, journal: Journal) {
        self.journal = Some(journal);
    }

    /// Logs the conversation as it stands (a new session's system prompt)
    /// and every message from now on to `journal`: a resume then gets the
    /// whole conversation back, whatever the configuration.
    pub fn start_log(&mut self, journal: Journal) {
        self.journal = Some(journal);
        if !self.messages.is_empty() {
            self.log_history();
        }
    }

    /// Puts `system_prompt` first when the conversation has no system
    /// message (a resumed log written without one), and logs the result.
    pub fn ensure_system(&mut self, system_prompt: &str) {
        if system_prompt.is_empty() || matches!(self.messages.first(), Some(ChatCompletionRequestMessage::System(_))) {
            return;
        }
        let system = ChatCompletionRequestMessage::System(ChatCompletionRequestSystemMessage {
            content: ChatCompletionRequestSystemMessageContent::Text(system_prompt.to_owned()),
            name: None,
        });
        self.sizes.insert(0, message_bytes(&system));
        self.messages.insert(0, system);
        self.log_history();
    }

    /// Waits until every message committed so far is in the session's log
    /// (at most [`COMMIT_WAIT`]; at once without a log or while the store
    /// is failing). The agent loop calls it after a tool round, before the
    /// next model call: a worker killed after that resumes with the round's
    /// results instead of answering its calls "no result".
    pub async fn committed(&self) {
        let Some(j) = self.journal.as_ref().filter(|j| j.failure().is_none()) else { return };
        let _ = tokio::time::timeout(COMMIT_WAIT, j.durable()).await;
    }

    /// Logs the whole history, which an edit (not an append) changed.
    fn log_history(&self) {
        if let Some(j) = &self.journal {
            let messages = self.messages.iter().filter_map(|m| serde_json::to_value(m).ok()).collect();
            j.record(Body::History { messages });
        }
    }

    fn push(&mut self, m: ChatCompletionRequestMessage) {
        if let Some(j) = &self.journal
            && let Ok(message) = serde_json::to_value(&m)
        {
            j.record(Body::Message { message });
        }
        self.sizes.push(message_bytes(&m));
        self.messages.push(m);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// Appends `text` to the system prompt (nothing when there is none).
    pub fn extend_system(&mut self, text: &str) {
        if let Some(ChatCompletionRequestMessage::System(s)) = self.messages.first_mut()
            && let ChatCompletionRequestSystemMessageContent::Text(t) = &mut s.content
        {
            t.push_str(text);
            self.sizes[0] = message_bytes(&self.messages[0]);
            self.log_history();
        }
    }

    /// True before the first request.
    pub fn is_fresh(&self) -> bool {
        self.last_request().is_none()
    }

    /// Appends the user's message.
    pub fn push_user(&mut self, text: &str) {
        self.push(ChatCompletionRequestMessage::User(ChatCompletionRequestUserMessage {
            content: ChatCompletionRequestUserMessageContent::Text(text.to_owned()),
            name: None,
        }));
    }

    /// Appends a note of pirn's own to the model: a user message starting
    /// with [`NOTE_MARK`].
    pub fn push_note(&mut self, text: &str) {
        self.push_user(&format!("{NOTE_MARK}{text}"));
    }

    /// Appends the model's answer: its text and the tool calls it asked for.
    /// A call whose arguments are not JSON (cut off at `max_tokens`, or
    /// malformed) is kept with the arguments `{}`: a server that renders the
    /// history through a chat template (llama.cpp) parses every past call's
    /// arguments and refuses the whole request over one that does not
    /// parse. The call's result says what was wrong with what was sent.
    pub fn push_assistant(&mut self, text: &str, tool_calls: &[ToolCall]) {
        let calls: Vec<ChatCompletionMessageToolCalls> = tool_calls
            .iter()
            .map(|c| {
                let parses = serde_json::from_str::<serde::de::IgnoredAny>(&c.arguments).is_ok();
                let arguments = if parses { c.arguments.clone() } else { "{}".to_owned() };
                ChatCompletionMessageToolCalls::Function(ChatCompletionMessageToolCall {
                    id: c.id.clone(),
                    function: FunctionCall { name: c.name.clone(), arguments },
                })
            })
            .collect();
        #[allow(deprecated)]
        let msg = ChatCompletionRequestAssistantMessage {
            content: if text.is_empty() && !calls.is_empty() {
                None
            } else {
                Some(ChatCompletionRequestAssistantMessageContent::Text(text.to_owned()))
            },
            tool_calls: if calls.is_empty() { None } else { Some(calls) },
            ..Default::default()
        };
        self.push(ChatCompletionRequestMessage::Assistant(msg));
    }

    /// Appends the result of tool call `call_id`.
    pub fn push_tool_result(&mut self, call_id: &str, text: String) {
        self.push(ChatCompletionRequestMessage::Tool(ChatCompletionRequestToolMessage {
            content: ChatCompletionRequestToolMessageContent::Text(text),
            tool_call_id: call_id.to_owned(),
        }));
    }

    /// Gives every tool call of the last assistant message that has no result
    /// yet the result `reason`, so the next request is valid. Returns how
    /// many results were added.
    pub fn repair(&mut self, reason: &str) -> usize {
        let Some(pos) = self.messages.iter().rposition(|m| matches!(m, ChatCompletionRequestMessage::Assistant(_)))
        else {
            return 0;
        };
        let ChatCompletionRequestMessage::Assistant(a) = &self.messages[pos] else {
            return 0;
        };
        let wanted: Vec<String> = a
            .tool_calls
            .iter()
            .flatten()
            .map(|c| match c {
                ChatCompletionMessageToolCalls::Function(f) => f.id.clone(),
                ChatCompletionMessageToolCalls::Custom(c) => c.id.clone(),
            })
            .collect();
        let answered: Vec<&str> = self.messages[pos + 1..]
            .iter()
            .filter_map(|m| match m {
                ChatCompletionRequestMessage::Tool(t) => Some(t.tool_call_id.as_str()),
                _ => None,
            })
            .collect();
        let missing: Vec<String> = wanted.into_iter().filter(|id| !answered.contains(&id.as_str())).collect();
        for id in &missing {
            self.push_tool_result(id, format!("Error: {reason}"));
        }
        missing.len()
    }
}

/// The text of `m` when it is a note of pirn's ([`NOTE_MARK`]).
fn note_text(m: &ChatCompletionRequestMessage) -> Option<&String> {
    match m {
        ChatCompletionRequestMessage::User(u) => match &u.content {
            ChatCompletionRequestUserMessageContent::Text(t) if t.starts_with(NOTE_MARK) => Some(t),
            _ => None,
        },
        _ => None,
    }
}

/// Bytes a message costs in a request: its text and tool-call arguments plus
/// [`MESSAGE_OVERHEAD`] (and the same per tool call).
fn message_bytes(m: &ChatCompletionRequestMessage) -> usize {
    let text = match m {
        ChatCompletionRequestMessage::System(s) => match &s.content {
            ChatCompletionRequestSystemMessageContent::Text(t) => t.len(),
            _ => 0,
        },
        ChatCompletionRequestMessage::User(u) => match &u.content {
            ChatCompletionRequestUserMessageContent::Text(t) => t.len(),
            _ => 0,
        },
        ChatCompletionRequestMessage::Assistant(a) => {
            let content = match &a.content {
                Some(ChatCompletionRequestAssistantMessageContent::Text(t)) => t.len(),
                _ => 0,
            };
            let calls: usize = a
                .tool_calls
                .iter()
                .flatten()
                .map(|c| match c {
                    ChatCompletionMessageToolCalls::Function(f) => {
                        f.function.arguments.len() + f.function.name.len() + f.id.len() + MESSAGE_OVERHEAD
                    }
                    ChatCompletionMessageToolCalls::Custom(c) => c.id.len() + MESSAGE_OVERHEAD,
                })
                .sum();
            content + calls
        }
        ChatCompletionRequestMessage::Tool(t) => match &t.content {
            ChatCompletionRequestToolMessageContent::Text(text) => text.len() + t.tool_call_id.len(),
            _ => 0,
        },
        _ => 0,
    };
    text + MESSAGE_OVERHEAD
}

mod edit;
mod inspect;
#[cfg(test)]
mod tests;
