//! A send's budgets: tokens, money and tool calls it may spend.
//!
//! Owns: the [`Meter`] of one send — what it has spent, what it may spend,
//! and the rules: the model call whose usage crosses `max_total_tokens` or
//! `max_cost_usd` is the send's last; a call that would pass `max_cost_usd`
//! even at the cheapest price and with no answer is not made
//! ([`BudgetPoint::Request`]); a call whose cost is unknown (no provider
//! figure, no price table) spends a cost budget, which cannot hold without
//! it; a tool call beyond `max_tool_calls` is not run. The session reads
//! the meter for `status_ok.budget` while the send runs, so the counters
//! are atomics (the dollars as `f64` bits).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use crate::wire::BudgetStatus;

/// The points of a send where its budgets are read. Every budget decision
/// of the agent loop is [`Meter::at`] of one of these:
///
/// | point | spent | then |
/// |---|---|---|
/// | `BeforeCall` (each turn's model call) | tokens or cost | end `budget_exceeded` (the last answer's text, else pirn's account) |
/// | `Request { least_cost }` (any request, side calls included, with `prices` known: its cheapest price) | the request would pass the cost budget | it is not sent: end `budget_exceeded` |
/// | `AnswerWithCalls` (a model answer that asks for tools) | tokens or cost | end `budget_exceeded`: its calls are not run |
/// | `AfterRound` (a tool round in which a call was refused) | tool calls | wrap up: one answer without tools |
/// | `WrapUpCalledTools` (the wrap-up answer asked for tools again) | tool calls | end `budget_exceeded` |
/// | `WrapUpAnswer` (the wrap-up's answer, the `BudgetStop` gate) | tool calls | end `budget_exceeded` with that answer |
///
/// A tool call beyond `max_tool_calls` is refused as it comes
/// ([`Meter::take_tool_call`]); a subagent's budget is carved out of its
/// parent's ([`Meter::carve`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BudgetPoint {
    BeforeCall,
    Request { least_cost: f64 },
    AnswerWithCalls,
    AfterRound,
    WrapUpCalledTools,
    WrapUpAnswer,
}

/// What a budget says at a [`BudgetPoint`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetCall {
    /// Go on.
    Go,
    /// Ask for one answer without tools (`WrapUp(Budget)`), then end.
    WrapUp,
    /// End the send now with [`Meter::exceeded`].
    End,
}

impl Meter {
    /// The budgets' decision at `point` (see [`BudgetPoint`]), where
    /// `wrapping_up` says the send is in its budget wrap-up.
    pub fn at(&self, point: BudgetPoint, wrapping_up: bool) -> BudgetCall {
        match point {
            BudgetPoint::BeforeCall if self.tokens_spent() => BudgetCall::End,
            BudgetPoint::Request { least_cost } if self.refuse_call(least_cost) => BudgetCall::End,
            BudgetPoint::AnswerWithCalls if self.tokens_spent() => BudgetCall::End,
            BudgetPoint::AfterRound if self.tool_calls_spent() && !wrapping_up => BudgetCall::WrapUp,
            BudgetPoint::WrapUpCalledTools | BudgetPoint::WrapUpAnswer if wrapping_up => BudgetCall::End,
            _ => BudgetCall::Go,
        }
    }
}

/// What one send spent against its budgets. See the module doc.
#[derive(Debug, Default)]
pub struct Meter {
    max_total_tokens: Option<u64>,
    max_tool_calls: Option<u32>,
    max_cost_usd: Option<f64>,
    total_tokens: AtomicU64,
    tool_calls: AtomicU32,
    /// A tool call was refused for the budget.
    refused: AtomicBool,
    /// Dollars of the priced calls so far (`f64::to_bits`).
    cost_bits: AtomicU64,
    /// Model calls charged to the cost counter.
    priced_calls: AtomicU32,
    /// A model call's cost was unknown.
    cost_unknown: AtomicBool,
    /// A model call was not made for the cost budget (its least cost, $).
    call_refused: AtomicU64,
}

impl Meter {
    /// A meter with these budgets (`None`: unlimited).
    pub fn new(max_total_tokens: Option<u64>, max_tool_calls: Option<u32>) -> Meter {
        Meter { max_total_tokens, max_tool_calls, ..Meter::default() }
    }

    /// The meter with a cost budget in US dollars as well.
    pub fn with_cost_budget(mut self, max_cost_usd: Option<f64>) -> Meter {
        self.max_cost_usd = max_cost_usd;
        self
    }

