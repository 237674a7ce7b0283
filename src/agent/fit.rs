//! Making the next model request fit the context window.
//!
//! Owns the policy (the edits are `conversation`'s, the arithmetic
//! `context`'s): when the estimated prompt plus room for an answer would
//! pass ~90 % of the window, first **prune** (the oldest tool results and
//! pirn's own notes, such as an earlier check's output, become stubs; the
//! system prompt, the user's messages and the last
//! [`KEEP_TURNS`](crate::context::KEEP_TURNS) answers stay whole), then
//! **compact** (one extra model call summarises the older conversation; it
//! becomes system prompt + summary + recent turns; the call counts like a
//! turn against the send's budgets, see [`super::outcome::side_call`]).
//! Emits `context_prune` and `context_compact` with the real figures, and
//! last stub the recent turns' tool results and notes too. What is never
//! cut: the system prompt, the tool specs, the user's messages, the model's
//! own tool calls and pirn's last note (the one the model is answering);
//! only when those alone (with the room an answer needs) do not fit does
//! the send end, with `context_overflow`.

use std::fmt::Write as _;
use std::time::Instant;

use bytes::Bytes;
use serde::Serialize;

use super::emit::Emitter;
use super::outcome::{Outcome, fail, side_call};
use super::stats::SendStats;
use crate::config::SessionConfig;
use crate::context::{self, BYTES_PER_TOKEN, KEEP_TURNS};
use crate::conversation::Conversation;
use crate::wire::{ErrorCode, ErrorEnvelope, Event};

/// Share of the prompt limit pruning aims for (see [`fit`]).
pub const PRUNE_TO_PERCENT: u64 = 70;
/// Bytes of one message kept in the transcript the summariser reads.
const TRANSCRIPT_MESSAGE_BYTES: usize = 1500;
/// Longest summary asked for, in tokens.
const SUMMARY_TOKENS: u32 = 600;

const SUMMARY_PROMPT: &str = "You condense a coding agent's conversation so it can continue its task with less context. \
Write a short summary in plain sentences: the user's request, what was learned (file names, values, line numbers, \
command results), what was changed, and what remains to be done. Keep exact names and numbers. No preamble.";

/// Estimated prompt tokens of the next request.
pub fn estimate(config: &SessionConfig, conv: &Conversation) -> u64 {
    conv.budget.estimate(conv.bytes() + config.tool_spec_bytes())
}

/// Shortens `conv` until a request fits `window` (see the module doc).
/// Errors: `context_overflow` when what is never cut (system prompt, tool
/// specs, user messages, the model's calls) leaves no room for an answer.
pub async fn fit(
    config: &SessionConfig,
    conv: &mut Conversation,
    stats: &mut SendStats,
    emit: &Emitter,
    window: u32,
) -> Result<(), ErrorEnvelope> {
    let limit = context::prompt_limit(window, config.max_tokens);
    let before = estimate(config, conv);
    if before <= limit {
        return Ok(());
    }
    let protect = conv.recent_start(KEEP_TURNS);
    // Prune down to PRUNE_TO_PERCENT of the limit, not just under it: the
    // next steps then append without rewriting the prefix again, so the
    // server's prompt cache keeps hitting.
    let target = limit * PRUNE_TO_PERCENT / 100;
    let to_free = usize::try_from((before - target).saturating_mul(BYTES_PER_TOKEN)).unwrap_or(usize::MAX);
    let pruned = conv.prune_outputs(to_free, protect);
    let after = estimate(config, conv);
    if pruned.messages > 0 {
        let messages_pruned = pruned.messages as u64;
        emit.emit(Event::ContextPrune { messages_pruned, tokens_before: before, tokens_after: after }).await;
    }
    if after <= limit {
        return Ok(());
    }
    let room = usize::try_from(limit.saturating_mul(BYTES_PER_TOKEN) * 3 / 4).unwrap_or(usize::MAX);
    if let Some(keep_from) = keep_from(conv, room) {
        // The operator's PreCompact hooks hear of it; the request must fit, so it goes on.
        crate::hooks::pre_compact(&config.hook_scope(), emit, "auto").await;
        compact(config, conv, stats, emit, window, keep_from).await?;
    }
    if estimate(config, conv) <= limit {
        return Ok(());
    }
    // Even the recent turns do not fit: stub their outputs too.
    conv.prune_outputs(usize::MAX, conv.len());
    let last = estimate(config, conv);
    if last <= limit {
        return Ok(());
    }
    let largest = (0..conv.len()).map(|i| conv.bytes_of(i)).max().unwrap_or(0) as u64 / BYTES_PER_TOKEN;
    Err(ErrorEnvelope::new(
        ErrorCode::ContextOverflow,
        format!(
            "the conversation needs about {last} tokens and one message alone about {largest}; \
             the model's context window is {window} tokens (room for the prompt: {limit})"
        ),
    ))
}

/// The summary call's body: streamed with its usage asked for (a server
/// that reports usage only when asked, as OpenAI's does, would otherwise
/// leave the side call's tokens at zero), and the session's temperature
/// only when it sets one (as every turn does: a provider that refuses a
/// temperature refuses it here too).
#[derive(Serialize)]
struct SummaryRequest<'a> {
    model: &'a str,
    messages: [Msg<'a>; 2],
    stream: bool,
    stream_options: StreamOptions,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct Msg<'a> {
    role: &'a str,
    content: &'a str,
}

