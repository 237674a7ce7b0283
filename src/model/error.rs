//! Why a model call failed, as one typed error.
//!
//! Owns: the kinds of failure ([`ModelError`]), the one retry rule
//! ([`retryable_status`]: 408/409/429/5xx), which statuses are retried before
//! anything streamed ([`retried_status`]: 429, 503) and how long a
//! `Retry-After` asks to wait ([`parse_retry_after`]), the wire envelope
//! and `details` object a failure becomes, and how a transport error of
//! reqwest reads ([`describe_reqwest`]).

use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::wire::{ErrorCode, ErrorEnvelope};

/// Characters of an HTTP error body kept in `details.body`.
pub const BODY_IN_DETAILS: usize = 2000;

/// HTTP statuses after which the same request may succeed: 408, 409, 429
/// and every 5xx.
pub fn retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || status >= 500
}

/// HTTP statuses pirn retries itself before anything was streamed: 429, 503.
pub fn retried_status(status: u16) -> bool {
    status == 429 || status == 503
}

/// `Retry-After: <seconds>` or `Retry-After: <HTTP-date>` (RFC 9110 §10.2.3),
/// as a wait from `now`. Anything else (negative, NaN, infinite, garbage) is
/// `None`; a huge value saturates instead of overflowing, so the caller's cap
/// decides.
pub fn parse_retry_after(v: &str, now: SystemTime) -> Option<Duration> {
    let v = v.trim();
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX));
    }
    let when = httpdate::parse_http_date(v).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

/// A failed model call. Every variant carries the message shown to the host;
/// [`ModelError::retryable`] follows one rule: connection failures,
/// timeouts, dropped streams, malformed chunks and HTTP 408/409/429/5xx are
/// retryable; other 4xx, client setup failures and impossible tool-call
/// indexes are not.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// The server could not be reached (DNS, refused, TLS, reset before an answer).
    #[error("{0}")]
    Connect(String),
    /// No response headers, or no chunk, within the idle timeout.
    #[error("{0}")]
    Timeout(String),
    /// The server answered a non-2xx status. `message` is the server's own
    /// error message; `body` the start of the body as received.
    #[error("{message}")]
    Http { status: u16, message: String, body: String },
    /// The body broke off, ended early or grew past the answer cap.
    #[error("{0}")]
    Stream(String),
    /// The server sent an `error` object inside the stream (`code` as status when numeric).
    #[error("{message}")]
    Remote { status: Option<u16>, message: String },
    /// A chunk that is not valid JSON.
    #[error("{0}")]
    BadChunk(String),
    /// A tool-call fragment with an index past any sane answer.
    #[error("tool call index {0} is out of range")]
    BadToolIndex(usize),
    /// The HTTP client could not be built.
    #[error("{0}")]
    Client(String),
    /// Replay (`PIRN_REPLAY`): the request is not the one the cassette
    /// recorded next, or the cassette has no more calls. `details` says
    /// where they differ (see `cassette::replay::Mismatch`).
    #[error("{message}")]
    ReplayMismatch { message: String, details: Value },
    /// Not sent: the call would pass the send's cost budget whatever the
    /// model answered (`max_cost_usd`, see `agent::budget`). `details` is
    /// the budget's status.
    #[error("{message}")]
    BudgetSpent { message: String, details: Value },
}

