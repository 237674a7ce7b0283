//! Every message of the heddle headless protocol (0.2.0) as Rust types, and
//! the decoder that turns one stdin line into a [`Request`].
//!
//! Owns: the JSON shapes only ([`request`], the session settings of
//! [`init_config`] and the operator settings of [`policy`] in, [`outgoing`] and [`result`] out, with the pieces both
//! carry: [`correlation`], [`usage`], [`error`]), the request decoder, the
//! version check ([`version`]) and the `event_seq` [`Sequencer`]. Each child
//! imports what it uses from the file that defines it; this file only
//! re-exports them. Nothing here does I/O;
//! the transports (`transport::stdio`, `transport::http`) serialise what the
//! session produces and feed it what they read.
//!
//! Source of the shapes: `heddle-headless-protocol.md` (protocol 0.2.0). Where
//! that document is open, the reading chosen here is:
//! - an `event` line carries its payload as an object in the `event` field,
//!   and the payload's own discriminator key is also `event`
//!   (`{"type":"event","event":{"event":"content_delta","text":"…"},…}`);
//! - `session_id` is on every event and result once a session exists;
//! - pirn's additions (fields such as `call_id`, `is_error`,
//!   `queue_length`, `request_id`, `args`, and the 0.3.0 events and
//!   requests) are taken out of a 0.2.0 session's lines by [`shape`], so a
//!   0.2.0 client never sees them.

mod agents;
mod attempts;
pub mod claude_names;
mod correlation;
mod error;
pub mod http;
mod init_config;
mod outgoing;
mod plan;
mod policy;
mod request;
mod result;
mod steer;
mod usage;
mod version;

use std::sync::Arc;

use serde_json::Value;

pub use agents::*;
pub use attempts::*;
pub use correlation::*;
pub use error::*;
pub use init_config::*;
pub use outgoing::*;
pub use plan::*;
pub use policy::*;
pub use request::*;
pub use result::*;
pub use steer::*;
pub use usage::*;
pub use version::*;

/// Longest request line accepted on stdin, in bytes (10 MiB). Longer lines are
/// discarded and answered with a `protocol_error` result.
pub const MAX_LINE_BYTES: usize = 10 * 1024 * 1024;

/// The message for a line that is not JSON (heddle's text, exactly).
pub const INVALID_JSON: &str = "Invalid JSON";

/// The message for a request before `init` (heddle's text, exactly).
pub const NOT_INITIALIZED: &str = "Not initialized. Send 'init' first.";

/// Id echoed in a protocol-error result when the offending line carried none.
pub const UNKNOWN_ID: &str = "unknown";

/// Why a line is not a valid request. `id` is the line's id when one could be
/// read, else `"unknown"`; the `Display` text is the protocol error's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct DecodeError {
    pub id: String,
    pub message: String,
}

/// Decodes one request line (without its newline).
///
/// Errors: invalid JSON, a non-object, missing or non-string `type`/`id`, an
/// unknown `type`, missing or mistyped fields. The error keeps the line's `id`
/// whenever the line was a JSON object with a string (or number) `id`.
pub fn decode_request(line: &[u8]) -> Result<Request, DecodeError> {
    let value: Value = serde_json::from_slice(line).map_err(|e| {
        tracing::debug!("request line is not JSON: {e}");
        DecodeError { id: UNKNOWN_ID.to_owned(), message: INVALID_JSON.to_owned() }
    })?;
    let Value::Object(map) = &value else {
        return Err(DecodeError { id: UNKNOWN_ID.to_owned(), message: "a request must be a JSON object".to_owned() });
    };
    let id = match map.get("id") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => {
            return Err(DecodeError { id: n.to_string(), message: "field `id` must be a string".to_owned() });
        }
        Some(_) => {
            return Err(DecodeError { id: UNKNOWN_ID.to_owned(), message: "field `id` must be a string".to_owned() });
        }
        None => {
            return Err(DecodeError { id: UNKNOWN_ID.to_owned(), message: "missing field `id`".to_owned() });
        }
    };
    let fail = |message: String| DecodeError { id: id.clone(), message };
    match map.get("type") {
        Some(Value::String(t)) => {
            const KNOWN: [&str; 9] =
                ["init", "send", "status", "cancel", "shutdown", "permission_response", "compact", "rewind", "steer"];
            if !KNOWN.contains(&t.as_str()) {
                return Err(fail(format!("unknown request type {t:?}")));
            }
        }
        Some(_) => return Err(fail("field `type` must be a string".to_owned())),
        None => return Err(fail("missing field `type`".to_owned())),
    }
    serde_json::from_value(value).map_err(|e| fail(format!("invalid request: {e}")))
}

/// Assigns `event_seq`: 0-based and gapless per send, in the order lines are
/// written. Owned by the one task that writes a transport's output, so the
/// numbers follow the written order whatever task produced the event.
#[derive(Debug, Default)]
pub struct Sequencer {
    /// `(send_id, next_seq)` for sends that have events but no result yet.
    /// At most one send runs at a time, so this stays tiny.
    open: Vec<(Arc<str>, u64)>,
    /// The send whose result was stamped last, and its next number: a
    /// `store_error` event found while that result waited is written before
    /// it and numbered on.
    closed: Option<(Arc<str>, u64)>,
}

