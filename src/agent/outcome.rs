//! How a send's model call streams and how a send ends in an error: the
//! two steps of the turn loop that talk to the outside (the model server,
//! the emitter) without deciding anything but whether the cost budget
//! allows the call.

use bytes::Bytes;

use super::budget::{BudgetCall, BudgetPoint, Meter};
use super::emit::Emitter;
use super::fallback::Fallback;
use super::stats::SendStats;
use crate::config::SessionConfig;
use crate::model::{Completion, ModelError, cost};
use crate::telemetry::ChatSpan;
use crate::wire::{ErrorEnvelope, Event};

/// How a send ended (cancellation is decided by the caller).
#[derive(Debug)]
pub enum Outcome {
    /// The model answered without tool calls; its text.
    Ok { response: String },
    /// A fatal error; its `error` event has been emitted.
    Failed { error: ErrorEnvelope, response: Option<String> },
}

/// Whether a model call's text reaches the host as `content_delta` events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shown {
    /// A turn: each text piece is a `content_delta`.
    Deltas,
    /// A side call (the compaction summary, a reading of the request or an
    /// answer): the host sees its usage, not its text.
    Hidden,
}

/// Streams one model call, emitting `content_delta` per text piece when
/// `shown` says so (and a `retry` event before each retry of a 429/503),
/// traced as a `chat` span, and charges its cost to `meter` (the
/// completion's `usage.cost_usd`, see [`crate::model::cost`]; a call without
/// usage makes the send's cost unknown). Not made
/// (`ModelError::BudgetSpent`) when the request alone, at the cheapest price
/// of the table, would pass the send's cost budget.
pub(super) async fn call_model(
    config: &SessionConfig,
    body: Bytes,
    emit: &Emitter,
    meter: &Meter,
    fallback: &mut Fallback,
    shown: Shown,
) -> Result<Completion, ModelError> {
    if let Some(prices) = &config.prices
        && meter.at(BudgetPoint::Request { least_cost: prices.least_cost((body.len() as u64).div_ceil(4)) }, false)
            == BudgetCall::End
    {
        let e = meter.exceeded();
        return Err(ModelError::BudgetSpent { message: e.message, details: e.details.unwrap_or_default() });
    }
    let mut span = emit.trace().map_or_else(ChatSpan::none, |t| t.chat(&config.model, &config.endpoint.provider()));
    let result = stream_call(config, body, emit, meter, fallback, &mut span, shown).await;
    span.end(result.as_ref());
    result
}

/// A model call the host sees only as usage (the compaction summary, a
/// reading of the request or an answer): made like a turn ([`call_model`], [`Shown::Hidden`]),
/// its time counted as model time, its tokens charged to the send's token
/// budget (an estimate from the body's size and the text when the server
/// reports no usage), counted among the send's side calls (never its
/// `iterations`), and its usage added to the send's and the side calls'
/// and emitted as a `usage` event. Returns the call's text.
pub(super) async fn side_call(
    config: &SessionConfig,
    body: Bytes,
    emit: &Emitter,
    stats: &mut SendStats,
) -> Result<String, ModelError> {
    let prompt_estimate = (body.len() as u64).div_ceil(4);
    let meter = std::sync::Arc::clone(&stats.meter);
    stats.begin_model();
    stats.side_calls.calls += 1;
    let result = call_model(config, body, emit, &meter, &mut stats.fallback, Shown::Hidden).await;
    stats.end_model();
    let completion = result?;
    match completion.usage {
        Some(u) => {
            meter.charge_tokens(u.total_tokens);
            stats.usage.add(&u);
            stats.side_calls.usage.add(&u);
            emit.emit(Event::Usage { usage: u, side_call: Some(true) }).await;
        }
        None => meter.charge_tokens(prompt_estimate + completion.estimated_tokens()),
    }
    Ok(completion.text)
}

/// The streaming part of [`call_model`]: a request refused before
/// anything streamed goes to the send's fallback model when it can absorb
/// the refusal (see [`Fallback`]), with a `model_fallback` event.
async fn stream_call(
    config: &SessionConfig,
    body: Bytes,
    emit: &Emitter,
    meter: &Meter,
    fallback: &mut Fallback,
    span: &mut ChatSpan,
    shown: Shown,
) -> Result<Completion, ModelError> {
    let body = fallback.body(body);
    let mut stream = match config.endpoint.open(body.clone(), emit).await {
        Ok(s) => s,
        Err(e) if fallback.takes(&e) => {
            let to = fallback.engage().unwrap_or_default().to_owned();
            tracing::warn!(model = %config.model, fallback = %to, "the model refused the request ({e}); falling back");
            let reason = e.status().map_or_else(|| e.to_string(), |s| format!("HTTP {s}: {e}"));
            emit.emit(Event::ModelFallback { model: config.model.clone(), fallback: to, reason }).await;
            config.endpoint.open(fallback.body(body), emit).await?
        }
        Err(e) => return Err(e),
    };
    while let Some(text) = stream.next_text().await? {
        span.first_token();
        if shown == Shown::Deltas {
            emit.emit(Event::ContentDelta { text }).await;
        }
    }
    let header = stream.header_cost;
    let mut completion = stream.into_completion();
    price(config, &mut completion, header, meter);
    Ok(completion)
}

/// Sets `usage.cost_usd` of a finished call and charges it to `meter`.
pub(super) fn price(config: &SessionConfig, completion: &mut Completion, header: Option<f64>, meter: &Meter) {
    let cost = cost::call_cost(completion.usage.as_ref(), header, config.prices.as_ref());
    if let Some(u) = &mut completion.usage {
        u.cost_usd = cost;
    }
    meter.charge_cost(cost);
}

/// Emits the `error` event of a fatal error and ends the send with it.
/// (`provider` names the model server for provider errors.)
pub(crate) async fn fail(
    emit: &Emitter,
    error: ErrorEnvelope,
    response: Option<String>,
    provider: Option<String>,
) -> Outcome {
    emit.emit(Event::Error {
        code: error.code,
        message: error.message.clone(),
        retryable: error.retryable,
        provider,
        details: error.details.clone(),
    })
    .await;
    Outcome::Failed { error, response }
}
