//! The OpenAI-compatible chat-completions client: one streamed call at a time.
//!
//! Owns: the endpoint settings read from the environment, the process-wide
//! HTTP client (built on first use, so no TLS or connection pool exists before
//! a send needs one), the retry policy for 429/503, the per-chunk idle
//! timeout, SSE decoding and the accumulation of streamed text, tool-call
//! fragments (by `index`) and usage.
//!
//! Request bodies are async-openai's `CreateChatCompletionRequest`; the stream
//! chunks are decoded by the small borrowed structs below rather than
//! async-openai's response types, because "OpenAI-compatible" servers differ
//! in the fields they send (`object`, `created`, `model` are often missing)
//! and because a relay should not allocate five strings per token.
//!
//! Cancellation: dropping a [`ChatStream`] (or the future of [`Endpoint::open`])
//! drops the HTTP response and with it the connection.

use std::borrow::Cow;
use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::sse::{SseDecoder, SseError};
use crate::wire::Usage;

/// Default per-chunk idle timeout: a CPU model can think for minutes on a long
/// prompt before its first token.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(180);
/// Tries for a 429/503 answer before giving up (the first try included).
pub const MAX_TRIES: u32 = 3;
/// Longest `Retry-After` pirn honours; a longer one ends the send at once.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// Most bytes of text plus tool-call arguments one answer may stream; a
/// server that streams past it without stopping ends the call.
pub const MAX_ANSWER_BYTES: usize = 32 * 1024 * 1024;
/// Bytes of an error body kept for the message.
const ERROR_BODY_CAP: usize = 64 * 1024;

/// Where the model lives. Read once per session from the environment.
#[derive(Clone)]
pub struct Endpoint {
    /// `<base>/chat/completions`.
    pub chat_url: String,
    api_key: Option<String>,
    /// Longest wait for response headers and for each body chunk.
    pub idle_timeout: Duration,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.debug_struct("Endpoint")
            .field("chat_url", &self.chat_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("idle_timeout", &self.idle_timeout)
            .finish()
    }
}

impl Endpoint {
    /// Reads `PIRN_BASE_URL` / `OPENAI_BASE_URL` / `HEDDLE_BASE_URL` (first
    /// set wins) and `PIRN_API_KEY` / `OPENAI_API_KEY` / `OPENROUTER_API_KEY`.
    /// Without a base URL: OpenRouter when only `OPENROUTER_API_KEY` is set,
    /// OpenAI when `OPENAI_API_KEY` is, else a local llama-server at
    /// `http://127.0.0.1:8080/v1`. `PIRN_IDLE_TIMEOUT_MS` overrides the idle
    /// timeout; `idle_timeout_ms` from init overrides both.
    pub fn from_env(idle_timeout_ms: Option<u64>) -> Endpoint {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let key = var("PIRN_API_KEY").or_else(|| var("OPENAI_API_KEY")).or_else(|| var("OPENROUTER_API_KEY"));
        let base = var("PIRN_BASE_URL")
            .or_else(|| var("OPENAI_BASE_URL"))
            .or_else(|| var("HEDDLE_BASE_URL"))
            .unwrap_or_else(|| {
                if var("OPENAI_API_KEY").is_some() {
                    "https://api.openai.com/v1".to_owned()
                } else if var("OPENROUTER_API_KEY").is_some() {
                    "https://openrouter.ai/api/v1".to_owned()
                } else {
                    "http://127.0.0.1:8080/v1".to_owned()
                }
            });
        let idle_ms = idle_timeout_ms.or_else(|| var("PIRN_IDLE_TIMEOUT_MS").and_then(|v| v.parse().ok()));
        Endpoint {
            chat_url: format!("{}/chat/completions", base.trim_end_matches('/')),
            api_key: key,
            idle_timeout: idle_ms.map(Duration::from_millis).unwrap_or(DEFAULT_IDLE_TIMEOUT),
        }
    }

    /// Host part of the URL, reported as `provider` in error events.
    pub fn provider(&self) -> String {
        self.chat_url.split("://").nth(1).and_then(|rest| rest.split('/').next()).unwrap_or("unknown").to_owned()
    }

