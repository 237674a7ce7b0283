//! The model's plan as a conversation holds it: the list of the last
//! `todo_write` call that succeeded (`tools::todo`).
//!
//! Owns [`Plan`], the handle the running send writes and `status` reads, and
//! [`last_plan`], which finds the plan again in a history: a resumed session
//! and a fork (cut at a message) get the plan as it stood at their last
//! message, with nothing stored beside the conversation. A compaction that
//! summarises the call away keeps the plan in the running process, not in
//! a resume of its log.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_openai::types::chat::{
    ChatCompletionMessageToolCalls, ChatCompletionRequestMessage, ChatCompletionRequestToolMessageContent,
};

use crate::tools::todo;
use crate::wire::TodoItem;

/// The current plan (empty: none), shared by the conversation, the send
/// that changes it and the session's `status`.
pub type Plan = Arc<Mutex<Vec<TodoItem>>>;

/// The plan of the last `todo_write` call in `messages` whose result was
/// not an error, or `None` when there is none.
pub fn last_plan(messages: &[ChatCompletionRequestMessage]) -> Option<Vec<TodoItem>> {
    let mut asked: HashMap<&str, Vec<TodoItem>> = HashMap::new();
    let mut plan = None;
    for m in messages {
        match m {
            ChatCompletionRequestMessage::Assistant(a) => {
                for call in a.tool_calls.iter().flatten() {
                    if let ChatCompletionMessageToolCalls::Function(f) = call
                        && f.function.name == todo::NAME
                        && let Ok((todos, _)) = todo::parse(&f.function.arguments)
                    {
                        asked.insert(&f.id, todos);
                    }
                }
            }
            ChatCompletionRequestMessage::Tool(t) => {
                let failed = match &t.content {
                    ChatCompletionRequestToolMessageContent::Text(text) => text.starts_with("Error:"),
                    _ => false,
                };
                if let Some(todos) = asked.remove(t.tool_call_id.as_str()).filter(|_| !failed) {
                    plan = Some(todos);
                }
            }
            _ => {}
        }
    }
    plan
}
