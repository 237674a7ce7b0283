//! Where the agent loop's output goes: the [`Outbox`] of a session and the
//! [`Emitter`] that stamps one send's events with its ids.
//!
//! The outbox is a bounded channel read by the transport's single writer
//! (the stdout writer, or an HTTP session's hub), which assigns `event_seq`.

use std::sync::Arc;

use tokio::sync::mpsc;

use crate::wire::{Correlation, Event, EventMsg, OutgoingMessage};

/// Where a session's output goes, in order. Bounded: a reader that stops
/// reading slows the session down instead of growing memory.
pub type Outbox = mpsc::Sender<OutgoingMessage>;

/// Capacity of an outbox channel, in messages.
pub const OUTBOX_CAPACITY: usize = 1024;

/// Emits the events of one send into the outbox.
pub struct Emitter {
    send_id: Arc<str>,
    correlation: Correlation,
    outbox: Outbox,
}

impl Emitter {
    /// An emitter for send `send_id`; every event carries `correlation`.
    pub fn new(send_id: Arc<str>, correlation: Correlation, outbox: Outbox) -> Emitter {
        Emitter { send_id, correlation, outbox }
    }

    /// Queues `event` for the writer (which numbers it). If the writer is
    /// gone the event is dropped: the host has stopped listening.
    pub async fn emit(&self, event: Event) {
        let msg =
            EventMsg { event, event_seq: 0, send_id: self.send_id.clone(), correlation: self.correlation.clone() };
        let _ = self.outbox.send(OutgoingMessage::Event(msg)).await;
    }
}
