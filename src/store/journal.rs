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
//! it could not write (up to [`MAX_PENDING_BYTES`]) and tries again with
//! the next batch, at most once a second; what is written when the store
//! comes back is in the original order. What did not fit is dropped, oldest
//! first, and a `gap` entry says how many entries are missing, where they
//! were. Never a silent gap.
//!
//! Memory is bounded: lines handed in but not yet taken by the journal
//! task count against [`MAX_QUEUED_BYTES`]; a writer awaits
//! [`Journal::room`] before handing in more, which holds the send that
//! produces them back while a working store catches up (not while it is
//! failing: then the session must not stall).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, mpsc, oneshot};

use super::backend::Store;
use super::entry::{Body, NewEntry, now_ms};
use super::error::StoreError;

/// Most entries in one append.
const BATCH: usize = 512;
/// Attempts of one append on retryable errors while the store is healthy.
const ATTEMPTS: u32 = 4;
/// Bytes of lines handed in and not yet taken that hold writers back.
pub const MAX_QUEUED_BYTES: usize = 8 << 20;
/// Bytes of failed entries kept for the next attempt.
pub const MAX_PENDING_BYTES: usize = 16 << 20;
/// Shortest time between two attempts while the store fails.
const FAILED_RETRY: Duration = Duration::from_secs(1);
/// Longest [`Journal::close`] waits for what is queued to be written.
pub const CLOSE_TIMEOUT: Duration = Duration::from_secs(3);

/// Whether the entries before a durability point are durable: `Err` names
/// the store's failure.
pub type Durability = Result<(), Arc<str>>;

enum Cmd {
    /// Boxed: the channel's first block holds 32 commands from the start.
    Body(u64, Box<Body>),
    /// A line's object (`NewEntry::line_object`), built by the caller.
    Line(String),
    Durable(oneshot::Sender<Durability>),
    Close(oneshot::Sender<()>),
}

/// What the writers and the journal task share.
#[derive(Debug, Default)]
struct Gauge {
    /// Bytes of lines handed in and not yet taken by the task.
    queued: AtomicUsize,
    /// Signalled when the task takes a batch.
    taken: Notify,
    /// The store's last failure while it fails (`None`: healthy).
    failure: Mutex<Option<Arc<str>>>,
}

impl Gauge {
    fn failure(&self) -> Option<Arc<str>> {
        self.failure.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set_failure(&self, f: Option<Arc<str>>) {
        *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = f;
        self.taken.notify_waiters();
    }

    fn full(&self) -> bool {
        self.queued.load(Ordering::Relaxed) >= MAX_QUEUED_BYTES && self.failure().is_none()
    }
}

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
    /// [`MAX_QUEUED_BYTES`] wait for a working store.
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

/// The journal's task. See the module doc.
struct Task {
    store: Store,
    session_id: Arc<str>,
    epoch: u64,
    gauge: Arc<Gauge>,
}

/// Entries that failed to append, kept for the next attempt.
#[derive(Default)]
struct Pending {
    entries: Vec<NewEntry>,
    /// Entries dropped (oldest first) to stay under the bound.
    dropped: u64,
    /// When the last attempt failed.
    failed_at: Option<Instant>,
}

impl Task {
    async fn run(self, mut rx: mpsc::UnboundedReceiver<Cmd>) {
        let writer = uuid::Uuid::new_v4().simple().to_string();
        let mut n: u64 = 0;
        let mut fenced = false;
        let mut closed = None;
        let mut pending = Pending::default();
        while closed.is_none() {
            let Some(first) = rx.recv().await else { break };
            let mut cmds = vec![first];
            while cmds.len() < BATCH {
                match rx.try_recv() {
                    Ok(c) => cmds.push(c),
                    Err(_) => break,
                }
            }
            let (entries, waiters, close, taken) = batch(cmds, &mut n);
            closed = close;
            self.gauge.queued.fetch_sub(taken, Ordering::Relaxed);
            self.gauge.taken.notify_waiters();
            let durable = !waiters.is_empty() || closed.is_some();
            let outcome = if fenced || (entries.is_empty() && pending.entries.is_empty() && !durable) {
                Ok(())
            } else {
                // Boxed: an idle journal's task does not carry an append's state.
                Box::pin(self.write(&writer, &mut n, &mut pending, entries, durable, closed.is_some())).await
            };
            let outcome = match outcome {
                Err(StoreError::Superseded(_)) => {
                    tracing::warn!(session_id = %self.session_id, "another process resumed this session; no longer logging it");
                    fenced = true;
                    Err(Arc::from("another process resumed this session"))
                }
                Err(e) => Err(Arc::from(e.to_string())),
                Ok(()) => Ok(()),
            };
            for w in waiters {
                let _ = w.send(outcome.clone());
            }
        }
        if !fenced {
            if !pending.entries.is_empty() || pending.dropped > 0 {
                tracing::error!(
                    session_id = %self.session_id,
                    lost = pending.entries.len() as u64 + pending.dropped,
                    "the session log closes with entries the store never took"
                );
            }
            Box::pin(self.store.release(&self.session_id, self.epoch)).await;
        }
        if let Some(w) = closed {
            let _ = w.send(());
        }
    }

