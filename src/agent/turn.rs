//! One turn: fit the conversation into the window, build the request for
//! the send's [`Mode`], call the model, meter its usage, and say what the
//! model answered.
//!
//! Owns: the typed recoveries of a model call (a request that did not fit
//! is shortened and sent once more; a provider that refuses
//! `response_format` is asked in words, and never again this session; one
//! that refuses `tool_choice: "required"` is asked an ordinary turn; an
//! answer the server could not parse, or one whose stream was ended as a
//! runaway ([`crate::model::runaway`]), is asked for again, at most
//! [`MAX_UNREADABLE`] times between them) and the line between them and
//! the errors that end the send. Returns a [`TurnStep`]; decides nothing about the answer.

use super::budget::{BudgetCall, BudgetPoint};
use super::mode::Mode;
use super::outcome::{Outcome, Shown, call_model, fail};
use super::send_state::SendState;
use super::{batch, fit, request, structured};
use crate::context;
use crate::model::{Completion, ToolCall};
use crate::tools::file_blocks;
use crate::wire::{ErrorCode, ErrorEnvelope, Event};

/// What one turn produced.
pub enum TurnStep {
    /// An answer without tool calls: the gates judge it.
    Answer(Completion),
    /// Tool calls: the round runs the ones [`batch::plan`] kept.
    Calls(batch::Turn),
    /// Nothing yet: a recovery asks again.
    Again,
    /// The send ends here.
    End(Outcome),
}

/// Estimated prompt tokens under which a session's first request goes out
/// before the window probe: every model pirn can drive has a larger window.
pub const PROBE_FROM_TOKENS: u64 = 2048;

/// Answers the server could not parse or that ran away, asked for again, per send.
pub const MAX_UNREADABLE: u32 = 2;
/// What the model is told then.
const UNREADABLE_NOTE: &str = "Your last answer could not be read: its tool call arguments were not valid JSON (the \
     server rejected it). Answer again with one tool call whose arguments are one JSON object, or in plain text.";