impl Sequencer {
    /// Stamps `message` in place: events get the next number of their send;
    /// a result closes its send's counter.
    pub fn stamp(&mut self, message: &mut OutgoingMessage) {
        let closed = self.closed.take();
        match message {
            OutgoingMessage::Event(ev) => {
                let slot = match self.open.iter().position(|(id, _)| *id == ev.send_id) {
                    Some(i) => i,
                    None => {
                        let next = match &closed {
                            Some((id, next)) if *id == ev.send_id => *next,
                            _ => 0,
                        };
                        self.open.push((ev.send_id.clone(), next));
                        self.open.len() - 1
                    }
                };
                ev.event_seq = self.open[slot].1;
                self.open[slot].1 += 1;
            }
            OutgoingMessage::Result(r) => {
                if let Some(i) = self.open.iter().position(|(id, _)| **id == *r.id) {
                    self.closed = Some(self.open.swap_remove(i));
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_keeps_id_on_missing_field() {
        let e = decode_request(br#"{"type":"send","id":"7"}"#).unwrap_err();
        assert_eq!(e.id, "7");
        assert!(e.message.contains("message"), "{}", e.message);
    }

    #[test]
    fn decode_rejects_unknown_type_and_garbage() {
        assert_eq!(decode_request(br#"{"type":"nope","id":"x"}"#).unwrap_err().id, "x");
        assert_eq!(decode_request(b"{not json").unwrap_err().id, "unknown");
        assert_eq!(decode_request(b"[1,2]").unwrap_err().id, "unknown");
        assert_eq!(decode_request(br#"{"id":"q"}"#).unwrap_err().message, "missing field `type`");
    }

    #[test]
    fn negotiation_is_same_major_and_the_lower_minor() {
        use ProtocolVersion::*;
        assert_eq!(negotiate(None), Ok(V0_2));
        assert_eq!(negotiate(Some("0.1.0")), Ok(V0_2));
        assert_eq!(negotiate(Some("0.2.0")), Ok(V0_2));
        assert_eq!(negotiate(Some("0.3.0")), Ok(V0_3));
        assert_eq!(negotiate(Some("0.9.1")), Ok(V0_3));
        assert!(matches!(negotiate(Some("1.0.0")), Err(VersionError::Incompatible { .. })));
        assert!(matches!(negotiate(Some("banana")), Err(VersionError::NotSemver { .. })));
        assert_eq!(PROTOCOL_VERSION, V0_3.as_str(), "PROTOCOL_VERSION names the newest version served");
    }

    #[test]
    fn a_0_2_client_gets_no_extension_fields_or_events() {
        let mut end = OutgoingMessage::Event(EventMsg {
            parent_call_id: None,
            event: Event::ToolEnd {
                name: "grep".into(),
                result_preview: "x".into(),
                duration_ms: Some(3),
                call_id: Some("c".into()),
                is_error: Some(false),
                diff: None,
                output: None,
            },
            event_seq: 0,
            send_id: "s".into(),
            correlation: Correlation::default(),
        });
        let v3 = end.clone();
        assert!(shape(&mut end, ProtocolVersion::V0_2));
        let OutgoingMessage::Event(e) = &end else { unreachable!() };
        assert_eq!(
            serde_json::to_value(&e.event).unwrap(),
            serde_json::json!({"event":"tool_end","name":"grep","result_preview":"x"})
        );
        let mut kept = v3.clone();
        assert!(shape(&mut kept, ProtocolVersion::V0_3) && kept == v3);
        let mut retry = OutgoingMessage::Event(EventMsg {
            parent_call_id: None,
            event: Event::Retry { attempt: 2, wait_ms: 1000, status: Some(429) },
            event_seq: 0,
            send_id: "s".into(),
            correlation: Correlation::default(),
        });
        assert!(!shape(&mut retry, ProtocolVersion::V0_2));
    }

    #[test]
    fn sequencer_is_per_send_and_gapless() {
        let ev = |id: &str| {
            OutgoingMessage::Event(EventMsg {
                parent_call_id: None,
                event: Event::Heartbeat { duration_ms: 0 },
                event_seq: 99,
                send_id: id.into(),
                correlation: Correlation::default(),
            })
        };
        let mut s = Sequencer::default();
        let mut seqs = vec![];
        for id in ["a", "a", "b", "a"] {
            let mut r = ev(id);
            s.stamp(&mut r);
            if let OutgoingMessage::Event(e) = r {
                seqs.push(e.event_seq);
            }
        }
        assert_eq!(seqs, vec![0, 1, 0, 2]);
        let mut done = OutgoingMessage::Result(Box::new(SendResult::error(
            "a",
            ErrorEnvelope::cancelled(),
            Correlation::default(),
        )));
        s.stamp(&mut done);
        // Right after its result, an event of the send (store_error)
        // numbers on; after any other line, a counter starts over.
        let mut store_error = ev("a");
        s.stamp(&mut store_error);
        assert!(matches!(store_error, OutgoingMessage::Event(EventMsg { event_seq: 3, .. })));
        let mut done = OutgoingMessage::Result(Box::new(SendResult::error(
            "b",
            ErrorEnvelope::cancelled(),
            Correlation::default(),
        )));
        s.stamp(&mut done);
        let mut other = ev("c");
        s.stamp(&mut other);
        let mut again = ev("b");
        s.stamp(&mut again);
        assert!(matches!(again, OutgoingMessage::Event(EventMsg { event_seq: 0, .. })));
    }
}
