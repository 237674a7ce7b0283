//! OpenTelemetry traces of sends, model calls and tool calls.
//!
//! Owns: whether tracing is on (only when the standard variables ask for an
//! OTLP exporter: `OTEL_EXPORTER_OTLP_ENDPOINT` or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, and neither `OTEL_SDK_DISABLED=true`
//! nor `OTEL_TRACES_EXPORTER=none`), the tracer built on first use (never at
//! start: an untraced worker pays nothing but one check per send), the spans
//! and their `gen_ai.*` attributes (OpenTelemetry's GenAI semantic
//! conventions): one `invoke_agent` span per send ([`SendTrace`]), a `chat`
//! span per model call ([`ChatSpan`]), an `execute_tool` span per tool call
//! ([`ToolSpan`]); parenting from a W3C `traceparent` the orchestrator gives
//! (`init.config.traceparent`, a send's `traceparent`, the HTTP header, ACP
//! `_meta.traceparent`, `TRACEPARENT` of `pirn run`); and the flush at exit.
//!
//! Prompt and answer text go on spans only when the operator opts in with
//! `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`. Spans leave
//! through the SDK's batch processor: a bounded queue (`OTEL_BSP_*`) drained
//! by its own thread ([`export`]), so an unreachable collector never slows
//! or fails a send; spans it had to drop are counted in a log line at exit.

pub mod export;

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt, Tracer as _, TracerProvider as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider, Span};

/// The OpenTelemetry GenAI attribute names pirn sets (the semantic
/// conventions' names; `opentelemetry-semantic-conventions` 0.33 deprecates
/// its constants for them, which moved to a separate repository).
mod semconv {
    pub(super) const GEN_AI_AGENT_NAME: &str = "gen_ai.agent.name";
    pub(super) const GEN_AI_CONVERSATION_ID: &str = "gen_ai.conversation.id";
    pub(super) const GEN_AI_INPUT_MESSAGES: &str = "gen_ai.input.messages";
    pub(super) const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
    pub(super) const GEN_AI_OUTPUT_MESSAGES: &str = "gen_ai.output.messages";
    pub(super) const GEN_AI_PROVIDER_NAME: &str = "gen_ai.provider.name";
    pub(super) const GEN_AI_REQUEST_MODEL: &str = "gen_ai.request.model";
    pub(super) const GEN_AI_RESPONSE_FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
    pub(super) const GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK: &str = "gen_ai.response.time_to_first_chunk";
    pub(super) const GEN_AI_TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
    pub(super) const GEN_AI_TOOL_NAME: &str = "gen_ai.tool.name";
    pub(super) const GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: &str = "gen_ai.usage.cache_read.input_tokens";
    pub(super) const GEN_AI_USAGE_INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
    pub(super) const GEN_AI_USAGE_OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
}

/// The tracer and whether message text is captured, once tracing is on.
struct Tracing {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    capture: bool,
}

static TRACING: OnceLock<Option<Tracing>> = OnceLock::new();

/// The tracer, built on first call when the environment asks for traces.
fn tracing() -> Option<&'static Tracing> {
    TRACING.get_or_init(|| build(&|k| std::env::var(k).ok())).as_ref()
}

/// True when `get` (the environment) asks for OTLP traces.
pub fn configured(get: &dyn Fn(&str) -> Option<String>) -> bool {
    let set = |k: &str| get(k).is_some_and(|v| !v.trim().is_empty());
    let is = |k: &str, v: &str| get(k).is_some_and(|x| x.trim().eq_ignore_ascii_case(v));
    !is("OTEL_SDK_DISABLED", "true")
        && !is("OTEL_TRACES_EXPORTER", "none")
        && (set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
}

fn build(get: &dyn Fn(&str) -> Option<String>) -> Option<Tracing> {
    if !configured(get) {
        return None;
    }
    let protocol = get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL").or_else(|| get("OTEL_EXPORTER_OTLP_PROTOCOL"));
    if let Some(p) = protocol.filter(|p| p.trim() != "http/protobuf") {
        tracing::warn!(protocol = %p, "OpenTelemetry: pirn exports OTLP over http/protobuf only; using it");
    }
    let provider = match export::provider(get) {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!("OpenTelemetry traces are off: {e}");
            return None;
        }
    };
    let tracer = provider.tracer("pirn");
    let capture = get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT").is_some_and(|v| v.trim() == "true");
    Some(Tracing { provider, tracer, capture })
}