/// Makes one model call in `cx.mode`.
pub async fn next(cx: &mut SendState<'_>) -> TurnStep {
    let (config, emit) = (cx.config, cx.emit);
    // A first request small enough for any window goes out without asking
    // the server for its window (a mock that counts requests sees the chat
    // call first); the probe runs before the first tool result is sized.
    let window = if cx.stats.iterations == 0 && fit::estimate(config, cx.conv) < PROBE_FROM_TOKENS {
        config.window_known(cx.conv.budget.learned_window)
    } else {
        config.window(cx.conv.budget.learned_window).await
    };
    if let Some(w) = window
        && let Err(error) = fit::fit(config, cx.conv, cx.stats, emit, w).await
    {
        if let Some(done) = cx.checked_anyway("the conversation outgrew the model's context window").await {
            return TurnStep::End(done);
        }
        return TurnStep::End(fail(emit, error, None, None).await);
    }
    if cx.stats.iterations > 0 {
        // The tool round is in the log before the model is asked again.
        cx.conv.committed().await;
    }
    cx.stats.iterations += 1;
    let prompt = fit::estimate(config, cx.conv);
    let sent_bytes = cx.conv.bytes() + config.tool_spec_bytes();
    let format = response_format(cx);
    let shape = request::Shape {
        no_tools: cx.mode.no_tools(),
        response_format: format.as_ref(),
        require_tool: cx.mode == Mode::Act,
    };
    let body = match request::body(config, cx.conv, shape, context::answer_room(window, prompt, config.max_tokens)) {
        Ok(b) => b,
        Err(error) => return TurnStep::End(fail(emit, error, None, None).await),
    };
    cx.stats.begin_model();
    let result = call_model(config, body, emit, &cx.spec.meter, &mut cx.stats.fallback, Shown::Deltas).await;
    cx.stats.end_model();
    let completion = match result {
        Ok(c) => c,
        Err(e) if e.is_context_exceeded() && !cx.context_retry => {
            // Not a provider error: learn the window, shorten, try once more.
            cx.context_retry = true;
            let guess = u32::try_from(prompt.saturating_mul(3) / 4).unwrap_or(u32::MAX);
            cx.conv.budget.learn_window(e.window_hint().unwrap_or(guess));
            tracing::info!(window = cx.conv.budget.learned_window, "the request did not fit the context window");
            return TurnStep::Again;
        }
        Err(e)
            if format.is_some() && structured::rejects_response_format(e.status(), &format!("{e} {}", e.details())) =>
        {
            // Asked once more without it, and never again in the session.
            tracing::info!("the provider refused response_format: {e}");
            cx.conv.budget.no_response_format = true;
            return TurnStep::Again;
        }
        Err(e) if cx.mode == Mode::Act && e.status() == Some(400) => {
            // A provider that refuses `tool_choice: "required"`: asked as
            // an ordinary turn instead (the note already says what to do).
            tracing::info!("the provider refused tool_choice required: {e}");
            cx.mode = Mode::Work;
            return TurnStep::Again;
        }
        Err(e) if e.is_unreadable_answer() && cx.unreadable < MAX_UNREADABLE => {
            // The server could not parse the model's tool call: say so and ask again.
            cx.unreadable += 1;
            tracing::info!("the model's answer could not be read: {e}");
            cx.conv.push_note(UNREADABLE_NOTE);
            return TurnStep::Again;
        }
        Err(e) => {
            let error = ErrorEnvelope::from(&e);
            return TurnStep::End(fail(emit, error, None, Some(config.endpoint.provider())).await);
        }
    };
    cx.context_retry = false;
    cx.stats.calls_completed += 1;
    match completion.usage {
        Some(u) => {
            cx.conv.budget.record(u.prompt_tokens, sent_bytes);
            cx.spec.meter.charge_tokens(u.total_tokens);
            cx.stats.usage.add(&u);
            emit.emit(Event::Usage { usage: u, side_call: None }).await;
        }
        None => cx.spec.meter.charge_tokens(prompt + completion.estimated_tokens()),
    }
    if cx.spec.meter.limits_tokens() {
        cx.last_text.clone_from(&completion.text);
    }
    if let Some(runaway) = &completion.runaway {
        // Nothing of it runs (its last call is cut mid-loop) and it is not
        // kept: the model hears what happened and answers again.
        if cx.unreadable < MAX_UNREADABLE {
            cx.unreadable += 1;
            cx.conv.push_note(&format!(
                "Your last answer was stopped and nothing of it ran: {}. Answer again without repeating yourself.",
                runaway.describe()
            ));
            return TurnStep::Again;
        }
        if let Some(done) = cx.checked_anyway("the model's answers kept running away").await {
            return TurnStep::End(done);
        }
        let error = ErrorEnvelope {
            code: ErrorCode::ProviderError,
            message: format!("the model's answer was stopped as a runaway: {}", runaway.describe()),
            retryable: false,
            details: Some(serde_json::json!({
                "finish_reason": "length", "repeated": runaway.unit, "repeats": runaway.repeats, "tool": runaway.in_call,
            })),
        };
        return TurnStep::End(fail(emit, error, Some(cx.account()), None).await);
    }
    if !completion.tool_calls.is_empty() && cx.spec.meter.at(BudgetPoint::AnswerWithCalls, false) == BudgetCall::End {
        // The call that crossed the budget is the last: its calls are not run.
        let error = cx.spec.meter.exceeded();
        return TurnStep::End(fail(emit, error, Some(cx.account()), None).await);
    }
    let mut completion = completion;
    if completion.tool_calls.is_empty() && config.file_blocks && !cx.mode.no_tools() {
        file_block_calls(config, &mut completion, cx.conv.len());
    }
    let turn = batch::plan(&completion.tool_calls, config.max_tool_calls_per_turn);
    cx.conv.push_assistant(&completion.text, &turn.run);
    if completion.tool_calls.is_empty() { TurnStep::Answer(completion) } else { TurnStep::Calls(turn) }
}

/// With `file_blocks` on: the calls an answer's text stands for
/// ([`crate::tools::file_blocks`]) become its tool calls (ids
/// `file-block-<at>-<n>`, `at` the conversation's length, so a replay
/// makes the same ids) and the rest of its text its prose.
fn file_block_calls(config: &crate::config::SessionConfig, completion: &mut Completion, at: usize) {
    // In the whole-file format the model may only write files: a JSON call
    // of another enabled tool in its text is code shown, not a call.
    let write_only = ["write_file".to_owned()];
    let tools = if config.edit_format == crate::wire::EditFormat::Whole { &write_only[..] } else { &config.tools[..] };
    let reading = file_blocks::BlockRules { tools, target: config.file_block_target.as_deref() };
    let Some((prose, calls)) = file_blocks::calls(&completion.text, reading) else { return };
    completion.tool_calls = calls
        .into_iter()
        .enumerate()
        .map(|(n, c)| ToolCall { id: format!("file-block-{at}-{}", n + 1), name: c.name, arguments: c.arguments })
        .collect();
    completion.text = prose;
}

/// The `response_format` of the next request: the send's schema only in a
/// request that forbids tool calls (the answer asked for again after one
/// that missed it, or a session without tools), never once the provider
/// refused it for the session. Not with tools offered: a server that
/// accepts both may hold the whole answer to the schema's grammar, so the
/// model cannot call a tool at all (llama.cpp does: with xllamacpp
/// 2026.10.11549 a schema send's model answered from nothing, in one call).
fn response_format(cx: &SendState<'_>) -> Option<serde_json::Value> {
    let output = cx.spec.output.as_ref()?;
    let tools_offered = !cx.mode.no_tools() && !cx.config.tool_specs().is_empty();
    (!tools_offered && !cx.conv.budget.no_response_format).then(|| output.response_format())
}
