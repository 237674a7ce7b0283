//! The turn loop of one send: call the model, stream its text, run the tools
//! it asks for, feed their results back, until it answers without tools or a
//! limit stops it.
//!
//! Owns: iteration counting and the `max_iterations` limit, loop detection
//! (three consecutive iterations with identical tool calls), the per-send
//! statistics that end up in the result, and the line between errors the
//! model sees (tool failures, bad arguments, unknown tools: they become tool
//! results) and fatal ones (provider errors, limits: they end the send).
//!
//! Knows nothing of stdio or HTTP: events go out through an [`Emitter`].
//! Cancellation is the caller's: it drops this future (which drops the HTTP
//! stream and kills a running tool's process group), then calls
//! [`crate::conversation::Conversation::repair`].

use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use async_openai::types::chat::ChatCompletionRequestMessage;

use crate::approval::{ApprovalMode, PermissionBroker, Verdict};
use crate::conversation::Conversation;
use crate::model::{Completion, ModelError, ToolCall};
use crate::session::{Emitter, SessionSettings};
use crate::tools::{self, ToolContext};
use crate::wire::{Decision, ErrorCode, ErrorEnvelope, Event, ToolCallMade, Usage};

/// Identical consecutive tool-call iterations that count as a loop.
pub const LOOP_REPEATS: u32 = 3;

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
    settings: &SessionSettings,
    permissions: &PermissionBroker,
    conv: &mut Conversation,
    stats: &mut SendStats,
    emit: &Emitter,
    message: &str,
    cancel: CancellationToken,
) -> Outcome {
    conv.push_user(message);
    let tool_ctx =
        ToolContext { workspace: settings.workspace.clone(), allowed_paths: settings.allowed_paths.clone(), cancel };
    let mut last_signature: Option<String> = None;
    let mut repeats = 0u32;
    loop {
        if stats.iterations >= settings.max_iterations {
            let error = ErrorEnvelope::new(
                ErrorCode::MaxIterations,
                format!(
                    "stopped after {} model calls (max_iterations); the task is not finished",
                    settings.max_iterations
                ),
            );
            return fail(emit, error, None).await;
        }
        stats.iterations += 1;
        let body = match serde_json::to_vec(&ChatRequest {
            model: &settings.model,
            messages: conv.messages(),
            stream: true,
            stream_options: StreamOptions { include_usage: true },
            tools: settings.tool_specs(),
            temperature: settings.temperature,
            max_tokens: settings.max_tokens,
        }) {
            Ok(b) => Bytes::from(b),
            Err(e) => {
                return fail(
                    emit,
                    ErrorEnvelope::new(ErrorCode::ProtocolError, format!("cannot encode the request: {e}")),
                    None,
                )
                .await;
            }
        };
        let started = Instant::now();
        let result = call_model(settings, body, emit).await;
        stats.model_latency += started.elapsed();
        let completion = match result {
            Ok(c) => c,
            Err(e) => {
                let error = ErrorEnvelope {
                    code: ErrorCode::ProviderError,
                    message: e.message.clone(),
                    retryable: e.retryable,
                    details: Some(e.details()),
                };
                emit.emit(Event::Error {
                    code: error.code,
                    message: error.message.clone(),
                    retryable: error.retryable,
                    provider: Some(settings.endpoint.provider()),
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
            if settings.policy.mode == ApprovalMode::Plan {
                emit.emit(Event::PlanComplete { plan: completion.text.clone() }).await;
            }
            return Outcome::Ok { response: completion.text };
        }
        let signature = signature(&completion.tool_calls);
        if last_signature.as_deref() == Some(signature.as_str()) {
            repeats += 1;
        } else {
            repeats = 1;
            last_signature = Some(signature);
        }
        if repeats >= LOOP_REPEATS {
            let error = ErrorEnvelope::new(
                ErrorCode::LoopDetected,
                format!("the model made the same tool calls {LOOP_REPEATS} iterations in a row"),
            );
            return fail(emit, error, None).await;
        }
        for call in &completion.tool_calls {
            run_tool(settings, permissions, conv, stats, emit, call, &tool_ctx).await;
        }
    }
}

/// Streams one model call, emitting `content_delta` per text piece.
async fn call_model(settings: &SessionSettings, body: Bytes, emit: &Emitter) -> Result<Completion, ModelError> {
    let mut stream = settings.endpoint.open(body).await?;
    while let Some(text) = stream.next_text().await? {
        emit.emit(Event::ContentDelta { text }).await;
    }
    Ok(stream.finish())
}

/// Runs one tool call and appends its result to the conversation.
async fn run_tool(
    settings: &SessionSettings,
    permissions: &PermissionBroker,
    conv: &mut Conversation,
    stats: &mut SendStats,
    emit: &Emitter,
    call: &ToolCall,
    ctx: &ToolContext,
) {
    let parsed = if call.arguments.trim().is_empty() {
        Ok(Value::Object(Default::default()))
    } else {
        serde_json::from_str::<Value>(&call.arguments)
    };
    let args = parsed.as_ref().cloned().unwrap_or_else(|_| Value::String(call.arguments.clone()));
    emit.emit(Event::ToolStart { name: call.name.clone(), args: args.clone(), call_id: Some(call.id.clone()) }).await;
    stats.tool_calls_made.push(ToolCallMade { name: call.name.clone(), args });
    let started = Instant::now();
    let output = match &parsed {
        Err(e) => tools::ToolOutput::error(format!(
            "the arguments of this {} call are not valid JSON ({e}); send a JSON object",
            call.name
        )),
        Ok(args) => match approve(settings, permissions, emit, &call.name, args).await {
            Ok(()) => tools::execute(&call.name, &call.arguments, &settings.tools, ctx).await,
            Err(reason) => tools::ToolOutput::error(format!("permission denied: {reason}. Do not retry this call.")),
        },
    };
    stats.tool_latency += started.elapsed();
    emit.emit(Event::ToolEnd {
        name: call.name.clone(),
        result_preview: tools::preview(&output.text),
        call_id: Some(call.id.clone()),
        is_error: Some(output.is_error),
    })
    .await;
    let text = if output.is_error { format!("Error: {}", output.text) } else { output.text };
    conv.push_tool_result(&call.id, text);
}

/// Applies the approval policy to one call: `Ok` runs it, `Err` carries the
/// refusal (already announced with `permission_denied`).
async fn approve(
    settings: &SessionSettings,
    permissions: &PermissionBroker,
    emit: &Emitter,
    name: &str,
    args: &Value,
) -> Result<(), String> {
    // `execute` answers unknown tools and tools the config did not enable;
    // tools hidden by plan mode get the policy's refusal.
    if !tools::ALL_TOOLS.contains(&name) || (!settings.tools.iter().any(|t| t == name) && settings.policy.visible(name))
    {
        return Ok(());
    }
    let reason = match settings.policy.check(name, args, &settings.workspace) {
        Verdict::Allow => return Ok(()),
        Verdict::Deny(reason) => {
            emit.emit(Event::PermissionDenied { name: name.to_owned(), reason: reason.clone() }).await;
            return Err(reason);
        }
        Verdict::Ask(reason) => reason,
    };
    let (request_id, answer) = permissions.open();
    emit.emit(Event::PermissionRequest {
        name: name.to_owned(),
        reason: reason.clone(),
        request_id: Some(request_id.clone()),
        args: Some(args.clone()),
    })
    .await;
    // Settles the request however this wait ends (answer, timeout, cancel).
    struct Settle<'a>(&'a PermissionBroker, &'a str);
    impl Drop for Settle<'_> {
        fn drop(&mut self) {
            self.0.settle(self.1);
        }
    }
    let _settle = Settle(permissions, &request_id);
    let denial = if !settings.permission_responses {
        format!("{reason}, and the client does not answer permission requests")
    } else {
        match tokio::time::timeout(settings.permission_timeout, answer).await {
            Ok(Ok(Decision::Allow)) => return Ok(()),
            Ok(Ok(Decision::Deny)) => "denied by the user".to_owned(),
            Ok(Err(_)) => "the permission request was dropped".to_owned(),
            Err(_) => format!("no answer within {} ms", settings.permission_timeout.as_millis()),
        }
    };
    emit.emit(Event::PermissionDenied { name: name.to_owned(), reason: denial.clone() }).await;
    Err(denial)
}

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

/// Names and canonical arguments (keys sorted, no whitespace) of an
/// iteration's tool calls.
fn signature(calls: &[ToolCall]) -> String {
    calls
        .iter()
        .map(|c| {
            let args = serde_json::from_str::<Value>(&c.arguments)
                .map(|v| canonical(&v))
                .unwrap_or_else(|_| c.arguments.clone());
            format!("{}({args})", c.name)
        })
        .collect::<Vec<_>>()
        .join("\u{1f}")
}

/// JSON text with object keys sorted at every level, whatever order the
/// map type keeps (serde_json's `preserve_order` may be on in a build).
fn canonical(v: &Value) -> String {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let parts: Vec<String> =
                keys.iter().map(|k| format!("{}:{}", Value::String((*k).clone()), canonical(&map[*k]))).collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(canonical).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_ignores_key_order_and_spacing() {
        let a = [ToolCall { id: "1".into(), name: "grep".into(), arguments: r#"{"pattern":"x","path":"src"}"#.into() }];
        let b = [ToolCall {
            id: "2".into(),
            name: "grep".into(),
            arguments: r#"{ "path": "src", "pattern": "x" }"#.into(),
        }];
        assert_eq!(signature(&a), signature(&b));
    }
}