    /// POSTs `body` (a serialised chat-completions request with `stream:
    /// true`) and returns the open stream once the server answered 2xx.
    ///
    /// Retries 429 and 503 up to [`MAX_TRIES`] times in all, waiting
    /// `Retry-After` (seconds or an HTTP date; 1 s, then 2 s when absent).
    /// Nothing has been streamed at that point, so a retry cannot duplicate
    /// output. Errors: connection failures and timeouts (retryable), HTTP
    /// errors (retryable for 408/409/429/5xx), all as [`ModelError`].
    pub async fn open(&self, body: Bytes) -> Result<ChatStream, ModelError> {
        let http = http_client(!self.chat_url.starts_with("http://"))?;
        let mut tries = 0;
        loop {
            tries += 1;
            let mut req = http
                .post(&self.chat_url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .header(reqwest::header::ACCEPT, "text/event-stream")
                .body(body.clone());
            if let Some(key) = &self.api_key {
                req = req.bearer_auth(key);
            }
            let resp = match tokio::time::timeout(self.idle_timeout, req.send()).await {
                Err(_) => {
                    return Err(ModelError::transport(
                        "timeout",
                        format!("model server sent no response within {} ms", self.idle_timeout.as_millis()),
                    ));
                }
                Ok(Err(e)) => return Err(ModelError::transport("connect", describe_reqwest(&e))),
                Ok(Ok(resp)) => resp,
            };
            let status = resp.status();
            if status.is_success() {
                return Ok(ChatStream::new(resp, self.idle_timeout));
            }
            let retry_after = resp
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(parse_retry_after);
            let body = read_capped(resp, self.idle_timeout).await;
            let err = ModelError::http(status.as_u16(), &body);
            let retriable_status = status.as_u16() == 429 || status.as_u16() == 503;
            if !retriable_status || tries >= MAX_TRIES {
                return Err(err);
            }
            let wait = retry_after.unwrap_or(Duration::from_secs(u64::from(tries)));
            if wait > MAX_RETRY_AFTER {
                return Err(err);
            }
            tracing::debug!(status = status.as_u16(), wait_ms = wait.as_millis() as u64, "model server asked to retry");
            tokio::time::sleep(wait).await;
        }
    }
}

/// The process-wide HTTP clients, built on first use: one for `https://`
/// endpoints (TLS with the platform's roots) and one for `http://` ones,
/// which never loads a certificate store.
fn http_client(tls: bool) -> Result<&'static reqwest::Client, ModelError> {
    static TLS: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    static PLAIN: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    let cell = if tls { &TLS } else { &PLAIN };
    cell.get_or_init(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(15))
            .tcp_nodelay(true)
            .pool_idle_timeout(Duration::from_secs(60));
        let builder = if tls { builder } else { builder.tls_certs_only(std::iter::empty()) };
        builder.build().map_err(|e| format!("cannot build the HTTP client: {e}"))
    })
    .as_ref()
    .map_err(|e| ModelError::transport("client", e.clone()))
}

