//! The [`Store`] contract (see the module doc of [`super`]) and the choice of
//! back end from the environment (`PIRN_STORE`, `PIRN_HOME`, `PIRN_TENANT`).
//!
//! Owns: [`Store`], [`home`] and the session-id rule ([`check_id`]).

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::broadcast;

use super::entry::{NewEntry, Stored};
use super::error::StoreError;
use super::info::{Appended, SessionInfo};
use super::{file, postgres};

/// A session store (cheap to clone). See the module doc.
#[derive(Clone)]
pub enum Store {
    File(Arc<file::FileStore>),
    Postgres(Arc<postgres::PgStore>),
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Store::File(s) => write!(f, "Store::File({})", s.root().display()),
            Store::Postgres(s) => write!(f, "Store::Postgres(tenant {})", s.tenant()),
        }
    }
}

/// Where the file store lives: `PIRN_HOME`, else `HEDDLE_HOME`, else `~/.pirn`.
pub fn home(get: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    let set = |k: &str| get(k).filter(|v| !v.is_empty());
    set("PIRN_HOME")
        .or_else(|| set("HEDDLE_HOME"))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(set("HOME").unwrap_or_else(|| ".".into())).join(".pirn"))
}

/// The longest session id a store accepts.
pub const MAX_ID_LEN: usize = 128;

/// Checks that `id` can name a log: 1..=128 of `[A-Za-z0-9._-]`, not
/// starting with a dot.
pub fn check_id(id: &str) -> Result<(), StoreError> {
    let ok = !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && !id.starts_with('.')
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok { Ok(()) } else { Err(StoreError::InvalidId(id.to_owned())) }
}

impl Store {
    /// The Postgres store, when this is one (a `pirn serve` group needs it).
    pub fn postgres(&self) -> Option<&Arc<postgres::PgStore>> {
        match self {
            Store::Postgres(s) => Some(s),
            Store::File(_) => None,
        }
    }

    /// The store the environment asks for: `None` when `PIRN_PERSIST=0`;
    /// Postgres when `PIRN_STORE` is a `postgres://` or `postgresql://`
    /// URL; else the file store under [`home`]. `PIRN_TENANT` names the
    /// tenant (default `default`).
    ///
    /// Errors: an unknown `PIRN_STORE` scheme, a bad tenant, a database
    /// that cannot be reached or set up.
    pub async fn from_env(get: &dyn Fn(&str) -> Option<String>) -> Result<Option<Store>, StoreError> {
        if get("PIRN_PERSIST").is_some_and(|v| matches!(v.as_str(), "0" | "false" | "no" | "off")) {
            return Ok(None);
        }
        let tenant = get("PIRN_TENANT").filter(|t| !t.is_empty()).unwrap_or_else(|| "default".to_owned());
        check_id(&tenant)?;
        match get("PIRN_STORE").filter(|s| !s.is_empty()) {
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                let timeout = get("PIRN_STORE_TIMEOUT_MS")
                    .and_then(|v| v.parse().ok())
                    .map_or(postgres::DEFAULT_TIMEOUT, std::time::Duration::from_millis);
                Ok(Some(Store::Postgres(Arc::new(postgres::PgStore::connect(&url, &tenant, timeout).await?))))
            }
            Some(path) if path.starts_with("file:") || path.starts_with('/') => {
                let root = PathBuf::from(path.trim_start_matches("file:"));
                Ok(Some(Store::File(Arc::new(file::FileStore::new(root, &tenant)))))
            }
            Some(other) => Err(StoreError::Config(format!(
                "PIRN_STORE={other:?}: expected postgres://…, file:/dir or an absolute directory"
            ))),
            None => Ok(Some(Store::File(Arc::new(file::FileStore::new(home(get).join("sessions"), &tenant))))),
        }
    }

    /// Makes this process the session's one writer. Returns the fencing
    /// epoch its appends carry. File store: an exclusive lock on the file
    /// (`Busy` when another process holds it); Postgres: the epoch is
    /// raised, so a process that held it before can no longer append
    /// (`Owned` while another host holds a live lease on it: see
    /// [`postgres::lease`]).
    pub async fn claim(&self, session_id: &str) -> Result<u64, StoreError> {
        check_id(session_id)?;
        match self {
            // A new session's log is an empty file: created and locked
            // inline (no blocking-pool hop before `init_ok`).
            Store::File(s) if s.is_new(session_id) => s.claim(session_id),
            Store::File(s) => {
                let s = s.clone();
                let id = session_id.to_owned();
                blocking(move || s.claim(&id)).await
            }
            Store::Postgres(s) => s.claim(session_id).await,
        }
    }

    /// Gives the session up (the lock, or the claim if still ours).
    pub async fn release(&self, session_id: &str, epoch: u64) {
        match self {
            Store::File(s) => s.release(session_id),
            Store::Postgres(s) => s.release(session_id, epoch).await,
        }
    }

    /// Appends `entries` of `writer` in order; `epoch` (from [`Store::claim`])
    /// fences a writer that was superseded. Ids already stored are skipped.
    /// `durable`: the entries reach the disk before this returns (the file
    /// store's `fdatasync`; Postgres commits every append). Returns the
    /// last `seq` of the session.
    pub async fn append(
        &self,
        session_id: &str,
        epoch: Option<u64>,
        writer: &str,
        entries: Arc<[NewEntry]>,
        durable: bool,
    ) -> Result<u64, StoreError> {
        check_id(session_id)?;
        match self {
            Store::File(s) => {
                let (s, id, w) = (s.clone(), session_id.to_owned(), writer.to_owned());
                blocking(move || s.append(&id, &w, &entries, durable)).await
            }
            Store::Postgres(s) => s.append(session_id, epoch, writer, &entries).await,
        }
    }

    /// The session's entries with `seq > after`, in order.
    /// Errors: [`StoreError::NotFound`] when the session is not stored.
    pub async fn load(&self, session_id: &str, after: u64) -> Result<Vec<Stored>, StoreError> {
        check_id(session_id)?;
        match self {
            Store::File(s) => {
                let (s, id) = (s.clone(), session_id.to_owned());
                blocking(move || s.load(&id, after)).await
            }
            Store::Postgres(s) => s.load(session_id, after).await,
        }
    }

    /// The tenant's stored sessions, most recently active first.
    pub async fn list(&self) -> Result<Vec<SessionInfo>, StoreError> {
        match self {
            Store::File(s) => {
                let s = s.clone();
                blocking(move || s.list()).await
            }
            Store::Postgres(s) => s.list().await,
        }
    }

    /// Deletes a stored session; `false` when there was none. A session
    /// open in a process cannot be deleted (`Busy`).
    pub async fn delete(&self, session_id: &str) -> Result<bool, StoreError> {
        check_id(session_id)?;
        match self {
            Store::File(s) => {
                let (s, id) = (s.clone(), session_id.to_owned());
                blocking(move || s.delete(&id)).await
            }
            Store::Postgres(s) => s.delete(session_id).await,
        }
    }

    /// New entries as they are stored: in this process (file store), or by
    /// any host on the database (Postgres, through LISTEN/NOTIFY).
    pub async fn watch(&self) -> broadcast::Receiver<Appended> {
        match self {
            Store::File(s) => s.watch(),
            Store::Postgres(s) => s.watch().await,
        }
    }
}

/// Runs a file-store call on the blocking pool.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| {
        Err(StoreError::Io { op: "run", path: PathBuf::new(), source: std::io::Error::other(e.to_string()) })
    })
}
