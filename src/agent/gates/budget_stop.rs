//! Gate: the answer after the tool-call budget ran out ends the send.
//!
//! Reads: the mode `WrapUp(Budget)` the round set when the budget was
//! spent. May: end the send `budget_exceeded`, with the model's answer (or
//! pirn's account of what changed when it gave none).

use super::verdict::{Answer, Verdict, said};
use crate::agent::budget::{BudgetCall, BudgetPoint};
use crate::agent::mode::{Mode, WrapUp};
use crate::agent::send_state::SendState;

pub(super) fn review(cx: &mut SendState<'_>, answer: &Answer) -> Verdict {
    let wrapping_up = cx.mode == Mode::WrapUp(WrapUp::Budget);
    if cx.spec.meter.at(BudgetPoint::WrapUpAnswer, wrapping_up) != BudgetCall::End {
        return Verdict::Pass;
    }
    Verdict::Fail { error: cx.spec.meter.exceeded(), answer: said(&answer.text).or_else(|| Some(cx.account())) }
}