/// Flushes the spans still queued, waiting at most `within` (an
/// unreachable collector must not hold the exit), and logs how many were
/// dropped. Nothing when tracing never started.
pub fn shutdown(within: Duration) {
    if let Some(Some(t)) = TRACING.get() {
        if let Err(e) = t.provider.shutdown_with_timeout(within) {
            tracing::warn!("OpenTelemetry: spans not all exported at exit: {e}");
        }
        export::report_failures();
    }
}

/// The parent of a send's span from a W3C `traceparent` value
/// (`00-<trace id>-<span id>-<flags>`); an empty context when it is absent
/// or malformed (malformed ones are logged).
fn parent(traceparent: Option<&str>) -> Context {
    let Some(value) = traceparent.map(str::trim).filter(|v| !v.is_empty()) else { return Context::new() };
    use opentelemetry::propagation::TextMapPropagator;
    let carrier = std::collections::HashMap::from([("traceparent".to_owned(), value.to_owned())]);
    let cx = opentelemetry_sdk::propagation::TraceContextPropagator::new().extract(&carrier);
    if !cx.span().span_context().is_valid() {
        tracing::warn!(traceparent = %value, "not a W3C traceparent; the send's trace starts a new one");
    }
    cx
}

/// The trace of one send: its `invoke_agent` span, parent of its model and
/// tool calls. `None` (everywhere) when tracing is off.
pub struct SendTrace {
    span: Span,
    /// Carries the send span as the parent of its children.
    cx: Context,
    capture: bool,
}

impl SendTrace {
    /// Starts the span of send `send_id` in session `session_id` (model
    /// `model`), under `traceparent` when given; `None` when tracing is off.
    pub fn start(
        session_id: &str,
        send_id: &str,
        model: &str,
        traceparent: Option<&str>,
        prompt: &str,
    ) -> Option<SendTrace> {
        let t = tracing()?;
        let mut attributes = vec![
            KeyValue::new(semconv::GEN_AI_OPERATION_NAME, "invoke_agent"),
            KeyValue::new(semconv::GEN_AI_AGENT_NAME, "pirn"),
            KeyValue::new(semconv::GEN_AI_CONVERSATION_ID, session_id.to_owned()),
            KeyValue::new(semconv::GEN_AI_REQUEST_MODEL, model.to_owned()),
            KeyValue::new("pirn.send_id", send_id.to_owned()),
        ];
        if t.capture {
            attributes.push(KeyValue::new(semconv::GEN_AI_INPUT_MESSAGES, prompt.to_owned()));
        }
        let span = t
            .tracer
            .span_builder("invoke_agent pirn")
            .with_kind(SpanKind::Internal)
            .with_attributes(attributes)
            .start_with_context(&t.tracer, &parent(traceparent));
        let cx = Context::new().with_remote_span_context(span.span_context().clone());
        Some(SendTrace { span, cx, capture: t.capture })
    }

    /// Ends the send's span with its result.
    pub fn end(mut self, result: &crate::wire::SendResult) {
        let mut attributes = Vec::with_capacity(8);
        if let Some(u) = &result.usage {
            attributes.push(KeyValue::new(semconv::GEN_AI_USAGE_INPUT_TOKENS, u.prompt_tokens as i64));
            attributes.push(KeyValue::new(semconv::GEN_AI_USAGE_OUTPUT_TOKENS, u.completion_tokens as i64));
            if let Some(c) = u.cost_usd {
                attributes.push(KeyValue::new("pirn.cost_usd", c));
            }
        }
        if let Some(stop) = result.stop_reason.and_then(|s| serde_json::to_value(s).ok()) {
            attributes.push(KeyValue::new("pirn.stop_reason", stop.as_str().unwrap_or_default().to_owned()));
        }
        attributes.push(KeyValue::new("pirn.iterations", i64::from(result.iterations)));
        if self.capture
            && let Some(r) = &result.response
        {
            attributes.push(KeyValue::new(semconv::GEN_AI_OUTPUT_MESSAGES, r.clone()));
        }
        self.span.set_attributes(attributes);
        if let Some(e) = &result.error {
            self.span.set_attribute(KeyValue::new("error.type", error_code(e.code)));
            self.span.set_status(Status::error(e.message.clone()));
        }
        self.span.end();
    }

    /// Starts the span of one model call.
    pub fn chat(&self, model: &str, provider: &str) -> ChatSpan {
        let Some(t) = tracing() else { return ChatSpan(None) };
        let span = t
            .tracer
            .span_builder(format!("chat {model}"))
            .with_kind(SpanKind::Client)
            .with_attributes([
                KeyValue::new(semconv::GEN_AI_OPERATION_NAME, "chat"),
                KeyValue::new(semconv::GEN_AI_REQUEST_MODEL, model.to_owned()),
                KeyValue::new(semconv::GEN_AI_PROVIDER_NAME, provider.to_owned()),
            ])
            .start_with_context(&t.tracer, &self.cx);
        ChatSpan(Some((span, Instant::now(), false)))
    }

