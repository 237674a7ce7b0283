//! The editor's context gauge (ACP's `usage_update`: `used` tokens of a
//! `size`-token window) from pirn's events.
//!
//! Owns: [`Gauge`], what one session's gauge shows, and the rule that
//! keeps side calls off it. The gauge is the size of the conversation's
//! prompt. A conversation only grows until pirn shortens it, so the gauge
//! moves up with each model call's prompt and down only when pirn says it
//! shortened the conversation (`context_prune`, `context_compact`: to
//! pirn's estimate of the shortened prompt; the first call after a
//! compaction then sets it whatever its size). A `usage` whose prompt is
//! smaller than the gauge is a side call's (a profile's reading of the
//! request or answer, a compaction's summary: short prompts of their own)
//! and leaves it, as does a subagent's (its conversation is its own). The
//! events carry no mark of a side call: the sizes are what tells them
//! apart (a provider's fallback model that counts the same prompt as fewer
//! tokens leaves the gauge where it was until the conversation grows).

use agent_client_protocol::v1::schema::{SessionUpdate, UsageUpdate};

use crate::wire::Event;

/// One ACP session's context gauge.
#[derive(Debug, Default)]
pub struct Gauge {
    /// `used` as last shown; `None` before the first, and after a
    /// compaction (the next call's prompt is shown whatever its size).
    shown: Option<u64>,
}

impl Gauge {
    /// The `usage_update` event `event` makes, if any. `window`: the
    /// context window in tokens (no update without it); `subagent`: the
    /// event is a subagent's.
    pub fn update(&mut self, event: &Event, window: Option<u32>, subagent: bool) -> Option<SessionUpdate> {
        let used = match event {
            Event::Usage(u) if !subagent && self.shown.is_none_or(|s| u.prompt_tokens >= s) => {
                self.shown = Some(u.prompt_tokens);
                u.prompt_tokens
            }
            Event::ContextPrune { tokens_after, .. } if !subagent => {
                self.shown = Some(*tokens_after);
                *tokens_after
            }
            Event::ContextCompact { tokens_after, .. } if !subagent => {
                self.shown = None;
                (*tokens_after)?
            }
            _ => return None,
        };
        let size = window?;
        Some(SessionUpdate::UsageUpdate(UsageUpdate::new(used, u64::from(size))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Usage;

    fn usage(prompt: u64) -> Event {
        Event::Usage(Usage {
            prompt_tokens: prompt,
            completion_tokens: 3,
            total_tokens: prompt + 3,
            ..Usage::default()
        })
    }

    fn used(g: &mut Gauge, e: &Event) -> Option<u64> {
        match g.update(e, Some(32_000), false)? {
            SessionUpdate::UsageUpdate(u) => Some(u.used),
            _ => None,
        }
    }

    #[test]
    fn side_calls_and_subagents_leave_the_gauge_and_a_compaction_lowers_it() {
        let mut g = Gauge::default();
        assert_eq!(used(&mut g, &usage(100)), Some(100));
        assert_eq!(used(&mut g, &usage(7)), None, "a reading's prompt");
        assert!(g.update(&usage(900), Some(32_000), true).is_none(), "a subagent's");
        assert_eq!(used(&mut g, &usage(140)), Some(140));
        let prune = Event::ContextPrune { messages_pruned: 2, tokens_before: 140, tokens_after: 90 };
        assert_eq!(used(&mut g, &prune), Some(90));
        assert_eq!(used(&mut g, &usage(60)), None, "a summary's prompt");
        let compact = Event::ContextCompact { tokens_before: Some(90), tokens_after: Some(40), summary_tokens: None };
        assert_eq!(used(&mut g, &compact), Some(40));
        assert_eq!(used(&mut g, &usage(38)), Some(38), "the first call after a compaction");
        assert!(Gauge::default().update(&usage(5), None, false).is_none(), "no window, no gauge");
    }
}
