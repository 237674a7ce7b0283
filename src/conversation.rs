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
    /// Messages other than the system prompt; read by `status` from other tasks.
    count: Arc<AtomicU64>,
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
        Conversation { messages, count }
    }

    /// All messages, for the request body.
    pub fn messages(&self) -> &[ChatCompletionRequestMessage] {
        &self.messages
    }

    fn push(&mut self, m: ChatCompletionRequestMessage) {
        self.messages.push(m);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// Appends the user's message.
    pub fn push_user(&mut self, text: &str) {
        self.push(ChatCompletionRequestMessage::User(ChatCompletionRequestUserMessage {
            content: ChatCompletionRequestUserMessageContent::Text(text.to_owned()),
            name: None,
        }));
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
}