    /// Starts the span of one tool call.
    pub fn tool(&self, name: &str, call_id: &str) -> ToolSpan {
        let Some(t) = tracing() else { return ToolSpan(None) };
        let span = t
            .tracer
            .span_builder(format!("execute_tool {name}"))
            .with_kind(SpanKind::Internal)
            .with_attributes([
                KeyValue::new(semconv::GEN_AI_OPERATION_NAME, "execute_tool"),
                KeyValue::new(semconv::GEN_AI_TOOL_NAME, name.to_owned()),
                KeyValue::new(semconv::GEN_AI_TOOL_CALL_ID, call_id.to_owned()),
            ])
            .start_with_context(&t.tracer, &self.cx);
        ToolSpan(Some((span, Instant::now())))
    }
}

/// The `error.type` of an error code: its wire name.
fn error_code(code: crate::wire::ErrorCode) -> String {
    serde_json::to_value(code).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

/// A model call's span (empty when tracing is off): `first_token` marks
/// the first streamed text, [`ChatSpan::end`] records usage and finish.
pub struct ChatSpan(Option<(Span, Instant, bool)>);

impl ChatSpan {
    /// No span (tracing off, or the send has none).
    pub fn none() -> ChatSpan {
        ChatSpan(None)
    }

    /// The answer's first text arrived (the first call counts).
    pub fn first_token(&mut self) {
        if let Some((span, started, seen)) = &mut self.0
            && !*seen
        {
            *seen = true;
            span.set_attribute(KeyValue::new(
                semconv::GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK,
                started.elapsed().as_secs_f64(),
            ));
        }
    }

    /// Ends the span with the call's outcome.
    pub fn end(self, outcome: Result<&crate::model::Completion, &crate::model::ModelError>) {
        let Some((mut span, _, _)) = self.0 else { return };
        match outcome {
            Ok(c) => {
                if let Some(u) = &c.usage {
                    span.set_attribute(KeyValue::new(semconv::GEN_AI_USAGE_INPUT_TOKENS, u.prompt_tokens as i64));
                    span.set_attribute(KeyValue::new(semconv::GEN_AI_USAGE_OUTPUT_TOKENS, u.completion_tokens as i64));
                    if let Some(cached) = u.cached_tokens {
                        span.set_attribute(KeyValue::new(semconv::GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, cached as i64));
                    }
                    if let Some(cost) = u.cost_usd {
                        span.set_attribute(KeyValue::new("pirn.cost_usd", cost));
                    }
                }
                if let Some(f) = &c.finish_reason {
                    let reasons = opentelemetry::Array::String(vec![f.clone().into()]);
                    span.set_attribute(KeyValue::new(
                        semconv::GEN_AI_RESPONSE_FINISH_REASONS,
                        opentelemetry::Value::Array(reasons),
                    ));
                }
            }
            Err(e) => {
                span.set_attribute(KeyValue::new("error.type", e.kind()));
                span.set_status(Status::error(e.to_string()));
            }
        }
        span.end();
    }
}

/// A tool call's span (empty when tracing is off).
pub struct ToolSpan(Option<(Span, Instant)>);

impl ToolSpan {
    /// No span.
    pub fn none() -> ToolSpan {
        ToolSpan(None)
    }

    /// Ends the span: `outcome` is `ok`, `error` or `blocked` (a hook or
    /// the policy refused it).
    pub fn end(self, outcome: &'static str) {
        let Some((mut span, started)) = self.0 else { return };
        span.set_attribute(KeyValue::new("pirn.tool.outcome", outcome));
        span.set_attribute(KeyValue::new("pirn.tool.duration_ms", started.elapsed().as_millis() as i64));
        if outcome != "ok" {
            span.set_attribute(KeyValue::new("error.type", outcome));
            span.set_status(Status::error(outcome));
        }
        span.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_otlp_endpoint_turns_tracing_on() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned())
        };
        assert!(!configured(&env(&[])));
        assert!(configured(&env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")])));
        assert!(configured(&env(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c/v1/traces")])));
        assert!(!configured(&env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"), ("OTEL_SDK_DISABLED", "true")])));
        assert!(!configured(&env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"), ("OTEL_TRACES_EXPORTER", "none")])));
        let cx = parent(Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
        assert_eq!(cx.span().span_context().trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert!(!parent(Some("garbage")).span().span_context().is_valid());
    }
}