impl ModelError {
    /// An HTTP error answer. The message is the server's own, as heddle
    /// reports it: the `message` of an OpenAI-style `{"error":{"message":…}}`
    /// body, else the body's first 500 characters, else `HTTP 500 Internal
    /// Server Error`. The first [`BODY_IN_DETAILS`] characters of the body go
    /// to `details.body`.
    pub fn http(status: u16, body: &str) -> Self {
        let detail = server_message(body).unwrap_or_else(|| body.chars().take(500).collect::<String>());
        let message = if detail.trim().is_empty() {
            let reason = reqwest::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()).unwrap_or("");
            format!("HTTP {status} {reason}").trim_end().to_owned()
        } else {
            detail.trim().to_owned()
        };
        ModelError::Http { status, message, body: body.chars().take(BODY_IN_DETAILS).collect() }
    }

    /// The error a cassette recorded as `End::Error { kind, message }`.
    pub fn recorded(kind: &str, message: &str) -> ModelError {
        let message = message.to_owned();
        match kind {
            "connect" | "connect_final" => ModelError::Connect(message),
            "timeout" => ModelError::Timeout(message),
            "protocol" => ModelError::BadChunk(message),
            "client" => ModelError::Client(message),
            _ => ModelError::Stream(message),
        }
    }

    /// How a cassette records this error as the end of an exchange.
    pub fn as_end(&self) -> crate::cassette::TapeEnd {
        crate::cassette::TapeEnd::Error { kind: self.kind().to_owned(), message: self.to_string() }
    }

    /// `connect`, `timeout`, `http`, `stream`, `protocol`, `client`,
    /// `replay` or `budget`: the `details.kind` of the error.
    pub fn kind(&self) -> &'static str {
        match self {
            ModelError::Connect(_) => "connect",
            ModelError::Timeout(_) => "timeout",
            ModelError::Http { .. } => "http",
            ModelError::Stream(_) | ModelError::Remote { .. } => "stream",
            ModelError::BadChunk(_) | ModelError::BadToolIndex(_) => "protocol",
            ModelError::Client(_) => "client",
            ModelError::ReplayMismatch { .. } => "replay",
            ModelError::BudgetSpent { .. } => "budget",
        }
    }

    /// The HTTP status, when the server gave one.
    pub fn status(&self) -> Option<u16> {
        match self {
            ModelError::Http { status, .. } => Some(*status),
            ModelError::Remote { status, .. } => *status,
            _ => None,
        }
    }

    /// Whether the same request may succeed later (see the type's doc).
    pub fn retryable(&self) -> bool {
        match self {
            ModelError::Connect(_) | ModelError::Timeout(_) | ModelError::Stream(_) | ModelError::BadChunk(_) => true,
            ModelError::Http { status, .. } => retryable_status(*status),
            ModelError::Remote { status, .. } => status.is_none_or(retryable_status),
            ModelError::BadToolIndex(_)
            | ModelError::Client(_)
            | ModelError::ReplayMismatch { .. }
            | ModelError::BudgetSpent { .. } => false,
        }
    }

    /// True when the server refused the request because it does not fit
    /// the model's context window: OpenAI's `context_length_exceeded`,
    /// llama.cpp's `exceed_context_size_error`, or a 400/413/500 whose
    /// message says the context (length) is exceeded.
    pub fn is_context_exceeded(&self) -> bool {
        let ModelError::Http { status, message, body } = self else { return false };
        if !matches!(status, 400 | 413 | 422 | 500) {
            return false;
        }
        let text = format!("{message} {body}").to_ascii_lowercase();
        [
            "context_length_exceeded",
            "exceed_context_size",
            "maximum context length",
            "context length",
            "context size",
            "context window",
            "too many tokens",
            "prompt is too long",
        ]
        .iter()
        .any(|p| text.contains(p))
    }

    /// True when the server could not read the model's own answer: its
    /// tool call arguments were not JSON (llama.cpp's `llama-server` answers
    /// 500 "Failed to parse tool call arguments as JSON", vLLM 400/500 "…
    /// tool call … parse …"). The model's fault, not the server's: asked
    /// again with a note, it answers differently.
    pub fn is_unreadable_answer(&self) -> bool {
        let (text, status) = match self {
            ModelError::Http { status, message, body } => (format!("{message} {body}"), Some(*status)),
            // llama.cpp reports it inside the stream when the answer ran to max_tokens in a call.
            ModelError::Remote { status, message } => (message.clone(), *status),
            _ => return false,
        };
        let text = text.to_ascii_lowercase();
        matches!(status, None | Some(400 | 500)) && text.contains("tool call") && text.contains("pars")
    }

    /// The context window the server named in a context error, in tokens:
    /// llama.cpp's `"n_ctx": N`, or "maximum context length is N" (OpenAI,
    /// vLLM).
    pub fn window_hint(&self) -> Option<u32> {
        let ModelError::Http { message, body, .. } = self else { return None };
        if let Some(n) = serde_json::from_str::<Value>(body)
            .ok()
            .and_then(|v| v.pointer("/error/n_ctx").or_else(|| v.get("n_ctx")).and_then(Value::as_u64))
        {
            return u32::try_from(n).ok();
        }
        let text = format!("{message} {body}");
        let lower = text.to_ascii_lowercase();
        let at = lower.find("maximum context length is").map(|i| i + "maximum context length is".len())?;
        let digits: String = text[at..].trim_start().chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    }

    /// The protocol error code: `replay_mismatch` for a replay mismatch,
    /// `budget_exceeded` for a call the cost budget did not allow, else
    /// `provider_error`.
    pub fn code(&self) -> ErrorCode {
        match self {
            ModelError::ReplayMismatch { .. } => ErrorCode::ReplayMismatch,
            ModelError::BudgetSpent { .. } => ErrorCode::BudgetExceeded,
            _ => ErrorCode::ProviderError,
        }
    }

    /// The `details` object of the error event and envelope:
    /// `{"status": <u16 or null>, "kind": <kind>}`, plus `"body"` (the start
    /// of the error body) for HTTP errors.
    pub fn details(&self) -> Value {
        match self {
            ModelError::Http { body, .. } => json!({ "status": self.status(), "kind": self.kind(), "body": body }),
            ModelError::ReplayMismatch { details, .. } | ModelError::BudgetSpent { details, .. } => details.clone(),
            _ => json!({ "status": self.status(), "kind": self.kind() }),
        }
    }
}

