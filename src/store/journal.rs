//! The journal of one live session: the single, ordered writer of its log.
//!
//! Owns: the order of a session's entries (the order they are handed in,
//! from the runner and from the transport's output writer), batching (every
//! entry queued while an append runs goes in the next one), entry ids (a
//! fresh `writer` UUID and a counter), retries of retryable store errors
//! (safe: appends are idempotent on the id), and durability points:
//! [`Journal::durable`] resolves once everything handed in before it is on
//! disk, which the writers await before a `result` leaves the process.
//!
//! Handing an entry in never blocks and never fails: a store that fails is
//! logged, and the session goes on (its output is never held back by it).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::entry::{Body, NewEntry, now_ms};
use super::{Store, StoreError};

/// Most entries in one append.
const BATCH: usize = 512;
/// Attempts of one append on retryable errors.
const ATTEMPTS: u32 = 5;

enum Cmd {
    Body(u64, Body),
    /// A line's object (`NewEntry::line_object`), built by the caller.
    Line(String),
    Durable(oneshot::Sender<()>),
    Close(oneshot::Sender<()>),
}

/// A handle on a session's journal (cheap to clone). See the module doc.
#[derive(Clone)]
pub struct Journal {
    tx: mpsc::UnboundedSender<Cmd>,
    session_id: Arc<str>,
    last_frame: u64,
    store: Store,
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
        tokio::spawn(run(store.clone(), session_id.clone(), epoch, rx));
        Journal { tx, session_id, last_frame, store }
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

    /// Hands in an entry.
    pub fn record(&self, body: Body) {
        let _ = self.tx.send(Cmd::Body(now_ms(), body));
    }

    /// Hands in an emitted line (`data`: its JSON as written, without the
    /// newline). The entry is built here, in one copy of `data`; its time is
    /// the time of the append that stores it.
    pub fn line(&self, frame: u64, send_id: Option<&str>, event: &str, data: &str) {
        let _ = self.tx.send(Cmd::Line(NewEntry::line_object(frame, send_id, event, data)));
    }

    /// Resolves once everything handed in before this call is durable (or
    /// its append failed and was logged, or the journal is closed).
    pub fn durable(&self) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        let _ = self.tx.send(Cmd::Durable(tx));
        rx
    }

    /// Writes what is queued, gives the session up in the store and stops.
    /// Entries handed in later are dropped.
    pub async fn close(&self) {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Cmd::Close(tx)).is_ok() {
            let _ = rx.await;
        }
    }
}

async fn run(store: Store, session_id: Arc<str>, epoch: u64, mut rx: mpsc::UnboundedReceiver<Cmd>) {
    let writer = uuid::Uuid::new_v4().simple().to_string();
    let mut n: u64 = 0;
    let mut fenced = false;
    let mut closed = None;
    while closed.is_none() {
        let Some(first) = rx.recv().await else { break };
        let mut cmds = vec![first];
        while cmds.len() < BATCH {
            match rx.try_recv() {
                Ok(c) => cmds.push(c),
                Err(_) => break,
            }
        }
        let mut entries = Vec::new();
        let mut waiters = Vec::new();
        // Consecutive lines become one entry.
        let mut lines: Vec<String> = Vec::new();
        let now = now_ms();
        for cmd in cmds {
            if !matches!(cmd, Cmd::Line(_)) && !lines.is_empty() {
                entries.push(NewEntry::lines(n, now, &lines));
                n += 1;
                lines.clear();
            }
            match cmd {
                Cmd::Line(object) => lines.push(object),
                Cmd::Body(at_ms, body) => {
                    if let Some(e) = NewEntry::new(n, at_ms, &body) {
                        entries.push(e);
                        n += 1;
                    }
                }
                Cmd::Durable(w) => waiters.push(w),
                Cmd::Close(w) => closed = Some(w),
            }
        }
        if !lines.is_empty() {
            entries.push(NewEntry::lines(n, now, &lines));
            n += 1;
        }
        let durable = !waiters.is_empty() || closed.is_some();
        if !fenced && (!entries.is_empty() || durable) {
            match append(&store, &session_id, epoch, &writer, entries.into(), durable).await {
                Ok(()) => {}
                Err(StoreError::Superseded(_)) => {
                    tracing::warn!(session_id = %session_id, "another process resumed this session; no longer logging it");
                    fenced = true;
                }
                Err(e) => tracing::error!(session_id = %session_id, "session log: {e}"),
            }
        }
        for w in waiters {
            let _ = w.send(());
        }
    }
    if !fenced {
        store.release(&session_id, epoch).await;
    }
    if let Some(w) = closed {
        let _ = w.send(());
    }
}

async fn append(
    store: &Store,
    session_id: &str,
    epoch: u64,
    writer: &str,
    entries: Arc<[NewEntry]>,
    durable: bool,
) -> Result<(), StoreError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match store.append(session_id, Some(epoch), writer, entries.clone(), durable).await {
            Ok(_) => return Ok(()),
            Err(e) if e.is_retryable() && attempt < ATTEMPTS => {
                tracing::warn!(session_id, attempt, "session log append failed, retrying: {e}");
                tokio::time::sleep(Duration::from_millis(50 << attempt)).await;
            }
            Err(e) => return Err(e),
        }
    }
}
