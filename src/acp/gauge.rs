//! The editor's context gauge (ACP's `usage_update`: `used` tokens of a
//! `size`-token window) from pirn's events.
//!
//! Owns: [`update`], what a session's gauge shows. The gauge is the size
//! of the conversation's prompt: each turn's `usage` sets it, and
//! `context_prune` / `context_compact` set it to pirn's estimate of the
//! shortened prompt. A side call's usage (marked `side_call`: a profile's
//! reading, a compaction's summary, with short prompts of their own) and a
//! subagent's (its conversation is its own) leave it.

use agent_client_protocol::v1::schema::{SessionUpdate, UsageUpdate};

use crate::wire::Event;

/// The `usage_update` event `event` makes, if any. `window`: the context
/// window in tokens (no update without it); `subagent`: the event is a
/// subagent's.
pub fn update(event: &Event, window: Option<u32>, subagent: bool) -> Option<SessionUpdate> {
    let used = match event {
        Event::Usage { usage, side_call: None } if !subagent => usage.prompt_tokens,
        Event::ContextPrune { tokens_after, .. } if !subagent => *tokens_after,
        Event::ContextCompact { tokens_after, .. } if !subagent => (*tokens_after)?,
        _ => return None,
    };
    let size = window?;
    Some(SessionUpdate::UsageUpdate(UsageUpdate::new(used, u64::from(size))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Usage;

    fn usage(prompt: u64, side_call: Option<bool>) -> Event {
        let usage = Usage { prompt_tokens: prompt, completion_tokens: 3, total_tokens: prompt + 3, ..Usage::default() };
        Event::Usage { usage, side_call }
    }

    fn used(e: &Event) -> Option<u64> {
        match update(e, Some(32_000), false)? {
            SessionUpdate::UsageUpdate(u) => Some(u.used),
            _ => None,
        }
    }

    #[test]
    fn side_calls_and_subagents_leave_the_gauge_and_a_compaction_lowers_it() {
        assert_eq!(used(&usage(100, None)), Some(100));
        assert_eq!(used(&usage(7, Some(true))), None, "a reading's prompt");
        assert!(update(&usage(900, None), Some(32_000), true).is_none(), "a subagent's");
        let prune = Event::ContextPrune { messages_pruned: 2, tokens_before: 140, tokens_after: 90 };
        assert_eq!(used(&prune), Some(90));
        assert_eq!(used(&usage(60, Some(true))), None, "a summary's prompt");
        let compact = Event::ContextCompact { tokens_before: Some(90), tokens_after: Some(40), summary_tokens: None };
        assert_eq!(used(&compact), Some(40));
        assert_eq!(used(&usage(38, None)), Some(38), "a turn sets it, whatever its size");
        assert!(update(&usage(5, None), None, false).is_none(), "no window, no gauge");
    }
}