/// Reads at most [`ERROR_BODY_CAP`] bytes of an error response, bounded in time.
async fn read_capped(mut resp: reqwest::Response, idle: Duration) -> String {
    let mut buf = Vec::new();
    while buf.len() < ERROR_BODY_CAP {
        match tokio::time::timeout(idle, resp.chunk()).await {
            Ok(Ok(Some(chunk))) => buf.extend_from_slice(&chunk[..chunk.len().min(ERROR_BODY_CAP - buf.len())]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// `Retry-After: <seconds>` or `Retry-After: <HTTP-date>`.
fn parse_retry_after(v: &str) -> Option<Duration> {
    let v = v.trim();
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let when = httpdate::parse_http_date(v).ok()?;
    Some(when.duration_since(std::time::SystemTime::now()).unwrap_or(Duration::ZERO))
}

/// reqwest's error with its source chain, which holds the useful part
/// ("connection refused").
fn describe_reqwest(e: &reqwest::Error) -> String {
    let mut msg = if e.is_connect() { "cannot connect to the model server".to_owned() } else { e.to_string() };
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        src = s.source();
    }
    msg
}

/// A failed model call. `retryable` follows the rule of the core issue:
/// connection failures, dropped streams and timeouts, 408/409/429/5xx are
/// retryable; 400/401/403/404/422 (and other 4xx) are not.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelError {
    /// `connect`, `timeout`, `http`, `stream`, `protocol` or `client`.
    pub kind: &'static str,
    pub message: String,
    pub retryable: bool,
    /// HTTP status when the server answered with one.
    pub status: Option<u16>,
}

impl ModelError {
    fn transport(kind: &'static str, message: String) -> Self {
        ModelError { kind, message, retryable: kind != "client", status: None }
    }

    fn http(status: u16, body: &str) -> Self {
        let retryable = matches!(status, 408 | 409 | 429) || status >= 500;
        // OpenAI-style bodies: {"error":{"message":"…"}}; else the raw text.
        let detail = serde_json::from_str::<Value>(body)
            .ok()
            .and_then(|v| {
                v.pointer("/error/message")
                    .or_else(|| v.get("error"))
                    .or_else(|| v.get("message"))
                    .and_then(|m| m.as_str().map(str::to_owned))
            })
            .unwrap_or_else(|| body.chars().take(500).collect::<String>());
        let reason = reqwest::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()).unwrap_or("");
        let message = if detail.trim().is_empty() {
            format!("model server answered HTTP {status} {reason}")
        } else {
            format!("model server answered HTTP {status} {reason}: {}", detail.trim())
        };
        ModelError { kind: "http", message, retryable, status: Some(status) }
    }

    fn stream(message: impl Into<String>) -> Self {
        ModelError { kind: "stream", message: message.into(), retryable: true, status: None }
    }

    /// The `details` object of the error event and envelope.
    pub fn details(&self) -> Value {
        json!({ "status": self.status, "kind": self.kind })
    }
}

/// One complete model answer, assembled from the stream.
#[derive(Debug, Default, Clone)]
pub struct Completion {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Option<Usage>,
    pub finish_reason: Option<String>,
}

/// A tool call requested by the model; `arguments` is the raw JSON text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// An open streamed answer. Pull text with [`ChatStream::next_text`], then
/// take the whole answer with [`ChatStream::finish`].
pub struct ChatStream {
    resp: reqwest::Response,
    sse: SseDecoder,
    idle: Duration,
    acc: Completion,
    /// `[DONE]` seen or the body ended after a finish_reason.
    done: bool,
    /// Set once any byte of the body arrived.
    pub streamed: bool,
}

impl ChatStream {
    fn new(resp: reqwest::Response, idle: Duration) -> Self {
        ChatStream { resp, sse: SseDecoder::new(), idle, acc: Completion::default(), done: false, streamed: false }
    }

    /// The next piece of text, `None` at the end of the answer.
    ///
    /// Errors: the body stalls longer than the idle timeout, the connection
    /// drops before `[DONE]`/a finish reason, a chunk is not JSON, or the
    /// server streams an `error` object.
    pub async fn next_text(&mut self) -> Result<Option<String>, ModelError> {
        loop {
            if self.done {
                return Ok(None);
            }
            match self.sse.next_event() {
                Ok(Some(data)) => {
                    if let Some(text) = apply_event(&mut self.acc, data, &mut self.done)? {
                        return Ok(Some(text));
                    }
                    continue;
                }
                Ok(None) => {}
                Err(SseError::TooLong(n)) => {
                    return Err(ModelError::stream(format!("model stream line exceeds {n} bytes")));
                }
            }
            match tokio::time::timeout(self.idle, self.resp.chunk()).await {
                Err(_) => {
                    return Err(ModelError::transport(
                        "timeout",
                        format!("model stream idle for {} ms", self.idle.as_millis()),
                    ));
                }
                Ok(Err(e)) => {
                    return Err(ModelError::stream(format!("model stream broke: {}", describe_reqwest(&e))));
                }
                Ok(Ok(Some(bytes))) => {
                    self.streamed = true;
                    self.sse.feed(&bytes);
                }
                Ok(Ok(None)) => {
                    // End of body: flush a last event without its blank line.
                    if let Ok(Some(data)) = self.sse.finish() {
                        let text = apply_event(&mut self.acc, data, &mut self.done)?;
                        self.done = true;
                        if text.is_some() {
                            return Ok(text);
                        }
                    }
                    if self.acc.finish_reason.is_some() || self.done {
                        self.done = true;
                        return Ok(None);
                    }
                    return Err(ModelError::stream("model stream ended before the answer was complete"));
                }
            }
        }
    }

    /// The assembled answer. Tool calls without an id get `call_<index>`.
    pub fn finish(self) -> Completion {
        let mut c = self.acc;
        for (i, call) in c.tool_calls.iter_mut().enumerate() {
            if call.id.is_empty() {
                call.id = format!("call_{i}");
            }
        }
        c.tool_calls.retain(|call| !call.name.is_empty() || !call.arguments.is_empty());
        c
    }
}

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    choices: Vec<ChoiceChunk<'a>>,
    #[serde(default)]
    usage: Option<UsageChunk>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct ChoiceChunk<'a> {
    #[serde(default)]
    index: u32,
    #[serde(default, borrow)]
    delta: Option<DeltaChunk<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct DeltaChunk<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<ToolCallChunk<'a>>>,
}

#[derive(Deserialize)]
struct ToolCallChunk<'a> {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    function: Option<FunctionChunk<'a>>,
}

