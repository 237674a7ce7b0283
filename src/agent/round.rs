//! One tool round: the calls of one model answer, run in order, and what
//! they teach the loop about where it stands.
//!
//! Owns, in this order: the loop stop (the same calls [`super::loop_guard::LOOP_REPEATS`]
//! times in a row: the first time one answer without tools is asked for,
//! the second ends the send), the repeat rule (a call that repeats one of
//! the previous answer is answered with its earlier result unless the
//! workspace may have changed since or the tool held it back), the
//! tool-call budget, and after the calls: the wrap-up when every call
//! repeated one that worked (the model has what it asked for; in a send
//! whose operator's check has seen no change yet, a round that must call a
//! tool instead, since an answer in words cannot pass the check), the cycle
//! note (the same calls with the same results going round), the wrap-up
//! when the model rewrote a file with the lines it already held or made an
//! edit the workspace already shows made, the wrap-up when a write is
//! withheld a second time (`write_check`: the model was told no write runs
//! in this send), and the wrap-up when the tool-call budget is spent.
//! Every decision reads [`CallOutcome`]s and call signatures, never the
//! text of a result or a request.

use super::budget::{BudgetCall, BudgetPoint};
use super::call_context::CallContext;
use super::facts::{CallOutcome, PastCall};
use super::mode::{self, Mode, RoundFacts, RoundNote, WrapUp};
use super::outcome::{Outcome, fail};
use super::request_reading::hold_write;
use super::send_state::SendState;
use super::tool_call;
use super::{batch, budget, loop_guard};
use crate::context;
use crate::model::ToolCall;
use crate::tools::{self, Effect};
use crate::wire::{ErrorCode, ErrorEnvelope};

/// The result of each call of an answer that made a loop.
const REPEAT_NOT_RUN: &str = "Not run: the same call as in your previous answers; its result has not changed.";

/// Runs the round of `turn`; `Some` when the send ends here.
pub async fn run(cx: &mut SendState<'_>, turn: batch::Turn) -> Option<Outcome> {
    // After a wrap-up request the calls are not run (a server may still
    // send some): that is the loop going on.
    if cx.mode.no_tools() || cx.guard.is_loop(&turn.run, turn.most_copies) {
        let wrapping_up = cx.mode == Mode::WrapUp(WrapUp::Budget);
        if cx.spec.meter.at(BudgetPoint::WrapUpCalledTools, wrapping_up) == BudgetCall::End {
            let error = cx.spec.meter.exceeded();
            return Some(fail(cx.emit, error, Some(cx.account()), None).await);
        }
        if !cx.mode.no_tools() {
            for call in &turn.run {
                cx.conv.push_tool_result(&call.id, REPEAT_NOT_RUN.to_owned());
            }
            cx.mode = Mode::WrapUp(WrapUp::Loop);
            cx.conv.push_note(&loop_guard::wrap_up_note(cx.request));
            return None;
        }
        let why = match cx.mode {
            Mode::WrapUp(why) => why.said(),
            _ => "its answer was asked for without tools".to_owned(),
        };
        let error = ErrorEnvelope::new(
            ErrorCode::LoopDetected,
            format!("{why}, and it called tools again when asked to answer"),
        );
        return Some(fail(cx.emit, error, None, None).await);
    }
    cx.tools.result_cap =
        context::tool_result_cap(cx.config.window(cx.conv.budget.learned_window).await, tools::MAX_RESULT_BYTES);
    let signatures: Vec<String> = turn.run.iter().map(loop_guard::call_signature).collect();
    let looks_again = repeats_a_look(&cx.previous, &signatures);
    let results = run_calls(cx, &turn, &signatures, looks_again).await;
    if cx.facts.last_round.iter().any(|o| matches!(o, CallOutcome::Did(Effect::Changed { .. }))) {
        cx.guard.progressed();
    }
    cx.verified = false;
    let went_round = results.iter().filter_map(|d| cx.cycles.record(&d.signature, &d.text)).max();
    // The file already holds what the model writes: a rewrite with its
    // bytes or lines, or an edit the workspace shows made.
    let rewrote_same = turn.run.iter().zip(&cx.facts.last_round).any(|(call, outcome)| {
        (call.name == "write_file"
            && matches!(outcome, CallOutcome::Did(Effect::Unchanged { .. } | Effect::Changed { relaid: true, .. })))
            || matches!(outcome, CallOutcome::Did(Effect::MadeAlready { .. }))
    });
    // A write withheld again: the model was told no write runs in this send.
    let withheld_again = cx.facts.withheld > 1 && cx.facts.last_round.contains(&CallOutcome::Withheld);
    let facts = RoundFacts {
        mode: cx.mode,
        out_of_tool_calls: cx.spec.meter.at(BudgetPoint::AfterRound, false) == BudgetCall::WrapUp,
        looks_again,
        checked_unwritten: cx.verifier.is_some() && !cx.facts.wrote(),
        // A profile's help: a capable model may have more to do.
        redone: rewrote_same && cx.config.profile.early_wrap_up,
        withheld_again,
        cycle: went_round.map(|period| (period, cx.cycles.found == 1)),
    };
    let (mode, note) = mode::after_round(&facts);
    cx.mode = mode;
    match note {
        Some(RoundNote::Budget) => cx.conv.push_note(budget::WRAP_UP),
        Some(RoundNote::RepeatToCheck) => cx.conv.push_note(loop_guard::REPEAT_TO_CHECK),
        Some(RoundNote::WrapUp) => cx.conv.push_note(&loop_guard::wrap_up_note(cx.request)),
        Some(RoundNote::Withheld) => cx.conv.push_note(&loop_guard::withheld_note(cx.request)),
        Some(RoundNote::Cycle(period)) => cx.conv.push_note(&loop_guard::cycle_note(&cx.cycles.round(period))),
        None => {}
    }
    cx.previous = still_valid(&turn.run, &cx.facts.last_round, results);
    None
}

