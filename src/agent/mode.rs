//! The one piece of state that shapes the next request of a send: whether
//! the model may call tools, and why not.
//!
//! Owns: [`Mode`] and [`WrapUp`]. It replaces the loose flags the loop once
//! kept (`wrap_up`, `cycle_stop`, `budget_stop`, `structured`): each is one
//! variant here, so no two can disagree.

/// What the next request asks of the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// The ordinary turn: tools offered, any answer possible.
    #[default]
    Work,
    /// One answer without tools (`tool_choice: "none"`), for the reason given.
    WrapUp(WrapUp),
    /// The answer again, without tools and with `response_format`, after
    /// one that missed the send's `output_schema`.
    Structured,
    /// One request in which the model must call a tool (`tool_choice:
    /// "required"`): it answered without any file having changed, and it
    /// reads its answer as reporting a change (the `Claimed` gate) or the
    /// request as asking for one (the `Asked` gate); or the operator's
    /// check failed after an answer that changed nothing (the `Verify`
    /// gate); or, in a checked send with nothing written, it asked again
    /// for a result it had (`round`). An answer a gate sends back this way
    /// is left out of the history (`SendCx::again`). Work again after that
    /// round. A provider may not hold the model to it (llama.cpp only
    /// forbids ending without a call).
    Act,
}

/// Why the model is asked for its answer without tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WrapUp {
    /// It made the same tool calls [`super::LOOP_REPEATS`] times in a row.
    Loop,
    /// Every call of its answer repeated one of its previous answer that
    /// worked, with nothing changed since: it has what it asked for.
    Repeated,
    /// Its calls went round the same cycle a second time: its answer ends
    /// the send as `loop_detected`.
    SecondCycle,
    /// It rewrote a file with exactly the bytes it already held, or with
    /// the same lines and only white space at their ends changed (the
    /// write landed as sent; see [`crate::tools::same_lines`]), or made an
    /// edit the workspace already shows made
    /// ([`crate::tools::Effect::MadeAlready`]: nothing written).
    Redone,
    /// The send's tool-call budget is spent: its answer ends the send as
    /// `budget_exceeded`.
    Budget,
}

impl Mode {
    /// True when the next request forbids tool calls.
    pub fn no_tools(self) -> bool {
        matches!(self, Mode::WrapUp(_) | Mode::Structured)
    }

    /// True when this is a wrap-up (for any reason).
    pub fn is_wrap_up(self) -> bool {
        matches!(self, Mode::WrapUp(_))
    }
}

impl WrapUp {
    /// Why the answer was asked for, as the `loop_detected` message says
    /// it ("the model made the same tool calls 3 times in a row").
    pub fn said(self) -> String {
        match self {
            WrapUp::Loop => format!("the model made the same tool calls {} times in a row", super::LOOP_REPEATS),
            WrapUp::Repeated => "the model asked again for tool results it already had".to_owned(),
            WrapUp::SecondCycle => "the model went round the same tool calls twice".to_owned(),
            WrapUp::Redone => {
                "the model rewrote a file with the lines it already held, or made an edit already made".to_owned()
            }
            WrapUp::Budget => "the send's tool calls were spent".to_owned(),
        }
    }
}