/// Where the kept part of a compacted conversation starts: the earliest
/// user or assistant message from which the rest takes at most `room` bytes,
/// but never earlier than the last [`KEEP_TURNS`] answers and never later than
/// the last message. `None` when there is nothing before it to summarise.
pub fn keep_from(conv: &Conversation, room: usize) -> Option<usize> {
    let start = usize::from(conv.role_of(0) == "system");
    let recent = conv.recent_start(KEEP_TURNS);
    let mut best = None;
    let mut tail = 0usize;
    for i in (start + 1..conv.len()).rev() {
        tail += conv.bytes_of(i);
        if tail > room && best.is_some() {
            break;
        }
        if matches!(conv.role_of(i), "user" | "assistant") {
            best = Some(i);
        }
        if i <= recent && tail <= room {
            // Everything from the recent turns on fits: keep no more.
            break;
        }
    }
    best
}

/// Summarises `messages[..keep_from]` (after the system prompt) with one
/// extra model call and replaces them by the summary. Emits `context_compact`.
pub async fn compact(
    config: &SessionConfig,
    conv: &mut Conversation,
    stats: &mut SendStats,
    emit: &Emitter,
    window: u32,
    keep_from: usize,
) -> Result<(), ErrorEnvelope> {
    let before = estimate(config, conv);
    let start = usize::from(conv.role_of(0) == "system");
    if keep_from <= start {
        return Ok(());
    }
    // The transcript the summariser reads, newest kept when it must be cut.
    let summary_room = SUMMARY_TOKENS.min(window / 8).max(64);
    let budget_bytes = usize::try_from(
        context::prompt_limit(window, summary_room).saturating_sub(300).saturating_mul(BYTES_PER_TOKEN),
    )
    .unwrap_or(usize::MAX);
    let mut parts: Vec<String> = (start..keep_from)
        .map(|i| {
            let text = conv.text_of(i);
            let cut = crate::tools::floor_char_boundary(&text, TRANSCRIPT_MESSAGE_BYTES);
            let mut line = format!("{}: {}", conv.role_of(i), &text[..cut]);
            if cut < text.len() {
                let _ = write!(line, " [… {} more bytes]", text.len() - cut);
            }
            line
        })
        .collect();
    while parts.iter().map(String::len).sum::<usize>() > budget_bytes && parts.len() > 1 {
        parts.remove(0);
    }
    let transcript = parts.join("\n\n");
    let body = SummaryRequest {
        model: config.compact_model.as_deref().unwrap_or(&config.model),
        messages: [Msg { role: "system", content: SUMMARY_PROMPT }, Msg { role: "user", content: &transcript }],
        stream: true,
        stream_options: StreamOptions { include_usage: true },
        max_tokens: summary_room,
        temperature: config.temperature,
    };
    let body = serde_json::to_vec(&body)
        .map(Bytes::from)
        .map_err(|e| ErrorEnvelope::new(ErrorCode::ProtocolError, format!("cannot encode the summary request: {e}")))?;
    let started = Instant::now();
    let summary = side_call(config, body, emit, stats).await.map_err(|e| ErrorEnvelope::from(&e))?;
    tracing::debug!(ms = started.elapsed().as_millis() as u64, "conversation compacted");
    conv.compact(keep_from, &summary);
    let after = estimate(config, conv);
    let summary_tokens = (summary.len() as u64).div_ceil(BYTES_PER_TOKEN);
    emit.emit(Event::ContextCompact {
        tokens_before: Some(before),
        tokens_after: Some(after),
        summary_tokens: Some(summary_tokens),
    })
    .await;
    Ok(())
}

/// A manual compaction: summarises everything before the last
/// [`context::KEEP_TURNS`] answers, whatever the window (an unknown window
/// counts as [`COMPACT_WINDOW_UNKNOWN`] tokens for the summary request).
pub async fn compact_now(
    config: &SessionConfig,
    conv: &mut Conversation,
    stats: &mut SendStats,
    emit: &Emitter,
) -> Outcome {
    let window = config.window(conv.budget.learned_window).await.unwrap_or(COMPACT_WINDOW_UNKNOWN);
    let before = estimate(config, conv);
    let keep_from = conv.recent_start(context::KEEP_TURNS);
    if keep_from <= usize::from(conv.role_of(0) == "system") + 1 {
        return Outcome::Ok { response: format!("nothing to compact (about {before} tokens)") };
    }
    if let Some(reason) = crate::hooks::pre_compact(&config.hook_scope(), emit, "manual").await.block {
        let error = ErrorEnvelope::new(ErrorCode::HookBlocked, format!("a PreCompact hook refused: {reason}"));
        return fail(emit, error, None, None).await;
    }
    match compact(config, conv, stats, emit, window, keep_from).await {
        Ok(()) => {
            let after = estimate(config, conv);
            Outcome::Ok { response: format!("compacted the conversation from about {before} to {after} tokens") }
        }
        Err(error) => fail(emit, error, None, None).await,
    }
}

/// The window assumed for a manual compaction when none is known, in tokens.
pub const COMPACT_WINDOW_UNKNOWN: u32 = 32_768;