/// True when every call (by [`loop_guard::call_signature`], one per call
/// of the answer) repeats one of `previous` (the previous answer's results
/// that nothing has changed since) that did not fail: the model asked again
/// for results it already has. A repeat of a failed call is not: with other
/// arguments or another tool it may still find its way.
pub fn repeats_a_look(previous: &[PastCall], signatures: &[String]) -> bool {
    !signatures.is_empty() && signatures.iter().all(|sig| previous.iter().any(|d| d.signature == *sig && !d.failed))
}

/// Runs the calls of `turn` (its `note` goes with the last result), each
/// answered from `cx.previous` when it repeats one there and nothing of
/// this answer ran before it that may have changed the workspace. Records
/// each outcome in `cx.facts` (and the round's in `facts.last_round`).
/// `looks_again`: every call is such a repeat ([`repeats_a_look`]) and the
/// model is asked for its answer next: each is answered "not run", as after
/// a loop, since its result is the message just before (showing it again
/// cost up to 2,000 bytes of prompt and changed no answer measured).
/// Returns each call's (signature, result).
async fn run_calls(
    cx: &mut SendState<'_>,
    turn: &batch::Turn,
    signatures: &[String],
    looks_again: bool,
) -> Vec<PastCall> {
    let last = turn.run.len().saturating_sub(1);
    let mut results = Vec::with_capacity(turn.run.len());
    let mut outcomes = Vec::with_capacity(turn.run.len());
    let mut changed = false;
    for (i, (call, signature)) in turn.run.iter().zip(signatures).enumerate() {
        let note = if i == last { turn.note.as_deref() } else { None };
        let signature = signature.clone();
        let earlier = cx.previous.iter().find(|d| d.signature == signature).filter(|_| !changed).cloned();
        let (text, outcome) = match earlier {
            Some(earlier) => {
                if looks_again {
                    // Its result is the message just before; the answer
                    // is asked for next.
                    cx.conv.push_tool_result(&call.id, REPEAT_NOT_RUN.to_owned());
                } else {
                    tool_call::repeat(cx.conv, call, &earlier.text, earlier.failed);
                }
                let outcome = if earlier.failed { CallOutcome::Failed } else { CallOutcome::Looked };
                (earlier.text, outcome)
            }
            None if !cx.spec.meter.take_tool_call() => {
                let text = budget::not_run(cx.spec.meter.max_tool_calls());
                cx.conv.push_tool_result(&call.id, text.clone());
                (text, CallOutcome::Failed)
            }
            None => {
                let held = hold_write(cx, &call.name).await;
                let call_cx = CallContext {
                    config: cx.config,
                    permissions: cx.permissions,
                    emit: cx.emit,
                    tools: &cx.tools,
                    spec: cx.spec,
                    held,
                    send_loop: cx.send_loop,
                };
                let (text, outcome) = tool_call::run(&call_cx, cx.conv, cx.stats, call, note).await;
                cx.facts.record(&call.name, &outcome);
                changed |= outcome.may_change_workspace(&call.name);
                (text, outcome)
            }
        };
        let failed = matches!(outcome, CallOutcome::Failed | CallOutcome::Denied);
        results.push(PastCall { signature, text, failed });
        outcomes.push(outcome);
    }
    cx.facts.last_round = outcomes;
    results
}

