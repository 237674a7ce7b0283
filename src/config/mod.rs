//! A session's configuration: what `init.config`, the environment and the
//! transport say, validated once when the session opens.
//!
//! Owns: [`Limits`], what the transport imposes (queue length, queue
//! timeout); and [`SessionConfig`], built from `init.config`, the
//! [`crate::environment::Environment`] snapshot and the limits by [`SessionConfig::new`] and
//! never patched afterwards (the type in `session`, its building in `build`).
//!
//! Nothing here does I/O but canonicalising the workspace paths (and
//! opening a cassette, through [`crate::model::Endpoint::for_session`]). What a config
//! may leave to the operator's environment or the protocol version is in
//! `defaults`; why a config is refused, [`ConfigError`].

mod build;
mod defaults;
mod error;
pub mod profile;
mod session;
mod subagent;

pub use error::ConfigError;
pub use profile::Profile;
pub use session::{
    DEFAULT_MAX_ITERATIONS, DEFAULT_MAX_TOKENS, DEFAULT_MAX_TOOL_CALLS_PER_TURN, DEFAULT_OUTPUT_RETRIES,
    DEFAULT_PERMISSION_TIMEOUT_MS, DEFAULT_SYSTEM_PROMPT, DEFAULT_VERIFY_ROUNDS, Limits, SessionConfig,
};

#[cfg(test)]
mod tests;
