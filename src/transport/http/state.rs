//! The daemon's state, shared by every handler of `pirn serve`.
//!
//! Owns: [`App`] (the table of live sessions, the daemon's settings, its
//! terminals, inboxes and group) and [`HttpSession`] (a live session and
//! its hub); [`super::serve`] builds the one `App` and hands it to the
//! routes.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::api::ApiError;
use super::facades::inboxes::Inboxes;
use super::routing::membership::Group;
use super::trust::Trust;
use crate::environment::Environment;
use crate::session::Ending;
use crate::session::Session;
use crate::terminal::Terminals;
use crate::transport::hub::Hub;
use crate::wire::http::sessions::ConsoleAvailability;

/// A live session and its hub.
pub struct HttpSession {
    pub session: Session,
    pub hub: Arc<Hub>,
    /// When a request last named it ([`crate::transport::hub::mono_ms`]).
    pub touched_ms: std::sync::atomic::AtomicU64,
}

impl HttpSession {
    /// True when nothing runs or waits and neither a request nor a frame
    /// touched it for `idle`.
    pub(super) fn idle(&self, now_ms: u64, idle: Duration) -> bool {
        let last = self.touched_ms.load(std::sync::atomic::Ordering::Relaxed).max(self.hub.last_frame_ms());
        now_ms.saturating_sub(last) >= idle.as_millis() as u64 && !self.session.busy()
    }
}

impl HttpSession {
    /// Cancels what runs and waits (results reach the streams), then ends
    /// every stream.
    pub async fn close(&self) {
        let streams = self.hub.close();
        self.session.clone().end(Ending::Cancel, std::future::pending(), streams).await;
    }
}

/// The daemon's state.
pub struct App {
    pub(super) sessions: Mutex<HashMap<String, Arc<HttpSession>>>,
    pub(super) token: Option<String>,
    pub(super) shutdown: CancellationToken,
    pub(super) queue_timeout: Duration,
    pub(super) max_sessions: usize,
    pub(super) session_idle: Duration,
    pub(super) env: Environment,
    pub(super) terminals: Option<Arc<Terminals>>,
    /// Webhook inboxes of the live sessions.
    pub(super) inbox: Inboxes,
    /// Where the daemon listens (`ADDR:PORT`).
    pub(super) local_addr: String,
    /// This daemon's identity and start, for ACECode's `/api/health`.
    pub(super) guid: String,
    pub(super) port: u16,
    pub(super) started: std::time::Instant,
    /// The address bound (a Host naming it is accepted off loopback).
    pub(super) bind: IpAddr,
    pub(super) trust: Trust,
    /// This host's group, with `--advertise-url`.
    pub(super) group: Option<Arc<Group>>,
    /// `--max-queue`.
    pub(super) max_queue: usize,
}

impl App {
    pub(super) fn get(&self, id: &str) -> Result<Arc<HttpSession>, ApiError> {
        let s = self
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
            .ok_or_else(|| ApiError::not_found(format!("no session {id:?}")))?;
        s.touched_ms.store(self.now_ms(), std::sync::atomic::Ordering::Relaxed);
        Ok(s)
    }

    /// The clock of idle times.
    pub(super) fn now_ms(&self) -> u64 {
        crate::transport::hub::mono_ms()
    }

    /// Whether session `id` runs on this host.
    pub(super) fn is_live(&self, id: &str) -> bool {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner()).contains_key(id)
    }

    pub(super) fn all(&self) -> Vec<Arc<HttpSession>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner()).values().cloned().collect()
    }

    /// The terminals, or 404 when the daemon runs without `--terminals`.
    pub(super) fn terminals(&self) -> Result<Arc<Terminals>, ApiError> {
        self.terminals
            .clone()
            .ok_or_else(|| ApiError::not_found("terminals are off (start pirn serve with --terminals)"))
    }

    /// `{available, backend}`, as ACECode's health shows its console.
    pub(super) fn console_health(&self) -> ConsoleAvailability {
        ConsoleAvailability {
            available: self.terminals.is_some(),
            backend: crate::terminal::console::BACKEND.to_owned(),
        }
    }
}