    /// Counts one model call's cost in dollars (`None`: unknown).
    pub fn charge_cost(&self, cost: Option<f64>) {
        self.priced_calls.fetch_add(1, Ordering::Relaxed);
        match cost {
            Some(c) => {
                let _ = self
                    .cost_bits
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| Some((f64::from_bits(b) + c).to_bits()));
            }
            None => self.cost_unknown.store(true, Ordering::Relaxed),
        }
    }

    /// What the send's model calls cost so far, in dollars; `None` before
    /// the first call and when a call's cost is unknown.
    pub fn cost_usd(&self) -> Option<f64> {
        let known = !self.cost_unknown.load(Ordering::Relaxed) && self.priced_calls.load(Ordering::Relaxed) > 0;
        known.then(|| f64::from_bits(self.cost_bits.load(Ordering::Relaxed)))
    }

    /// True when a call that costs at least `least` dollars would pass the
    /// cost budget: the call must not be made (and the meter remembers why).
    fn refuse_call(&self, least: f64) -> bool {
        let Some(max) = self.max_cost_usd else { return false };
        let spent = f64::from_bits(self.cost_bits.load(Ordering::Relaxed));
        let refuse = spent + least > max;
        if refuse {
            self.call_refused.store(least.to_bits(), Ordering::Relaxed);
        }
        refuse
    }

    /// True once a model call was charged ([`Meter::charge_cost`]).
    pub fn made_calls(&self) -> bool {
        self.priced_calls.load(Ordering::Relaxed) > 0
    }

    /// True when the send has a cost budget.
    pub fn limits_cost(&self) -> bool {
        self.max_cost_usd.is_some()
    }

    /// True once the calls so far reached `max_cost_usd` (or one's cost is
    /// unknown while there is a budget).
    pub fn cost_spent(&self) -> bool {
        self.max_cost_usd.is_some_and(|max| {
            self.cost_unknown.load(Ordering::Relaxed) || f64::from_bits(self.cost_bits.load(Ordering::Relaxed)) >= max
        })
    }

    /// Counts a model call's tokens (prompt plus completion).
    pub fn charge_tokens(&self, tokens: u64) {
        self.total_tokens.fetch_add(tokens, Ordering::Relaxed);
    }

    /// True when the send has a token or cost budget (the agent loop then
    /// keeps the last answer's text for the `budget_exceeded` result).
    pub fn limits_tokens(&self) -> bool {
        self.max_total_tokens.is_some() || self.max_cost_usd.is_some()
    }

    /// True once the calls so far reached `max_total_tokens` or
    /// `max_cost_usd` ([`Meter::cost_spent`]): no more model calls.
    fn tokens_spent(&self) -> bool {
        self.max_total_tokens.is_some_and(|max| self.total_tokens.load(Ordering::Relaxed) >= max) || self.cost_spent()
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
    fn tool_calls_spent(&self) -> bool {
        self.refused.load(Ordering::Relaxed)
    }

    /// The send's tool-call budget.
    pub fn max_tool_calls(&self) -> Option<u32> {
        self.max_tool_calls
    }

    /// A subagent's meter: its own budgets (`tokens`, `tool_calls`,
    /// `cost_usd`; `None`: no limit of its own), each cut to what this
    /// meter has left, so a child can never spend more than its parent.
    pub fn carve(&self, tokens: Option<u64>, tool_calls: Option<u32>, cost_usd: Option<f64>) -> Meter {
        fn least<T: PartialOrd>(a: Option<T>, b: Option<T>) -> Option<T> {
            match (a, b) {
                (Some(a), Some(b)) => Some(if b < a { b } else { a }),
                (a, b) => a.or(b),
            }
        }
        let left_tokens = self.max_total_tokens.map(|m| m.saturating_sub(self.total_tokens.load(Ordering::Relaxed)));
        let left_calls = self.max_tool_calls.map(|m| m.saturating_sub(self.tool_calls.load(Ordering::Relaxed)));
        let spent = f64::from_bits(self.cost_bits.load(Ordering::Relaxed));
        let left_cost = self.max_cost_usd.map(|m| (m - spent).max(0.0));
        Meter::new(least(tokens, left_tokens), least(tool_calls, left_calls))
            .with_cost_budget(least(cost_usd, left_cost).map(|c| c.max(f64::MIN_POSITIVE)))
    }

    /// Charges what a subagent's meter `child` spent to this one: its
    /// tokens, tool calls and cost (unknown when the child's is).
    pub fn absorb(&self, child: &Meter) {
        self.charge_tokens(child.total_tokens.load(Ordering::Relaxed));
        self.tool_calls.fetch_add(child.tool_calls.load(Ordering::Relaxed), Ordering::Relaxed);
        if child.made_calls() {
            self.charge_cost(child.cost_usd());
        }
    }

    /// The figures of `status_ok.budget`.
    pub fn status(&self) -> BudgetStatus {
        BudgetStatus {
            total_tokens: self.total_tokens.load(Ordering::Relaxed),
            max_total_tokens: self.max_total_tokens,
            tool_calls: self.tool_calls.load(Ordering::Relaxed),
            max_tool_calls: self.max_tool_calls,
            cost_usd: self.cost_usd(),
            max_cost_usd: self.max_cost_usd,
        }
    }

    /// The error of a spent budget, naming which and what was spent.
    pub fn exceeded(&self) -> crate::wire::ErrorEnvelope {
        let s = self.status();
        let tokens_spent = self.max_total_tokens.is_some_and(|max| s.total_tokens >= max);
        let refused = f64::from_bits(self.call_refused.load(Ordering::Relaxed));
        let message = match (tokens_spent, s.max_total_tokens, s.max_tool_calls) {
            _ if self.cost_unknown.load(Ordering::Relaxed) && self.limits_cost() => format!(
                "the cost of a model call is unknown (the provider sent none and config.prices is not set), so \
                 the cost budget of ${} (max_cost_usd) cannot hold",
                self.max_cost_usd.unwrap_or(0.0)
            ),
            _ if refused > 0.0 => format!(
                "the next model call would cost at least ${refused:.6}, which passes the send's cost budget: \
                 ${:.6} spent of ${} (max_cost_usd)",
                s.cost_usd.unwrap_or(0.0),
                self.max_cost_usd.unwrap_or(0.0)
            ),
            _ if self.cost_spent() => format!(
                "the send spent ${:.6} of its cost budget of ${} (max_cost_usd)",
                s.cost_usd.unwrap_or(0.0),
                self.max_cost_usd.unwrap_or(0.0)
            ),
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
    fn each_point_decides_from_what_is_spent() {
        let m = Meter::new(Some(100), Some(1)).with_cost_budget(Some(1.0));
        assert_eq!(m.at(BudgetPoint::BeforeCall, false), BudgetCall::Go);
        assert_eq!(m.at(BudgetPoint::Request { least_cost: 0.5 }, false), BudgetCall::Go);
        assert_eq!(m.at(BudgetPoint::Request { least_cost: 1.5 }, false), BudgetCall::End, "would pass $1");
        m.charge_cost(Some(0.1));
        m.charge_tokens(100);
        assert_eq!(m.at(BudgetPoint::AnswerWithCalls, false), BudgetCall::End);
        assert_eq!(m.at(BudgetPoint::BeforeCall, false), BudgetCall::End);
        assert!(m.take_tool_call() && !m.take_tool_call(), "one tool call, the second refused");
        assert_eq!(m.at(BudgetPoint::AfterRound, false), BudgetCall::WrapUp);
        assert_eq!(m.at(BudgetPoint::AfterRound, true), BudgetCall::Go, "already wrapping up");
        assert_eq!(m.at(BudgetPoint::WrapUpAnswer, false), BudgetCall::Go, "not the budget's wrap-up");
        assert_eq!(m.at(BudgetPoint::WrapUpAnswer, true), BudgetCall::End);
        assert_eq!(m.at(BudgetPoint::WrapUpCalledTools, true), BudgetCall::End);
    }

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
        assert_eq!(free.cost_usd(), None);
    }

    #[test]
    fn cost_budget_counts_dollars_and_refuses_unknown_costs() {
        let m = Meter::new(None, None).with_cost_budget(Some(0.01));
        m.charge_cost(Some(0.004));
        assert!(!m.tokens_spent() && m.limits_tokens());
        assert!(!m.refuse_call(0.005));
        assert!(m.refuse_call(0.007));
        assert!(m.exceeded().message.contains("at least $0.007"), "{}", m.exceeded().message);
        m.charge_cost(Some(0.006));
        assert!(m.tokens_spent());
        assert_eq!(m.status().cost_usd, Some(0.01));
        let blind = Meter::new(None, None).with_cost_budget(Some(1.0));
        blind.charge_cost(None);
        assert!(blind.tokens_spent() && blind.cost_usd().is_none());
        assert!(blind.exceeded().message.contains("unknown"));
    }
}
