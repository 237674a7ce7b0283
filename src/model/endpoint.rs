//! Where the model lives and how one request reaches it.
//!
//! Owns: the endpoint built from the [`Environment`] snapshot, the
//! process-wide HTTP clients (built on first use, so no TLS or connection
//! pool exists before a send needs one), the retries of 429/503 before
//! anything streamed (how long to wait: `error::parse_retry_after`), and the [`Cassette`] of the
//! process: a recorded call is also written to the cassette, a replayed one
//! is served from it without touching the network (the same retry rules
//! apply to the recorded answers).

use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use serde_json::Value;

use super::error::{ModelError, describe_reqwest, parse_retry_after, retried_status};
use super::stream::ChatStream;
use crate::cassette::{Cassette, CassetteError, Method, Player, ReplayBody, TapeEnd, Timing};
use crate::environment::Environment;

/// Default per-chunk idle timeout: a CPU model can think for minutes on a long
/// prompt before its first token.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(180);
/// Tries for a 429/503 answer before giving up (the first try included).
pub const MAX_TRIES: u32 = 3;
/// Longest `Retry-After` pirn honours; a longer one ends the send at once.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// Bytes of an error body kept for the message.
const ERROR_BODY_CAP: usize = 64 * 1024;

/// Where the model lives. Built once per session.
#[derive(Clone)]
pub struct Endpoint {
    /// `<base>/chat/completions`.
    pub chat_url: String,
    /// The `provider` of error events (see [`Endpoint::provider`]).
    provider: String,
    api_key: Option<String>,
    /// Longest wait for response headers and for each body chunk.
    pub idle_timeout: Duration,
    /// Longest `Retry-After` honoured; a longer one ends the call at once.
    pub max_retry_after: Duration,
    /// Recording or replaying (`PIRN_RECORD`, `PIRN_REPLAY`).
    cassette: Option<Cassette>,
    /// The session's workspace, as written to (and forgiven by) the cassette.
    workspace: String,
}

/// A retry about to happen: try `attempt` (2 or 3) after `wait`, because the
/// server answered `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryNotice {
    pub attempt: u32,
    pub wait: Duration,
    pub status: u16,
}

/// Told of each retry before its wait (the agent emits a `retry` event).
pub trait OnRetry: Sync {
    fn retrying(&self, notice: RetryNotice) -> impl std::future::Future<Output = ()> + Send;
}

/// Nobody to tell.
impl OnRetry for () {
    async fn retrying(&self, _: RetryNotice) {}
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.debug_struct("Endpoint")
            .field("chat_url", &self.chat_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("idle_timeout", &self.idle_timeout)
            .field("max_retry_after", &self.max_retry_after)
            .finish()
    }
}

impl Endpoint {
    /// The endpoint `env` names. Without a base URL: OpenAI when
    /// `OPENAI_API_KEY` is set, OpenRouter when only `OPENROUTER_API_KEY` is,
    /// else a local llama-server at `http://127.0.0.1:8080/v1`. The idle
    /// timeout is `idle_timeout_ms` (from init), else `PIRN_IDLE_TIMEOUT_MS`,
    /// else [`DEFAULT_IDLE_TIMEOUT`]; the `Retry-After` cap is
    /// `PIRN_MAX_RETRY_AFTER_MS`, else [`MAX_RETRY_AFTER`].
    pub fn new(env: &Environment, idle_timeout_ms: Option<u64>) -> Endpoint {
        let base = env.base_url.clone().unwrap_or_else(|| {
            if env.openai_key_set {
                "https://api.openai.com/v1".to_owned()
            } else if env.openrouter_key_set {
                "https://openrouter.ai/api/v1".to_owned()
            } else {
                "http://127.0.0.1:8080/v1".to_owned()
            }
        });
        let idle_ms = idle_timeout_ms.or(env.idle_timeout_ms);
        let chat_url = format!("{}/chat/completions", base.trim_end_matches('/'));
        let host = chat_url.split("://").nth(1).and_then(|rest| rest.split('/').next()).unwrap_or("unknown").to_owned();
        let provider = if host.ends_with("openrouter.ai") || (env.api_key_var == Some("OPENROUTER_API_KEY")) {
            "openrouter".to_owned()
        } else if host.ends_with("api.openai.com") || (env.api_key_var == Some("OPENAI_API_KEY")) {
            "openai".to_owned()
        } else {
            host
        };
        Endpoint {
            chat_url,
            provider,
            api_key: env.api_key.clone(),
            idle_timeout: idle_ms.map(Duration::from_millis).unwrap_or(DEFAULT_IDLE_TIMEOUT),
            max_retry_after: env.max_retry_after_ms.map(Duration::from_millis).unwrap_or(MAX_RETRY_AFTER),
            cassette: None,
            workspace: String::new(),
        }
    }

