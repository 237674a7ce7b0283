//! What pirn adds to ACP's answers under `_meta.pirn` (ACP's extension
//! point: a client reads the keys it knows and ignores the others).
//!
//! Owns: the shapes ([`PromptMeta`] on `session/prompt`'s answer,
//! [`ProfileMeta`] on `initialize`'s and a session's opening) and
//! [`pirn`], which puts one under the `pirn` key.

use agent_client_protocol::v1::schema::Meta;
use serde::Serialize;

use crate::wire::{SendResult, SideCalls};

/// `_meta.pirn` of a prompt's answer: the model calls the prompt made.
#[derive(Debug, Clone, Serialize)]
pub struct PromptMeta {
    /// Model calls made for the conversation (pirn's `result.iterations`).
    pub iterations: u32,
    /// The side calls (a profile's reading of the request or answer, a
    /// compaction's summary), counted and their usage summed apart; absent
    /// when none was made (pirn's `result.side_calls`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub side_calls: Option<SideCalls>,
}

impl From<&SendResult> for PromptMeta {
    fn from(r: &SendResult) -> Self {
        PromptMeta { iterations: r.iterations, side_calls: r.side_calls.clone() }
    }
}

/// `_meta.pirn` of `initialize`'s answer (the profile a session on the
/// command line's model would get) and of `session/new`, `session/load`
/// and `session/fork` (the session's own).
#[derive(Debug, Clone, Serialize)]
pub struct ProfileMeta {
    /// The profile in force by name (`exact`, `small`, or one of the
    /// operator's model settings; see `config::profile`).
    pub profile: String,
}

/// `{"pirn": value}` as ACP's `_meta`.
pub fn pirn(value: &impl Serialize) -> Meta {
    let mut meta = Meta::new();
    meta.insert("pirn".to_owned(), serde_json::to_value(value).unwrap_or_default());
    meta
}
