//! The turn loop of one send: call the model, stream its text, run the tools
//! it asks for, feed their results back, until it answers without tools or a
//! limit stops it.
//!
//! Owns: iteration counting and the `max_iterations` limit, loop detection
//! ([`loop_guard`]; the first loop gets one last request with `tool_choice:
//! "none"` for a plain answer, a second ends the send), the
//! [`answer_check`]s, the per-send statistics that end up in the result, and
//! the line between errors the model sees (tool failures, bad arguments,
//! unknown tools: they become tool results, see [`tool_call`]) and fatal
//! ones (provider errors, limits: they end the send).
//!
//! Knows nothing of stdio or HTTP: events go out through an [`Emitter`].
//! Cancellation is the caller's: it drops this future (which drops the HTTP
//! stream and kills a running tool's process group), then calls
//! [`crate::conversation::Conversation::repair`].

pub mod answer_check;
mod apply_code;
pub mod batch;
pub mod budget;
pub mod calls;
mod claims;
mod diff;
mod done;
pub mod emit;
pub mod fit;
pub mod loop_guard;
mod outcome;
pub mod preflight;
mod py_probe;
mod removal;
mod rename;
pub mod request;
pub mod send_spec;
mod stats;
pub mod structured;
pub mod tool_call;
pub mod verify;

pub use fit::{COMPACT_WINDOW_UNKNOWN, compact_now};
pub use outcome::Outcome;
use outcome::call_model;
pub(crate) use outcome::fail;
pub use send_spec::SendSpec;
pub use stats::SendStats;

pub use emit::{Emitter, OUTBOX_CAPACITY, Outbox};
pub use loop_guard::LOOP_REPEATS;

use crate::approval::{ApprovalMode, PermissionBroker};
use crate::config::SessionConfig;
use crate::context;
use crate::conversation::Conversation;
use crate::tools::{self, ToolContext};
use crate::wire::{ErrorCode, ErrorEnvelope, Event};
use loop_guard::LoopGuard;
use tool_call::CallContext;