/// The results of `calls` that a later repeat may be answered with: those
/// that no later call in the same list may have changed, none that a
/// tool held back (asked for again, it must run: that is the confirmation),
/// and no failed `write_file` (its refusal of an unread file counts the
/// file read, so the same call again writes it).
pub fn still_valid(calls: &[ToolCall], outcomes: &[CallOutcome], results: Vec<PastCall>) -> Vec<PastCall> {
    let last_change = outcomes.iter().zip(calls).rposition(|(o, c)| o.may_change_workspace(&c.name));
    results
        .into_iter()
        .enumerate()
        .filter(|(i, _)| last_change.is_none_or(|at| *i > at))
        .filter(|(i, _)| {
            !matches!(outcomes.get(*i), Some(CallOutcome::Did(Effect::HeldBack { .. }) | CallOutcome::Withheld))
        })
        // A write_file that failed may land when sent again: refusing an
        // unread file showed the file and counts it read from then on.
        .filter(|(i, _)| {
            !(calls.get(*i).is_some_and(|c| c.name == "write_file") && outcomes.get(*i) == Some(&CallOutcome::Failed))
        })
        .map(|(_, r)| r)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str) -> ToolCall {
        ToolCall { id: name.into(), name: name.into(), arguments: "{}".into() }
    }

    #[test]
    fn results_before_a_change_or_held_back_are_not_kept() {
        let calls = [call("read_file"), call("edit_file"), call("bash"), call("grep")];
        let outcomes = [
            CallOutcome::Looked,
            CallOutcome::Did(Effect::Changed { path: "a".into(), hash: 1, created: false, relaid: false }),
            CallOutcome::Did(Effect::Ran { exit_code: Some(0) }),
            CallOutcome::Looked,
        ];
        let done = |c: &ToolCall| PastCall { signature: c.name.clone(), text: "r".to_owned(), failed: false };
        let results: Vec<PastCall> = calls.iter().map(done).collect();
        let kept: Vec<String> = still_valid(&calls, &outcomes, results).into_iter().map(|d| d.signature).collect();
        assert_eq!(kept, ["grep"], "only what no later call may have changed");
        let writes = [call("write_file"), call("glob")];
        let outcomes = [
            CallOutcome::Did(Effect::HeldBack { path: "a".into(), why: crate::tools::Hold::MostlyRemoved }),
            CallOutcome::Looked,
        ];
        let results: Vec<PastCall> = writes.iter().map(done).collect();
        let kept: Vec<String> = still_valid(&writes, &outcomes, results).into_iter().map(|d| d.signature).collect();
        assert_eq!(kept, ["glob"], "a held-back write asked for again runs");
        let failed = [call("write_file"), call("edit_file")];
        let outcomes = [CallOutcome::Failed, CallOutcome::Failed];
        let results: Vec<PastCall> = failed.iter().map(done).collect();
        let kept: Vec<String> = still_valid(&failed, &outcomes, results).into_iter().map(|d| d.signature).collect();
        assert_eq!(kept, ["edit_file"], "a failed write_file sent again runs; a failed edit fails again");
    }

    #[test]
    fn only_calls_that_all_repeat_a_look_that_worked_ask_for_the_answer() {
        let read = ToolCall { id: "1".into(), name: "read_file".into(), arguments: r#"{"file_path":"a"}"#.into() };
        let glob = ToolCall { id: "2".into(), name: "glob".into(), arguments: r#"{"pattern":"*"}"#.into() };
        let done =
            |c: &ToolCall, failed| PastCall { signature: loop_guard::call_signature(c), text: "r".into(), failed };
        let previous = [done(&read, false), done(&glob, true)];
        let sigs = |calls: &[&ToolCall]| calls.iter().map(|c| loop_guard::call_signature(c)).collect::<Vec<_>>();
        assert!(repeats_a_look(&previous, &sigs(&[&read])));
        assert!(!repeats_a_look(&previous, &sigs(&[&glob])), "a failed call may be retried");
        assert!(!repeats_a_look(&previous, &sigs(&[&read, &glob])), "not all of them worked");
        let other = ToolCall { arguments: r#"{"file_path":"b"}"#.into(), ..read.clone() };
        assert!(!repeats_a_look(&previous, &sigs(&[&read, &other])), "one call is new");
        assert!(!repeats_a_look(&previous, &[]));
    }
}
