//! Reading the history without changing it: its size in bytes (for the
//! token estimate), where the last request and the recent turns start
//! (what pruning and compaction keep whole), and each message's role and
//! plain text (for compaction's summary and the session views).

use async_openai::types::chat::{
    ChatCompletionMessageToolCalls, ChatCompletionRequestAssistantMessageContent, ChatCompletionRequestMessage,
    ChatCompletionRequestSystemMessageContent, ChatCompletionRequestToolMessageContent,
    ChatCompletionRequestUserMessageContent,
};

use super::{Conversation, note_text};

impl Conversation {
    /// Bytes of all messages as sent (see [`MESSAGE_OVERHEAD`](super::MESSAGE_OVERHEAD)).
    pub fn bytes(&self) -> usize {
        self.sizes.iter().sum()
    }

    /// Bytes of message `index`.
    pub fn bytes_of(&self, index: usize) -> usize {
        self.sizes.get(index).copied().unwrap_or(0)
    }

    /// Index of the last user message that is a request (not a
    /// [`NOTE_MARK`](super::NOTE_MARK) note), if any.
    pub fn last_request(&self) -> Option<usize> {
        self.messages.iter().rposition(|m| matches!(m, ChatCompletionRequestMessage::User(_)) && note_text(m).is_none())
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
    pub(super) fn tool_name(&self, id: &str) -> Option<String> {
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
}
