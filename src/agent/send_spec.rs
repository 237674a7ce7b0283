//! What one send asks for beyond its message: the 0.3.0 per-send options,
//! resolved against the session's defaults from `init.config`.
//!
//! Owns: [`SendSpec::resolve`], the one place a send's `output_schema` is
//! compiled (so a bad schema is refused when the send is queued, before
//! any model call) and its budgets and verification command are chosen.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::budget::Meter;
use super::structured::OutputSpec;
use crate::config::SessionConfig;
use crate::wire::SendOptions;

/// A send's resolved options. See the module doc.
#[derive(Debug, Default)]
pub struct SendSpec {
    /// The compiled `output_schema`, when the send has one.
    pub output: Option<OutputSpec>,
    /// The send's budgets and what it spent (shared with `status`).
    pub meter: Arc<Meter>,
    /// The send's own `verify_command` (else the session's, see
    /// `verify::Verifier::for_send`).
    pub verify_command: Option<String>,
    /// Cancelled when the send is (the runner's token; a tool's process
    /// group is killed by it).
    pub cancel: CancellationToken,
    /// The W3C `traceparent` of the send's span: its own, else the session's.
    pub traceparent: Option<String>,
    /// The send's file checkpoints (set by the session's runner when the
    /// session keeps them; see [`crate::checkpoint`]).
    pub checkpoint: Option<Arc<crate::checkpoint::SendCheckpoint>>,
    /// Text the client adds while the send runs (0.3.0 `steer`).
    pub steering: Arc<super::steer::Steering>,
}

impl SendSpec {
    /// The spec of a send with `options` in a session configured as
    /// `config`. Errors: the `output_schema` does not compile (the message
    /// says where); a verification command (the send's or the session's)
    /// is set but could not run unasked (`bash` not enabled, or the
    /// approval policy would ask for it): a send the operator asked to be
    /// checked is refused rather than reported `ok` unchecked.
    pub fn resolve(config: &SessionConfig, options: &SendOptions) -> Result<SendSpec, String> {
        let retries = options.output_retries.unwrap_or(config.output_retries);
        let output = options.output_schema.as_ref().map(|s| OutputSpec::compile(s, retries)).transpose()?;
        let meter = Meter::new(
            options.max_total_tokens.or(config.max_total_tokens),
            options.max_tool_calls.or(config.max_tool_calls),
        )
        .with_cost_budget(options.max_cost_usd.or(config.max_cost_usd));
        let verify_command = options.verify_command.clone().filter(|c| !c.trim().is_empty());
        if let Some(why) = super::verify::cannot_run(config, verify_command.as_deref()) {
            return Err(why);
        }
        let traceparent = options.traceparent.clone().or_else(|| config.traceparent.clone());
        Ok(SendSpec {
            output,
            meter: Arc::new(meter),
            verify_command,
            cancel: CancellationToken::new(),
            traceparent,
            checkpoint: None,
            steering: Arc::default(),
        })
    }
}
