//! Edits of the history that are not appends: pruning old tool results
//! and pirn's old notes, and compaction into a summary (to fit the context
//! window), and taking back an answer in words that was sent back (so the
//! model does not copy it). Each logs the whole history afterwards (a
//! `history` entry).

use std::sync::atomic::Ordering;

use async_openai::types::chat::{
    ChatCompletionRequestMessage, ChatCompletionRequestToolMessageContent, ChatCompletionRequestUserMessage,
    ChatCompletionRequestUserMessageContent,
};

use super::{Conversation, NOTE_MARK, PRUNED_MARK, Pruned, message_bytes, note_text};

impl Conversation {
    /// Removes the last message when it is an answer of the model's in
    /// words (an assistant message without tool calls); true when one was
    /// removed. For an answer sent back with a note that asks for a tool
    /// call ([`crate::agent`]'s `Mode::Act`): kept, a small model copies
    /// it, word for word, as its next answer (the 1.5B demo model did so in
    /// every such round measured). The answer itself was streamed and is
    /// in the result; only the model's view of the history loses it.
    pub fn withdraw_answer(&mut self) -> bool {
        let Some(ChatCompletionRequestMessage::Assistant(a)) = self.messages.last() else { return false };
        if a.tool_calls.as_ref().is_some_and(|c| !c.is_empty()) {
            return false;
        }
        self.messages.pop();
        self.sizes.pop();
        self.count.fetch_sub(1, Ordering::Relaxed);
        self.log_history();
        true
    }

    /// Replaces the oldest outputs before `protect_from` by short stubs
    /// until at least `to_free` bytes are freed (or none is left). An output
    /// is a tool result or a note of pirn's own ([`NOTE_MARK`]: a check's
    /// output, a workspace listing, a file shown in the whole-file format),
    /// never the last note (the one the model is answering). The system
    /// prompt, the user's own messages and every tool call stay; a call
    /// keeps its (stub) result, so the history stays valid.
    pub fn prune_outputs(&mut self, to_free: usize, protect_from: usize) -> Pruned {
        let mut done = Pruned::default();
        let last_note = self.messages.iter().rposition(|m| note_text(m).is_some());
        for i in 0..protect_from.min(self.messages.len()) {
            if done.bytes_freed >= to_free {
                break;
            }
            let (text, what) = match &self.messages[i] {
                ChatCompletionRequestMessage::Tool(t) => match &t.content {
                    ChatCompletionRequestToolMessageContent::Text(text) => (text, Stub::Tool(&t.tool_call_id)),
                    _ => continue,
                },
                m if Some(i) != last_note => match note_text(m) {
                    Some(text) => (text, Stub::Note),
                    None => continue,
                },
                _ => continue,
            };
            if text.strip_prefix(NOTE_MARK).unwrap_or(text).starts_with(PRUNED_MARK) {
                continue;
            }
            let (lines, len) = (text.lines().count(), text.len());
            let stub = match what {
                Stub::Tool(id) => format!(
                    "{PRUNED_MARK}{} output of {lines} lines ({len} bytes) removed to save context; call the tool again if you need it]",
                    self.tool_name(id).as_deref().unwrap_or("tool")
                ),
                Stub::Note => {
                    format!(
                        "{NOTE_MARK}{PRUNED_MARK}an earlier note of {lines} lines ({len} bytes) removed to save context]"
                    )
                }
            };
            if stub.len() + 32 >= len {
                continue;
            }
            done.bytes_freed += len - stub.len();
            match &mut self.messages[i] {
                ChatCompletionRequestMessage::Tool(t) => {
                    t.content = ChatCompletionRequestToolMessageContent::Text(stub)
                }
                ChatCompletionRequestMessage::User(u) => {
                    u.content = ChatCompletionRequestUserMessageContent::Text(stub)
                }
                _ => {}
            }
            self.sizes[i] = message_bytes(&self.messages[i]);
            done.messages += 1;
        }
        if done.messages > 0 {
            self.log_history();
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
        self.log_history();
    }
}

/// What a pruned output was: the result of tool call `id`, or a note of
/// pirn's.
enum Stub<'a> {
    Tool(&'a str),
    Note,
}
