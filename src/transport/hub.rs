//! The event hub of one HTTP session: the single writer of everything the
//! session emits, fanned out to any number of subscribers.
//!
//! Owns: `event_seq` numbering (a [`Sequencer`], as the stdio writer has),
//! the session-wide monotonic frame ids used as SSE `id:` (its [`Tap`],
//! which also logs each frame to the session's journal; a result is fanned
//! out once it is durable), the ring buffer
//! that serves `Last-Event-ID` replays, and the broadcast to live
//! subscribers. A subscriber that falls more than [`LIVE_CAPACITY`] frames
//! behind is dropped (it can resume from the ring) instead of slowing the
//! session. [`Hub::close`] publishes what is still queued, then ends every
//! subscriber's stream, so a server can stop gracefully without sleeping.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::{broadcast, mpsc};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::tap::{Durable, JournalSlot, Tap};
use crate::session::{OUTBOX_CAPACITY, Outbox};
use crate::store::Journal;
use crate::wire::{OutgoingMessage, Sequencer};

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
pub type Subscription = (Vec<Arc<Frame>>, LiveFrames);

/// The live frames of a subscription: those numbered from the moment it
/// was taken on. A result is numbered before it is durable and fanned out
/// after, so a frame numbered before the subscription can still be on its
/// way; it belongs to the past and is skipped.
#[derive(Debug)]
pub struct LiveFrames {
    rx: broadcast::Receiver<Arc<Frame>>,
    /// The first frame id this subscriber sees.
    from: u64,
}

impl LiveFrames {
    /// The next frame; errors as [`broadcast::Receiver::recv`] (`Lagged`
    /// when this subscriber fell [`LIVE_CAPACITY`] frames behind, `Closed`
    /// when the hub closed).
    pub async fn recv(&mut self) -> Result<Arc<Frame>, broadcast::error::RecvError> {
        loop {
            let frame = self.rx.recv().await?;
            if frame.id >= self.from {
                return Ok(frame);
            }
        }
    }
}

/// Why a replay cannot be served.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// Frames after the given id were already evicted from the ring.
    #[error("the frames after Last-Event-ID were evicted from the replay buffer")]
    Evicted,
    /// The id was never issued (it is past the newest frame).
    #[error("Last-Event-ID {0} is past the newest event")]
    Future(u64),
}

struct Inner {
    ring: VecDeque<Arc<Frame>>,
    /// Numbers frames and hands them to the session's journal.
    tap: Tap,
    seq: Sequencer,
    /// `None` once the hub is closed: subscribers' streams end.
    /// The live broadcast, made by the first subscriber (an idle session
    /// holds no channel: its 1,024 slots are most of a session's memory);
    /// `None` once closed.
    live: Option<Option<broadcast::Sender<Arc<Frame>>>>,
}

/// See the module doc.
pub struct Hub {
    inner: Mutex<Inner>,
    journal: JournalSlot,
    closing: CancellationToken,
    pump: Mutex<Option<JoinHandle<()>>>,
    /// When the last frame was published ([`mono_ms`]).
    last_frame_ms: std::sync::atomic::AtomicU64,
}

/// Milliseconds on the process's monotonic clock (from its first use): the
/// clock of idle times.
pub fn mono_ms() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed().as_millis() as u64
}

