//! Forking a stored session, and cutting a conversation at a message.
//!
//! Owns: [`fork_stored`] (a new session log holding a copy of a stored
//! session's conversation, up to a message, under a new id) and [`cut`]
//! (the conversation kept up to and including its N-th message). A fork
//! never writes to the session it copies: it reads that log, and appends
//! two entries to a new one through the same [`Store`] contract as any
//! session (so it works alike on the file store and on Postgres, and
//! survives a restart like any session): a `meta` entry naming where it
//! came from (`forked_from`) and a `history` entry with the messages kept.
//! Opening the fork is then an ordinary resume of the new id.
//!
//! Messages are counted as `status.message_count` counts them: from 1,
//! the system prompt not counted. A cut that keeps an assistant message
//! whose tool calls' results were cut away gives those calls a "no result"
//! result, so the next request is valid.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use async_openai::types::chat::ChatCompletionRequestMessage;
use serde::Serialize;

use crate::conversation::Conversation;
pub use crate::store::entry::ForkedFrom;
use crate::store::entry::now_ms;
use crate::store::fold::fold;
use crate::store::{Body, NewEntry, Store, StoreError};

/// Why a fork or a cut cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum ForkError {
    /// Not stored, or the store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The log has no `meta` entry (it was never a session's).
    #[error("its log has no meta entry")]
    NoMeta,
    /// `at` is past the messages the session holds.
    #[error("it holds {held} messages; message {at} does not exist")]
    NoSuchMessage { at: u64, held: u64 },
    /// A session with the new id is stored already.
    #[error("a session {0:?} is stored already")]
    Taken(String),
    /// `at` is 0 (messages count from 1).
    #[error("messages count from 1; message 0 does not exist")]
    Zero,
}

/// What a new session's `meta` entry holds when a fork is opened by a
/// client's `init` (its own config) rather than copied as it was.
#[derive(Debug, Clone)]
pub struct ForkMeta {
    pub protocol_version: String,
    pub model: String,
    pub workspace: String,
    pub config: serde_json::Value,
}

/// A fork made by [`fork_stored`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Forked {
    /// The new session's id.
    pub session_id: String,
    pub forked_from: ForkedFrom,
}

/// The messages of `messages` (system prompt first when it has one) up to
/// and including the `at`-th non-system message; all of them for `None`.
///
/// Errors: `at` is 0 or past the messages held.
pub fn cut(
    mut messages: Vec<ChatCompletionRequestMessage>,
    at: Option<u64>,
) -> Result<Vec<ChatCompletionRequestMessage>, ForkError> {
    let system = usize::from(matches!(messages.first(), Some(ChatCompletionRequestMessage::System(_))));
    let held = (messages.len() - system) as u64;
    match at {
        None => Ok(messages),
        Some(0) => Err(ForkError::Zero),
        Some(at) if at > held => Err(ForkError::NoSuchMessage { at, held }),
        Some(at) => {
            messages.truncate(system + at as usize);
            Ok(messages)
        }
    }
}

/// The reason a kept tool call whose result the cut dropped is given.
pub const CUT_RESULT: &str =
    "no result: the conversation was cut after this tool call (a fork or a resume at a message); it may have run";

/// Copies stored session `source`, up to its `at`-th message (all by
/// default), into a new session `new_id`: a `meta` entry (`meta`, else the
/// source's own, with `forked_from`) and a `history` entry, stored durably
/// before this returns. The source's log is only read.
///
/// Errors: the source is not stored or has no meta entry, `at` does not
/// name a message, `new_id` is taken or invalid, the store fails.
pub async fn fork_stored(
    store: &Store,
    source: &str,
    at: Option<u64>,
    new_id: &str,
    meta: Option<ForkMeta>,
) -> Result<Forked, ForkError> {
    let entries = store.load(source, 0).await?;
    let folded = fold(&entries);
    if folded.config.is_null() {
        return Err(ForkError::NoMeta);
    }
    let kept = cut(folded.messages, at)?;
    let count = Arc::new(AtomicU64::new(0));
    let mut conv = Conversation::restore(kept, count.clone());
    conv.repair(CUT_RESULT);
    let at_message = count.load(std::sync::atomic::Ordering::Relaxed);
    let forked_from = ForkedFrom { session_id: source.to_owned(), at_message };
    let source_meta = entries.iter().find_map(|e| match &e.body {
        Body::Meta { protocol_version, workspace, .. } => Some((protocol_version.clone(), workspace.clone())),
        _ => None,
    });
    let (protocol_version, workspace) = source_meta.unwrap_or_default();
    let meta = meta.unwrap_or(ForkMeta { protocol_version, model: folded.model, workspace, config: folded.config });
    let messages = conv.messages().iter().filter_map(|m| serde_json::to_value(m).ok()).collect();
    let now = now_ms();
    let bodies = [
        Body::Meta {
            session_id: new_id.to_owned(),
            protocol_version: meta.protocol_version,
            model: meta.model,
            workspace: meta.workspace,
            config: meta.config,
            forked_from: Some(forked_from.clone()),
        },
        Body::History { messages },
    ];
    let batch: Vec<NewEntry> = bodies.iter().enumerate().filter_map(|(n, b)| NewEntry::new(n as u64, now, b)).collect();
    match store.load(new_id, 0).await {
        Ok(entries) if !entries.is_empty() => return Err(ForkError::Taken(new_id.to_owned())),
        Ok(_) | Err(StoreError::NotFound(_)) => {}
        Err(e) => return Err(e.into()),
    }
    let epoch = store.claim(new_id).await?;
    let writer = uuid::Uuid::new_v4().to_string();
    let stored = store.append(new_id, Some(epoch), &writer, batch.into(), true).await;
    store.release(new_id, epoch).await;
    stored?;
    Ok(Forked { session_id: new_id.to_owned(), forked_from })
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_openai::types::chat::{
        ChatCompletionRequestSystemMessage, ChatCompletionRequestUserMessage, ChatCompletionRequestUserMessageContent,
    };

    fn user(t: &str) -> ChatCompletionRequestMessage {
        ChatCompletionRequestMessage::User(ChatCompletionRequestUserMessage {
            content: ChatCompletionRequestUserMessageContent::Text(t.into()),
            name: None,
        })
    }

    #[test]
    fn a_cut_counts_messages_from_one_without_the_system_prompt() {
        let system = ChatCompletionRequestMessage::System(ChatCompletionRequestSystemMessage {
            content: async_openai::types::chat::ChatCompletionRequestSystemMessageContent::Text("s".into()),
            name: None,
        });
        let all = vec![system, user("a"), user("b"), user("c")];
        assert_eq!(cut(all.clone(), Some(2)).unwrap(), all[..3].to_vec());
        assert_eq!(cut(all.clone(), None).unwrap().len(), 4);
        assert!(matches!(cut(all.clone(), Some(4)), Err(ForkError::NoSuchMessage { at: 4, held: 3 })));
        assert!(matches!(cut(all.clone(), Some(0)), Err(ForkError::Zero)));
        assert_eq!(cut(all[1..].to_vec(), Some(1)).unwrap(), vec![user("a")], "no system prompt: the first message");
    }
}