    /// The endpoint of one session: [`Endpoint::new`] with the cassette
    /// `PIRN_RECORD` or `PIRN_REPLAY` names, if any, opened for the
    /// session's `workspace` (recorded in the cassette). Errors: the
    /// cassette cannot be opened or read ([`CassetteError`]).
    pub fn for_session(
        env: &Environment,
        idle_timeout_ms: Option<u64>,
        workspace: &std::path::Path,
    ) -> Result<Endpoint, CassetteError> {
        let cassette = Cassette::from_env(env)?;
        Ok(Endpoint::new(env, idle_timeout_ms).with_cassette(cassette, workspace))
    }

    /// This endpoint recording to or replaying from `cassette`, for a
    /// session in `workspace`.
    pub fn with_cassette(mut self, cassette: Option<Cassette>, workspace: &std::path::Path) -> Endpoint {
        self.cassette = cassette;
        self.workspace = workspace.display().to_string();
        self
    }

    /// True when calls are served from a cassette (nothing goes to the network).
    pub fn replaying(&self) -> bool {
        matches!(self.cassette, Some(Cassette::Replay(_)))
    }

    /// The base URL (`…/v1`), without a trailing slash.
    pub fn base_url(&self) -> &str {
        self.chat_url.strip_suffix("/chat/completions").unwrap_or(&self.chat_url)
    }

    /// `GET url` (with the key, if any) as JSON; `None` on any failure or
    /// after `timeout`. For the window probe.
    pub async fn get_json(&self, url: &str, timeout: Duration) -> Option<serde_json::Value> {
        let path = url_path(url);
        let mut tape = match &self.cassette {
            Some(Cassette::Replay(player)) => {
                let recorded = player.get(path)?;
                return recorded
                    .status
                    .filter(|s| (200..300).contains(s))
                    .and_then(|_| serde_json::from_str(recorded.body.as_deref()?).ok());
            }
            Some(Cassette::Record(r)) => Some(r.tape(Method::Get, path, &self.workspace, Value::Null)),
            None => None,
        };
        let http = http_client(!url.starts_with("http://")).ok()?;
        let mut req = http.get(url).header(reqwest::header::ACCEPT, "application/json");
        if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
        let fetch = async {
            let resp = req.send().await.ok()?;
            let status = resp.status();
            let body = resp.bytes().await.ok()?;
            if let Some(t) = &mut tape {
                t.answered(status.as_u16(), None);
                t.body(&String::from_utf8_lossy(&body));
                t.finish(TapeEnd::Done);
            }
            if !status.is_success() {
                return None;
            }
            serde_json::from_slice(&body).ok()
        };
        tokio::time::timeout(timeout, fetch).await.ok().flatten()
    }

    /// The `provider` reported in error events: `openrouter` or `openai`
    /// when the URL or the key's variable names one (as heddle reports it),
    /// else the URL's `host:port`.
    pub fn provider(&self) -> String {
        self.provider.clone()
    }