impl Hub {
    /// When the last frame was published ([`mono_ms`]; 0 before any).
    pub fn last_frame_ms(&self) -> u64 {
        self.last_frame_ms.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A hub and the outbox a session writes into. The pump task runs until
    /// every outbox clone is dropped or [`Hub::close`] is called.
    pub fn start() -> (Arc<Hub>, Outbox) {
        let (tx, mut rx) = mpsc::channel::<OutgoingMessage>(OUTBOX_CAPACITY);
        let journal = JournalSlot::default();
        let hub = Arc::new(Hub {
            inner: Mutex::new(Inner {
                ring: VecDeque::new(),
                tap: Tap::new(journal.clone()),
                seq: Sequencer::default(),
                live: Some(None),
            }),
            journal,
            closing: CancellationToken::new(),
            pump: Mutex::new(None),
            last_frame_ms: std::sync::atomic::AtomicU64::new(0),
        });
        let pump = hub.clone();
        let handle = tokio::spawn(async move {
            loop {
                tokio::select! {
                    biased;
                    msg = rx.recv() => match msg {
                        Some(m) => pump.publish(m).await,
                        None => break,
                    },
                    _ = pump.closing.cancelled() => {
                        rx.close();
                        while let Some(m) = rx.recv().await {
                            pump.publish(m).await;
                        }
                        break;
                    }
                }
            }
            pump.lock().live = None;
        });
        *hub.pump.lock().unwrap_or_else(|p| p.into_inner()) = Some(handle);
        (hub, tx)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Logs the session's frames to `journal` from now on (a resumed
    /// session's frames number on after its log's last). Call before the
    /// first send.
    pub fn attach(&self, journal: Journal) {
        let _ = self.journal.set(journal);
    }

    /// The journal attached, if any.
    pub fn journal(&self) -> Option<&Journal> {
        self.journal.get()
    }

    /// Numbers, logs and fans out `msg`; a result only once it is durable.
    async fn publish(&self, msg: OutgoingMessage) {
        let room = self.lock().tap.room_check();
        if let Some(room) = room {
            room.room().await;
        }
        let Some((frame, durable, msg)) = self.prepare(msg) else { return };
        let mut frame = frame;
        let mut after = None;
        if let Some(durable) = durable
            && let Err(cause) = super::tap::wait(durable).await
        {
            // Frame ids only grow: the store_error frame follows the result.
            let mut msg = msg;
            let event = self.lock().tap.not_durable(&mut msg, &cause);
            if let Some(event) = event {
                let data = serde_json::to_string(&msg).unwrap_or_default();
                let f = &*frame;
                frame = Arc::new(Frame { id: f.id, event: f.event, data, send_id: f.send_id.clone(), is_result: true });
                after = Some(event);
            }
        }
        self.push(frame);
        if let Some(event) = after
            && let Some((frame, _, _)) = self.prepare(event)
        {
            self.push(frame);
        }
    }

    /// Adds a frame to the replay ring and the live stream.
    fn push(&self, frame: Arc<Frame>) {
        self.last_frame_ms.store(mono_ms(), std::sync::atomic::Ordering::Relaxed);
        let mut inner = self.lock();
        if inner.ring.len() == RING_CAPACITY {
            inner.ring.pop_front();
        }
        inner.ring.push_back(frame.clone());
        // No receivers is fine: nobody is listening right now.
        if let Some(Some(live)) = &inner.live {
            let _ = live.send(frame);
        }
    }

    fn prepare(&self, mut msg: OutgoingMessage) -> Option<(Arc<Frame>, Option<Durable>, OutgoingMessage)> {
        let mut inner = self.lock();
        inner.seq.stamp(&mut msg);
        let (send_id, is_result) = match &msg {
            OutgoingMessage::Event(e) => (Some(e.send_id.clone()), false),
            OutgoingMessage::Result(r) => (Some(Arc::from(r.id.as_str())), true),
            _ => (None, false),
        };
        let data = match serde_json::to_string(&msg) {
            Ok(d) => d,
            Err(e) => {
                tracing::error!("cannot serialise a response: {e}");
                return None;
            }
        };
        let (id, durable) = inner.tap.line(&msg, data.as_bytes());
        Some((Arc::new(Frame { id, event: msg.name(), data, send_id, is_result }), durable, msg))
    }

    /// Frames after `last_id` (none are replayed when `None`) and a live
    /// receiver that continues exactly where they stop (already closed when
    /// the hub is).
    ///
    /// Errors: [`ReplayError::Evicted`] when frames after `last_id` left the
    /// ring; [`ReplayError::Future`] when `last_id` was never issued.
    pub fn subscribe(&self, last_id: Option<u64>) -> Result<Subscription, ReplayError> {
        let mut inner = self.lock();
        let next_id = inner.tap.next_frame();
        let from = last_id.map_or(next_id, |l| l.saturating_add(1));
        let replay = match last_id {
            None => Vec::new(),
            Some(last) if last >= next_id => return Err(ReplayError::Future(last)),
            Some(last) => {
                let oldest = inner.ring.front().map(|f| f.id).unwrap_or(next_id);
                if last.saturating_add(1) < oldest {
                    return Err(ReplayError::Evicted);
                }
                inner.ring.iter().filter(|f| f.id > last).cloned().collect()
            }
        };
        let live = match &mut inner.live {
            Some(Some(live)) => live.subscribe(),
            Some(slot @ None) => {
                let (live, rx) = broadcast::channel(LIVE_CAPACITY);
                *slot = Some(live);
                rx
            }
            None => broadcast::channel(1).1,
        };
        Ok((replay, LiveFrames { rx: live, from }))
    }

    /// Publishes what the session still queued, then ends every
    /// subscriber's stream. Call after the session has shut down.
    pub async fn close(&self) {
        self.closing.cancel();
        let pump = self.pump.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(pump) = pump {
            let _ = pump.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Correlation, ErrorEnvelope, Event, EventMsg, SendResult};

    fn delta(send: &str) -> OutgoingMessage {
        OutgoingMessage::Event(EventMsg {
            parent_call_id: None,
            event: Event::ContentDelta { text: "x".into() },
            event_seq: 0,
            send_id: send.into(),
            correlation: Correlation::default(),
        })
    }

    fn ids(frames: &[Arc<Frame>]) -> Vec<u64> {
        frames.iter().map(|f| f.id).collect()
    }

    #[tokio::test]
    async fn replay_continues_exactly_after_last_event_id() {
        let (hub, outbox) = Hub::start();
        for _ in 0..3 {
            outbox.send(delta("a")).await.unwrap();
        }
        let (replay, mut live) = loop {
            let sub = hub.subscribe(Some(1));
            if sub.as_ref().is_ok_and(|(r, _)| r.len() == 2) {
                break sub.unwrap();
            }
            tokio::task::yield_now().await;
        };
        assert_eq!(ids(&replay), [2, 3]);
        let result = SendResult::error("a", ErrorEnvelope::cancelled(), Correlation::default());
        outbox.send(OutgoingMessage::Result(Box::new(result))).await.unwrap();
        let next = live.recv().await.unwrap();
        assert_eq!((next.id, next.is_result, next.event), (4, true, "result"));
        assert_eq!(hub.subscribe(Some(4)).map(|(r, _)| r.len()), Ok(0));
        assert_eq!(hub.subscribe(Some(5)).err(), Some(ReplayError::Future(5)));
        assert_eq!(hub.subscribe(Some(u64::MAX)).err(), Some(ReplayError::Future(u64::MAX)));
        hub.close().await;
        assert!(live.recv().await.is_err(), "closing ends live streams");
    }

    #[tokio::test]
    async fn a_frame_numbered_before_a_subscription_is_not_live_to_it() {
        let (hub, _outbox) = Hub::start();
        // Numbered (the result waits to be durable), then a subscriber
        // arrives, then the frame is fanned out.
        let (early, _, _) = hub.prepare(delta("old")).unwrap();
        let (_, mut live) = hub.subscribe(None).unwrap();
        let (late, _, _) = hub.prepare(delta("new")).unwrap();
        hub.push(early);
        hub.push(late);
        let first = live.recv().await.unwrap();
        assert_eq!((first.id, first.send_id.as_deref()), (2, Some("new")));
    }

    #[tokio::test]
    async fn frames_past_the_ring_are_evicted_and_event_seq_is_per_send() {
        let (hub, outbox) = Hub::start();
        for i in 0..RING_CAPACITY + 10 {
            outbox.send(delta(if i % 2 == 0 { "a" } else { "b" })).await.unwrap();
        }
        drop(outbox);
        hub.close().await;
        assert_eq!(hub.subscribe(Some(5)).err(), Some(ReplayError::Evicted));
        let (replay, _) = hub.subscribe(Some(10)).unwrap();
        assert_eq!(replay.len(), RING_CAPACITY);
        let last: serde_json::Value = serde_json::from_str(&replay[RING_CAPACITY - 1].data).unwrap();
        assert_eq!(last["event_seq"], (RING_CAPACITY + 10) / 2 - 1);
    }
}