#[derive(Deserialize)]
struct FunctionChunk<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct UsageChunk {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    total_tokens: u64,
}

/// Folds one SSE `data:` payload into `acc`; returns its text, if any.
fn apply_event(acc: &mut Completion, data: &[u8], done: &mut bool) -> Result<Option<String>, ModelError> {
    let trimmed = data.trim_ascii();
    if trimmed == b"[DONE]" {
        *done = true;
        return Ok(None);
    }
    if trimmed.is_empty() {
        return Ok(None);
    }
    let chunk: Chunk<'_> = serde_json::from_slice(trimmed).map_err(|e| {
        let shown: String = String::from_utf8_lossy(&trimmed[..trimmed.len().min(200)]).into_owned();
        ModelError {
            kind: "protocol",
            message: format!("model stream sent a chunk that is not valid JSON ({e}): {shown}"),
            retryable: true,
            status: None,
        }
    })?;
    if let Some(err) = chunk.error {
        let message = err.get("message").and_then(Value::as_str).map(str::to_owned).unwrap_or_else(|| err.to_string());
        let status = err.get("code").and_then(Value::as_u64).and_then(|c| u16::try_from(c).ok());
        let retryable = status.is_none_or(|s| matches!(s, 408 | 409 | 429) || s >= 500);
        return Err(ModelError {
            kind: "stream",
            message: format!("model server reported an error mid-stream: {message}"),
            retryable,
            status,
        });
    }
    if let Some(u) = chunk.usage {
        let total = if u.total_tokens == 0 { u.prompt_tokens + u.completion_tokens } else { u.total_tokens };
        acc.usage =
            Some(Usage { prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens, total_tokens: total });
    }
    let streamed = acc.text.len() + acc.tool_calls.iter().map(|c| c.arguments.len()).sum::<usize>();
    if streamed > MAX_ANSWER_BYTES {
        return Err(ModelError::stream(format!("the model's answer exceeds {MAX_ANSWER_BYTES} bytes")));
    }
    let mut text: Option<String> = None;
    for choice in chunk.choices {
        if choice.index != 0 {
            continue;
        }
        if let Some(reason) = choice.finish_reason {
            acc.finish_reason = Some(reason.into_owned());
        }
        let Some(delta) = choice.delta else { continue };
        if let Some(content) = delta.content.filter(|c| !c.is_empty()) {
            acc.text.push_str(&content);
            match &mut text {
                Some(t) => t.push_str(&content),
                None => text = Some(content.into_owned()),
            }
        }
        for (n, call) in delta.tool_calls.into_iter().flatten().enumerate() {
            let index = call.index.unwrap_or(n);
            if index > 1024 {
                return Err(ModelError {
                    kind: "protocol",
                    message: format!("tool call index {index} is out of range"),
                    retryable: false,
                    status: None,
                });
            }
            if acc.tool_calls.len() <= index {
                acc.tool_calls.resize_with(index + 1, ToolCall::default);
            }
            let slot = &mut acc.tool_calls[index];
            if let Some(id) = call.id.filter(|id| !id.is_empty()) {
                slot.id = id.into_owned();
            }
            if let Some(f) = call.function {
                if let Some(name) = f.name {
                    slot.name.push_str(&name);
                }
                if let Some(args) = f.arguments {
                    slot.arguments.push_str(&args);
                }
            }
        }
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_call_fragments_accumulate_by_index() {
        let mut acc = Completion::default();
        let mut done = false;
        let events = [
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"grep","arguments":"{\"pat"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"read_file","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"tern\":\"x\"}"}}]},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}"#,
            "[DONE]",
        ];
        for e in events {
            apply_event(&mut acc, e.as_bytes(), &mut done).unwrap();
        }
        assert!(done);
        assert_eq!(acc.tool_calls[0], ToolCall { id: "a".into(), name: "read_file".into(), arguments: "{}".into() });
        assert_eq!(acc.tool_calls[1].arguments, r#"{"pattern":"x"}"#);
        assert_eq!(acc.usage.unwrap().total_tokens, 7);
        assert_eq!(acc.finish_reason.as_deref(), Some("tool_calls"));
    }

    #[test]
    fn http_errors_are_classified() {
        assert!(ModelError::http(500, "").retryable);
        assert!(ModelError::http(429, "").retryable);
        assert!(!ModelError::http(401, r#"{"error":{"message":"bad key"}}"#).retryable);
        assert!(ModelError::http(401, r#"{"error":{"message":"bad key"}}"#).message.contains("bad key"));
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
    }
}
