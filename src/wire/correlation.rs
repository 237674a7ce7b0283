//! The ids every event and result echoes (`send_id`, `session_id`, and an
//! orchestrator's `task_id`/`worker_id`), shared by [`super::outgoing`] and
//! [`super::result`].
//!
//! Owns: [`Correlation`] only.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The ids echoed on every event and result (reference-counted: cloning
/// them per event costs no allocation).
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
pub struct Correlation {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<Arc<str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<Arc<str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_id: Option<Arc<str>>,
}
