//! The state of the Claude surface's one loop: the output format, the
//! setup, the session once open, the turns under way, the control requests
//! asked and awaited, and the calls the session makes into the SDK.
//!
//! Owns: [`Surface`]'s fields and [`SdkCall`]; the loop is [`super`]'s, and
//! the control requests ([`super::control`]), opening ([`super::open`]) and
//! turns ([`super::turns`]) add their own `impl Surface` blocks.

use std::collections::HashMap;

use tokio::sync::mpsc;

use super::args::ClaudeOutputFormat;
use super::setup::ClaudeSetup;
use super::translate::ClaudeTurn;
use super::wire::{OutControl, ResultMsg};
use crate::environment::Environment;
use crate::session::Session;

/// The process's state.
pub(super) struct Surface {
    pub(super) output: ClaudeOutputFormat,
    pub(super) partial: bool,
    pub(super) setup: ClaudeSetup,
    pub(super) env: Environment,
    pub(super) session: Option<Session>,
    /// Turns under way, by pirn send id.
    pub(super) turns: HashMap<String, ClaudeTurn>,
    /// Steers offered to a running turn, by their id (see [`turns`]).
    pub(super) steers: HashMap<String, ClaudeTurn>,
    pub(super) sends: u64,
    /// `can_use_tool` requests asked: control request id → (pirn's
    /// permission request id, the call's arguments).
    pub(super) asks: HashMap<String, (String, serde_json::Value)>,
    /// `rewind_files` under way: pirn's rewind id → control request id.
    pub(super) rewinds: HashMap<String, String>,
    /// `--replay-user-messages`: each prompt is echoed as a `user` message
    /// with its uuid (the turn's send id, which `rewind_files` names).
    pub(super) replay: bool,
    pub(super) last: Option<ResultMsg>,
    pub(super) last_code: i32,
    /// Where the session's calls into the SDK arrive (see [`control::SdkHooks`],
    /// [`control::SdkMcp`]).
    pub(super) sdk_tx: mpsc::Sender<SdkCall>,
    /// Control requests of those calls sent: their id → the reply.
    pub(super) sdk_calls: HashMap<String, tokio::sync::oneshot::Sender<Result<serde_json::Value, String>>>,
    pub(super) sdk_seq: u64,
    /// The session is to be opened (by the loop, which keeps serving the
    /// SDK meanwhile: its in-process MCP servers answer over stdin).
    pub(super) want_open: bool,
    /// Prompts that came before the session was open, in order.
    pub(super) waiting: Vec<String>,
    /// `initialize`'s request id and answer, sent once the session opened.
    pub(super) init_answer: Option<(String, serde_json::Value)>,
}

/// One call of the session's into the SDK (a hook callback, a message
/// to an in-process MCP server), on its way to the surface's loop, which
/// writes the control request; `reply` gets the control response's body.
pub struct SdkCall {
    pub request: OutControl,
    pub reply: tokio::sync::oneshot::Sender<Result<serde_json::Value, String>>,
}
