//! What pirn reads from its process environment, as one snapshot.
//!
//! Owns: [`Environment`], the one place pirn reads its `PIRN_*` /
//! `HEDDLE_*` / `OPENAI_*` variables (a plain struct, so tests and
//! embedders can pass their own), and the heartbeat bounds it is read
//! within. A leaf: it names no other module of pirn but the session store's
//! handle ([`crate::store::Store`], itself a leaf), which the transport
//! opens and puts here.
//!
//! No I/O but reading the variables (in [`Environment::from_process`]).

use std::path::PathBuf;
use std::time::Duration;

/// Longest heartbeat interval honoured (a larger setting is lowered to it).
pub const MAX_HEARTBEAT: Duration = Duration::from_secs(24 * 3600);
/// Default heartbeat interval.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_millis(5000);
/// Shortest heartbeat interval honoured (a smaller setting is raised to it).
pub const MIN_HEARTBEAT: Duration = Duration::from_millis(10);

/// The environment variables pirn reads, as one snapshot. Empty values count
/// as unset.
#[derive(Clone, Default)]
pub struct Environment {
    /// `PIRN_BASE_URL`, else `OPENAI_BASE_URL`, else `HEDDLE_BASE_URL`.
    pub base_url: Option<String>,
    /// `PIRN_API_KEY`, else `OPENAI_API_KEY`, else `OPENROUTER_API_KEY`.
    pub api_key: Option<String>,
    /// The variable the key came from (names the provider in error events).
    pub api_key_var: Option<&'static str>,
    /// `OPENAI_API_KEY` is set (picks OpenAI's URL when no base URL is given).
    pub openai_key_set: bool,
    /// `OPENROUTER_API_KEY` is set (picks OpenRouter's URL likewise).
    pub openrouter_key_set: bool,
    /// `PIRN_IDLE_TIMEOUT_MS`, parsed.
    pub idle_timeout_ms: Option<u64>,
    /// `PIRN_MAX_RETRY_AFTER_MS`: the longest `Retry-After` waited for.
    pub max_retry_after_ms: Option<u64>,
    /// `PIRN_HEARTBEAT_INTERVAL`, else `HEDDLE_HEARTBEAT_INTERVAL`, in ms.
    pub heartbeat_ms: Option<u64>,
    /// `PIRN_APPROVAL_MODE`, unparsed (a bad value fails `init`).
    pub approval_mode: Option<String>,
    /// `PIRN_CONTEXT_WINDOW`: the model's context window in tokens.
    pub context_window: Option<u32>,
    /// `PIRN_RECORD`: the cassette file model exchanges are written to.
    pub record: Option<PathBuf>,
    /// `PIRN_REPLAY`: the cassette file model calls are served from.
    pub replay: Option<PathBuf>,
    /// `PIRN_REPLAY_TIMING`: `instant` (default) or `recorded`.
    pub replay_timing: Option<String>,
    /// Where sessions are logged (`PIRN_STORE`, `PIRN_HOME`, `PIRN_PERSIST`,
    /// `PIRN_TENANT`); opened by the transport ([`crate::store::Store::from_env`]),
    /// `None` when persistence is off.
    pub store: Option<crate::store::Store>,
    /// `PIRN_SANDBOX`, unparsed: the operator's default sandbox mode (a bad
    /// value fails `init`).
    pub sandbox: Option<String>,
    /// `PIRN_HOME`, else `HEDDLE_HOME`, else `~/.pirn`: the file store's
    /// directory, and where the user's own `AGENTS.md` lives.
    pub home: PathBuf,
    /// `PIRN_PRICES`, unparsed: the operator's price table
    /// (`prompt=3,cached=0.3,completion=15`, dollars per million tokens; a
    /// bad value fails `init`).
    pub prices: Option<String>,
    /// `PIRN_REQUEST_CHECK`, unparsed: the operator's default for
    /// `config.request_check` (`true`/`false`, `1`/`0`, `on`/`off`; a bad
    /// value fails `init`).
    pub request_check: Option<String>,
    /// `PIRN_WRITE_CHECK`, unparsed: the same for `config.write_check`.
    pub write_check: Option<String>,
    /// `PIRN_PROFILE`: the operator's profile for sessions whose init
    /// config names none (see `config::profile`).
    pub profile: Option<String>,
    /// `PIRN_MODEL_SETTINGS`: the user's model-settings file (else
    /// `$PIRN_HOME/model-settings.json` when it exists).
    pub model_settings: Option<PathBuf>,
    /// `PIRN_ENV_PASSTHROUGH`: names (comma- or space-separated) of
    /// variables every session's children get beyond the allowlist, with
    /// `config.env_passthrough`'s (how an SDK's `env` option reaches bash).
    pub env_passthrough: Vec<String>,
}

impl std::fmt::Debug for Environment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.debug_struct("Environment")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("idle_timeout_ms", &self.idle_timeout_ms)
            .field("heartbeat_ms", &self.heartbeat_ms)
            .field("approval_mode", &self.approval_mode)
            .finish_non_exhaustive()
    }
}

impl Environment {
    /// Reads the process environment.
    pub fn from_process() -> Environment {
        Environment::from_lookup(|k| std::env::var(k).ok())
    }

