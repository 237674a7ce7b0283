//! The webhook inboxes of `pirn serve`, held in the daemon's memory.
//!
//! Owns: [`Inboxes`], each live session's webhook token (`wh_` + 256
//! random bits, made by `new_token` and found by a constant-time
//! comparison), its delivery choice and its events, and the feed of new
//! events that `GET /v1/events/stream` follows. The routes that read and
//! write them are [`super::inbox`]'s.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use tokio::sync::broadcast;

use crate::wire::http::inbox::{Deliver, InboxEvent};

#[derive(Default)]
pub(super) struct SessionInbox {
    pub(super) token: Option<String>,
    pub(super) deliver: Deliver,
    pub(super) events: VecDeque<InboxEvent>,
}

/// Every session's webhook and events.
pub struct Inboxes {
    by_session: Mutex<HashMap<String, SessionInbox>>,
    pub(super) live: broadcast::Sender<InboxEvent>,
}

impl Default for Inboxes {
    fn default() -> Self {
        Inboxes { by_session: Mutex::default(), live: broadcast::channel(256).0 }
    }
}

impl Inboxes {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, SessionInbox>> {
        self.by_session.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Forgets a session's webhook and events (the session is gone).
    pub fn remove(&self, session_id: &str) {
        self.lock().remove(session_id);
    }

    /// The session whose webhook token is `given`.
    pub(super) fn owner(&self, given: &str) -> Option<String> {
        let inboxes = self.lock();
        let mut found = None;
        // Every token is compared, in constant time each.
        for (id, inbox) in inboxes.iter() {
            if let Some(token) = &inbox.token
                && crate::secret::matches(given.as_bytes(), token.as_bytes())
            {
                found = Some(id.clone());
            }
        }
        found
    }
}

/// A new webhook token: `wh_` and 256 random bits.
pub(super) fn new_token() -> String {
    format!("wh_{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple())
}
