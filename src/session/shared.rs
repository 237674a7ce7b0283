//! What a session's handles, its runner task and its open/rewind/end steps
//! share: the configuration, the outbox, the queue, the permission broker,
//! the journal, the overrides set after `init`, the running send's meter and
//! steering inbox, the session's cost and plan.
//!
//! Owns: [`Shared`] and the few rules that only read or update it (the
//! effective configuration, the cost sum, answering a send no runner will
//! answer).

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use super::queue::Queue;
use crate::agent::Outbox;
use crate::agent::budget::Meter;
use crate::agent::emit::send_shaped;
use crate::approval::broker::PermissionBroker;
use crate::config::SessionConfig;
use crate::store::Journal;
use crate::wire::{ErrorEnvelope, OutgoingMessage, SendResult, StopReason};

pub(super) struct Shared {
    pub(super) config: Arc<SessionConfig>,
    pub(super) outbox: Outbox,
    pub(super) queue: Mutex<Queue>,
    pub(super) wake: Notify,
    pub(super) messages: Arc<AtomicU64>,
    pub(super) permissions: PermissionBroker,
    pub(super) journal: Option<Journal>,
    /// Sends of the previous process this session was resumed from that
    /// never got a result.
    pub(super) interrupted: Vec<String>,
    /// Model and approval mode changed after `init` (agent-webkit's
    /// `set_model`, `set_permission_mode`); they apply from the next send.
    pub(super) overrides: Mutex<Overrides>,
    /// The running send's budget meter (for `status_ok.budget`).
    pub(super) meter: Mutex<Option<Arc<Meter>>>,
    /// What the session's sends cost (see [`Shared::add_cost`]).
    pub(super) cost: Mutex<SessionCost>,
    /// Copies of the workspace's files for the checkpoints of commands.
    pub(super) shadow: Arc<Mutex<crate::checkpoint::snapshot::Shadow>>,
    /// The running send's id and steering inbox (see [`Session::steer`]).
    pub(super) steering: Mutex<Option<(String, Arc<crate::agent::steer::Steering>)>>,
    /// The conversation's plan (for `status_ok.plan`).
    pub(super) plan: crate::conversation::Plan,
}

/// The dollars of a session's model calls so far.
#[derive(Debug, Default)]
pub(super) struct SessionCost {
    pub(super) dollars: f64,
    /// A model call's cost was unknown: the sum is too.
    pub(super) unknown: bool,
    /// A model call was priced.
    pub(super) priced: bool,
}

/// See [`Shared::overrides`].
#[derive(Debug, Clone, Default)]
pub(super) struct Overrides {
    pub(super) model: Option<String>,
    pub(super) mode: Option<crate::wire::ApprovalMode>,
}

impl Shared {
    /// The configuration the next send runs with: the session's, with the
    /// overrides applied (a copy only when there are some).
    pub(super) fn effective_config(&self) -> Option<SessionConfig> {
        let o = self.overrides.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if o.model.is_none() && o.mode.is_none() {
            return None;
        }
        let mut config = (*self.config).clone();
        if let Some(model) = o.model {
            config.model = model;
        }
        if let Some(mode) = o.mode {
            config.policy.mode = mode;
        }
        Some(config)
    }

    /// Adds a finished send's cost to the session's; returns the session's
    /// total (`None` once any call's cost was unknown, and before the first
    /// priced call).
    pub(super) fn add_cost(&self, meter: &Meter) -> Option<f64> {
        let mut cost = self.cost.lock().unwrap_or_else(|p| p.into_inner());
        match meter.cost_usd() {
            Some(c) => {
                cost.dollars += c;
                cost.priced = true;
            }
            None if meter.made_calls() => cost.unknown = true,
            None => {}
        }
        (cost.priced && !cost.unknown).then_some(cost.dollars)
    }

    pub(super) fn queue(&self) -> MutexGuard<'_, Queue> {
        // A panic while holding this lock cannot leave the queue half-updated
        // (every critical section is a single push/pop/assignment).
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes a result that no runner will write (cancelled or expired while queued).
    pub(super) async fn answer(&self, id: String, error: ErrorEnvelope) {
        let mut result = SendResult::error(id, error, self.config.correlation.clone());
        result.stop_reason = Some(StopReason::Cancelled);
        self.out(OutgoingMessage::Result(Box::new(result))).await;
    }

    /// Writes `msg`, shaped for the session's protocol version.
    pub(super) async fn out(&self, msg: OutgoingMessage) {
        send_shaped(&self.outbox, msg, self.config.version).await;
    }
}