impl From<&ModelError> for ErrorEnvelope {
    fn from(e: &ModelError) -> Self {
        ErrorEnvelope { code: e.code(), message: e.to_string(), retryable: e.retryable(), details: Some(e.details()) }
    }
}

/// The message of an OpenAI-style error body (`{"error":{"message":…}}`,
/// `{"error":"…"}` or `{"message":"…"}`), if the body is one.
pub fn server_message(body: &str) -> Option<String> {
    let v = serde_json::from_str::<Value>(body).ok()?;
    v.pointer("/error/message")
        .or_else(|| v.get("error"))
        .or_else(|| v.get("message"))
        .and_then(|m| m.as_str().map(str::to_owned))
}

/// reqwest's error with its source chain, which holds the useful part
/// ("connection refused").
pub(super) fn describe_reqwest(e: &reqwest::Error) -> String {
    let head = if e.is_connect() { "cannot connect to the model server".to_owned() } else { e.to_string() };
    with_sources(head, std::error::Error::source(e))
}

/// `head`, then each error of the chain from `source` on, `: `-separated:
/// how pirn words a transport error (the useful part is often deepest).
pub fn with_sources(mut head: String, source: Option<&(dyn std::error::Error + 'static)>) -> String {
    let mut src = source;
    while let Some(s) = src {
        head.push_str(": ");
        head.push_str(&s.to_string());
        src = s.source();
    }
    head
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_errors_are_classified() {
        assert!(ModelError::http(500, "").retryable());
        assert!(ModelError::http(429, "").retryable());
        assert!(!ModelError::http(401, r#"{"error":{"message":"bad key"}}"#).retryable());
        assert!(ModelError::http(401, r#"{"error":{"message":"bad key"}}"#).to_string().contains("bad key"));
        assert!(ModelError::Remote { status: None, message: "x".into() }.retryable());
        assert!(!ModelError::Remote { status: Some(400), message: "x".into() }.retryable());
        let env = ErrorEnvelope::from(&ModelError::http(503, "busy"));
        assert_eq!(env.details, Some(json!({"status": 503, "kind": "http", "body": "busy"})));
        assert_eq!(env.message, "busy");
        let heddle = ModelError::http(500, r#"{"error":{"message":"Model error","type":"error","code":500}}"#);
        assert_eq!(heddle.to_string(), "Model error");
        assert_eq!(ModelError::http(502, "").to_string(), "HTTP 502 Bad Gateway");
        let llama = ModelError::http(
            400,
            r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9001,"n_ctx":8192}}"#,
        );
        assert!(llama.is_context_exceeded());
        assert_eq!(llama.window_hint(), Some(8192));
        let openai = ModelError::http(
            400,
            r#"{"error":{"message":"This model's maximum context length is 16385 tokens. However, your messages resulted in 17000 tokens.","code":"context_length_exceeded"}}"#,
        );
        assert!(openai.is_context_exceeded());
        assert_eq!(openai.window_hint(), Some(16385));
        assert!(!ModelError::http(400, r#"{"error":{"message":"bad request"}}"#).is_context_exceeded());
        assert!(!ModelError::http(429, "context length").is_context_exceeded());
    }

    #[test]
    fn retry_after_is_parsed_defensively() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(parse_retry_after("2", now), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("1e30", now), Some(Duration::MAX));
        for bad in ["-1", "NaN", "inf", "-inf", "soon", ""] {
            assert_eq!(parse_retry_after(bad, now), None, "{bad}");
        }
        assert_eq!(parse_retry_after("Thu, 01 Jan 1970 00:00:00 GMT", now), Some(Duration::ZERO));
        let far = parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", now).unwrap();
        assert!(far > Duration::from_secs(3600), "{far:?}");
    }
}