    /// Builds the snapshot from any lookup (`std::env::var` in production, a
    /// map in tests).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Environment {
        let var = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        let first = |keys: &[&str]| keys.iter().find_map(|k| var(k));
        Environment {
            base_url: first(&["PIRN_BASE_URL", "OPENAI_BASE_URL", "HEDDLE_BASE_URL"]),
            api_key: first(&["PIRN_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY"]),
            api_key_var: ["PIRN_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY"]
                .into_iter()
                .find(|k| var(k).is_some()),
            openai_key_set: var("OPENAI_API_KEY").is_some(),
            openrouter_key_set: var("OPENROUTER_API_KEY").is_some(),
            idle_timeout_ms: var("PIRN_IDLE_TIMEOUT_MS").and_then(|v| v.trim().parse().ok()),
            max_retry_after_ms: var("PIRN_MAX_RETRY_AFTER_MS").and_then(|v| v.trim().parse().ok()),
            heartbeat_ms: first(&["PIRN_HEARTBEAT_INTERVAL", "HEDDLE_HEARTBEAT_INTERVAL"])
                .and_then(|v| v.trim().parse().ok()),
            approval_mode: var("PIRN_APPROVAL_MODE"),
            context_window: var("PIRN_CONTEXT_WINDOW").and_then(|v| v.trim().parse().ok()).filter(|n| *n > 0),
            record: var("PIRN_RECORD").map(PathBuf::from),
            replay: var("PIRN_REPLAY").map(PathBuf::from),
            replay_timing: var("PIRN_REPLAY_TIMING"),
            store: None,
            sandbox: var("PIRN_SANDBOX"),
            home: crate::store::home(&|k| get(k)),
            prices: var("PIRN_PRICES"),
            request_check: var("PIRN_REQUEST_CHECK"),
            write_check: var("PIRN_WRITE_CHECK"),
            profile: var("PIRN_PROFILE"),
            model_settings: var("PIRN_MODEL_SETTINGS").map(PathBuf::from),
            env_passthrough: var("PIRN_ENV_PASSTHROUGH")
                .map(|v| v.split([',', ' ']).filter(|n| !n.is_empty()).map(str::to_owned).collect())
                .unwrap_or_default(),
        }
    }

    /// The snapshot of exactly `pairs` (tests and embedders).
    pub fn from_pairs(pairs: &[(&str, &str)]) -> Environment {
        Environment::from_lookup(|k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned()))
    }

    /// The heartbeat interval (default [`DEFAULT_HEARTBEAT`], between
    /// [`MIN_HEARTBEAT`] and [`MAX_HEARTBEAT`]).
    pub fn heartbeat(&self) -> Duration {
        self.heartbeat_ms
            .map(|ms| Duration::from_millis(ms).clamp(MIN_HEARTBEAT, MAX_HEARTBEAT))
            .unwrap_or(DEFAULT_HEARTBEAT)
    }
}

/// The model a session asks for when its client names none: `given`, else
/// `PIRN_MODEL` (empty counts as unset), else `"local"` (a name any
/// single-model local server takes). `pirn run`, `pirn exec`, `pirn acp`,
/// the Claude surface and `pirn serve`'s facades all resolve it here.
pub fn model_or_default(given: Option<String>) -> String {
    model_from(given, &|k| std::env::var(k).ok())
}

fn model_from(given: Option<String>, get: &dyn Fn(&str) -> Option<String>) -> String {
    given.or_else(|| get("PIRN_MODEL").filter(|m| !m.trim().is_empty())).unwrap_or_else(|| "local".to_owned())
}

/// `TRACEPARENT`: the W3C trace parent a parent process hands its children
/// (empty counts as unset); a send's spans join that trace.
pub fn traceparent() -> Option<String> {
    std::env::var("TRACEPARENT").ok().filter(|t| !t.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Environment {
        Environment::from_pairs(pairs)
    }

    #[test]
    fn precedence_empty_values_and_heartbeat_bounds() {
        let e = env(&[("PIRN_BASE_URL", " "), ("OPENAI_BASE_URL", "http://a/v1"), ("HEDDLE_HEARTBEAT_INTERVAL", "7")]);
        assert_eq!(e.base_url.as_deref(), Some("http://a/v1"));
        assert_eq!(e.heartbeat(), MIN_HEARTBEAT);
        assert_eq!(env(&[]).heartbeat(), DEFAULT_HEARTBEAT);
        let huge = env(&[("PIRN_HEARTBEAT_INTERVAL", "18446744073709551615")]);
        assert_eq!(huge.heartbeat(), MAX_HEARTBEAT);
        assert!(!format!("{:?}", env(&[("PIRN_API_KEY", "sk-secret")])).contains("sk-secret"));
    }

    #[test]
    fn the_model_is_the_clients_else_pirn_model_else_local() {
        let set = |v: &'static str| move |k: &str| (k == "PIRN_MODEL").then(|| v.to_owned());
        assert_eq!(model_from(Some("m".into()), &set("e")), "m");
        assert_eq!(model_from(None, &set("e")), "e");
        assert_eq!(model_from(None, &set(" ")), "local");
        assert_eq!(model_from(None, &|_| None), "local");
    }
}