    /// POSTs `body` (a serialised chat-completions request with `stream:
    /// true`) and returns the open stream once the server answered 2xx.
    ///
    /// Retries 429 and 503 up to [`MAX_TRIES`] times in all, waiting
    /// `Retry-After` (seconds or an HTTP date; 1 s, then 2 s when absent;
    /// over `max_retry_after` the error is returned at once) and telling
    /// `on_retry` before each wait. A request that could not be sent at all
    /// (a stale pooled connection, a refused connect) is tried once more at
    /// once. Nothing has been streamed at that point,
    /// so a retry cannot duplicate output. Errors: see [`ModelError`].
    pub async fn open(&self, body: Bytes, on_retry: &impl OnRetry) -> Result<ChatStream, ModelError> {
        let recorder = match &self.cassette {
            Some(Cassette::Replay(player)) => return self.open_replayed(player, &body, on_retry).await,
            Some(Cassette::Record(r)) => Some(r),
            None => None,
        };
        let http = http_client(!self.chat_url.starts_with("http://"))?;
        let request = || serde_json::from_slice::<Value>(&body).unwrap_or(Value::Null);
        let mut tries = 0;
        loop {
            tries += 1;
            let mut tape = recorder.map(|r| r.tape(Method::Post, url_path(&self.chat_url), &self.workspace, request()));
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
                    let e = ModelError::Timeout(format!(
                        "model server sent no response within {} ms",
                        self.idle_timeout.as_millis()
                    ));
                    if let Some(t) = &mut tape {
                        t.finish(e.as_end());
                    }
                    return Err(e);
                }
                Ok(Err(e)) => {
                    // A pooled connection the server closed while idle fails
                    // the send at once: one immediate retry on a fresh one.
                    let retry = tries == 1 && !e.is_timeout();
                    let e = ModelError::Connect(describe_reqwest(&e));
                    if let Some(t) = &mut tape {
                        let kind = if retry { "connect" } else { "connect_final" };
                        t.finish(TapeEnd::Error { kind: kind.to_owned(), message: e.to_string() });
                    }
                    if retry {
                        tracing::debug!("model request failed to send ({e}); retrying once");
                        continue;
                    }
                    return Err(e);
                }
                Ok(Ok(resp)) => resp,
            };
            let status = resp.status();
            let retry_after =
                resp.headers().get(reqwest::header::RETRY_AFTER).and_then(|v| v.to_str().ok()).map(str::to_owned);
            if let Some(t) = &mut tape {
                t.answered(status.as_u16(), retry_after.as_deref());
            }
            if status.is_success() {
                return Ok(ChatStream::new(resp, self.idle_timeout, tape));
            }
            let body = read_capped(resp, self.idle_timeout).await;
            if let Some(t) = &mut tape {
                t.body(&body);
                t.finish(TapeEnd::Done);
            }
            let wait = self.retry_wait(status.as_u16(), retry_after.as_deref(), &body, tries)?;
            on_retry.retrying(RetryNotice { attempt: tries + 1, wait, status: status.as_u16() }).await;
            tokio::time::sleep(wait).await;
        }
    }

    /// [`Endpoint::open`] served from the cassette: each try takes the next
    /// recorded exchange (which must hold this request), and its recorded
    /// answer goes through the same rules as a live one.
    async fn open_replayed(
        &self,
        player: &Player,
        body: &[u8],
        on_retry: &impl OnRetry,
    ) -> Result<ChatStream, ModelError> {
        let request = serde_json::from_slice::<Value>(body).unwrap_or(Value::Null);
        let mut tries = 0;
        loop {
            tries += 1;
            let started = Instant::now();
            let recorded = player
                .next_post(&request, &self.workspace)
                .map_err(|m| ModelError::ReplayMismatch { message: m.message, details: m.details })?;
            player.pace(started, recorded.headers_ms).await;
            let Some(status) = recorded.status else {
                let e = match &recorded.end {
                    TapeEnd::Error { kind, message } => ModelError::recorded(kind, message),
                    _ => ModelError::Stream("the recorded request got no answer".to_owned()),
                };
                if tries == 1 && matches!(&recorded.end, TapeEnd::Error { kind, .. } if kind == "connect") {
                    continue;
                }
                return Err(e);
            };
            if (200..300).contains(&status) {
                return Ok(ChatStream::replayed(ReplayBody::new(recorded, started, player.timing), self.idle_timeout));
            }
            let body = recorded.body.as_deref().unwrap_or("");
            let wait = self.retry_wait(status, recorded.retry_after.as_deref(), body, tries)?;
            on_retry.retrying(RetryNotice { attempt: tries + 1, wait, status }).await;
            if player.timing == Timing::Recorded {
                tokio::time::sleep(wait).await;
            }
        }
    }

    /// After an error answer (`status`, its `Retry-After` and body) on try
    /// `tries`: how long to wait before the next try, or the error to end
    /// the call with (not retried, out of tries, or asked to wait too long).
    fn retry_wait(
        &self,
        status: u16,
        retry_after: Option<&str>,
        body: &str,
        tries: u32,
    ) -> Result<Duration, ModelError> {
        let err = ModelError::http(status, body);
        if !retried_status(status) || tries >= MAX_TRIES {
            return Err(err);
        }
        let wait = retry_after
            .and_then(|v| parse_retry_after(v, SystemTime::now()))
            .unwrap_or(Duration::from_secs(u64::from(tries)));
        if wait > self.max_retry_after {
            return Err(err);
        }
        tracing::debug!(status, wait_ms = wait.as_millis() as u64, "model server asked to retry");
        Ok(wait)
    }
}

/// The path of `url` (`http://host:port/v1/models` → `/v1/models`).
fn url_path(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.find('/').map_or("/", |i| &rest[i..])
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
    .map_err(|e| ModelError::Client(e.clone()))
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
