//! The one piece of state that shapes the next request of a send: whether
//! the model may call tools, and why not.
//!
//! Owns: [`Mode`] and [`WrapUp`]. It replaces the loose flags the loop once
//! kept (`wrap_up`, `cycle_stop`, `budget_stop`, `structured`): each is one
//! variant here, so no two can disagree. And [`after_round`], the one place
//! a tool round's facts choose the next mode (the gates choose it for an
//! answer they send back, `SendState::again`; a steer returns a wrap-up other
//! than the budget's or a second cycle to work).

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
    /// is left out of the history (`SendState::again`). Work again after that
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
    /// It asked again for a write after being told that no write runs in
    /// this send (the request's reading withheld one, `write_check`): the
    /// answer in words is all that is left to give.
    Withheld,
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
            WrapUp::Loop => {
                format!("the model made the same tool calls {} times in a row", super::loop_guard::LOOP_REPEATS)
            }
            WrapUp::Repeated => "the model asked again for tool results it already had".to_owned(),
            WrapUp::SecondCycle => "the model went round the same tool calls twice".to_owned(),
            WrapUp::Redone => {
                "the model rewrote a file with the lines it already held, or made an edit already made".to_owned()
            }
            WrapUp::Withheld => "the model asked again for a write after being told none runs in this send".to_owned(),
            WrapUp::Budget => "the send's tool calls were spent".to_owned(),
        }
    }
}

/// What a tool round leaves for the next request's mode, as facts.
#[derive(Debug, Clone, Copy, Default)]
pub struct RoundFacts {
    /// The mode the round ran in.
    pub mode: Mode,
    /// The round's calls refused for the tool-call budget (`Meter::at`
    /// `AfterRound` says wrap up).
    pub out_of_tool_calls: bool,
    /// Every call repeated one of the previous answer's that worked, with
    /// nothing changed since.
    pub looks_again: bool,
    /// The operator's check runs and no file was changed yet.
    pub checked_unwritten: bool,
    /// A write put back the bytes (or lines) the file held, or an edit was
    /// made already, and the profile asks for the answer then
    /// (`early_wrap_up`).
    pub redone: bool,
    /// A write of this round was withheld (`write_check`), and one had
    /// been withheld before in the send: the model was told no write runs.
    pub withheld_again: bool,
    /// The calls went round a cycle (its period), and whether it is the
    /// first cycle of the send.
    pub cycle: Option<(usize, bool)>,
}

/// What the model is told with the mode [`after_round`] chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundNote {
    /// Out of tool calls: answer without tools.
    Budget,
    /// The same calls again while the check has seen no change: call a tool.
    RepeatToCheck,
    /// Give the answer now.
    WrapUp,
    /// Give the answer now: writes are not run in this send.
    Withheld,
    /// The calls went round this cycle (period): try something else.
    Cycle(usize),
}

/// The mode after a tool round and the note that goes with it, from the
/// round's facts, first match wins: out of tool calls → `WrapUp(Budget)`;
/// calls repeated → `Act` (a checked send with nothing written) or
/// `WrapUp(Repeated)`; a redone write → `WrapUp(Redone)`; a write withheld
/// a second time → `WrapUp(Withheld)`; a cycle → a note
/// (the first) or `WrapUp(SecondCycle)`; else `Work` (an `Act` request
/// gives way to work once its round ran).
pub fn after_round(f: &RoundFacts) -> (Mode, Option<RoundNote>) {
    let mode = if f.mode == Mode::Act { Mode::Work } else { f.mode };
    if mode != Mode::Work {
        return (mode, None);
    }
    if f.out_of_tool_calls {
        return (Mode::WrapUp(WrapUp::Budget), Some(RoundNote::Budget));
    }
    if f.looks_again {
        return match f.checked_unwritten {
            true => (Mode::Act, Some(RoundNote::RepeatToCheck)),
            false => (Mode::WrapUp(WrapUp::Repeated), Some(RoundNote::WrapUp)),
        };
    }
    if f.redone {
        return (Mode::WrapUp(WrapUp::Redone), Some(RoundNote::WrapUp));
    }
    if f.withheld_again {
        return (Mode::WrapUp(WrapUp::Withheld), Some(RoundNote::Withheld));
    }
    match f.cycle {
        Some((period, true)) => (Mode::Work, Some(RoundNote::Cycle(period))),
        Some(_) => (Mode::WrapUp(WrapUp::SecondCycle), Some(RoundNote::WrapUp)),
        None => (Mode::Work, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rounds_facts_choose_the_next_mode_first_match_wins() {
        let work = RoundFacts::default();
        assert_eq!(after_round(&work), (Mode::Work, None));
        let act = RoundFacts { mode: Mode::Act, ..work };
        assert_eq!(after_round(&act), (Mode::Work, None), "an Act round gives way to work");
        let all =
            RoundFacts { out_of_tool_calls: true, looks_again: true, redone: true, cycle: Some((2, false)), ..work };
        assert_eq!(after_round(&all), (Mode::WrapUp(WrapUp::Budget), Some(RoundNote::Budget)));
        let again = RoundFacts { out_of_tool_calls: false, ..all };
        assert_eq!(after_round(&again), (Mode::WrapUp(WrapUp::Repeated), Some(RoundNote::WrapUp)));
        let checked = RoundFacts { checked_unwritten: true, ..again };
        assert_eq!(after_round(&checked), (Mode::Act, Some(RoundNote::RepeatToCheck)));
        let redone = RoundFacts { looks_again: false, ..again };
        assert_eq!(after_round(&redone), (Mode::WrapUp(WrapUp::Redone), Some(RoundNote::WrapUp)));
        let refused = RoundFacts { withheld_again: true, ..redone };
        assert_eq!(after_round(&refused), (Mode::WrapUp(WrapUp::Redone), Some(RoundNote::WrapUp)));
        let withheld = RoundFacts { redone: false, ..refused };
        assert_eq!(after_round(&withheld), (Mode::WrapUp(WrapUp::Withheld), Some(RoundNote::Withheld)));
        let second = RoundFacts { redone: false, ..redone };
        assert_eq!(after_round(&second), (Mode::WrapUp(WrapUp::SecondCycle), Some(RoundNote::WrapUp)));
        let first = RoundFacts { cycle: Some((3, true)), ..second };
        assert_eq!(after_round(&first), (Mode::Work, Some(RoundNote::Cycle(3))));
        let wrapping = RoundFacts { mode: Mode::WrapUp(WrapUp::Loop), ..all };
        assert_eq!(after_round(&wrapping), (Mode::WrapUp(WrapUp::Loop), None), "a wrap-up stays");
    }
}
