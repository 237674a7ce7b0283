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

use crate::model::ToolCall;

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
    /// Files the model has read in this session (see `ToolContext::read_files`).
    pub read_files: Arc<std::sync::Mutex<std::collections::HashSet<std::path::PathBuf>>>,
}

/// Bytes a message costs beyond its text (role, ids, JSON punctuation).
const MESSAGE_OVERHEAD: usize = 16;

/// How a note of pirn's own to the model starts ([`Conversation::push_note`]):
/// a user message that is not a request (a chat template can tell them
/// apart; the demo's does).
pub const NOTE_MARK: &str = "[pirn] ";

/// Marks a tool result replaced by [`Conversation::prune_tool_results`].
pub const PRUNED_MARK: &str = "[pruned: ";

/// What [`Conversation::prune_tool_results`] did.
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
        Conversation { messages, sizes, count, budget: crate::context::Budget::default(), read_files: Arc::default() }
    }

    /// Bytes of all messages as sent (see [`MESSAGE_OVERHEAD`]).
    pub fn bytes(&self) -> usize {
        self.sizes.iter().sum()
    }

    /// Bytes of message `index`.
    pub fn bytes_of(&self, index: usize) -> usize {
        self.sizes.get(index).copied().unwrap_or(0)
    }

    /// Index of the last user message that is a request (not a
    /// [`NOTE_MARK`] note), if any.
    pub fn last_request(&self) -> Option<usize> {
        self.messages.iter().rposition(|m| match m {
            ChatCompletionRequestMessage::User(u) => match &u.content {
                ChatCompletionRequestUserMessageContent::Text(t) => !t.starts_with(NOTE_MARK),
                _ => true,
            },
            _ => false,
        })
    }

    /// Index from which the last `turns` model answers (assistant messages,
    /// with their tool results) stand; everything from there on is kept
    /// whole by pruning and compaction. `len()` when there are none.
    pub fn recent_start(&self, turns: usize) -> usize {
        let assistants: Vec<usize> = self
            .messages
            .iter()
            .enumerate()
            .filter(|(_, m)| matches!(m, ChatCompletionRequestMessage::Assistant(_)))
            .map(|(i, _)| i)
            .collect();
        match assistants.len().checked_sub(turns) {
            Some(k) => assistants[k],
            None => assistants.first().copied().unwrap_or(self.messages.len()),
        }
    }

    /// Replaces the oldest tool results before `protect_from` by short stubs
    /// until at least `to_free` bytes are freed (or none is left). The
    /// system prompt, user messages and every tool call stay; a call keeps
    /// its (stub) result, so the history stays valid.
    pub fn prune_tool_results(&mut self, to_free: usize, protect_from: usize) -> Pruned {
        let mut done = Pruned::default();
        for i in 0..protect_from.min(self.messages.len()) {
            if done.bytes_freed >= to_free {
                break;
            }
            let ChatCompletionRequestMessage::Tool(t) = &self.messages[i] else { continue };
            let ChatCompletionRequestToolMessageContent::Text(text) = &t.content else { continue };
            if text.starts_with(PRUNED_MARK) {
                continue;
            }
            let name = self.tool_name(&t.tool_call_id).unwrap_or_else(|| "tool".to_owned());
            let stub = format!(
                "{PRUNED_MARK}{name} output of {} lines ({} bytes) removed to save context; call the tool again if you need it]",
                text.lines().count(),
                text.len()
            );
            if stub.len() + 32 >= text.len() {
                continue;
            }
            let freed = text.len() - stub.len();
            let call_id = t.tool_call_id.clone();
            self.messages[i] = ChatCompletionRequestMessage::Tool(ChatCompletionRequestToolMessage {
                content: ChatCompletionRequestToolMessageContent::Text(stub),
                tool_call_id: call_id,
            });
            self.sizes[i] = message_bytes(&self.messages[i]);
            done.messages += 1;
            done.bytes_freed += freed;
        }
        done
    }

    /// The older conversation becomes one summary: the messages are the
    /// system prompt, a user message carrying `summary` (and the request
    /// being worked on, verbatim), then `messages[keep_from..]`, which must
    /// start at a user or assistant message (never between a call and its
    /// result).
    pub fn compact(&mut self, keep_from: usize, summary: &str) {
        let keep_from = keep_from.min(self.messages.len());
        let system = matches!(self.messages.first(), Some(ChatCompletionRequestMessage::System(_)));
        let current = self.last_request().filter(|&u| u < keep_from).map(|u| self.text_of(u));
        let mut text = format!("[Summary of the earlier conversation, written to save context]\n{}", summary.trim());
        if let Some(request) = current {
            text.push_str("\n\n[The request being worked on]\n");
            text.push_str(&request);
        }
        let summary_msg = ChatCompletionRequestMessage::User(ChatCompletionRequestUserMessage {
            content: ChatCompletionRequestUserMessageContent::Text(text),
            name: None,
        });
        let mut messages = Vec::with_capacity(self.messages.len() - keep_from + 2);
        if system {
            messages.push(self.messages[0].clone());
        }
        messages.push(summary_msg);
        messages.extend(self.messages.drain(keep_from..));
        self.messages = messages;
        self.sizes = self.messages.iter().map(message_bytes).collect();
        let without_system = self.messages.len() - usize::from(system);
        self.count.store(without_system as u64, Ordering::Relaxed);
    }

    /// The plain text of message `index` (its content, or its tool calls).
    pub fn text_of(&self, index: usize) -> String {
        match self.messages.get(index) {
            Some(ChatCompletionRequestMessage::System(m)) => match &m.content {
                ChatCompletionRequestSystemMessageContent::Text(t) => t.clone(),
                _ => String::new(),
            },
            Some(ChatCompletionRequestMessage::User(m)) => match &m.content {
                ChatCompletionRequestUserMessageContent::Text(t) => t.clone(),
                _ => String::new(),
            },
            Some(ChatCompletionRequestMessage::Assistant(m)) => {
                let mut out = match &m.content {
                    Some(ChatCompletionRequestAssistantMessageContent::Text(t)) => t.clone(),
                    _ => String::new(),
                };
                for c in m.tool_calls.iter().flatten() {
                    if let ChatCompletionMessageToolCalls::Function(f) = c {
                        out.push_str(&format!("\n[called {}({})]", f.function.name, f.function.arguments));
                    }
                }
                out
            }
            Some(ChatCompletionRequestMessage::Tool(m)) => match &m.content {
                ChatCompletionRequestToolMessageContent::Text(t) => t.clone(),
                _ => String::new(),
            },
            _ => String::new(),
        }
    }

    /// A short role name of message `index` (`system`, `user`, `assistant`, `tool`).
    pub fn role_of(&self, index: usize) -> &'static str {
        match self.messages.get(index) {
            Some(ChatCompletionRequestMessage::System(_)) => "system",
            Some(ChatCompletionRequestMessage::User(_)) => "user",
            Some(ChatCompletionRequestMessage::Assistant(_)) => "assistant",
            Some(ChatCompletionRequestMessage::Tool(_)) => "tool",
            _ => "other",
        }
    }

    /// Number of messages, the system prompt included.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// True when there are no messages at all.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// The name of the tool that tool call `id` asked for.
    fn tool_name(&self, id: &str) -> Option<String> {
        self.messages.iter().rev().find_map(|m| match m {
            ChatCompletionRequestMessage::Assistant(a) => a.tool_calls.iter().flatten().find_map(|c| match c {
                ChatCompletionMessageToolCalls::Function(f) if f.id == id => Some(f.function.name.clone()),
                _ => None,
            }),
            _ => None,
        })
    }

    /// All messages, for the request body.
    pub fn messages(&self) -> &[ChatCompletionRequestMessage] {
        &self.messages
    }

    fn push(&mut self, m: ChatCompletionRequestMessage) {
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
    pub fn push_assistant(&mut self, text: &str, tool_calls: &[ToolCall]) {
        let calls: Vec<ChatCompletionMessageToolCalls> = tool_calls
            .iter()
            .map(|c| {
                ChatCompletionMessageToolCalls::Function(ChatCompletionMessageToolCall {
                    id: c.id.clone(),
                    function: FunctionCall { name: c.name.clone(), arguments: c.arguments.clone() },
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repair_answers_dangling_tool_calls() {
        let count = Arc::new(AtomicU64::new(0));
        let mut c = Conversation::new("sys", count.clone());
        c.push_user("hi");
        let calls = [
            ToolCall { id: "a".into(), name: "bash".into(), arguments: "{}".into() },
            ToolCall { id: "b".into(), name: "bash".into(), arguments: "{}".into() },
        ];
        c.push_assistant("", &calls);
        c.push_tool_result("a", "done".into());
        assert_eq!(c.repair("cancelled"), 1);
        assert_eq!(c.repair("cancelled"), 0);
        assert_eq!(count.load(Ordering::Relaxed), 4);
    }

    #[test]
    fn pruning_stubs_the_oldest_results_and_compaction_keeps_calls_whole() {
        let mut c = Conversation::new("sys", Arc::new(AtomicU64::new(0)));
        c.push_user("fix the bug");
        for i in 0..4 {
            let call = ToolCall { id: format!("c{i}"), name: "read_file".into(), arguments: "{}".into() };
            c.push_assistant("", std::slice::from_ref(&call));
            c.push_tool_result(&call.id, "x\n".repeat(2000));
        }
        let before = c.bytes();
        let protect = c.recent_start(2);
        assert_eq!(c.role_of(protect), "assistant");
        let p = c.prune_tool_results(5000, protect);
        assert_eq!(p.messages, 2, "two oldest results, the last two answers kept");
        assert_eq!(before - c.bytes(), p.bytes_freed);
        assert!(c.text_of(3).starts_with(PRUNED_MARK) && c.text_of(3).contains("read_file output of 2000 lines"));
        assert_eq!(c.prune_tool_results(usize::MAX, protect).messages, 0, "pruned once only");
        c.compact(protect, "read two files");
        assert_eq!(c.role_of(1), "user");
        assert!(c.text_of(1).contains("read two files") && c.text_of(1).contains("fix the bug"));
        assert_eq!(c.role_of(2), "assistant");
        assert_eq!(c.len(), 2 + 4);
        assert_eq!(c.bytes(), (0..c.len()).map(|i| c.bytes_of(i)).sum::<usize>());
    }

    #[test]
    fn notes_are_not_requests() {
        let mut c = Conversation::new("sys", Arc::new(AtomicU64::new(0)));
        assert!(c.is_fresh());
        c.push_user("fix the bug");
        let call = ToolCall { id: "c0".into(), name: "read_file".into(), arguments: "{}".into() };
        c.push_assistant("", std::slice::from_ref(&call));
        c.push_tool_result(&call.id, "x".into());
        c.push_assistant("fixed", &[]);
        c.push_note("That is not true yet");
        assert!(c.text_of(5).starts_with(NOTE_MARK));
        assert_eq!(c.last_request(), Some(1));
        c.push_assistant("done", &[]);
        c.compact(6, "looked at it");
        assert!(c.text_of(1).contains("[The request being worked on]\nfix the bug"), "{}", c.text_of(1));
    }
}
