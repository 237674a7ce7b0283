//! A send's budgets: tokens and tool calls it may spend.
//!
//! Owns: the [`Meter`] of one send — what it has spent, what it may spend,
//! and the rules: the model call whose usage crosses `max_total_tokens` is
//! the send's last; a tool call beyond `max_tool_calls` is not run. The
//! session reads the meter for `status_ok.budget` while the send runs, so
//! the counters are atomics.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use crate::wire::BudgetStatus;

/// What one send spent against its budgets. See the module doc.
#[derive(Debug, Default)]
pub struct Meter {
    max_total_tokens: Option<u64>,
    max_tool_calls: Option<u32>,
    total_tokens: AtomicU64,
    tool_calls: AtomicU32,
    /// A tool call was refused for the budget.
    refused: AtomicBool,
}

impl Meter {
    /// A meter with these budgets (`None`: unlimited).
    pub fn new(max_total_tokens: Option<u64>, max_tool_calls: Option<u32>) -> Meter {
        Meter { max_total_tokens, max_tool_calls, ..Meter::default() }
    }

    /// Counts a model call's tokens (prompt plus completion).
    pub fn charge_tokens(&self, tokens: u64) {
        self.total_tokens.fetch_add(tokens, Ordering::Relaxed);
    }

    /// True when the send has a token budget.
    pub fn limits_tokens(&self) -> bool {
        self.max_total_tokens.is_some()
    }

    /// True once the calls so far reached `max_total_tokens`: no more model
    /// calls.
    pub fn tokens_spent(&self) -> bool {
        self.max_total_tokens.is_some_and(|max| self.total_tokens.load(Ordering::Relaxed) >= max)
    }

    /// Takes one tool call from the budget; `false` (and the call must not
    /// run) when it is spent.
    pub fn take_tool_call(&self) -> bool {
        let taken = self
            .tool_calls
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                self.max_tool_calls.is_none_or(|max| n < max).then_some(n + 1)
            })
            .is_ok();
        if !taken {
            self.refused.store(true, Ordering::Relaxed);
        }
        taken
    }

    /// True once a tool call was refused for the budget.
    pub fn tool_calls_spent(&self) -> bool {
        self.refused.load(Ordering::Relaxed)
    }

    /// The send's tool-call budget.
    pub fn max_tool_calls(&self) -> Option<u32> {
        self.max_tool_calls
    }

    /// The figures of `status_ok.budget`.
    pub fn status(&self) -> BudgetStatus {
        BudgetStatus {
            total_tokens: self.total_tokens.load(Ordering::Relaxed),
            max_total_tokens: self.max_total_tokens,
            tool_calls: self.tool_calls.load(Ordering::Relaxed),
            max_tool_calls: self.max_tool_calls,
        }
    }

    /// The error of a spent budget, naming which and what was spent.
    pub fn exceeded(&self) -> crate::wire::ErrorEnvelope {
        let s = self.status();
        let message = match (self.tokens_spent(), s.max_total_tokens, s.max_tool_calls) {
            (true, Some(max), _) => {
                format!("the send spent {} tokens of its budget of {max} (max_total_tokens)", s.total_tokens)
            }
            (_, _, Some(max)) => format!("the send ran its {max} tool calls (max_tool_calls)"),
            _ => "the send's budget is spent".to_owned(),
        };
        let mut error = crate::wire::ErrorEnvelope::new(crate::wire::ErrorCode::BudgetExceeded, message);
        error.details = serde_json::to_value(s).ok();
        error
    }
}

/// What the model reads after the tool-call budget is spent: one answer
/// without tools, then the send ends.
pub const WRAP_UP: &str = "The tool-call budget of this task is spent: no more tool calls. Reply in plain text \
     with what you did and what you found.";

/// The result of a tool call that the budget did not allow.
pub fn not_run(max: Option<u32>) -> String {
    format!("Not run: this task's budget of {} tool calls is spent.", max.unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_count_and_refuse_past_the_limit() {
        let m = Meter::new(Some(100), Some(2));
        m.charge_tokens(60);
        assert!(!m.tokens_spent());
        m.charge_tokens(40);
        assert!(m.tokens_spent());
        assert!(m.take_tool_call() && m.take_tool_call());
        assert!(!m.tool_calls_spent());
        assert!(!m.take_tool_call());
        assert!(m.tool_calls_spent());
        assert_eq!(m.status().tool_calls, 2);
        let free = Meter::new(None, None);
        free.charge_tokens(u64::MAX / 2);
        assert!(!free.tokens_spent() && free.take_tool_call());
    }
}
