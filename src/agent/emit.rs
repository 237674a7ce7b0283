//! Where the agent loop's output goes: the [`Outbox`] of a session and the
//! [`Emitter`] that stamps one send's events with its ids.
//!
//! The outbox is a bounded channel read by the transport's single writer
//! (the stdout writer, or an HTTP session's hub), which assigns `event_seq`.

use std::sync::Arc;

use tokio::sync::mpsc;

use crate::model::{OnRetry, RetryNotice};
use crate::wire::{self, Correlation, Event, EventMsg, OutgoingMessage, ProtocolVersion};

/// Where a session's output goes, in order. Bounded: a reader that stops
/// reading slows the session down instead of growing memory.
pub type Outbox = mpsc::Sender<OutgoingMessage>;

/// Capacity of an outbox channel, in messages.
pub const OUTBOX_CAPACITY: usize = 1024;

/// Emits the events of one send into the outbox, shaped for the session's
/// protocol version ([`wire::shape`]: a 0.2.0 client gets no extension
/// fields or events).
pub struct Emitter {
    send_id: Arc<str>,
    correlation: Correlation,
    version: ProtocolVersion,
    outbox: Outbox,
    /// The send's OpenTelemetry trace, when tracing is on: the parent of
    /// the spans of its model and tool calls.
    trace: Option<crate::telemetry::SendTrace>,
    /// A subagent's emitter: the parent's `task` call its events nest under.
    parent_call_id: Option<Arc<str>>,
}

impl Emitter {
    /// An emitter for send `send_id`; every event carries `correlation`.
    pub fn new(send_id: Arc<str>, correlation: Correlation, version: ProtocolVersion, outbox: Outbox) -> Emitter {
        Emitter { send_id, correlation, version, outbox, trace: None, parent_call_id: None }
    }

    /// The emitter of a subagent started by this send's `task` call
    /// `call_id`: the same send, every event marked with `parent_call_id`
    /// (no trace of its own: its spans are not the send's).
    pub fn child(&self, call_id: &str) -> Emitter {
        Emitter {
            send_id: self.send_id.clone(),
            correlation: self.correlation.clone(),
            version: self.version,
            outbox: self.outbox.clone(),
            trace: None,
            parent_call_id: Some(Arc::from(call_id)),
        }
    }

    /// The emitter with the send's trace.
    pub fn with_trace(mut self, trace: Option<crate::telemetry::SendTrace>) -> Emitter {
        self.trace = trace;
        self
    }

    /// The send's trace (`None` when tracing is off).
    pub fn trace(&self) -> Option<&crate::telemetry::SendTrace> {
        self.trace.as_ref()
    }

    /// Takes the send's trace to end it.
    pub fn take_trace(&mut self) -> Option<crate::telemetry::SendTrace> {
        self.trace.take()
    }

    /// Queues `event` for the writer (which numbers it). If the writer is
    /// gone the event is dropped: the host has stopped listening.
    pub async fn emit(&self, event: Event) {
        send_shaped(&self.outbox, self.message(event), self.version).await;
    }

    /// `event` as this send's (or subagent's) unnumbered event message.
    fn message(&self, event: Event) -> OutgoingMessage {
        OutgoingMessage::Event(EventMsg {
            event,
            event_seq: 0,
            send_id: self.send_id.clone(),
            parent_call_id: self.parent_call_id.clone(),
            correlation: self.correlation.clone(),
        })
    }
}

impl Emitter {
    /// Queues `event` only when the outbox has room now; else drops it
    /// (for `tool_output`: a client that does not read loses pieces, and
    /// the command never waits for it).
    pub fn try_emit(&self, event: Event) {
        let mut msg = self.message(event);
        if crate::wire::shape(&mut msg, self.version) {
            let _ = self.outbox.try_send(msg);
        }
    }
}

/// A hook's `hook_start` / `hook_end` (0.3.0 only: the shape drops them).
impl crate::hooks::Announce for Emitter {
    async fn announce(&self, event: Event) {
        self.emit(event).await;
    }
}

/// A retried model request becomes a `retry` event (0.3.0 only).
impl OnRetry for Emitter {
    async fn retrying(&self, r: RetryNotice) {
        let wait_ms = u64::try_from(r.wait.as_millis()).unwrap_or(u64::MAX);
        self.emit(Event::Retry { attempt: r.attempt, wait_ms, status: Some(r.status) }).await;
    }
}

/// Shapes `msg` for `version` and queues it (unless that version has no such
/// message). The one path every line of a session takes to its writer.
pub async fn send_shaped(outbox: &Outbox, mut msg: OutgoingMessage, version: ProtocolVersion) {
    if wire::shape(&mut msg, version) {
        let _ = outbox.send(msg).await;
    }
}
