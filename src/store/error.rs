//! Why a store call fails, and which failures a caller may retry.
//!
//! Owns: [`StoreError`].

use std::path::PathBuf;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file of the log could not be read or written.
    #[error("{op} {path}: {source}")]
    Io { op: &'static str, path: PathBuf, source: std::io::Error },
    /// A line in the middle of a log is not an entry (the torn last line
    /// after a crash is dropped instead).
    #[error("{path}: line {line} is not a session log entry: {message}")]
    Corrupt { path: PathBuf, line: usize, message: String },
    /// The database refused or failed; `code` is its SQLSTATE when it
    /// sent one (none for a lost connection or a pool error).
    #[error("postgres{}: {message}", code.as_deref().map(|c| format!(" ({c})")).unwrap_or_default())]
    Postgres { code: Option<String>, message: String },
    /// A store call did not finish within the store's timeout
    /// (`PIRN_STORE_TIMEOUT_MS`, default 10 s).
    #[error("{op} timed out after {} ms", after.as_millis())]
    Timeout { op: &'static str, after: std::time::Duration },
    /// The store failed moments ago and is not tried again yet.
    #[error("the store is failing: {0}")]
    Unavailable(String),
    /// `PIRN_STORE` or `PIRN_TENANT` cannot be used.
    #[error("{0}")]
    Config(String),
    /// No session with this id is stored (for this tenant).
    #[error("no stored session {0:?}")]
    NotFound(String),
    /// Another process holds the session open.
    #[error("session {0:?} is open in another process")]
    Busy(String),
    /// Another host holds a live lease on the session (a `pirn serve`
    /// group): it runs there, reached at `url`.
    #[error("session {session:?} runs on host {owner:?} (its lease is live)")]
    Owned { session: String, owner: String, url: Option<String> },
    /// Another process resumed the session; this one may no longer write it.
    #[error("session {0:?} was taken over by another process")]
    Superseded(String),
    /// A session id that cannot name a log (path separators, empty).
    #[error("invalid session id {0:?}")]
    InvalidId(String),
}

impl StoreError {
    /// Whether trying the same operation again may succeed; appends are
    /// idempotent, so a retried append is safe. Postgres errors follow the
    /// SQLSTATE class: connection exceptions (08), serialization failures
    /// and deadlocks (40001, 40P01), shutdowns (57P01–57P03), insufficient
    /// resources (53) and errors without a code (a lost connection) are
    /// retried; constraint violations (23), syntax and access errors (42)
    /// and the rest are not.
    pub fn is_retryable(&self) -> bool {
        match self {
            StoreError::Io { source, .. } => matches!(
                source.kind(),
                std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
            StoreError::Postgres { code: None, .. } => true,
            StoreError::Postgres { code: Some(c), .. } => {
                c.starts_with("08")
                    || c.starts_with("53")
                    || matches!(c.as_str(), "40001" | "40P01" | "57P01" | "57P02" | "57P03")
            }
            StoreError::Timeout { .. } | StoreError::Unavailable(_) => true,
            _ => false,
        }
    }
}
