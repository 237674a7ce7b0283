//! The journal of one live session: the single, ordered writer of its log.
//!
//! Owns: the order of a session's entries (the order they are handed in,
//! from the runner and from the transport's output writer), batching (every
//! entry queued while an append runs goes in the next one), entry ids (a
//! fresh `writer` UUID and a counter), retries of retryable store errors
//! (safe: appends are idempotent on the id), and durability points:
//! [`Journal::durable`] resolves once everything handed in before it is on
//! disk — or with the store's error when it is not, so that no result
//! claims a durability it does not have (the rule of SQLite and
//! PostgreSQL: a commit is acknowledged only once durable).
//!
//! When the store fails (disk full, I/O error, a database down or stalled
//! past its timeout) the session goes on in memory: the journal keeps what
//! it could not write (up to [`MAX_PENDING_BYTES`](super::writer::MAX_PENDING_BYTES)) and tries again with
//! the next batch, at most once a second; what is written when the store
//! comes back is in the original order. What did not fit is dropped, oldest
//! first, and a `gap` entry says how many entries are missing, where they
//! were. Never a silent gap.
//!
//! Memory is bounded: lines handed in but not yet taken by the journal
//! task count against [`MAX_QUEUED_BYTES`](super::writer::MAX_QUEUED_BYTES); a writer awaits
//! [`Journal::room`] before handing in more, which holds the send that
//! produces them back while a working store catches up (not while it is
//! failing: then the session must not stall).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::backend::Store;
use super::entry::{Body, NewEntry, now_ms};
use super::writer::{Cmd, Durability, Gauge, Task};

/// Longest [`Journal::close`] waits for what is queued to be written.
pub const CLOSE_TIMEOUT: Duration = Duration::from_secs(3);

/// A handle on a session's journal (cheap to clone). See the module doc.
#[derive(Clone)]
pub struct Journal {
    tx: mpsc::UnboundedSender<Cmd>,
    session_id: Arc<str>,
    last_frame: u64,
    store: Store,
    gauge: Arc<Gauge>,
    /// The session's client is told of store failures (0.3.0).
    reports: bool,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Journal({})", self.session_id)
    }
}

impl Journal {
    /// Starts the journal of `session_id`, claimed with `epoch`; the log's
    /// last frame so far is `last_frame` (0 for a new session).
    pub fn start(store: Store, session_id: &str, epoch: u64, last_frame: u64) -> Journal {
        let (tx, rx) = mpsc::unbounded_channel();
        let session_id: Arc<str> = Arc::from(session_id);
        let gauge = Arc::new(Gauge::default());
        let task = Task { store: store.clone(), session_id: session_id.clone(), epoch, gauge: gauge.clone() };
        tokio::spawn(task.run(rx));
        Journal { tx, session_id, last_frame, store, gauge, reports: false }
    }

    /// The session's client is told when the log fails it (`store_error`,
    /// `result.durable: false`: protocol 0.3.0).
    pub fn reporting(mut self, on: bool) -> Journal {
        self.reports = on;
        self
    }

    /// See [`Journal::reporting`].
    pub fn reports(&self) -> bool {
        self.reports
    }

    /// The session this journal writes.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The store it writes to.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The highest frame number stored when the journal started: a resumed
    /// session's writers number on from here.
    pub fn last_frame(&self) -> u64 {
        self.last_frame
    }

    /// The store's failure while it fails (`status_ok.store` is then
    /// `"degraded"`); `None` while it works.
    pub fn failure(&self) -> Option<Arc<str>> {
        self.gauge.failure()
    }

    /// Hands in an entry.
    pub fn record(&self, body: Body) {
        let _ = self.tx.send(Cmd::Body(now_ms(), Box::new(body)));
    }

    /// Hands in an emitted line (`data`: its JSON as written, without the
    /// newline). The entry is built here, in one copy of `data`; its time is
    /// the time of the append that stores it. Await [`Journal::room`]
    /// first.
    pub fn line(&self, frame: u64, send_id: Option<&str>, event: &str, data: &str) {
        let object = NewEntry::line_object(frame, send_id, event, data);
        self.gauge.queued.fetch_add(object.len(), Ordering::Relaxed);
        let _ = self.tx.send(Cmd::Line(object));
    }

    /// True while writers must await [`Journal::room`] before more lines.
    pub fn is_full(&self) -> bool {
        self.gauge.full()
    }

    /// Resolves once the journal may take more lines: at once unless
    /// [`MAX_QUEUED_BYTES`](super::writer::MAX_QUEUED_BYTES) wait for a working store.
    pub async fn room(&self) {
        while self.gauge.full() && !self.tx.is_closed() {
            let taken = self.gauge.taken.notified();
            tokio::pin!(taken);
            taken.as_mut().enable();
            if !self.gauge.full() {
                return;
            }
            // Bounded: a store that stalls fails its append after its timeout.
            let _ = tokio::time::timeout(Duration::from_millis(100), taken).await;
        }
    }

    /// As [`Journal::room`], from a thread outside the runtime.
    pub fn room_blocking(&self) {
        while self.gauge.full() && !self.tx.is_closed() {
            std::thread::sleep(Duration::from_micros(500));
        }
    }

    /// Resolves once everything handed in before this call is durable, or
    /// with the store's error when it is not (an error also when the
    /// journal is gone).
    pub fn durable(&self) -> oneshot::Receiver<Durability> {
        let (tx, rx) = oneshot::channel();
        let _ = self.tx.send(Cmd::Durable(tx));
        rx
    }

    /// Writes what is queued, gives the session up in the store and stops;
    /// waits at most [`CLOSE_TIMEOUT`], then says loudly what may be lost.
    /// Entries handed in later are dropped.
    pub async fn close(&self) {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Cmd::Close(tx)).is_ok() && tokio::time::timeout(CLOSE_TIMEOUT, rx).await.is_err() {
            tracing::error!(
                session_id = %self.session_id,
                "the session log did not finish writing within {CLOSE_TIMEOUT:?}; its last entries may be lost"
            );
        }
    }
}
