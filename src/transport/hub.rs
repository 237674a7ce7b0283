//! The event hub of one HTTP session: the single writer of everything the
//! session emits, fanned out to any number of subscribers.
//!
//! Owns: `event_seq` numbering (a [`Sequencer`], as the stdio writer has),
//! the session-wide monotonic frame ids used as SSE `id:`, the ring buffer
//! that serves `Last-Event-ID` replays, and the broadcast to live
//! subscribers. A subscriber that falls more than [`LIVE_CAPACITY`] frames
//! behind is dropped (it can resume from the ring) instead of slowing the
//! session.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::{broadcast, mpsc};

use crate::session::{OUTBOX_CAPACITY, Outbox};
use crate::wire::{Response, Sequencer};

/// Frames kept for replay (per session).
pub const RING_CAPACITY: usize = 4096;
/// Frames a live subscriber may lag before it is disconnected.
pub const LIVE_CAPACITY: usize = 1024;

/// One emitted line, serialised once and shared by every subscriber.
#[derive(Debug)]
pub struct Frame {
    /// Session-wide, monotonic, from 1.
    pub id: u64,
    /// `content_delta`, `tool_start`, …, `result`.
    pub event: &'static str,
    /// The JSON object the stdio worker would write.
    pub data: String,
    /// The send this frame belongs to (events: `send_id`; results: `id`).
    pub send_id: Option<Arc<str>>,
    /// True for `result` frames.
    pub is_result: bool,
}

/// A subscription: the frames to replay, then the live receiver that
/// continues exactly after them.
pub type Subscription = (Vec<Arc<Frame>>, broadcast::Receiver<Arc<Frame>>);

/// Why a replay cannot be served.
#[derive(Debug, PartialEq, Eq)]
pub enum ReplayError {
    /// Frames after the given id were already evicted from the ring.
    Evicted,
}

struct Inner {
    ring: VecDeque<Arc<Frame>>,
    next_id: u64,
    seq: Sequencer,
}

/// See the module doc.
pub struct Hub {
    inner: Mutex<Inner>,
    live: broadcast::Sender<Arc<Frame>>,
}

impl Hub {
    /// A hub and the outbox a session writes into; the pump task runs until
    /// every outbox clone is dropped.
    pub fn start() -> (Arc<Hub>, Outbox) {
        let (tx, mut rx) = mpsc::channel::<Response>(OUTBOX_CAPACITY);
        let (live, _) = broadcast::channel(LIVE_CAPACITY);
        let hub = Arc::new(Hub {
            inner: Mutex::new(Inner { ring: VecDeque::new(), next_id: 1, seq: Sequencer::default() }),
            live,
        });
        let pump = hub.clone();
        tokio::spawn(async move {
            while let Some(msg) = rx.recv().await {
                pump.publish(msg);
            }
        });
        (hub, tx)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn publish(&self, mut msg: Response) {
        let mut inner = self.lock();
        inner.seq.stamp(&mut msg);
        let (send_id, is_result) = match &msg {
            Response::Event(e) => (Some(e.send_id.clone()), false),
            Response::Result(r) => (Some(Arc::from(r.id.as_str())), true),
            _ => (None, false),
        };
        let data = match serde_json::to_string(&msg) {
            Ok(d) => d,
            Err(e) => {
                tracing::error!("cannot serialise a response: {e}");
                return;
            }
        };
        let frame = Arc::new(Frame { id: inner.next_id, event: msg.name(), data, send_id, is_result });
        inner.next_id += 1;
        if inner.ring.len() == RING_CAPACITY {
            inner.ring.pop_front();
        }
        inner.ring.push_back(frame.clone());
        // No receivers is fine: nobody is listening right now.
        let _ = self.live.send(frame);
    }

    /// Frames after `last_id` (all retained frames are not replayed when
    /// `None`) and a live receiver that continues exactly where they stop.
    pub fn subscribe(&self, last_id: Option<u64>) -> Result<Subscription, ReplayError> {
        let inner = self.lock();
        let replay = match last_id {
            None => Vec::new(),
            Some(last) => {
                let oldest = inner.ring.front().map(|f| f.id).unwrap_or(inner.next_id);
                if last + 1 < oldest {
                    return Err(ReplayError::Evicted);
                }
                inner.ring.iter().filter(|f| f.id > last).cloned().collect()
            }
        };
        Ok((replay, self.live.subscribe()))
    }
}
