//! Where an output writer hands its lines to the session's journal.
//!
//! Owns: frame numbers (the session-wide number of each emitted line: the
//! SSE `id` over HTTP, and the `frame` of a logged line on stdio; a resumed
//! session numbers on after its log's last frame), and the durability rule:
//! a `result` line is handed in and the writer gets a [`Durable`] to wait
//! on before the line leaves the process.
//!
//! The journal is attached after the writer starts (a session opens after
//! its writer, at `init`), through a [`JournalSlot`].

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::oneshot;

use crate::store::Journal;
use crate::wire::OutgoingMessage;

/// Set once, when the session opens with a journal.
pub type JournalSlot = Arc<OnceLock<Journal>>;

/// Resolves once a `result` line is durable (an error means the journal
/// is gone: nothing to wait for).
pub type Durable = oneshot::Receiver<()>;

/// Longest a result waits for its log entry to be durable; then it is
/// written anyway (a result is never lost to a slow or hung store).
pub const DURABLE_TIMEOUT: Duration = Duration::from_secs(10);

/// Awaits `d` for at most [`DURABLE_TIMEOUT`].
pub async fn wait(d: Durable) {
    if tokio::time::timeout(DURABLE_TIMEOUT, d).await.is_err() {
        tracing::error!("the session log did not confirm a result within {DURABLE_TIMEOUT:?}; writing it anyway");
    }
}

/// As [`wait`], from a thread outside the runtime.
pub fn wait_blocking(mut d: Durable) {
    let deadline = std::time::Instant::now() + DURABLE_TIMEOUT;
    loop {
        match d.try_recv() {
            Err(oneshot::error::TryRecvError::Empty) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_micros(200));
            }
            Err(oneshot::error::TryRecvError::Empty) => {
                tracing::error!(
                    "the session log did not confirm a result within {DURABLE_TIMEOUT:?}; writing it anyway"
                );
                return;
            }
            _ => return,
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
}
