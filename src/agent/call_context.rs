//! [`CallContext`]: what one tool call needs from its send (the session's
//! config, the permission broker, the event emitter, the tools' context,
//! the send's options), for `tool_call` and the subagent it may start; and
//! [`SendLoop`], the send loop as that subagent runs it.

use std::future::Future;
use std::pin::Pin;

use super::emit::Emitter;
use super::outcome::Outcome;
use super::send_spec::SendSpec;
use super::stats::SendStats;
use crate::approval::broker::PermissionBroker;
use crate::config::SessionConfig;
use crate::conversation::Conversation;
use crate::tools::ToolContext;

/// The send loop ([`crate::agent::run`], boxed), as a `task` call runs a
/// child send with it: config, permissions, conversation, statistics,
/// emitter, message, options. Handed down from the loop (in
/// [`crate::agent::send_state::SendState`], then here) rather than named by the call
/// path, so the files a send drives do not import the loop that drives
/// them.
pub type SendLoop = for<'a> fn(
    &'a SessionConfig,
    &'a PermissionBroker,
    &'a mut Conversation,
    &'a mut SendStats,
    &'a Emitter,
    &'a str,
    &'a mut SendSpec,
) -> Pin<Box<dyn Future<Output = Outcome> + Send + 'a>>;

/// What one tool call needs from its send.
pub struct CallContext<'a> {
    pub config: &'a SessionConfig,
    pub permissions: &'a PermissionBroker,
    pub emit: &'a Emitter,
    pub tools: &'a ToolContext,
    /// The send's options (its budgets and checkpoints, which a subagent
    /// shares).
    pub spec: &'a SendSpec,
    /// The result of a write held back before it ran
    /// ([`super::request_reading::hold_write`]): the call does not run, and
    /// no hook or approval is asked about it.
    pub held: Option<String>,
    /// The loop a `task` call's child send runs (this send's).
    pub send_loop: SendLoop,
}
