//! The turn loop of one send: call the model, stream its text, run the tools
//! it asks for, feed their results back, until it answers without tools or a
//! limit stops it.
//!
//! Owns: iteration counting and the `max_iterations` limit, loop detection
//! ([`loop_guard`]), the per-send statistics that end up in the result, and
//! the line between errors the model sees (tool failures, bad arguments,
//! unknown tools: they become tool results, see [`tool_call`]) and fatal
//! ones (provider errors, limits: they end the send).
//!
//! Knows nothing of stdio or HTTP: events go out through an [`Emitter`].
//! Cancellation is the caller's: it drops this future (which drops the HTTP
//! stream and kills a running tool's process group), then calls
//! [`crate::conversation::Conversation::repair`].

pub mod emit;
pub mod loop_guard;
pub mod tool_call;

use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use async_openai::types::chat::ChatCompletionRequestMessage;

pub use emit::{Emitter, OUTBOX_CAPACITY, Outbox};
pub use loop_guard::LOOP_REPEATS;

use crate::approval::{ApprovalMode, PermissionBroker};
use crate::config::SessionConfig;
use crate::conversation::Conversation;
use crate::model::{Completion, ModelError};
use crate::tools::ToolContext;
use crate::wire::{ErrorCode, ErrorEnvelope, Event, ToolCallMade, Usage};
use loop_guard::LoopGuard;
use tool_call::CallContext;

/// Figures of one send, reported in its result (also when it is cancelled).
#[derive(Debug, Default)]
pub struct SendStats {
    /// Model calls made.
    pub iterations: u32,
    pub tool_calls_made: Vec<ToolCallMade>,
    pub usage: Usage,
    pub model_latency: Duration,
    pub tool_latency: Duration,
}

/// How a send ended (cancellation is decided by the caller).
#[derive(Debug)]
pub enum Outcome {
    /// The model answered without tool calls; its text.
    Ok { response: String },
    /// A fatal error; its `error` event has been emitted.
    Failed { error: ErrorEnvelope, response: Option<String> },
}

/// The body of a chat-completions request, borrowing the conversation.
#[derive(Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    messages: &'a [ChatCompletionRequestMessage],
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "<[Value]>::is_empty")]
    tools: &'a [Value],
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// Runs one send to its end. `conv` already holds the earlier turns.
pub async fn run(
    config: &SessionConfig,
    permissions: &PermissionBroker,
    conv: &mut Conversation,
    stats: &mut SendStats,
    emit: &Emitter,
    message: &str,
    cancel: CancellationToken,
) -> Outcome {
    conv.push_user(message);
    let tools =
        ToolContext { workspace: config.workspace.clone(), allowed_paths: config.allowed_paths.clone(), cancel };
    let cx = CallContext { config, permissions, emit, tools: &tools };
    let mut guard = LoopGuard::default();
    loop {
        if stats.iterations >= config.max_iterations {
            let error = ErrorEnvelope::new(
                ErrorCode::MaxIterations,
                format!(
                    "stopped after {} model calls (max_iterations); the task is not finished",
                    config.max_iterations
                ),
            );
            return fail(emit, error, None).await;
        }
        stats.iterations += 1;
        let body = match serde_json::to_vec(&ChatRequest {
            model: &config.model,
            messages: conv.messages(),
            stream: true,
            stream_options: StreamOptions { include_usage: true },
            tools: config.tool_specs(),
            temperature: config.temperature,
            max_tokens: config.max_tokens,
        }) {
            Ok(b) => Bytes::from(b),
            Err(e) => {
                let error = ErrorEnvelope::new(ErrorCode::ProtocolError, format!("cannot encode the request: {e}"));
                return fail(emit, error, None).await;
            }
        };
        let started = Instant::now();
        let result = call_model(config, body, emit).await;
        stats.model_latency += started.elapsed();
        let completion = match result {
            Ok(c) => c,
            Err(e) => {
                let error = ErrorEnvelope::from(&e);
                emit.emit(Event::Error {
                    code: error.code,
                    message: error.message.clone(),
                    retryable: error.retryable,
                    provider: Some(config.endpoint.provider()),
                    details: error.details.clone(),
                })
                .await;
                return Outcome::Failed { error, response: None };
            }
        };
        if let Some(u) = completion.usage {
            stats.usage.add(&u);
            emit.emit(Event::Usage(u)).await;
        }
        conv.push_assistant(&completion.text, &completion.tool_calls);
        if completion.tool_calls.is_empty() {
            if completion.finish_reason.as_deref() == Some("length") {
                let error = ErrorEnvelope {
                    code: ErrorCode::ProviderError,
                    message: "the model's answer was cut off at its token limit (finish_reason: length)".to_owned(),
                    retryable: false,
                    details: Some(serde_json::json!({"finish_reason": "length"})),
                };
                return fail(emit, error, Some(completion.text)).await;
            }
            if config.policy.mode == ApprovalMode::Plan {
                emit.emit(Event::PlanComplete { plan: completion.text.clone() }).await;
            }
            return Outcome::Ok { response: completion.text };
        }
        if guard.is_loop(&completion.tool_calls) {
            let error = ErrorEnvelope::new(
                ErrorCode::LoopDetected,
                format!("the model made the same tool calls {LOOP_REPEATS} iterations in a row"),
            );
            return fail(emit, error, None).await;
        }
        for call in &completion.tool_calls {
            tool_call::run(&cx, conv, stats, call).await;
        }
    }
}

/// Streams one model call, emitting `content_delta` per text piece.
async fn call_model(config: &SessionConfig, body: Bytes, emit: &Emitter) -> Result<Completion, ModelError> {
    let mut stream = config.endpoint.open(body).await?;
    while let Some(text) = stream.next_text().await? {
        emit.emit(Event::ContentDelta { text }).await;
    }
    Ok(stream.into_completion())
}

/// Emits the `error` event of a fatal error and ends the send with it.
async fn fail(emit: &Emitter, error: ErrorEnvelope, response: Option<String>) -> Outcome {
    emit.emit(Event::Error {
        code: error.code,
        message: error.message.clone(),
        retryable: error.retryable,
        provider: None,
        details: error.details.clone(),
    })
    .await;
    Outcome::Failed { error, response }
}