/// Runs one send to its end. `conv` already holds the earlier turns.
pub async fn run(
    config: &SessionConfig,
    permissions: &PermissionBroker,
    conv: &mut Conversation,
    stats: &mut SendStats,
    emit: &Emitter,
    message: &str,
    spec: &mut SendSpec,
) -> Outcome {
    // The listing joins the system prompt at the first send (a small model
    // follows it there better than after the request; the price is that a
    // server's prompt cache cannot reuse the system prompt across workspaces).
    if config.workspace_listing && conv.is_fresh() {
        let root = config.workspace.clone();
        match tokio::task::spawn_blocking(move || context::workspace::listing(&root)).await {
            Ok(listing) => conv.extend_system(&listing),
            Err(e) => tracing::warn!(error = %e, "the workspace listing failed"),
        }
    }
    match &spec.output {
        Some(output) => conv.push_user(&format!("{message}{}", output.instruction())),
        None => conv.push_user(message),
    }
    let mut tool_cx = ToolContext::new(config.workspace.clone(), config.allowed_paths.clone(), spec.cancel.clone());
    tool_cx.read_files = Some(conv.read_files.clone());
    tool_cx.sandbox = config.sandbox.clone();
    tool_cx.env_passthrough = config.env_passthrough.clone();
    tool_cx.client_files = config.client_files.clone();
    let mut guard = LoopGuard::default();
    let mut cycles = loop_guard::Cycles::default();
    // A second cycle: the wrap-up answer ends the send as `loop_detected`.
    let mut cycle_stop = false;
    // One retry after the server said the request does not fit.
    let mut context_retry = false;
    // (signature, result) of the calls of the previous answer.
    let mut previous: Vec<(String, String)> = Vec::new();
    let mut progress = answer_check::Progress::default();
    // Not the system prompt: its numbered rules are no evidence for an answer.
    progress.seen_in((0..conv.len()).filter(|&i| conv.role_of(i) != "system").map(|i| conv.text_of(i)));
    let checks = config.answer_checks && config.policy.mode != ApprovalMode::Plan;
    // After a loop: the next request forbids tool calls and its answer is final.
    let mut wrap_up = false;
    let mut verifier = verify::Verifier::for_send(config, spec.verify_command.as_deref(), message, checks);
    // The answer is asked for again as structured output (no tools).
    let mut structured = false;
    // A budget is spent: the next answer ends the send as `budget_exceeded`.
    let mut budget_stop = false;
    let mut last_text = String::new();
    // Code blocks of answers written as the change they propose (apply_code).
    let mut applied = 0;
    // Answers the server could not parse, asked for again.
    let mut unreadable = 0;
    if config.preflight && spec.output.is_none() {
        let mut pre_cx = tool_cx.clone();
        pre_cx.result_cap = PREFLIGHT_RESULT_BYTES;
        let cx = CallContext { config, permissions, emit, tools: &pre_cx };
        previous = preflight::run(&cx, conv, stats, &mut progress, message).await;
    }
    loop {
        if spec.meter.tokens_spent() {
            let answer = Some(std::mem::take(&mut last_text)).filter(|t| !t.trim().is_empty());
            return fail(emit, spec.meter.exceeded(), answer.or_else(|| Some(progress.summary())), None).await;
        }
        if stats.iterations >= config.max_iterations {
            // Out of model calls, but the work may be done: the check decides.
            if let Some(v) = verifier.as_ref().filter(|_| progress.wrote())
                && let Some((verification, answer)) = v.at_the_limit(&progress, config.max_iterations, &tool_cx).await
            {
                stats.verification = Some(verification);
                return Outcome::Ok { response: answer };
            }
            let error = ErrorEnvelope::new(
                ErrorCode::MaxIterations,
                format!(
                    "stopped after {} model calls (max_iterations); the task is not finished",
                    config.max_iterations
                ),
            );
            return fail(emit, error, None, None).await;
        }
        // A first request small enough for any window goes out without
        // asking the server for its window (no request the task does not
        // need: a test mock that counts requests sees the chat call first);
        // the probe runs before the first tool result is sized.
        let window = if stats.iterations == 0 && fit::estimate(config, conv) < PROBE_FROM_TOKENS {
            config.window_known(conv.budget.learned_window)
        } else {
            config.window(conv.budget.learned_window).await
        };
        if let Some(w) = window
            && let Err(error) = fit::fit(config, conv, stats, emit, w).await
        {
            return fail(emit, error, None, None).await;
        }
        if stats.iterations > 0 {
            // The tool round is in the log before the model is asked again.
            conv.committed().await;
        }
        stats.iterations += 1;
        let prompt = fit::estimate(config, conv);
        let sent_bytes = conv.bytes() + config.tool_spec_bytes();
        let response_format = spec.output.as_ref().filter(|_| structured && !conv.budget.no_response_format);
        let format = response_format.map(|o| o.response_format());
        let shape = request::Shape { no_tools: wrap_up || structured, response_format: format.as_ref() };
        let body = match request::body(config, conv, shape, context::answer_room(window, prompt, config.max_tokens)) {
            Ok(b) => b,
            Err(error) => return fail(emit, error, None, None).await,
        };
        stats.begin_model();
        let result = call_model(config, body, emit, &spec.meter).await;
        stats.end_model();
        let mut completion = match result {
            Ok(c) => c,
            Err(e) if e.is_context_exceeded() && !context_retry => {
                // Not a provider error: learn the window, shorten, try once more.
                context_retry = true;
                let guess = u32::try_from(prompt.saturating_mul(3) / 4).unwrap_or(u32::MAX);
                conv.budget.learn_window(e.window_hint().unwrap_or(guess));
                tracing::info!(window = conv.budget.learned_window, "the request did not fit the context window");
                continue;
            }
            Err(e)
                if format.is_some()
                    && structured::rejects_response_format(e.status(), &format!("{e} {}", e.details())) =>
            {
                // Asked once more in words only, and never again this session.
                tracing::info!("the provider refused response_format: {e}");
                conv.budget.no_response_format = true;
                stats.iterations -= 1;
                continue;
            }
            Err(e) if e.is_unreadable_answer() && unreadable < MAX_UNREADABLE => {
                // The server could not parse the model's tool call: say so and ask again.
                unreadable += 1;
                tracing::info!("the model's answer could not be read: {e}");
                conv.push_note(UNREADABLE_NOTE);
                continue;
            }
            Err(e) => return fail(emit, ErrorEnvelope::from(&e), None, Some(config.endpoint.provider())).await,
        };
        context_retry = false;
        stats.calls_completed += 1;
        match completion.usage {
            Some(u) => {
                conv.budget.record(u.prompt_tokens, sent_bytes);
                spec.meter.charge_tokens(u.total_tokens);
                stats.usage.add(&u);
                emit.emit(Event::Usage(u)).await;
            }
            None => spec.meter.charge_tokens(prompt + completion.estimated_tokens()),
        }
        if spec.meter.limits_tokens() {
            last_text.clone_from(&completion.text);
        }
        if spec.meter.tokens_spent() && !completion.tool_calls.is_empty() {
            // The call that crossed the budget is the last: its calls are not run.
            return fail(emit, spec.meter.exceeded(), Some(progress.summary()), None).await;
        }
        let turn = batch::plan(&completion.tool_calls, config.max_tool_calls_per_turn);
        conv.push_assistant(&completion.text, &turn.run);
        if completion.tool_calls.is_empty() {
            let cut_off = completion.finish_reason.as_deref() == Some("length");
            if let Some(output) = spec.output.as_mut().filter(|o| cut_off && o.retries_left > 0) {
                // A runaway answer is a miss like any other: asked for again, short and constrained.
                output.retries_left -= 1;
                conv.push_note(&output.retry_note(&[structured::CUT_OFF.to_owned()]));
                structured = true;
                continue;
            }
            if cut_off {
                let error = ErrorEnvelope {
                    code: ErrorCode::ProviderError,
                    message: "the model's answer was cut off at its token limit (finish_reason: length)".to_owned(),
                    retryable: false,
                    details: Some(serde_json::json!({"finish_reason": "length"})),
                };
                return fail(emit, error, Some(completion.text), None).await;
            }
            if budget_stop {
                let answer = Some(completion.text).filter(|t| !t.trim().is_empty());
                return fail(emit, spec.meter.exceeded(), answer.or_else(|| Some(progress.summary())), None).await;
            }
            // Asked for its answer, the model wrote out a tool call: no answer.
            // pirn's account of the changes stands in (checked below), else the send failed.
            if wrap_up && claims::is_call_text(&completion.text) {
                if !progress.wrote() {
                    let error = ErrorEnvelope::new(ErrorCode::LoopDetected, loop_guard::NO_ANSWER);
                    return fail(emit, error, Some(progress.summary()), None).await;
                }
                completion.text = progress.account();
            }
            // The fixed file shown in the answer instead of written: written.
            let read = conv.read_files.lock().unwrap_or_else(|p| p.into_inner()).clone();
            if checks
                && !wrap_up
                && !structured
                && applied < apply_code::MAX_APPLIED
                && answer_check::Progress::is_change_request(message)
                && let Some((file, content)) =
                    apply_code::proposed_write(&completion.text, message, &read, &config.workspace)
            {
                let cx = CallContext { config, permissions, emit, tools: &tool_cx };
                if apply_code::apply(&cx, conv, stats, &mut progress, &file, &content).await.is_some() {
                    applied += 1;
                    previous.clear();
                    continue;
                }
            }
            if checks
                && !wrap_up
                && !structured
                && let Some(nudge) = progress.review(message, &completion.text, &config.tools, &config.workspace)
            {
                conv.push_note(&nudge);
                previous.clear();
                continue;
            }
            // A wrap-up answer that narrates pirn's loop notes instead of
            // answering is asked for once more (still without tools).
            if checks
                && wrap_up
                && let Some(nudge) = progress
                    .review_echo(message, &completion.text)
                    .or_else(|| progress.review_number(message, &completion.text))
            {
                conv.push_note(&nudge);
                continue;
            }
            if config.policy.mode == ApprovalMode::Plan {
                emit.emit(Event::PlanComplete { plan: completion.text.clone() }).await;
            }
            // Done, says the model: after a change, check it. A wrap-up
            // answer too: `ok` only when the work is done, and a failing
            // check is a new fact, so the tools open again for it.
            let verified =
                match done::check(message, checks, wrap_up, &mut progress, &tool_cx, verifier.as_mut(), stats).await {
                    done::Gate::Done { verified } => verified,
                    done::Gate::Again(note) => {
                        conv.push_note(&note);
                        (wrap_up, cycle_stop) = (false, false);
                        previous.clear();
                        continue;
                    }
                    done::Gate::NotDone(error) => return fail(emit, error, Some(completion.text), None).await,
                };
            // A wrap-up answer to a change request that changed nothing is
            // not a finished task, whatever it says.
            if !verified && (cycle_stop || (wrap_up && progress.change_pending(message))) {
                let why = if cycle_stop {
                    "the model went round the same tool calls twice; stopped after its account of what it did"
                } else {
                    "the model kept repeating a call and made none of the changes asked for; the task is not done"
                };
                let error = ErrorEnvelope::new(ErrorCode::LoopDetected, why);
                let answer = Some(completion.text).filter(|t| !t.trim().is_empty());
                return fail(emit, error, answer.or_else(|| Some(progress.summary())), None).await;
            }
            if let Some(output) = spec.output.as_mut() {
                match output.check(&completion.text) {
                    Ok(value) => stats.structured_output = Some(value),
                    Err(errors) if output.retries_left > 0 => {
                        output.retries_left -= 1;
                        conv.push_note(&output.retry_note(&errors));
                        structured = true;
                        previous.clear();
                        continue;
                    }
                    Err(errors) => return fail(emit, structured::invalid(errors), Some(completion.text), None).await,
                }
                return Outcome::Ok { response: completion.text };
            }
            // The operator's Stop hooks may keep the model working.
            if let Some(reason) =
                crate::hooks::on_stop(config, emit, &mut stats.stop_hook_active, &completion.text).await
            {
                conv.push_note(&reason);
                continue;
            }
            return Outcome::Ok { response: claims::unfence(completion.text) };
        }
        // After the wrap-up request, tool calls are not run (a server may
        // still send some): that is the loop going on.
        if wrap_up || guard.is_loop(&turn.run, turn.most_copies) {
            if budget_stop {
                return fail(emit, spec.meter.exceeded(), Some(progress.summary()), None).await;
            }
            if !wrap_up {
                // One last request with tool_choice "none": a model that
                // repeats a call has usually done the work and only needs
                // to say so.
                wrap_up = true;
                for call in &turn.run {
                    conv.push_tool_result(&call.id, REPEAT_NOT_RUN.to_owned());
                }
                conv.push_note(&loop_guard::wrap_up_note(message));
                continue;
            }
            let error = ErrorEnvelope::new(
                ErrorCode::LoopDetected,
                format!("the model made the same tool calls {LOOP_REPEATS} times in a row"),
            );
            return fail(emit, error, None, None).await;
        }
        tool_cx.result_cap =
            context::tool_result_cap(config.window(conv.budget.learned_window).await, tools::MAX_RESULT_BYTES);
        let cx = CallContext { config, permissions, emit, tools: &tool_cx };
        let results = calls::run(&cx, conv, stats, &mut progress, spec, &turn, &previous).await;
        // pirn's own edits finishing a rename the model started change files too.
        let finished = checks && !rename::complete(&cx, conv, stats, &mut progress, message, &results).await.is_empty();
        if spec.meter.tool_calls_spent() && !budget_stop {
            // Out of tool calls: one answer without tools, then the send ends.
            budget_stop = true;
            wrap_up = true;
            conv.push_note(budget::WRAP_UP);
        }
        let went_round = results.iter().filter_map(|(sig, text)| cycles.record(sig, text)).max();
        if !wrap_up && calls::redone(&turn, &results) {
            // The change asked for is in the file already: ask for the answer.
            wrap_up = true;
            conv.push_note(&loop_guard::wrap_up_note(message));
        } else if let Some(period) = went_round {
            // Redoing a change the tools say is made ("no change: …"): the
            // work is done; ask for the answer now (ok when files changed).
            let redoing = cycles.round(period).iter().any(|(_, r)| r.starts_with(tools::NO_CHANGE));
            if redoing && progress.wrote() && !wrap_up {
                wrap_up = true;
                conv.push_note(&loop_guard::wrap_up_note(message));
            } else if cycles.found == 1 {
                let mut note = loop_guard::cycle_note(&cycles.round(period), progress.change_pending(message));
                if let Some(left) = rename::unfinished(message, &config.workspace) {
                    note.push(' ');
                    note.push_str(&left);
                }
                conv.push_note(&note);
            } else {
                wrap_up = true;
                cycle_stop = true;
                conv.push_note(&loop_guard::wrap_up_note(message));
            }
        }
        previous = if finished { Vec::new() } else { calls::still_valid(&turn.run, results) };
    }
}

/// Estimated prompt tokens under which a session's first request goes out
/// before the window probe: every model pirn can drive has a larger window.
pub const PROBE_FROM_TOKENS: u64 = 2048;

/// Answers the server could not parse that are asked for again, per send.
const MAX_UNREADABLE: u32 = 2;
/// What the model is told then.
const UNREADABLE_NOTE: &str = "Your last answer could not be read: its tool call arguments were not valid JSON (the \
     server rejected it). Answer again with one tool call whose arguments are one JSON object, or in plain text.";

/// Most bytes of one preflight result (the request's command may print a lot).
const PREFLIGHT_RESULT_BYTES: usize = 4 * 1024;

/// The result of each call of an answer that made a loop.
const REPEAT_NOT_RUN: &str = "Not run: the same call as in your previous answers; its result has not changed.";
