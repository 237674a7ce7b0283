//! The task behind a session's [`Journal`](super::journal::Journal): it
//! takes what the journal's handles hand in, in order, batches it (every
//! entry queued while an append runs goes in the next one), numbers the
//! entries (a fresh `writer` UUID and a counter), retries retryable store
//! errors (appends are idempotent on the id), keeps what a failing store
//! did not take (bounded by [`MAX_PENDING_BYTES`]; a `gap` entry counts
//! what was dropped) and answers durability points. The journal's module
//! doc says why; this is the how.

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
/// Whether the entries before a durability point are durable: `Err` names
/// the store's failure.
pub type Durability = Result<(), Arc<str>>;

pub(super) enum Cmd {
    /// Boxed: the channel's first block holds 32 commands from the start.
    Body(u64, Box<Body>),
    /// A line's object (`NewEntry::line_object`), built by the caller.
    Line(String),
    Durable(oneshot::Sender<Durability>),
    Close(oneshot::Sender<()>),
}

/// What the writers and the journal task share.
#[derive(Debug, Default)]
pub(super) struct Gauge {
    /// Bytes of lines handed in and not yet taken by the task.
    pub(super) queued: AtomicUsize,
    /// Signalled when the task takes a batch.
    pub(super) taken: Notify,
    /// The store's last failure while it fails (`None`: healthy).
    failure: Mutex<Option<Arc<str>>>,
}

impl Gauge {
    pub(super) fn failure(&self) -> Option<Arc<str>> {
        self.failure.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set_failure(&self, f: Option<Arc<str>>) {
        *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = f;
        self.taken.notify_waiters();
    }

    pub(super) fn full(&self) -> bool {
        self.queued.load(Ordering::Relaxed) >= MAX_QUEUED_BYTES && self.failure().is_none()
    }
}

/// The journal's task (see the module doc).
pub(super) struct Task {
    pub(super) store: Store,
    pub(super) session_id: Arc<str>,
    pub(super) epoch: u64,
    pub(super) gauge: Arc<Gauge>,
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
    pub(super) async fn run(self, mut rx: mpsc::UnboundedReceiver<Cmd>) {
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
