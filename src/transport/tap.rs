//! Where an output writer hands its lines to the session's journal.
//!
//! Owns: frame numbers (the session-wide number of each emitted line: the
//! SSE `id` over HTTP, and the `frame` of a logged line on stdio; a resumed
//! session numbers on after its log's last frame), and the durability rule:
//! a `result` line is handed in and the writer gets a [`Durable`] to wait
//! on before the line leaves the process. When the log could not store it,
//! a 0.3.0 result says so ([`Tap::not_durable`]: `durable: false` and a
//! `store_error` event); a 0.2.0 result is unchanged and the log (stderr)
//! records the loss.
//!
//! The journal is attached after the writer starts (a session opens after
//! its writer, at `init`), through a [`JournalSlot`].

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::oneshot;

use crate::store::Journal;
use crate::store::writer::Durability;
use crate::wire::{Event, EventMsg, OutgoingMessage};

/// Set once, when the session opens with a journal.
pub type JournalSlot = Arc<OnceLock<Journal>>;

/// Resolves with whether a `result` line and everything before it are
/// durable (`Err` names the store's failure).
pub type Durable = oneshot::Receiver<Durability>;

/// Longest a result waits for its log entry to be durable; then it is
/// written anyway, saying it is not (a result is never lost to a slow or
/// hung store).
pub const DURABLE_TIMEOUT: Duration = Duration::from_secs(10);

fn settled(r: Result<Durability, oneshot::error::RecvError>) -> Durability {
    r.unwrap_or_else(|_| Err(Arc::from("the session log is closed")))
}

fn timed_out() -> Durability {
    tracing::error!("the session log did not confirm a result within {DURABLE_TIMEOUT:?}; writing it anyway");
    Err(Arc::from(format!("the session log did not confirm the result within {} s", DURABLE_TIMEOUT.as_secs())))
}

/// Awaits `d` for at most [`DURABLE_TIMEOUT`].
pub async fn wait(d: Durable) -> Durability {
    match tokio::time::timeout(DURABLE_TIMEOUT, d).await {
        Ok(r) => settled(r),
        Err(_) => timed_out(),
    }
}

/// As [`wait`], from a thread outside the runtime.
pub fn wait_blocking(mut d: Durable) -> Durability {
    let deadline = std::time::Instant::now() + DURABLE_TIMEOUT;
    loop {
        match d.try_recv() {
            Err(oneshot::error::TryRecvError::Empty) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_micros(200));
            }
            Err(oneshot::error::TryRecvError::Empty) => return timed_out(),
            Ok(r) => return r,
            Err(oneshot::error::TryRecvError::Closed) => return Err(Arc::from("the session log is closed")),
        }
    }
}

/// A writer's side of the journal. See the module doc.
#[derive(Debug, Default)]
pub struct Tap {
    slot: JournalSlot,
    next: u64,
}

impl Tap {
    /// A tap reading `slot`.
    pub fn new(slot: JournalSlot) -> Tap {
        Tap { slot, next: 1 }
    }

    /// The next frame number, from 1 or after the attached journal's last.
    pub fn next_frame(&mut self) -> u64 {
        if let Some(j) = self.slot.get()
            && self.next <= j.last_frame()
        {
            self.next = j.last_frame() + 1;
        }
        self.next
    }

    /// Numbers `msg`, whose JSON (no newline) is `json`, and hands it to the
    /// journal. Returns its frame number and, for a `result` when a journal
    /// is attached, what to await before writing it.
    pub fn line(&mut self, msg: &OutgoingMessage, json: &[u8]) -> (u64, Option<Durable>) {
        let frame = self.next_frame();
        self.next += 1;
        let Some(journal) = self.slot.get() else { return (frame, None) };
        let send_id = match msg {
            OutgoingMessage::Event(e) => Some(&*e.send_id),
            OutgoingMessage::Result(r) => Some(r.id.as_str()),
            _ => None,
        };
        // serde wrote it, so it is UTF-8 (checked by a fast scan, not a parse).
        let data = std::str::from_utf8(json).unwrap_or("null");
        journal.line(frame, send_id, msg.name(), data);
        let durable = matches!(msg, OutgoingMessage::Result(_)).then(|| journal.durable());
        (frame, durable)
    }

    /// Hands in the lines' room check: blocks (from a writer thread) while
    /// the journal's queue is full. See [`Journal::room`].
    pub fn room_blocking(&self) {
        if let Some(j) = self.slot.get() {
            j.room_blocking();
        }
    }

    /// The journal's room check for async writers. See [`Journal::room`].
    pub async fn room(&self) {
        if let Some(j) = self.slot.get() {
            j.room().await;
        }
    }

    /// The journal to await [`Journal::room`] on while it is full (`None`
    /// at once otherwise, with no clone on the hot path), for a writer that
    /// cannot hold its tap across the wait.
    pub fn room_check(&self) -> Option<Journal> {
        self.slot.get().filter(|j| j.is_full()).cloned()
    }

    /// A result whose durability failed with `cause`: for a 0.3.0 session
    /// marks it `durable: false` and returns the `store_error` event that
    /// goes with it (numbered by the caller); `None` for a 0.2.0 session,
    /// whose result stays as heddle's document has it.
    pub fn not_durable(&self, msg: &mut OutgoingMessage, cause: &str) -> Option<OutgoingMessage> {
        tracing::error!("a result leaves without its session log entries: {cause}");
        let reports = self.slot.get().is_some_and(|j| j.reports());
        let OutgoingMessage::Result(r) = msg else { return None };
        if !reports {
            return None;
        }
        r.durable = Some(false);
        let event = Event::StoreError { message: format!("the session log could not store this send: {cause}") };
        Some(OutgoingMessage::Event(EventMsg {
            event,
            event_seq: 0,
            send_id: Arc::from(r.id.as_str()),
            parent_call_id: None,
            correlation: r.correlation.clone(),
        }))
    }
}
