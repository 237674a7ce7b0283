//! [`CallContext`]: what one tool call needs from its send (the session's
//! config, the permission broker, the event emitter, the tools' context,
//! the send's options), for `tool_call` and the subagent it may start.

use super::emit::Emitter;
use super::send_spec::SendSpec;
use crate::approval::PermissionBroker;
use crate::config::SessionConfig;
use crate::tools::ToolContext;

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
    /// ([`super::gates::hold_write`]): the call does not run, and no hook
    /// or approval is asked about it.
    pub held: Option<String>,
}