    /// Appends what is pending, a gap entry if entries were dropped, and
    /// `entries`. On failure they all stay pending (bounded).
    async fn write(
        &self,
        writer: &str,
        n: &mut u64,
        pending: &mut Pending,
        entries: Vec<NewEntry>,
        durable: bool,
        closing: bool,
    ) -> Result<(), StoreError> {
        let failing = self.gauge.failure();
        let mut all = std::mem::take(&mut pending.entries);
        if pending.dropped > 0 {
            let cause = failing.as_deref().unwrap_or("the store failed").to_owned();
            let gap = Body::Gap { entries: pending.dropped, cause };
            all.extend(NewEntry::new(*n, now_ms(), &gap));
            *n += 1;
            pending.dropped = 0;
        }
        all.extend(entries);
        // While the store fails, try at most once a second (and once more
        // when closing); a healthy store gets retries with backoff.
        let wait_more = pending.failed_at.is_some_and(|t| t.elapsed() < FAILED_RETRY) && !closing;
        let result = match &failing {
            Some(cause) if wait_more => Err(StoreError::Unavailable(cause.to_string())),
            Some(_) => self.store.append(&self.session_id, Some(self.epoch), writer, all.clone().into(), durable).await,
            None => self.append(writer, all.clone().into(), durable).await,
        };
        match result {
            Ok(_) => {
                if failing.is_some() {
                    tracing::warn!(session_id = %self.session_id, "the session log is written again");
                    self.gauge.set_failure(None);
                }
                *pending = Pending::default();
                Ok(())
            }
            Err(e @ StoreError::Superseded(_)) => Err(e),
            Err(e) => {
                if failing.is_none() {
                    tracing::error!(session_id = %self.session_id, "session log: {e}; going on in memory");
                }
                if !wait_more {
                    pending.failed_at = Some(Instant::now());
                }
                // Keep the newest that fit the bound; count the rest as a gap.
                let mut bytes = 0;
                let keep = all
                    .iter()
                    .rev()
                    .take_while(|e| {
                        bytes += e.body.len();
                        bytes <= MAX_PENDING_BYTES
                    })
                    .count();
                let over = all.len() - keep;
                pending.dropped += over as u64;
                all.drain(..over);
                pending.entries = all;
                self.gauge.set_failure(Some(Arc::from(e.to_string())));
                Err(e)
            }
        }
    }

    async fn append(&self, writer: &str, entries: Arc<[NewEntry]>, durable: bool) -> Result<u64, StoreError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.store.append(&self.session_id, Some(self.epoch), writer, entries.clone(), durable).await {
                // A timeout has waited long enough: the store is failing.
                Err(e) if e.is_retryable() && !matches!(e, StoreError::Timeout { .. }) && attempt < ATTEMPTS => {
                    tracing::warn!(session_id = %self.session_id, attempt, "session log append failed, retrying: {e}");
                    tokio::time::sleep(Duration::from_millis(50 << attempt)).await;
                }
                other => return other,
            }
        }
    }
}

/// A batch of commands as entries (consecutive lines become one entry),
/// the durability waiters, a close, and the bytes of lines taken.
#[allow(clippy::type_complexity)]
fn batch(
    cmds: Vec<Cmd>,
    n: &mut u64,
) -> (Vec<NewEntry>, Vec<oneshot::Sender<Durability>>, Option<oneshot::Sender<()>>, usize) {
    let mut entries = Vec::new();
    let mut waiters = Vec::new();
    let mut closed = None;
    let mut taken = 0;
    let mut lines: Vec<String> = Vec::new();
    let now = now_ms();
    for cmd in cmds {
        if !matches!(cmd, Cmd::Line(_)) && !lines.is_empty() {
            entries.push(NewEntry::lines(*n, now, &lines));
            *n += 1;
            lines.clear();
        }
        match cmd {
            Cmd::Line(object) => {
                taken += object.len();
                lines.push(object);
            }
            Cmd::Body(at_ms, body) => {
                if let Some(e) = NewEntry::new(*n, at_ms, &body) {
                    entries.push(e);
                    *n += 1;
                }
            }
            Cmd::Durable(w) => waiters.push(w),
            Cmd::Close(w) => closed = Some(w),
        }
    }
    if !lines.is_empty() {
        entries.push(NewEntry::lines(*n, now, &lines));
        *n += 1;
    }
    (entries, waiters, closed, taken)
}
