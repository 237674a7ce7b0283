//! Steering a running send: text the client adds while the send runs,
//! which the model reads at the send's next model call instead of waiting
//! for a send of its own (Codex's `turn/steer`; 0.3.0 `steer`).
//!
//! Owns [`Steering`], the send's inbox: the session offers text to it while
//! the send runs ([`Steering::offer`]); the loop takes what waits before
//! each model call ([`Steering::take`]), and an answer ends the send only
//! when nothing waits ([`Steering::close_if_empty`]) or no model call is
//! left for it. A text is taken by the send, refused to the session (which
//! queues it as a send of its own), or, when the send ends before taking
//! it, given back by [`Steering::close`] and queued first: never lost.

use std::sync::Mutex;

/// Most texts that may wait for one send's next model call; more are
/// queued as sends of their own.
pub const MAX_WAITING: usize = 64;

/// One send's inbox of steering texts. See the module doc.
#[derive(Debug, Default)]
pub struct Steering {
    inner: Mutex<Inbox>,
}

#[derive(Debug, Default)]
struct Inbox {
    /// `(steer id, text)`, in arrival order.
    waiting: Vec<(String, String)>,
    /// The send is ending: nothing more is taken.
    closed: bool,
}

impl Steering {
    fn inbox(&self) -> std::sync::MutexGuard<'_, Inbox> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds `text` (request `id`) for the next model call. False when the
    /// send no longer takes any (it is ending) or [`MAX_WAITING`] wait.
    pub fn offer(&self, id: String, text: String) -> bool {
        let mut inbox = self.inbox();
        if inbox.closed || inbox.waiting.len() >= MAX_WAITING {
            return false;
        }
        inbox.waiting.push((id, text));
        true
    }

    /// What waits, in order, now taken by the send.
    pub fn take(&self) -> Vec<(String, String)> {
        std::mem::take(&mut self.inbox().waiting)
    }

    /// Closes the inbox when nothing waits (true: the send may end); false
    /// when a text arrived, which the send must take first.
    pub fn close_if_empty(&self) -> bool {
        let mut inbox = self.inbox();
        inbox.closed = inbox.waiting.is_empty();
        inbox.closed
    }

    /// True when a text waits.
    pub fn waiting(&self) -> bool {
        !self.inbox().waiting.is_empty()
    }

    /// Closes the inbox however the send ends; returns the `(id, text)`
    /// it never took (acknowledged to the client, never shown to the
    /// model), which the session queues as sends of their own.
    pub fn close(&self) -> Vec<(String, String)> {
        let mut inbox = self.inbox();
        inbox.closed = true;
        std::mem::take(&mut inbox.waiting)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_is_taken_or_refused_never_lost() {
        let s = Steering::default();
        assert!(s.offer("a".into(), "also do x".into()));
        assert!(!s.close_if_empty(), "a waiting text keeps the send going");
        assert_eq!(s.take(), [("a".to_owned(), "also do x".to_owned())]);
        assert!(s.close_if_empty());
        assert!(!s.offer("b".into(), "too late".into()), "after the end it is refused, so the session queues it");
        let t = Steering::default();
        assert!(t.offer("c".into(), "x".into()));
        assert_eq!(t.close(), [("c".to_owned(), "x".to_owned())]);
    }
}
